#!/bin/sh
# The ranked kernels of cplab-kernel-bench on GPUs (once cplab-moe-bench and
# cplab-gather-bench): the MoE block's general PCP path (all-gather, the
# shard over every rank's rows, reduce-scatter) and its fast path (the shard
# over the local rows, all-reduce) give the same output on every rank, and
# the DCP gather's slices are their owners' shards, each checked by the
# driver before it times them. One rank on any GPU, as a plain run and under
# mpirun -np 1 (P = 1: the collectives are copies over a one-rank NCCL
# communicator); with two GPUs and mpirun, two ranks, each holding one of two
# MoE shards. Skips (77) without CUDA, NCCL or a GPU.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
. "$top_srcdir/tests/lib.sh"
KB="$top_builddir/bench/cplab-kernel-bench"
if [ ! -x "$KB" ]; then echo "SKIP: cplab-kernel-bench is not built"; exit 77; fi
if ! "$KB" --list --kernel moe_paths >/dev/null 2>&1; then echo "SKIP: built without NCCL (no ranked kernels)"; exit 77; fi
"$top_builddir/tests/gpu/gpu_probe" >/dev/null 2>&1
case $? in 0) ;; 77) echo "SKIP: no GPU visible"; exit 77 ;; *) echo "the GPU probe failed"; exit 1 ;; esac
# The MoE cases: a small block (d 256, 16 experts, top-4, intermediate 128, 2 shared) at 1, 37 and 300 rows per rank
# (300 is more than one 256-row chunk of the permutation's scan); the gather's: 300 rows a rank.
ARGS="--reps 3 --warmup 1"

# check_run NAME NP: the driver's check lines and its kernels.json.
check_run() {
  n=$(grep -c "^# smoke-moe-b[0-9]*: check ok on $2 rank(s); rank 0: fast == general within tolerance" "$WORK/out")
  if [ "$n" -eq 3 ]; then pass "$1: the paths agreed on all 3 batches"; else fail "$1: $n of 3 batches checked"; fi
  expect_grep "$WORK/out" "^# smoke-dcp-ag: check ok on $2 rank(s)" "$1: the gathered slices matched their owners' shards"
  py=${PYTHON:-python3}
  if "$py" - "$WORK/$1.json" "$2" <<'PY'; then pass "$1: kernels.json holds every (mode, op) of the timed cases"; else fail "$1: kernels.json"; fi
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["ranks"] == int(sys.argv[2]) and doc["complete"], doc.get("ranks")
moe = [e for e in doc["entries"] if e["kernel"] == "moe_paths"]
ag = [e for e in doc["entries"] if e["kernel"] == "gather_nccl"]
assert len(moe) == 3 * 2 * 4, len(moe)  # cases x modes x operations
assert {e["mode"] for e in moe} == {"eager", "graph"}
for e in moe:
    assert e["timing"] == "collective" and e["median_us"] > 0 and e["check"]["ok"], e
    if e["op"] == "general":
        assert e["ratio_to_first"] == 1
assert [e["op"] for e in ag] == ["nccl_allgather", "executor_gather", "local_gather"], ag
assert ag[0]["total_bytes"] == int(sys.argv[2]) * 300 * 1152 and ag[0]["algbw_gbps"] > 0
assert (ag[0]["busbw_gbps"] is None) == (int(sys.argv[2]) == 1)
PY
}

expect_exit 0 "one rank, a plain run: checked and timed" "$KB" --kernel moe_paths,gather_nccl \
  --case 'smoke-moe-*,smoke-dcp-ag' $ARGS --json "$WORK/plain.json"
sed 's/^/  /' "$WORK/out"
check_run plain 1
if [ -n "$MPIRUN" ]; then
  expect_exit 0 "mpirun -np 1: checked and timed" timeout 300 "$MPIRUN" -np 1 "$KB" --kernel moe_paths,gather_nccl \
    --case 'smoke-moe-*,smoke-dcp-ag' $ARGS --json "$WORK/np1.json"
  check_run np1 1
fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${gpus:-0}" -ge 2 ] && [ -n "$MPIRUN" ]; then
  expect_exit 0 "two ranks on two GPUs, checked and timed" timeout 300 "$MPIRUN" -np 2 "$KB" \
    --kernel moe_paths,gather_nccl --case 'smoke-moe-*,smoke-dcp-ag' $ARGS --json "$WORK/np2.json"
  sed 's/^/  /' "$WORK/out"
  check_run np2 2
  n=$(grep -c "^# cplab-kernel-bench: " "$WORK/out")
  if [ "$n" -eq 1 ]; then pass "np2: rank 0 alone prints"; else fail "np2: the header printed $n times"; fi
else
  echo "# fewer than two GPUs or no mpirun: the two-rank run is not run"
fi
finish
