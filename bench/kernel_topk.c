/* cplab-kernel-bench: the indexer's top-k kernels (kernel_bench.h).
 *   topk_prefill  cplab_topk, k 2048, over a prefill chunk's logits: 4096 or
 *                 8192 query rows of 32768 keys, every key in range or a
 *                 causal chunk at the end of the context (ke[i] = keys -
 *                 queries + i + 1);
 *   topk_decode   cplab_topk_split over a few long rows (as cplab-bench's
 *                 decode rows run it: the rows' ranges cut into chunks
 *                 spread over the GPU, then merged): batch 1-128 of
 *                 contexts of 32k and 128k keys, every key in range;
 *   topk_merge    cplab_topk_merge: a DCP group of D owners (interleave 1)
 *                 each holding 1/D of every row's context (owner o's local
 *                 key l at position cplab_kv_position(l, o, 1, D), kv.h),
 *                 each owner's candidates its own cplab_topk over its keys
 *                 (made in the set-up), merged into the row's top-k over
 *                 all its keys;
 *   topk_merge_convert  the same merge converting its list into DCP rank
 *                 0's cache slots in the launch (cplab_topk_convert,
 *                 block size 64, row i request i of a random block table):
 *                 the launch cplab-bench's DCP decode rows run, at
 *                 convert's decode cases' shapes;
 *   topk_decode_convert  topk_decode converting its lists into the cache's
 *                 slots as it writes them (dcp 1, the same table): the
 *                 launch cplab-bench's decode rows run without DCP, at
 *                 topk_decode's shapes.
 * Inputs: real logits, generated on the device (cplab_kbi_gen_logits:
 * cplab_indexer_logits of generated queries, 32 heads, over generated keys,
 * so the copied keys give exact ties as in production): the keys of one
 * request shared by every set (the merge: each owner's keys of that
 * request, at its positions), the queries another request per set (request
 * set + 2), so every set's logits differ; enough sets to span 4x the L2.
 * The check: the outputs are poisoned (idx 0x7F7F7F7F, no index; scores
 * fp32 NaN), the kernel runs once, and --check-rows rows spread over the
 * call are compared with the exact host top-k (cplab_kbi_host_topk: a
 * higher logit first, then the lower index) of the kernel's own input
 * logits, indices and scores, every one of the k entries, exactly; the
 * merge's rows against the host top-k of all the row's keys (the owners'
 * logits put back at their positions), exactly, and topk_merge_convert's
 * slots (and topk_decode_convert's) against cplab_layout_vllm_convert_decode
 * of that top-k, exactly.
 * Work (bytes, against the copy ceiling): top-k the in-range logits read
 * (fp32; the k indices and scores written are not counted); the merge the
 * D owners' candidates read (index + score, 8 B each) and the row's merged
 * list written (8 B an entry), topk_merge_convert's slots written too (4 B
 * an entry; the block table is not counted, as convert's);
 * topk_decode_convert topk_decode's bytes (its slots not counted either). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/layout.h"
#include "cplab_kernels.h"
#include "kernel_bench.h"
#include "kernel_indexer.h"

#define KEYS_REQ 1
#define IDX_POISON 0x7F /* bytes: 0x7F7F7F7F, an index no row has */
#define CONV_BLOCK 64   /* topk_merge_convert's and topk_decode_convert's cache block size */

typedef enum { TOPK_PREFILL, TOPK_DECODE, TOPK_MERGE } topk_mode;

typedef struct topk_shape {
  int k, causal, dcp, interleave, convert;
  int64_t m, n; /* rows, keys: queries x keys (prefill), batch x context (decode, merge) */
} topk_shape;

#define PREFILL(nm, def, q, keys, kk, caus, nt)                                                                  \
  {                                                                                                              \
    nm, def, &(const topk_shape){.k = kk, .causal = caus, .dcp = 1, .interleave = 1, .m = q, .n = keys}, nt      \
  }
#define DECODE(nm, def, b, ctx, kk, nt)                                                                          \
  {                                                                                                              \
    nm, def, &(const topk_shape){.k = kk, .causal = 0, .dcp = 1, .interleave = 1, .m = b, .n = ctx}, nt          \
  }
#define MERGE(nm, def, b, D, I, ctx, kk, nt)                                                                     \
  {                                                                                                              \
    nm, def, &(const topk_shape){.k = kk, .causal = 0, .dcp = D, .interleave = I, .m = b, .n = ctx}, nt          \
  }
#define DECODE_CONVERT(nm, def, b, ctx, kk, nt)                                                                  \
  {                                                                                                              \
    nm, def, &(const topk_shape){.k = kk, .causal = 0, .dcp = 1, .interleave = 1, .convert = 1, .m = b, .n = ctx}, \
        nt                                                                                                       \
  }
#define MERGE_CONVERT(nm, def, b, D, ctx, kk, nt)                                                                \
  {                                                                                                              \
    nm, def,                                                                                                     \
        &(const topk_shape){.k = kk, .causal = 0, .dcp = D, .interleave = 1, .convert = 1, .m = b, .n = ctx}, nt  \
  }
#define N_FULL "a prefill chunk over a 32k context, every key in range"
#define N_HALF "a prefill chunk over a 16k context, every key in range: topk-4k-32k's keys in rows half as long"
#define N_CAUSAL "cplab-bench's causal prefill chunk at the end of a 32k context"
#define N_DECODE "decode rows: every key of the context"
#define N_DECODE_DCP "a DCP 4 rank's decode rows at 32k: its own keys (before cplab_topk_merge)"
#define N_MERGE "a DCP rank's decode rows: the owners' candidates merged (interleave 1)"
#define N_MERGE_CONVERT "the same merge, its list converted into DCP rank 0's cache slots in the launch (block size 64)"
#define N_DECODE_CONVERT "decode rows without DCP: every key, the lists converted into the cache's slots (block size 64)"
#define N_SMOKE "tiny: the tests' smoke case (CPU emulation, GPU smoke test)"

static const cplab_kb_case prefill_cases[] = {
    PREFILL("topk-4k-32k", 1, 4096, 32768, 2048, 0, N_FULL),
    PREFILL("topk-8k-32k", 1, 8192, 32768, 2048, 0, N_FULL),
    PREFILL("topk-8k-16k", 0, 8192, 16384, 2048, 0, N_HALF),
    PREFILL("topk-4k-causal-32k", 1, 4096, 32768, 2048, 1, N_CAUSAL),
    PREFILL("topk-8k-causal-32k", 0, 8192, 32768, 2048, 1, N_CAUSAL),
    /* rows 0..4 hold fewer than k keys (-1 padding), the others select 290 of 290..300 */
    PREFILL("smoke-topk", 0, 16, 300, 290, 1, N_SMOKE),
};

static const cplab_kb_case decode_cases[] = {
    DECODE("topk-decode-b1-32k", 1, 1, 32768, 2048, N_DECODE),
    DECODE("topk-decode-b16-32k", 1, 16, 32768, 2048, N_DECODE),
    DECODE("topk-decode-b1-8k", 1, 1, 8192, 2048, N_DECODE_DCP),
    DECODE("topk-decode-b64-8k", 1, 64, 8192, 2048, N_DECODE_DCP),
    DECODE("topk-decode-b1-128k", 1, 1, 131072, 2048, N_DECODE),
    DECODE("topk-decode-b64-128k", 1, 64, 131072, 2048, N_DECODE),
    DECODE("topk-decode-b128-32k", 1, 128, 32768, 2048, N_DECODE),
    DECODE("smoke-topk-decode", 0, 2, 1100, 1024, N_SMOKE),
};

static const cplab_kb_case merge_cases[] = {
    MERGE("topk-merge-dcp2-b1-128k", 1, 1, 2, 1, 131072, 2048, N_MERGE),
    MERGE("topk-merge-dcp4-b1-128k", 0, 1, 4, 1, 131072, 2048, N_MERGE),
    MERGE("topk-merge-dcp8-b1-128k", 1, 1, 8, 1, 131072, 2048, N_MERGE),
    MERGE("topk-merge-dcp2-b64-128k", 1, 64, 2, 1, 131072, 2048, N_MERGE),
    MERGE("topk-merge-dcp4-b64-128k", 1, 64, 4, 1, 131072, 2048, N_MERGE),
    MERGE("topk-merge-dcp8-b64-128k", 1, 64, 8, 1, 131072, 2048, N_MERGE),
    MERGE("topk-merge-dcp8-b128-128k", 1, 128, 8, 1, 131072, 2048, N_MERGE),
    /* interleave 2 and a context no multiple of it: the position mapping and owners of unequal shares */
    MERGE("smoke-topk-merge", 0, 2, 2, 2, 1023, 256, N_SMOKE),
};

/* topk_decode's cases of cplab-bench's decode rows without DCP, converting as they write; beside them */
static const cplab_kb_case decode_convert_cases[] = {
    DECODE_CONVERT("topk-decode-convert-b1-32k", 1, 1, 32768, 2048, N_DECODE_CONVERT),
    DECODE_CONVERT("topk-decode-convert-b16-32k", 1, 16, 32768, 2048, N_DECODE_CONVERT),
    DECODE_CONVERT("topk-decode-convert-b64-128k", 1, 64, 131072, 2048, N_DECODE_CONVERT),
    DECODE_CONVERT("topk-decode-convert-b128-32k", 1, 128, 32768, 2048, N_DECODE_CONVERT),
    DECODE_CONVERT("smoke-topk-decode-convert", 0, 2, 1100, 1024, N_SMOKE),
};

/* convert's decode cases' lists (convert-decode-b64-dcp4, -b128-dcp8), merged and converted in one
 * launch; beside topk_merge's cases of the same shapes without the conversion */
static const cplab_kb_case merge_convert_cases[] = {
    MERGE_CONVERT("topk-merge-convert-dcp4-b64-128k", 1, 64, 4, 131072, 2048, N_MERGE_CONVERT),
    MERGE_CONVERT("topk-merge-convert-dcp8-b128-128k", 1, 128, 8, 131072, 2048, N_MERGE_CONVERT),
    MERGE_CONVERT("smoke-topk-merge-convert", 0, 3, 4, 1500, 128, N_SMOKE),
};

/* ---- shape fields ------------------------------------------------------------------ */

static json_t *prefill_json(const void *p) {
  const topk_shape *s = p;
  return json_pack("{s:I, s:I, s:i, s:i}", "queries", (json_int_t)s->m, "keys", (json_int_t)s->n, "k", s->k, "causal",
                   s->causal);
}
static json_t *decode_json(const void *p) {
  const topk_shape *s = p;
  json_t *j = json_pack("{s:I, s:I, s:i}", "batch", (json_int_t)s->m, "context", (json_int_t)s->n, "k", s->k);
  if (s->convert) json_object_set_new(j, "convert_block_size", json_integer(CONV_BLOCK));
  return j;
}
static json_t *merge_json(const void *p) {
  const topk_shape *s = p;
  json_t *j = json_pack("{s:I, s:i, s:I, s:i, s:i}", "batch", (json_int_t)s->m, "dcp", s->dcp, "context",
                        (json_int_t)s->n, "k", s->k, "interleave", s->interleave);
  if (s->convert) json_object_set_new(j, "convert_block_size", json_integer(CONV_BLOCK));
  return j;
}
static void prefill_text(const void *p, char *buf, size_t cap) {
  const topk_shape *s = p;
  snprintf(buf, cap, "queries %lld keys %lld k %d%s", (long long)s->m, (long long)s->n, s->k, s->causal ? " causal" : "");
}
static void decode_text(const void *p, char *buf, size_t cap) {
  const topk_shape *s = p;
  snprintf(buf, cap, "b%lld context %lld k %d%s", (long long)s->m, (long long)s->n, s->k,
           s->convert ? " + the slots" : "");
}
static void merge_text(const void *p, char *buf, size_t cap) {
  const topk_shape *s = p;
  snprintf(buf, cap, "b%lld context %lld k %d dcp %d interleave %d%s", (long long)s->m, (long long)s->n, s->k, s->dcp,
           s->interleave, s->convert ? " + rank 0's slots" : "");
}

/* ---- instances ----------------------------------------------------------------------- */

typedef struct topk_set {
  float *logits;    /* top-k: [m][n] */
  int32_t *cand;    /* merge: [D][m][k] */
  float *cand_score;
  int32_t *idx;     /* [m][k] */
  float *score;
  int32_t *slot;    /* with the conversion: [m][k] */
} topk_set;

typedef struct topk_inst {
  const topk_shape *s;
  topk_mode mode;
  int sets, turn, check_rows;
  int32_t *ks, *ke, *d_ks, *d_ke; /* top-k: the rows' ranges */
  int64_t in_range;               /* logits in range */
  float *rows0;                   /* merge: the checked rows' logits over all keys, by position [check_rows][n] */
  int max_blocks;                 /* with the conversion: rank 0's table, row i request i's [m][max_blocks] */
  int32_t *table, *d_table, *d_req;
  void *scratch;                  /* decode: cplab_topk_split's (its route's scratch_bytes) */
  size_t scratch_bytes;
  char route[96];                 /* decode: cplab_topk_split's path on this device (kernels.json's launcher) */
  double set_bytes;
  topk_set set[CPLAB_KBI_MAX_SETS];
} topk_inst;

static uint32_t query_req(int si) { return (uint32_t)(si + 2); }

static void teardown(void *p) {
  topk_inst *x = p;
  cplab_diag d = {0};
  if (!x) return;
  for (int i = 0; i < x->sets; i++) {
    topk_set *st = &x->set[i];
    cplab_dev_free(st->logits, &d), cplab_dev_free(st->cand, &d), cplab_dev_free(st->cand_score, &d);
    cplab_dev_free(st->idx, &d), cplab_dev_free(st->score, &d), cplab_dev_free(st->slot, &d);
  }
  cplab_dev_free(x->d_ks, &d), cplab_dev_free(x->d_ke, &d), cplab_dev_free(x->scratch, &d);
  cplab_dev_free(x->d_table, &d), cplab_dev_free(x->d_req, &d);
  free(x->ks), free(x->ke), free(x->rows0), free(x->table);
  free(x);
}

/* cplab_topk_split's path for (m, n, k) on the current device: its scratch
 * (what cplab_topk_scratch gives) and, in words, kernels.json's launcher. */
static int decode_route(int64_t m, int64_t n, int k, size_t *scratch_bytes, char *buf, size_t cap, cplab_diag *d) {
  cplab_device_facts f;
  cplab_topk_route r;
  int rc = cplab_device_facts_get(&f, d);
  if (!rc) rc = cplab_topk_split_route(m, n, k, f.sm_count, f.smem_optin, &r, d);
  if (rc) return rc;
  *scratch_bytes = r.scratch_bytes;
  char alt[40];
  if (r.refused == CPLAB_TOPK_PATH_CHUNKS)
    snprintf(alt, sizeof alt, "%d chunks a row, then the merge", (int)r.chunks);
  else
    snprintf(alt, sizeof alt, "one block a row");
  if (r.path == CPLAB_TOPK_PATH_CLUSTER)
    snprintf(buf, cap, "cplab_topk_split: a cluster of %d a row (else %s)", r.blocks, alt);
  else
    snprintf(buf, cap, "cplab_topk_split: %s", alt);
  return 0;
}

/* With the conversion: rank 0's block table (random blocks, row i request i's). */
static int setup_conversion(topk_inst *x, const cplab_kb_env *env, cplab_diag *d) {
  const topk_shape *s = x->s;
  int64_t m = s->m, local = cplab_kv_local_len(s->n, 0, s->interleave, s->dcp);
  uint64_t rng = env->seed ^ 0xB10CULL;
  x->max_blocks = (int)((local + CONV_BLOCK - 1) / CONV_BLOCK);
  x->table = malloc((size_t)(m * x->max_blocks) * 4);
  int32_t *req = malloc((size_t)m * 4);
  int rc = !x->table || !req ? cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory") : 0;
  for (int64_t i = 0; !rc && i < m; i++) req[i] = (int32_t)i;
  for (int64_t b = 0; !rc && b < m * x->max_blocks; b++) x->table[b] = (int32_t)cplab_kbi_rnd(&rng, 1 << 20);
  if (!rc) rc = cplab_kbi_upload((void **)&x->d_table, x->table, (size_t)(m * x->max_blocks) * 4, d);
  if (!rc) rc = cplab_kbi_upload((void **)&x->d_req, req, (size_t)m * 4, d);
  free(req);
  return rc;
}

/* Top-k: the shared keys, each set's logits of its own queries. */
static int setup_topk(topk_inst *x, const cplab_kb_env *env, void *stream, cplab_diag *d) {
  const topk_shape *s = x->s;
  int64_t m = s->m, n = s->n, k = s->k;
  uint8_t *keys = NULL;
  x->ks = malloc((size_t)m * 4), x->ke = malloc((size_t)m * 4);
  if (!x->ks || !x->ke) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  x->in_range = cplab_kbi_ranges(m, n, s->causal, x->ks, x->ke);
  double slots = s->convert ? (double)m * k * 4 : 0; /* the conversion's output, a set's as well */
  x->set_bytes = (double)x->in_range * 4 + (double)m * k * 8 + slots;
  int sets = cplab_kbi_sets(env, x->set_bytes, (double)m * n * 4 + (double)m * k * 8 + slots);
  int rc = cplab_kbi_upload((void **)&x->d_ks, x->ks, (size_t)m * 4, d);
  if (!rc) rc = cplab_kbi_upload((void **)&x->d_ke, x->ke, (size_t)m * 4, d);
  if (!rc) rc = cplab_kbi_gen_keys(env->seed, KEYS_REQ, NULL, n, &keys, stream, d);
  if (!rc && s->convert) rc = setup_conversion(x, env, d);
  if (!rc && x->mode == TOPK_DECODE)
    rc = decode_route(m, n, (int)k, &x->scratch_bytes, x->route, sizeof x->route, d);
  if (!rc && x->scratch_bytes) rc = cplab_dev_alloc(&x->scratch, x->scratch_bytes, d);
  for (int si = 0; !rc && si < sets; si++) {
    topk_set *st = &x->set[si];
    x->sets = si + 1;
    rc = cplab_dev_alloc((void **)&st->logits, (size_t)(m * n) * 4, d);
    if (!rc) rc = cplab_dev_alloc((void **)&st->idx, (size_t)(m * k) * 4, d);
    if (!rc) rc = cplab_dev_alloc((void **)&st->score, (size_t)(m * k) * 4, d);
    if (!rc && s->convert) rc = cplab_dev_alloc((void **)&st->slot, (size_t)(m * k) * 4, d);
    /* prefill rows are the chunk's last tokens, decode rows the next token */
    if (!rc)
      rc = cplab_kbi_gen_logits(env->seed, query_req(si), x->mode == TOPK_DECODE ? n : n - m, m, keys, n, x->d_ks,
                                x->d_ke, st->logits, stream, d);
  }
  cplab_diag scratch = {0};
  cplab_dev_free(keys, rc ? &scratch : d);
  return rc;
}

/* Merge: each owner's keys (at its positions), then per set each owner's logits and their top-k, the candidates. */
static int setup_merge(topk_inst *x, const cplab_kb_env *env, void *stream, cplab_diag *d) {
  const topk_shape *s = x->s;
  int D = s->dcp, I = s->interleave;
  int64_t m = s->m, n = s->n, k = s->k, lmax = cplab_kv_local_len(n, 0, I, D); /* owner 0 holds the most */
  uint8_t *keys[64] = {NULL};
  if (D > 64) CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "dcp %d: at most 64 owners here", D);
  float *local = NULL, *lrow = malloc((size_t)lmax * 4);
  int32_t *zeros = calloc((size_t)m, 4), *lke = malloc((size_t)m * 4), *d_ks = NULL, *d_ke = NULL;
  int64_t *pos = malloc((size_t)lmax * 8);
  x->rows0 = malloc((size_t)x->check_rows * n * 4);
  int rc = !lrow || !zeros || !lke || !pos || !x->rows0 ? cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory") : 0;
  for (int o = 0; !rc && o < D; o++) {
    int64_t L = cplab_kv_local_len(n, o, I, D);
    for (int64_t l = 0; l < L; l++) pos[l] = cplab_kv_position(l, o, I, D);
    rc = cplab_kbi_gen_keys(env->seed, KEYS_REQ, pos, L, &keys[o], stream, d);
  }
  if (!rc && s->convert) rc = setup_conversion(x, env, d);
  x->in_range = m * n;
  x->set_bytes = (double)(D + 1) * m * k * 8 + (s->convert ? (double)m * k * 4 : 0);
  int sets = cplab_kbi_sets(env, x->set_bytes, x->set_bytes);
  if (!rc) rc = cplab_dev_alloc((void **)&local, (size_t)(m * lmax) * 4, d);
  if (!rc) rc = cplab_kbi_upload((void **)&d_ks, zeros, (size_t)m * 4, d);
  if (!rc) rc = cplab_dev_alloc((void **)&d_ke, (size_t)m * 4, d);
  for (int si = 0; !rc && si < sets; si++) {
    topk_set *st = &x->set[si];
    x->sets = si + 1;
    rc = cplab_dev_alloc((void **)&st->cand, (size_t)(D * m * k) * 4, d);
    if (!rc) rc = cplab_dev_alloc((void **)&st->cand_score, (size_t)(D * m * k) * 4, d);
    if (!rc) rc = cplab_dev_alloc((void **)&st->idx, (size_t)(m * k) * 4, d);
    if (!rc) rc = cplab_dev_alloc((void **)&st->score, (size_t)(m * k) * 4, d);
    if (!rc && s->convert) rc = cplab_dev_alloc((void **)&st->slot, (size_t)(m * k) * 4, d);
    /* the set's queries (the rows' next token), the same for every owner */
    cplab_kbi_queries q = {0};
    if (!rc) rc = cplab_kbi_gen_queries(env->seed, query_req(si), n, m, CPLAB_KBI_GEN_HEADS, &q, stream, d);
    for (int o = 0; !rc && o < D; o++) {
      int64_t L = cplab_kv_local_len(n, o, I, D);
      for (int64_t i = 0; i < m; i++) lke[i] = (int32_t)L;
      rc = cplab_dev_upload(d_ke, lke, (size_t)m * 4, d);
      if (!rc)
        rc = cplab_indexer_logits(
            &(cplab_indexer_logits_params){.q = q.q, .weight = q.weight, .m = m, .heads = CPLAB_KBI_GEN_HEADS,
                                           .keys = keys[o], .n = L, .ks = d_ks, .ke = d_ke, .logits = local},
            stream, d);
      if (!rc)
        rc = cplab_topk(&(cplab_topk_params){.logits = local, .m = m, .n = L, .ks = d_ks, .ke = d_ke, .k = (int)k,
                                             .idx = st->cand + (size_t)o * m * k,
                                             .score = st->cand_score + (size_t)o * m * k}, stream, d);
      if (!rc) rc = cplab_dev_sync(stream, d);
      /* set 0: the checked rows' logits, put back at the keys' positions */
      for (int i = 0; !rc && si == 0 && i < x->check_rows; i++) {
        int64_t row = cplab_kbi_check_row(i, x->check_rows, m);
        rc = cplab_dev_download(lrow, local + row * L, (size_t)L * 4, d);
        for (int64_t l = 0; !rc && l < L; l++) x->rows0[(size_t)i * n + cplab_kv_position(l, o, I, D)] = lrow[l];
      }
    }
    cplab_kbi_queries_free(&q);
  }
  cplab_diag scratch = {0};
  for (int o = 0; o < D; o++) cplab_dev_free(keys[o], &scratch);
  cplab_dev_free(local, &scratch), cplab_dev_free(d_ks, &scratch), cplab_dev_free(d_ke, &scratch);
  free(lrow), free(zeros), free(lke), free(pos);
  return rc;
}

static int setup(const cplab_kb_case *c, const cplab_kb_env *env, topk_mode mode, void *stream, void **inst,
                 cplab_diag *d) {
  topk_inst *x = calloc(1, sizeof *x);
  *inst = x;
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  x->s = c->shape, x->mode = mode, x->check_rows = cplab_kbi_check_rows(env, x->s->m);
  return mode == TOPK_MERGE ? setup_merge(x, env, stream, d) : setup_topk(x, env, stream, d);
}
static int setup_prefill(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  return setup(c, env, TOPK_PREFILL, stream, inst, d);
}
static int setup_decode(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  return setup(c, env, TOPK_DECODE, stream, inst, d);
}
static int setup_merge_case(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  return setup(c, env, TOPK_MERGE, stream, inst, d);
}

static int run_set(topk_inst *x, int si, void *stream, cplab_diag *d) {
  const topk_shape *s = x->s;
  topk_set *st = &x->set[si];
  cplab_topk_convert conv = {.row_req = x->d_req, .block_table = x->d_table, .num_req = (int)s->m,
                             .max_blocks = x->max_blocks, .block_size = CONV_BLOCK, .dcp_rank = 0, .out = st->slot};
  if (x->mode == TOPK_MERGE) {
    return cplab_topk_merge(&(cplab_topk_merge_params){.cand_idx = st->cand, .cand_score = st->cand_score, .D = s->dcp,
                                                       .m = s->m, .k = s->k, .interleave = s->interleave,
                                                       .idx = st->idx, .score = st->score,
                                                       .convert = s->convert ? &conv : NULL}, stream, d);
  }
  /* One struct for both launchers: cplab_topk ignores the scratch. */
  cplab_topk_params p = {.logits = st->logits, .m = s->m, .n = s->n, .ks = x->d_ks, .ke = x->d_ke, .k = s->k,
                         .idx = st->idx, .score = st->score, .scratch = x->scratch, .scratch_bytes = x->scratch_bytes,
                         .convert = s->convert ? &conv : NULL};
  return x->mode == TOPK_DECODE ? cplab_topk_split(&p, stream, d) : cplab_topk(&p, stream, d);
}

static int run(void *p, void *stream, cplab_diag *d) {
  topk_inst *x = p;
  return run_set(x, x->turn++ % x->sets, stream, d);
}

/* ---- the check ----------------------------------------------------------------------- */

/* Row r's converted slots against cplab_layout_vllm_convert_decode of its
 * host top-k (want), every entry; buf: room for k int32. */
static int check_slots(const topk_inst *x, int64_t r, const int32_t *want, int32_t *buf, cplab_kb_check *res,
                       cplab_diag *d) {
  const topk_shape *s = x->s;
  cplab_layout_env env;
  memset(&env, 0, sizeof env);
  env.par.dcp = s->dcp, env.par.interleave = s->interleave, env.par.block_size = CONV_BLOCK;
  int rc = cplab_dev_download(buf, x->set[0].slot + r * s->k, (size_t)s->k * 4, d);
  for (int j = 0; !rc && j < s->k; j++) {
    int32_t ref = cplab_layout_vllm_convert_decode(&env, x->table + r * x->max_blocks, x->max_blocks, want[j], 0);
    res->compared++;
    if (buf[j] != ref && res->mismatches++ == 0)
      snprintf(res->detail, sizeof res->detail, "row %lld slot %d (position %d): got %d, want %d; ", (long long)r, j,
               want[j], buf[j], ref);
  }
  return rc;
}

static int check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  topk_inst *x = p;
  const topk_shape *s = x->s;
  topk_set *st = &x->set[0];
  int64_t m = s->m, n = s->n;
  int k = s->k, nrows = x->check_rows;
  memset(res, 0, sizeof *res);
  int rc = cplab_poison_bytes(st->idx, (size_t)(m * k) * 4, IDX_POISON, stream, d);
  if (!rc) rc = cplab_poison_bytes(st->score, (size_t)(m * k) * 4, 0xFF, stream, d);
  if (!rc && st->slot) rc = cplab_poison_bytes(st->slot, (size_t)(m * k) * 4, IDX_POISON, stream, d);
  if (!rc) rc = run_set(x, 0, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  if (rc) return rc;
  float *row = malloc((size_t)n * 4), *got_s = malloc((size_t)k * 4), *want_s = malloc((size_t)k * 4);
  int32_t *got = malloc((size_t)k * 4), *want = malloc((size_t)k * 4);
  int64_t first_row = -1;
  int first_j = 0;
  if (!row || !got_s || !want_s || !got || !want) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for the check");
  for (int i = 0; !rc && i < nrows; i++) {
    int64_t r = cplab_kbi_check_row(i, nrows, m), lo = 0, len = n;
    if (x->mode == TOPK_MERGE) {
      memcpy(row, x->rows0 + (size_t)i * n, (size_t)n * 4);
    } else {
      rc = cplab_dev_download(row, st->logits + r * n, (size_t)n * 4, d);
      lo = x->ks[r] < 0 ? 0 : x->ks[r] > n ? n : x->ks[r];
      len = (x->ke[r] > n ? n : x->ke[r]) - lo;
    }
    if (!rc) rc = cplab_dev_download(got, st->idx + r * k, (size_t)k * 4, d);
    if (!rc) rc = cplab_dev_download(got_s, st->score + r * k, (size_t)k * 4, d);
    int64_t before = res->mismatches;
    int fj = -1;
    if (!rc) rc = cplab_kbi_topk_diff(row + lo, len, k, got, got_s, want, want_s, &res->mismatches, &fj, d);
    if (!rc) res->compared += k;
    if (!rc && before == 0 && fj >= 0) first_row = r, first_j = fj;
    if (!rc && first_row == r)
      snprintf(res->detail, sizeof res->detail, "row %lld entry %d: got (%d, %.9g), want (%d, %.9g); ", (long long)r,
               first_j, got[first_j], (double)got_s[first_j], want[first_j], (double)want_s[first_j]);
    if (!rc && st->slot) rc = check_slots(x, r, want, got, res, d);
  }
  if (!rc) {
    size_t at = strlen(res->detail);
    res->rows = nrows;
    res->ok = res->mismatches == 0;
    snprintf(res->reference, sizeof res->reference, "%s",
             x->mode == TOPK_MERGE ? (s->convert ? "the host top-k of all the row's keys (higher logit, then lower "
                                                   "position) and cplab_layout_vllm_convert_decode of it, exactly"
                                                 : "the host top-k of all the row's keys (higher logit, then lower "
                                                   "position), exactly")
                                   : (s->convert ? "the host top-k of the kernel's input logits (higher logit, then "
                                                   "lower index) and cplab_layout_vllm_convert_decode of it, exactly"
                                                 : "the host top-k of the kernel's input logits (higher logit, then "
                                                   "lower index), exactly"));
    snprintf(res->detail + at, sizeof res->detail - at, "%d rows x %d entries: %lld indices%s differ from %s",
             nrows, k, (long long)res->mismatches, s->convert ? ", scores or slots" : " or scores", res->reference);
  }
  free(row), free(got_s), free(want_s), free(got), free(want);
  return rc;
}

static void work(const void *p, cplab_kb_work *w) {
  const topk_inst *x = p;
  w->flop = w->flop_valid = 0;
  w->bytes = x->mode == TOPK_MERGE ? x->set_bytes : (double)x->in_range * 4;
  w->sets = x->sets;
  w->set_bytes = x->set_bytes;
  snprintf(w->launcher, sizeof w->launcher, "%s%s",
           x->mode == TOPK_MERGE ? "cplab_topk_merge" : x->mode == TOPK_DECODE ? x->route : "cplab_topk",
           x->s->convert ? (x->mode == TOPK_MERGE ? " with its conversion" : ", with its conversion") : "");
}

#define TOPK_KERNEL(kname, text, table, json, txt, setup_fn, note)                                                  \
  {                                                                                                                  \
    .name = kname, .summary = text, .cases = table, .ncases = (int)(sizeof table / sizeof table[0]),                 \
    .shape_json = json, .shape_text = txt, .setup = setup_fn, .check = check, .run = run, .work = work,              \
    .teardown = teardown, .check_kind = CPLAB_KB_CHECK_EXACT, .rate = CPLAB_KB_RATE_BYTES, .work_note = note          \
  }
#define NOTE_TOPK "gbps: the in-range fp32 logits read (the k indices and scores written not counted), against the copy"
const cplab_kb_kernel cplab_kb_topk_prefill =
    TOPK_KERNEL("topk_prefill", "cplab_topk: the top-k of a prefill chunk's fp32 logits [queries][keys]", prefill_cases,
                prefill_json, prefill_text, setup_prefill, NOTE_TOPK);
const cplab_kb_kernel cplab_kb_topk_decode =
    TOPK_KERNEL("topk_decode", "cplab_topk_split: the top-k of a few long rows of fp32 logits [batch][context]",
                decode_cases, decode_json, decode_text, setup_decode, NOTE_TOPK);
const cplab_kb_kernel cplab_kb_topk_decode_convert =
    TOPK_KERNEL("topk_decode_convert",
                "cplab_topk_split with its conversion: the top-k of decode rows and the cache slots of it in one launch",
                decode_convert_cases, decode_json, decode_text, setup_decode,
                "gbps: topk_decode's bytes (the in-range fp32 logits read; the lists and slots written not counted), "
                "against the copy");
const cplab_kb_kernel cplab_kb_topk_merge =
    TOPK_KERNEL("topk_merge", "cplab_topk_merge: D owners' top-k candidates [D][batch][k] merged into the row's top-k",
                merge_cases, merge_json, merge_text, setup_merge_case,
                "gbps: the D owners' candidates read (int32 index + fp32 score) + the merged list written (the same "
                "per entry), against the copy");
const cplab_kb_kernel cplab_kb_topk_merge_convert =
    TOPK_KERNEL("topk_merge_convert",
                "cplab_topk_merge with its conversion: the merged top-k and DCP rank 0's cache slots of it in one launch",
                merge_convert_cases, merge_json, merge_text, setup_merge_case,
                "gbps: topk_merge's bytes + the int32 slots written (the block table not counted), against the copy");
