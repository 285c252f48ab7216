# gnuplot script written by cplab-bench: TTFT and TPOT per layout, error bars = 95% interval of the median.
# Data and images are named relative to this script's directory: cd there, then gnuplot glm5-2gpu-nccl.gp
# Command: bench/cplab-bench --backend nccl --preset glm-5 --layouts tp2,pcp2,tp2dcp2,pcp2dcp2 --prefill 4096,16384 --decode 32768 --out-tokens 8 --graphs eager,piecewise,full --reps 10 --warmup 2 --check 4 -o /tmp/res/glm5-2gpu-nccl --no-plots
if (!exists('out_suffix')) out_suffix = ''
png_terminal = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'pngcairo' : 'png'
set grid
set key top left
set logscale x 2
set format x '%g'
set yrange [0:*]

# glm5-2gpu-nccl-ttft-eager
set title 'TTFT against prefill tokens, graph mode eager (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'prefill tokens per request'
set ylabel 'TTFT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-2gpu-nccl-ttft-eager.png' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 1 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 2 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 3 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-2gpu-nccl-ttft-eager.svg' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 1 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 2 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 3 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output

# glm5-2gpu-nccl-tpot-eager
set title 'TPOT against context length, graph mode eager (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'context length (tokens)'
set ylabel 'TPOT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-2gpu-nccl-tpot-eager.png' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 4 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 5 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 6 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 7 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-2gpu-nccl-tpot-eager.svg' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 4 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 5 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 6 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 7 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output

# glm5-2gpu-nccl-ttft-piecewise
set title 'TTFT against prefill tokens, graph mode piecewise (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'prefill tokens per request'
set ylabel 'TTFT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-2gpu-nccl-ttft-piecewise.png' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 8 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 9 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 10 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 11 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-2gpu-nccl-ttft-piecewise.svg' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 8 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 9 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 10 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 11 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output

# glm5-2gpu-nccl-tpot-piecewise
set title 'TPOT against context length, graph mode piecewise (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'context length (tokens)'
set ylabel 'TPOT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-2gpu-nccl-tpot-piecewise.png' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 12 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 13 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 14 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 15 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-2gpu-nccl-tpot-piecewise.svg' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 12 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 13 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 14 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 15 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output

# glm5-2gpu-nccl-tpot-full
set title 'TPOT against context length, graph mode full (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'context length (tokens)'
set ylabel 'TPOT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-2gpu-nccl-tpot-full.png' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 16 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 17 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 18 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 19 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-2gpu-nccl-tpot-full.svg' . out_suffix
plot 'glm5-2gpu-nccl.dat' index 16 using 1:2:3:4 with yerrorlines title 'tp2', \
     'glm5-2gpu-nccl.dat' index 17 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'glm5-2gpu-nccl.dat' index 18 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'glm5-2gpu-nccl.dat' index 19 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
