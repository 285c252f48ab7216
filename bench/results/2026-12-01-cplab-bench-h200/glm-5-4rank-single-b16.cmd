./bench/cplab-bench --preset glm-5 --layouts tp4,pcp4,tp4dcp4,pcp4dcp4 --out-tokens 8 --graphs eager,piecewise,full --warmup 2 --decode 32768 --batch 16 --reps 10 --check 2
