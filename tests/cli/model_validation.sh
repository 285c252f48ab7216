#!/bin/sh
# cplab-model's validation (issue 23) recomputed from the committed GPU results: the committed
# bench/results/2026-12-01-model-validation/validation.json must be what --validate gives today
# (calibration, every prediction, the error summary), so a change to the plans, the model or the
# committed results that moves a prediction turns this test red until validation.json is
# regenerated (the command is in that folder's README). Then: a tampered copy fails naming what drifted,
# and the summary's numbers are the entries' (median and max of |error|).
. "$top_srcdir/tests/lib.sh"
MODEL="$top_builddir/model/cplab-model"
DIR="$top_srcdir/bench/results/2026-12-01-model-validation"

expect_exit 0 "the committed validation is what the model gives now" "$MODEL" --validate "$DIR/manifest.json" \
  --check "$DIR/validation.json"
expect_grep "$WORK/err" "predictions, median |error|" "the check says what it compared"
expect_grep "$WORK/err" "as committed (head pad 64)" "the check names the head padding the validation used"

# Recompute it and check its summary against its own entries, without Python: the entries'
# |error| sorted, their median and maximum.
expect_exit 0 "recompute" "$MODEL" --validate "$DIR/manifest.json" -o "$WORK/v.json"
sed -n 's/^ *"error": \(.*\),\{0,1\}$/\1/p' "$WORK/v.json" | tr -d ',' | sed 's/^-//' | LC_ALL=C sort -g >"$WORK/errs"
n=$(wc -l <"$WORK/errs")
count=$(sed -n 's/^ "predictions": \([0-9]*\),$/\1/p' "$WORK/v.json")
if [ "$n" -gt 0 ] && [ "$n" = "$count" ]; then pass "$n entries, as 'predictions' says"; else
  fail "$n entries with an error, 'predictions' says '$count'"; fi
max=$(tail -n 1 "$WORK/errs")
want_max=$(sed -n 's/^ "max_abs_error": \(.*\),$/\1/p' "$WORK/v.json")
if awk -v a="$max" -v b="$want_max" 'BEGIN { d = a - b; exit !(d < 1e-9 && d > -1e-9) }'; then
  pass "max_abs_error $want_max is the largest entry's"; else fail "max_abs_error $want_max, largest entry $max"; fi
med=$(awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }' "$WORK/errs")
want_med=$(sed -n 's/^ "median_abs_error": \(.*\),$/\1/p' "$WORK/v.json")
if awk -v a="$med" -v b="$want_med" 'BEGIN { d = a - b; exit !(d < 1e-9 && d > -1e-9) }'; then
  pass "median_abs_error $want_med is the entries' median"; else fail "median_abs_error $want_med, entries' median $med"; fi

# A drift is caught: one prediction changed in a copy of the committed file.
first=$(grep -m 1 '"predicted_ms"' "$DIR/validation.json")
sed '0,/"predicted_ms": [0-9.e+-]*/s//"predicted_ms": 12345.5/' "$DIR/validation.json" >"$WORK/tampered.json"
expect_exit 1 "a changed prediction is a drift" "$MODEL" --validate "$DIR/manifest.json" --check "$WORK/tampered.json"
expect_grep "$WORK/err" "entries\[0\].predicted_ms drifted" "the drift names the entry and field"
# A missing entry is one too.
expect_exit 2 "a missing committed file is an error" "$MODEL" --validate "$DIR/manifest.json" --check "$WORK/none.json"
[ -n "$first" ] || fail "the committed file has no prediction"
finish
