#!/bin/sh
# Usage (on a GPU node, in a configured and built cplab tree):
#   sh tools/gpu-exec-suite.sh OUT_DIR [N_GENERATED]
# The executor's agreement suite beyond `make check`: N generated scenarios
# (tools/gen-scenarios.sh, default 60) each run by cplab-sim --numeric and
# cplab-exec (single-device backend) and diffed (cplab-diff A B, then
# --ranks on the exec trace); then compute-sanitizer memcheck over the kernel
# tests and an executor run. Writes OUT_DIR/exec-suite.md (a table per
# scenario with the largest errors) and the logs. Exit 1 if anything failed.
# CPLAB_MEMCHECK=0 skips the compute-sanitizer part.
set -u
out=${1:?output directory}; n=${2:-60}
mkdir -p "$out"
work=$(mktemp -d /tmp/cplab-exec-suite.XXXXXX)
sh tools/gen-scenarios.sh "$n" "$work/scen"
fails=0
report="$out/exec-suite.md"
{
  echo "# Executor agreement on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo
  echo "Date $(date -u +%Y-%m-%dT%H:%MZ); tree $(basename "$PWD"); $n generated scenarios (tools/gen-scenarios.sh)."
  echo "Each: \`cplab-sim --numeric\` vs \`cplab-exec\` (single-device backend) through \`cplab-diff\`, then"
  echo "\`cplab-diff --ranks\` on the exec trace."
  echo
  echo "| scenario | layout | result | rows | tie swaps | max abs attn_out | max rel attn_lse | max abs scores |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$report"
# The simulator side in parallel (CPU), the executor one at a time (one GPU).
ls "$work"/scen/*.json | xargs -P "$(nproc)" -I{} sh -c \
  './cplab-sim --scenario {} --numeric -q -o "$(dirname {})/$(basename {} .json)-sim.h5" 2>>"$(dirname {})/sim.err"'
for f in "$work"/scen/*.json; do
  b="$work/scen/$(basename "$f" .json)"
  desc=$(sed -n 's/.*"description": "generated for sim\/exec agreement: \(.*\)",/\1/p' "$f")
  if ! ./cplab-exec --scenario "$f" -q -o "$b-exec.h5" 2>"$b.exec.err"; then
    echo "| $(basename "$f" .json) | $desc | exec FAILED: $(tail -1 "$b.exec.err") | | | | | |" >>"$report"
    fails=$((fails + 1)); continue
  fi
  ./cplab-diff --json "$b-sim.h5" "$b-exec.h5" >"$b.diff.json" 2>"$b.diff.err"; rc=$?
  ./cplab-diff --ranks -q "$b-exec.h5" >/dev/null 2>&1; rrc=$?
  row=$(python3 - "$b.diff.json" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    print("| | | | |"); sys.exit()
ds = {d["dataset"]: d for d in j.get("datasets", [])}
g = lambda n, k: ds.get(n, {}).get(k, 0)
print("| %d | %d | %.3g | %.3g | %.3g |" % (g("sampled_tokens", "compared"), g("topk", "tie_swaps"),
      g("attn_out", "max_abs"), g("attn_lse", "max_rel"), g("topk_scores", "max_abs")))
PY
)
  if [ $rc -eq 0 ] && [ $rrc -eq 0 ]; then res=agree; else res="DIFFER (diff $rc, ranks $rrc)"; fails=$((fails + 1)); cp "$b.diff.json" "$out/"; fi
  echo "| $(basename "$f" .json) | $desc | $res $row" >>"$report"
done
echo >>"$report"
echo "$fails of $n scenarios failed." >>"$report"
# Memory checking of the kernels and of an executor run.
if [ "${CPLAB_MEMCHECK:-1}" != 0 ] && command -v compute-sanitizer >/dev/null 2>&1; then
  echo >>"$report"; echo "## compute-sanitizer memcheck" >>"$report"; echo >>"$report"
  for t in tests/gpu/test_gpu_gen tests/gpu/test_gpu_convert "./cplab-exec --scenario smoke -q" \
           tests/gpu/test_gpu_indexer tests/gpu/test_gpu_attention; do
    timeout 120 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $t >"$out/memcheck-$(echo $t | tr ' /' '__').log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY" "$out/memcheck-$(echo $t | tr ' /' '__').log" | tail -1)
    echo "- \`$t\`: exit $rc; ${summary:-no summary (timeout?)}" >>"$report"
    [ $rc -eq 0 ] || fails=$((fails + 1))
  done
fi
cat "$report"
rm -rf "$work"
[ $fails -eq 0 ]
