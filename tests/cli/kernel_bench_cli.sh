#!/bin/sh
# cplab-kernel-bench's command line without a GPU: --help, --version, the
# case table (--list with --kernel / --case / --all), the case list for the
# peer (--list-json), every refusal with exit 2 and a message naming the
# problem, and the peer file's reader (--list --peer FILE) on a good file and
# on malformed ones; the ranked kernels (gather_nccl, moe_paths: their case
# tables where the build has MPI and NCCL, the usage errors of the job, one
# under mpirun with two ranks; their refusal by name where it has not); then
# bench/kernel_peer.py's and the node scripts' refusals. Uses the CUDA build
# of the program, else its build on the CPU emulation (tests/emu); skips (77)
# where neither is built.
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

# The indexer path's kernels: listed with their default shapes and their smoke cases.
expect_exit 0 "--list (the indexer path)" "$KB" --list
for k in indexer_logits_prefill indexer_logits_decode topk_prefill topk_decode topk_decode_convert topk_merge topk_merge_convert \
  convert \
  gather_upconvert restore; do
  expect_grep "$WORK/out" "^# kernel $k: " "--list names kernel $k"
done
expect_grep "$WORK/out" "^>\* logits-h32-2k-32k .* h32 queries 2048 keys 32768 " "the issue's logits shape at 32 heads is a default case"
expect_grep "$WORK/out" "^>\* logits-h64-2k-32k .* h64 queries 2048 keys 32768 " "the issue's logits shape at 64 heads is a default case"
expect_grep "$WORK/out" "^>\* logits-h32-4k-causal-32k .* queries 4096 keys 32768 causal " "a causal logits chunk is a default case"
expect_grep "$WORK/out" "^>\* dlogits-h64-b16-32k .* h64 b16 context 32768 " "decode logits of 16 rows of 32k is a default case"
expect_grep "$WORK/out" "^>\* dlogits-h64-b16-128k-dcp4 .* context 131072 dcp 4 " "a DCP rank's decode logits is a default case"
expect_grep "$WORK/out" "^>\* topk-8k-32k .* queries 8192 keys 32768 k 2048 " "top-k of 8192 x 32768 is a default case"
expect_grep "$WORK/out" "^>\* topk-decode-b64-128k .* b64 context 131072 k 2048 " "decode top-k of 64 x 128k is a default case"
expect_grep "$WORK/out" "^>\* topk-merge-dcp8-b64-128k .* dcp 8 " "the merge of 8 owners is a default case"
expect_grep "$WORK/out" "^>\* topk-decode-convert-b16-32k  *b16 context 32768 k 2048 + the slots" \
  "the decode top-k with its conversion at topk_decode's shape is a default case"
expect_grep "$WORK/out" "^>\* topk-merge-convert-dcp4-b64-128k .* dcp 4 interleave 1 + rank 0's slots" \
  "the merge with its conversion at convert's decode shape is a default case"
expect_grep "$WORK/out" "^>\* convert-decode-b64-dcp4 .* decode rows 64 k 2048 " "a decode conversion is a default case"
expect_grep "$WORK/out" "^>\* gather-32k .* keys 32768 " "a gather of 32k rows is a default case"
expect_grep "$WORK/out" "^>\* restore-32k-pcp4 .* tokens 32768 pcp 4 " "a restore is a default case"
for c in smoke-logits smoke-dlogits smoke-dindexer smoke-topk smoke-topk-decode smoke-topk-decode-convert smoke-topk-merge \
  smoke-topk-merge-convert smoke-convert-prefill \
  smoke-convert-decode smoke-gather smoke-restore; do
  expect_grep "$WORK/out" "^   $c " "the smoke case $c is listed but not run by default"
done
expect_exit 0 "--list --kernel topk_merge" "$KB" --list --kernel topk_merge
expect_grep "$WORK/out" "^# 6 of the cases selected" "--kernel topk_merge selects its 6 default cases"
if grep -q "^# kernel topk_prefill" "$WORK/out"; then fail "--kernel topk_merge lists topk_prefill"
else pass "--kernel topk_merge lists only that kernel"; fi
expect_exit 0 "--list --kernel with two names" "$KB" --list --kernel convert,restore --all
expect_grep "$WORK/out" "^# 10 of the cases selected" "--kernel convert,restore --all selects their 10 cases"
# The ceilings (bench/kernel_ceilings.c): a family --kernel takes, none of its cases in the default set.
expect_exit 0 "--list --kernel ceilings --case 'ceil-*'" "$KB" --list --kernel ceilings --case 'ceil-*'
expect_grep "$WORK/out" "^# 6 of the cases selected" "the ceilings family's six measuring cases (copy 2 GiB and 1 GiB, two GEMM shapes a dtype)"
expect_grep "$WORK/out" "^>  ceil-bf16-8192 *M 8192 N 8192 K 8192 " "a GEMM ceiling case and its shape"
expect_grep "$WORK/out" "^   smoke-ceil-fp8 " "the ceilings' smoke cases are listed, not selected"
if "$KB" --list | grep -q "^> .*ceil-"; then fail "a ceilings case is in the default set"
else pass "no ceilings case in the default set"; fi
expect_exit 2 "--kernel ceilings alone (no default case)" "$KB" --list --kernel ceilings
expect_grep "$WORK/err" "no case selected" "the refusal says no case was selected"
expect_exit 0 "--list --case over kernels" "$KB" --list --case 'smoke-topk*,logits-h64-*'
expect_grep "$WORK/out" "^# 8 of the cases selected" "'smoke-topk*' and 'logits-h64-*' select 8 cases of 6 kernels"
expect_exit 0 "--list --case with a pattern" "$KB" --list --case 'dcp4-*,fm-prefill-h128'
expect_grep "$WORK/out" "^# 9 of the cases selected" "'dcp4-*' and one name select 9 cases"
expect_grep "$WORK/out" "^>  dcp4-h128-b16-32k" "a pattern selects non-default cases"

# The case list for the peer.
expect_exit 0 "--list-json" "$KB" --case 'smoke-*' --list-json "$WORK/cases.json"
expect_grep "$WORK/cases.json" '"case": "smoke-decode"' "the case list holds the selected cases"
expect_grep "$WORK/cases.json" '"dcp": 2' "the case list holds the shape fields"
if grep -q '"fm-prefill-h64"' "$WORK/cases.json"; then fail "--list-json wrote unselected cases"
else pass "--list-json writes only the selected cases"; fi
# Each kernel's shape fields: exactly those that apply, integers (convert's "path" a string).
PY=${PYTHON:-python3}
if command -v "$PY" >/dev/null 2>&1; then
  if "$PY" - "$WORK/cases.json" <<'SHAPES'; then pass "--list-json: each kernel's shape fields, integers"; else fail "--list-json: shape fields"; fi
import json, sys
want = {
    "indexer_logits_prefill": {"heads", "queries", "keys", "causal"},
    "indexer_logits_decode": {"heads", "batch", "context", "dcp"},
    "topk_prefill": {"queries", "keys", "k", "causal"},
    "topk_decode": {"batch", "context", "k"},
    "topk_merge": {"batch", "dcp", "context", "k", "interleave"},
    "convert": {"path", "rows", "k", "context", "dcp", "interleave"},
    "gather_upconvert": {"keys"},
    "restore": {"tokens", "pcp", "row_elems"},
    "ceiling_copy": {"bytes_per_copy"},
    "ceiling_gemm_bf16": {"m", "n", "k"},
    "ceiling_gemm_fp8": {"m", "n", "k"},
}
cases = {c["case"]: c for c in json.load(open(sys.argv[1]))["cases"]}
seen = set()
for name, c in cases.items():
    k, shape = c["kernel"], c["shape"]
    if k not in want:
        continue
    seen.add(k)
    keys = set(shape)
    if name == "smoke-convert-decode":
        assert keys == want[k] | {"block_size"}, (name, keys)
        assert shape["path"] == "decode"
    else:
        assert keys == want[k], (name, keys)
    for f, v in shape.items():
        assert isinstance(v, str) if f == "path" else (isinstance(v, int) and not isinstance(v, bool)), (name, f, v)
assert cases["smoke-convert-prefill"]["shape"]["path"] == "prefill"
assert seen == set(want), seen
SHAPES
fi

# Refusals: exit 2, the problem named.
refuse() { # refuse DESCRIPTION PATTERN ARGS...
  what=$1 pattern=$2
  shift 2
  expect_exit 2 "$what" "$KB" "$@"
  expect_grep "$WORK/err" "$pattern" "$what: the message says so"
}
# The ranked kernels are built with MPI and NCCL only.
if "$KB" --list --kernel gather_nccl >/dev/null 2>&1; then RANKED=yes; ranked_names=", gather_nccl, moe_paths"
else RANKED=no; ranked_names=; fi
refuse "an unknown kernel" "\-\-kernel: unknown kernel 'attn' (kernels: sparse_mla_prefill, sparse_mla_decode_fp8, \
indexer_logits_prefill, indexer_logits_decode, indexer_topk_decode, topk_prefill, topk_decode, topk_decode_convert, topk_merge, \
topk_merge_convert, convert, \
gather_upconvert, gather_idx, restore, lse_combine, ceiling_copy, ceiling_gemm_bf16, ceiling_gemm_fp8$ranked_names; families: ceilings)" \
  --kernel attn
refuse "a case of another kernel (indexer path)" "'smoke-topk' matches no case of the kernels --kernel selects" \
  --case smoke-topk --kernel topk_decode
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
refuse "--settle-ms negative" "\-\-settle-ms: expected an integer in \[0, 60000\], got '-1'" --settle-ms -1
refuse "--settle-ms over a minute" "\-\-settle-ms: expected an integer in \[0, 60000\], got '60001'" --settle-ms 60001
refuse "--lead-us negative" "\-\-lead-us: expected an integer in \[0, 10000\], got '-1'" --lead-us -1
refuse "--lead-us over 10 ms a run" "\-\-lead-us: expected an integer in \[0, 10000\], got '10001'" --lead-us 10001
refuse "--seed not a number" "\-\-seed: expected a non-negative integer, got 'x'" --seed x
refuse "--gemm not a multiple of 16" "\-\-gemm: 100 is not a multiple of 16" --gemm 100x128x128
refuse "--gemm with two numbers" "\-\-gemm: expected MxNxK, got '64x64'" --gemm 64x64
refuse "--gemm with two shapes" "\-\-gemm: more than 1 shape" --gemm 64x64x64,32x32x32
refuse "an unknown option" "unknown option '\-\-nope'" --nope
refuse "--case without its argument" "option '\-\-case' needs an argument" --case
refuse "an unexpected argument" "unexpected argument 'extra'" --list extra
refuse "--list-json into a missing folder" "$WORK/no/such" --list-json "$WORK/no/such/cases.json"

# The ranked kernels (bench/kb_job.c; bench/kernel_gather_nccl.c, bench/kernel_moe_paths.c): what the MPI
# programs cplab-gather-bench and cplab-moe-bench were, now case tables of the driver.
if "$KB" --list | grep -q "gather_nccl\|moe_paths"; then fail "--list without --kernel offers a ranked kernel"
else pass "--list without --kernel offers no ranked kernel (one GPU, no mpirun)"; fi
if [ "$RANKED" = yes ]; then
  expect_exit 0 "--list --kernel gather_nccl" "$KB" --list --kernel gather_nccl
  expect_grep "$WORK/out" "^# kernel gather_nccl: .*(ranked)" "the gather's kernel is listed, ranked"
  expect_grep "$WORK/out" "^>\* dcp-ag-128k .* rows 131072 (150994944 B a rank)" "cplab-gather-bench's largest size is a default case"
  expect_grep "$WORK/out" "^# 5 of the cases selected" "cplab-gather-bench's five default sizes"
  expect_grep "$WORK/out" "^   smoke-dcp-ag " "the gather's smoke case is listed, not selected"
  expect_exit 0 "--list --kernel moe_paths" "$KB" --list --kernel moe_paths
  expect_grep "$WORK/out" "^# 10 of the cases selected" "both presets at batches 1, 4, 16, 64 and 256"
  expect_grep "$WORK/out" "^>\* moe-deepseek-v3.2-b64 *deepseek-v3.2 d7168 E256 k8 I2048 s1, 64 rows" "a preset's sizes and rows"
  expect_exit 0 "--list --kernel moe_paths --case 'smoke-moe-*'" "$KB" --list --kernel moe_paths --case 'smoke-moe-*'
  expect_grep "$WORK/out" "^# 3 of the cases selected" "the small block's three batches"
  expect_exit 0 "--help" "$KB" --help
  expect_grep "$WORK/out" "mpirun -np N" "the help says how the ranked kernels run"
  refuse "a ranked case without --kernel" "\-\-case: 'dcp-ag-512' is a case of the ranked kernel 'gather_nccl': name it" \
    --case dcp-ag-512
  refuse "a case of moe_paths under gather_nccl" "'moe-glm-5-b1' matches no case of the kernels --kernel selects" \
    --kernel gather_nccl --case moe-glm-5-b1
  refuse "a usage error before MPI's job starts anything" "\-\-reps: expected an integer" --kernel moe_paths --reps 0
  if ! "$top_builddir/tests/gpu/gpu_probe" >/dev/null 2>&1; then
    refuse "a ranked kernel without a GPU" "needs a GPU (one per MPI rank)" --kernel gather_nccl --reps 1
  fi
  # Two ranks: a single-GPU kernel is refused by name, on rank 0 alone, before any GPU is bound.
  if [ -n "${MPIRUN:-}" ]; then
    expect_exit 2 "mpirun -np 2 with a single-GPU kernel" timeout 120 "$MPIRUN" -np 2 "$KB" --kernel sparse_mla_prefill
    expect_grep "$WORK/err" "kernel 'sparse_mla_prefill' (case fm-prefill-h64) is not ranked: under mpirun with 2 ranks" \
      "the refusal names the kernel and the rank count"
    n=$(grep -c "is not ranked" "$WORK/err")
    if [ "$n" -eq 1 ]; then pass "rank 0 alone says so"; else fail "the refusal said $n times"; fi
    expect_exit 2 "mpirun -np 2 with a single-GPU case" timeout 120 "$MPIRUN" -np 2 "$KB" --case smoke-decode
    expect_grep "$WORK/err" "'smoke-decode' is a case of kernel 'sparse_mla_decode_fp8', which is not ranked" \
      "a --case of a single-GPU kernel is refused by name"
    expect_exit 0 "mpirun -np 2 --list" timeout 120 "$MPIRUN" -np 2 "$KB" --list
    expect_grep "$WORK/out" "^# 15 of the cases selected" "under two ranks the default set is the ranked kernels' (5 + 10)"
    if grep -q "^# kernel sparse_mla_prefill" "$WORK/out"; then fail "two ranks list a single-GPU kernel"
    else pass "two ranks list only the ranked kernels"; fi
    if ! "$top_builddir/tests/gpu/gpu_probe" >/dev/null 2>&1; then # the binding is collective: no rank is left waiting
      expect_exit 2 "mpirun -np 2 without a GPU" timeout 120 "$MPIRUN" -np 2 "$KB" --kernel gather_nccl --reps 1
      for r in 0 1; do
        expect_grep "$WORK/err" "cplab-kernel-bench (rank $r of 2): error: this benchmark needs a GPU" "rank $r says it has no GPU"
      done
    fi
  else
    echo "# no mpirun: the two-rank refusals are not run"
  fi
else
  refuse "a ranked kernel in a build without NCCL" \
    "\-\-kernel: 'gather_nccl' is a ranked kernel (NCCL collectives over MPI ranks): this build has no NCCL and no MPI" \
    --kernel gather_nccl
  refuse "the other ranked kernel" "'moe_paths' is a ranked kernel" --kernel moe_paths --case 'moe-*'
fi

# The peer file.
shape='{"heads": 16, "s_q": 1, "s_kv": 2048, "topk": 1024, "batch": 3, "dcp": 2, "causal": false, "scale": 0.0625}'
cat >"$WORK/good.json" <<EOF
{"peer": "pytorch", "version": "2.11.0", "device": "NVIDIA H200", "date": "2026-12-01T00:00:00Z",
 "command": "kernel_peer.py", "reps": 30, "warmup": 5,
 "entries": [
  {"kernel": "sparse_mla_decode_fp8", "case": "smoke-decode", "name": "torch gather", "median_us": 123.5,
   "p10_us": 120, "p90_us": 130, "sets": 4, "shape": $shape, "check": {"max_rel_l2": 0.003, "max_lse_abs": 1e-4}},
  {"kernel": "sparse_mla_prefill", "case": "smoke-prefill", "name": "torch gather", "error": "CUDA out of memory"},
  {"kernel": "topk_merge", "case": "smoke-topk-merge", "name": "torch.topk", "median_us": 77.5,
   "shape": {"batch": 2, "dcp": 2, "context": 1023, "k": 256, "interleave": 2}},
  {"kernel": "convert", "case": "smoke-convert-decode", "name": "torch integer ops", "median_us": 8.25,
   "shape": {"path": "decode", "rows": 3, "k": 256, "context": 4096, "dcp": 2, "interleave": 1, "block_size": 64}}]}
EOF
expect_exit 0 "a good peer file" "$KB" --list --case 'smoke-*' --peer "$WORK/good.json"
expect_grep "$WORK/out" "^>  smoke-decode .* 123.5 " "the peer's median sits beside its case"
expect_grep "$WORK/out" "^>  smoke-prefill .* error " "a case the peer could not run says so"
expect_grep "$WORK/out" "^>  smoke-topk-merge .* 77.5 " "an indexer-path kernel's peer sits beside its case"
expect_grep "$WORK/out" "^>  smoke-convert-decode .* 8.2" "convert's peer (a string field in its shape) is matched"
expect_grep "$WORK/out" "^>  smoke-topk .* - " "an indexer-path case without a peer entry shows -"
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
bad "another table's convert path" "entries\[0\].shape: differs from case smoke-convert-decode's shape" \
  '{"peer": "p", "entries": [{"kernel": "convert", "case": "smoke-convert-decode", "name": "t", "median_us": 5,
    "shape": {"path": "prefill", "rows": 3, "k": 256, "context": 4096, "dcp": 2, "interleave": 1, "block_size": 64}}]}'
bad "a case under another kernel" "entries\[0\].case: kernel topk_prefill has no case 'smoke-topk-decode'" \
  '{"peer": "p", "entries": [{"kernel": "topk_prefill", "case": "smoke-topk-decode", "name": "t", "median_us": 1}]}'

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

# The node scripts refuse what they cannot run.
expect_exit 2 "run-gpu-kernels.sh without the program" sh "$top_srcdir/bench/run-gpu-kernels.sh" "$WORK/nobuild" "$WORK/o"
expect_grep "$WORK/err" "cplab-kernel-bench is missing" "the missing program is named"
for s in run-gpu-moe.sh run-gpu-gather.sh; do
  expect_exit 2 "$s without arguments" sh "$top_srcdir/bench/$s"
  expect_grep "$WORK/err" "usage: .*BUILD_DIR OUT_DIR \[NP\]" "$s: the usage"
  expect_exit 2 "$s without the program" sh "$top_srcdir/bench/$s" "$WORK/none" "$WORK/o"
  expect_grep "$WORK/err" "cplab-kernel-bench is missing: .*--with-cuda --with-nccl" "$s: the missing program and its needs"
  if [ -x "$top_builddir/bench/cplab-kernel-bench" ]; then
    expect_exit 2 "$s with NP not a number" sh "$top_srcdir/bench/$s" "$top_builddir" "$WORK/o" two
    expect_grep "$WORK/err" "is not a positive number" "$s: a bad rank count is refused"
  fi
done
finish
