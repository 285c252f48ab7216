#!/bin/sh
# tests/numeric/fp8_on_device.c under emulation: the "device" conversions (tests/numeric/fp8_device.cu on the
# emulation's cuda_bf16.h / cuda_fp8.h) and philox.h against cplab/fp8.h and the C generators.
# Runs on the CPU through the CUDA emulation (tests/emu/cuda_emu.h), GPU or not,
# twice: threads and blocks in ascending, then in descending order.
prog="$top_builddir/tests/emu/test_emu_numeric_fp8"
"$prog" || exit $?
echo "== again with CPLAB_EMU_ORDER=reverse"
CPLAB_EMU_ORDER=reverse exec "$prog"
