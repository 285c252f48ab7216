#!/bin/sh
# cplab-bench's measurement engine on the emulated kernels (tests/emu): the
# checks of tests/bench_engine.sh, with the unchanged engine and executor
# sources linked against the emulation. The GPU form is tests/gpu/gpu_bench.sh.
. "$top_srcdir/tests/lib.sh"
ENGINE="$top_builddir/tests/emu/cplab-bench-emu"
. "$top_srcdir/tests/bench_engine.sh"
finish
