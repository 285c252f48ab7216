# Build cplab-kernel-bench from the bundle and profile the decode kernel's fixed costs with ncu.
set -u
bundle=$PWD/gpu-bundle; sys=$bundle/sysroot
for pc in "$sys"/usr/lib/*/pkgconfig/*.pc "$sys"/usr/lib/pkgconfig/*.pc; do [ -f "$pc" ] && sed -i "s|=/usr|=$sys/usr|g" "$pc"; done
export PKG_CONFIG_PATH="$(ls -d "$sys"/usr/lib/*/pkgconfig | tr '\n' ':')"
export LD_LIBRARY_PATH="$(ls -d "$sys"/usr/lib/*-linux-gnu | tr '\n' ':')${LD_LIBRARY_PATH:-}"
work=$(mktemp -d /tmp/cplab-prof.XXXXXX); tar xzf "$bundle"/cplab-*.tar.gz -C "$work"; cd "$work"/cplab-* || exit 2
./configure --with-cuda --with-nccl --with-cuda-arch=90 > $OUT/configure.log 2>&1 || { tail $OUT/configure.log; exit 2; }
make -j16 bench/cplab-kernel-bench > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 2; }
kb=bench/cplab-kernel-bench; [ -x bench/.libs/cplab-kernel-bench ] && kb=bench/.libs/cplab-kernel-bench
for c in topk-decode-b1-32k topk-decode-b1-128k topk-decode-b64-128k topk-decode-b128-32k topk-merge-dcp8-b1-128k; do
  k=topk_decode; case $c in topk-merge*) k=topk_merge;; esac
  timeout 200 ncu -k regex:topk -c 6 --section LaunchStats --section SpeedOfLight \
    --metrics gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max -o $OUT/$c $kb --kernel $k --case $c --reps 2 --warmup 0 --no-ceilings > $OUT/ncu-$c.log 2>&1
  ncu --import $OUT/$c.ncu-rep > $OUT/ncu-$c.txt 2>&1
  echo "== $c"; grep -E "^  [a-z_]*topk|gpu__time_duration|Grid Size|Block Size|Dynamic Shared|sm__cycles_active|Duration" $OUT/ncu-$c.txt | head -60
  rm -f $OUT/$c.ncu-rep
done
