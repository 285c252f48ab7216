#!/bin/sh
# cplab-kernel-bench on the emulated kernels (tests/emu): the smoke run of
# tests/kernel_bench_smoke.sh, the unchanged bench sources linked against the
# emulation (its timings mean nothing). The smoke decode case's k (1024)
# gives the split launcher two splits a row, so the merge runs too.
# The GPU form: tests/gpu/gpu_kernel_bench.sh.
. "$top_srcdir/tests/lib.sh"
KB="$top_builddir/tests/emu/cplab-kernel-bench-emu"
KB_ARGS="--reps 1 --warmup 0 --copy-mib 1 --gemm 64x64x64"
. "$top_srcdir/tests/kernel_bench_smoke.sh"
expect_grep "$WORK/err" "cplab_sparse_mla_decode_split (split over the entries + merge)" "decode: the split launcher split the rows"
finish
