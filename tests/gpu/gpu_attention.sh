#!/bin/sh
# Kernel test: sparse MLA prefill / decode attention and the LSE combine (tests/gpu/test_gpu_attention.c).
# Skips (77) when this build has no CUDA; the program skips without a GPU.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
exec "$top_builddir/tests/gpu/test_gpu_attention"
