#!/bin/sh
# The catalogue of mutants is true: every mutant declares in its own file
# (plan/layouts/mutant_*.c) what catches it, cplab-sim --list-mutants prints
# the declarations, and every claim of every row is run here (the command on
# the scenario exits as the cell says and names exactly what it says,
# non-catches included); the vllm layout passes every command on every
# scenario the table names, and README.md's copy of the table is the one
# tools/mutants-table.sh renders from the declarations.
. "$top_srcdir/tests/lib.sh"
DIFF="$top_builddir/cplab-diff"
EXEC="$top_builddir/cplab-exec"
TABLE="$WORK/mutants.tsv"
sh "$top_srcdir/tools/mutants-table.sh" --tsv "$SIM" >"$TABLE" || fail "cplab-sim --list-mutants prints no catalogue"

# The commands, in the catalogue's column order (after mutant, bug, breaks, needs).
columns="cplab-sim|cplab-sim --check|cplab-diff --ranks|cplab-diff vllm (plans)|cplab-diff vllm (--numeric)|cplab-exec --plans-only"
header=$(grep '^# mutant	' "$TABLE" | sed 's/^# //')
if [ "$header" = "$(printf 'mutant\tbug\tbreaks\tneeds\t%s' "$columns" | sed 's/|/\t/g')" ]; then
  pass "the table's columns are the commands this test runs"
else fail "the table's header is not: mutant, bug, breaks, needs, $columns"; fi

# trace LAYOUT SCENARIO [--numeric]: the run's trace, written once.
trace() {
  t="$WORK/$1-$2$3.h5"
  [ -f "$t" ] || "$SIM" --scenario "$2" --layout "$1" $3 -q -o "$t" </dev/null >/dev/null 2>&1
  echo "$t"
}

# names COLUMN: what the output of the command ($WORK/out, $WORK/err) names,
# one a line, sorted.
names() {
  case $1 in
    "cplab-sim --check") sed -n '/"by_rule"/,/}/s/^ *"\([a-z-]*\)": [1-9][0-9]*,\{0,1\}$/\1/p' "$WORK/out" ;;
    "cplab-diff --ranks") # the invariants failed in any step: JUnit cases with a failure
      awk '/<testcase /{split($0, a, "name=\""); split(a[3], b, "\""); name = b[1]} /<failure /{print name}' "$WORK/ranks.xml" ;;
    "cplab-diff vllm"*) awk '/^dataset /{on = 1; next} on && NF >= 8 && $3 > 0 {print $1}' "$WORK/out" ;;
    "cplab-exec --plans-only")
      sed -n 's/.*derived a different \(.*\) than rank 0.*/\1/p; s/.*would issue different \(.*\) collectives.*/\1 collectives/p' \
        "$WORK/err" | sed 's/ (.*//' ;;
  esac | sort -u
}

# claim COLUMN LAYOUT SCENARIO EXIT NAMES: run the command and compare.
claim() {
  col=$1 m=$2 s=$3 c_exit=$4 c_names=$5
  case $col in
    "cplab-sim") set -- "$SIM" --scenario "$s" --layout "$m" -q ;;
    "cplab-sim --check") set -- "$SIM" --scenario "$s" --layout "$m" --check --json ;;
    "cplab-diff --ranks") rm -f "$WORK/ranks.xml"; set -- "$DIFF" --ranks -q --junit "$WORK/ranks.xml" "$(trace "$m" "$s")" ;;
    "cplab-diff vllm (plans)") set -- "$DIFF" -n 1000 "$(trace vllm "$s")" "$(trace "$m" "$s")" ;;
    "cplab-diff vllm (--numeric)")
      set -- "$DIFF" -n 1000 "$(trace vllm "$s" --numeric)" "$(trace "$m" "$s" --numeric)" ;;
    "cplab-exec --plans-only") set -- "$EXEC" --plans-only --scenario "$s" --layout "$m" ;;
  esac
  expect_exit "$c_exit" "$col, $m on $s" "$@" </dev/null
  printf '%s\n' "$c_names" | tr ',' '\n' | sed 's/^ *//; s/ *$//; /^$/d' | sort -u >"$WORK/want"
  names "$col" >"$WORK/got"
  if cmp -s "$WORK/want" "$WORK/got"; then
    [ -s "$WORK/want" ] && pass "$col, $m on $s: names $(paste -sd, "$WORK/got")"
  else
    fail "$col, $m on $s names '$(paste -sd, "$WORK/got")', the table says '$(paste -sd, "$WORK/want")'"
  fi
}

rows=0
while IFS='	' read -r m bug breaks needs c1 c2 c3 c4 c5 c6 <&3; do
  case $m in '#'* | '') continue ;; esac
  rows=$((rows + 1))
  [ -n "$bug" ] && [ -n "$breaks" ] && [ -n "$needs" ] || fail "$m: bug, breaks and needs are required"
  i=0
  for cell in "$c1" "$c2" "$c3" "$c4" "$c5" "$c6"; do
    i=$((i + 1))
    col=$(echo "$columns" | cut -d'|' -f$i)
    if [ "$col" = "cplab-exec --plans-only" ] && [ "$HAVE_CUDA" != yes ]; then
      echo "# $m: $col not run (cplab-exec is built with CUDA only)"
      continue
    fi
    [ -n "$cell" ] || fail "$m: no cell for $col"
    printf '%s\n' "$cell" | tr ';' '\n' >"$WORK/entries"
    while read -r s ex said <&4; do
      case $ex in 0 | 1) ;; *) fail "$m, $col: '$s $ex' is not SCENARIO EXIT"; continue ;; esac
      [ "$ex" = 0 ] && [ -n "$said" ] && fail "$m, $col on $s: exit 0 names nothing, the table says '$said'"
      [ "$col" = cplab-sim ] && [ -n "$said" ] && fail "$m, $col on $s: plain cplab-sim names no rule"
      claim "$col" "$m" "$s" "$ex" "$said"
      echo "$col|$s" >>"$WORK/used"
    done 4<"$WORK/entries"
  done
done 3<"$TABLE"
[ "$rows" -gt 0 ] && pass "the table has $rows mutants" || fail "the table lists no mutant"

# The correct layout passes every command on every scenario the table uses.
sort -u "$WORK/used" >"$WORK/used.sorted"
while IFS='|' read -r col s <&3; do
  case $col in "cplab-diff vllm"*) ;; *) claim "$col" vllm "$s" 0 "" ;; esac
done 3<"$WORK/used.sorted"

# README.md quotes the table as tools/mutants-table.sh renders it.
sh "$top_srcdir/tools/mutants-table.sh" "$SIM" >"$WORK/rendered" || fail "tools/mutants-table.sh cannot render the table"
sed -n '/^<!-- begin catalogue of mutants/,/^<!-- end catalogue of mutants/p' "$top_srcdir/README.md" | sed '1d;$d' >"$WORK/readme"
if [ -s "$WORK/readme" ] && cmp -s "$WORK/rendered" "$WORK/readme"; then pass "README.md's copy of the table is current"
else
  fail "README.md's copy of the catalogue differs from 'sh tools/mutants-table.sh' (paste its output in)"
  diff "$WORK/rendered" "$WORK/readme" | head -10
fi
finish
