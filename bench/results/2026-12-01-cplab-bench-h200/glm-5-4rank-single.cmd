./bench/cplab-bench --preset glm-5 --layouts tp4,pcp4,tp4dcp4,pcp4dcp4 --out-tokens 8 --graphs eager,piecewise,full --warmup 2 --prefill 4096,16384,32768 --decode 32768 --reps 10 --check 4
