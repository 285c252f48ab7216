#!/bin/sh
# Usage: tools/gen-scenarios.sh N DIR
# Writes N small generated scenarios DIR/gen-NNN.json for agreement runs
# (sim vs exec): each a different seed, parallel layout (TP, PCP, DCP,
# interleave among the valid combinations below) and correct layout plugin,
# with 3 generated steps of 1..4 requests (decodes, prefills, chunked
# prefills) on GLM-5 or DeepSeek-V3.2 shapes (16 heads per rank where DCP
# runs without PCP).
set -eu
n=${1:?count}; dir=${2:?directory}
mkdir -p "$dir"
# tp pcp dcp interleave
combos="1,1,1,1 1,2,1,1 1,2,2,1 1,2,2,64 1,4,4,1 1,4,4,64 2,1,2,1 2,2,2,1 2,2,4,4 1,4,1,64 1,8,8,1 1,8,8,64"
ncombo=$(echo $combos | wc -w)
i=0
while [ $i -lt "$n" ]; do
  c=$(echo $combos | cut -d' ' -f$((i % ncombo + 1)))
  tp=$(echo $c | cut -d, -f1); pcp=$(echo $c | cut -d, -f2); dcp=$(echo $c | cut -d, -f3); il=$(echo $c | cut -d, -f4)
  if [ $((i / ncombo % 2)) -eq 0 ]; then layout=vllm; else layout=block-aligned; fi
  if [ $((i % 3)) -eq 2 ]; then model=deepseek-v3.2; else model=glm-5; fi
  # DCP without PCP runs vLLM's mixed-batch path, which needs fewer than 32
  # heads per rank (FlashMLASparseMetadataBuilder): give those layouts the
  # preset's shapes with 16 heads per rank.
  model_json="\"$model\""
  if [ "$pcp" -eq 1 ] && [ "$dcp" -gt 1 ]; then model_json="{ \"preset\": \"$model\", \"num_heads\": $((16 * tp)) }"; fi
  name=$(printf 'gen-%03d' $i)
  cat >"$dir/$name.json" <<JSON
{
  "cplab_scenario": 1,
  "name": "$name",
  "description": "generated for sim/exec agreement: TP$tp/PCP$pcp/DCP$dcp, interleave $il, $layout, $model",
  "model": $model_json,
  "parallel": { "tp": $tp, "pcp": $pcp, "dcp": $dcp, "interleave": $il, "block_size": 64,
                "max_model_len": 8192, "cudagraph_mode": "FULL_AND_PIECEWISE" },
  "layout": "$layout",
  "seed": $((1000 + i)),
  "check": { "sampled_rows": 8 },
  "workload": { "generator": {
    "steps": 3,
    "requests": { "dist": "uniform", "min": 1, "max": 4 },
    "decode_fraction": 0.4,
    "context": { "dist": "uniform", "min": 1, "max": 4000 },
    "prefill_tokens": { "dist": "uniform", "min": 1, "max": 2000 },
    "chunked_fraction": 0.3 } }
}
JSON
  i=$((i + 1))
done
