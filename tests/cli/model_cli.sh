#!/bin/sh
# cplab-model's command line: the help, a prediction naming the tables, parameters and link it used
# (text and --json), the refusals (a missing table or parameters, a shape outside the tables
# without --extrapolate, a bad table or link file: exit 2 naming the file and field), and what the
# link presets and the backend change; --parallel, and --layouts, its deprecated name, with its note.
. "$top_srcdir/tests/lib.sh"
MODEL="$top_builddir/model/cplab-model"
R="$top_srcdir/bench/results"
V="$R/2026-12-01-model-validation/validation.json"
set -- --table "$R/2026-12-01-kernels-h200/kernels.json" --table "$R/2026-12-01-indexer-kernels-h200/kernels.json" \
  --table "$R/2026-12-01-topk-bins-h200/kernels.json" --table "$R/2026-12-01-decode-splits-h200/kernels.json" \
  --table "$R/2026-12-02-dcp-pieces-h200/kernels.json" \
  --params "$V"

expect_exit 0 "--help" "$MODEL" --help
expect_grep "$WORK/out" "^       cplab-model --validate MANIFEST" "usage names the validation"
expect_grep "$WORK/out" "--extrapolate" "usage names --extrapolate"
expect_grep "$WORK/out" "--parallel LIST" "usage names --parallel"
expect_exit 0 "--version" "$MODEL" --version

# The change's 4-GPU table, 78 GLM-5 layers.
expect_exit 0 "predict the 4-GPU table" "$MODEL" "$@" --extrapolate --graphs eager,piecewise,full --out-tokens 4
for l in tp4 pcp4 tp4dcp4 pcp4dcp4; do
  expect_grep "$WORK/out" "^  $l  *prefill 32768 in / 1 out  *eager  *TTFT" "$l TTFT predicted"
  expect_grep "$WORK/out" "^  $l  *decode 1 in / 4 out @ 32768, batch 1  *full  *TPOT" "$l TPOT under full graphs"
done
expect_grep "$WORK/out" "^# tables: .*2026-12-01-decode-splits-h200/kernels.json" "the tables used are named"
expect_grep "$WORK/out" "^# params: .*validation.json" "the parameters used are named"
expect_grep "$WORK/out" "78 layers, card h200, head pad 64, nccl backend, link preset h200" \
  "layers, card, head padding, backend and link named"
# pcp4's TTFT is below tp4's (the change's direction), from the model's own numbers.
tp=$(awk '$1 == "tp4" && $2 == "prefill" && $(NF - 7) == "eager" {print $(NF - 5)}' "$WORK/out")
pcp=$(awk '$1 == "pcp4" && $2 == "prefill" && $(NF - 7) == "eager" {print $(NF - 5)}' "$WORK/out")
if awk -v a="$pcp" -v b="$tp" 'BEGIN { exit !(a > 0 && a < b) }'; then pass "pcp4 TTFT $pcp < tp4 $tp"; else
  fail "pcp4 TTFT '$pcp', tp4 '$tp'"; fi

expect_exit 0 "--json" "$MODEL" "$@" --extrapolate --parallel pcp4 --prefill 8192 --json
if [ -s "$WORK/err" ]; then fail "--parallel wrote to stderr: $(cat "$WORK/err")"; else pass "--parallel is quiet"; fi
expect_grep "$WORK/out" '"cplab_model": "1.0.0"' "the JSON names its format"
expect_grep "$WORK/out" '"metric": "TTFT"' "the JSON has the prediction"
expect_grep "$WORK/out" '"extrapolated": ' "the JSON counts extrapolated lookups"
expect_grep "$WORK/out" 'kernels-h200/kernels.json' "the JSON names the tables"
expect_grep "$WORK/out" '"head_pad": 64' "the JSON names the head padding"
# Same input, same bytes.
cp "$WORK/out" "$WORK/a.json"
"$MODEL" "$@" --extrapolate --parallel pcp4 --prefill 8192 --json >"$WORK/b.json"
if cmp -s "$WORK/a.json" "$WORK/b.json"; then pass "deterministic output"; else fail "two runs differ"; fi

# --layouts, the parallel sizes' deprecated name, still works and says so once on stderr.
expect_exit 0 "--layouts (deprecated) still works" "$MODEL" "$@" --extrapolate --layouts pcp4 --prefill 8192 --json
n=$(grep -c "note: --layouts is deprecated: it is --parallel now" "$WORK/err")
if [ "$n" -eq 1 ]; then pass "--layouts prints one deprecation line"; else fail "--layouts: $n deprecation lines"; fi
if cmp -s "$WORK/out" "$WORK/a.json"; then pass "--layouts and --parallel give the same prediction"
else fail "--layouts and --parallel differ"; fi

# GB200's faster NVLink: a TP decode step is not slower; the single-device backend runs too.
"$MODEL" "$@" --extrapolate --parallel tp4 --decode 32768 --out-tokens 2 --graphs eager --layers 1 >"$WORK/h"
"$MODEL" "$@" --extrapolate --parallel tp4 --decode 32768 --out-tokens 2 --graphs eager --layers 1 --link gb200 >"$WORK/g"
h=$(awk '$1 == "tp4" {print $(NF - 5)}' "$WORK/h"); g=$(awk '$1 == "tp4" {print $(NF - 5)}' "$WORK/g")
if awk -v a="$g" -v b="$h" 'BEGIN { exit !(a > 0 && a < b) }'; then pass "gb200 link $g ms < h200 $h ms"; else
  fail "gb200 '$g', h200 '$h'"; fi
# Memory: GLM-5's fp8 weights over 4 ranks do not fit an H200 (no context fits), at fp4 over 8 they do.
"$MODEL" "$@" --extrapolate --parallel tp4 --decode 32768 --out-tokens 2 --graphs eager >"$WORK/m4"
"$MODEL" "$@" --extrapolate --parallel pcp8dcp8 --decode 32768 --out-tokens 2 --graphs eager --weight-bytes 0.5 >"$WORK/m8"
c4=$(awk '$1 == "tp4" {print $(NF - 1)}' "$WORK/m4"); c8=$(awk '$1 == "pcp8dcp8" {print $(NF - 1)}' "$WORK/m8")
if [ "$c4" = 0 ] && awk -v a="$c8" 'BEGIN { exit !(a > 1000000) }'; then pass "tp4 fits no context, pcp8dcp8 at fp4 $c8 tokens"; else
  fail "longest contexts: tp4 '$c4', pcp8dcp8 '$c8'"; fi
# Head padding: auto is the card's (64 on h200, 128 on gb200); tp4's 16 heads a rank padded to 64
# cost what the table says 64 heads cost, so its TTFT moves with the option and pcp4's 64 do not.
for pad in none 64 128; do
  "$MODEL" "$@" --extrapolate --parallel tp4,pcp4 --prefill 8192 --graphs eager --head-pad $pad >"$WORK/pad-$pad"
done
expect_grep "$WORK/pad-none" "card h200, head pad none," "--head-pad none is reported"
expect_grep "$WORK/pad-128" "card h200, head pad 128," "--head-pad 128 is reported"
expect_exit 0 "gb200's default padding" "$MODEL" "$@" --extrapolate --parallel pcp4 --prefill 8192 --card gb200
expect_grep "$WORK/out" "card gb200, head pad 128," "auto pads to 128 on gb200"
ms() { awk -v l="$2" '$1 == l {print $(NF - 5)}' "$WORK/pad-$1"; }
if [ "$(ms 64 pcp4)" = "$(ms none pcp4)" ] && [ "$(ms 64 tp4)" != "$(ms none tp4)" ] &&
  awk -v a="$(ms 128 pcp4)" -v b="$(ms 64 pcp4)" 'BEGIN { exit !(a > b) }'; then
  pass "padding moves tp4 (16 heads a rank), not pcp4 (64), until 128"
else
  fail "tp4 $(ms none tp4) / $(ms 64 tp4), pcp4 $(ms none pcp4) / $(ms 64 pcp4) / $(ms 128 pcp4)"
fi
expect_exit 2 "bad --head-pad" "$MODEL" "$@" --head-pad 0
expect_grep "$WORK/err" "--head-pad 0: expected auto, none or" "the option and its values are named"
expect_exit 2 "bad --head-pad word" "$MODEL" "$@" --head-pad some
expect_exit 2 "bad --weight-bytes" "$MODEL" "$@" --weight-bytes 3
expect_exit 2 "bad --card" "$MODEL" "$@" --card tpu
expect_exit 0 "single-device backend" "$MODEL" "$@" --extrapolate --parallel tp4 --decode 32768 --backend single --layers 1

# Refusals, exit 2, each naming what is wrong.
expect_exit 2 "a shape outside the tables" "$MODEL" "$@" --parallel tp4 --prefill 32768
expect_grep "$WORK/err" "indexer_logits_prefill at series 32" "the missing shape is named"
expect_grep "$WORK/err" "give --extrapolate" "the way out is named"
expect_exit 2 "no table" "$MODEL" --params "$V"
expect_grep "$WORK/err" "--table" "the missing option is named"
expect_exit 2 "no parameters" "$MODEL" --table "$R/2026-12-01-kernels-h200/kernels.json"
expect_grep "$WORK/err" "--params" "the missing option is named"
expect_exit 2 "unknown option" "$MODEL" --frobnicate
expect_exit 2 "bad backend" "$MODEL" "$@" --backend mpi
expect_exit 2 "--check without --validate" "$MODEL" "$@" --check x.json
printf '{"cplab_model_table": "1.0.0", "entries": [{"kernel": "topk_decode", "work": 3}]}\n' >"$WORK/bad.json"
expect_exit 2 "a table entry without its time" "$MODEL" --table "$WORK/bad.json" --params "$V"
expect_grep "$WORK/err" "bad.json:1:.*entries\[0\].*time_us" "file, position, entry and field named"
printf '{"cplab_model_table": "1.0.0", "entries": [' >"$WORK/trunc.json"
expect_exit 2 "a truncated table" "$MODEL" --table "$WORK/trunc.json" --params "$V"
expect_grep "$WORK/err" "trunc.json:1:" "the position is named"
expect_exit 2 "a table that does not exist" "$MODEL" --table "$WORK/none.json" --params "$V"
printf '{"cplab_model_link": "1.0.0", "gpus_per_node": 8, "intra": {"latency_us": 20}, "inter": {"latency_us": 30, "busbw_gbps": 45}}\n' >"$WORK/link.json"
expect_exit 2 "a link file without a bandwidth" "$MODEL" "$@" --extrapolate --link "$WORK/link.json"
expect_grep "$WORK/err" "link.json:.*intra.*busbw_gbps" "the link field is named"
expect_exit 2 "an unknown link preset" "$MODEL" "$@" --extrapolate --link tpu
printf '{"params": {"proj_a_us": 1}}\n' >"$WORK/params.json"
expect_exit 2 "parameters missing a field" "$MODEL" "$@" --extrapolate --params "$WORK/params.json"
expect_grep "$WORK/err" "params.json:.*proj_us_per_gflop" "the parameter is named"
printf '{"cplab_model_validation": "1.0.0", "predict": []}\n' >"$WORK/manifest.json"
expect_exit 2 "a manifest missing its calibration" "$MODEL" --validate "$WORK/manifest.json"
expect_grep "$WORK/err" "manifest.json:" "the manifest is named"
finish
