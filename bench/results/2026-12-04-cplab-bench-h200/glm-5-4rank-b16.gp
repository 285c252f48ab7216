# gnuplot script written by cplab-bench: TTFT and TPOT per layout, error bars = 95% interval of the median.
# Data and images are named relative to this script's directory: cd there, then gnuplot glm-5-4rank-b16.gp
# Command: ./bench/cplab-bench --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,tp4dcp4 --decode 32768 --batch 16 -o /tmp/tmp.oQXRjh8Xqy/layers/glm-5-4rank-b16
if (!exists('out_suffix')) out_suffix = ''
png_terminal = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'pngcairo' : 'png'
set grid
set key top left
set logscale x 2
set format x '%g'
set yrange [0:*]

# glm-5-4rank-b16-tpot-eager
set title 'TPOT against context length, graph mode eager (glm-5, NVIDIA H200 (sm_90, 132 SMs))'
set xlabel 'context length (tokens)'
set ylabel 'TPOT (ms)'
eval('set terminal ' . png_terminal . ' size 1000,600')
set termoption noenhanced
set output 'glm-5-4rank-b16-tpot-eager.png' . out_suffix
plot 'glm-5-4rank-b16.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm-5-4rank-b16.dat' index 1 using 1:2:3:4 with yerrorlines title 'tp4dcp4'
unset output
set terminal svg size 1000,600
set termoption noenhanced
set output 'glm-5-4rank-b16-tpot-eager.svg' . out_suffix
plot 'glm-5-4rank-b16.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp4', \
     'glm-5-4rank-b16.dat' index 1 using 1:2:3:4 with yerrorlines title 'tp4dcp4'
unset output
