./bench/cplab-bench --preset glm-5 --layouts tp4,pcp4,tp4dcp4,pcp4dcp4 --out-tokens 8 --graphs eager --warmup 1 --decode 32768 --reps 5 --check 2
