/* bench/kernel_indexer.h: what the indexer path's kernel files of
 * cplab-kernel-bench share (bench/kernel_indexer.c defines it; its users
 * are bench/kernel_indexer_decode.c, bench/kernel_topk.c and
 * bench/kernel_convert.c): rotation sizing, the checked rows, generated
 * indexer keys, queries and real logits on the device, and the host top-k
 * the checks compare with. */
#ifndef CPLAB_BENCH_KERNEL_INDEXER_H
#define CPLAB_BENCH_KERNEL_INDEXER_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"
#include "kernel_bench.h"

/* The layer every generated input of these files is keyed with. */
#define CPLAB_KBI_LAYER 0
/* At most this many rotating input sets of a case, and rows checked. */
#define CPLAB_KBI_MAX_SETS 256
#define CPLAB_KBI_MAX_CHECK_ROWS 64
/* Indexer heads of the queries that generate the top-k kernels' logits (GLM-5's indexer). */
#define CPLAB_KBI_GEN_HEADS 32

/* A value in [0, n) from the splitmix64 state s. */
uint64_t cplab_kbi_rnd(uint64_t *s, uint64_t n);
/* count distinct values of [0, range) (count <= range), stratified at
 * random, shuffled, into out. */
void cplab_kbi_distinct(uint64_t *rng, int64_t range, int count, int32_t *out);

/* Rotating input sets: enough that sets · set_bytes (bytes one run touches)
 * span 4x the L2, at most env->max_sets (and CPLAB_KBI_MAX_SETS), while
 * sets · alloc_bytes stays within env->mem_budget; at least 2. */
int cplab_kbi_sets(const cplab_kb_env *env, double set_bytes, double alloc_bytes);
/* Rows the check compares (env->check_rows, at most m and
 * CPLAB_KBI_MAX_CHECK_ROWS), and the i-th of them: spread over the call,
 * first and last included. */
int cplab_kbi_check_rows(const cplab_kb_env *env, int64_t m);
int64_t cplab_kbi_check_row(int i, int nrows, int64_t m);

/* A device copy of bytes of host (*dev freed by the caller, also after a failure). */
int cplab_kbi_upload(void **dev, const void *host, size_t bytes, cplab_diag *d);

/* The rows' key ranges, host [m]: every key of [0, n) (causal 0), or a
 * causal chunk at the end of the context, ks 0 and ke[i] = n - m + i + 1
 * (m <= n); returns the (query, key) pairs in range. */
int64_t cplab_kbi_ranges(int64_t m, int64_t n, int causal, int32_t *ks, int32_t *ke);

/* n generated indexer key entries, contiguous on the device ([n][132]):
 * entry j is cplab_kvformat_idx_generate(seed, CPLAB_KBI_LAYER, req, pos[j])
 * (pos NULL: position j), written by cplab_gen_cache through slot j. */
int cplab_kbi_gen_keys(uint64_t seed, uint32_t req, const int64_t *pos, int64_t n, uint8_t **keys, void *stream,
                       cplab_diag *d);

/* Generated indexer queries (cplab_gen_indexer_query) of m rows of request
 * req at positions pos0 + i: q e4m3 [m][heads][128], scale and the folded
 * weight fp32 [m][heads]. */
typedef struct cplab_kbi_queries {
  uint8_t *q;
  float *scale, *weight;
} cplab_kbi_queries;
int cplab_kbi_gen_queries(uint64_t seed, uint32_t req, int64_t pos0, int64_t m, int heads, cplab_kbi_queries *out,
                          void *stream, cplab_diag *d);
void cplab_kbi_queries_free(cplab_kbi_queries *q);

/* Real logits for the top-k kernels: fp32 [m][n] into logits, from
 * cplab_indexer_logits of generated queries (CPLAB_KBI_GEN_HEADS heads,
 * request qreq, positions pos0 + i) over keys (device [n][132]) with the
 * device ranges ks, ke (-inf outside them); waits for the device. */
int cplab_kbi_gen_logits(uint64_t seed, uint32_t qreq, int64_t pos0, int64_t m, const uint8_t *keys, int64_t n,
                         const int32_t *ks, const int32_t *ke, float *logits, void *stream, cplab_diag *d);

/* The exact top-k of row[0 .. len) on the host: a higher logit first, equal
 * logits by the lower index (-0 equals +0), as cplab_topk's contract and
 * tests/gpu/test_gpu_indexer.c's host_topk; idx[j] the index (j < len,
 * else -1), score[j] its logit (-inf for -1). CPLAB_ENOMEM only. */
int cplab_kbi_host_topk(const float *row, int64_t len, int k, int32_t *idx, float *score, cplab_diag *d);

/* A row's top-k from a kernel (got, got_s: k entries) against the host
 * top-k of row[0 .. len) (cplab_kbi_host_topk, into want, want_s: k entries
 * of the caller's): *bad += the entries whose index or score differ, *first
 * the first of them (-1 where none). CPLAB_ENOMEM only. */
int cplab_kbi_topk_diff(const float *row, int64_t len, int k, const int32_t *got, const float *got_s, int32_t *want,
                        float *want_s, int64_t *bad, int *first, cplab_diag *d);

#endif
