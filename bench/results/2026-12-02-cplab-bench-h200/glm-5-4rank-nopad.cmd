./bench/cplab-bench --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --parallel tp4,pcp4 --graphs eager --prefill 32768 --head-pad none
