#!/bin/sh
# Usage: tools/mutants-table.sh [--tsv] [CPLAB_SIM]
# Prints the catalogue of mutants as the markdown table that README.md quotes,
# or with --tsv as the tab-separated lines the tests read. The source is the
# mutants themselves: each file plan/layouts/mutant_*.c declares the bug, the
# rule that must catch it, its needs and a claim per command (.caught), and
# `cplab-sim --list-mutants` prints them (CPLAB_SIM, default build/cplab-sim).
# One row a mutant, the columns named by the header line ("# mutant<TAB>..."),
# each cell's "; "-separated scenarios one a line. After an edit of a mutant,
# paste the output over README.md's copy (between its "mutants" markers);
# tests/cli/mutants.sh fails while the two differ.
set -eu
tsv=0
[ "${1:-}" = --tsv ] && { tsv=1; shift; }
sim=${1:-$(dirname "$0")/../build/cplab-sim}
tmp=${TMPDIR:-/tmp}/mutants-table.$$
trap 'rm -f "$tmp"' EXIT
"$sim" --list-mutants >"$tmp" || { echo "mutants-table.sh: '$sim --list-mutants' failed" >&2; exit 2; }
if [ "$tsv" = 1 ]; then cat "$tmp"; exit 0; fi
awk -F '\t' '
  /^# mutant\t/ {
    sub(/^# /, "")
    n = split($0, head, "\t")
    line = "|"; rule = "|"
    for (i = 1; i <= n; i++) {
      name = i > 4 ? "`" head[i] "`" : head[i]
      line = line " " name " |"; rule = rule "---|"
    }
    print line; print rule
    next
  }
  /^#/ || /^$/ { next }
  {
    if (NF != n) { printf "%s has %d columns, the header %d\n", $1, NF, n > "/dev/stderr"; exit 1 }
    line = "| `" $1 "` |"
    for (i = 2; i <= NF; i++) { cell = $i; gsub(/; /, "<br>", cell); line = line " " cell " |" }
    print line
  }
' "$tmp"
