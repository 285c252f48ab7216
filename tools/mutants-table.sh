#!/bin/sh
# Usage: tools/mutants-table.sh [tests/mutants.tsv]
# Prints the catalogue of mutants as the markdown table that README.md quotes:
# one row a mutant, the columns named by the file's header (the comment line
# "# mutant<TAB>..."), each cell's "; "-separated scenarios one a line. After an
# edit of the file, paste the output over README.md's copy (between its
# "mutants.tsv" markers); tests/cli/mutants.sh fails while the two differ.
set -eu
table=${1:-$(dirname "$0")/../tests/mutants.tsv}
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
    if (NF != n) { printf "%s: %s has %d columns, the header %d\n", FILENAME, $1, NF, n > "/dev/stderr"; exit 1 }
    line = "| `" $1 "` |"
    for (i = 2; i <= NF; i++) { cell = $i; gsub(/; /, "<br>", cell); line = line " " cell " |" }
    print line
  }
' "$table"
