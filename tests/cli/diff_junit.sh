#!/bin/sh
# cplab-diff --junit: the JUnit XML a CI system shows. On an agreeing pair,
# a disagreeing pair (a mutant layout against vllm), and runs whose ranks
# break invariants of the plans and of the numeric tensors (mutants): the XML is
# well formed, its counts are those of its cases, one case per dataset (per
# invariant of each step with --ranks), and a failure names the first
# diverging row exactly as the text report does. A failed comparison is one
# error case; a --junit path that cannot be written is exit 2 and no file.
. "$top_srcdir/tests/lib.sh"
DIFF="$top_builddir/cplab-diff"
GOLDEN="$top_srcdir/tests/golden"

# Python reads the XML (xml.etree: a parser that rejects what is not well
# formed); python3 comes with setup.sh's python3-h5py.
PY=
for p in python3 /usr/bin/python3; do
  if [ -z "$PY" ] && "$p" -c 'import xml.etree.ElementTree' >/dev/null 2>&1; then PY=$p; fi
done

# junit_facts FILE: "well-formed", "counts match" when every count of
# <testsuites> and <testsuite> is that of its <testcase>s, "cases N", then
# one line per case: "case CLASSNAME NAME pass|failure|skipped|error MESSAGE".
junit_facts() {
  "$PY" - "$1" >"$WORK/facts" 2>&1 <<'PYEOF'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
print("well-formed")
suites = root.findall("testsuite")
cases = [c for s in suites for c in s.findall("testcase")]
def status(c):
    for k in ("failure", "error", "skipped"):
        e = c.find(k)
        if e is not None:
            return k, e.get("message", "")
    return "pass", ""
def tally(cs):
    st = [status(c)[0] for c in cs]
    return {"tests": len(cs), "failures": st.count("failure"), "errors": st.count("error"),
            "skipped": st.count("skipped")}
ok = root.tag == "testsuites" and len(suites) == 1
for el, cs in [(root, cases)] + [(s, s.findall("testcase")) for s in suites]:
    ok &= all(int(el.get(k)) == v for k, v in tally(cs).items()) and float(el.get("time")) >= 0
print("counts match" if ok else "counts MISMATCH")
print("cases %d" % len(cases))
for c in cases:
    k, m = status(c)
    print("case %s %s %s %s" % (c.get("classname"), c.get("name"), k, m))
PYEOF
}

# check_junit FILE WHAT: well formed, counts consistent.
check_junit() {
  if [ -z "$PY" ]; then pass "$2: no python3, XML not read"; return; fi
  junit_facts "$1"
  expect_grep "$WORK/facts" "^well-formed$" "$2: well-formed XML"
  expect_grep "$WORK/facts" "^counts match$" "$2: tests, failures, errors and skipped are those of the cases"
}

# expect_cases N WHAT: the last check_junit's file has N test cases.
expect_cases() {
  [ -z "$PY" ] && return
  got=$(sed -n 's/^cases //p' "$WORK/facts")
  if [ "$got" = "$1" ]; then pass "$2 ($got cases)"; else fail "$2: $got cases, expected $1"; fi
}

# expect_case CLASSNAME NAME STATUS MESSAGE WHAT: the last check_junit's
# file has that case, with exactly that message.
expect_case() {
  [ -z "$PY" ] && return
  if grep -qxF "case $1 $2 $3 $4" "$WORK/facts"; then pass "$5"; else fail "$5: no case '$1 $2 $3 $4'"; fi
}

# An agreeing pair: one passing case per dataset of the text table.
"$SIM" --scenario smoke --numeric -q -o "$WORK/smoke.h5" 2>/dev/null
expect_exit 0 "smoke agrees with its golden trace, --junit" \
  "$DIFF" --junit "$WORK/agree.xml" "$GOLDEN/smoke.h5" "$WORK/smoke.h5"
datasets=$(sed -n '/^dataset /,/differences found$/p' "$WORK/out" | grep -vc '^dataset \|differences found$')
check_junit "$WORK/agree.xml" "agreeing pair"
expect_cases "$datasets" "one case per dataset of the text report"
expect_grep "$WORK/agree.xml" 'failures="0" errors="0" skipped="0"' "nothing fails"
expect_grep "$WORK/agree.xml" '<testcase classname="smoke.attention" name="attn_out"/>' \
  "classname: the scenario's file and the dataset's group"

# -o and --junit together: both files, the same verdict.
expect_exit 0 "-o and --junit together" \
  "$DIFF" -q -o "$WORK/agree.json" --junit "$WORK/agree2.xml" "$GOLDEN/smoke.h5" "$WORK/smoke.h5"
expect_grep "$WORK/agree.json" '"differences": 0' "the JSON report is written"
expect_grep "$WORK/agree2.xml" '<testsuites name="cplab-diff" tests="' "beside the JUnit report"

# A disagreeing pair: the pre-fix conversion reads wrong rows.
for l in vllm mutant-prefill-block-bound; do
  "$SIM" --scenario smoke --layout "$l" --numeric -q -o "$WORK/num-$l.h5" 2>/dev/null
done
expect_exit 1 "a mutant's run disagrees with vllm's, --junit" \
  "$DIFF" --junit "$WORK/disagree.xml" "$WORK/num-vllm.h5" "$WORK/num-mutant-prefill-block-bound.h5"
first=$(grep -m1 '^attn_out: ' "$WORK/out")
check_junit "$WORK/disagree.xml" "disagreeing pair"
if [ -n "$PY" ]; then
  expect_grep "$WORK/facts" "^case num-vllm.attention attn_out failure attn_out: rank 0 step 0 layer 0 token 1 (request 0, position 1) head 0 column" \
    "attn_out fails, naming the first diverging row"
  expect_case num-vllm.attention attn_out failure "$first" "its message is the text report's first attn_out line"
  expect_grep "$WORK/facts" "^case num-vllm.layout layout-specific skipped decided by each layout" \
    "what each layout decides is a skipped case"
  expect_grep "$WORK/facts" "^case num-vllm.indexer topk pass" "what agrees passes"
fi
expect_grep "$WORK/disagree.xml" "^passes when: |a - b| &lt;= 0.05 + 0.02 |a|; cosine of each row &gt;= 0.9999" \
  "the failure says the tolerance it broke"
expect_grep "$WORK/disagree.xml" "^\.\.\. and [0-9]* more$" "and how many divergences it did not list"

# Rank-invariance: one case per invariant of each step.
expect_exit 0 "the golden smoke run is rank-invariant, --junit" "$DIFF" --ranks -q --junit "$WORK/ranks.xml" "$GOLDEN/smoke.h5"
check_junit "$WORK/ranks.xml" "rank-invariance"
expect_grep "$WORK/ranks.xml" 'failures="0" errors="0"' "nothing fails"
expect_grep "$WORK/ranks.xml" '<testcase classname="smoke.step1" name="decode-combine"/>' \
  "classname names the step, name the invariant"
"$SIM" --scenario mixed --layout mutant-no-short-replication -q -o "$WORK/noshort.h5" 2>/dev/null
expect_exit 1 "a mutant breaks invariants, --junit" "$DIFF" --ranks -n 3 --junit "$WORK/noshort.xml" "$WORK/noshort.h5"
check_junit "$WORK/noshort.xml" "mutant's rank-invariance"
if [ -n "$PY" ]; then
  steps=$(grep -c '^case noshort\.step[0-9]* groups ' "$WORK/facts")
  per_step=$(grep -c '^case noshort\.step0 ' "$WORK/facts")
  expect_cases "$((steps * per_step + 1))" "the same $per_step invariants in each of $steps steps, and the layout's empty-context"
  for i in groups ownership query-partition plan-identity conversion collectives replicated-rows decode-combine; do
    expect_grep "$WORK/facts" "^case noshort\.step0 $i " "a step's cases include $i"
  done
fi
first=$(grep -m1 '^step [0-9]*: query-partition: ' "$WORK/out")
step=$(echo "$first" | sed 's/^step \([0-9]*\):.*/\1/')
expect_case "noshort.step$step" query-partition failure "$first" \
  "query-partition fails in step $step, with the text report's first violation"
if [ -n "$PY" ]; then
  expect_grep "$WORK/facts" "^case noshort.layout empty-context failure empty-context: layout mutant-no-short-replication" \
    "the empty-context rule is the layout's case"
  expect_grep "$WORK/facts" "^case noshort.step0 decode-combine skipped not checked: no numeric tensors" \
    "numeric checks without numeric tensors are skipped"
fi

# The same mutant's numeric run: the numeric rank checks fail as their own
# cases, in the step where the text report puts them.
expect_exit 1 "a mutant's numeric run, --ranks --junit" "$DIFF" --ranks --junit "$WORK/numranks.xml" \
  "$WORK/num-mutant-prefill-block-bound.h5"
check_junit "$WORK/numranks.xml" "numeric rank checks"
first=$(grep -m1 '^replicated-rows: ' "$WORK/out")
step=$(echo "$first" | sed 's/^replicated-rows: step \([0-9]*\) .*/\1/')
expect_case "num-mutant-prefill-block-bound.step$step" replicated-rows failure "$first" \
  "replicated-rows fails in step $step, naming the token and the ranks"
expect_case "num-mutant-prefill-block-bound.step$step" decode-combine pass "" \
  "decode-combine, checked in the same step, passes"

# A comparison that fails is exit 2 and one error case saying why.
expect_exit 2 "a missing trace, --junit" "$DIFF" --junit "$WORK/error.xml" "$WORK/none.h5" "$WORK/smoke.h5"
check_junit "$WORK/error.xml" "error report"
expect_grep "$WORK/error.xml" 'tests="1" failures="0" errors="1" skipped="0"' "counts one error"
expect_grep "$WORK/error.xml" "<error type=\"CPLAB_EIO\" message=\"cannot open &apos;$WORK/none.h5&apos; \[CPLAB_EIO\]\"/>" \
  "with the message of stderr"

# A --junit path that cannot be written: exit 2, a clear message, no file,
# no temporary file left, whatever the comparison found.
expect_exit 2 "--junit into a missing directory" "$DIFF" -q --junit "$WORK/nodir/r.xml" "$WORK/smoke.h5" "$WORK/smoke.h5"
expect_grep "$WORK/err" "cplab-diff: error: --junit: cannot create a temporary file beside '$WORK/nodir/r.xml': No such file or directory \[CPLAB_EIO\]" \
  "says which option and why"
[ -e "$WORK/nodir" ] && fail "nothing is created" || pass "nothing is created"
mkdir "$WORK/isdir"
expect_exit 2 "--junit onto a directory" "$DIFF" -q --junit "$WORK/isdir" "$WORK/num-vllm.h5" "$WORK/num-mutant-prefill-block-bound.h5"
expect_grep "$WORK/err" "--junit: cannot rename .* to '$WORK/isdir': Is a directory \[CPLAB_EIO\]" "says why"
[ -d "$WORK/isdir" ] && [ -z "$(ls -A "$WORK/isdir")" ] && pass "the directory is untouched" || fail "the directory is untouched"
ls "$WORK" | grep -q '\.tmp\.' && fail "no temporary file is left" || pass "no temporary file is left"
expect_exit 2 "an empty --junit" "$DIFF" --junit "" "$WORK/smoke.h5" "$WORK/smoke.h5"
expect_grep "$WORK/err" "--junit: expected a file name \[CPLAB_EUSAGE\]" "is a usage error"
finish
