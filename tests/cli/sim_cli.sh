#!/bin/sh
# cplab-sim's command-line contract: help, version, listing, the default main
# job, JSON and -o output, exit codes 0/2 and messages on bad input.
. "$top_srcdir/tests/lib.sh"

expect_exit 0 "--help" "$SIM" --help
expect_grep "$WORK/out" "--scenario NAME|FILE" "help lists the common options"
expect_grep "$WORK/out" "Exit status: 0 ok, 1" "help states the exit codes"
expect_exit 0 "--version" "$SIM" --version
expect_grep "$WORK/out" "^cplab-sim (cplab) " "version line"
expect_exit 0 "--list-scenarios" "$SIM" --list-scenarios
for s in pr56157 smoke mixed; do expect_grep "$WORK/out" "^$s " "lists $s"; done

# The main job on its default scenario: pr56157, TP1/PCP4/DCP4, 4 ranks.
expect_exit 0 "default run" "$SIM"
expect_grep "$WORK/out" "^scenario  pr56157" "default scenario is pr56157"
expect_grep "$WORK/out" "tp 1, pcp 4, dcp 4, pp 1 -> world 4" "TP1/PCP4/DCP4"
expect_grep "$WORK/out" "^     3   0    3   0        3  {3}  *{0,1,2,3}  *{0,1,2,3}$" "rank 3 row"
cp "$WORK/out" "$WORK/first"
"$SIM" >"$WORK/second" 2>&1
if cmp -s "$WORK/first" "$WORK/second"; then pass "output is deterministic"; else fail "two runs differ"; fi

# JSON on stdout equals the -o file; -q prints nothing.
expect_exit 0 "--json" "$SIM" --scenario smoke --json
cp "$WORK/out" "$WORK/stdout.json"
expect_grep "$WORK/stdout.json" '"world_size": 2' "JSON report has the world size"
expect_exit 0 "-o file -q" "$SIM" --scenario smoke -q -o "$WORK/report.json"
if [ ! -s "$WORK/out" ] && cmp -s "$WORK/stdout.json" "$WORK/report.json"; then pass "-o file equals --json, -q silent"
else fail "-o file differs from --json or -q printed"; fi
if ls "$WORK"/report.json.tmp.* >/dev/null 2>&1; then fail "temporary file left behind"; else pass "no temporary file left"; fi
expect_exit 2 "-o into a missing directory" "$SIM" -q -o "$WORK/no/such/dir/r.json"
expect_grep "$WORK/err" "cannot create a temporary file" "names the failed write"

# Plans: every rank's own derivation agrees; --check runs every invariant.
expect_grep "$WORK/first" "^agreement: every rank derived the same shared plan in all 5 steps" "ranks agree"
expect_exit 0 "--check on the default scenario" "$SIM" --check
expect_grep "$WORK/out" "^invariants (vllm-pcp-dcp.md §10.1): [0-9]* checks, 0 violations" "no violations"
expect_exit 0 "--list-layouts" "$SIM" --list-layouts
expect_grep "$WORK/out" "^vllm " "lists vllm"
expect_grep "$WORK/out" "^mutant-prefill-block-bound  *\[mutant\]" "flags mutants"
# Which mutant --check and the plain run catch, on which scenario: the mutants' declarations (cplab-sim --list-mutants)
# (tests/cli/mutants.sh). Here only how the plain run reports a disagreement.
"$SIM" --scenario mixed --layout mutant-rank-local-plan >"$WORK/out" 2>&1
expect_grep "$WORK/out" "^DISAGREEMENT: " "a disagreement is reported as such"
expect_exit 2 "unknown layout" "$SIM" --layout zigzag
expect_grep "$WORK/err" "unknown layout 'zigzag' (see --list-layouts)" "names the layout"

# Overrides.
expect_exit 0 "--seed and --layout" "$SIM" --scenario mixed --seed 5 --layout block-aligned
expect_grep "$WORK/out" "layout    block-aligned, seed 5," "overrides are applied"

# Errors: exit 2, one message naming the problem, a hint for usage errors.
expect_exit 2 "unknown option" "$SIM" --frobnicate
expect_grep "$WORK/err" "unknown option '--frobnicate'" "names the unknown option"
expect_grep "$WORK/err" "Try 'cplab-sim --help'" "usage hint"
expect_exit 2 "missing option argument" "$SIM" --scenario
expect_grep "$WORK/err" "option '--scenario' needs an argument" "names the option"
expect_exit 2 "stray argument" "$SIM" extra
expect_exit 2 "bad seed" "$SIM" --seed 12x
expect_grep "$WORK/err" "\-\-seed: expected an integer" "names the seed problem"
expect_exit 2 "unknown scenario" "$SIM" --scenario no-such
expect_grep "$WORK/err" "no built-in scenario or file named 'no-such' (built-ins: pr56157, smoke, mixed, mtp, mtp-pcp2)" "lists built-ins"
expect_exit 2 "missing file" "$SIM" --scenario "$WORK/none.json"
expect_grep "$WORK/err" "No such file or directory" "names the missing file"
expect_exit 2 "invalid scenario" "$SIM" --scenario "$top_srcdir/tests/scenarios/invalid/dcp_not_in_set.json"
expect_grep "$WORK/err" "dcp_not_in_set.json:4:42: parallel.dcp: with pcp > 1" "file:line:column, field and rule"
if [ -s "$WORK/out" ]; then fail "printed a report despite the error"; else pass "no output on error"; fi

# The numeric pass: --layers is checked, and the trace carries every listed layer.
expect_exit 2 "--layers without --numeric" "$SIM" --scenario smoke --layers 0
expect_grep "$WORK/err" "\-\-layers needs \-\-numeric" "says what it needs"
expect_exit 2 "a malformed layer list" "$SIM" --scenario smoke --numeric --layers 0,,1
expect_grep "$WORK/err" "expected layer indices separated by commas" "names the problem"
expect_exit 2 "a layer the model lacks" "$SIM" --scenario smoke --numeric --layers 5
expect_grep "$WORK/err" "layer 5 does not exist (the model has 2 layers)" "names the layer and the model's count"
expect_exit 2 "a layer listed twice" "$SIM" --scenario smoke --numeric --layers 1,1
expect_exit 0 "two layers of numeric results" "$SIM" --scenario smoke --numeric --layers 1,0 -q -o "$WORK/num.h5"
expect_exit 0 "the numeric trace validates" "$top_builddir/cplab-trace" validate -q "$WORK/num.h5"
expect_exit 0 "and is rank-invariant, layer by layer" "$top_builddir/cplab-diff" --ranks "$WORK/num.h5"
expect_grep "$WORK/out" "^decode combine  *1[0-9]" "both layers' decode rows checked (2 x 6)"
expect_exit 0 "the numeric report line" "$SIM" --scenario smoke --numeric
expect_grep "$WORK/out" "numeric pass: 28 sampled rows (all ranks) over 1 layer(s)" "counts the sampled rows"
# docs/scenarios.md: the --json report's "scenario" member is itself a valid
# scenario that reproduces the run (the same plans); the report as a whole is not one.
expect_exit 0 "the mixed scenario as JSON" "$SIM" --scenario mixed --json
cp "$WORK/out" "$WORK/report.json"
if python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["scenario"], open(sys.argv[2], "w"))' \
  "$WORK/report.json" "$WORK/resolved.json"; then
  expect_exit 0 "the report's scenario member runs" "$SIM" --scenario "$WORK/resolved.json" --json
  python3 -c 'import json,sys; a, b = (json.load(open(f)) for f in sys.argv[1:]); assert a["plans"] == b["plans"]' \
    "$WORK/report.json" "$WORK/out" && pass "and derives the same plans" || fail "its plans differ from the run's"
else
  fail "the --json report has no scenario member"
fi
expect_exit 2 "the whole report is not a scenario" "$SIM" --scenario "$WORK/report.json"
expect_grep "$WORK/err" "unknown key 'program'" "and the refusal names its first extra key"
finish
