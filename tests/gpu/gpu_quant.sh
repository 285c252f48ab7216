#!/bin/sh
# Kernel test: the e4m3 generator and the activation quantisation (tests/gpu/test_gpu_quant.c).
# Skips (77) when this build has no CUDA; the program skips without a GPU.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
exec "$top_builddir/tests/gpu/test_gpu_quant"
