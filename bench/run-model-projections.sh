#!/bin/sh
# Usage: bench/run-model-projections.sh BUILD_DIR OUT_DIR
# cplab-model's projections (issue 23 item 3), on any machine (no GPU): GLM-5, the H200 kernel
# tables of 2026-12-01 and the parameters calibrated in bench/results/2026-12-01-model-validation,
# shapes outside the tables extrapolated (each row counts its lookups that were), weights NVFP4
# (0.5 B, as the change's runs) for the memory columns, 1M contexts through
# max_position_embeddings raised (the kernels cost the same; GLM-5 was trained to 202752).
#   table4-h200, table4-gb200  the change's 4-GPU table: tp4, pcp4, tp4dcp4 (its "dcp4"), pcp4dcp4;
#                              32k prefill; decode 1 in / 1024 out; eager, piecewise, full graphs
#   scale-prefill              worlds of 8 to 1024 H200 (nodes of 8) at 128k, 512k and 1M prefill
#   scale-decode-bB            the same worlds decoding at 128k and 1M, batch B = 1, 8, 64
#   dcp-vs-tp-CTX              8 GPUs: tp8 against tp8dcp8 and pcp8dcp8 at batch 1 to 128
# Each run writes OUT_DIR/NAME.txt (the table) and NAME.json (every row with its phases, memory
# and tokens a second per GPU) and NAME.cmd (the command). Then the plots' data, from the tables:
# OUT_DIR/scale-prefill.dat, dcp-vs-tp.dat and projections.gp (gnuplot renders projections-*.svg
# where it is installed: cd OUT_DIR && gnuplot projections.gp). PLOTS_ONLY=1 remakes only those.
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
common="--params $R/2026-12-01-model-validation/validation.json --table $R/2026-12-01-kernels-h200/kernels.json \
--table $R/2026-12-01-indexer-kernels-h200/kernels.json --table $R/2026-12-01-topk-bins-h200/kernels.json \
--table $R/2026-12-01-decode-splits-h200/kernels.json --table $R/2026-12-02-dcp-pieces-h200/kernels.json --extrapolate --weight-bytes 0.5 \
--model-set max_position_embeddings=2097152"
worlds=tp8,pcp8,tp8dcp8,pcp8dcp8,tp8pcp2,tp8pcp2dcp2,tp8pcp2dcp16,tp8pcp8,tp8pcp8dcp8,tp8pcp8dcp64,tp8pcp32,\
tp8pcp32dcp32,tp8pcp32dcp256,tp8pcp128,tp8pcp128dcp128,tp8pcp128dcp1024

run() { # NAME ARGS...
  name=$1
  shift
  echo "cplab-model $common $*" >"$out/$name.cmd"
  # shellcheck disable=SC2086 # $common is a list of words
  (cd "$top" && "$prog" $common "$@") >"$out/$name.txt"
  (cd "$top" && "$prog" $common "$@" --json) >"$out/$name.json"
  echo "$0: $out/$name.txt" >&2
}

plots() {
  # GPUs = tp * pcp of the label; the ms column is the sixth from the end of a row. Families: the
  # label with its PCP size as N; dcpP: DCP over the PCP group, dcpW: over the whole world.
  awk '!/^#/ { l = $1; t = 1; p = 1
    if (match(l, /tp[0-9]+/)) t = substr(l, RSTART + 2, RLENGTH - 2)
    if (match(l, /pcp[0-9]+/)) p = substr(l, RSTART + 3, RLENGTH - 3)
    fam = l; sub(/pcp[0-9]+/, "pcpN", fam); if (fam ~ /dcp/) { sub(/dcp[0-9]+/, (l ~ "dcp" t * p "$") ? "dcpW" : "dcpP", fam) }
    print fam, t * p, $3, $(NF - 5) }' "$out/scale-prefill.txt" | LC_ALL=C sort -k3,3n -k1,1 -k2,2n >"$out/scale-prefill.dat"
  for f in "$out"/dcp-vs-tp-*-b*.txt; do
    b=${f##*-b}; b=${b%.txt}; c=${f#*dcp-vs-tp-}; c=${c%%-*}
    awk -v b="$b" -v c="$c" '!/^#/ { print c, $1, b, $(NF - 5), $(NF - 1) }' "$f"
  done | LC_ALL=C sort -k1,1n -k2,2 -k3,3n >"$out/dcp-vs-tp.dat"
  cat >"$out/projections.gp" <<'GP'
# cplab-model projections (bench/run-model-projections.sh): cd here && gnuplot projections.gp
set terminal svg size 900,560 dynamic
set logscale xy 2
set grid
set key outside right
set output 'projections-ttft.svg'
set title 'GLM-5 TTFT (78 layers, H200, nodes of 8), predicted by cplab-model'
set xlabel 'GPUs'; set ylabel 'TTFT (ms)'
plot for [ctx in "131072 1048576"] for [fam in "tp8 tp8dcpW pcpN pcpNdcpW tp8pcpN tp8pcpNdcpP tp8pcpNdcpW"]   sprintf("< awk '$3 == %s && $1 == "%s"' scale-prefill.dat", ctx, fam) using 2:4 with linespoints title sprintf('%s, %s tokens', fam, ctx)
set output 'projections-tpot.svg'
set title 'GLM-5 TPOT on 8 H200 against batch, predicted by cplab-model'
set xlabel 'decode rows (batch)'; set ylabel 'TPOT (ms)'
plot for [ctx in "131072 1048576"] for [l in "tp8 tp8dcp8 pcp8dcp8"]   sprintf("< awk '$1 == %s && $2 == "%s"' dcp-vs-tp.dat", ctx, l) using 3:4 with linespoints title sprintf('%s @ %s', l, ctx)
GP
  echo "$0: $out/projections.gp" >&2
}
if [ "${PLOTS_ONLY:-0}" = 1 ]; then
  plots
  exit 0
fi

run table4-h200 --layouts tp4,pcp4,tp4dcp4,pcp4dcp4 --prefill 32768 --decode 1 --out-tokens 1024 \
  --graphs eager,piecewise,full
run table4-gb200 --card gb200 --layouts tp4,pcp4,tp4dcp4,pcp4dcp4 --prefill 32768 --decode 1 --out-tokens 1024 \
  --graphs eager,piecewise,full
run scale-prefill --layouts "$worlds" --prefill 131072,524288,1048576 --graphs full
for b in 1 8 64; do
  run "scale-decode-b$b" --layouts "$worlds" --decode 131072,1048576 --out-tokens 2 --batch "$b" --graphs full
done
for ctx in 131072 1048576; do
  for b in 1 2 4 8 16 32 64 128; do
    run "dcp-vs-tp-$ctx-b$b" --layouts tp8,tp8dcp8,pcp8dcp8 --decode "$ctx" --out-tokens 2 --batch "$b" --graphs full
  done
done
plots
