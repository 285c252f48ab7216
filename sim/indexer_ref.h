/* sim/indexer_ref.h: the simulator's reference of the lightning indexer
 * (shared/reference/vllm-pcp-dcp.md §6), in double precision over the exact
 * fp8 values: per-head fp8 queries with power-of-two scales and folded
 * weights, logits  sum_h w'[h] · ReLU(q̂[h] · k̂[n]) · s_k[n]  over keys in
 * [ks, ke), and top-k with a documented tie rule. */
#ifndef CPLAB_SIM_INDEXER_REF_H
#define CPLAB_SIM_INDEXER_REF_H

#include <stdint.h>

#include "cplab/error.h"
#include "cplab/kvformat.h"

/* One query token of the indexer. */
typedef struct sim_indexer_query {
  int heads;
  uint8_t q[64][CPLAB_IDX_DIM]; /* e4m3 bytes per head (at most 64 heads) */
  float scale[64];              /* power-of-two scale per head */
  double weight[64];            /* w'[h] = w[h] · s_q[h] · 128^-1/2 · heads^-1/2 */
} sim_indexer_query;

/* The query of the token at position of request, from the Philox stream
 * (CPLAB_TENSOR_INDEX_Q; head weights from its auxiliary stream, in (0, 1]). */
int sim_indexer_query_make(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position, int heads,
                           sim_indexer_query *out, cplab_diag *d);

/* Logit of one key entry (132 bytes: 128 e4m3 + fp32 scale). */
double sim_indexer_logit(const sim_indexer_query *q, const uint8_t key[CPLAB_IDX_ENTRY_BYTES]);

/* The same logit and, in *mag, its magnitude sum |s_k| · sum_h |w'_h| ·
 * sum_c |q_hc · k_c|: what a tensor core's accumulation error scales with
 * (tests/gpu/test_gpu_indexer.c's bound). One pass over the products. */
double sim_indexer_logit_mag(const sim_indexer_query *q, const uint8_t key[CPLAB_IDX_ENTRY_BYTES], double *mag);

/* A logit and its key index; the order of top-k: a higher logit first,
 * equal logits by the lower index, a NaN logit (a read of poison) first of
 * all so that it shows (qsort comparator). */
typedef struct sim_scored {
  double s;
  int64_t i;
} sim_scored;
int sim_indexer_by_score(const void *a, const void *b);

/* Top-k over keys[0 .. n) (the keys of [ks, ke), in logical order):
 * out[0 .. k) holds request-relative indices (key index), best first, -1
 * where fewer than k keys exist. Tie rule: a higher logit first; equal logits
 * by the lower index. scores[j] is the logit of out[j] (-inf for -1);
 * *kth is the k-th best logit (-inf when n < k), which tie-tolerant
 * comparisons use. */
int sim_indexer_topk(const sim_indexer_query *q, const uint8_t (*keys)[CPLAB_IDX_ENTRY_BYTES], int64_t n, int k,
                     int32_t *out, double *scores, double *kth, cplab_diag *d);

#endif
