#!/bin/sh
# tools/gpu-kernel-prof.sh without a GPU: a stand-in bundle (a release
# tarball whose configure and make only make a stand-in program) and a
# script that writes ten result files and exits 3. The tool must bring them
# back as one file, prof.tar.gz in $OUT (the device tool returns at most 8
# files a call), with the configure and build logs, and exit with the
# script's status; where the build fails, exit 2, the logs still packed.
# NVCC_EXTRA reaches the build's NVCC_FLAGS.
. "${top_srcdir:?}/tests/lib.sh"
tool="$top_srcdir/tools/gpu-kernel-prof.sh"
bundle="$WORK/bundle" src="$WORK/src/cplab-0.1.0" out="$WORK/results"
mkdir -p "$bundle/sysroot/usr/lib/x86_64-linux-gnu/pkgconfig" "$src/bench" "$out"
cp "$tool" "$bundle/"
printf '#!/bin/sh\necho configured\n' >"$src/configure"
chmod +x "$src/configure"
printf 'NVCC_FLAGS = -O3\nbench/cplab-kernel-bench:\n\tprintf "#!/bin/sh\\necho kb $(NVCC_FLAGS)\\n" >$@ && chmod +x $@\n' >"$src/Makefile"
tar czf "$bundle/cplab-0.1.0.tar.gz" -C "$WORK/src" cplab-0.1.0
script="$WORK/script.sh"
{
  echo 'for n in 1 2 3 4 5 6 7 8 9 10; do "$KB" >"$OUT/r$n.txt"; done'
  echo 'exit 3'
} >"$script"

(OUT="$out" sh "$bundle/gpu-kernel-prof.sh" "$bundle" "$script") >"$WORK/tool.out" 2>&1; rc=$?
expect_exit 0 "the script's status comes back (3)" test $rc -eq 3
expect_exit 0 "one file in OUT, prof.tar.gz" test "$(ls "$out")" = prof.tar.gz
tar tzf "$out/prof.tar.gz" | sed 's|^\./||' | sort >"$WORK/list"
expect_exit 0 "  holding the ten results and the two logs" test "$(grep -c . "$WORK/list")" -eq 12
expect_grep "$WORK/list" "^r10.txt$" "  r10.txt among them"
expect_grep "$WORK/list" "^build.log$" "  build.log among them"
tar xzOf "$out/prof.tar.gz" ./r1.txt >"$WORK/r1" 2>/dev/null
expect_grep "$WORK/r1" "^kb -O3$" "  the script ran the program it was given (KB)"

# NVCC_EXTRA: added to the configured nvcc flags
rm -f "$out/prof.tar.gz"
(OUT="$out" NVCC_EXTRA=-lineinfo sh "$bundle/gpu-kernel-prof.sh" "$bundle" "$script") >"$WORK/tool.out" 2>&1; rc=$?
expect_exit 0 "NVCC_EXTRA: the script's status comes back (3)" test $rc -eq 3
tar xzOf "$out/prof.tar.gz" ./r1.txt >"$WORK/r1" 2>/dev/null
expect_grep "$WORK/r1" "^kb -O3 -lineinfo$" "  the program built with the configured flags and -lineinfo"

# a build that fails: exit 2, the logs still come back
printf 'bench/cplab-kernel-bench:\n\techo "kb.c: error" >&2; exit 1\n' >"$src/Makefile"
tar czf "$bundle/cplab-0.1.0.tar.gz" -C "$WORK/src" cplab-0.1.0
rm -f "$out/prof.tar.gz"
(OUT="$out" sh "$bundle/gpu-kernel-prof.sh" "$bundle" "$script") >"$WORK/tool.out" 2>&1; rc=$?
expect_exit 0 "a failed build: exit 2" test $rc -eq 2
tar xzOf "$out/prof.tar.gz" ./build.log >"$WORK/blog" 2>/dev/null
expect_grep "$WORK/blog" "kb.c: error" "  its build.log comes back"
finish
