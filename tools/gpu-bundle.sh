#!/bin/sh
# Usage: tools/gpu-bundle.sh [BUNDLE_DIR]     (default: gpu-bundle, git-ignored)
#
# Prepares what a GPU node needs to build and test cplab: the GPU nodes have
# nvcc, HDF5, Open MPI and NCCL, but no GSL, jansson or cmocka, no apt, no
# libtool and no internet (shared/TOOLCHAIN.md). This script, run here:
#   1. makes the release tarball (configure is pre-generated inside it, so the
#      node never runs autoreconf);
#   2. downloads the missing Debian 12 packages and unpacks them with dpkg -x
#      into BUNDLE_DIR/sysroot;
#   3. copies tools/gpu-node-check.sh, tools/gpu-kernel-prof.sh,
#      tools/gpu-kernel-versions.sh (versions of a kernel file timed in one
#      call) and tools/gpu-kernel-ncu.sh (one case's Nsight Compute pages)
#      beside them.
# Then carry BUNDLE_DIR to the node and run: sh BUNDLE_DIR/gpu-node-check.sh BUNDLE_DIR
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bundle=${1:-gpu-bundle}
case $bundle in /*) ;; *) bundle="$top/$bundle" ;; esac
packages="libgsl27 libgslcblas0 libgsl-dev libjansson4 libjansson-dev libcmocka0 libcmocka-dev libxxhash0 libxxhash-dev"

[ -f "$top/build/Makefile" ] || { echo "gpu-bundle: run ./setup.sh first (needs ./build)" >&2; exit 2; }
rm -rf "$bundle"
mkdir -p "$bundle/debs" "$bundle/sysroot"
make -C "$top/build" dist >/dev/null
cp "$top"/build/cplab-*.tar.gz "$bundle/"
(cd "$bundle/debs" && apt-get download $packages >/dev/null)
for deb in "$bundle"/debs/*.deb; do dpkg -x "$deb" "$bundle/sysroot"; done
rm -rf "$bundle/debs"
cp "$top/tools/gpu-node-check.sh" "$top/tools/gpu-kernel-prof.sh" "$top/tools/gpu-kernel-versions.sh" \
  "$top/tools/gpu-kernel-ncu.sh" "$bundle/"
du -sh "$bundle"
