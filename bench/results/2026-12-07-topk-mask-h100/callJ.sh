#!/bin/sh
# Session 28, call J (the device time left after refused starts): the GPU indexer test on the tree (the
# compaction by mask), built alone from the bundle's tarball (no kernel bench). Run:
#   sh gpu-bundle/callJ.sh gpu-bundle      (results in $OUT)
set -u
T0=$(date +%s)
bundle=$(cd "${1:?bundle directory}" && pwd); sys=$bundle/sysroot
for pc in "$sys"/usr/lib/*/pkgconfig/*.pc "$sys"/usr/lib/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed -i "s|=/usr|=$sys/usr|g" "$pc"
done
PKG_CONFIG_PATH="$(ls -d "$sys"/usr/lib/*/pkgconfig | tr '\n' ':')"
LD_LIBRARY_PATH="$(ls -d "$sys"/usr/lib/*-linux-gnu | tr '\n' ':')${LD_LIBRARY_PATH:-}"
export PKG_CONFIG_PATH LD_LIBRARY_PATH
work=$(mktemp -d)
tar xzf "$bundle"/cplab-*.tar.gz -C "$work" && cd "$work"/cplab-* || exit 2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
./configure --with-cuda --with-nccl --with-cuda-arch=90 >"$OUT/configure.log" 2>&1 || { tail "$OUT/configure.log"; exit 2; }
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build tests rc $? at $(( $(date +%s) - T0 )) s"
timeout 150 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer.txt" 2>&1; echo "test_gpu_indexer rc $? at $(( $(date +%s) - T0 )) s"
tail -1 "$OUT/test_gpu_indexer.txt"; grep "^FAIL" "$OUT/test_gpu_indexer.txt" | cut -c1-200
