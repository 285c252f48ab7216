#!/usr/bin/env python3
"""bench/kernel_peer.py: the PyTorch peer of cplab-kernel-bench's kernels.

Reads the cases `cplab-kernel-bench --list-json FILE` selected, measures a
plain PyTorch implementation of each on the same shapes, and writes the
peer file that `cplab-kernel-bench --peer FILE` reads (its format:
bench/kernel_peer.h). Needs only torch (numpy is not used).

  sparse_mla_prefill     gather the indexed bf16 workspace rows, scores by
                         bmm in bf16, softmax in fp32 (-1 entries masked),
                         the weights rounded to bf16, bmm with the values;
  sparse_mla_decode_fp8  gather the indexed 656-byte fp8 entries, dequantise
                         them to bf16 (e4m3 x the tile's fp32 scale; RoPE as
                         stored), then the same.
Query rows go in chunks that keep the gathered rows and scores within
about 2 GiB. Inputs are random (never zeros) with the case's shape and
validity pattern (causal prefill rows, 1/D valid entries of a DCP rank's
decode rows), rotated over enough sets to span 4x the L2 like the C
program's. Timing: torch.cuda.Event pairs around every call, all calls
queued back to back (warm-up, then repetitions), median / p10 / p90; eager
PyTorch, so host launch gaps count, as they do for a PyTorch user. Each
case is checked first: 2 rows against a float64 computation over the same
rows (the peer's own error, reported, never fatal).

Exit status: 0 (entries that failed, e.g. out of memory, carry "error"),
2 bad usage or an unreadable case file, 3 torch not importable.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

PROG = "kernel_peer.py"
DQK, DV, ENTRY = 576, 512, 656


def die(msg, code=2):
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", required=True, help="the cases (cplab-kernel-bench --list-json FILE)")
    p.add_argument("-o", "--out", required=True, help="the peer file to write")
    p.add_argument("--reps", type=int, default=30, help="timed repetitions (default 30)")
    p.add_argument("--warmup", type=int, default=5, help="untimed runs before them (default 5)")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (a test of the script, timed by the host clock)")
    p.add_argument("--max-sets", type=int, default=256, help="at most this many rotating input sets (default 256)")
    p.add_argument("--mem-gib", type=float, default=48, help="and at most this many GiB of them (default 48)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    a = p.parse_args(argv)
    if a.reps < 1 or a.warmup < 0 or a.max_sets < 2 or a.mem_gib <= 0:
        die("--reps >= 1, --warmup >= 0, --max-sets >= 2 and --mem-gib > 0 are needed")
    return a


def load_cases(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        die(f"cannot read the case file '{path}': {e.strerror}")
    except json.JSONDecodeError as e:
        die(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}")
    cases = doc.get("cases") if isinstance(doc, dict) else None
    if not isinstance(cases, list):
        die(f"{path}: no 'cases' list (write it with cplab-kernel-bench --list-json FILE)")
    for i, c in enumerate(cases):
        if not (isinstance(c, dict) and isinstance(c.get("kernel"), str) and isinstance(c.get("case"), str)
                and isinstance(c.get("shape"), dict)):
            die(f"{path}: cases[{i}] lacks kernel, case or shape")
    return doc, cases


class Peer:
    """One kernel's peer: sets of inputs, one call, its work per set."""

    def __init__(self, torch, dev, shape, decode, gen):
        self.t, self.dev, self.s, self.decode, self.g = torch, dev, shape, decode, gen
        self.h, self.k, self.D = shape["heads"], shape["topk"], shape["dcp"]
        self.m = shape["batch"] if decode else shape["s_q"]
        self.skv = shape["s_kv"]
        self.scale = shape["scale"]
        self.num_slots = shape["batch"] * (self.skv // self.D) if decode else self.skv
        per_row = self.k * (DQK * 2 + 12 * self.h)  # gathered bf16 rows + fp32 scores and their temporaries
        self.chunk = max(1, min(self.m, (2 << 30) // per_row))
        self.name = ("torch gather + fp8 dequantise + bmm, bf16, fp32 softmax" if decode
                     else "torch gather + bmm, bf16, fp32 softmax")
        self.lut = None
        if decode and not hasattr(torch, "float8_e4m3fn"):  # older torch: decode e4m3 through a table
            self.lut = torch.tensor([e4m3_value(b) for b in range(256)], dtype=torch.float32, device=dev)

    def rand(self, *size):
        return self.t.rand(*size, generator=self.g, device=self.dev)

    def indices(self):
        """[m][k] int64 lists: valid entries first drawn stratified, then shuffled; -1 where invalid."""
        t, m, k = self.t, self.m, self.k
        j = t.arange(k, device=self.dev)[None, :]
        if self.decode:
            local = self.skv // self.D
            n = t.full((m, 1), k // self.D, device=self.dev, dtype=t.int64)
            ctx = t.full((m, 1), local, device=self.dev, dtype=t.int64)
            base = t.arange(m, device=self.dev, dtype=t.int64)[:, None] * local
        else:
            i = t.arange(m, device=self.dev, dtype=t.int64)[:, None]
            ctx = (self.skv - self.s["s_q"] + i + 1) if self.s["causal"] else t.full((m, 1), self.skv, device=self.dev,
                                                                                     dtype=t.int64)
            n = t.clamp(ctx, max=k)
            base = t.zeros((m, 1), device=self.dev, dtype=t.int64)
        stride = ctx // n
        draw = t.minimum(j * stride + (self.rand(m, k) * stride).long(), ctx - 1) + base
        valid = j < n
        idx = t.where(valid, draw, t.full_like(draw, -1))
        keys = self.rand(m, k)
        if not self.decode or self.D == 1:  # keep -1 at the tail (prefill: as cplab_topk leaves it)
            keys = t.where(valid, keys, t.full_like(keys, 2.0))
        return t.gather(idx, 1, t.argsort(keys, dim=1))

    def make_set(self):
        t, bf16 = self.t, self.t.bfloat16
        idx = self.indices()
        q = (self.rand(self.m, self.h, DQK) * 2 - 1).to(bf16)
        st = {"idx": idx, "q": q}
        if self.decode:
            # zeros (finite): the -1 entries gather slot 0 and their weight 0 multiplies it
            cache = t.zeros((self.num_slots, ENTRY), dtype=t.uint8, device=self.dev)
            used = idx[idx >= 0]
            n = used.numel()
            mag = (self.rand(n, 512) * 0x58).to(t.uint8)  # e4m3 magnitudes up to 0x57 (exponent <= 10: |v| <= 15)
            sign = (self.rand(n, 512) < 0.5).to(t.uint8) * 0x80
            scales = t.full((n, 4), 2.0 ** -5, dtype=t.float32, device=self.dev)
            rope = (self.rand(n, 64) * 2 - 1).to(bf16)
            cache[used] = t.cat([mag | sign, scales.view(t.uint8), rope.view(t.uint8)], dim=1)
            st["cache"] = cache
            self.unique = n
        else:
            st["ws"] = (self.rand(self.skv, DQK) * 2 - 1).to(bf16)
            self.unique = int(t.unique(idx[idx >= 0]).numel())
        self.valid = int((idx >= 0).sum())
        st["out"] = t.empty((self.m, self.h, DV), dtype=t.float32, device=self.dev)
        st["lse"] = t.empty((self.m, self.h), dtype=t.float32, device=self.dev)
        return st

    def touched_bytes(self):
        row = ENTRY if self.decode else DQK * 2
        return self.unique * row + self.m * self.h * (DQK * 2 + DV * 4 + 4)

    def alloc_bytes(self):
        return (self.num_slots * (ENTRY if self.decode else DQK * 2) + self.m * self.k * 8
                + self.m * self.h * (DQK * 2 + DV * 4 + 4))

    def rows(self, st, ii, dtype):
        """The gathered rows of index lists ii as a [c][k][576] tensor of dtype."""
        t = self.t
        safe = ii.clamp(min=0)
        if not self.decode:
            return st["ws"][safe].to(dtype)
        ent = st["cache"][safe]  # [c][k][656]
        raw = ent[..., :512].contiguous()
        if self.lut is None:
            nope = raw.view(t.float8_e4m3fn).to(t.float32)
        else:
            nope = self.lut[raw.long()]
        sc = ent[..., 512:528].contiguous().view(t.float32)
        nope = (nope.view(*nope.shape[:-1], 4, 128) * sc[..., None]).view(*nope.shape)
        rope = ent[..., 528:].contiguous().view(t.bfloat16)
        return t.cat([nope.to(t.bfloat16), rope], dim=-1).to(dtype)

    def call(self, st):
        t = self.t
        for c0 in range(0, self.m, self.chunk):
            ii = st["idx"][c0:c0 + self.chunk]
            kv = self.rows(st, ii, t.bfloat16)
            s = t.bmm(st["q"][c0:c0 + self.chunk], kv.transpose(1, 2)).float() * self.scale
            s.masked_fill_((ii < 0)[:, None, :], float("-inf"))
            lse = t.logsumexp(s, dim=-1)
            p = t.exp(s - lse[..., None]).to(t.bfloat16)
            st["out"][c0:c0 + self.chunk] = t.bmm(p, kv[..., :DV]).float()
            st["lse"][c0:c0 + self.chunk] = lse

    def check(self, st, rows=2):
        """The peer's own error on `rows` rows against float64 over the same rows."""
        t = self.t
        worst_rel, worst_lse = 0.0, 0.0
        for r in sorted({0, self.m - 1}) if rows > 1 else [0]:
            ii = st["idx"][r:r + 1]
            kv = self.rows(st, ii, t.float64)[0][ii[0] >= 0]
            q = st["q"][r].double()
            s = (q @ kv.T) * self.scale
            lse = t.logsumexp(s, dim=-1)
            out = t.softmax(s, dim=-1) @ kv[:, :DV]
            got = st["out"][r].double()
            rel = (t.linalg.norm(got - out, dim=-1) / t.linalg.norm(out, dim=-1)).max().item()
            el = (st["lse"][r].double() - lse).abs().max().item()
            worst_rel = rel if not rel <= worst_rel else worst_rel  # NaN sticks
            worst_lse = el if not el <= worst_lse else worst_lse
        return {"max_rel_l2": worst_rel, "max_lse_abs": worst_lse}


def e4m3_value(b):
    sign = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 0xF, b & 7
    if e == 0xF and m == 7:
        return float("nan")
    if e == 0:
        return sign * m * 2.0 ** -9
    return sign * (1 + m / 8) * 2.0 ** (e - 7)


def time_calls(torch, dev, peer, sets, reps, warmup):
    n = warmup + reps
    if dev.type == "cuda":
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for r in range(n):
            ev[r][0].record()
            peer.call(sets[r % len(sets)])
            ev[r][1].record()
        torch.cuda.synchronize()
        return [1e3 * ev[r][0].elapsed_time(ev[r][1]) for r in range(warmup, n)]
    times = []
    for r in range(n):
        t0 = time.perf_counter()
        peer.call(sets[r % len(sets)])
        if r >= warmup:
            times.append(1e6 * (time.perf_counter() - t0))
    return times


def quantile(v, q):
    """Linear interpolation between order statistics (GSL's rule, as the C program)."""
    v = sorted(v)
    x = q * (len(v) - 1)
    lo = int(math.floor(x))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (x - lo)


def run_case(torch, dev, c, a, l2, gen):
    decode = {"sparse_mla_prefill": False, "sparse_mla_decode_fp8": True}.get(c["kernel"])
    entry = {"kernel": c["kernel"], "case": c["case"], "shape": c["shape"]}
    if decode is None:
        entry.update(name="none", error=f"no PyTorch peer for kernel {c['kernel']}")
        return entry
    peer = Peer(torch, dev, c["shape"], decode, gen)
    entry["name"] = peer.name
    sets = []
    try:
        sets.append(peer.make_set())
        want = max(2, min(a.max_sets, math.ceil(4 * l2 / peer.touched_bytes())))
        while want > 2 and want * peer.alloc_bytes() > a.mem_gib * 2 ** 30:
            want -= 1
        while len(sets) < want:
            sets.append(peer.make_set())
        peer.call(sets[0])
        check = peer.check(sets[0])
        if all(math.isfinite(v) for v in check.values()):
            entry["check"] = check
        else:
            print(f"{PROG}: {c['case']}: the peer's own check is not finite ({check}); left out", file=sys.stderr)
        times = time_calls(torch, dev, peer, sets, a.reps, a.warmup)
        entry.update(median_us=statistics.median(times), p10_us=quantile(times, 0.1), p90_us=quantile(times, 0.9),
                     sets=len(sets))
    except RuntimeError as e:  # out of memory among them
        entry["error"] = " ".join(str(e).split())[:240]
    finally:
        del sets
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return entry


def write(path, doc):
    """Write doc to path through a temporary file and a rename (never a partial file)."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except (OSError, ValueError) as e:
        die(f"cannot write '{path}': {e}")


def main(argv):
    a = parse_args(argv)
    doc, cases = load_cases(a.cases)
    try:
        import torch
    except ImportError as e:
        die(f"PyTorch is not importable ({e}): no peer measured", 3)
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        die("torch sees no CUDA device (torch.cuda.is_available() is False)", 3)
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        device_name, l2 = props.name, getattr(props, "L2_cache_size", 64 << 20)
    else:
        device_name, l2 = "cpu", 0
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)
    out = {"peer": "pytorch", "version": torch.__version__, "device": device_name,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": " ".join([PROG] + argv),
           "reps": a.reps, "warmup": a.warmup, "entries": []}
    for i, c in enumerate(cases):
        t0 = time.time()
        e = run_case(torch, dev, c, a, l2, gen)
        out["entries"].append(e)
        write(a.out, out)  # after every case: a run cut short keeps what it measured
        if not a.quiet:
            what = (f"median {e['median_us']:.1f} us over {e['sets']} sets, check rel "
                    f"{e['check']['max_rel_l2'] if 'check' in e else float('nan'):.2e}"
                    if "median_us" in e else f"error: {e['error']}")
            print(f"[{i + 1}/{len(cases)}] {c['kernel']} {c['case']}: {what}; {time.time() - t0:.1f} s",
                  file=sys.stderr, flush=True)
    write(a.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
