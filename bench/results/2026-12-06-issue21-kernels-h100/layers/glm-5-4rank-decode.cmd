./bench/cplab-bench --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,pcp4,tp4dcp4,pcp4dcp4 --decode 32768
