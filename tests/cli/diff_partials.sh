#!/bin/sh
# The decode partials of schema 1.2 end to end: cplab-sim --numeric stores
# each rank's partials of the rows that go through the DCP combine, and
# cplab-diff --ranks combines the DCP members' partials again and finds each
# rank's attention (partial-combine). smoke (TP1/PCP2/DCP2) has one head
# block, a TP2/DCP2 scenario one per DCP member's heads. Traces with one
# partial altered in place (trace_poke, no h5py needed) fail, naming step,
# layer, rank and token.
. "$top_srcdir/tests/lib.sh"
DIFF="$top_builddir/cplab-diff"
POKE="$top_builddir/tests/cli/trace_poke"
L=steps/000001/layers/000

expect_exit 0 "smoke: sim --numeric" "$SIM" --scenario smoke --numeric -q -o "$WORK/smoke.h5"
expect_exit 0 "smoke: the trace validates" "$top_builddir/cplab-trace" validate "$WORK/smoke.h5"
expect_exit 0 "smoke: --ranks holds" "$DIFF" --ranks "$WORK/smoke.h5"
expect_grep "$WORK/out" "^partial combine  *[1-9][0-9]*  *0 " "smoke: the decode rows' partials are recombined"
expect_exit 0 "smoke: --ranks --junit" "$DIFF" --ranks --junit "$WORK/smoke.xml" "$WORK/smoke.h5"
expect_grep "$WORK/smoke.xml" 'classname="smoke.step1" name="partial-combine"' "smoke: partial-combine is a JUnit case"
expect_grep "$WORK/smoke.xml" 'classname="smoke.step1" name="partial-combine"/>' "smoke: and passes in a step with decodes"
expect_grep "$WORK/smoke.xml" '<skipped message="not checked: no decode partials stored in this step' \
  "smoke: a step without decode rows (step 0) skips it"

# The tolerance comes from the policy (partial_combine): with none, the float
# rounding of the stored partials alone breaks the invariant.
printf '{"partial_combine": {"atol": 0, "rtol": 0}}\n' >"$WORK/zero.json"
expect_exit 1 "smoke: partial_combine 0 in --policy" "$DIFF" --ranks --policy "$WORK/zero.json" "$WORK/smoke.h5"
expect_grep "$WORK/out" "^partial-combine: step 1 layer 0 rank 0 local token 0 " "smoke: the rounding shows without a tolerance"
printf '{"partial_combin": {"atol": 0}}\n' >"$WORK/typo.json"
expect_exit 2 "a misspelt policy key" "$DIFF" --ranks --policy "$WORK/typo.json" "$WORK/smoke.h5"
expect_grep "$WORK/err" "'partial_combin' is neither a tensor of the trace schema nor partial_combine" "names it"

# Rank 1's partial of its first row (a decode, local token 0 on both ranks):
# both ranks combine it, so both ranks' rows fail.
mkdir -p "$WORK/out1" && cp "$WORK"/smoke.*h5 "$WORK/out1/"
expect_exit 0 "tamper: rank 1's partial output of a decode row" "$POKE" add "$WORK/out1/smoke.r0001.h5" \
  "$L/attn_partial_out" 0 0.5
expect_exit 1 "tamper: --ranks sees it" "$DIFF" --ranks "$WORK/out1/smoke.h5"
expect_grep "$WORK/out" "^partial-combine: step 1 layer 0 rank 0 local token 0 (global token [0-9]*) head 0: the LSE combine of DCP ranks 0,1's stored partials gives .*, attn_out column 0 holds" \
  "tamper: rank 0's row is named, with head and column"
expect_grep "$WORK/out" "^partial-combine: step 1 layer 0 rank 1 local token 0 " "tamper: and rank 1's"
expect_grep "$WORK/out" "^partial combine  *[0-9]*  *2 " "tamper: two rows differ"
grep -q "^decode-combine\|^replicated-rows" "$WORK/out" && fail "tamper: only partial-combine fires" ||
  pass "tamper: only partial-combine fires"

# A partial lse: the combine weighs the shard otherwise.
mkdir -p "$WORK/lse" && cp "$WORK"/smoke.*h5 "$WORK/lse/"
expect_exit 0 "tamper: rank 0's partial lse of head 3" "$POKE" add "$WORK/lse/smoke.r0000.h5" "$L/attn_partial_lse" 3 1
expect_exit 1 "tamper: --ranks sees the lse" "$DIFF" --ranks "$WORK/lse/smoke.h5"
expect_grep "$WORK/out" "^partial-combine: step 1 layer 0 rank 0 local token 0 (global token [0-9]*) head 3: .*attn_lse holds" \
  "tamper: named as the lse of head 3"

# Rows the combine does not see (step 1's last row is a gathered prefill) hold NaN.
mkdir -p "$WORK/nan" && cp "$WORK"/smoke.*h5 "$WORK/nan/"
expect_exit 0 "tamper: a partial on a prefill row" "$POKE" set "$WORK/nan/smoke.r0000.h5" "$L/attn_partial_lse" 320 0
expect_exit 1 "tamper: --ranks sees it" "$DIFF" --ranks "$WORK/nan/smoke.h5"
expect_grep "$WORK/out" "^partial-combine: step 1 layer 0 rank 0 local token [0-9]* (global token [0-9]*): the combine does not see this row, yet it holds a partial" \
  "tamper: a non-combined row must be NaN"

# TP2/DCP2 (vLLM's classic DCP): the members hold different heads, so each
# stores its shard's partial for both members' heads (block o = member o's).
cat >"$WORK/tp2dcp2.json" <<'JSON'
{ "cplab_scenario": 1, "name": "tp2dcp2", "model": { "preset": "glm-5", "num_heads": 32, "index_topk": 512 },
  "parallel": { "tp": 2, "pcp": 1, "dcp": 2, "interleave": 1, "block_size": 64, "max_model_len": 8192,
                "cudagraph_mode": "FULL_AND_PIECEWISE" },
  "layout": "vllm", "seed": 23, "check": { "sampled_rows": 6 },
  "workload": { "generator": { "steps": 2, "requests": { "dist": "uniform", "min": 1, "max": 4 },
    "decode_fraction": 0.4, "context": { "dist": "uniform", "min": 1, "max": 3000 },
    "prefill_tokens": { "dist": "uniform", "min": 1, "max": 1500 }, "chunked_fraction": 0.3 } } }
JSON
mkdir -p "$WORK/t"
expect_exit 0 "tp2dcp2: sim --numeric" "$SIM" --scenario "$WORK/tp2dcp2.json" --numeric -q -o "$WORK/t/tp2dcp2.h5"
expect_exit 0 "tp2dcp2: --ranks holds" "$DIFF" --ranks "$WORK/t/tp2dcp2.h5"
expect_grep "$WORK/out" "^partial combine  *[1-9][0-9]*  *0 " "tp2dcp2: every row's partials are recombined"
# Rank 1's block 0 (rank 0's heads) enters rank 0's combine only.
expect_exit 0 "tamper: rank 1's partial for rank 0's heads" "$POKE" add "$WORK/t/tp2dcp2.r0001.h5" \
  steps/000000/layers/000/attn_partial_out 0 0.5
expect_exit 1 "tamper: --ranks sees it" "$DIFF" --ranks "$WORK/t/tp2dcp2.h5"
expect_grep "$WORK/out" "^partial-combine: step 0 layer 0 rank 0 local token [0-9]* (global token [0-9]*) head 0: " \
  "tamper: rank 0's row is named"
grep -q "^partial-combine: step 0 layer 0 rank 1 " "$WORK/out" && fail "tamper: rank 1 combines its own block 1" ||
  pass "tamper: rank 1 combines its own block 1, untouched"

expect_exit 2 "trace_poke: no such dataset" "$POKE" add "$WORK/smoke.r0000.h5" steps/000000/none 0 1
finish
