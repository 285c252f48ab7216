/* sim/numeric.h: the numeric pass of the simulator (--numeric). For one
 * rank, step and layer it computes, in double precision and through the
 * rank's own plan, what the executor's kernels compute on the GPU:
 *
 *   - the rank's caches: every context token it owns (positions below each
 *     request's seq_len), generated and quantised (cplab/kvformat.h) and
 *     written at the slot the slot-mapping kernel computes; slots nobody
 *     wrote read as poison (NaN), as the executor's poisoned memory does;
 *   - the gathered prefill workspace of every chunk: rank-major shards of
 *     each DCP peer's owned tokens, dequantised to bf16, padding rows bf16
 *     NaN (0x7FC0) in every column;
 *   - for each sampled row: the indexer top-k over the row's causal context
 *     (prefill rows read their keys through the layout's de-interleave of the
 *     gathered key shards, decode rows over their request's keys), the
 *     layout's conversion, and sparse MLA attention over what the converted
 *     indices point at: prefill rows over the gathered workspace, decode rows
 *     per DCP shard of the peers' caches followed by the LSE combine; of
 *     rows that go through the combine, the rank's own partial (its shard,
 *     with its heads, and with every DCP member's where they differ).
 *
 * Everything is read through the plan and the layout, never from the
 * single-rank truth, so a layout that maps a token to the wrong row gives a
 * different result here (and tests/unit/test_numeric.c compares with the
 * single-rank result).
 *
 * Sampled rows, gather sources and written slots are the index maps of
 * cplab/maps.h, which the executor applies too; everything per element here
 * is the simulator's own.
 */
#ifndef CPLAB_SIM_NUMERIC_H
#define CPLAB_SIM_NUMERIC_H

#include <stdint.h>

#include "cplab/cli.h"
#include "cplab/error.h"
#include "cplab/plan.h"
#include "cplab/trace.h"

/* Which layers the numeric pass runs. */
typedef struct sim_numeric_opts {
  int enabled;
  cplab_layer_list layers;
} sim_numeric_opts;

/* What one rank computes for one layer of one step. */
typedef struct sim_numeric_layer {
  int layer;
  int64_t rows;          /* sampled rows this rank holds */
  int k;                 /* top-k width (index_topk) */
  int heads;             /* this rank's attention heads: num_heads / tp */
  int64_t *tokens;       /* [rows] local tokens, ascending */
  int32_t *topk;         /* [rows][k] request-relative, -1 = none */
  int32_t *converted;    /* [rows][k] workspace rows (prefill) or slots (decode), -1 = none */
  float *scores;         /* [rows][k] indexer logit of each entry, -inf for -1 */
  float *kth;            /* [rows] k-th best logit, -inf when fewer than k keys */
  int32_t *valid;        /* [rows] valid top-k entries: min(k, keys the row sees) */
  double *out;           /* [rows][heads][512] (stored as float32 in traces) */
  double *lse;           /* [rows][heads] natural log */
  /* This rank's decode partials before the DCP combine (SCHEMA.md
   * attn_partial_out): its shard's attention with each of `blocks` head
   * blocks (cplab_dcp_partial_blocks: its own heads, or every DCP member's);
   * NaN on rows the combine does not see; NULL when no row of the layer is
   * combined. */
  int blocks;
  float *partial_out;    /* [rows][blocks·heads][512], rounded from double */
  float *partial_lse;    /* [rows][blocks·heads] */
  int num_digests;       /* CPLAB_TRACE_DIGEST_WORKSPACE + prefill chunks (cplab/trace.h) */
  uint64_t *digests;     /* see below */
} sim_numeric_layer;



/* The numeric pass of rank plan rp for one layer (rp derived from in). */
int sim_numeric_compute(const cplab_step_input *in, const cplab_rank_plan *rp, int layer, int64_t sampled_rows,
                        sim_numeric_layer *out, cplab_diag *d);
void sim_numeric_layer_free(sim_numeric_layer *l);
/* The per-row arrays of l for l->rows rows of width l->k and l->heads heads. */
int sim_numeric_layer_alloc(sim_numeric_layer *l, cplab_diag *d);

/* Store a layer's results under /steps/SSSSSS/layers/LLL of a rank file. */
int sim_numeric_write(cplab_trace_writer *w, size_t step, const sim_numeric_layer *l, cplab_diag *d);

#endif
