# tests/bench_engine.sh: the checks of cplab-bench's measurement engine,
# sourced by tests/emu/emu_bench.sh (the engine on the emulated kernels) and
# tests/gpu/gpu_bench.sh (on a GPU), after tests/lib.sh, with ENGINE set to
# the program to run. For layouts with DCP inside TP, inside PCP and across
# both, prefill, decode and mixed batches, eager and graph modes and two
# layers per step, every configuration's batched attention path must equal
# cplab-exec's row-by-row pass on the same plans, bit for bit (--check), and
# the results must be written and render again. Timings are not checked.
: "${ENGINE:?set ENGINE}"
BENCH="$top_builddir/bench/cplab-bench"
# A small model of the preset's form (the kernels' fixed dimensions kept).
MODEL=hidden_size=256,q_lora_rank=128,num_heads=8,n_routed_experts=8,n_active_experts=2,moe_intermediate_size=64
MODEL=$MODEL,index_n_heads=4,index_topk=16

expect_exit 0 "engine: 3 layouts x prefill/decode x eager/full, 2 layers, checked" "$ENGINE" --model-set "$MODEL" \
  --layouts tp2dcp2,pcp2dcp2,tp2pcp2dcp4 --prefill 48 --decode 80 --out-tokens 2 --batch 2 --graphs eager,full \
  --reps 2 --warmup 1 --layers 2 --check 16 -o "$WORK/r" --no-plots
sed 's/^/  /' "$WORK/err"
n=$(grep -c "rows agree with cplab-exec's" "$WORK/err")
if [ "$n" -eq 12 ]; then pass "12 configurations measured, each checked against cplab-exec"
else fail "$n configurations checked, expected 12"; fi
for f in r.h5 r.json r.md; do
  if [ -s "$WORK/$f" ]; then pass "$f written"; else fail "$f missing"; fi
done
expect_grep "$WORK/r.md" "Communication was device copies" "the report says communication was device copies"
expect_grep "$WORK/r.md" "| full | decode 1 in / 2 out, ctx 80, batch 2, TPOT ms | pcp2dcp2 |" "a TPOT point under full graphs"
expect_exit 0 "the results file renders again" "$BENCH" --report "$WORK/r.h5"
expect_exit 0 "engine: mixed batches under PCP and TP, piecewise, checked" "$ENGINE" --model-set "$MODEL" \
  --layouts pcp2,tp2 --mixed 24+2@70 --graphs piecewise --reps 1 --warmup 0 --check 12
expect_grep "$WORK/err" "rows agree with cplab-exec's" "mixed batches checked against cplab-exec"
# fp8 projections (e4m3 GEMMs): the attention path is the same and still checked; a model
# dimension that is not a multiple of 16 is refused, naming the GEMM.
expect_exit 0 "engine: fp8 projections, TP/DCP and PCP, checked" "$ENGINE" --model-set "$MODEL,index_n_heads=16" \
  --layouts tp2dcp2,pcp2 --prefill 40 --decode 80 --out-tokens 1 --batch 2 --graphs eager,full --reps 1 --check 8 \
  --gemm fp8
n=$(grep -c "rows agree with cplab-exec's" "$WORK/err")
if [ "$n" -eq 8 ]; then pass "fp8: 8 configurations checked against cplab-exec"; else fail "fp8: $n checked, expected 8"; fi
expect_grep "$WORK/out" "projections: fp8" "the report says the projections were fp8"
expect_exit 2 "fp8 with a dimension not a multiple of 16" "$ENGINE" --model-set "$MODEL" --layouts tp1 --prefill 40 \
  --reps 1 --gemm fp8
expect_grep "$WORK/err" "the indexer weights GEMM is 4 x 256" "the GEMM that fp8 cannot run is named"
