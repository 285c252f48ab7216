#!/bin/sh
# cplab-exec on the GPU (single-device backend) against cplab-sim --numeric:
# cplab-diff agreement (plans, converted indices, cache and workspace digests
# exact; top-k modulo ties; scores and attention within the policy) for the
# built-in scenarios; then rank-invariance of the executor's own trace.
# Skips (77) without CUDA or without a GPU. CPLAB_EXEC_SCENARIOS overrides
# the list (the GPU-node script runs generated ones through the same path).
. "$top_srcdir/tests/lib.sh"
EXEC="$top_builddir/cplab-exec"
DIFF="$top_builddir/cplab-diff"
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
"$EXEC" --scenario smoke -q >"$WORK/out" 2>"$WORK/err"
if grep -q CPLAB_ENODEV "$WORK/err"; then echo "SKIP: no GPU ($(cat "$WORK/err"))"; exit 77; fi

for s in ${CPLAB_EXEC_SCENARIOS:-smoke pr56157 mixed mtp-pcp2}; do
  n=$(basename "$s" .json)
  expect_exit 0 "$n: sim --numeric" "$SIM" --scenario "$s" --numeric -q -o "$WORK/$n-sim.h5"
  expect_exit 0 "$n: exec" "$EXEC" --scenario "$s" -o "$WORK/$n-exec.h5"
  cat "$WORK/out"
  expect_exit 0 "$n: exec agrees with sim" "$DIFF" -n 20 "$WORK/$n-sim.h5" "$WORK/$n-exec.h5"
  sed 's/^/  /' "$WORK/out" | tail -14
  expect_exit 0 "$n: exec's trace is rank-invariant" "$DIFF" --ranks -q "$WORK/$n-exec.h5"
done
finish
