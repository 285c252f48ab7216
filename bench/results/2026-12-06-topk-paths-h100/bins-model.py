# The bin path's bins on the kernel bench's own logits (session 24): rows dumped by dump-rows.patch from
# the emulated kernel bench (build: make tests/emu/cplab-kernel-bench-emu; then
#   TOPK_DUMP=/tmp/row tests/emu/cplab-kernel-bench-emu --case topk-decode-b16-32k --reps 1 --warmup 0 \
#     --no-ceilings --check-rows 16
# : 16 rows of 32768 logits, the generator's queries and keys through the emulated indexer). For each mapping
# of a candidate (a key at or above the staged rows' higher floor) to one of 2048 bins: the mean size of a
# winner's bin (what the ranking reads a winner), the share of winners alone in their bin, b*'s keys, the
# fullest bin and b*. two-slope is kernels/topk_bins.cuh's; ideal is equal-count bins (a bound).
# Usage: /usr/bin/python3 bins-model.py (numpy; reads /tmp/row-*.bin)
import numpy as np, glob
T, G, TAKE, B = 512, 4, 2048, 2048
def ordb(a):
    u = a.view(np.uint32).astype(np.int64)
    return np.where(u >= 0x80000000, 0xFFFFFFFF - u, u + 0x80000000)
def stats(b, cnt):
    above = np.cumsum(cnt[::-1])[::-1]
    bstar = np.max(np.nonzero(above >= TAKE)[0])
    win = b[b > bstar]; wc = cnt[win]
    return wc.mean(), (wc == 1).mean(), cnt[bstar], cnt.max(), bstar
res = {}
for fn in sorted(glob.glob('/tmp/row-*.bin')):
    lg = np.fromfile(fn, np.float32)
    gm = lg.reshape(-1, 4).max(1); per = gm.reshape(16, T).T
    v4 = np.sort(per, 1)[:, -G]; ws = np.sort(v4.reshape(16, 32), 1)
    fl = np.float32(ws[:, 0].max()); hi = lg.max()
    c = lg[lg >= fl]
    res.setdefault('cand', []).append((len(c), fl, hi, np.sort(lg)[-TAKE]))
    x = c - fl; rg = hi - fl
    t = np.minimum(x*(8.0*B/rg), x*(8.0*B/15.0/rg) + B*7.0/15.0)
    b = np.minimum(np.rint(t).astype(np.int64), B-1); res.setdefault('two-slope', []).append(stats(b, np.bincount(b, minlength=B)))
    b = np.minimum((x*(B/rg)).astype(np.int64), B-1); res.setdefault('linear', []).append(stats(b, np.bincount(b, minlength=B)))
    oc = ordb(c); of = ordb(np.array([fl], np.float32))[0]; oh = ordb(np.array([hi], np.float32))[0]
    s = 0
    while ((oh - of) >> s) >= B: s += 1
    b = (oc - of) >> s; res.setdefault('log', []).append(stats(b, np.bincount(b, minlength=B)))
    # ideal: equal-count bins over the candidates (rank-based), a lower bound
    rk = np.argsort(np.argsort(c)); b = (rk * B // len(c)); res.setdefault('ideal', []).append(stats(b, np.bincount(b, minlength=B)))
v = np.array(res.pop('cand'))
print("rows %d: candidates mean %.0f (min %d max %d); floor mean %.3g, take-th mean %.3g, max mean %.3g" % (len(v), v[:,0].mean(), v[:,0].min(), v[:,0].max(), v[:,1].mean(), v[:,3].mean(), v[:,2].mean()))
for k, v in res.items():
    v = np.array(v)
    print("%-9s winner's bin size mean %.2f, winners alone %.2f, b* keys mean %.1f max %d, fullest bin max %d, b* mean %.0f" % (k, v[:,0].mean(), v[:,1].mean(), v[:,2].mean(), v[:,2].max(), v[:,3].max(), v[:,4].mean()))
print("---- log(1 + A u) mappings, u = (x - floor) / range")
rows = [np.fromfile(fn, np.float32) for fn in sorted(glob.glob('/tmp/row-*.bin'))]
def floorhi(lg):
    gm = lg.reshape(-1, 4).max(1); per = gm.reshape(16, T).T
    v4 = np.sort(per, 1)[:, -G]; ws = np.sort(v4.reshape(16, 32), 1)
    return np.float32(ws[:, 0].max()), lg.max()
def evalmap(fmap):
    out = []
    for lg in rows:
        fl, hi = floorhi(lg); c = lg[lg >= fl]; u = (c - fl) / (hi - fl)
        b = np.minimum(np.floor(fmap(u) * B).astype(np.int64), B - 1)
        out.append(stats(b, np.bincount(b, minlength=B)))
    v = np.array(out)
    return "winner's bin %.2f, alone %.2f, b* keys %.1f (max %d), fullest %d, b* %.0f" % (v[:,0].mean(), v[:,1].mean(), v[:,2].mean(), v[:,2].max(), v[:,3].max(), v[:,4].mean())
for A in [16, 64, 256, 1024, 4096]:
    print("log A=%-5d %s" % (A, evalmap(lambda u, A=A: np.log1p(A*u)/np.log1p(A))))
print("---- concave piecewise-linear: the least of L lines through the log curve's points")
for A in [64, 256, 1024]:
    for L in [2, 3, 4, 6]:
        # lines: tangents/chords of F(u)=log1p(A u)/log1p(A) at breakpoints geometric in u
        pts = np.concatenate([[0], np.geomspace(1.0/A, 1.0, L)])
        F = lambda u: np.log1p(A*u)/np.log1p(A)
        sl = [(F(pts[i+1]) - F(pts[i]))/(pts[i+1]-pts[i]) for i in range(L)]
        ic = [F(pts[i]) - sl[i]*pts[i] for i in range(L)]
        fm = lambda u, sl=sl, ic=ic: np.min([s*u + i for s, i in zip(sl, ic)], axis=0)
        print("A=%-5d L=%d %s" % (A, L, evalmap(fm)))
