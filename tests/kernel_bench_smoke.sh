# tests/kernel_bench_smoke.sh: cplab-kernel-bench's smoke run, sourced by
# tests/gpu/gpu_kernel_bench.sh (on a GPU) and tests/emu/emu_kernel_bench.sh
# (on the CPU emulation), after tests/lib.sh, with KB the program to run and
# KB_ARGS its timing options. The tiny case of each kernel (smoke-prefill:
# causal rows, some with fewer valid entries than top-k; smoke-decode: a
# DCP rank's rows, half the entries -1, 3 rows that the split launcher
# spreads over more blocks on a GPU of many SMs) is generated, checked against the
# double-precision reference on poisoned outputs, timed over its rotating
# sets, and written to kernels.json with its peer (a peer file made here),
# after small ceilings. Timings are not checked.
: "${KB:?set KB}"
PY=${PYTHON:-python3}
shape_d='{"heads": 16, "s_q": 1, "s_kv": 2048, "topk": 1024, "batch": 3, "dcp": 2, "causal": false, "scale": 0.0625}'
cat >"$WORK/peer.json" <<PEER
{"peer": "pytorch", "version": "test", "entries": [
 {"kernel": "sparse_mla_decode_fp8", "case": "smoke-decode", "name": "a test peer", "median_us": 50, "shape": $shape_d}]}
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
if "$PY" - "$WORK/kernels.json" <<'CHECK'; then pass "kernels.json: 2 entries, checked, timed, with their fields"; else fail "kernels.json is not as expected"; fi
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["complete"] is True and doc["card"]["name"] and doc["commit"] and doc["command"] and doc["date"]
assert doc["ceilings"]["copy_gbps"] > 0 and doc["ceilings"]["bf16_tflops"] > 0
e = {x["case"]: x for x in doc["entries"]}
assert sorted(e) == ["smoke-decode", "smoke-prefill"], sorted(e)
for x in e.values():
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
