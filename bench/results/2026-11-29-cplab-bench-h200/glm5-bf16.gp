# gnuplot script written by cplab-bench: TTFT and TPOT per layout, error bars = 95% interval of the median.
# Data and images are named relative to this script's directory: cd there, then gnuplot glm5-bf16.gp
# Command: bin/cplab-bench --preset glm-5 --layouts tp4,pcp4,tp4dcp4,pcp4dcp4 --prefill 4096,16384 --decode 32768 --out-tokens 8 --graphs eager,full --reps 10 --warmup 2 --check 4 -o /tmp/results/glm5-bf16 --no-plots
if (!exists('out_suffix')) out_suffix = ''
png_terminal = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'pngcairo' : 'png'
set grid
set key top left
set logscale x 2
set format x '%g'
set yrange [0:*]

# glm5-bf16-ttft-eager
set title 'TTFT against prefill tokens, graph mode eager (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'prefill tokens per request'
set ylabel 'TTFT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-bf16-ttft-eager.png' . out_suffix
plot 'glm5-bf16.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm5-bf16.dat' index 1 using 1:2:3:4 with yerrorlines title 'pcp4', \
     'glm5-bf16.dat' index 2 using 1:2:3:4 with yerrorlines title 'tp4dcp4', \
     'glm5-bf16.dat' index 3 using 1:2:3:4 with yerrorlines title 'pcp4dcp4'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-bf16-ttft-eager.svg' . out_suffix
plot 'glm5-bf16.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm5-bf16.dat' index 1 using 1:2:3:4 with yerrorlines title 'pcp4', \
     'glm5-bf16.dat' index 2 using 1:2:3:4 with yerrorlines title 'tp4dcp4', \
     'glm5-bf16.dat' index 3 using 1:2:3:4 with yerrorlines title 'pcp4dcp4'
unset output

# glm5-bf16-tpot-eager
set title 'TPOT against context length, graph mode eager (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'context length (tokens)'
set ylabel 'TPOT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-bf16-tpot-eager.png' . out_suffix
plot 'glm5-bf16.dat' index 4 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm5-bf16.dat' index 5 using 1:2:3:4 with yerrorlines title 'pcp4', \
     'glm5-bf16.dat' index 6 using 1:2:3:4 with yerrorlines title 'tp4dcp4', \
     'glm5-bf16.dat' index 7 using 1:2:3:4 with yerrorlines title 'pcp4dcp4'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-bf16-tpot-eager.svg' . out_suffix
plot 'glm5-bf16.dat' index 4 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm5-bf16.dat' index 5 using 1:2:3:4 with yerrorlines title 'pcp4', \
     'glm5-bf16.dat' index 6 using 1:2:3:4 with yerrorlines title 'tp4dcp4', \
     'glm5-bf16.dat' index 7 using 1:2:3:4 with yerrorlines title 'pcp4dcp4'
unset output

# glm5-bf16-ttft-full
set title 'TTFT against prefill tokens, graph mode full (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'prefill tokens per request'
set ylabel 'TTFT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-bf16-ttft-full.png' . out_suffix
plot 'glm5-bf16.dat' index 8 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm5-bf16.dat' index 9 using 1:2:3:4 with yerrorlines title 'pcp4', \
     'glm5-bf16.dat' index 10 using 1:2:3:4 with yerrorlines title 'tp4dcp4', \
     'glm5-bf16.dat' index 11 using 1:2:3:4 with yerrorlines title 'pcp4dcp4'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-bf16-ttft-full.svg' . out_suffix
plot 'glm5-bf16.dat' index 8 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm5-bf16.dat' index 9 using 1:2:3:4 with yerrorlines title 'pcp4', \
     'glm5-bf16.dat' index 10 using 1:2:3:4 with yerrorlines title 'tp4dcp4', \
     'glm5-bf16.dat' index 11 using 1:2:3:4 with yerrorlines title 'pcp4dcp4'
unset output

# glm5-bf16-tpot-full
set title 'TPOT against context length, graph mode full (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'context length (tokens)'
set ylabel 'TPOT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm5-bf16-tpot-full.png' . out_suffix
plot 'glm5-bf16.dat' index 12 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm5-bf16.dat' index 13 using 1:2:3:4 with yerrorlines title 'pcp4', \
     'glm5-bf16.dat' index 14 using 1:2:3:4 with yerrorlines title 'tp4dcp4', \
     'glm5-bf16.dat' index 15 using 1:2:3:4 with yerrorlines title 'pcp4dcp4'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm5-bf16-tpot-full.svg' . out_suffix
plot 'glm5-bf16.dat' index 12 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm5-bf16.dat' index 13 using 1:2:3:4 with yerrorlines title 'pcp4', \
     'glm5-bf16.dat' index 14 using 1:2:3:4 with yerrorlines title 'tp4dcp4', \
     'glm5-bf16.dat' index 15 using 1:2:3:4 with yerrorlines title 'pcp4dcp4'
unset output
