/* cplab-kernel-bench: the decode indexer logits (cplab_indexer_logits_decode)
 * straight from the paged indexer cache, and the decode indexer as a whole
 * (indexer_topk_decode: those logits, then cplab_topk_split on them, as the
 * executor's decode step runs them; timed as one operation, so that its time
 * against the two kernels' own says what the logits' round trip through
 * memory and the second launch cost: the question a fused kernel answers).
 * A case is `batch` decode rows of `context` tokens each under DCP `dcp`
 * (interleave 1): the rank's own keys are ceil(context / dcp) a row (rank
 * 0's count), in blocks of 64 slots whose order in the cache is shuffled, as
 * a long-running server's is. The kernel is bound by the key bytes (132 a
 * key), so its rate is GB/s of key bytes against the copy ceiling (the
 * issue's measure); the logits it writes are a thirty-third of that.
 * Checked against sim_indexer_logit (double) within the same bound as the
 * prefill logits (both run fp8 products on tensor cores), copied keys
 * bit-identical; indexer_topk_decode's top-k exactly against the host top-k
 * of the logits written. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kvformat.h"
#include "cplab/stats.h"
#include "cplab_kernels.h"
#include "indexer_ref.h"
#include "kernel_bench.h"
#include "kernel_indexer.h"

#define DL_BLOCK 64
#define DL_TOL_REL 2e-3 /* as the prefill logits' (bench/kernel_indexer.c) */

typedef struct dl_shape {
  int heads, dcp, k; /* k: the top-k after the logits (indexer_topk_decode), 0 for the logits alone */
  int64_t batch, context;
} dl_shape;

#define DL(nm, def, h, b, c, dc, nt)                                                                              \
  {                                                                                                              \
    nm, def, &(const dl_shape){.heads = h, .dcp = dc, .batch = b, .context = c}, nt                             \
  }
#define N_FM "FlashMLA's decode batch sizes at 32k; DeepSeek-V3.2's indexer (64 heads)"
#define N_LONG "long context; DeepSeek-V3.2's indexer (64 heads)"
#define N_GLM "GLM-5's indexer (32 heads)"
#define N_DCP "a DCP rank's own keys (1/D of the context, interleave 1)"
#define DI(nm, def, h, b, c, kk, nt)                                                                             \
  {                                                                                                              \
    nm, def, &(const dl_shape){.heads = h, .dcp = 1, .k = kk, .batch = b, .context = c}, nt                     \
  }
#define N_DI "logits then top-k 2048, one operation (the published fused peers: ~17 us at b1 32k)"

static const cplab_kb_case dl_cases[] = {
    DL("dlogits-h64-b1-32k", 1, 64, 1, 32768, 1, N_FM),
    DL("dlogits-h64-b16-32k", 1, 64, 16, 32768, 1, N_FM),
    DL("dlogits-h64-b64-32k", 1, 64, 64, 32768, 1, N_FM),
    DL("dlogits-h64-b128-32k", 1, 64, 128, 32768, 1, N_FM),
    DL("dlogits-h32-b16-32k", 1, 32, 16, 32768, 1, N_GLM),
    DL("dlogits-h64-b1-128k", 1, 64, 1, 131072, 1, N_LONG),
    DL("dlogits-h64-b16-128k", 1, 64, 16, 131072, 1, N_LONG),
    DL("dlogits-h64-b64-128k", 0, 64, 64, 131072, 1, N_LONG),
    DL("dlogits-h64-b16-128k-dcp4", 1, 64, 16, 131072, 4, N_DCP),
    DL("dlogits-h64-b64-128k-dcp8", 0, 64, 64, 131072, 8, N_DCP),
    DL("smoke-dlogits", 0, 32, 2, 300, 2, "tiny: the tests' smoke case (CPU emulation, GPU smoke test)"),
};

static const cplab_kb_case di_cases[] = {
    DI("dindexer-h64-b1-32k", 1, 64, 1, 32768, 2048, N_DI),
    DI("dindexer-h32-b1-32k", 1, 32, 1, 32768, 2048, N_DI " (GLM-5's 32 heads)"),
    DI("dindexer-h64-b16-32k", 1, 64, 16, 32768, 2048, N_DI),
    DI("dindexer-h64-b1-128k", 1, 64, 1, 131072, 2048, N_DI),
    DI("smoke-dindexer", 0, 32, 2, 3000, 256, "tiny: the tests' smoke case (CPU emulation, GPU smoke test)"),
};

static json_t *dl_shape_json(const void *p) {
  const dl_shape *s = p;
  json_t *o = json_pack("{s:i, s:I, s:I, s:i}", "heads", s->heads, "batch", (json_int_t)s->batch, "context",
                        (json_int_t)s->context, "dcp", s->dcp);
  if (o && s->k) json_object_set_new(o, "k", json_integer(s->k));
  return o;
}

static void dl_shape_text(const void *p, char *buf, size_t cap) {
  const dl_shape *s = p;
  int at = snprintf(buf, cap, "h%d b%lld context %lld%s", s->heads, (long long)s->batch, (long long)s->context,
                    s->dcp > 1 ? (s->dcp == 2 ? " dcp 2" : s->dcp == 4 ? " dcp 4" : " dcp 8") : "");
  if (s->k && at >= 0 && (size_t)at < cap) snprintf(buf + at, cap - (size_t)at, " k %d", s->k);
}

typedef struct dl_set {
  uint8_t *cache; /* [slots][132] */
  cplab_kbi_queries q;
  float *logits; /* [batch][keys] */
  int32_t *idx;  /* [batch][k] (indexer_topk_decode) */
  float *score;
} dl_set;

typedef struct dl_inst {
  const dl_shape *s;
  uint64_t seed;
  int sets, turn, check_rows, nb; /* nb: blocks a row */
  int64_t keys, slots;            /* the rank's keys a row; cache slots */
  int32_t *bt, *d_bt, *d_req, *d_cnt, *d_zero; /* d_cnt, d_zero: the rows' key counts and zeros (top-k ke, ks) */
  void *scratch;                               /* cplab_topk_split's (cplab_topk_scratch) */
  size_t scratch_bytes;
  double key_bytes, set_bytes;
  dl_set set[CPLAB_KBI_MAX_SETS];
} dl_inst;

static uint32_t dl_cache_req(int si) { return (uint32_t)(2 * si + 1); }
static uint32_t dl_query_req(int si) { return (uint32_t)(2 * si + 2); }

static void dl_teardown(void *p) {
  dl_inst *x = p;
  cplab_diag d = {0};
  if (!x) return;
  for (int i = 0; i < x->sets; i++) {
    cplab_dev_free(x->set[i].cache, &d), cplab_dev_free(x->set[i].logits, &d);
    cplab_dev_free(x->set[i].idx, &d), cplab_dev_free(x->set[i].score, &d);
    cplab_kbi_queries_free(&x->set[i].q);
  }
  cplab_dev_free(x->d_bt, &d), cplab_dev_free(x->d_req, &d), cplab_dev_free(x->d_cnt, &d);
  cplab_dev_free(x->d_zero, &d), cplab_dev_free(x->scratch, &d);
  free(x->bt);
  free(x);
}

/* Row b's blocks: b·nb .. b·nb + nb - 1 of the cache, in a shuffled order. */
static void dl_table(dl_inst *x) {
  uint64_t rng = x->seed ^ UINT64_C(0xB10C);
  for (int64_t b = 0; b < x->s->batch; b++) {
    int32_t *row = x->bt + b * x->nb;
    for (int i = 0; i < x->nb; i++) row[i] = (int32_t)(b * x->nb + i);
    for (int i = x->nb - 1; i > 0; i--) {
      int j = (int)cplab_kbi_rnd(&rng, (uint64_t)i + 1);
      int32_t t = row[i];
      row[i] = row[j], row[j] = t;
    }
  }
}

static int dl_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  const dl_shape *s = c->shape;
  dl_inst *x = calloc(1, sizeof *x);
  *inst = x;
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  if (s->heads > 64)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "%d heads: the reference (sim_indexer_query) holds at most 64", s->heads);
  int64_t B = s->batch;
  x->s = s, x->seed = env->seed, x->check_rows = cplab_kbi_check_rows(env, B);
  x->keys = (s->context + s->dcp - 1) / s->dcp;
  x->nb = (int)((x->keys + DL_BLOCK - 1) / DL_BLOCK);
  x->slots = B * x->nb * DL_BLOCK;
  x->key_bytes = (double)B * x->keys * CPLAB_IDX_ENTRY_BYTES;
  x->set_bytes = x->key_bytes + (double)B * x->keys * 4 + (double)B * s->heads * (CPLAB_IDX_DIM + 4) +
                 (double)B * s->k * 8;
  x->bt = malloc((size_t)B * x->nb * sizeof *x->bt);
  int32_t *req = malloc((size_t)B * 4), *cnt = malloc((size_t)B * 4);
  int rc = x->bt && req && cnt ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory");
  for (int64_t b = 0; !rc && b < B; b++) req[b] = (int32_t)b, cnt[b] = (int32_t)x->keys;
  if (!rc) dl_table(x);
  if (!rc) rc = cplab_kbi_upload((void **)&x->d_bt, x->bt, (size_t)B * x->nb * 4, d);
  if (!rc) rc = cplab_kbi_upload((void **)&x->d_req, req, (size_t)B * 4, d);
  if (!rc) rc = cplab_kbi_upload((void **)&x->d_cnt, cnt, (size_t)B * 4, d);
  for (int64_t b = 0; !rc && b < B; b++) req[b] = 0;
  if (!rc && s->k) rc = cplab_kbi_upload((void **)&x->d_zero, req, (size_t)B * 4, d);
  if (!rc && s->k) rc = cplab_topk_scratch(B, x->keys, s->k, &x->scratch_bytes, d);
  if (!rc && x->scratch_bytes) rc = cplab_dev_alloc(&x->scratch, x->scratch_bytes, d);
  free(req), free(cnt);
  double cache_bytes = (double)x->slots * CPLAB_IDX_ENTRY_BYTES;
  int sets = rc ? 0 : cplab_kbi_sets(env, x->set_bytes, cache_bytes + (double)B * x->keys * 4 + (double)B * s->k * 8);
  for (int si = 0; !rc && si < sets; si++) {
    dl_set *st = &x->set[si];
    x->sets = si + 1;
    rc = cplab_kbi_gen_keys(env->seed, dl_cache_req(si), NULL, x->slots, &st->cache, stream, d);
    if (!rc) rc = cplab_kbi_gen_queries(env->seed, dl_query_req(si), s->context, B, s->heads, &st->q, stream, d);
    if (!rc) rc = cplab_dev_alloc((void **)&st->logits, (size_t)(B * x->keys) * 4, d);
    if (!rc && s->k) rc = cplab_dev_alloc((void **)&st->idx, (size_t)(B * s->k) * 4, d);
    if (!rc && s->k) rc = cplab_dev_alloc((void **)&st->score, (size_t)(B * s->k) * 4, d);
  }
  return rc;
}

static int dl_run_set(dl_inst *x, int si, void *stream, cplab_diag *d) {
  const dl_shape *s = x->s;
  dl_set *st = &x->set[si];
  int rc = cplab_indexer_logits_decode(
      &(cplab_indexer_logits_decode_params){.q = st->q.q, .weight = st->q.weight, .m = s->batch, .heads = s->heads,
                                            .idx_cache = st->cache, .num_slots = x->slots, .block_table = x->d_bt,
                                            .num_req = (int)s->batch, .max_blocks = x->nb, .block_size = DL_BLOCK,
                                            .row_req = x->d_req, .row_keys = x->d_cnt, .n = x->keys,
                                            .logits = st->logits}, stream, d);
  if (!rc && s->k) /* as the executor's decode step (exec/engine_rank.c) */
    rc = cplab_topk_split(&(cplab_topk_params){.logits = st->logits, .m = s->batch, .n = x->keys, .ks = x->d_zero,
                                               .ke = x->d_cnt, .k = s->k, .idx = st->idx, .score = st->score,
                                               .scratch = x->scratch, .scratch_bytes = x->scratch_bytes}, stream, d);
  return rc;
}

static int dl_run(void *p, void *stream, cplab_diag *d) {
  dl_inst *x = p;
  return dl_run_set(x, x->turn++ % x->sets, stream, d);
}

/* Row b of set 0 against the reference: the worst error relative to the
 * row's max |logit| into *rel; copied keys (cplab_kvformat_idx_source)
 * whose source is in the row too must be bit-identical. */
static int dl_check_row(const dl_inst *x, int64_t b, const float *got, double *rel, int64_t *tie_pairs,
                        int64_t *tie_bad, cplab_diag *d) {
  const dl_shape *s = x->s;
  sim_indexer_query ref;
  int rc = sim_indexer_query_make(x->seed, CPLAB_KBI_LAYER, dl_query_req(0), (uint32_t)(s->context + b), s->heads,
                                  &ref, d);
  if (rc) return rc;
  int64_t base = b * x->nb * DL_BLOCK, span = (int64_t)x->nb * DL_BLOCK;
  int64_t *local = malloc((size_t)span * sizeof *local); /* slot - base -> local index, or -1 */
  double *want = malloc((size_t)x->keys * sizeof *want), maxabs = 0, err = 0;
  if (!local || !want) {
    free(local), free(want);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory for the check");
  }
  for (int64_t i = 0; i < span; i++) local[i] = -1;
  const int32_t *bt = x->bt + b * x->nb;
  uint8_t entry[CPLAB_IDX_ENTRY_BYTES];
  for (int64_t l = 0; l < x->keys; l++) {
    int64_t slot = (int64_t)bt[l / DL_BLOCK] * DL_BLOCK + l % DL_BLOCK;
    local[slot - base] = l;
    cplab_kvformat_idx_generate(x->seed, CPLAB_KBI_LAYER, dl_cache_req(0), (uint32_t)slot, entry);
    want[l] = sim_indexer_logit(&ref, entry);
    if (fabs(want[l]) > maxabs) maxabs = fabs(want[l]);
  }
  for (int64_t l = 0; l < x->keys; l++) {
    double e = fabs((double)got[l] - want[l]);
    err = cplab_stats_worst(err, e);
    int64_t slot = (int64_t)bt[l / DL_BLOCK] * DL_BLOCK + l % DL_BLOCK;
    uint32_t src = cplab_kvformat_idx_source(x->seed, CPLAB_KBI_LAYER, dl_cache_req(0), (uint32_t)slot);
    int64_t ls = (int64_t)src >= base && (int64_t)src < base + span ? local[src - base] : -1;
    if (src != (uint32_t)slot && ls >= 0) {
      (*tie_pairs)++;
      *tie_bad += memcmp(&got[l], &got[ls], sizeof(float)) != 0;
    }
  }
  *rel = maxabs > 0 ? err / maxabs : err;
  free(local), free(want);
  return 0;
}

/* One checked row, on a thread of its own (the double reference takes about
 * a second a row of 32768 keys at 64 heads: device time while the GPU idles). */
typedef struct dl_row {
  const dl_inst *x;
  int64_t b;          /* the batch row */
  const float *got;   /* its logits as the kernel wrote them */
  double rel;         /* out: max error / the row's max |logit| */
  int64_t tie_pairs, tie_bad;
  int rc;
  cplab_diag d;
} dl_row;

static void *dl_check_one(void *p) {
  dl_row *r = p;
  r->rc = dl_check_row(r->x, r->b, r->got, &r->rel, &r->tie_pairs, &r->tie_bad, &r->d);
  return NULL;
}

/* indexer_topk_decode: the checked rows' top-k against the host top-k of
 * the logits the kernel wrote (exact, cplab_kbi_topk_diff); *bad the
 * entries that differ, *compared those compared. */
static int dl_check_topk(const dl_inst *x, int64_t *compared, int64_t *bad, cplab_diag *d) {
  const dl_shape *s = x->s;
  const dl_set *st = &x->set[0];
  int64_t n = x->keys;
  int k = s->k, rc = 0;
  float *row = malloc((size_t)n * 4), *got_s = malloc((size_t)k * 4), *want_s = malloc((size_t)k * 4);
  int32_t *got = malloc((size_t)k * 4), *want = malloc((size_t)k * 4);
  if (!row || !got_s || !want_s || !got || !want) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for the check");
  for (int i = 0; !rc && i < x->check_rows; i++) {
    int64_t b = cplab_kbi_check_row(i, x->check_rows, s->batch);
    rc = cplab_dev_download(row, st->logits + b * n, (size_t)n * 4, d);
    if (!rc) rc = cplab_dev_download(got, st->idx + b * k, (size_t)k * 4, d);
    if (!rc) rc = cplab_dev_download(got_s, st->score + b * k, (size_t)k * 4, d);
    int first = -1;
    if (!rc) rc = cplab_kbi_topk_diff(row, n, k, got, got_s, want, want_s, bad, &first, d);
    if (!rc) *compared += k;
  }
  free(row), free(got_s), free(want_s), free(got), free(want);
  return rc;
}

static int dl_check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  dl_inst *x = p;
  const dl_shape *s = x->s;
  dl_set *st = &x->set[0];
  int64_t n = x->keys;
  memset(res, 0, sizeof *res);
  int rc = cplab_poison_bytes(st->logits, (size_t)(s->batch * n) * 4, 0xFF, stream, d);
  if (!rc && s->k) rc = cplab_poison_bytes(st->idx, (size_t)(s->batch * s->k) * 4, 0xEE, stream, d);
  if (!rc && s->k) rc = cplab_poison_bytes(st->score, (size_t)(s->batch * s->k) * 4, 0xFF, stream, d);
  if (!rc) rc = dl_run_set(x, 0, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  int nrows = x->check_rows;
  float *got = malloc((size_t)nrows * n * 4);
  dl_row *rows = calloc((size_t)nrows, sizeof *rows);
  if (!rc && (!got || !rows)) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for the check");
  for (int i = 0; !rc && i < nrows; i++) {
    /* rel NaN until the row's check sets it: a row that never ran fails the check */
    rows[i] = (dl_row){.x = x, .b = cplab_kbi_check_row(i, nrows, s->batch), .got = got + (size_t)i * n, .rel = NAN};
    rc = cplab_dev_download(got + (size_t)i * n, st->logits + rows[i].b * n, (size_t)n * 4, d);
  }
  int64_t tie_pairs = 0, tie_bad = 0;
  if (!rc) {
    cplab_kb_each_on_a_thread(dl_check_one, rows, sizeof *rows, nrows);
    for (int i = 0; i < nrows; i++) {
      if (rows[i].rc && !rc) rc = cplab_diag_set(d, rows[i].rc, "%s", rows[i].d.msg);
      res->max_rel_err = cplab_stats_worst(res->max_rel_err, rows[i].rel);
      res->compared += n;
      tie_pairs += rows[i].tie_pairs, tie_bad += rows[i].tie_bad;
    }
  }
  free(got), free(rows);
  int64_t tk_compared = 0, tk_bad = 0;
  if (!rc && s->k) rc = dl_check_topk(x, &tk_compared, &tk_bad, d);
  if (rc) return rc;
  res->rows = x->check_rows;
  res->compared += tk_compared;
  res->mismatches = tie_bad + tk_bad;
  res->tol_rel_err = DL_TOL_REL;
  res->ok = res->max_rel_err <= DL_TOL_REL && tie_bad == 0 && tk_bad == 0;
  snprintf(res->reference, sizeof res->reference,
           "sim_indexer_logit (double) of each key the block table names: error / the row's max |logit|; copied "
           "keys' logits bit-identical, exactly");
  snprintf(res->detail, sizeof res->detail,
           "%d rows x %lld keys: max error %.3g of the row's max |logit| (<= %g), %lld of %lld copied keys not "
           "bit-identical to their source",
           x->check_rows, (long long)n, res->max_rel_err, DL_TOL_REL, (long long)tie_bad, (long long)tie_pairs);
  if (s->k) {
    size_t at = strlen(res->detail);
    snprintf(res->detail + at, sizeof res->detail - at,
             "; top-k: %lld of %lld entries differ from the host top-k of the kernel's logits (exact)",
             (long long)tk_bad, (long long)tk_compared);
    snprintf(res->reference, sizeof res->reference,
             "sim_indexer_logit (double) through the block table, error / the row's max |logit|; the top-k: the host "
             "top-k of the logits written, exactly");
  }
  return 0;
}

static void dl_work(const void *p, cplab_kb_work *w) {
  const dl_inst *x = p;
  w->flop = w->flop_valid = 2.0 * (double)x->s->batch * (double)x->keys * x->s->heads * CPLAB_IDX_DIM;
  w->bytes = x->key_bytes;
  w->sets = x->sets;
  w->set_bytes = x->set_bytes;
  snprintf(w->launcher, sizeof w->launcher, "%s",
           x->s->k ? "cplab_indexer_logits_decode + cplab_topk_split" : "cplab_indexer_logits_decode");
}

/* The two kernels share everything but their cases, names and notes. */
#define DL_KERNEL(kname, text, table, note)                                                                          \
  {                                                                                                                  \
    .name = kname, .summary = text, .cases = table, .ncases = (int)(sizeof table / sizeof table[0]),                 \
    .shape_json = dl_shape_json, .shape_text = dl_shape_text, .setup = dl_setup, .check = dl_check, .run = dl_run,  \
    .work = dl_work, .teardown = dl_teardown, .check_kind = CPLAB_KB_CHECK_TOLERANCE, .rate = CPLAB_KB_RATE_BYTES,   \
    .work_note = note                                                                                                \
  }
const cplab_kb_kernel cplab_kb_indexer_logits_decode =
    DL_KERNEL("indexer_logits_decode",
              "cplab_indexer_logits_decode: e4m3 q [batch][heads][128] over the paged 132-byte cache, fp32 logits",
              dl_cases,
              "gbps: the key bytes read (132 a key of the rank's own keys, every row), against the copy ceiling; "
              "the logits written (4 a key) and the queries are not counted");
const cplab_kb_kernel cplab_kb_indexer_topk_decode =
    DL_KERNEL("indexer_topk_decode",
              "the decode indexer in one operation: cplab_indexer_logits_decode, then cplab_topk_split on its logits",
              di_cases,
              "gbps: the key bytes read (132 a key, every row), as indexer_logits_decode's; the time is the two "
              "kernels' together, set against theirs alone (indexer_logits_decode, topk_decode) for the cost of the "
              "logits' round trip through memory");
