#!/bin/sh
# The kernel bench's slow first case after the ceilings: which part of the ceilings (the 1 GiB copy, the
# 8192^3 GEMMs) leaves it, and whether an idle pause (--settle-ms) removes it. One build; runs in turn.
set -u
R=$(mktemp -d)
finish() { tar czf "$OUT/r.tar.gz" -C "$R" .; }
trap finish EXIT
C="topk-4k-32k,topk-8k-32k,topk-4k-causal-32k"
run() { # label, extra args
  l=$1; shift
  timeout 120 $KB --kernel topk_prefill --case $C --commit 3s "$@" --json "$R/$l.json" >"$R/$l.txt" 2>"$R/$l.err"
  echo "== $l ($*) rc $?"; grep -E "^ topk|^# (ceilings|an idle)" "$R/$l.txt" | cut -c1-100
}
run nc1 --no-ceilings
run full1
run settle1 --settle-ms 1000
run smallgemm --gemm 1024x1024x1024
run smallcopy --copy-mib 64
run full2
run settle2 --settle-ms 1000
run nc2 --no-ceilings
