#!/bin/sh
# tools/gpu-kernel-versions.sh without a GPU: a stand-in `make` "builds" a
# program that prints the kernel file's text it was built from and logs its
# runs, so the checks see which version each run used, in what order, how
# many builds there were, and that the build's own file and directory are
# left as they were (also when a version's file is missing or a build fails).
. "${top_srcdir:?}/tests/lib.sh"
tool="$top_srcdir/tools/gpu-kernel-versions.sh"
bundle="$WORK/bundle" build="$WORK/build" out="$WORK/results"
mkdir -p "$bundle" "$build/kernels" "$build/bench" "$WORK/bin" "$out"
cp "$tool" "$bundle/"
echo "version A" >"$bundle/a.cu"
echo "version B" >"$bundle/b.cu"
echo "own version" >"$build/kernels/k.cu"
echo "own other" >"$build/kernels/other.cuh"
mkdir -p "$bundle/dirv"
echo "version D" >"$bundle/dirv/k.cu"
echo "other D" >"$bundle/dirv/other.cuh"
echo "extra D" >"$bundle/dirv/extra.cuh"
cat >"$WORK/bin/make" <<'EOF'
#!/bin/sh
# the stand-in build: fails where the kernel file says so
echo "make $*" >>"$WORK_LOG/make.log"
grep -q 'does not build' kernels/k.cu && { echo "k.cu: error" >&2; exit 2; }
text=$(cat kernels/k.cu kernels/other.cuh; [ -f kernels/extra.cuh ] && echo "with extra")
text=$(echo $text)
printf '#!/bin/sh\n# the stand-in program\nlabel=; while [ $# -gt 0 ]; do [ "$1" = --commit ] && label=$2; shift; done\necho "$label" >>"%s/runs.log"\necho "# header"\necho " case  %s"\n' \
  "$WORK_LOG" "$text" >bench/cplab-kernel-bench
chmod +x bench/cplab-kernel-bench
EOF
chmod +x "$WORK/bin/make"

no_kept() { # no program the tool kept (bench/kv-LABEL) is left
  for f in "$build"/bench/kv-*; do [ -e "$f" ] && return 1; done
  return 0
}

run_tool() { # VERSIONS [ROUNDS]: the tool in the build directory, its output in $WORK/tool.out
  (cd "$build" && PATH="$WORK/bin:$PATH" WORK_LOG="$WORK" KB=bench/cplab-kernel-bench OUT="$out" \
    KV_FILE=kernels/k.cu KV_VERSIONS="$1" KV_ARGS="--kernel topk_prefill" KV_ROUNDS="${2:-2}" \
    sh "$bundle/gpu-kernel-versions.sh") >"$WORK/tool.out" 2>&1
}

run_tool "own=. a=a.cu b=b.cu"; rc=$?
expect_exit 0 "three versions, two rounds: exit 0" test $rc -eq 0
expect_exit 0 "one build a version (3 makes)" test "$(wc -l <"$WORK/make.log")" -eq 3
expect_exit 0 "runs interleaved: own a b own a b" test "$(tr '\n' ' ' <"$WORK/runs.log")" = "own a b own a b "
expect_grep "$out/own-1.txt" "own version" "own, round 1: the build's own file"
expect_grep "$out/a-2.txt" "version A" "a, round 2: a.cu"
expect_grep "$out/b-1.txt" "version B" "b, round 1: b.cu"
expect_grep "$WORK/tool.out" "== b, round 2" "the output names each run"
expect_exit 0 "the own file put back" grep -qx "own version" "$build/kernels/k.cu"
expect_exit 0 "no kept program left" no_kept

rm -f "$WORK/make.log" "$WORK/runs.log"
run_tool "a=a.cu gone=missing.cu"; rc=$?
expect_exit 0 "a missing version file: exit 1" test $rc -eq 1
expect_exit 0 "  and nothing run" test ! -e "$WORK/runs.log"
expect_exit 0 "  and the own file put back" grep -qx "own version" "$build/kernels/k.cu"

echo "does not build" >"$bundle/bad.cu"
run_tool "a=a.cu bad=bad.cu"; rc=$?
expect_exit 0 "a version that does not build: exit 1" test $rc -eq 1
expect_grep "$WORK/tool.out" "k.cu: error" "  its build log's tail shown"
expect_exit 0 "  and the own file put back" grep -qx "own version" "$build/kernels/k.cu"
expect_exit 0 "  and no kept program left" no_kept

# a folder version: several files replaced (one added), all put back after its build
rm -f "$WORK/make.log" "$WORK/runs.log" "$out"/*
run_tool "d=dirv a=a.cu" 1; rc=$?
expect_exit 0 "a folder version and a file version: exit 0" test $rc -eq 0
expect_grep "$out/d-1.txt" "version D other D with extra" "d: built from all three of the folder's files"
expect_grep "$out/a-1.txt" "version A own other" "a (after d): k.cu replaced, d's other files gone again"
expect_exit 0 "  the own files put back" sh -c "grep -qx 'own version' '$build/kernels/k.cu' && grep -qx 'own other' '$build/kernels/other.cuh'"
expect_exit 0 "  the added file removed" test ! -e "$build/kernels/extra.cuh"
expect_exit 0 "  no kept program left" no_kept

run_tool "a=a.cu" 0; rc=$?
expect_exit 0 "KV_ROUNDS 0 refused: exit 1" test $rc -eq 1
expect_grep "$WORK/tool.out" "KV_ROUNDS must be a positive integer" "  with the reason"
finish
