#!/bin/sh
# Kernel test: streams, events, CUDA graphs, generated bf16 values (tests/gpu/test_gpu_stream.c).
# Skips (77) when this build has no CUDA; the program skips without a GPU.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
exec "$top_builddir/tests/gpu/test_gpu_stream"
