#!/bin/sh
# The GPU goldens (tests/golden-gpu/README.md): traces cplab-exec recorded on an
# H200 (single-device backend) by tools/record-gpu-goldens.sh. For each golden
# tests/golden-gpu/traces/NAME.h5: cplab-sim --numeric on the stored scenario
# tests/golden-gpu/scenarios/NAME.json, cplab-diff of that run (A, the
# reference) against the golden with the default policy (the kernels'
# tolerances, analysis/policy.json), and cplab-diff --ranks on the golden. A
# simulator that departs from what the kernels computed fails here, naming the
# first diverging row; so does a golden recorded from a drifting kernel. Then
# the check is shown to fail: copies of one golden with one attention output
# element moved past the tolerance, and with one converted top-k index
# changed, each give exit 1 naming that row.
# Skips (77) only when tests/golden-gpu/traces holds no golden. Goldens the
# CPU emulation recorded fail unless CPLAB_GOLDEN_ALLOW_EMULATED=1 (for
# testing this script with tools/record-gpu-goldens.sh and the emulated
# executor).
. "$top_srcdir/tests/lib.sh"
DIFF="$top_builddir/cplab-diff"
POKE="$top_builddir/tests/cli/trace_poke"
G="$top_srcdir/tests/golden-gpu"
limit=4194304

goldens=
for g in "$G"/traces/*.h5; do
  case $g in *.r[0-9][0-9][0-9][0-9]*.h5) continue ;; esac
  [ -f "$g" ] && goldens="$goldens $(basename "$g" .h5)"
done
if [ -z "$goldens" ]; then echo "SKIP: no golden in tests/golden-gpu/traces (tools/record-gpu-goldens.sh records them)"; exit 77; fi

# Every stored scenario has its golden, and every golden its scenario.
for s in "$G"/scenarios/*.json; do
  n=$(basename "$s" .json)
  [ -f "$G/traces/$n.h5" ] && pass "$n: has a golden" || fail "$n: tests/golden-gpu/traces/$n.h5 is missing"
done

mkdir "$WORK/sim"
for n in $goldens; do
  g="$G/traces/$n.h5"
  s="$G/scenarios/$n.json"
  if [ ! -f "$s" ]; then fail "$n: no scenario $s"; continue; fi
  # What the files are: the executor's, on a GPU, each under 4 MiB.
  producer=$("$POKE" attr "$g" / producer 2>&1)
  device=$("$POKE" attr "$g" /provenance device 2>&1)
  [ "$producer" = exec ] && pass "$n: recorded by the executor on $device" || fail "$n: producer '$producer', not exec"
  case $device in *emulation*)
    if [ "${CPLAB_GOLDEN_ALLOW_EMULATED:-0}" = 1 ]; then echo "note: $n was recorded by the CPU emulation (allowed here)"
    else fail "$n: recorded by '$device', not a GPU (tools/record-gpu-goldens.sh on a GPU node)"; fi ;;
  esac
  for h in "$g" "$G/traces/$n".r[0-9]*.h5; do
    b=$(wc -c <"$h" | tr -d ' ')
    [ "$b" -lt $limit ] || fail "$n: $(basename "$h") is $b bytes, not under $limit"
  done
  # The simulator against what the kernels computed, then the golden's rank-invariance.
  expect_exit 0 "$n: cplab-sim --numeric" "$SIM" --scenario "$s" --numeric -q -o "$WORK/sim/$n.h5"
  expect_exit 0 "$n: the simulator agrees with the GPU golden" "$DIFF" -n 10 "$WORK/sim/$n.h5" "$g"
  [ "$got" -eq 0 ] || sed 's/^/  /' "$WORK/out" | head -30
  expect_exit 0 "$n: the GPU golden is rank-invariant" "$DIFF" --ranks -n 10 "$g"
  [ "$got" -eq 0 ] || sed 's/^/  /' "$WORK/out" | head -30
done

# The check can fail. The tampered golden: smoke's (else the first one),
# rank 0, the first step with sampled rows, layer 0, row 0.
t=smoke
[ -f "$G/traces/$t.h5" ] && [ -f "$WORK/sim/$t.h5" ] || t=$(echo $goldens | cut -d' ' -f1)
r0="steps/000000"
step=0
while [ $step -lt 1000 ]; do
  r0=$(printf 'steps/%06d/layers/000' $step)
  "$POKE" get "$G/traces/$t.r0000.h5" "$r0/sampled_tokens" 0 >"$WORK/token" 2>/dev/null && break
  "$POKE" get "$G/traces/$t.r0000.h5" "$(printf 'steps/%06d/seq_len' $step)" 0 >/dev/null 2>&1 || { step=1000; break; }
  step=$((step + 1))
done
if [ $step -ge 1000 ] || [ ! -f "$WORK/sim/$t.h5" ]; then
  fail "tamper: no sampled row on rank 0 of $t (or no simulator run of it)"
else
  token=$(cat "$WORK/token")
  row="rank 0 step $step layer 0 token $token ("
  tamper() { # what, dataset, index, value
    rm -rf "$WORK/tamper" && mkdir "$WORK/tamper" && cp "$G/traces/$t".*h5 "$WORK/tamper/" && chmod u+w "$WORK/tamper"/*
    old=$("$POKE" get "$WORK/tamper/$t.r0000.h5" "$r0/$2" "$3")
    new=$(echo "$old" | awk "{ $4 }")
    "$POKE" set "$WORK/tamper/$t.r0000.h5" "$r0/$2" "$3" "$new" >/dev/null || { fail "tamper: cannot write $2"; return; }
    expect_exit 1 "tamper: $t with $1 ($old -> $new) fails the check" "$DIFF" -n 10 "$WORK/sim/$t.h5" "$WORK/tamper/$t.h5"
    expect_grep "$WORK/out" "^$2: $row" "tamper: the diverging row is named ($2: $row...)"
    grep "^$2: " "$WORK/out" | head -1 | sed 's/^/  /'
  }
  # attn_out of row 0, head 0, column 0: moved by 1 + 10% (the policy allows 0.05 + 2%).
  tamper "one attn_out element moved past the tolerance" attn_out 0 'v = $1; printf "%.9g", v + 1 + 0.1 * (v < 0 ? -v : v)'
  # The first converted top-k index of row 0 that is not -1, changed (compared exactly).
  col=0
  while [ $col -lt 64 ] && [ "$("$POKE" get "$G/traces/$t.r0000.h5" "$r0/topk_converted" $col)" = -1 ]; do col=$((col + 1)); done
  tamper "one converted top-k index changed" topk_converted $col 'v = ($1 == 0) ? 1 : $1 - 1; printf "%d", v'
fi
finish
