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
  --parallel tp2dcp2,pcp2dcp2,tp2pcp2dcp4 --prefill 48 --decode 80 --out-tokens 2 --batch 2 --graphs eager,full \
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
  --parallel pcp2,tp2 --mixed 24+2@70 --graphs piecewise --reps 1 --warmup 0 --check 12
expect_grep "$WORK/err" "rows agree with cplab-exec's" "mixed batches checked against cplab-exec"
# fp8 projections (e4m3 GEMMs): the attention path is the same and still checked; a model
# dimension that is not a multiple of 16 is refused, naming the GEMM.
expect_exit 0 "engine: fp8 projections, TP/DCP and PCP, checked" "$ENGINE" --model-set "$MODEL,index_n_heads=16" \
  --parallel tp2dcp2,pcp2 --prefill 40 --decode 80 --out-tokens 1 --batch 2 --graphs eager,full --reps 1 --check 8 \
  --gemm fp8
n=$(grep -c "rows agree with cplab-exec's" "$WORK/err")
if [ "$n" -eq 8 ]; then pass "fp8: 8 configurations checked against cplab-exec"; else fail "fp8: $n checked, expected 8"; fi
expect_grep "$WORK/out" "projections: fp8" "the report says the projections were fp8"
expect_exit 2 "fp8 with a dimension not a multiple of 16" "$ENGINE" --model-set "$MODEL" --parallel tp1 --prefill 40 \
  --reps 1 --gemm fp8
expect_grep "$WORK/err" "the indexer weights GEMM is 4 x 256" "the GEMM that fp8 cannot run is named"
# Head padding (--head-pad): the first run above padded each rank's heads as production
# does (auto: 64 on sm90; 128 on sm100 and later) and said so; --head-pad none runs the real
# heads. Either way the real heads' attention agrees with cplab-exec's (--check): the
# padding heads, zero-filled, change nothing the check sees.
auto=$(sed -n 's/.*"head_pad": \([0-9]*\).*/\1/p' "$WORK/r.json" | head -1)
if [ "$auto" = 64 ] || [ "$auto" = 128 ]; then pass "auto padding is production's ($auto)"
else fail "auto padding recorded as '$auto'"; fi
expect_grep "$WORK/r.md" "| query heads | padded to a multiple of $auto" "the report header says the heads were padded"
expect_grep "$WORK/r.md" "tp2dcp2 4 → $auto" "the report gives a rank's real and run heads"
expect_grep "$WORK/r.md" "| layout | vllm |" "the report names the layout"
expect_exit 0 "engine: --head-pad none, checked" "$ENGINE" --model-set "$MODEL" --parallel tp2dcp2 --prefill 40 \
  --decode 80 --out-tokens 1 --batch 2 --graphs eager --reps 1 --warmup 0 --check 8 --head-pad none
n=$(grep -c "rows agree with cplab-exec's" "$WORK/err")
if [ "$n" -eq 2 ]; then pass "none: 2 configurations checked"; else fail "none: $n checked, expected 2"; fi
expect_grep "$WORK/out" "| query heads | each rank's real heads, no padding" "the report says no padding"
expect_exit 0 "engine: --head-pad 16 (a DCP group's 8 heads padded too), checked" "$ENGINE" --model-set "$MODEL" \
  --parallel tp2pcp2dcp4 --mixed 24+2@70 --graphs eager --reps 1 --warmup 0 --check 8 --head-pad 16
expect_grep "$WORK/err" "rows agree with cplab-exec's" "16: checked against cplab-exec"
expect_grep "$WORK/err" "heads 4 -> 16" "the progress line gives the padded attention rate"
# Past the kernels' own 64-head blocks (sm100's 128), the engine runs padded copies of the
# queries and results: the same check.
expect_exit 0 "engine: --head-pad 128 (padded copies, the DCP group's too), checked" "$ENGINE" --model-set "$MODEL" \
  --parallel tp2pcp2dcp4 --mixed 24+2@70 --graphs eager --reps 1 --warmup 0 --check 8 --head-pad 128
expect_grep "$WORK/err" "rows agree with cplab-exec's" "128: checked against cplab-exec"
expect_grep "$WORK/err" "heads 4 -> 128" "the progress line gives the padded attention rate"

# --layout NAME: another layout runs on the same kernels and is checked the same way; a
# mutant runs where the executor can run it, with a note; a rank-dependent plan is stopped
# by the executor's plan consensus before any buffer is sized from it.
expect_exit 0 "engine: --layout block-aligned, checked" "$ENGINE" --model-set "$MODEL" --layout block-aligned \
  --parallel pcp2dcp2 --prefill 40 --graphs eager --reps 1 --warmup 0 --check 8 --head-pad none
expect_grep "$WORK/err" "rows agree with cplab-exec's" "block-aligned: checked against cplab-exec"
expect_grep "$WORK/out" "| layout | block-aligned |" "the report names the layout"
expect_exit 0 "engine: a mutant the executor runs" "$ENGINE" --model-set "$MODEL" --layout mutant-bad-deinterleave \
  --parallel pcp2dcp2 --interleave 2 --prefill 40 --graphs eager --reps 1 --warmup 0 --check 4 --head-pad none
expect_grep "$WORK/err" "note: layout mutant-bad-deinterleave is a mutant" "the mutant is said to be one"
expect_grep "$WORK/err" "rows agree with cplab-exec's" "the mutant's rows agree with cplab-exec's (the same host map)"
expect_exit 2 "engine: a rank-dependent plan" "$ENGINE" --model-set "$MODEL" --layout mutant-rank-local-plan \
  --parallel pcp2dcp2 --prefill 41 --graphs eager --reps 1 --warmup 0 --head-pad none
expect_grep "$WORK/err" "derived a different .* than rank 0" "the plan consensus names what differs"
expect_exit 2 "engine: a conversion no kernel expresses" "$ENGINE" --model-set "$MODEL" \
  --layout mutant-prefill-block-bound --parallel pcp2dcp2 --prefill 40 --reps 1
expect_grep "$WORK/err" "layout mutant-prefill-block-bound: its own convert_prefill is no map" "refused by name"
