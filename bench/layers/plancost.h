/* bench/layers/plancost.h: the work one rank's plan asks of it in one layer
 * of one step, counted from the plan (not measured): query tokens, GEMM
 * FLOP of the synthetic decoder layer, indexer (query, key) pairs, sparse
 * attention FLOP and the bytes of every collective by purpose.
 *
 * cplab-bench prints it with --dry-run (no GPU needed), and its progress
 * line divides it by the measured phase times (achieved TFLOPS per phase). The rules, chosen to match what
 * the executor and a serving engine run (shared/reference/perf-anchors.md §7):
 *   - projections: the fused q_a/kv_a and the indexer's wq_b/wk/weights are
 *     replicated over TP (every TP rank computes them for its tokens); q_b,
 *     W_UK absorption, W_UV and o_proj are split over TP heads;
 *   - MoE: experts sharded over the TP×PCP ranks (S = tp·pcp shards); a
 *     row's top-k experts land on a shard k/S times on average, the shared
 *     expert's intermediate is split S ways; the rows a rank's MoE processes
 *     are the P·padded gathered rows on the general path, its own local rows
 *     on the fast path (plan: sched.moe_fast_path);
 *   - indexer: a prefill token at position p scores keys 0..p (the gathered
 *     keys under DCP); a decode token scores the keys this DCP rank holds
 *     (local_len of its request: local top-k, then the exact merge);
 *   - attention: a prefill token attends min(topk, p + 1) rows with the
 *     rank's H/T heads; a decode token attends its DCP shard's share of
 *     min(topk, seq_len) rows (1/D of them) with the heads of every TP rank
 *     its DCP group spans ((H/T)·min(D, T)): the partials of the group;
 *   - FLOP per attended row and head: 2·(576 + 512) (scores and values);
 *     attn_flop counts the real heads, attn_flop_run also the padding heads
 *     the kernels run (cplab_bench_work_pad: FlashMLA pads the query heads
 *     to 64 on sm90 and 128 on sm100, and vLLM runs it so). */
#ifndef CPLAB_BENCH_PLANCOST_H
#define CPLAB_BENCH_PLANCOST_H

#include <stdint.h>

#include "cplab/error.h"
#include "cplab/plan.h"

typedef struct cplab_bench_work {
  int64_t tokens, prefill_tokens, decode_tokens; /* local query tokens */
  int64_t moe_rows;                               /* rows through this rank's experts */
  double proj_flop;    /* attention and indexer projections */
  double moe_flop;     /* router, routed experts (expected), shared slice */
  double indexer_pairs, indexer_flop, logits_bytes;
  double prefill_pairs, decode_pairs; /* indexer_pairs of prefill rows (causal) and of decode rows (own keys) */
  double prefill_keys; /* indexer keys gathered in logical order for the prefill rows (each row's context) */
  double attn_rows;    /* attended (query, row) pairs summed over query tokens */
  /* attn_rows split by kernel: prefill rows over the workspace with the rank's
   * H/T heads, and rows on the decode path (decode rows, and prefill rows of
   * DCP without PCP) with the DCP group's heads. cplab-model looks each up in
   * its own kernel's cost table. */
  double attn_prefill_rows, attn_decode_rows;
  double attn_flop;     /* the real heads' */
  double attn_flop_run; /* with the padding heads the kernels also run (cplab_bench_work_pad); attn_flop without */
  double comm_bytes[CPLAB_CW_COUNT]; /* bytes this rank contributes, per purpose */
} cplab_bench_work;

/* Query heads of a rank's attention calls: its own (num_heads / tp: the
 * prefill rows) and its DCP group's (the decode path: times min(D, T)), real
 * and as run with head padding pad (0: none; N: rounded up to a multiple of
 * N, as FlashMLA pads them). */
typedef struct cplab_bench_heads {
  int pad;
  int real, run;             /* a rank's own */
  int group_real, group_run; /* its DCP group's */
} cplab_bench_heads;
void cplab_bench_heads_of(const cplab_model *m, const cplab_parallel *par, int pad, cplab_bench_heads *out);

/* w->attn_flop_run for head padding pad: the attended rows of each kernel
 * (attn_prefill_rows, attn_decode_rows) times its padded heads. */
void cplab_bench_work_pad(cplab_bench_work *w, const cplab_model *m, const cplab_parallel *par, int pad);

/* The work of rank plan p for one layer (collectives: the plan's list, one
 * layer's worth plus the step's output gather). */
int cplab_bench_work_of(const cplab_step_input *in, const cplab_rank_plan *p, cplab_bench_work *out, cplab_diag *d);

/* Sum of the collective bytes. */
double cplab_bench_work_comm_total(const cplab_bench_work *w);

#endif
