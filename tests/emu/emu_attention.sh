#!/bin/sh
# tests/gpu/test_gpu_attention.c under emulation: attention_prefill.cu, attention_decode.cu and combine.cu against double references.
# Runs on the CPU through the CUDA emulation (tests/emu/cuda_emu.h), GPU or not,
# twice: threads and blocks in ascending, then in descending order.
prog="$top_builddir/tests/emu/test_emu_attention"
"$prog" || exit $?
echo "== again with CPLAB_EMU_ORDER=reverse"
CPLAB_EMU_ORDER=reverse exec "$prog"
