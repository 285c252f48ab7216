#!/bin/sh
# cplab-kernel-bench on the emulated kernels (tests/emu): the smoke run of
# tests/kernel_bench_smoke.sh, the unchanged bench sources linked against the
# emulation (its timings mean nothing): every kernel's smoke case once, the
# attention kernels' and the indexer path's (logits, top-k prefill / decode /
# merge, both conversions, gather, restore) and the ceilings' (a copy, bf16
# and fp8 GEMMs through the host stand-in of cuBLASLt), each checked on the
# emulated kernel. The split launcher's model sees the emulation's one SM, where no
# split pays (test_gpu_attention runs the split and the merge with given
# split counts). The ranked kernels (gather_nccl, moe_paths) need NCCL: the
# emulated driver neither lists nor runs them, and refuses them by name. The
# GPU form: tests/gpu/gpu_kernel_bench.sh.
. "$top_srcdir/tests/lib.sh"
KB="$top_builddir/tests/emu/cplab-kernel-bench-emu"
KB_ARGS="--reps 1 --warmup 0 --copy-mib 1 --gemm 64x64x64"
. "$top_srcdir/tests/kernel_bench_smoke.sh"
expect_grep "$WORK/err" "cplab_sparse_mla_decode_split (no split pays: the plain kernel)" "decode: the split launcher's model on one SM runs the plain kernel"
# The idle pause after the ceilings (--settle-ms, default 1000 ms), in the table and in kernels.json.
expect_grep "$WORK/out" "^# an idle pause of 1000 ms after the ceilings$" "the default pause after the ceilings"
"$PY" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["ceilings"].get("settle_ms") != 1000)' \
  "$WORK/kernels.json" && pass "  kernels.json: ceilings.settle_ms 1000" || fail "  kernels.json: ceilings.settle_ms not 1000"
# The hold before each timing loop (--lead-us, default 50 us a run): in the table and in kernels.json (1 run a
# case, the ceilings' 3 operations).
expect_grep "$WORK/out" "^# before each case's runs the GPU waits 50 us a run (50 us) while the host queues them$" \
  "the default hold before each case's runs"
"$PY" - "$WORK/kernels.json" <<'PYEOF' && pass "  kernels.json: lead_us 50 in every timed entry and its same-size copy, 150 for the ceilings" || fail "  kernels.json: lead_us missing or wrong"
import json, sys
doc = json.load(open(sys.argv[1]))
timed = [e for e in doc["entries"] if "median_us" in e]
ok = doc["ceilings"].get("lead_us") == 150 and timed and all(e.get("lead_us") == 50 for e in timed)
ok = ok and all(e["copy_same_size"].get("lead_us") == 50 for e in timed if "copy_same_size" in e)
sys.exit(0 if ok else 1)
PYEOF
# The emulation runs every launch at once, on the host: queueing the runs takes longer than the hold, which the
# warning says (the same warning on a GPU means the host fell behind the GPU).
expect_grep "$WORK/err" "smoke-topk: WARNING: the host took [0-9.]* ms to queue the runs, longer than the GPU's hold of 0.05 ms" \
  "the warning: the host queued the runs more slowly than the hold"
# The indexer path's launchers, each run once (the emulated kernels/indexer.cu, indexer_decode.cu, topk.cu, convert.cu, gather.cu,
# restore.cu).
for l in cplab_indexer_logits cplab_indexer_logits_decode cplab_topk cplab_topk_merge "cplab_topk_merge with its conversion" \
  "cplab_topk_split: one block a row, with its conversion" \
  cplab_convert_prefill_topk cplab_convert_decode_topk cplab_gather_mla cplab_restore_rows; do
  expect_grep "$WORK/err" ": $l, 2 input sets" "the emulated $l ran its smoke case (2 input sets: no L2 here)"
done
# cplab_topk_split's route, from cplab_topk_split_route on the emulation's one SM: two short rows, one block a row.
expect_grep "$WORK/err" "smoke-topk-decode (b2 context 1100 k 1024): cplab_topk_split: one block a row, 2 input sets" \
  "topk_decode's launcher names the route cplab_topk_split takes on this device"
# The ranked kernels (NCCL over MPI ranks) do not exist in the emulation: not offered, refused by name.
expect_exit 0 "--list --all" "$KB" --list --all
if grep -q "gather_nccl\|moe_paths\|dcp-ag-\|smoke-moe-" "$WORK/out"; then fail "the emulated --list offers a ranked kernel"
else pass "the emulated --list offers no ranked kernel"; fi
for k in gather_nccl moe_paths; do
  expect_exit 2 "--kernel $k" "$KB" --kernel "$k"
  expect_grep "$WORK/err" "\-\-kernel: '$k' is a ranked kernel (NCCL collectives over MPI ranks): this build has no NCCL" \
    "the emulation refuses $k by name"
done
# --settle-ms 0: no pause.
# shellcheck disable=SC2086 # KB_ARGS is a list of options
expect_exit 0 "--settle-ms 0: no pause" "$KB" --case smoke-ceil-copy $KB_ARGS --settle-ms 0
if grep -q "idle pause" "$WORK/out"; then fail "  --settle-ms 0 still paused"; else pass "  no pause line"; fi
# --lead-us 0: no hold, said in the table.
# shellcheck disable=SC2086 # KB_ARGS is a list of options
expect_exit 0 "--lead-us 0: no hold" "$KB" --case smoke-ceil-copy $KB_ARGS --lead-us 0 -o "$WORK/lead0.json"
expect_grep "$WORK/out" "GPU waits 0 us a run (0 us) while the host queues them: none, so a run's time may hold the host's launch time" \
  "  the table says there is no hold"
"$PY" -c 'import json, sys; sys.exit(any(e.get("lead_us") != 0 for e in json.load(open(sys.argv[1]))["entries"]))' \
  "$WORK/lead0.json" && pass "  kernels.json: lead_us 0" || fail "  kernels.json: lead_us not 0"
finish
