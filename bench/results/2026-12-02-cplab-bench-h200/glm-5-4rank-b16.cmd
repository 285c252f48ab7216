./bench/cplab-bench --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --parallel tp4,tp4dcp4 --graphs eager,full --decode 32768 --batch 16
