# Session 26: how often a staged row leaves the by-index path of by-index.patch by the model of
# ../2026-12-06-topk-high-floor-h100/model-floors.py (the indexer's logits, 32 heads x 128, ReLU, signed head
# weights; 32768 keys, 512 threads of 16 groups of 4 keys, the kernel's higher floor). Prints each row's
# candidates (keys at or above the floor; the patch's val holds 5352 at 227 KiB of shared memory) and the
# most any thread has (its candidate room holds 19 a thread, base's 30: more, and the row sorts its winners).
# Usage: /usr/bin/python3 model-spill.py SEED (numpy). Seed 1, 100 rows: model-spill.txt.
import numpy as np, sys
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
H, D, N, T, G, TAKE = 32, 128, 32768, 512, 4, 2048
keys = rng.standard_normal((N, D)).astype(np.float32)
rows = 100
tot=[]; mx=[]
for r in range(rows):
    q = rng.standard_normal((H, D)).astype(np.float32)
    w = rng.standard_normal(H).astype(np.float32)
    lg = (np.maximum(keys @ q.T, 0) * w).sum(1)
    gm = lg.reshape(-1, 4).max(1)
    per = gm.reshape(16, T).T
    v4 = np.sort(per, 1)[:, -G]
    ws = np.sort(v4.reshape(16, 32), 1)
    f = ws[:, 0].max()
    c = (lg >= f).reshape(16, T, 4)   # [i][t][q]: group t + 512 i
    perth = c.sum((0, 2))
    tot.append(int(c.sum())); mx.append(int(perth.max()))
tot=np.array(tot); mx=np.array(mx)
print("total mean %.0f min %d max %d; > 5352: %d/%d" % (tot.mean(), tot.min(), tot.max(), (tot > 5352).sum(), rows))
print("per-thread max: mean %.1f max %d; > 19: %d/%d; > 30: %d" % (mx.mean(), mx.max(), (mx > 19).sum(), rows, (mx > 30).sum()))
