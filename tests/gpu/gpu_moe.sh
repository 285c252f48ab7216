#!/bin/sh
# Kernel test: the MoE block and its two PCP paths (tests/gpu/test_gpu_moe.c).
# Skips (77) when this build has no CUDA; the program skips without a GPU.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
exec "$top_builddir/tests/gpu/test_gpu_moe"
