./bench/cplab-bench --preset glm-5 --layouts tp4,pcp4,pcp4dcp4 --graphs eager --warmup 1 --prefill 32768 --reps 5 --check 2
