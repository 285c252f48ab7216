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
c=topk-4k-32k
timeout 300 ncu -k regex:topk -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SourceCounters --section InstructionStats --section MemoryWorkloadAnalysis \
  -o $OUT/$c $kb --kernel topk_prefill --case $c --reps 1 --warmup 0 --no-ceilings > $OUT/ncu-$c.log 2>&1
ncu --import $OUT/$c.ncu-rep > $OUT/ncu-$c.txt 2>&1
ncu --import $OUT/$c.ncu-rep --page source --print-source sass --csv --launch-count 1 > $OUT/sass-$c.csv 2>&1
gzip -9 $OUT/sass-$c.csv
rm -f $OUT/$c.ncu-rep
grep -E "Duration|SM Active Cycles|Warp Cycles Per Issued|No Eligible|Issued Warp|Executed Ipc|Achieved Occupancy|Registers|Stall" $OUT/ncu-$c.txt | head -40
