# gnuplot script written by cplab-bench: TTFT and TPOT per layout, error bars = 95% interval of the median.
# Data and images are named relative to this script's directory: cd there, then gnuplot glm5-2gpu-nccl-32k.gp
# Command: bench/cplab-bench --backend nccl --preset glm-5 --layouts tp2,pcp2,tp2dcp2,pcp2dcp2 --prefill 32768 --graphs piecewise --reps 6 --warmup 1 --check 2 -o /tmp/res/glm5-2gpu-nccl-32k --no-plots
if (!exists('out_suffix')) out_suffix = ''
png_terminal = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'pngcairo' : 'png'
set grid
set key top left
set logscale x 2
set format x '%g'
set yrange [0:*]

# glm5-2gpu-nccl-32k-ttft-piecewise
set title 'TTFT against prefill tokens, graph mode piecewise (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'prefill tokens per request'
set ylabel 'TTFT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-2gpu-nccl-32k-ttft-piecewise.png' . out_suffix
plot 'glm5-2gpu-nccl-32k.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl-32k.dat' index 1 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl-32k.dat' index 2 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl-32k.dat' index 3 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-2gpu-nccl-32k-ttft-piecewise.svg' . out_suffix
plot 'glm5-2gpu-nccl-32k.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl-32k.dat' index 1 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl-32k.dat' index 2 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl-32k.dat' index 3 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
