/* sim/reference.h: the simulator's numeric reference for sparse MLA decode
 * under DCP (shared/reference/vllm-pcp-dcp.md §7), in double precision:
 * attention of one query over a set of latent rows, the per-shard partial
 * results, and the LSE combine with the kernel's exact NaN/±inf rules. Plain
 * loops written from the rules; the executor's kernels are checked against them. */
#ifndef CPLAB_SIM_REFERENCE_H
#define CPLAB_SIM_REFERENCE_H

#include <stddef.h>

#define SIM_MLA_QK 576 /* kv_lora 512 + rope 64 */
#define SIM_MLA_V 512  /* values: the latent part of the same rows */

/* Attention of `heads` query heads (q: [heads][576]) over n latent rows
 * (rows: [n][576], values = first 512 columns): out [heads][512] and the
 * natural-log lse [heads] of scale·q·k. With n = 0: lse = -inf, out = 0. */
void sim_attention(const double *q, int heads, const double *rows, size_t n, double scale, double *out, double *lse);

/* Combine D partial results (lse [D][heads], out [D][heads][512]) into
 * final [heads][512] exactly as the kernel does: an lse that is NaN or +inf
 * counts as -inf; M = max lse (0 if all are -inf); L = log(sum exp(lse - M)) + M;
 * a rank's factor exp(lse - L) that is NaN becomes 0, and where the factor is
 * 0 the rank's output is taken as 0 (clearing NaN outputs of empty shards). */
void sim_lse_combine(int D, int heads, const double *lse, const double *out, double *final);

/* The lse of a combined row: log-sum-exp of the D shards' lse (stride apart
 * in lse), with the combine's rule that NaN or +inf counts as -inf; -inf when
 * every shard is empty. */
double sim_lse_merge(int D, const double *lse, size_t stride);

#endif
