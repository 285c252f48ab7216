# A model of the staged top-k row's floors (kernels/topk_bins.cuh), session 22: logits as the
# indexer makes them (32 heads x 128, ReLU, signed head weights; normal queries and keys, not fp8),
# 32768 keys a row, 512 threads each owning 16 groups of 4 keys (group g to thread g mod 512), G = 4.
# For each candidate floor: the keys at or above it (the bin path's candidates) and how often fewer
# than take = 2048 are (the histogram's check fails and the proven floor runs again).
#   high:  the kernel's (the largest of the 16 warps' least 4th-largest group maxima)
#   wNmax: the largest of the warps' N-th least (r4.patch: N = 4; call.sh also times N = 6)
# Usage: /usr/bin/python3 model-floors.py SEED (numpy)
import numpy as np, sys
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
H, D, N, T, G, TAKE = 32, 128, 32768, 512, 4, 2048
keys = rng.standard_normal((N, D)).astype(np.float32)
res = {}
rows = 60
for r in range(rows):
    q = rng.standard_normal((H, D)).astype(np.float32)
    w = rng.standard_normal(H).astype(np.float32)
    lg = (np.maximum(keys @ q.T, 0) * w).sum(1)
    gm = lg.reshape(-1, 4).max(1)                 # 8192 group maxima
    per = gm.reshape(16, T).T                     # thread t: groups t, t+512, ...
    v4 = np.sort(per, 1)[:, -G]                   # each thread's G-th largest group max
    warps = v4.reshape(16, 32)
    ws = np.sort(warps, 1)
    cand = {
        'proven': v4.min(),
        'high': ws[:, 0].max(),
        'w2max': ws[:, 1].max(),
        'w4max': ws[:, 3].max(), 'w6max': ws[:, 5].max(), 'w8max': ws[:, 7].max(), 'w12max': ws[:, 11].max(), 'w16max': ws[:, 15].max(), 'w8med': np.median(ws[:, 7]),
        'w2med': np.median(ws[:, 1]),
        'w4min': ws[:, 3].min(),
        'w8min': ws[:, 7].min(),
        'p10': np.sort(v4)[51],
        'p5': np.sort(v4)[25],
        'p2': np.sort(v4)[10],
        'w1med': np.sort(ws[:, 0])[8],
    }
    for k, f in cand.items():
        c = int((lg >= f).sum())
        res.setdefault(k, []).append(c)
for k, v in res.items():
    v = np.array(v)
    print("%-7s mean %6.0f min %5d max %5d fail %d/%d" % (k, v.mean(), v.min(), v.max(), (v < TAKE).sum(), rows))
