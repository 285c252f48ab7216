#!/bin/sh
# Usage: bench/run-model-projections.sh BUILD_DIR OUT_DIR
# cplab-model's projections (issue 23 item 3), on any machine (no GPU): GLM-5 and DeepSeek-V3.2, the
# H200 kernel tables of the kernels the tree runs (2026-12-01 and -02: each later table replaces the
# kernels it measured), the parameters calibrated in bench/results/2026-12-01-model-validation,
# shapes outside the tables extrapolated (each row counts its lookups that were), head padding
# auto (64 on h200, 128 on gb200), weights NVFP4 (0.5 B, as the change's runs) for the memory
# columns, 1M contexts through max_position_embeddings raised (the kernels cost the same; GLM-5 was
# trained to 202752, DeepSeek-V3.2 to 163840).
#   table4-h200, table4-gb200  the change's 4-GPU table: tp4, pcp4, tp4dcp4 (its "dcp4"), pcp4dcp4;
#                              32k prefill; decode 1 in / 1024 out; eager, piecewise, full graphs
#   scale-prefill              worlds of 8 to 1024 H200 (nodes of 8) at 128k, 512k and 1M prefill
#   scale-decode-bB            the same worlds decoding at 128k and 1M, batch B = 1, 8, 64
#   dcp-vs-tp-CTX-bB           8 GPUs: tp8 against tp8dcp8 and pcp8dcp8 at batch 1 to 128
# and the same for DeepSeek-V3.2 as dsv32-NAME, where vLLM's rules for DCP without PCP (fewer than
# 32 heads a rank, local and gathered heads padding alike) refuse tp4dcp4 (32 heads a rank) and
# tp8dcp8 (16 heads pad to 64, 128 gathered to 128): its table has no tp4dcp4, its worlds and 8-GPU
# sweep take tp8dcp4 (16 heads, 64 gathered) for tp8dcp8.
# Each run writes OUT_DIR/NAME.txt (the table), NAME.json (every row with its phases, memory and
# tokens a second per GPU; the two computed at once) and NAME.cmd (the command). Then the plots' data,
# from the tables: OUT_DIR/[dsv32-]scale-prefill.dat, [dsv32-]dcp-vs-tp.dat and projections.gp, and
# where gnuplot is installed its SVGs (projections-ttft.svg, projections-tpot.svg and the dsv32-
# pair; without gnuplot a notice, and `cd OUT_DIR && gnuplot projections.gp` later). PLOTS_ONLY=1
# remakes only the plots; PRESETS="glm-5" (or "deepseek-v3.2") runs one model.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
build=$1 out=$2
top=$(cd "$(dirname "$0")/.." && pwd)
prog=$build/model/cplab-model
[ -x "$prog" ] || { echo "$0: $prog not built (make -C $build model/cplab-model)" >&2; exit 2; }
mkdir -p "$out"
R=bench/results
# The kernels' tables, older first: 12-01 (attention, indexer, top-k bins, decode splits), the decode
# logits on wgmma (84ffda5, the tree's: later changes to it were backed out), the DCP pieces
# (gather_idx v1, lse_combine) and gather_idx v2 (68b6a12). Not 2026-12-01-topk-merge-h200: its
# topk_merge is the tree's but its topk_decode is a backed-out version, and a table replaces whole
# kernels, so topk_merge stays topk-bins' measurement (before the merge's staging).
common="--params $R/2026-12-01-model-validation/validation.json --table $R/2026-12-01-kernels-h200/kernels.json \
--table $R/2026-12-01-indexer-kernels-h200/kernels.json --table $R/2026-12-01-topk-bins-h200/kernels.json \
--table $R/2026-12-01-decode-splits-h200/kernels.json --table $R/2026-12-01-indexer-decode-wgmma-h200/kernels.json \
--table $R/2026-12-02-dcp-pieces-h200/kernels.json --table $R/2026-12-02-gather-idx-h200/kernels.json --extrapolate \
--weight-bytes 0.5 --model-set max_position_embeddings=2097152"

run() { # NAME ARGS...: the table and the JSON at once
  name=$1
  shift
  echo "cplab-model $common $*" >"$out/$name.cmd"
  # shellcheck disable=SC2086 # $common is a list of words
  (cd "$top" && "$prog" $common "$@") >"$out/$name.txt" &
  text=$!
  # shellcheck disable=SC2086
  (cd "$top" && "$prog" $common "$@" --json) >"$out/$name.json" &
  json=$!
  failed=0
  wait "$text" || failed=1
  wait "$json" || failed=1
  [ "$failed" = 0 ] || { echo "$0: $name failed" >&2; exit 2; }
  echo "$0: $out/$name.txt" >&2
}

plots() { # PREFIX ("" for GLM-5, "dsv32-")
  pfx=$1
  [ -f "$out/${pfx}scale-prefill.txt" ] || return 0
  # GPUs = tp * pcp of the label; the ms column is the sixth from the end of a row. Families: the
  # label with its PCP size as N; dcpP: DCP over the PCP group, dcpW: over the whole world.
  awk '!/^#/ { l = $1; t = 1; p = 1
    if (match(l, /tp[0-9]+/)) t = substr(l, RSTART + 2, RLENGTH - 2)
    if (match(l, /pcp[0-9]+/)) p = substr(l, RSTART + 3, RLENGTH - 3)
    fam = l; sub(/pcp[0-9]+/, "pcpN", fam); if (fam ~ /dcp/) { sub(/dcp[0-9]+/, (l ~ "dcp" t * p "$") ? "dcpW" : "dcpP", fam) }
    print fam, t * p, $3, $(NF - 5) }' "$out/${pfx}scale-prefill.txt" | LC_ALL=C sort -k3,3n -k1,1 -k2,2n \
    >"$out/${pfx}scale-prefill.dat"
  for f in "$out/${pfx}"dcp-vs-tp-*-b*.txt; do
    b=${f##*-b}; b=${b%.txt}; c=${f##*dcp-vs-tp-}; c=${c%%-*}
    awk -v b="$b" -v c="$c" '!/^#/ { print c, $1, b, $(NF - 5), $(NF - 1) }' "$f"
  done | LC_ALL=C sort -k1,1n -k2,2 -k3,3n >"$out/${pfx}dcp-vs-tp.dat"
  fams=$(awk '{ print $1 }' "$out/${pfx}scale-prefill.dat" | LC_ALL=C sort -u | tr '\n' ' ')
  ls8=$(awk '{ print $2 }' "$out/${pfx}dcp-vs-tp.dat" | LC_ALL=C sort -u | tr '\n' ' ')
  if [ "$pfx" = dsv32- ]; then model="DeepSeek-V3.2 (61 layers)"; else model="GLM-5 (78 layers)"; fi
  # shellcheck disable=SC2016 # awk and gnuplot read the $ fields
  gp_plot "${pfx}projections-ttft.svg" "$model TTFT of one prefill on H200 (nodes of 8)" GPUs 'TTFT (ms)' 5:1600 \
    "${fams% }" '$3 == %s && $1 == \"%s\"' "${pfx}scale-prefill.dat" 2:4
  # shellcheck disable=SC2016
  gp_plot "${pfx}projections-tpot.svg" "$model TPOT on 8 H200 against batch (full graphs)" 'decode rows (batch)' \
    'TPOT (ms)' 0.8:160 "${ls8% }" '$1 == %s && $2 == \"%s\"' "${pfx}dcp-vs-tp.dat" 3:4
}

# One plot: SVG TITLE XLABEL YLABEL XRANGE CURVES SELECT DAT USING; a curve per context and name in
# CURVES, its rows those of DAT that awk's SELECT (formatted with the context and the name) keeps.
gp_plot() {
  cat <<GP
set output '$1'
set title '$2, predicted by cplab-model'
set xlabel '$3'; set ylabel '$4'; set xrange [$5]
plot for [ctx in "131072 1048576"] for [v in "$6"] \\
  sprintf("< awk '$7' $8", ctx, v) using $9 with linespoints pt 7 ps 0.7 title sprintf('%s, %s tokens', v, ctx)
GP
}

render() { # projections.gp from the .dat files, then the SVGs where gnuplot is installed
  {
    cat <<'GP'
# cplab-model projections (bench/run-model-projections.sh): cd here && gnuplot projections.gp
set terminal svg size 960,600 dynamic
set logscale x 2
set logscale y 10
set format y '%g'
set grid
set key outside right
GP
    plots ""
    plots dsv32-
  } >"$out/projections.gp"
  echo "$0: $out/projections.gp" >&2
  if command -v gnuplot >/dev/null 2>&1; then
    (cd "$out" && gnuplot projections.gp) || { echo "$0: gnuplot failed on $out/projections.gp" >&2; exit 2; }
    echo "$0: $out/*projections-*.svg" >&2
  else
    echo "$0: gnuplot is not installed: no SVGs (install gnuplot-nox, then cd $out && gnuplot projections.gp)" >&2
  fi
}
if [ "${PLOTS_ONLY:-0}" = 1 ]; then
  render
  exit 0
fi

glm_worlds=tp8,pcp8,tp8dcp8,pcp8dcp8,tp8pcp2,tp8pcp2dcp2,tp8pcp2dcp16,tp8pcp8,tp8pcp8dcp8,tp8pcp8dcp64,tp8pcp32,\
tp8pcp32dcp32,tp8pcp32dcp256,tp8pcp128,tp8pcp128dcp128,tp8pcp128dcp1024
for preset in ${PRESETS:-glm-5 deepseek-v3.2}; do
  case $preset in
    glm-5) p="" table4=tp4,pcp4,tp4dcp4,pcp4dcp4 worlds=$glm_worlds dcp8=tp8dcp8 ;;
    deepseek-v3.2) p=dsv32- table4=tp4,pcp4,pcp4dcp4 worlds=$(echo "$glm_worlds" | sed 's/tp8dcp8,/tp8dcp4,/') dcp8=tp8dcp4 ;;
    *) echo "$0: PRESETS: unknown preset '$preset' (glm-5, deepseek-v3.2)" >&2; exit 2 ;;
  esac
  run "${p}table4-h200" --preset "$preset" --parallel "$table4" --prefill 32768 --decode 1 --out-tokens 1024 \
    --graphs eager,piecewise,full
  run "${p}table4-gb200" --preset "$preset" --card gb200 --parallel "$table4" --prefill 32768 --decode 1 \
    --out-tokens 1024 --graphs eager,piecewise,full
  run "${p}scale-prefill" --preset "$preset" --parallel "$worlds" --prefill 131072,524288,1048576 --graphs full
  for b in 1 8 64; do
    run "${p}scale-decode-b$b" --preset "$preset" --parallel "$worlds" --decode 131072,1048576 --out-tokens 2 \
      --batch "$b" --graphs full
  done
  for ctx in 131072 1048576; do
    for b in 1 2 4 8 16 32 64 128; do
      run "${p}dcp-vs-tp-$ctx-b$b" --preset "$preset" --parallel "tp8,$dcp8,pcp8dcp8" --decode "$ctx" --out-tokens 2 \
        --batch "$b" --graphs full
    done
  done
done
render
