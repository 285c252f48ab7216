/* sim/moe_ref.h: a small synthetic MoE block and its two PCP communication
 * paths (shared/reference/vllm-pcp-dcp.md §8), in double precision:
 *   general: all-gather the rows of every PCP rank, each rank applies its
 *            expert shard to all of them, reduce-scatter back to the owners;
 *   fast:    every row is replicated, so each rank applies its shard to its
 *            own rows and the partial outputs are all-reduced.
 * Collectives are simulated in rank order. Experts are sharded round-robin
 * over the P ranks (expert e on rank e mod P); a row goes to its top_k
 * experts by router logit, weighted by the softmax over those top_k. */
#ifndef CPLAB_SIM_MOE_REF_H
#define CPLAB_SIM_MOE_REF_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_moe {
  int dim, experts, top_k;
  const double *router;  /* [experts][dim] */
  const double *weights; /* [experts][dim][dim] */
} sim_moe;

/* The unsharded block over n rows (in [n][dim]) into out [n][dim]. */
void sim_moe_forward(const sim_moe *m, const double *in, size_t n, double *out);

/* Rank r's partial output for rows: only the experts it holds. */
void sim_moe_partial(const sim_moe *m, int P, int r, const double *in, size_t n, double *out);

/* General path: rows[r] ([counts[r]][dim]) on each of P ranks; out[r] gets
 * rank r's rows back after the reduce-scatter. */
void sim_moe_general(const sim_moe *m, int P, const double *const *rows, const size_t *counts, double **out);

/* Fast path: every rank holds the same n rows; out[r] after the all-reduce. */
void sim_moe_fast(const sim_moe *m, int P, const double *rows, size_t n, double **out);

#endif
