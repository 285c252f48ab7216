#!/bin/sh
# Usage (on a GPU node, from a configured and built cplab tree):
#   sh tools/record-gpu-goldens.sh [OUT_DIR]      (default: tests/golden-gpu/traces)
#
# Records the GPU goldens (tests/golden-gpu/README.md): cplab-exec, single-device
# backend, on every scenario of tests/golden-gpu/scenarios. A trace is accepted
# only when
#   1. cplab-trace validate passes and each of its files is under 4 MiB;
#   2. cplab-diff --ranks finds every invariant holding on it;
#   3. cplab-diff of cplab-sim --numeric (same scenario file) against it agrees
#      under the default (kernel) tolerance policy, as tests/cli/golden_gpu.sh
#      checks in make check.
# Every scenario is tried and every failure reported; nothing is written to
# OUT_DIR unless all of them pass: the set is built in a temporary folder beside
# OUT_DIR, with OUT_DIR/provenance.md (card, driver, CUDA, commit, commands, date,
# each check's summary table), and moved into place whole. Where OUT_DIR already
# holds goldens, each new trace is also diffed against its old one (old = A) and
# that table kept in provenance.md: the largest differences a kernel change made.
#
# Environment:
#   CPLAB_BUILD   folder holding cplab-sim, cplab-diff and cplab-trace (default: the
#                 current folder when it holds cplab-sim, as the top of a built
#                 release tarball does, else build/ of this tree)
#   CPLAB_EXEC    the executor (default: CPLAB_BUILD/cplab-exec). The emulated one,
#                 CPLAB_BUILD/tests/emu/cplab-exec-emu, records goldens without a
#                 GPU for testing this script and the CI test; provenance.md then
#                 says so, and the script refuses to write them to
#                 tests/golden-gpu/traces unless CPLAB_GOLDEN_ALLOW_EMULATED=1.
#   CPLAB_GOLDEN_SCENARIOS  folder of scenario files (default tests/golden-gpu/scenarios)
#   CPLAB_GOLDEN_MAX_BYTES  size limit of each file (default 4194304: 4 MiB)
# Exit status: 0 recorded; 1 a check failed (each failure named on stderr, OUT_DIR
# untouched); 2 a usage or set-up error.
set -u
me=record-gpu-goldens
top=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "$me: $*" >&2; exit 2; }
case ${1:-} in -h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;; -*) die "unknown option $1 (usage: $0 [OUT_DIR])" ;; esac
[ $# -le 1 ] || die "usage: $0 [OUT_DIR]"
args="$*"
out=${1:-$top/tests/golden-gpu/traces}
if [ -n "${CPLAB_BUILD:-}" ]; then bin=$CPLAB_BUILD
elif [ -x ./cplab-sim ]; then bin=.
else bin=$top/build; fi
bin=$(cd "$bin" 2>/dev/null && pwd) || die "no build folder ${CPLAB_BUILD:-$top/build} (set CPLAB_BUILD)"
exe=${CPLAB_EXEC:-$bin/cplab-exec}
scen=${CPLAB_GOLDEN_SCENARIOS:-$top/tests/golden-gpu/scenarios}
limit=${CPLAB_GOLDEN_MAX_BYTES:-4194304}
for p in "$bin/cplab-sim" "$bin/cplab-diff" "$bin/cplab-trace" "$exe"; do
  [ -x "$p" ] || die "$p is not an executable (build it: make cplab-sim cplab-diff cplab-trace cplab-exec)"
done
exe=$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")
set -- "$scen"/*.json
[ -f "$1" ] || die "no scenario files in $scen"
mkdir -p "$(dirname "$out")" || die "cannot create $(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
guarded=no
[ "$out" = "$top/tests/golden-gpu/traces" ] && guarded=yes

work=$(mktemp -d "${TMPDIR:-/tmp}/cplab-record.XXXXXX") || die "cannot create a temporary folder"
stage=$(mktemp -d "$(dirname "$out")/.$(basename "$out").new.XXXXXX") || die "cannot create a folder beside $out"
trap 'rm -rf "$work" "$stage"' EXIT
trap 'exit 2' INT TERM HUP
mkdir "$work/sim" "$work/log"
failures=0
failed() { echo "$me: $1: FAILED: $2" >&2; echo "- $1: $2" >>"$work/failures"; failures=$((failures + 1)); }
say() { echo "$me: $*"; }

# prov_attr FILE NAME: a string attribute of the trace's /provenance (h5dump,
# else h5py; empty when neither is there: the GPU nodes have h5py, not h5dump).
prov_attr() {
  if command -v h5dump >/dev/null 2>&1; then
    h5dump -a "/provenance/$2" "$1" 2>/dev/null | sed -n 's/^ *(0): "\(.*\)"$/\1/p' | head -1
  elif command -v python3 >/dev/null 2>&1; then
    python3 - "$1" "$2" 2>/dev/null <<'PY'
import sys, h5py
v = h5py.File(sys.argv[1], "r")["provenance"].attrs.get(sys.argv[2], b"")
print((v.decode() if isinstance(v, bytes) else str(v)).rstrip("\0"))
PY
  fi
}

# The scenarios' names are their files' (the trace names NAME.h5 and the scenario inside must match).
names=
for f in "$@"; do
  n=$(basename "$f" .json)
  inner=$(sed -n 's/^ *"name": *"\([^"]*\)".*/\1/p' "$f" | head -1)
  [ "$inner" = "$n" ] || die "$f: the scenario is named '$inner', not '$n' like its file"
  names="$names $n"
done

# The reference side first, every scenario at once (CPU only).
say "cplab-sim --numeric on$names ($(nproc) at a time)"
printf '%s\n' "$@" | xargs -P "$(nproc)" -I{} sh -c \
  'n=$(basename "$1" .json); "$2/cplab-sim" --scenario "$1" --numeric -q -o "$3/sim/$n.h5" >"$3/log/$n.sim.log" 2>&1; echo $? >"$3/log/$n.sim.rc"' \
  sh {} "$bin" "$work"

emulated=no
for f in "$@"; do
  n=$(basename "$f" .json)
  g="$stage/$n.h5"
  # 0. the executor, single-device backend (every logical rank on this one GPU).
  case $f in "$top"/*) rel=${f#"$top"/} ;; *) rel=$f ;; esac
  cmd="cplab-exec --backend single --scenario $rel -o $n.h5"
  if ! "$exe" --backend single --scenario "$f" -o "$g" >"$work/log/$n.exec.log" 2>&1; then
    failed "$n" "cplab-exec exit $?: $(tail -3 "$work/log/$n.exec.log" | tr '\n' ' ')"; continue
  fi
  device=$(prov_attr "$g" device)
  [ -n "$device" ] || device=$(sed -n 's/^cplab-exec: .* steps of .* on \(.*\) (single-device backend.*/\1/p' "$work/log/$n.exec.log")
  case $device in *emulation*)
    emulated=yes
    if [ $guarded = yes ] && [ "${CPLAB_GOLDEN_ALLOW_EMULATED:-0}" != 1 ]; then
      die "$n: the executor ran on '$device', not a GPU: emulated traces do not go to $out (CPLAB_GOLDEN_ALLOW_EMULATED=1 to force; another OUT_DIR for tests)"
    fi ;;
  esac
  echo "$device" >"$work/log/$n.device"
  echo "$cmd" >"$work/log/$n.cmd"
  # 1. valid, and every file under the limit.
  if ! "$bin/cplab-trace" validate "$g" >"$work/log/$n.validate.log" 2>&1; then
    failed "$n" "cplab-trace validate: $(tail -3 "$work/log/$n.validate.log" | tr '\n' ' ')"; continue
  fi
  big=0; largest=0; nfiles=0
  for h in "$g" "$stage/$n".r[0-9]*.h5; do
    [ -f "$h" ] || continue
    s=$(wc -c <"$h" | tr -d ' '); nfiles=$((nfiles + 1))
    [ "$s" -gt "$largest" ] && largest=$s
    [ "$s" -lt "$limit" ] || { failed "$n" "$(basename "$h") is $s bytes, not under $limit (sample fewer rows: check.sampled_rows of $f)"; big=1; }
  done
  [ $big = 0 ] || continue
  echo "$nfiles $largest" >"$work/log/$n.size"
  # 2. rank-invariance of the executor's own trace.
  "$bin/cplab-diff" --ranks -n 20 "$g" >"$work/log/$n.ranks.log" 2>&1; rc=$?
  if [ $rc -ne 0 ]; then failed "$n" "cplab-diff --ranks exit $rc: $(head -3 "$work/log/$n.ranks.log" | tr '\n' ' ')"; continue; fi
  say "$n: cplab-exec on $device: $nfiles files, largest $largest bytes; valid; rank-invariant"
done

# 3. the reference against the executor, with the default (kernel) policy.
for f in "$@"; do
  n=$(basename "$f" .json)
  [ -f "$work/log/$n.size" ] || continue
  rc=$(cat "$work/log/$n.sim.rc" 2>/dev/null || echo none)
  if [ "$rc" != 0 ]; then failed "$n" "cplab-sim --numeric exit $rc: $(tail -3 "$work/log/$n.sim.log" | tr '\n' ' ')"; continue; fi
  "$bin/cplab-diff" -n 20 "$work/sim/$n.h5" "$stage/$n.h5" >"$work/log/$n.agree.log" 2>&1; rc=$?
  if [ $rc -ne 0 ]; then failed "$n" "cplab-diff sim exec exit $rc: $(head -3 "$work/log/$n.agree.log" | tr '\n' ' ')"; continue; fi
  say "$n: agrees with cplab-sim --numeric"
  # Against the goldens this replaces (information for the commit note, not a check).
  if [ -f "$out/$n.h5" ]; then
    "$bin/cplab-diff" -n 5 "$out/$n.h5" "$stage/$n.h5" >"$work/log/$n.old.log" 2>&1
    echo $? >"$work/log/$n.old.rc"
  fi
done

if [ $failures -ne 0 ]; then
  echo "$me: $failures failure(s); $out left as it was:" >&2
  cat "$work/failures" >&2
  exit 1
fi

# provenance.md: what ran where. The traces' own /provenance (device, cuda,
# git_commit, command_line) is never compared; this file repeats it with what
# only the node can say (driver, nvcc, the card's memory).
first=$(echo $names | cut -d' ' -f1)
commit=$(prov_attr "$stage/$first.h5" git_commit)
src=$(cd "$top" && git describe --always --dirty --abbrev=12 2>/dev/null || cat .commit 2>/dev/null || echo unknown)
smi=$(nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv,noheader 2>/dev/null)
smi_cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
nvcc=nvcc; command -v nvcc >/dev/null 2>&1 || nvcc=/usr/local/cuda/bin/nvcc
nvcc_v=$("$nvcc" --version 2>/dev/null | grep -i release | head -1)
{
  echo "# GPU goldens: provenance"
  echo
  if [ $emulated = yes ]; then
    echo "**EMULATED: recorded by the CPU emulation of the kernels (tests/emu), not on a GPU. Test data only.**"
    echo
  fi
  echo "Recorded $(date -u '+%Y-%m-%d %H:%M:%S UTC') on host $(uname -n) by \`tools/record-gpu-goldens.sh\`"
  echo "(tests/golden-gpu/README.md says how to record them again)."
  echo
  echo "| what | value |"
  echo "|---|---|"
  echo "| card (the trace's /provenance device) | $(cat "$work/log/$first.device") |"
  echo "| card, driver, memory, bus (nvidia-smi) | ${smi:-no nvidia-smi} |"
  echo "| CUDA_VISIBLE_DEVICES | ${CUDA_VISIBLE_DEVICES:-unset} |"
  echo "| CUDA (the trace's /provenance cuda) | $(prov_attr "$stage/$first.h5" cuda) |"
  echo "| CUDA (nvidia-smi; nvcc) | ${smi_cuda:-?}; ${nvcc_v:-no nvcc} |"
  echo "| commit (the trace's /provenance git_commit: the build's) | ${commit:-unread} |"
  echo "| source tree (git describe, or the tarball's .commit) | $src |"
  echo "| executor | $exe |"
  echo "| simulator and diff | $bin |"
  echo "| command | \`sh tools/record-gpu-goldens.sh $args\` (CPLAB_BUILD=${CPLAB_BUILD:-} CPLAB_EXEC=${CPLAB_EXEC:-}) |" | sed "s|$top/||g"
  echo
  echo "Each trace: the command below (from the tree's top), then \`cplab-trace validate\`, \`cplab-diff --ranks\`"
  echo "and \`cplab-diff SIM.h5 NAME.h5\` against \`cplab-sim --scenario tests/golden-gpu/scenarios/NAME.json --numeric\`"
  echo "with the default policy (analysis/policy.json); every one passed. Files must be under $limit bytes."
  echo
  echo "| golden | command | files | largest (bytes) | previous goldens (cplab-diff OLD NEW) |"
  echo "|---|---|---|---|---|"
  for n in $names; do
    set -- $(cat "$work/log/$n.size")
    old="none"
    if [ -f "$work/log/$n.old.rc" ]; then
      case $(cat "$work/log/$n.old.rc") in 0) old="agree (exit 0)" ;; 1) old="differ (exit 1): see below" ;; *) old="not comparable (exit 2): see below" ;; esac
    fi
    echo "| $n | \`$(cat "$work/log/$n.cmd")\` | $1 | $2 | $old |"
  done
  for n in $names; do
    echo
    echo "## $n"
    echo
    sed -n 's/^cplab-exec: \(.*\); trace .*/\1/p' "$work/log/$n.exec.log" | head -1
    echo
    echo "cplab-diff SIM $n.h5 (reference = A):"
    echo
    echo '```'
    sed -n '/^dataset /,$p' "$work/log/$n.agree.log"
    echo '```'
    echo
    echo "cplab-diff --ranks $n.h5:"
    echo
    echo '```'
    sed -n '/^dataset /,$p' "$work/log/$n.ranks.log" | tail -8
    echo '```'
    if [ -f "$work/log/$n.old.log" ]; then
      echo
      echo "cplab-diff OLD/$n.h5 $n.h5 (the goldens these replace = A):"
      echo
      echo '```'
      cat "$work/log/$n.old.log"
      echo '```'
    fi
  done
} >"$stage/provenance.md"

# Into place whole: the old set aside, the new one in, the old one removed
# (not interrupted half-way).
trap '' INT TERM HUP
chmod 755 "$stage"
old=
if [ -e "$out" ]; then old="$out.old.$$"; mv "$out" "$old" || die "cannot move $out aside"; fi
if ! mv "$stage" "$out"; then
  [ -n "$old" ] && mv "$old" "$out"
  die "cannot move the new set to $out"
fi
[ -n "$old" ] && rm -rf "$old"
say "$(echo $names | wc -w) goldens in $out ($(du -sh "$out" | cut -f1)); provenance in $out/provenance.md"
[ $emulated = yes ] && say "EMULATED executor: test data, not GPU goldens"
exit 0
