#!/bin/sh
# cplab-kernel-bench's command line without a GPU: --help, --version, the
# case table (--list with --kernel / --case / --all), the case list for the
# peer (--list-json), every refusal with exit 2 and a message naming the
# problem, and the peer file's reader (--list --peer FILE) on a good file and
# on malformed ones; then bench/kernel_peer.py's and bench/run-gpu-kernels.sh's
# refusals. Uses the CUDA build of the program, else its build on the CPU
# emulation (tests/emu); skips (77) where neither is built.
. "$top_srcdir/tests/lib.sh"
KB="$top_builddir/bench/cplab-kernel-bench"
[ -x "$KB" ] || KB="$top_builddir/tests/emu/cplab-kernel-bench-emu"
if [ ! -x "$KB" ]; then echo "SKIP: cplab-kernel-bench is not built (no CUDA, no emulation build)"; exit 77; fi

expect_exit 0 "--help" "$KB" --help
expect_grep "$WORK/out" "\-\-peer FILE" "the help names --peer"
expect_grep "$WORK/out" "Exit status: 0 ok, 1 a check failed" "the help states the exit codes"
expect_exit 0 "--version" "$KB" --version
expect_grep "$WORK/out" "cplab-kernel-bench" "--version names the program"

# The table.
expect_exit 0 "--list" "$KB" --list
expect_grep "$WORK/out" "^>\* fm-prefill-h64 .* h64 b1 s_q 4096 s_kv 32768 k 2048 " "FlashMLA's prefill shape is a default case"
expect_grep "$WORK/out" "^>\* fm-decode-h128-b128 " "FlashMLA's decode shapes are default cases"
expect_grep "$WORK/out" "^>\* dcp8-h64-b1-32k .* dcp 8 " "a DCP rank's decode rows are a default case"
expect_grep "$WORK/out" "^   smoke-decode " "the smoke cases are listed but not run by default"
expect_grep "$WORK/out" "^# kernel sparse_mla_decode_fp8: " "--list names the kernels"
default=$(sed -n 's/^# \([0-9]*\) of the cases selected.*/\1/p' "$WORK/out")
all=$(grep -c '^[> ][* ] ' "$WORK/out")
expect_exit 0 "--list --all" "$KB" --list --all
expect_grep "$WORK/out" "^# $all of the cases selected" "--all selects all $all cases"
if [ "$default" -gt 0 ] && [ "$default" -lt "$all" ]; then pass "the default set is $default of $all cases"
else fail "the default set is '$default' of $all cases"; fi
expect_exit 0 "--list --kernel sparse_mla_decode_fp8" "$KB" --list --kernel sparse_mla_decode_fp8
if grep -q prefill-h64 "$WORK/out"; then fail "--kernel keeps the other kernel's cases"; else pass "--kernel lists one kernel"; fi
expect_exit 0 "--list --case with a pattern" "$KB" --list --case 'dcp4-*,fm-prefill-h128'
expect_grep "$WORK/out" "^# 9 of the cases selected" "'dcp4-*' and one name select 9 cases"
expect_grep "$WORK/out" "^>  dcp4-h128-b16-32k" "a pattern selects non-default cases"

# The case list for the peer.
expect_exit 0 "--list-json" "$KB" --case 'smoke-*' --list-json "$WORK/cases.json"
expect_grep "$WORK/cases.json" '"case": "smoke-decode"' "the case list holds the selected cases"
expect_grep "$WORK/cases.json" '"dcp": 2' "the case list holds the shape fields"
if grep -q '"fm-prefill-h64"' "$WORK/cases.json"; then fail "--list-json wrote unselected cases"
else pass "--list-json writes only the selected cases"; fi

# Refusals: exit 2, the problem named.
refuse() { # refuse DESCRIPTION PATTERN ARGS...
  what=$1 pattern=$2
  shift 2
  expect_exit 2 "$what" "$KB" "$@"
  expect_grep "$WORK/err" "$pattern" "$what: the message says so"
}
refuse "an unknown kernel" "\-\-kernel: unknown kernel 'attn' (kernels: sparse_mla_prefill, sparse_mla_decode_fp8)" \
  --kernel attn
refuse "an unknown case" "\-\-case: no case matches 'fm-prefill-h256'" --case fm-prefill-h256
refuse "a case of another kernel" "'fm-prefill-h64' matches no case of the kernels --kernel selects" \
  --case fm-prefill-h64 --kernel sparse_mla_decode_fp8
refuse "an empty --case item" "\-\-case: empty item in 'smoke-decode,,x'" --case smoke-decode,,x
refuse "--reps 0" "\-\-reps: expected an integer in \[1, 100000\], got '0'" --reps 0
refuse "--reps not a number" "\-\-reps: expected an integer in \[1, 100000\], got '3x'" --reps 3x
refuse "--warmup negative" "\-\-warmup: expected an integer in \[0, 10000\], got '-1'" --warmup -1
refuse "--check-rows 65" "\-\-check-rows: expected an integer in \[1, 64\], got '65'" --check-rows 65
refuse "--max-sets 1" "\-\-max-sets: expected an integer in \[2, 256\], got '1'" --max-sets 1
refuse "--mem-gib 0" "\-\-mem-gib: expected an integer" --mem-gib 0
refuse "--copy-mib 0" "\-\-copy-mib: expected an integer" --copy-mib 0
refuse "--seed not a number" "\-\-seed: expected a non-negative integer, got 'x'" --seed x
refuse "--gemm not a multiple of 16" "\-\-gemm: 100 is not a multiple of 16" --gemm 100x128x128
refuse "--gemm with two numbers" "\-\-gemm: expected MxNxK, got '64x64'" --gemm 64x64
refuse "--gemm with two shapes" "\-\-gemm: more than 1 shape" --gemm 64x64x64,32x32x32
refuse "an unknown option" "unknown option '\-\-nope'" --nope
refuse "--case without its argument" "option '\-\-case' needs an argument" --case
refuse "an unexpected argument" "unexpected argument 'extra'" --list extra
refuse "--list-json into a missing folder" "$WORK/no/such" --list-json "$WORK/no/such/cases.json"

# The peer file.
shape='{"heads": 16, "s_q": 1, "s_kv": 2048, "topk": 1024, "batch": 3, "dcp": 2, "causal": false, "scale": 0.0625}'
cat >"$WORK/good.json" <<EOF
{"peer": "pytorch", "version": "2.11.0", "device": "NVIDIA H200", "date": "2026-12-01T00:00:00Z",
 "command": "kernel_peer.py", "reps": 30, "warmup": 5,
 "entries": [
  {"kernel": "sparse_mla_decode_fp8", "case": "smoke-decode", "name": "torch gather", "median_us": 123.5,
   "p10_us": 120, "p90_us": 130, "sets": 4, "shape": $shape, "check": {"max_rel_l2": 0.003, "max_lse_abs": 1e-4}},
  {"kernel": "sparse_mla_prefill", "case": "smoke-prefill", "name": "torch gather", "error": "CUDA out of memory"}]}
EOF
expect_exit 0 "a good peer file" "$KB" --list --case 'smoke-*' --peer "$WORK/good.json"
expect_grep "$WORK/out" "^>  smoke-decode .* 123.5 " "the peer's median sits beside its case"
expect_grep "$WORK/out" "^>  smoke-prefill .* error " "a case the peer could not run says so"
expect_grep "$WORK/out" "^ \* fm-prefill-h64 .* - " "cases without a peer entry show -" # --case selects, --list shows all
bad() { # bad DESCRIPTION PATTERN JSON
  printf '%s\n' "$3" >"$WORK/bad.json"
  refuse "peer file: $1" "$2" --list --peer "$WORK/bad.json"
}
entry='"kernel": "sparse_mla_decode_fp8", "case": "smoke-decode", "name": "t"'
bad "not JSON" "bad.json:1:.*: JSON syntax" '{"peer": "pytorch", "entries": [}'
bad "a duplicate key" "JSON syntax: duplicate object key" '{"peer": "pytorch", "peer": "x", "entries": []}'
bad "not an object" "bad.json:1:1: (top level): expected an object" '[1, 2]'
bad "no entries" "(top level): missing required key 'entries'" '{"peer": "pytorch"}'
bad "no peer name" "missing required key 'peer'" '{"entries": []}'
bad "an unknown top-level key" "bad.json:1:.*: entrys: unknown key 'entrys'" '{"peer": "p", "entrys": []}'
bad "entries not an array" "entries: expected an array" '{"peer": "p", "entries": {}}'
bad "an unknown kernel" "entries\[0\].kernel: unknown kernel 'attn'" \
  '{"peer": "p", "entries": [{"kernel": "attn", "case": "x", "name": "t", "median_us": 1}]}'
bad "an unknown case" "entries\[0\].case: kernel sparse_mla_prefill has no case 'fm-decode-h64-b1'" \
  '{"peer": "p", "entries": [{"kernel": "sparse_mla_prefill", "case": "fm-decode-h64-b1", "name": "t", "median_us": 1}]}'
bad "neither a time nor an error" "entries\[0\]: needs either median_us .* found neither" \
  "{\"peer\": \"p\", \"entries\": [{$entry}]}"
bad "both a time and an error" "not both" "{\"peer\": \"p\", \"entries\": [{$entry, \"median_us\": 3, \"error\": \"x\"}]}"
bad "a negative time" "entries\[0\].median_us: must be in \[0.001, 1e+12\], got -5" \
  "{\"peer\": \"p\", \"entries\": [{$entry, \"median_us\": -5}]}"
bad "a time as text" "entries\[0\].median_us: expected a number, got a string" \
  "{\"peer\": \"p\", \"entries\": [{$entry, \"median_us\": \"5\"}]}"
bad "quantiles out of order" "p10_us 9, median_us 5 and p90_us 6 are not in order" \
  "{\"peer\": \"p\", \"entries\": [{$entry, \"median_us\": 5, \"p10_us\": 9, \"p90_us\": 6}]}"
bad "another table's shape" "entries\[0\].shape: differs from case smoke-decode's shape" \
  "{\"peer\": \"p\", \"entries\": [{$entry, \"median_us\": 5, \"shape\": {\"heads\": 8}}]}"
bad "a misspelt entry key" "entries\[0\].median: unknown key 'median'" \
  "{\"peer\": \"p\", \"entries\": [{$entry, \"median\": 5}]}"
bad "a check without its fields" "entries\[0\].check: missing required key 'max_lse_abs'" \
  "{\"peer\": \"p\", \"entries\": [{$entry, \"median_us\": 5, \"check\": {\"max_rel_l2\": 0}}]}"
bad "a case twice" "entries\[1\].case: case 'smoke-decode' appears twice (also entries\[0\])" \
  "{\"peer\": \"p\", \"entries\": [{$entry, \"median_us\": 5}, {$entry, \"median_us\": 6}]}"
refuse "a missing peer file" "peer file: cannot open '$WORK/none.json': No such file" --list --peer "$WORK/none.json"
refuse "a folder as peer file" "peer file: '$WORK' is not a regular file" --list --peer "$WORK"

# Without a GPU, the real program says it needs one (after reading its options).
if [ "$KB" = "$top_builddir/bench/cplab-kernel-bench" ] && ! "$top_builddir/tests/gpu/gpu_probe" >/dev/null 2>&1; then
  refuse "no GPU" "this benchmark needs a GPU" --case smoke-decode
  printf '{"peer": \n' >"$WORK/bad.json"
  refuse "a malformed peer file before the GPU" "bad.json:.*JSON syntax" --case smoke-decode --peer "$WORK/bad.json"
fi

# The peer script: its refusals come before torch is imported; without torch it says so (exit 3).
PY=${PYTHON:-python3}
if command -v "$PY" >/dev/null 2>&1; then
  expect_exit 2 "kernel_peer.py without its case file" "$PY" "$top_srcdir/bench/kernel_peer.py" \
    --cases "$WORK/none.json" -o "$WORK/p.json"
  expect_grep "$WORK/err" "cannot read the case file '$WORK/none.json'" "kernel_peer.py names the missing file"
  printf '{"cases": 3}\n' >"$WORK/nocases.json"
  expect_exit 2 "kernel_peer.py on a file without cases" "$PY" "$top_srcdir/bench/kernel_peer.py" \
    --cases "$WORK/nocases.json" -o "$WORK/p.json"
  expect_grep "$WORK/err" "no 'cases' list" "kernel_peer.py says what the file lacks"
  if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
    expect_exit 3 "kernel_peer.py without torch" "$PY" "$top_srcdir/bench/kernel_peer.py" --cases "$WORK/cases.json" \
      -o "$WORK/p.json"
    expect_grep "$WORK/err" "PyTorch is not importable" "kernel_peer.py says torch is missing"
  fi
fi

# The node script refuses what it cannot run.
expect_exit 2 "run-gpu-kernels.sh without the program" sh "$top_srcdir/bench/run-gpu-kernels.sh" "$WORK/nobuild" "$WORK/o"
expect_grep "$WORK/err" "cplab-kernel-bench is missing" "the missing program is named"
finish
