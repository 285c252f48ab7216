# tests/lib.sh: helpers for the shell tests (sourced). Each check prints one
# line; the test fails (exit 1) at the end if any check failed.
: "${top_srcdir:?run through make check}" "${top_builddir:?run through make check}"
SIM="$top_builddir/cplab-sim"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cplab-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
failures=0

pass() { echo "ok: $1"; }
fail() { echo "FAILED: $1"; failures=$((failures + 1)); }

# expect_exit CODE DESCRIPTION CMD...: run CMD, stdout/stderr to $WORK/out,err
expect_exit() {
  want=$1; what=$2; shift 2
  "$@" >"$WORK/out" 2>"$WORK/err"
  got=$?
  if [ "$got" -eq "$want" ]; then pass "$what (exit $got)"; else
    fail "$what: exit $got, expected $want"; sed 's/^/  | /' "$WORK/err" | head -5; fi
}

# expect_grep FILE PATTERN DESCRIPTION
expect_grep() {
  if grep -q -- "$2" "$1"; then pass "$3"; else fail "$3: '$2' not in $(basename "$1")"; sed 's/^/  | /' "$1" | head -5; fi
}

finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  exit 0
}
