#!/bin/sh
# The CUDA emulation itself: conversions, barriers, warp collectives, shared memory, launch errors.
# Runs on the CPU through the CUDA emulation (tests/emu/cuda_emu.h), GPU or not,
# twice: threads and blocks in ascending, then in descending order.
prog="$top_builddir/tests/emu/test_emu_self"
"$prog" || exit $?
echo "== again with CPLAB_EMU_ORDER=reverse"
CPLAB_EMU_ORDER=reverse exec "$prog"
