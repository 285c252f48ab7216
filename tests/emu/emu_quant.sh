#!/bin/sh
# tests/gpu/test_gpu_quant.c under emulation: gen.cu's e4m3 generator and quant.cu against the host
# rule (cplab/fp8.h). Runs on the CPU through the CUDA emulation (tests/emu/cuda_emu.h), GPU or
# not, twice: threads and blocks in ascending, then in descending order.
prog="$top_builddir/tests/emu/test_emu_quant"
"$prog" || exit $?
echo "== again with CPLAB_EMU_ORDER=reverse"
CPLAB_EMU_ORDER=reverse exec "$prog"
