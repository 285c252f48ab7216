#!/bin/sh
# Usage (on a GPU node, from the directory holding BUNDLE_DIR):
#   sh BUNDLE_DIR/gpu-kernel-prof.sh BUNDLE_DIR SCRIPT
# Builds cplab-kernel-bench from a bundle of tools/gpu-bundle.sh (its tarball
# against its sysroot's libraries, sm_90 only), then runs SCRIPT (sh) in the
# build directory with KB set to the program and OUT to a scratch folder for
# its results: the profiling loops of the results folders
# (bench/results/*-ncu-h200/prof.sh, tools/gpu-kernel-versions.sh) are such
# scripts. At the end that folder, with the configure and build logs, becomes
# one file, prof.tar.gz, in $OUT (else BUNDLE_DIR/logs): the device tool
# brings back at most 8 files a call, and a loop over versions and rounds
# writes dozens. Exit status: SCRIPT's (2: the build failed).
# NVCC_EXTRA (e.g. -lineinfo, which ncu's source page needs to name CUDA
# lines): nvcc flags added to the configured ones, for this build and every
# make SCRIPT runs (appended to the Makefile).
set -u
bundle=$(cd "${1:?bundle directory}" && pwd); script=$(cd "$(dirname "${2:?script}")" && pwd)/$(basename "$2")
sys=$bundle/sysroot
final=${OUT:-$bundle/logs}; mkdir -p "$final"; final=$(cd "$final" && pwd)
OUT=$(mktemp -d); export OUT
trap 'tar czf "$final/prof.tar.gz" -C "$OUT" .' EXIT
# The unpacked .pc files say /usr; point them at the sysroot.
for pc in "$sys"/usr/lib/*/pkgconfig/*.pc "$sys"/usr/lib/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed -i "s|=/usr|=$sys/usr|g" "$pc"
done
PKG_CONFIG_PATH="$(ls -d "$sys"/usr/lib/*/pkgconfig | tr '\n' ':')"
LD_LIBRARY_PATH="$(ls -d "$sys"/usr/lib/*-linux-gnu | tr '\n' ':')${LD_LIBRARY_PATH:-}"
export PKG_CONFIG_PATH LD_LIBRARY_PATH
work=$(mktemp -d)
tar xzf "$bundle"/cplab-*.tar.gz -C "$work" && cd "$work"/cplab-* || exit 2
./configure --with-cuda --with-nccl --with-cuda-arch=90 >"$OUT/configure.log" 2>&1 || { tail "$OUT/configure.log"; exit 2; }
[ -n "${NVCC_EXTRA:-}" ] && printf 'NVCC_FLAGS += %s\n' "$NVCC_EXTRA" >>Makefile
make -j16 bench/cplab-kernel-bench >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 2; }
KB=bench/cplab-kernel-bench
[ -x bench/.libs/cplab-kernel-bench ] && KB=bench/.libs/cplab-kernel-bench
export KB
sh "$script"
