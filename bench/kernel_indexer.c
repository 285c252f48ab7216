/* cplab-kernel-bench: the indexer's logits kernel (kernel_bench.h), and what
 * the indexer path's kernel files share (bench/kernel_indexer.h).
 *   indexer_logits_prefill  cplab_indexer_logits: q e4m3 [queries][heads][128]
 *                           with the folded weights over `keys` gathered
 *                           132-byte key entries, logits fp32 [queries][keys]
 *                           (-inf outside each row's [ks, ke)).
 * Cases: the issue's shape, 2048 queries over 32768 keys, every pair in
 * range, at 32 heads (GLM-5's indexer) and 64 (DeepSeek-V3.2's); and the
 * chunks cplab-bench runs: 4096 or 8192 queries at the end of a 32k context,
 * causal (ks 0, ke[i] = keys - queries + i + 1).
 * Inputs, all generated on the device by kernels/gen.cu: the keys of request
 * 2·set + 1 at positions 0 .. keys-1 (cplab_gen_cache through slots
 * 0 .. keys-1: the gathered form), the queries of request 2·set + 2 at
 * positions keys - queries + i (cplab_gen_indexer_query); each input set
 * its own keys, queries and logits, enough of them to span 4x the L2.
 * The check: the logits are poisoned (fp32 NaN), the kernel runs once, and
 * --check-rows rows spread over the call are compared, every key of the row:
 *   - in range: against sim_indexer_logit (sim/indexer_ref.h: double
 *     precision over the exact fp8 values) of sim_indexer_query_make's query,
 *     the error relative to the row's largest |reference logit| within
 *     LOGITS_TOL_REL (below);
 *   - outside [ks, ke): exactly -inf;
 *   - a key that copies an earlier key of its request (1/32 of them,
 *     cplab_kvformat_idx_source): bit-identical to its source's logit (the
 *     kernel's contract: exact ties).
 * The reference runs on host threads, one per checked row.
 * Work: FLOP = 2 · (query, key) pairs in range · heads · 128 (the dot
 * products; the ReLU, weights and key scale are not counted), against the
 * fp8 GEMM ceiling the driver measures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceilings.h"
#include "cplab/kvformat.h"
#include "cplab/stats.h"
#include "cplab_kernels.h"
#include "indexer_ref.h"
#include "kernel_bench.h"
#include "kernel_indexer.h"

/* The logits' tolerance: the error of each in-range logit relative to the
 * row's largest |reference logit|. cplab_indexer_logits is moving to fp8
 * tensor cores, whose fp32 accumulation is not in the exact order (within
 * a few fp32 roundings of each 128-term dot product, then an fp32 head
 * sum): 2e-3 of the row's scale bounds that with room, and still catches
 * a wrong head, key, weight or scale (errors of order 1). The old
 * CUDA-core kernel does far better (tests/gpu/test_gpu_indexer.c holds it
 * to 1e-5). */
#define LOGITS_TOL_REL 2e-3

/* ---- shared (kernel_indexer.h) ------------------------------------------------------- */

uint64_t cplab_kbi_rnd(uint64_t *s, uint64_t n) { return cplab_bench_splitmix(s) % n; }

void cplab_kbi_distinct(uint64_t *rng, int64_t range, int count, int32_t *out) {
  int64_t stride = count ? range / count : 1;
  for (int j = 0; j < count; j++) out[j] = (int32_t)(j * stride + (int64_t)cplab_kbi_rnd(rng, (uint64_t)stride));
  for (int j = count - 1; j > 0; j--) {
    int i = (int)cplab_kbi_rnd(rng, (uint64_t)j + 1);
    int32_t x = out[j];
    out[j] = out[i], out[i] = x;
  }
}

int cplab_kbi_sets(const cplab_kb_env *env, double set_bytes, double alloc_bytes) {
  int cap = env->max_sets < CPLAB_KBI_MAX_SETS ? env->max_sets : CPLAB_KBI_MAX_SETS;
  double want = set_bytes > 0 ? ceil(4.0 * (double)env->l2_bytes / set_bytes) : 2;
  int sets = want > cap ? cap : (int)want;
  while (sets > 2 && (double)sets * alloc_bytes > (double)env->mem_budget) sets--;
  return sets < 2 ? 2 : sets;
}

int cplab_kbi_check_rows(const cplab_kb_env *env, int64_t m) {
  int n = env->check_rows < m ? env->check_rows : (int)m;
  return n > CPLAB_KBI_MAX_CHECK_ROWS ? CPLAB_KBI_MAX_CHECK_ROWS : n;
}

int64_t cplab_kbi_check_row(int i, int nrows, int64_t m) {
  return nrows <= 1 ? 0 : (int64_t)i * (m - 1) / (nrows - 1);
}

int cplab_kbi_upload(void **dev, const void *host, size_t bytes, cplab_diag *d) {
  int rc = cplab_dev_alloc(dev, bytes, d);
  return rc ? rc : cplab_dev_upload(*dev, host, bytes, d);
}

int64_t cplab_kbi_ranges(int64_t m, int64_t n, int causal, int32_t *ks, int32_t *ke) {
  int64_t pairs = 0;
  for (int64_t i = 0; i < m; i++) {
    ks[i] = 0;
    ke[i] = (int32_t)(causal ? n - m + i + 1 : n);
    pairs += ke[i];
  }
  return pairs;
}

int cplab_kbi_gen_keys(uint64_t seed, uint32_t req, const int64_t *pos, int64_t n, uint8_t **keys, void *stream,
                       cplab_diag *d) {
  size_t cnt = (size_t)(n ? n : 1);
  int32_t *hreq = malloc(cnt * 4), *hpos = malloc(cnt * 4);
  int64_t *hslot = malloc(cnt * 8);
  void *d_req = NULL, *d_pos = NULL, *d_slot = NULL;
  int rc = !hreq || !hpos || !hslot ? cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for %lld keys", (long long)n)
                                    : 0;
  for (int64_t j = 0; !rc && j < n; j++) hreq[j] = (int32_t)req, hpos[j] = (int32_t)(pos ? pos[j] : j), hslot[j] = j;
  if (!rc) rc = cplab_dev_alloc((void **)keys, (size_t)n * CPLAB_IDX_ENTRY_BYTES, d);
  if (!rc) rc = cplab_kbi_upload(&d_req, hreq, (size_t)n * 4, d);
  if (!rc) rc = cplab_kbi_upload(&d_pos, hpos, (size_t)n * 4, d);
  if (!rc) rc = cplab_kbi_upload(&d_slot, hslot, (size_t)n * 8, d);
  if (!rc) rc = cplab_gen_cache(&(cplab_gen_cache_params){.seed = seed, .layer = CPLAB_KBI_LAYER, .req = d_req,
                                                          .pos = d_pos, .slot = d_slot, .n = n, .kv_cache = NULL,
                                                          .idx_cache = *keys, .num_slots = n}, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  cplab_diag scratch = {0};
  cplab_dev_free(d_req, &scratch), cplab_dev_free(d_pos, &scratch), cplab_dev_free(d_slot, &scratch);
  free(hreq), free(hpos), free(hslot);
  return rc;
}

int cplab_kbi_gen_queries(uint64_t seed, uint32_t req, int64_t pos0, int64_t m, int heads, cplab_kbi_queries *out,
                          void *stream, cplab_diag *d) {
  size_t cnt = (size_t)(m ? m : 1);
  int32_t *hreq = malloc(cnt * 4), *hpos = malloc(cnt * 4);
  void *d_req = NULL, *d_pos = NULL;
  memset(out, 0, sizeof *out);
  int rc = !hreq || !hpos ? cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for %lld queries", (long long)m) : 0;
  for (int64_t i = 0; !rc && i < m; i++) hreq[i] = (int32_t)req, hpos[i] = (int32_t)(pos0 + i);
  if (!rc) rc = cplab_dev_alloc((void **)&out->q, (size_t)m * heads * CPLAB_IDX_DIM, d);
  if (!rc) rc = cplab_dev_alloc((void **)&out->scale, (size_t)m * heads * 4, d);
  if (!rc) rc = cplab_dev_alloc((void **)&out->weight, (size_t)m * heads * 4, d);
  if (!rc) rc = cplab_kbi_upload(&d_req, hreq, (size_t)m * 4, d);
  if (!rc) rc = cplab_kbi_upload(&d_pos, hpos, (size_t)m * 4, d);
  if (!rc)
    rc = cplab_gen_indexer_query(
        &(cplab_gen_indexer_query_params){.seed = seed, .layer = CPLAB_KBI_LAYER, .req = d_req, .pos = d_pos, .m = m,
                                          .heads = heads, .q = out->q, .scale = out->scale, .weight = out->weight},
        stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  cplab_diag scratch = {0};
  cplab_dev_free(d_req, &scratch), cplab_dev_free(d_pos, &scratch);
  free(hreq), free(hpos);
  return rc;
}

void cplab_kbi_queries_free(cplab_kbi_queries *q) {
  cplab_diag scratch = {0};
  cplab_dev_free(q->q, &scratch), cplab_dev_free(q->scale, &scratch), cplab_dev_free(q->weight, &scratch);
  memset(q, 0, sizeof *q);
}

int cplab_kbi_gen_logits(uint64_t seed, uint32_t qreq, int64_t pos0, int64_t m, const uint8_t *keys, int64_t n,
                         const int32_t *ks, const int32_t *ke, float *logits, void *stream, cplab_diag *d) {
  cplab_kbi_queries q;
  int rc = cplab_kbi_gen_queries(seed, qreq, pos0, m, CPLAB_KBI_GEN_HEADS, &q, stream, d);
  if (!rc)
    rc = cplab_indexer_logits(&(cplab_indexer_logits_params){.q = q.q, .weight = q.weight, .m = m,
                                                             .heads = CPLAB_KBI_GEN_HEADS, .keys = keys, .n = n,
                                                             .ks = ks, .ke = ke, .logits = logits}, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  cplab_kbi_queries_free(&q);
  return rc;
}

typedef struct fv {
  float v;
  int32_t i;
} fv;

static int fv_order(const void *a, const void *b) {
  const fv *x = a, *y = b;
  if (x->v != y->v) return x->v > y->v ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

int cplab_kbi_host_topk(const float *row, int64_t len, int k, int32_t *idx, float *score, cplab_diag *d) {
  fv *all = malloc((size_t)(len > 0 ? len : 1) * sizeof *all);
  if (!all) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory for the host top-k of %lld logits", (long long)len);
  for (int64_t i = 0; i < len; i++) all[i] = (fv){row[i], (int32_t)i};
  qsort(all, (size_t)(len > 0 ? len : 0), sizeof *all, fv_order);
  for (int j = 0; j < k; j++) {
    idx[j] = j < len ? all[j].i : -1;
    score[j] = j < len ? all[j].v : -INFINITY;
  }
  free(all);
  return 0;
}

int cplab_kbi_topk_diff(const float *row, int64_t len, int k, const int32_t *got, const float *got_s, int32_t *want,
                        float *want_s, int64_t *bad, int *first, cplab_diag *d) {
  int rc = cplab_kbi_host_topk(row, len > 0 ? len : 0, k, want, want_s, d);
  *first = -1;
  for (int j = 0; !rc && j < k; j++) {
    if (got[j] == want[j] && got_s[j] == want_s[j]) continue;
    if (*first < 0) *first = j;
    (*bad)++;
  }
  return rc;
}

/* ---- indexer_logits_prefill ---------------------------------------------------------- */

typedef struct logits_shape {
  int heads, causal;
  int64_t queries, keys;
} logits_shape;

#define LOGITS(nm, def, h, m, n, caus, nt)                                                                        \
  {                                                                                                              \
    nm, def, &(const logits_shape){.heads = h, .causal = caus, .queries = m, .keys = n}, nt                     \
  }
#define N_ISSUE_32 "the issue's shape: 2048 queries x 32768 keys, all pairs; GLM-5's indexer (32 heads)"
#define N_ISSUE_64 "the issue's shape: 2048 queries x 32768 keys, all pairs; DeepSeek-V3.2's indexer (64 heads)"
#define N_CHUNK_32 "cplab-bench's causal prefill chunk at the end of a 32k context; GLM-5 (32 heads)"
#define N_CHUNK_64 "cplab-bench's causal prefill chunk at the end of a 32k context; DeepSeek-V3.2 (64 heads)"
#define N_SMOKE "tiny: the tests' smoke case (CPU emulation, GPU smoke test)"

static const cplab_kb_case logits_cases[] = {
    LOGITS("logits-h32-2k-32k", 1, 32, 2048, 32768, 0, N_ISSUE_32),
    LOGITS("logits-h64-2k-32k", 1, 64, 2048, 32768, 0, N_ISSUE_64),
    LOGITS("logits-h32-4k-causal-32k", 1, 32, 4096, 32768, 1, N_CHUNK_32),
    LOGITS("logits-h32-8k-causal-32k", 0, 32, 8192, 32768, 1, N_CHUNK_32),
    LOGITS("logits-h64-4k-causal-32k", 1, 64, 4096, 32768, 1, N_CHUNK_64),
    LOGITS("logits-h64-8k-causal-32k", 0, 64, 8192, 32768, 1, N_CHUNK_64),
    LOGITS("smoke-logits", 0, 32, 16, 256, 1, N_SMOKE),
};

static json_t *logits_shape_json(const void *p) {
  const logits_shape *s = p;
  return json_pack("{s:i, s:I, s:I, s:i}", "heads", s->heads, "queries", (json_int_t)s->queries, "keys",
                   (json_int_t)s->keys, "causal", s->causal);
}

static void logits_shape_text(const void *p, char *buf, size_t cap) {
  const logits_shape *s = p;
  snprintf(buf, cap, "h%d queries %lld keys %lld%s", s->heads, (long long)s->queries, (long long)s->keys,
           s->causal ? " causal" : "");
}

typedef struct logits_set {
  uint8_t *keys; /* [keys][132] */
  cplab_kbi_queries q;
  float *logits; /* [queries][keys] */
} logits_set;

typedef struct logits_inst {
  const logits_shape *s;
  uint64_t seed;
  int sets, turn, check_rows;
  int32_t *ks, *ke;     /* host [queries] */
  int32_t *d_ks, *d_ke; /* the same on the device */
  int64_t pairs;        /* (query, key) pairs in range */
  double set_bytes;
  logits_set set[CPLAB_KBI_MAX_SETS];
} logits_inst;

static uint32_t keys_req(int si) { return (uint32_t)(2 * si + 1); }
static uint32_t query_req(int si) { return (uint32_t)(2 * si + 2); }

static void logits_teardown(void *p) {
  logits_inst *x = p;
  cplab_diag d = {0};
  if (!x) return;
  for (int i = 0; i < x->sets; i++) {
    cplab_dev_free(x->set[i].keys, &d), cplab_dev_free(x->set[i].logits, &d);
    cplab_kbi_queries_free(&x->set[i].q);
  }
  cplab_dev_free(x->d_ks, &d), cplab_dev_free(x->d_ke, &d);
  free(x->ks), free(x->ke);
  free(x);
}

static int logits_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  const logits_shape *s = c->shape;
  logits_inst *x = calloc(1, sizeof *x);
  *inst = x;
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  if (s->heads > 64)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "%d heads: the reference (sim_indexer_query) holds at most 64", s->heads);
  int64_t m = s->queries, n = s->keys;
  x->s = s, x->seed = env->seed, x->check_rows = cplab_kbi_check_rows(env, m);
  x->ks = malloc((size_t)m * 4), x->ke = malloc((size_t)m * 4);
  if (!x->ks || !x->ke) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  x->pairs = cplab_kbi_ranges(m, n, s->causal, x->ks, x->ke);
  /* a run writes the logits and reads the keys and queries */
  x->set_bytes = (double)m * n * 4 + (double)n * CPLAB_IDX_ENTRY_BYTES + (double)m * s->heads * (CPLAB_IDX_DIM + 4);
  int sets = cplab_kbi_sets(env, x->set_bytes, x->set_bytes + (double)m * s->heads * 4);
  int rc = cplab_kbi_upload((void **)&x->d_ks, x->ks, (size_t)m * 4, d);
  if (!rc) rc = cplab_kbi_upload((void **)&x->d_ke, x->ke, (size_t)m * 4, d);
  for (int si = 0; !rc && si < sets; si++) {
    logits_set *st = &x->set[si];
    x->sets = si + 1;
    rc = cplab_kbi_gen_keys(env->seed, keys_req(si), NULL, n, &st->keys, stream, d);
    if (!rc) rc = cplab_kbi_gen_queries(env->seed, query_req(si), n - m, m, s->heads, &st->q, stream, d);
    if (!rc) rc = cplab_dev_alloc((void **)&st->logits, (size_t)m * n * 4, d);
  }
  return rc;
}

static int logits_run_set(logits_inst *x, int si, void *stream, cplab_diag *d) {
  const logits_shape *s = x->s;
  logits_set *st = &x->set[si];
  return cplab_indexer_logits(&(cplab_indexer_logits_params){.q = st->q.q, .weight = st->q.weight, .m = s->queries,
                                                             .heads = s->heads, .keys = st->keys, .n = s->keys,
                                                             .ks = x->d_ks, .ke = x->d_ke, .logits = st->logits},
                              stream, d);
}

static int logits_run(void *p, void *stream, cplab_diag *d) {
  logits_inst *x = p;
  return logits_run_set(x, x->turn++ % x->sets, stream, d);
}

/* One checked row against the reference (a host thread). */
typedef struct logits_row {
  const logits_inst *x;
  const uint8_t *keys; /* host [keys][132] */
  const float *got;    /* the kernel's row [keys] */
  sim_indexer_query ref;
  int32_t ks, ke;
  double max_rel;
  int64_t in_range, outside_bad, tie_pairs, tie_bad;
} logits_row;

static void *logits_check_one(void *p) {
  logits_row *r = p;
  const logits_shape *s = r->x->s;
  double *want = malloc((size_t)s->keys * sizeof *want), maxabs = 0, err = 0;
  if (!want) {
    r->max_rel = NAN; /* shows as a failure; the allocation is tiny next to the rest */
    return NULL;
  }
  for (int64_t j = 0; j < s->keys; j++) {
    if (j < r->ks || j >= r->ke) {
      r->outside_bad += r->got[j] != -INFINITY;
      continue;
    }
    want[j] = sim_indexer_logit(&r->ref, r->keys + j * CPLAB_IDX_ENTRY_BYTES);
    if (fabs(want[j]) > maxabs) maxabs = fabs(want[j]);
    r->in_range++;
    /* a copied key's logit is bit-identical to its source's */
    uint32_t src = cplab_kvformat_idx_source(r->x->seed, CPLAB_KBI_LAYER, keys_req(0), (uint32_t)j);
    if (src != (uint32_t)j && (int64_t)src >= r->ks && (int64_t)src < r->ke) {
      r->tie_pairs++;
      r->tie_bad += memcmp(&r->got[j], &r->got[src], sizeof(float)) != 0;
    }
  }
  for (int64_t j = r->ks; j < r->ke; j++) {
    double e = fabs((double)r->got[j] - want[j]);
    err = cplab_stats_worst(err, e);
  }
  r->max_rel = maxabs > 0 ? err / maxabs : err;
  free(want);
  return NULL;
}

static int logits_check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  logits_inst *x = p;
  const logits_shape *s = x->s;
  logits_set *st = &x->set[0];
  int64_t m = s->queries, n = s->keys;
  int nrows = x->check_rows;
  memset(res, 0, sizeof *res);
  int rc = cplab_poison_bytes(st->logits, (size_t)m * n * 4, 0xFF, stream, d);
  if (!rc) rc = logits_run_set(x, 0, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  if (rc) return rc;
  uint8_t *keys = malloc((size_t)n * CPLAB_IDX_ENTRY_BYTES);
  float *got = malloc((size_t)nrows * n * 4);
  logits_row *rows = calloc((size_t)nrows, sizeof *rows);
  if (!keys || !got || !rows) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for the check");
  if (!rc) rc = cplab_dev_download(keys, st->keys, (size_t)n * CPLAB_IDX_ENTRY_BYTES, d);
  for (int i = 0; !rc && i < nrows; i++) {
    int64_t row = cplab_kbi_check_row(i, nrows, m);
    logits_row *r = &rows[i];
    r->x = x, r->keys = keys, r->got = got + (size_t)i * n, r->ks = x->ks[row], r->ke = x->ke[row];
    r->max_rel = NAN; /* until the row's check sets it: a row that never ran fails the check */
    rc = cplab_dev_download(got + (size_t)i * n, st->logits + row * n, (size_t)n * 4, d);
    if (!rc)
      rc = sim_indexer_query_make(x->seed, CPLAB_KBI_LAYER, query_req(0), (uint32_t)(n - m + row), s->heads, &r->ref,
                                  d);
  }
  if (!rc) {
    cplab_kb_each_on_a_thread(logits_check_one, rows, sizeof *rows, nrows);
    int64_t outside_bad = 0, tie_pairs = 0, tie_bad = 0;
    for (int i = 0; i < nrows; i++) {
      res->max_rel_err = cplab_stats_worst(res->max_rel_err, rows[i].max_rel);
      res->compared += (int64_t)n;
      outside_bad += rows[i].outside_bad, tie_pairs += rows[i].tie_pairs, tie_bad += rows[i].tie_bad;
    }
    res->rows = nrows;
    res->mismatches = outside_bad + tie_bad;
    res->tol_rel_err = LOGITS_TOL_REL;
    res->ok = res->max_rel_err <= LOGITS_TOL_REL && res->mismatches == 0;
    snprintf(res->reference, sizeof res->reference,
             "sim_indexer_logit (double): error / the row's max |logit|; outside [ks, ke) -inf and copied keys' "
             "logits bit-identical, exactly");
    snprintf(res->detail, sizeof res->detail,
             "%d rows x %lld keys: max error %.3g of the row's max |logit| (<= %g), %lld logits outside [ks, ke) not "
             "-inf, %lld of %lld copied keys not bit-identical to their source",
             nrows, (long long)n, res->max_rel_err, LOGITS_TOL_REL, (long long)outside_bad, (long long)tie_bad,
             (long long)tie_pairs);
  }
  free(keys), free(got), free(rows);
  return rc;
}

static void logits_work(const void *p, cplab_kb_work *w) {
  const logits_inst *x = p;
  w->flop = w->flop_valid = 2.0 * (double)x->pairs * x->s->heads * CPLAB_IDX_DIM;
  w->bytes = x->set_bytes;
  w->sets = x->sets;
  w->set_bytes = x->set_bytes;
  snprintf(w->launcher, sizeof w->launcher, "cplab_indexer_logits");
}

const cplab_kb_kernel cplab_kb_indexer_logits_prefill = {
    .name = "indexer_logits_prefill",
    .summary = "cplab_indexer_logits: e4m3 q [queries][heads][128] over gathered 132-byte keys, fp32 logits",
    .cases = logits_cases,
    .ncases = (int)(sizeof logits_cases / sizeof logits_cases[0]),
    .shape_json = logits_shape_json,
    .shape_text = logits_shape_text,
    .setup = logits_setup,
    .check = logits_check,
    .run = logits_run,
    .work = logits_work,
    .teardown = logits_teardown,
    .check_kind = CPLAB_KB_CHECK_TOLERANCE,
    .rate = CPLAB_KB_RATE_FP8_FLOPS,
    .work_note = "tflops: 2 x (query, key) pairs in [ks, ke) x heads x 128 FLOP (the dot products), against the fp8 "
                 "GEMM ceiling",
};
