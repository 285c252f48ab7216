#!/bin/sh
# Runs the GPU probe when this build has CUDA; skips (77) otherwise. The probe
# itself skips when no GPU is visible.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
exec "$top_builddir/tests/gpu/gpu_probe"
