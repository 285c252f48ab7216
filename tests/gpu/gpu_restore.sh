#!/bin/sh
# Kernel test: the restore to global token order, its 16-byte and 4-byte paths (tests/emu/test_emu_restore.c on the GPU).
# Skips (77) when this build has no CUDA; the program skips without a GPU.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
exec "$top_builddir/tests/gpu/test_gpu_restore"
