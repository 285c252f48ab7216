# cplab-model projections (bench/run-model-projections.sh): cd here && gnuplot projections.gp
set terminal svg size 960,600 dynamic
set logscale x 2
set logscale y 10
set format y '%g'
set grid
set key outside right
set output 'projections-ttft.svg'
set title 'GLM-5 (78 layers) TTFT of one prefill on H200 (nodes of 8), predicted by cplab-model'
set xlabel 'GPUs'; set ylabel 'TTFT (ms)'; set xrange [5:1600]
plot for [ctx in "131072 1048576"] for [v in "pcpN pcpNdcpW tp8 tp8dcpW tp8pcpN tp8pcpNdcpP tp8pcpNdcpW"] \
  sprintf("< awk '$3 == %s && $1 == \"%s\"' scale-prefill.dat", ctx, v) using 2:4 with linespoints pt 7 ps 0.7 title sprintf('%s, %s tokens', v, ctx)
set output 'projections-tpot.svg'
set title 'GLM-5 (78 layers) TPOT on 8 H200 against batch (full graphs), predicted by cplab-model'
set xlabel 'decode rows (batch)'; set ylabel 'TPOT (ms)'; set xrange [0.8:160]
plot for [ctx in "131072 1048576"] for [v in "pcp8dcp8 tp8 tp8dcp8"] \
  sprintf("< awk '$1 == %s && $2 == \"%s\"' dcp-vs-tp.dat", ctx, v) using 3:4 with linespoints pt 7 ps 0.7 title sprintf('%s, %s tokens', v, ctx)
set output 'dsv32-projections-ttft.svg'
set title 'DeepSeek-V3.2 (61 layers) TTFT of one prefill on H200 (nodes of 8), predicted by cplab-model'
set xlabel 'GPUs'; set ylabel 'TTFT (ms)'; set xrange [5:1600]
plot for [ctx in "131072 1048576"] for [v in "pcpN pcpNdcpW tp8 tp8dcpP tp8pcpN tp8pcpNdcpP tp8pcpNdcpW"] \
  sprintf("< awk '$3 == %s && $1 == \"%s\"' dsv32-scale-prefill.dat", ctx, v) using 2:4 with linespoints pt 7 ps 0.7 title sprintf('%s, %s tokens', v, ctx)
set output 'dsv32-projections-tpot.svg'
set title 'DeepSeek-V3.2 (61 layers) TPOT on 8 H200 against batch (full graphs), predicted by cplab-model'
set xlabel 'decode rows (batch)'; set ylabel 'TPOT (ms)'; set xrange [0.8:160]
plot for [ctx in "131072 1048576"] for [v in "pcp8dcp8 tp8 tp8dcp4"] \
  sprintf("< awk '$1 == %s && $2 == \"%s\"' dsv32-dcp-vs-tp.dat", ctx, v) using 3:4 with linespoints pt 7 ps 0.7 title sprintf('%s, %s tokens', v, ctx)
