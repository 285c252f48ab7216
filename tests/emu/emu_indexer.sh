#!/bin/sh
# tests/gpu/test_gpu_indexer.c under emulation: gen.cu, indexer.cu and topk.cu against sim/.
# Runs on the CPU through the CUDA emulation (tests/emu/cuda_emu.h), GPU or not,
# twice: threads and blocks in ascending, then in descending order. CPLAB_KT_SMALL=1
# runs the few random cases the emulation has time for; a GPU run has them all.
prog="$top_builddir/tests/emu/test_emu_indexer"
CPLAB_KT_SMALL=1 "$prog" || exit $?
echo "== again with CPLAB_EMU_ORDER=reverse"
CPLAB_KT_SMALL=1 CPLAB_EMU_ORDER=reverse exec "$prog"
