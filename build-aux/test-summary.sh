#!/bin/sh
# Usage: test-summary.sh test-suite.log...
# Sums automake's counts (each TAP line of the cmocka programs counts once)
# and prints the closing line "N passed, N failed, N skipped". Exits 1 when
# anything failed or when no test ran at all. EXTRA_PASSED / EXTRA_FAILED add
# checks that are not automake tests (CI counts make distcheck that way).
set -eu
awk -v xp="${EXTRA_PASSED:-0}" -v xf="${EXTRA_FAILED:-0}" '
  /^# PASS:/  { p += $3 }
  /^# FAIL:/  { f += $3 }
  /^# ERROR:/ { f += $3 }
  /^# XPASS:/ { f += $3 }
  /^# SKIP:/  { s += $3 }
  END {
    p += xp; f += xf
    printf "%d passed, %d failed, %d skipped\n", p, f, s
    if (f > 0 || p == 0) exit 1
  }' "$@"
