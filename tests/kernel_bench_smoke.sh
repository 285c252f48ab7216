# tests/kernel_bench_smoke.sh: cplab-kernel-bench's smoke run, sourced by
# tests/gpu/gpu_kernel_bench.sh (on a GPU) and tests/emu/emu_kernel_bench.sh
# (on the CPU emulation), after tests/lib.sh, with KB the program to run and
# KB_ARGS its timing options. The tiny cases of every kernel (smoke-prefill:
# causal rows, some with fewer valid entries than top-k; smoke-decode: a
# DCP rank's rows, half the entries -1, 3 rows that the split launcher
# spreads over more blocks on a GPU of many SMs; the indexer path's:
# smoke-logits, causal rows over 256 keys with copied keys (exact ties);
# smoke-dindexer, decode logits then their top-k;
# smoke-topk, causal rows, some shorter than k (-1 padding); smoke-topk-decode,
# and smoke-topk-decode-convert, its lists converted into the cache's slots;
# smoke-topk-merge, 2 owners at interleave 2, and smoke-topk-merge-convert,
# 4 owners' merge converted into rank 0's slots; smoke-convert-prefill and
# -decode; smoke-gather and smoke-gather-idx, a partly used last block;
# smoke-combine, 2 DCP ranks' partials; smoke-restore, padded chunks; the
# ceilings' smoke-ceil-copy, a 4 KiB copy, and smoke-ceil-bf16 / -fp8, 64^3
# GEMMs, bench/kernel_ceilings.c) are generated, checked against their references (double precision
# or exact) on poisoned outputs, timed over their rotating sets, and written
# to kernels.json with their peers (a peer file made here), after small
# ceilings; kernels.json's entries are checked field by field per kernel.
# Timings are not checked.
: "${KB:?set KB}"
PY=${PYTHON:-python3}
shape_d='{"heads": 16, "s_q": 1, "s_kv": 2048, "topk": 1024, "batch": 3, "dcp": 2, "causal": false, "scale": 0.0625}'
shape_t='{"queries": 16, "keys": 300, "k": 290, "causal": 1}'
shape_l='{"heads": 32, "queries": 16, "keys": 256, "causal": 1}'
cat >"$WORK/peer.json" <<PEER
{"peer": "pytorch", "version": "test", "entries": [
 {"kernel": "sparse_mla_decode_fp8", "case": "smoke-decode", "name": "a test peer", "median_us": 50, "shape": $shape_d},
 {"kernel": "topk_prefill", "case": "smoke-topk", "name": "a test top-k peer", "median_us": 40, "shape": $shape_t},
 {"kernel": "indexer_logits_prefill", "case": "smoke-logits", "name": "a test logits peer", "median_us": 30,
  "shape": $shape_l}]}
PEER
# shellcheck disable=SC2086 # KB_ARGS is a list of options
expect_exit 0 "the smoke cases, checked and timed" "$KB" --case 'smoke-*' $KB_ARGS --check-rows 8 \
  --peer "$WORK/peer.json" --json "$WORK/kernels.json"
sed 's/^/  /' "$WORK/out"
expect_grep "$WORK/out" "^# all checks passed" "every check passed"
expect_grep "$WORK/out" "^ smoke-prefill .* causal " "the prefill case has its table line"
expect_grep "$WORK/out" "^ smoke-decode .* 50.0 " "the decode case has its line with the peer's time"
expect_grep "$WORK/out" "^# ceilings (.*): copy .* GB/s .*bf16 GEMM .* TFLOPS" "the ceilings were measured"
expect_grep "$WORK/err" "check ok (8 rows x 16 heads" "prefill: 8 rows of all heads checked"
expect_grep "$WORK/err" "check ok (3 rows x 16 heads" "decode: every row of the batch checked"
# The indexer path: one table line and one passed check per case.
for c in smoke-logits smoke-dlogits smoke-dindexer smoke-topk smoke-topk-decode smoke-topk-decode-convert smoke-topk-merge \
  smoke-topk-merge-convert smoke-convert-prefill smoke-convert-decode \
  smoke-gather smoke-gather-idx smoke-restore smoke-combine; do
  expect_grep "$WORK/out" "^ $c " "$c has its table line"
done
expect_grep "$WORK/out" "^ smoke-topk .* exact  *0  *40.0 " "top-k: exact, no mismatch, the peer's time beside it"
expect_grep "$WORK/err" "smoke-logits .*check ok (8 rows x 256 keys: max error .* (<= 0.002), 0 logits outside \[ks, ke) not -inf, 0 of [1-9][0-9]* copied keys" \
  "logits: 8 rows within 2e-3 of the double reference, -inf outside, copied keys' ties exact"
expect_grep "$WORK/err" "smoke-dlogits .*check ok (2 rows x 150 keys: max error .* (<= 0.002), 0 of [0-9]* copied keys" \
  "decode logits: both rows within 2e-3 of the double reference through the shuffled block table"
expect_grep "$WORK/err" "smoke-dindexer .*check ok (2 rows x 3000 keys: max error .* (<= 0.002), 0 of [0-9]* copied keys.*; top-k: 0 of 512 entries differ" \
  "the decode indexer (logits, then top-k 256 of them): both rows' logits within 2e-3, their top-k exact"
expect_grep "$WORK/err" "smoke-topk .*check ok (8 rows x 290 entries: 0 indices or scores differ" "top-k prefill: 8 rows exact"
expect_grep "$WORK/err" "smoke-topk-decode .*check ok (2 rows x 1024 entries: 0 " "top-k decode: every row exact"
expect_grep "$WORK/err" "smoke-topk-decode-convert .*check ok (2 rows x 1024 entries: 0 indices, scores or slots differ .*cplab_layout_vllm_convert_decode" \
  "top-k decode with its conversion: every row's list and slots exact"
expect_grep "$WORK/err" "smoke-topk-merge .*check ok (2 rows x 256 entries: 0 .* all the row's keys" "merge: every row exact"
expect_grep "$WORK/err" "smoke-topk-merge-convert .*check ok (3 rows x 128 entries: 0 indices, scores or slots differ .*cplab_layout_vllm_convert_decode" \
  "merge with its conversion: every row's list and slots exact"
expect_grep "$WORK/err" "smoke-convert-prefill .*check ok (8 rows x 128 entries (4 of them -1): 0 differ" \
  "convert prefill: 8 rows exact, the short rows' -1 kept"
expect_grep "$WORK/err" "smoke-convert-decode .*check ok (3 rows x 256 entries (.* of them -1): 0 differ" "convert decode: exact"
expect_grep "$WORK/err" "smoke-gather .*check ok (8 rows x 576 bf16: 0 differ" "gather: 8 rows bit for bit"
expect_grep "$WORK/err" "smoke-restore .*check ok (8 rows x 576 bf16: 0 differ" "restore: 8 rows bit for bit"
expect_grep "$WORK/err" "smoke-gather-idx .*check ok (8 rows x 132 bytes: 0 differ" "gather idx: 8 rows byte for byte"
# The ceilings as cases: the copy's three probes exact, the GEMMs' 256 samples within their allowance.
for c in smoke-ceil-copy smoke-ceil-bf16 smoke-ceil-fp8; do
  expect_grep "$WORK/out" "^ $c " "$c has its table line"
done
expect_grep "$WORK/err" "smoke-ceil-copy .*check ok (copy 4096 bytes: 12288 bytes of 3 probes" "the copy ceiling: 3 probes exact"
expect_grep "$WORK/err" "smoke-ceil-bf16 .*check ok (bf16 64x64x64: 256 sampled elements, rel. Frobenius error" \
  "the bf16 GEMM ceiling: 256 samples checked"
expect_grep "$WORK/err" "smoke-ceil-fp8 .*check ok (fp8 64x64x64: 256 sampled elements, rel. Frobenius error" \
  "the fp8 GEMM ceiling: 256 samples checked"
expect_grep "$WORK/err" "smoke-combine .*check ok (3 rows x 4 heads x 512: worst .* (bound 1e-06), 0 beyond" \
  "combine: every row within 1e-6 of sim_lse_combine"
if "$PY" - "$WORK/kernels.json" <<'CHECK'; then pass "kernels.json: 19 entries, checked, timed, with their fields"; else fail "kernels.json is not as expected"; fi
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["complete"] is True and doc["card"]["name"] and doc["commit"] and doc["command"] and doc["date"]
assert doc["ceilings"]["copy_gbps"] > 0 and doc["ceilings"]["bf16_tflops"] > 0 and doc["ceilings"]["fp8_tflops"] > 0
attn = ("smoke-decode", "smoke-prefill")
shapes = {  # the indexer path's kernels: exactly their shape fields, and their rate
    "smoke-logits": ("indexer_logits_prefill", {"heads", "queries", "keys", "causal"}, "tflops"),
    "smoke-dlogits": ("indexer_logits_decode", {"heads", "batch", "context", "dcp"}, "gbps"),
    "smoke-dindexer": ("indexer_topk_decode", {"heads", "batch", "context", "dcp", "k"}, "gbps"),
    "smoke-topk": ("topk_prefill", {"queries", "keys", "k", "causal"}, "gbps"),
    "smoke-topk-decode": ("topk_decode", {"batch", "context", "k"}, "gbps"),
    "smoke-topk-decode-convert": ("topk_decode_convert", {"batch", "context", "k", "convert_block_size"}, "gbps"),
    "smoke-topk-merge": ("topk_merge", {"batch", "dcp", "context", "k", "interleave"}, "gbps"),
    "smoke-topk-merge-convert": ("topk_merge_convert", {"batch", "dcp", "context", "k", "interleave", "convert_block_size"},
                                 "gbps"),
    "smoke-convert-prefill": ("convert", {"path", "rows", "k", "context", "dcp", "interleave"}, "gbps"),
    "smoke-convert-decode": ("convert", {"path", "rows", "k", "context", "dcp", "interleave", "block_size"}, "gbps"),
    "smoke-gather": ("gather_upconvert", {"keys"}, "gbps"),
    "smoke-gather-idx": ("gather_idx", {"keys"}, "gbps"),
    "smoke-combine": ("lse_combine", {"dcp", "batch", "heads"}, "gbps"),
    "smoke-restore": ("restore", {"tokens", "pcp", "row_elems"}, "gbps"),
}
ceil = {  # the ceilings' cases: shape fields, rates (no same-size copy: the copy is the ceiling)
    "smoke-ceil-copy": ("ceiling_copy", {"bytes_per_copy"}, {"gbps", "bytes", "of_copy"}),
    "smoke-ceil-bf16": ("ceiling_gemm_bf16", {"m", "n", "k"}, {"tflops", "flop", "of_bf16_gemm"}),
    "smoke-ceil-fp8": ("ceiling_gemm_fp8", {"m", "n", "k"}, {"tflops", "flop", "of_fp8_gemm"}),
}
e = {x["case"]: x for x in doc["entries"]}
assert sorted(e) == sorted(attn + tuple(shapes) + tuple(ceil)), sorted(e)
common = {"kernel", "case", "median_us", "p10_us", "p90_us", "min_us", "max_us", "reps", "warmup", "sets",
          "rotation_bytes", "gpu_busy_fraction", "lead_us", "host_queue_us", "launcher", "check", "peer"}
for name, (kernel, fields, rate) in shapes.items():
    x = e[name]
    assert x["kernel"] == kernel, (name, x["kernel"])
    rates = {"tflops", "flop", "of_fp8_gemm"} if rate == "tflops" else {"gbps", "bytes", "of_copy"}
    if rate == "gbps":  # bytes-rated: a copy of the same bytes beside it, and both back to back
        rates |= {"copy_same_size", "of_copy_same_size", "back_to_back"}
        cp = x["copy_same_size"]
        assert cp["bytes_per_copy"] == max(16, int(x["bytes"] / 2) // 16 * 16) and cp["gbps"] > 0, (name, cp)
        assert cp["sets"] >= 3 and cp["median_us"] > 0 and cp["back_to_back_us"] > 0, (name, cp)
        assert abs(x["of_copy_same_size"] - x["gbps"] / cp["gbps"]) <= 1e-9 * x["of_copy_same_size"], name
        b = x["back_to_back"]
        assert set(b) == {"runs", "mean_us", "of_copy_same_size"} and b["runs"] == x["reps"], (name, b)
        want = (x["bytes"] / b["mean_us"]) / (2 * cp["bytes_per_copy"] / cp["back_to_back_us"])
        assert b["mean_us"] > 0 and abs(b["of_copy_same_size"] - want) <= 1e-6 * want, (name, b, want)
    assert set(x) == common | fields | rates, (name, sorted(set(x) ^ (common | fields | rates)))
    assert all(isinstance(x[f], int) and not isinstance(x[f], bool) for f in fields - {"path"}), name
    assert x[rate] > 0 and x["p10_us"] <= x["median_us"] <= x["p90_us"] and x["sets"] >= 2, name
    c = x["check"]
    assert c["ok"] is True and c["mismatches"] == 0 and c["compared"] > 0 and c["rows"] > 0 and c["reference"], name
    if kernel.startswith("indexer_"):  # the logits, alone or before a top-k
        assert c["tol_rel_err"] == 2e-3 and 0 <= c["max_rel_err"] <= 2e-3, c
    elif kernel == "lse_combine":
        assert c["tol_rel_err"] == 1e-6 and 0 <= c["max_rel_err"] <= 1e-6, c
    else:
        assert set(c) == {"ok", "rows", "compared", "mismatches", "reference"}, c
assert e["smoke-convert-prefill"]["path"] == "prefill" and e["smoke-convert-decode"]["path"] == "decode"
assert e["smoke-convert-decode"]["launcher"] == "cplab_convert_decode_topk"
assert e["smoke-topk-merge"]["launcher"] == "cplab_topk_merge"
assert e["smoke-topk-merge-convert"]["launcher"] == "cplab_topk_merge with its conversion"
assert e["smoke-topk-decode-convert"]["launcher"] == e["smoke-topk-decode"]["launcher"] + ", with its conversion"
# the issue's entry: kernel, shape fields, median_us, tflops or gbps, peer {name, median_us}
p = e["smoke-topk"]["peer"]
assert p["name"] == "a test top-k peer" and p["median_us"] == 40 and p["gbps"] > 0 and "tflops" not in p, p
p = e["smoke-logits"]["peer"]
assert p["name"] == "a test logits peer" and p["median_us"] == 30 and p["tflops"] > 0 and "gbps" not in p, p
assert e["smoke-restore"]["peer"] is None
# flop counts the (query, key) pairs in range: causal rows of 256 keys, 16 queries, 32 heads
assert e["smoke-logits"]["flop"] == 2 * sum(256 - 16 + i + 1 for i in range(16)) * 32 * 128
# top-k's bytes are its in-range logits: 16 causal rows over 300 keys
assert e["smoke-topk"]["bytes"] == 4 * sum(300 - 16 + i + 1 for i in range(16))
for name, (kernel, fields, rates) in ceil.items():
    x = e[name]
    assert x["kernel"] == kernel and set(x) == common | fields | rates, (name, sorted(set(x) ^ (common | fields | rates)))
    assert x["p10_us"] <= x["median_us"] <= x["p90_us"] and x["sets"] >= 2 and x["peer"] is None, name
    c = x["check"]
    assert c["ok"] is True and c["mismatches"] == 0 and c["reference"], (name, c)
    if kernel == "ceiling_copy":
        assert set(c) == {"ok", "rows", "compared", "mismatches", "reference"} and c["compared"] == 3 * 4096, c
        assert x["bytes_per_copy"] == 4096 and x["bytes"] == 2 * 4096 and x["gbps"] > 0 and x["sets"] >= 3, x
    else:
        assert c["rows"] == 256 and c["compared"] == 256 and c["tol_rel_err"] == 1e-2 and 0 <= c["max_rel_err"] < 1e-2, c
        assert (x["m"], x["n"], x["k"]) == (64, 64, 64) and x["flop"] == 2 * 64 ** 3 and x["tflops"] > 0, x
assert e["smoke-ceil-fp8"]["launcher"] == "cplab_gemm_fp8 (cuBLASLt)"
assert isinstance(doc["cublaslt_version"], str), doc.get("cublaslt_version")
per_kernel = doc["conventions"]["per_kernel"]
assert set(per_kernel) >= {k for k, _, _ in shapes.values()} | {k for k, _, _ in ceil.values()}, sorted(per_kernel)
for x in (e[n] for n in attn):
    for k in ("kernel", "heads", "s_q", "s_kv", "topk", "batch", "dcp", "median_us", "p10_us", "p90_us", "tflops",
              "tflops_valid", "gbps", "sets", "of_bf16_gemm", "of_copy", "launcher"):
        assert k in x, k
    assert x["check"]["ok"] and x["check"]["max_rel_l2"] <= 2e-2 and x["check"]["max_lse_abs"] <= 2e-3
    assert x["p10_us"] <= x["median_us"] <= x["p90_us"] and x["sets"] >= 2
    assert x["tflops_valid"] <= x["tflops"]
assert e["smoke-decode"]["peer"]["median_us"] == 50 and e["smoke-prefill"]["peer"] is None
assert e["smoke-decode"]["kernel"] == "sparse_mla_decode_fp8" and e["smoke-decode"]["dcp"] == 2
# a DCP rank of 2: half of each row's entries valid
assert abs(e["smoke-decode"]["flop_valid"] * 2 - e["smoke-decode"]["flop"]) < 1
CHECK
