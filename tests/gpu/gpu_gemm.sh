#!/bin/sh
# Kernel test: the cuBLASLt GEMM wrapper, bf16 and fp8 (tests/gpu/test_gpu_gemm.c).
# Skips (77) when this build has no CUDA; the program skips without a GPU.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
exec "$top_builddir/tests/gpu/test_gpu_gemm"
