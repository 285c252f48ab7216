#!/bin/sh
# cplab-bench's measurement engine on the GPU: the checks of
# tests/bench_engine.sh with the real kernels. Skips (77) when this build has
# no CUDA or no GPU is visible (the probe says which).
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
"$top_builddir/tests/gpu/gpu_probe" >/dev/null 2>&1
case $? in 0) ;; 77) echo "SKIP: no GPU visible"; exit 77 ;; *) echo "the GPU probe failed"; exit 1 ;; esac
. "$top_srcdir/tests/lib.sh"
ENGINE="$top_builddir/bench/cplab-bench"
. "$top_srcdir/tests/bench_engine.sh"
finish
