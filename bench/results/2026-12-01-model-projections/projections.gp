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
