# gnuplot script written by cplab-bench: TTFT and TPOT per layout, error bars = 95% interval of the median.
# Data and images are named relative to this script's directory: cd there, then gnuplot dsv32-2gpu-single-fp8.gp
# Command: bench/cplab-bench --preset deepseek-v3.2 --gemm fp8 --layouts tp2,pcp2,tp2dcp2,pcp2dcp2 --prefill 4096,16384 --decode 32768 --out-tokens 8 --graphs eager,piecewise,full --reps 10 --warmup 2 --check 4 -o /tmp/res/dsv32-2gpu-single-fp8 --no-plots
if (!exists('out_suffix')) out_suffix = ''
png_terminal = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'pngcairo' : 'png'
set grid
set key top left
set logscale x 2
set format x '%g'
set yrange [0:*]

# dsv32-2gpu-single-fp8-ttft-eager
set title 'TTFT against prefill tokens, graph mode eager (deepseek-v3.2, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'prefill tokens per request'
set ylabel 'TTFT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-ttft-eager.png' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 1 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 2 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 3 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-ttft-eager.svg' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 1 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 2 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 3 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output

# dsv32-2gpu-single-fp8-tpot-eager
set title 'TPOT against context length, graph mode eager (deepseek-v3.2, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'context length (tokens)'
set ylabel 'TPOT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-tpot-eager.png' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 4 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 5 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 6 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 7 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-tpot-eager.svg' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 4 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 5 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 6 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 7 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output

# dsv32-2gpu-single-fp8-ttft-piecewise
set title 'TTFT against prefill tokens, graph mode piecewise (deepseek-v3.2, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'prefill tokens per request'
set ylabel 'TTFT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-ttft-piecewise.png' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 8 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 9 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 10 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 11 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-ttft-piecewise.svg' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 8 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 9 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 10 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 11 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output

# dsv32-2gpu-single-fp8-tpot-piecewise
set title 'TPOT against context length, graph mode piecewise (deepseek-v3.2, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'context length (tokens)'
set ylabel 'TPOT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-tpot-piecewise.png' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 12 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 13 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 14 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 15 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-tpot-piecewise.svg' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 12 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 13 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 14 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 15 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output

# dsv32-2gpu-single-fp8-tpot-full
set title 'TPOT against context length, graph mode full (deepseek-v3.2, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'context length (tokens)'
set ylabel 'TPOT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-tpot-full.png' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 16 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 17 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 18 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 19 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'dsv32-2gpu-single-fp8-tpot-full.svg' . out_suffix
plot 'dsv32-2gpu-single-fp8.dat' index 16 using 1:2:3:4 with yerrorlines title 'tp2', \
     'dsv32-2gpu-single-fp8.dat' index 17 using 1:2:3:4 with yerrorlines title 'pcp2', \
     'dsv32-2gpu-single-fp8.dat' index 18 using 1:2:3:4 with yerrorlines title 'tp2dcp2', \
     'dsv32-2gpu-single-fp8.dat' index 19 using 1:2:3:4 with yerrorlines title 'pcp2dcp2'
unset output
