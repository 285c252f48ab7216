#!/bin/sh
# tests/gpu/test_gpu_stream.c under emulation: gen.cu's bf16 generator against its host twin, and
# the host stand-in of stream.cu (tests/emu/stream_host.cpp: streams, events, graphs).
# Runs on the CPU through the CUDA emulation (tests/emu/cuda_emu.h), GPU or not,
# twice: threads and blocks in ascending, then in descending order.
prog="$top_builddir/tests/emu/test_emu_stream"
"$prog" || exit $?
echo "== again with CPLAB_EMU_ORDER=reverse"
CPLAB_EMU_ORDER=reverse exec "$prog"
