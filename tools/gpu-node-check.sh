#!/bin/sh
# Usage (on a GPU node): sh BUNDLE_DIR/gpu-node-check.sh BUNDLE_DIR [CONFIGURE_FLAGS...]
#
# Builds the cplab tarball of a bundle made by tools/gpu-bundle.sh against the
# bundled libraries, runs `make check` (the GPU tests run for real there) and
# runs the executor's agreement suite (tools/gpu-exec-suite.sh) and, with two
# GPUs or more, the gather benchmark; $OUT (or BUNDLE_DIR/logs) receives
# logs.tar.gz with every log and the summaries beside it. Exit status: the
# first failure's. CPLAB_RECORD_GOLDENS=1 instead records the GPU goldens
# (tools/record-gpu-goldens.sh; tests/golden-gpu/README.md).
set -u
bundle=$(cd "${1:?bundle directory}" && pwd); shift
sys="$bundle/sysroot"
final=${OUT:-$bundle/logs}
prof_script=""   # CPLAB_KERNEL_PROF, resolved before the build's cd
[ -n "${CPLAB_KERNEL_PROF:-}" ] && prof_script=$(cd "$(dirname "$CPLAB_KERNEL_PROF")" && pwd)/$(basename "$CPLAB_KERNEL_PROF")
out=$(mktemp -d /tmp/cplab-gpu-logs.XXXXXX)   # everything; $final gets a tarball and the summaries
mkdir -p "$final"
# The unpacked .pc files say /usr; point them at the sysroot.
for pc in "$sys"/usr/lib/*/pkgconfig/*.pc "$sys"/usr/lib/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed -i "s|=/usr|=$sys/usr|g" "$pc"
done
libdirs=$(ls -d "$sys"/usr/lib/*-linux-gnu 2>/dev/null | tr '\n' ':')
export PKG_CONFIG_PATH="$(ls -d "$sys"/usr/lib/*/pkgconfig 2>/dev/null | tr '\n' ':')${PKG_CONFIG_PATH:-}"
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
work=$(mktemp -d /tmp/cplab-gpu.XXXXXX)
tar xzf "$bundle"/cplab-*.tar.gz -C "$work"
cd "$work"/cplab-* || exit 2
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
status=0
./configure --with-cuda --with-nccl "$@" >"$out/configure.log" 2>&1 || status=$?
# CPLAB_AGREE_ONLY="scenario ...": only the programs, then for each scenario
# cplab-sim --numeric (under mpirun -np 4, while nvcc builds the executor),
# cplab-exec, cplab-diff sim vs exec and --ranks on the exec trace.
if [ $status -eq 0 ] && [ -n "${CPLAB_AGREE_ONLY:-}" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  make -j16 analysis/policy_text.h cplab-sim cplab-diff >"$out/build.log" 2>&1 || status=$?
  { for s in $CPLAB_AGREE_ONLY; do timeout 300 mpirun -np 4 ./cplab-sim --scenario "$s" --numeric -q -o "$work/$s-sim.h5"; done; } \
    >"$out/agree-sim.log" 2>&1 &
  make -j16 cplab-exec >>"$out/build.log" 2>&1 || status=$?
  wait
  for s in $CPLAB_AGREE_ONLY; do
    echo "== $s"
    ./cplab-exec --scenario "$s" -o "$work/$s-exec.h5" || status=1
    ./cplab-diff -n 10 "$work/$s-sim.h5" "$work/$s-exec.h5"; rc=$?; echo "cplab-diff sim exec: exit $rc"; [ $rc -eq 0 ] || status=1
    ./cplab-diff --ranks "$work/$s-exec.h5" | tail -6; rc=$?; echo "cplab-diff --ranks exec: exit $rc"
  done >"$out/agree-only.log" 2>&1
  tar czf "$final/logs.tar.gz" -C "$out" . && cp "$out/agree-only.log" "$final/"
  cat "$out/agree-only.log"
  exit $status
fi
# CPLAB_RECORD_GOLDENS=1: only the programs, then tools/record-gpu-goldens.sh
# (tests/golden-gpu/README.md). $final gets golden-gpu.tar.gz.part-* (the
# folder traces/, gzipped and split under the 16 MiB a file that comes back from
# a GPU node may have; `cat golden-gpu.tar.gz.part-* | tar xzf - -C
# tests/golden-gpu` unpacks it), provenance.md and record.log.
if [ "${CPLAB_RECORD_GOLDENS:-0}" = 1 ]; then
  if [ $status -ne 0 ]; then tail -20 "$out/configure.log"; else
    make -j16 analysis/policy_text.h cplab-sim cplab-diff cplab-trace cplab-exec >"$out/build.log" 2>&1 || status=$?
    [ $status -eq 0 ] || tail -20 "$out/build.log"
  fi
  if [ $status -eq 0 ]; then
    CPLAB_BUILD=. sh tools/record-gpu-goldens.sh "$work/traces" >"$out/record.log" 2>&1 || status=$?
    cat "$out/record.log"
    cp "$out/record.log" "$final/"
  fi
  if [ $status -eq 0 ]; then
    rm -f "$final"/golden-gpu.tar.gz.part-*
    tar czf - -C "$work" traces | split -b 15m - "$final/golden-gpu.tar.gz.part-" || status=$?
    cp "$work/traces/provenance.md" "$final/"
    ls -l "$final"
  fi
  tar czf "$final/logs.tar.gz" -C "$out" .
  exit $status
fi
[ $status -eq 0 ] && { make -j16 >"$out/build.log" 2>&1 || status=$?; }
# CPLAB_CHECK_TESTS="a.sh b" runs only those tests (a quicker re-check of a change).
[ $status -eq 0 ] && { make -j16 check ${CPLAB_CHECK_TESTS:+TESTS="$CPLAB_CHECK_TESTS"} >"$out/check.log" 2>&1 || status=$?; }
cp test-suite.log "$out/" 2>/dev/null
for log in tests/gpu/*.log tests/mpi/*.log tests/exec/*.log; do [ -f "$log" ] && cp "$log" "$out/"; done
tail -20 "$out/configure.log"
grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS)' "$out/check.log" 2>/dev/null | sort | uniq -c | sort -rn | head -5
sh build-aux/test-summary.sh test-suite.log 2>/dev/null
# The executor's agreement suite on generated scenarios (CPLAB_GENERATED, default 50; 0 skips it).
if [ $status -eq 0 ] && [ -x ./cplab-exec ] && [ "${CPLAB_GENERATED:-50}" -gt 0 ]; then
  sh tools/gpu-exec-suite.sh "$out" "${CPLAB_GENERATED:-50}" >"$out/exec-suite.log" 2>&1 || status=$?
  tail -8 "$out/exec-suite.md" 2>/dev/null
fi
# The DCP gather against NCCL's own all-gather, where there are two GPUs or more.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
# CPLAB_GATHER_BENCH=force (and CPLAB_MOE_BENCH=force): on one GPU too (one rank: no
# bus bandwidth, but the driver's ranked path and its check run for real).
if [ "${CPLAB_GATHER_BENCH:-1}" != 0 ] && { [ "${gpus:-0}" -ge 2 ] || [ "${CPLAB_GATHER_BENCH:-1}" = force ]; } &&
  [ -f bench/run-gpu-gather.sh ]; then
  make -j16 bench >"$out/bench-build.log" 2>&1 && sh bench/run-gpu-gather.sh . "$out" "$gpus" >"$out/gather-bench.log" 2>&1 || status=$?
  tail -12 "$out/gather-bench.log"
fi
# The MoE block's general and fast PCP paths, checked and timed on every GPU.
if [ "${CPLAB_MOE_BENCH:-1}" != 0 ] && { [ "${gpus:-0}" -ge 2 ] || [ "${CPLAB_MOE_BENCH:-1}" = force ]; } &&
  [ -f bench/run-gpu-moe.sh ]; then
  make -j16 bench >>"$out/bench-build.log" 2>&1 && sh bench/run-gpu-moe.sh . "$out" "$gpus" >"$out/moe-bench.log" 2>&1 || status=$?
  tail -8 "$out/moe-bench.log"
fi
# The card's ceilings (copy bandwidth, cuBLASLt bf16/fp8 GEMM), for the kernel benchmarks.
if [ "${CPLAB_CEILINGS:-1}" != 0 ] && [ -f bench/run-gpu-ceilings.sh ]; then
  make -j16 bench >>"$out/bench-build.log" 2>&1 && sh bench/run-gpu-ceilings.sh . "$out" >"$out/ceilings.log" 2>&1 || status=$?
  tail -12 "$out/ceilings.log"
fi
# One kernel iteration (CPLAB_KERNEL_BENCH="cplab-kernel-bench args", e.g.
# "--kernel topk_prefill"): bench/run-gpu-kernels.sh with those args after the
# tests (CPLAB_CHECK_TESTS: the kernel's GPU test); results in $final/kb.tar.gz.
if [ $status -eq 0 ] && [ -n "${CPLAB_KERNEL_BENCH:-}" ] && [ -f bench/run-gpu-kernels.sh ]; then
  # shellcheck disable=SC2086 # the args are words
  make -j16 bench >>"$out/bench-build.log" 2>&1 && sh bench/run-gpu-kernels.sh . "$final/kb" $CPLAB_KERNEL_BENCH \
    >"$out/kernel-bench.log" 2>&1 || status=$?
  tail -40 "$final/kb/stdout.txt" 2>/dev/null || tail -20 "$out/kernel-bench.log"
  # One file back for the folder (a GPU call brings back 8 files at most).
  [ -d "$final/kb" ] && tar czf "$final/kb.tar.gz" -C "$final" kb && rm -rf "$final/kb"
fi
# A profiling loop on the same build (CPLAB_KERNEL_PROF=SCRIPT, as
# tools/gpu-kernel-prof.sh runs one: KB the program, OUT where its files go,
# here $final/prof.tar.gz), saving that tool's second build.
if [ $status -eq 0 ] && [ -n "$prof_script" ]; then
  make -j16 bench/cplab-kernel-bench >>"$out/bench-build.log" 2>&1 || status=$?
  KB=bench/cplab-kernel-bench
  [ -x bench/.libs/cplab-kernel-bench ] && KB=bench/.libs/cplab-kernel-bench
  mkdir -p "$final/prof"
  KB=$KB OUT="$final/prof" sh "$prof_script" || status=$?
  tar czf "$final/prof.tar.gz" -C "$final" prof && rm -rf "$final/prof"
fi
# The layout comparison of cplab-bench (minutes of device time: only when asked,
# CPLAB_LAYERS_BENCH=1); its results land in $final/layers.
if [ "${CPLAB_LAYERS_BENCH:-0}" != 0 ] && [ -f bench/run-gpu-layers.sh ]; then
  sh bench/run-gpu-layers.sh . "$final/layers" "${gpus:-1}" >"$out/layers-bench.log" 2>&1 || status=$?
  tail -8 "$out/layers-bench.log"
fi
# Few files come back from a GPU node: all logs in one tarball, the summaries beside it.
tar czf "$final/logs.tar.gz" -C "$out" .
for f in exec-suite.md gather-bench-np2.txt gather-bench-np2.json ceilings.json exec_nccl.log exec_agree.log; do
  [ -f "$out/$f" ] && cp "$out/$f" "$final/"
done
# The ranked benchmarks' files (gather-bench-np*, moe-*-np*) in one tarball.
(cd "$out" && ls gather-bench-np* moe-*-np* 2>/dev/null | tar czf "$final/ranked.tar.gz" -T -) 2>/dev/null || true
grep -E '^(FAIL|ERROR)' "$out/check.log" >"$final/failures.txt" 2>/dev/null
exit $status
