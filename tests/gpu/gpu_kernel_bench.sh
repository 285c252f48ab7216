#!/bin/sh
# cplab-kernel-bench on a GPU: the smoke run of tests/kernel_bench_smoke.sh
# (one tiny case per kernel, checked against the reference, then timed) with
# the real kernels and small ceilings. Skips (77) when this build has no CUDA
# or no GPU is visible (the probe says which). The same checks run on the
# CPU emulation in tests/emu/emu_kernel_bench.sh.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
"$top_builddir/tests/gpu/gpu_probe" >/dev/null 2>&1
case $? in 0) ;; 77) echo "SKIP: no GPU visible"; exit 77 ;; *) echo "the GPU probe failed"; exit 1 ;; esac
. "$top_srcdir/tests/lib.sh"
KB="$top_builddir/bench/cplab-kernel-bench"
KB_ARGS="--reps 20 --warmup 2 --copy-mib 64 --gemm 1024x1024x1024"
. "$top_srcdir/tests/kernel_bench_smoke.sh"
finish
