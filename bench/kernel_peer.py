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
                         stored), then the same;
  indexer_logits_prefill per head q . k on fp8 tensor cores, torch._scaled_mm
                         (e4m3 x e4m3, per-tensor scales 1, fp32 out; where
                         _scaled_mm is missing or refuses the shape, a bf16
                         matmul, and the peer's name says so), ReLU, the
                         weighted head sum (bmm with the weights), x the key
                         scale, -inf outside the causal rows' range;
  indexer_logits_decode  the same row by row, each row's keys gathered first
                         through its block table (index_select);
  indexer_topk_decode    that, then torch.topk (k, sorted) of each row;
  topk_prefill,          torch.topk (k, sorted) of fp32 logits [rows][keys]
  topk_decode            (-inf outside the causal rows' range);
  topk_merge             torch.topk over each row's D x k concatenated
                         candidate scores, the winners' local indices
                         gathered and mapped to positions (kv.h's rule);
  topk_merge_convert     that, then the winners' slots on DCP rank 0: a
                         gather from the block table by the local index's
                         block (-1 for the other owners' winners);
  convert                the integer formula in torch ops: prefill
                         owner x shard_rows + ws_start + local index (-1
                         for -1), decode the block table's slot on DCP rank
                         0 (-1 for other owners and for -1);
  gather_upconvert       index_select of the 656-byte entries by slot, e4m3
                         -> fp32 x the tile's scale -> bf16, RoPE as stored;
  restore                index_select of the gathered rows by the restore map.
Query rows go in chunks that keep the intermediates within about 2 GiB.
Inputs are random (never zeros) with the case's shape and validity pattern
(causal prefill rows, 1/D valid entries of a DCP rank's decode rows),
rotated over enough sets to span 4x the L2 like the C program's. Timing:
torch.cuda.Event pairs around every call, all calls queued back to back
(warm-up, then repetitions), median / p10 / p90; eager PyTorch, so host
launch gaps count, as they do for a PyTorch user. The attention cases are
checked first: 2 rows against a float64 computation over the same rows
(the peer's own error, reported, never fatal); the indexer path's peers
only time. A case of a kernel this script has no peer for is skipped with
a message (no entry: the program then shows no peer for it).

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
IDX_ENTRY = 132  # bytes of an indexer cache entry (128 e4m3 + an fp32 scale)


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
    """The attention kernels' peer: sets of inputs, one call, its work per set."""

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
            cache[used] = random_entries(t, self.rand, n, self.dev)
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
        safe = ii.clamp(min=0)
        if not self.decode:
            return st["ws"][safe].to(dtype)
        return dequantise(self.t, st["cache"][safe], self.lut).to(dtype)  # [c][k][656] -> [c][k][576]

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


def random_e4m3_bytes(t, rand, *size):
    """Random e4m3 bytes (uint8): magnitudes up to 0x57 (exponent <= 10: |v| <= 15), random signs, never NaN."""
    mag = (rand(*size) * 0x58).to(t.uint8)
    sign = (rand(*size) < 0.5).to(t.uint8) * 0x80
    return mag | sign


def random_entries(t, rand, n, dev):
    """n random 656-byte fp8_ds_mla entries: e4m3 latents, fp32 tile scales 2^-5, bf16 RoPE."""
    scales = t.full((n, 4), 2.0 ** -5, dtype=t.float32, device=dev)
    rope = (rand(n, 64) * 2 - 1).to(t.bfloat16)
    return t.cat([random_e4m3_bytes(t, rand, n, 512), scales.view(t.uint8), rope.view(t.uint8)], dim=1)


def dequantise(t, ent, lut=None):
    """656-byte entries [..., 656] -> bf16 rows [..., 576]: e4m3 x the tile's fp32 scale, RoPE as stored."""
    raw = ent[..., :512].contiguous()
    nope = lut[raw.long()] if lut is not None else raw.view(t.float8_e4m3fn).to(t.float32)
    sc = ent[..., 512:528].contiguous().view(t.float32)
    nope = (nope.view(*nope.shape[:-1], 4, 128) * sc[..., None]).view(*nope.shape)
    rope = ent[..., 528:].contiguous().view(t.bfloat16)
    return t.cat([nope.to(t.bfloat16), rope], dim=-1)


class IndexerPeer:
    """The indexer path's peers: sets of inputs, one call, the bytes one call touches (for the rotation)."""

    def __init__(self, torch, dev, shape, gen):
        self.t, self.dev, self.s, self.g = torch, dev, shape, gen

    def rand(self, *size):
        return self.t.rand(*size, generator=self.g, device=self.dev)

    def randint(self, lo, hi, *size):
        return self.t.randint(lo, hi, size, generator=self.g, device=self.dev, dtype=self.t.int64)

    def alloc_bytes(self):
        return self.touched_bytes()

    def block_slots(self):
        """Slot of token j of self.n: 64-token blocks of self.blocks in shuffled order (a paged cache)."""
        t = self.t
        perm = t.randperm(self.blocks, generator=self.g, device=self.dev)
        j = t.arange(self.n, device=self.dev)
        return perm[t.div(j, 64, rounding_mode="floor")] * 64 + j % 64


class LogitsPeer(IndexerPeer):
    """indexer_logits_prefill: fp8 q . k per head (torch._scaled_mm), ReLU, weighted head sum, key scale."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.h, self.m, self.n, self.causal = shape["heads"], shape["queries"], shape["keys"], shape["causal"]
        per_row = self.h * self.n * 4 + self.n * 8  # the per-head scores (fp32) and the row's sum
        self.chunk = max(1, min(self.m, (2 << 30) // per_row))
        self.one = torch.ones((), dtype=torch.float32, device=dev)
        self.fp8 = self.probe()
        self.name = ("torch._scaled_mm fp8 e4m3 (fp32 out) + ReLU + weighted head sum (bmm) + key scale" if self.fp8
                     else "torch bf16 matmul (torch._scaled_mm unusable here) + ReLU + weighted head sum (bmm) + key scale")

    def scores(self, a, b):
        """[r][128] x [c][128] -> fp32 [r][c]: on fp8 tensor cores where _scaled_mm takes it, else in bf16."""
        t = self.t
        if self.fp8 and a.shape[0] % 16 == 0 and b.shape[0] % 16 == 0:
            r = t._scaled_mm(a, b.t(), scale_a=self.one, scale_b=self.one, out_dtype=t.float32)
            return r[0] if isinstance(r, tuple) else r  # torch < 2.4 returned (out, amax)
        return (a.to(t.bfloat16) @ b.to(t.bfloat16).t()).float()

    def probe(self):
        """Whether torch._scaled_mm runs here (fp8 e4m3, fp32 out) on a small product."""
        t = self.t
        if not hasattr(t, "_scaled_mm") or not hasattr(t, "float8_e4m3fn") or self.dev.type != "cuda":
            return False
        try:
            a = t.zeros((16, 128), dtype=t.uint8, device=self.dev).view(t.float8_e4m3fn)
            r = t._scaled_mm(a, a.t(), scale_a=self.one, scale_b=self.one, out_dtype=t.float32)
            (r[0] if isinstance(r, tuple) else r).sum().item()
            return True
        except (RuntimeError, TypeError) as e:
            print(f"{PROG}: torch._scaled_mm unusable ({' '.join(str(e).split())[:160]}): bf16 matmul instead",
                  file=sys.stderr)
            return False

    def make_set(self):
        t, m, n, h = self.t, self.m, self.n, self.h
        f8 = t.float8_e4m3fn if hasattr(t, "float8_e4m3fn") else t.uint8
        st = {"q": random_e4m3_bytes(t, self.rand, m * h, 128).view(f8),
              "w": self.rand(m, 1, h) * (1.0 / math.sqrt(128 * h)),
              "k": random_e4m3_bytes(t, self.rand, n, 128).view(f8),
              "ks": t.full((n,), 2.0 ** -4, dtype=t.float32, device=self.dev),
              "out": t.empty((m, n), dtype=t.float32, device=self.dev)}
        if self.causal:
            st["ke"] = t.arange(n - m + 1, n + 1, device=self.dev)[:, None]
            st["cols"] = t.arange(n, device=self.dev)[None, :]
        return st

    def call(self, st):
        t, h, n = self.t, self.h, self.n
        for c0 in range(0, self.m, self.chunk):
            c = min(self.chunk, self.m - c0)
            s = self.scores(st["q"][c0 * h:(c0 + c) * h], st["k"]).view(c, h, n).relu_()
            r = t.bmm(st["w"][c0:c0 + c], s).squeeze(1).mul_(st["ks"])
            if self.causal:
                r.masked_fill_(st["cols"] >= st["ke"][c0:c0 + c], float("-inf"))
            st["out"][c0:c0 + c] = r

    def touched_bytes(self):
        return self.m * self.n * 4 + self.n * 132 + self.m * self.h * 132


class DecodeLogitsPeer(LogitsPeer):
    """indexer_logits_decode: each row's keys gathered through its block table (index_select of the paged
    132-byte entries), then the prefill peer's scores, ReLU, weighted head sum and key scale, row by row."""

    def __init__(self, torch, dev, shape, gen):
        s = dict(shape)
        self.b, self.ctx, self.dcp = shape["batch"], shape["context"], shape["dcp"]
        keys = -(-self.ctx // self.dcp)
        s.update({"queries": 1, "keys": keys, "causal": 0})
        super().__init__(torch, dev, s, gen)
        self.nb = -(-keys // 64)
        self.name = "index_select through the block table + " + self.name

    def make_set(self):
        t, b, n, h, nb = self.t, self.b, self.n, self.h, self.nb
        f8 = t.float8_e4m3fn if hasattr(t, "float8_e4m3fn") else t.uint8
        perm = t.randperm(b * nb, generator=self.g, device=self.dev).view(b, nb)
        slot = (perm[:, :, None] * 64 + t.arange(64, device=self.dev)).view(b, nb * 64)[:, :n]
        return {"cache": random_e4m3_bytes(t, self.rand, b * nb * 64, 132), "slot": slot.contiguous(),
                "q": random_e4m3_bytes(t, self.rand, b * h, 128).view(f8),
                "w": self.rand(b, 1, h) * (1.0 / math.sqrt(128 * h)),
                "out": t.empty((b, n), dtype=t.float32, device=self.dev)}

    def call(self, st):
        t, h, n = self.t, self.h, self.n
        f8 = t.float8_e4m3fn if hasattr(t, "float8_e4m3fn") else t.uint8
        for r in range(self.b):
            ent = st["cache"].index_select(0, st["slot"][r])
            k = ent[:, :128].contiguous().view(f8)
            ks = ent[:, 128:].contiguous().view(t.float32).view(n)
            s = self.scores(st["q"][r * h:(r + 1) * h], k).relu_()
            st["out"][r] = (st["w"][r] @ s).view(n) * ks

    def touched_bytes(self):
        return self.b * self.n * (132 + 4) + self.b * self.h * 132


class DecodeIndexerPeer(DecodeLogitsPeer):
    """indexer_topk_decode: the decode logits' peer, then torch.topk (k, sorted) of every row's logits."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.k = shape["k"]
        self.name += " + torch.topk (sorted)"

    def make_set(self):
        st = super().make_set()
        st["v"] = self.t.empty((self.b, self.k), dtype=self.t.float32, device=self.dev)
        st["i"] = self.t.empty((self.b, self.k), dtype=self.t.int64, device=self.dev)
        return st

    def call(self, st):
        super().call(st)
        self.t.topk(st["out"], self.k, dim=-1, largest=True, sorted=True, out=(st["v"], st["i"]))

    def touched_bytes(self):
        return super().touched_bytes() + self.b * self.n * 4 + self.b * self.k * 12


class TopkPeer(IndexerPeer):
    """topk_prefill, topk_decode: torch.topk of fp32 logits [rows][keys]."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.m = shape["queries"] if "queries" in shape else shape["batch"]
        self.n = shape["keys"] if "keys" in shape else shape["context"]
        self.k, self.causal = shape["k"], shape.get("causal", 0)
        self.name = "torch.topk (sorted) of the fp32 logits"

    def make_set(self):
        t, m, n, k = self.t, self.m, self.n, self.k
        logits = t.randn(m, n, generator=self.g, device=self.dev)
        if self.causal:  # ke[i] = n - m + i + 1: -inf after the row's range, as the logits kernel leaves it
            ke = t.arange(n - m + 1, n + 1, device=self.dev)[:, None]
            logits.masked_fill_(t.arange(n, device=self.dev)[None, :] >= ke, float("-inf"))
        return {"logits": logits, "v": t.empty((m, k), dtype=t.float32, device=self.dev),
                "i": t.empty((m, k), dtype=t.int64, device=self.dev)}

    def call(self, st):
        self.t.topk(st["logits"], self.k, dim=-1, largest=True, sorted=True, out=(st["v"], st["i"]))

    def touched_bytes(self):
        pairs = self.m * self.n - (self.m * (self.m - 1) // 2 if self.causal else 0)
        return pairs * 4 + self.m * self.k * 8

    def alloc_bytes(self):
        return self.m * self.n * 4 + self.m * self.k * 12


class MergePeer(IndexerPeer):
    """topk_merge: torch.topk over the D owners' concatenated candidates, local indices mapped to positions."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.m, self.D, self.k, self.I = shape["batch"], shape["dcp"], shape["k"], shape["interleave"]
        self.name = "torch.topk over the D x k concatenated candidates + gather + position map"

    def make_set(self):
        t, m, D, k = self.t, self.m, self.D, self.k
        local = self.s["context"] // D
        score = t.sort(t.randn(D, m, k, generator=self.g, device=self.dev), dim=-1, descending=True).values
        cand = t.sort(self.randint(0, max(local, 1), D, m, k), dim=-1).values.to(t.int32)
        return {"score": score, "cand": cand, "idx": t.empty((m, k), dtype=t.int32, device=self.dev),
                "v": t.empty((m, k), dtype=t.float32, device=self.dev)}

    def merge(self, st):
        """The merged list into st; its entries' local indices and owners."""
        t, m, D, k, I = self.t, self.m, self.D, self.k, self.I
        v, j = t.topk(st["score"].permute(1, 0, 2).reshape(m, D * k), k, dim=1, largest=True, sorted=True)
        lidx = st["cand"].permute(1, 0, 2).reshape(m, D * k).gather(1, j).long()
        owner = t.div(j, k, rounding_mode="floor")
        st["idx"].copy_(t.div(lidx, I, rounding_mode="floor") * (I * D) + owner * I + lidx % I)
        st["v"].copy_(v)
        return lidx, owner

    def call(self, st):
        self.merge(st)

    def touched_bytes(self):
        return (self.D + 1) * self.m * self.k * 8


class SlotsPeer:
    """What a converting peer adds to its list's (a mixin before it): rank 0's block table (random blocks,
    row i request i's) of self.max_blocks columns a row, and the int32 slots [m][k] of the list."""

    def slots_init(self, shape, keys):
        self.B = shape["convert_block_size"]
        self.max_blocks = -(-keys // self.B)

    def make_set(self):
        st = super().make_set()
        st["table"] = self.randint(0, 1 << 20, self.m, self.max_blocks).to(self.t.int32)
        st["slot"] = self.t.empty((self.m, self.k), dtype=self.t.int32, device=self.dev)
        return st

    def slots(self, st, lidx, mine):
        """Slots of local indices lidx (int64 [m][k]) where mine, else -1 (so past the table)."""
        t, B = self.t, self.B
        blk = t.div(lidx, B, rounding_mode="floor")
        slot = st["table"].gather(1, blk.clamp(0, self.max_blocks - 1)) * B + lidx % B
        st["slot"].copy_(t.where(mine & (blk < self.max_blocks), slot, t.full_like(slot, -1)))

    def touched_bytes(self):
        return super().touched_bytes() + self.m * self.k * 4

    def alloc_bytes(self):
        return super().alloc_bytes() + self.m * self.max_blocks * 4 + self.m * self.k * 4


class TopkConvertPeer(SlotsPeer, TopkPeer):
    """topk_decode_convert: torch.topk, then the winners' slots through the block table (dcp 1)."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.slots_init(shape, self.n)
        self.name += " + block-table gather (the slots)"

    def call(self, st):
        super().call(st)
        self.slots(st, st["i"], self.t.ones_like(st["i"], dtype=self.t.bool))


class MergeConvertPeer(SlotsPeer, MergePeer):
    """topk_merge_convert: the merge's peer, then rank 0's slots of the winners through its block table."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.slots_init(shape, -(-self.s["context"] // self.D))  # owner 0 holds the most (interleave 1)
        self.name += " + block-table gather (rank 0's slots)"

    def call(self, st):
        lidx, owner = self.merge(st)
        self.slots(st, lidx, owner == 0)


class ConvertPeer(IndexerPeer):
    """convert: the conversion's integer formula in torch ops (prefill or decode, the shape's "path")."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.decode = shape["path"] == "decode"
        self.m, self.k, self.D, self.I = shape["rows"], shape["k"], shape["dcp"], shape["interleave"]
        self.ctx = shape["context"]
        self.B = shape.get("block_size", 1)
        local = (self.ctx // self.I // self.D) * self.I + min(max(self.ctx % (self.I * self.D), 0), self.I)
        self.shard_rows = local
        self.max_blocks = -(-local // self.B)
        self.name = f"torch integer ops ({'decode: block-table gather' if self.decode else 'prefill'}), int32"

    def make_set(self):
        t, m, k = self.t, self.m, self.k
        ctx = t.full((m, 1), self.ctx, device=self.dev) if self.decode else (
            self.ctx - m + 1 + t.arange(m, device=self.dev)[:, None])
        tok = (self.rand(m, k) * ctx).long()
        tok = t.where(t.arange(k, device=self.dev)[None, :] < ctx, tok, t.full_like(tok, -1)).to(t.int32)
        st = {"topk": tok, "out": t.empty((m, k), dtype=t.int32, device=self.dev)}
        if self.decode:
            st["table"] = self.randint(0, 1 << 20, m, self.max_blocks).to(t.int32)
        return st

    def call(self, st):
        t, I, D = self.t, self.I, self.D
        tok = st["topk"]
        owner = t.div(tok, I, rounding_mode="floor") % D
        local = t.div(tok, I * D, rounding_mode="floor") * I + tok % I
        if not self.decode:
            out = owner * self.shard_rows + local  # one region at workspace row 0
            st["out"].copy_(t.where(tok < 0, t.full_like(out, -1), out))
            return
        blk = t.div(local, self.B, rounding_mode="floor")
        ok = (tok >= 0) & (owner == 0) & (blk < self.max_blocks)
        slot = st["table"].gather(1, blk.clamp(0, self.max_blocks - 1).long()) * self.B + local % self.B
        st["out"].copy_(t.where(ok, slot, t.full_like(slot, -1)))

    def touched_bytes(self):
        return self.m * self.k * 8


class GatherPeer(IndexerPeer):
    """gather_upconvert: index_select of the 656-byte entries by slot, dequantised to bf16 rows."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.n = shape["keys"]
        self.blocks = -(-self.n // 64)
        self.lut = None
        if not hasattr(torch, "float8_e4m3fn"):
            self.lut = torch.tensor([e4m3_value(b) for b in range(256)], dtype=torch.float32, device=dev)
        self.name = "torch index_select + e4m3 -> fp32 x tile scale -> bf16"

    def make_set(self):
        t, n = self.t, self.n
        return {"cache": random_entries(t, self.rand, self.blocks * 64, self.dev), "slot": self.block_slots(),
                "out": t.empty((n, 576), dtype=t.bfloat16, device=self.dev)}

    def call(self, st):
        st["out"].copy_(dequantise(self.t, st["cache"].index_select(0, st["slot"]), self.lut))

    def touched_bytes(self):
        return self.n * (ENTRY + 8 + 1152)

    def alloc_bytes(self):
        return self.blocks * 64 * ENTRY + self.n * (8 + 1152)


class GatherIdxPeer(IndexerPeer):
    """gather_idx: index_select of the 132-byte indexer entries by slot (bytes as they are)."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.n = shape["keys"]
        self.blocks = -(-self.n // 64)
        self.name = "torch index_select of the 132-byte entries"

    def make_set(self):
        t, n = self.t, self.n
        cache = self.randint(0, 256, self.blocks * 64, IDX_ENTRY).to(t.uint8)
        return {"cache": cache, "slot": self.block_slots(),
                "out": t.empty((n, IDX_ENTRY), dtype=t.uint8, device=self.dev)}

    def call(self, st):
        self.t.index_select(st["cache"], 0, st["slot"], out=st["out"])

    def touched_bytes(self):
        return self.n * (2 * IDX_ENTRY + 8)

    def alloc_bytes(self):
        return self.blocks * 64 * IDX_ENTRY + self.n * (8 + IDX_ENTRY)


class CombinePeer(IndexerPeer):
    """lse_combine: the DCP partials weighted by exp(lse_d - logsumexp) and summed (fp32 torch ops)."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.D, self.m, self.h = shape["dcp"], shape["batch"], shape["heads"]
        self.name = "torch logsumexp + softmax weights + weighted sum over D (fp32)"

    def make_set(self):
        t, D, m, h = self.t, self.D, self.m, self.h
        return {"lse": 10 + (self.rand(D, m, h) * 8 - 4), "out": self.rand(D, m, h, 512) * 2 - 1,
                "fin": t.empty((m, h, 512), dtype=t.float32, device=self.dev)}

    def call(self, st):
        w = self.t.softmax(st["lse"], dim=0)
        self.t.sum(w.unsqueeze(-1) * st["out"], dim=0, out=st["fin"])

    def touched_bytes(self):
        return 4 * (self.D * self.m * self.h * 513 + self.m * self.h * 512)

    def alloc_bytes(self):
        return 4 * (2 * self.D * self.m * self.h * 513 + self.m * self.h * 512)


class RestorePeer(IndexerPeer):
    """restore: index_select of the PCP all-gather's rows by the restore map (DualChunkSwap)."""

    def __init__(self, torch, dev, shape, gen):
        super().__init__(torch, dev, shape, gen)
        self.n, self.P, self.E = shape["tokens"], shape["pcp"], shape["row_elems"]
        self.cs = -(-self.n // (2 * self.P))
        self.name = "torch index_select of the gathered rows"

    def make_set(self):
        t, n, P, cs = self.t, self.n, self.P, self.cs
        g = t.arange(n, device=self.dev)
        c, off = t.div(g, cs, rounding_mode="floor"), g % cs
        idx = t.where(c < P, c * 2 * cs + off, (2 * P - 1 - c) * 2 * cs + cs + off)
        return {"gathered": (self.rand(P * 2 * cs, self.E) * 2 - 1).to(t.bfloat16), "idx": idx,
                "out": t.empty((n, self.E), dtype=t.bfloat16, device=self.dev)}

    def call(self, st):
        self.t.index_select(st["gathered"], 0, st["idx"], out=st["out"])

    def touched_bytes(self):
        return self.n * (4 * self.E + 4)

    def alloc_bytes(self):
        return (self.P * 2 * self.cs + self.n) * self.E * 2 + self.n * 8


# kernel name -> its peer, made from (torch, device, shape, generator)
PEERS = {
    "sparse_mla_prefill": lambda torch, dev, shape, gen: Peer(torch, dev, shape, False, gen),
    "sparse_mla_decode_fp8": lambda torch, dev, shape, gen: Peer(torch, dev, shape, True, gen),
    "indexer_logits_prefill": LogitsPeer,
    "indexer_logits_decode": DecodeLogitsPeer,
    "indexer_topk_decode": DecodeIndexerPeer,
    "topk_prefill": TopkPeer,
    "topk_decode": TopkPeer,
    "topk_decode_convert": TopkConvertPeer,
    "topk_merge": MergePeer,
    "topk_merge_convert": MergeConvertPeer,
    "convert": ConvertPeer,
    "gather_upconvert": GatherPeer,
    "gather_idx": GatherIdxPeer,
    "restore": RestorePeer,
    "lse_combine": CombinePeer,
}


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
    """The peer entry of case c, or None when this script has no peer for its kernel (skipped with a message)."""
    make = PEERS.get(c["kernel"])
    if make is None:
        print(f"{PROG}: {c['case']}: no PyTorch peer for kernel {c['kernel']}: skipped", file=sys.stderr)
        return None
    entry = {"kernel": c["kernel"], "case": c["case"], "shape": c["shape"]}
    sets = []
    try:
        peer = make(torch, dev, c["shape"], gen)
        entry["name"] = peer.name
        sets.append(peer.make_set())
        want = max(2, min(a.max_sets, math.ceil(4 * l2 / peer.touched_bytes())))
        while want > 2 and want * peer.alloc_bytes() > a.mem_gib * 2 ** 30:
            want -= 1
        while len(sets) < want:
            sets.append(peer.make_set())
        peer.call(sets[0])
        check = peer.check(sets[0]) if hasattr(peer, "check") else None
        if check is not None and all(math.isfinite(v) for v in check.values()):
            entry["check"] = check
        elif check is not None:
            print(f"{PROG}: {c['case']}: the peer's own check is not finite ({check}); left out", file=sys.stderr)
        times = time_calls(torch, dev, peer, sets, a.reps, a.warmup)
        entry.update(median_us=statistics.median(times), p10_us=quantile(times, 0.1), p90_us=quantile(times, 0.9),
                     sets=len(sets))
    except (RuntimeError, TypeError, KeyError) as e:  # out of memory among them; a shape field this peer lacks
        entry.setdefault("name", f"torch peer of {c['kernel']}")
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
        if e is None:
            continue
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
