#!/bin/sh
# Usage: bench/run-gpu-kernels.sh [BUILD_DIR [OUT_DIR]] [ARGS...]
# cplab-kernel-bench (bench/README.md) on GPU 0 with its PyTorch peer, as
# bench/results/DATE-kernels-h200/ was made: the cases the program selects
# with ARGS (default: its default set, the attention kernels' and the indexer
# path's; e.g. --case 'fm-*', --kernel indexer_logits_prefill,topk_prefill or
# --all) go to bench/kernel_peer.py, which times the peer; then the program
# checks and times the kernels, measures the ceilings and reads the peer's
# file. Writes
# OUT_DIR (default bench/results/DATE-kernels-CARD, CARD h200 on an H200):
#   README.md     card, date, commit, the commands, and the table
#   kernels.json  the program's results, one entry per case with its peer
#   stdout.txt    the program's table; stderr.txt its progress lines
#   cases.json    the cases given to the peer; peer.json its results and
#                 peer.txt its progress (or why there is no peer)
# BUILD_DIR: default the tree itself if it was configured in place, else
# ./build (`make -j16 && make -j16 bench` there builds the program). Without
# PyTorch (or without a GPU for it) the peer is skipped with a message and
# the program runs without one. The peer gets PEER_TIMEOUT s (default 200),
# the program KERNEL_TIMEOUT s (default 360): enough for the default set
# (not yet measured with the indexer path's 24 cases; raise them, or run the
# kernels in two calls with --kernel, if a run is cut short: both files are
# rewritten after every case, so what was measured stays). Exit status: the program's
# (0 ok, 1 a check failed, 2 an error; 2 also when it ran out of time).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cmdline="bench/run-gpu-kernels.sh $*"
build='' out=''
case ${1:-} in '' | -*) ;; *) build=$1 && shift ;; esac
case ${1:-} in '' | -*) ;; *) out=$1 && shift ;; esac
if [ -z "$build" ]; then
  if [ -x "$top/bench/cplab-kernel-bench" ]; then build=$top; else build=$top/build; fi
fi
. "$top/bench/gpu-run-env.sh"
gpu_program "$build" cplab-kernel-bench

card=$(nvidia-smi -i 0 --query-gpu=name --format=csv,noheader 2>/dev/null || echo unknown)
case $card in *H200*) tag=h200 ;; *H100*) tag=h100 ;; *B200*) tag=b200 ;; *) tag=gpu ;; esac
day=$(date -u +%Y-%m-%d)
out=${out:-$top/bench/results/$day-kernels-$tag}
mkdir -p "$out"
# The commit of the sources (+dirty when tracked files differ from it); without
# git (a copied tree) the program records configure's.
commit=''
if commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null); then
  git -C "$top" diff --quiet HEAD 2>/dev/null || commit=$commit+dirty
fi
# The peer repeats what the program does: the same repetitions and warm-up.
reps=30 warmup=5 prev=''
for a in "$@"; do
  case $prev in --reps) reps=$a ;; --warmup) warmup=$a ;; esac
  case $a in --reps=*) reps=${a#--reps=} ;; --warmup=*) warmup=${a#--warmup=} ;; esac
  prev=$a
done

"$prog" --list-json "$out/cases.json" "$@"
ncases=$(grep -c '"case":' "$out/cases.json" || true)
echo "$0: $ncases cases; results in $out"

PY=${PYTHON:-python3}
peer_cmd="$PY $top/bench/kernel_peer.py --cases $out/cases.json -o $out/peer.json --reps $reps --warmup $warmup"
peer_status=''
rm -f "$out/peer.json"
if ! command -v "$PY" >/dev/null 2>&1; then
  peer_status="no peer: $PY not found"
elif ! why=$("$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else "torch sees no CUDA device")' 2>&1); then
  peer_status="no peer: PyTorch is not usable here ($(echo "$why" | tail -1))"
else
  rc=0
  # shellcheck disable=SC2086 # $peer_cmd is a command line
  timeout "${PEER_TIMEOUT:-200}" $peer_cmd >"$out/peer.txt" 2>&1 || rc=$?
  version=$(sed -n 's/^ *"version": "\([^"]*\)".*/PyTorch \1/p' "$out/peer.json" 2>/dev/null | head -1)
  if [ "$rc" -eq 0 ] && [ -s "$out/peer.json" ]; then
    peer_status="peer: $version"
  elif [ -s "$out/peer.json" ]; then # written after every case: what it measured before it stopped
    peer_status="peer: $version, cut short (exit $rc; 124: over ${PEER_TIMEOUT:-200} s): the cases it reached, see peer.txt"
  else
    peer_status="no peer: kernel_peer.py failed (exit $rc), see peer.txt"
  fi
fi
[ -e "$out/peer.txt" ] || echo "$peer_status" >"$out/peer.txt"
echo "$0: $peer_status"

set -- --json "$out/kernels.json" "$@"
[ -s "$out/peer.json" ] && set -- --peer "$out/peer.json" "$@"
[ -n "$commit" ] && set -- --commit "$commit" "$@"
rc=0
timeout "${KERNEL_TIMEOUT:-360}" "$prog" "$@" >"$out/stdout.txt" 2>"$out/stderr.txt" || rc=$?
cat "$out/stdout.txt"
tail -5 "$out/stderr.txt" >&2

smi=$(nvidia-smi -i 0 --query-gpu=name,driver_version,clocks.max.sm,clocks.mem,power.limit --format=csv,noheader 2>/dev/null ||
  echo "(nvidia-smi not available)")
{
  echo "# cplab-kernel-bench on $card, $day"
  echo
  echo "- card: $smi (name, driver, max SM clock, memory clock, power limit)"
  echo "- date (UTC): $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- commit: ${commit:-as configure saw it, see kernels.json}"
  echo "- command: \`$cmdline\`"
  echo "- program: \`$prog $*\` (exit $rc)"
  echo "- peer: $peer_status; \`$peer_cmd\`"
  echo
  echo "Files: kernels.json (one entry per case with its check, times, rates, ceilings ratios and peer),"
  echo "stdout.txt (the table below), stderr.txt (progress), cases.json and peer.json (the PyTorch peer), peer.txt."
  echo "Conventions: bench/README.md (cplab-kernel-bench)."
  echo
  echo '```'
  cat "$out/stdout.txt"
  echo '```'
} >"$out/README.md"
echo "wrote $out/README.md, kernels.json, stdout.txt, stderr.txt, peer.txt"
case $rc in
  0 | 1) exit "$rc" ;;
  124)
    echo "$0: cplab-kernel-bench ran over ${KERNEL_TIMEOUT:-360} s" >&2
    exit 2 ;;
  *) exit 2 ;;
esac
