/* cplab-kernel-bench: the sparse MLA attention kernels (kernel_bench.h).
 *   sparse_mla_prefill     cplab_sparse_mla_prefill over the bf16 workspace
 *                          (rows gathered with cplab_gather_mla from a
 *                          generated fp8 cache), idx = workspace rows;
 *   sparse_mla_decode_fp8  cplab_sparse_mla_decode_split over the 656-byte
 *                          fp8 cache (cplab/kvformat.h), idx = cache slots:
 *                          the launcher production runs (it spreads a small
 *                          batch's rows over more blocks and merges them,
 *                          or runs cplab_sparse_mla_decode when no split
 *                          pays; kernels.json's "launcher" says which).
 * Inputs, all generated on the device by kernels/gen.cu (never zeros):
 *   - prefill: request r's s_kv cache entries (positions 0..s_kv-1 at slots
 *     0..s_kv-1) gathered into the workspace; query row i is the token at
 *     position s_kv - s_q + i; its indices are distinct workspace rows,
 *     chosen stratified at random over its context (every row of the
 *     workspace when not causal, positions <= its own when causal: the
 *     first 2047 rows of a fresh prefill have fewer than 2048 valid
 *     entries, the rest of their list is -1, as cplab_topk leaves it), in
 *     random order;
 *   - decode: one query row per request (s_q 1, the token at position
 *     s_kv); request b's cache region is slots [b·s_kv/D, (b+1)·s_kv/D) of
 *     a cache of batch·s_kv/D entries (D = dcp: this DCP rank holds 1/D of
 *     every context, interleave 1); a row lists topk entries of which
 *     topk/D are distinct tokens of its own region, at random places, the
 *     others -1 (tokens another DCP rank owns, as cplab's conversion marks
 *     them). Only referenced entries are generated; the rest of the cache
 *     holds poison (0x7F bytes, e4m3 NaN): a kernel that reads a slot it
 *     was not given is caught by the check.
 * Each input set is another request (request = set · batch + b), so the
 * sets' bytes differ. The check: 8 rows (--check-rows) spread over the
 * call, every head, against sim_attention (sim/reference.h, double
 * precision) over the same dequantised rows (gathered on the device by
 * cplab_gather_mla, bit-exact with the host's dequantisation); outputs and
 * lse are poisoned (all-ones bytes, fp32 NaN) before the checked run. The
 * reference runs on host threads, one per checked row.
 * Work: FLOP = 2·rows·topk·heads·(576 + 512) (FlashMLA's count: every index
 * slot, valid or not), and the same over the valid entries only; bytes =
 * distinct gathered rows (1152 B as bf16, 656 B as fp8 entries) + q (bf16)
 * + out (fp32) + lse (fp32): what the kernel must move at least (FlashMLA's
 * count, with cplab's fp32 outputs; the index lists are not counted). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceilings.h"
#include "cplab/fp8.h"
#include "cplab/kvformat.h"
#include "cplab/stats.h"
#include "cplab_kernels.h"
#include "kernel_bench.h"
#include "reference.h"

#define DQK CPLAB_MLA_ROW_DIM  /* 576 */
#define DV CPLAB_MLA_NOPE_DIM  /* 512 */
#define LAYER 0
#define MAX_CHECK_ROWS 64

/* The check's tolerance against the double-precision reference, per (row,
 * head): the relative L2 error of out, and the error of lse (natural log)
 * within ATTN_TOL_LSE_ABS + ATTN_TOL_LSE_REL · |lse|. They are of the order
 * of tests/gpu/test_gpu_attention.c's bounds and of FlashMLA's tests (out
 * within rel 3/128 ≈ 2.3e-2 with the softmax weights rounded to bf16 before
 * they multiply the values; lse from fp32 sums of scores that the tensor
 * cores accumulate in fp32: an error relative to |lse|, about FlashMLA's
 * 2/65536). */
#define ATTN_TOL_OUT_REL_L2 2e-2
#define ATTN_TOL_LSE_ABS 1e-3
#define ATTN_TOL_LSE_REL 3e-5

/* Softmax scales: 1/sqrt(qk_nope + rope) of the model, FlashMLA's 1/sqrt(576). */
#define SCALE_GLM5 0.0625               /* 1/sqrt(192 + 64) */
#define SCALE_DSV32 0.07216878364870322 /* 1/sqrt(128 + 64) */
#define SCALE_FM (1.0 / 24.0)           /* 1/sqrt(576) */

typedef struct attn_shape {
  int heads, topk, dcp, causal;
  int64_t s_q, s_kv; /* query rows and context per request */
  int batch;
  double scale;
} attn_shape;

#define K 2048
#define PREFILL(nm, def, h, sq, skv, caus, sc, nt)                                                                   \
  {                                                                                                                 \
    nm, def,                                                                                                         \
        &(const attn_shape){                                                                                         \
            .heads = h, .topk = K, .dcp = 1, .causal = caus, .s_q = sq, .s_kv = skv, .batch = 1, .scale = sc},      \
        nt                                                                                                           \
  }
#define DECODE(nm, def, h, b, ctx, D, sc, nt)                                                                         \
  {                                                                                                                  \
    nm, def,                                                                                                          \
        &(const attn_shape){                                                                                          \
            .heads = h, .topk = K, .dcp = D, .causal = 0, .s_q = 1, .s_kv = ctx, .batch = b, .scale = sc},           \
        nt                                                                                                            \
  }

#define N_H8 "GLM-5 tp8 (8 heads per rank)"
#define N_H16 "GLM-5 tp4, DeepSeek-V3.2 tp8 (16 heads per rank)"
#define N_H32 "GLM-5 tp2, DeepSeek-V3.2 tp4 (32 heads per rank)"
#define N_H64 "GLM-5 tp1, DeepSeek-V3.2 tp2 (64 heads per rank)"
#define N_H128 "DeepSeek-V3.2 tp1 (128 heads)"
#define N_FM_P "FlashMLA's sparse prefill benchmark shape (not causal)"
#define N_FM_D "FlashMLA's sparse fp8 decode benchmark shape"
#define N_DCP "a DCP rank: 1/D of each row valid, the rest -1 (pcp = dcp: all heads)"
#define N_SMOKE "tiny: the tests' smoke case (CPU emulation, GPU smoke test)"

/* cplab-bench's per-rank prefill: a fresh prefill chunk of N tokens, causal. */
#define PREFILL_CHUNKS(h, sc, nt, d4, d32)                                                                           \
  PREFILL("prefill-h" #h "-4k", d4, h, 4096, 4096, 1, sc, nt),                                                       \
      PREFILL("prefill-h" #h "-8k", 0, h, 8192, 8192, 1, sc, nt),                                                    \
      PREFILL("prefill-h" #h "-16k", 0, h, 16384, 16384, 1, sc, nt),                                                 \
      PREFILL("prefill-h" #h "-32k", d32, h, 32768, 32768, 1, sc, nt)

static const cplab_kb_case prefill_cases[] = {
    PREFILL("fm-prefill-h64", 1, 64, 4096, 32768, 0, SCALE_FM, N_FM_P),
    PREFILL("fm-prefill-h128", 1, 128, 4096, 32768, 0, SCALE_FM, N_FM_P),
    PREFILL_CHUNKS(8, SCALE_GLM5, N_H8, 1, 1),
    PREFILL_CHUNKS(16, SCALE_GLM5, N_H16, 1, 1),
    PREFILL_CHUNKS(32, SCALE_GLM5, N_H32, 1, 1),
    PREFILL_CHUNKS(64, SCALE_GLM5, N_H64, 1, 1),
    PREFILL_CHUNKS(128, SCALE_DSV32, N_H128, 1, 1),
    {"smoke-prefill", 0,
     &(const attn_shape){
         .heads = 16, .topk = 128, .dcp = 1, .causal = 1, .s_q = 16, .s_kv = 136, .batch = 1, .scale = SCALE_GLM5},
     N_SMOKE},
};

/* Decode batches 1, 16, 64, 128 at one context; dflt marks the defaults by batch. */
#define DECODE_BATCHES(pre, h, ctx, ctxname, D, sc, nt, d1, d16, d64, d128)                                           \
  DECODE(pre "-b1-" ctxname, d1, h, 1, ctx, D, sc, nt), DECODE(pre "-b16-" ctxname, d16, h, 16, ctx, D, sc, nt),     \
      DECODE(pre "-b64-" ctxname, d64, h, 64, ctx, D, sc, nt), DECODE(pre "-b128-" ctxname, d128, h, 128, ctx, D, sc, nt)

static const cplab_kb_case decode_cases[] = {
    DECODE("fm-decode-h64-b1", 1, 64, 1, 32768, 1, SCALE_FM, N_FM_D),
    DECODE("fm-decode-h64-b16", 1, 64, 16, 32768, 1, SCALE_FM, N_FM_D),
    DECODE("fm-decode-h64-b64", 1, 64, 64, 32768, 1, SCALE_FM, N_FM_D),
    DECODE("fm-decode-h64-b128", 1, 64, 128, 32768, 1, SCALE_FM, N_FM_D),
    DECODE("fm-decode-h128-b1", 1, 128, 1, 32768, 1, SCALE_FM, N_FM_D),
    DECODE("fm-decode-h128-b16", 1, 128, 16, 32768, 1, SCALE_FM, N_FM_D),
    DECODE("fm-decode-h128-b64", 1, 128, 64, 32768, 1, SCALE_FM, N_FM_D),
    DECODE("fm-decode-h128-b128", 1, 128, 128, 32768, 1, SCALE_FM, N_FM_D),
    /* TP ranks' heads at 32k (64 and 128 heads at 32k: the fm- cases), then 8k and 128k contexts. */
    DECODE_BATCHES("decode-h8", 8, 32768, "32k", 1, SCALE_GLM5, N_H8, 1, 0, 1, 0),
    DECODE_BATCHES("decode-h16", 16, 32768, "32k", 1, SCALE_GLM5, N_H16, 1, 0, 1, 0),
    DECODE_BATCHES("decode-h32", 32, 32768, "32k", 1, SCALE_GLM5, N_H32, 1, 0, 1, 0),
    DECODE_BATCHES("decode-h8", 8, 8192, "8k", 1, SCALE_GLM5, N_H8, 0, 0, 0, 0),
    DECODE_BATCHES("decode-h16", 16, 8192, "8k", 1, SCALE_GLM5, N_H16, 0, 0, 0, 0),
    DECODE_BATCHES("decode-h32", 32, 8192, "8k", 1, SCALE_GLM5, N_H32, 0, 0, 0, 0),
    DECODE_BATCHES("decode-h64", 64, 8192, "8k", 1, SCALE_GLM5, N_H64, 1, 0, 0, 1),
    DECODE_BATCHES("decode-h128", 128, 8192, "8k", 1, SCALE_DSV32, N_H128, 0, 0, 0, 0),
    DECODE_BATCHES("decode-h8", 8, 131072, "128k", 1, SCALE_GLM5, N_H8, 0, 0, 0, 0),
    DECODE_BATCHES("decode-h16", 16, 131072, "128k", 1, SCALE_GLM5, N_H16, 0, 0, 0, 0),
    DECODE_BATCHES("decode-h32", 32, 131072, "128k", 1, SCALE_GLM5, N_H32, 0, 0, 0, 0),
    DECODE_BATCHES("decode-h64", 64, 131072, "128k", 1, SCALE_GLM5, N_H64, 1, 0, 0, 1),
    DECODE_BATCHES("decode-h128", 128, 131072, "128k", 1, SCALE_DSV32, N_H128, 0, 0, 0, 0),
    /* DCP ranks at 32k. */
    DECODE_BATCHES("dcp2-h64", 64, 32768, "32k", 2, SCALE_GLM5, N_DCP, 1, 0, 1, 0),
    DECODE_BATCHES("dcp4-h64", 64, 32768, "32k", 4, SCALE_GLM5, N_DCP, 1, 0, 1, 0),
    DECODE_BATCHES("dcp8-h64", 64, 32768, "32k", 8, SCALE_GLM5, N_DCP, 1, 0, 1, 0),
    DECODE_BATCHES("dcp16-h64", 64, 32768, "32k", 16, SCALE_GLM5, N_DCP, 0, 0, 0, 0),
    DECODE_BATCHES("dcp2-h128", 128, 32768, "32k", 2, SCALE_DSV32, N_DCP, 0, 0, 0, 0),
    DECODE_BATCHES("dcp4-h128", 128, 32768, "32k", 4, SCALE_DSV32, N_DCP, 0, 0, 0, 0),
    DECODE_BATCHES("dcp8-h128", 128, 32768, "32k", 8, SCALE_DSV32, N_DCP, 0, 0, 0, 0),
    {"smoke-decode", 0,
     &(const attn_shape){
         .heads = 16, .topk = 1024, .dcp = 2, .causal = 0, .s_q = 1, .s_kv = 2048, .batch = 3, .scale = SCALE_GLM5},
     N_SMOKE},
};

/* ---- shape fields ------------------------------------------------------------------ */

static json_t *shape_json(const void *p) {
  const attn_shape *s = p;
  return json_pack("{s:i, s:I, s:I, s:i, s:i, s:i, s:b, s:f}", "heads", s->heads, "s_q", (json_int_t)s->s_q, "s_kv",
                   (json_int_t)s->s_kv, "topk", s->topk, "batch", s->batch, "dcp", s->dcp, "causal", s->causal,
                   "scale", s->scale);
}

static void shape_text(const void *p, char *buf, size_t cap) {
  const attn_shape *s = p;
  int n = snprintf(buf, cap, "h%d b%d s_q %lld s_kv %lld k %d", s->heads, s->batch, (long long)s->s_q,
                   (long long)s->s_kv, s->topk);
  if (n > 0 && (size_t)n < cap && s->dcp > 1) n += snprintf(buf + n, cap - (size_t)n, " dcp %d", s->dcp);
  if (n > 0 && (size_t)n < cap && s->causal) snprintf(buf + n, cap - (size_t)n, " causal");
}

/* ---- instances ----------------------------------------------------------------------- */

typedef struct attn_set {
  uint8_t *cache;  /* [num_slots][656] */
  uint16_t *ws;    /* prefill: [s_kv][576] */
  uint16_t *q;     /* [m][heads][576] */
  int32_t *idx;    /* [m][topk] */
  float *out, *lse;
} attn_set;

typedef struct attn_inst {
  const attn_shape *s;
  int decode, sets, turn, check_rows;
  int64_t m, num_slots;
  attn_set set[256];
  void *scratch;            /* decode: the split launcher's scratch (NULL when no split pays) */
  size_t scratch_bytes;
  int splits; /* decode: the split launcher's choice for the case's batch */
  int32_t *idx0;            /* host: set 0's index lists */
  int64_t valid0, unique0;  /* set 0's valid entries, distinct rows */
  double set_bytes;
} attn_inst;

static uint64_t rnd(uint64_t *s, uint64_t n) { return cplab_bench_splitmix(s) % n; }

/* `count` distinct values of [0, range) (count <= range), stratified at
 * random, into out; then the first `count` of out shuffled. */
static void distinct_sample(uint64_t *rng, int64_t range, int count, int32_t *out) {
  int64_t stride = range / count;
  for (int j = 0; j < count; j++) out[j] = (int32_t)(j * stride + (int64_t)rnd(rng, (uint64_t)stride));
  for (int j = count - 1; j > 0; j--) {
    int i = (int)rnd(rng, (uint64_t)j + 1);
    int32_t x = out[j];
    out[j] = out[i], out[i] = x;
  }
}

/* The index lists of one set (host, [m][topk]); returns valid entries. */
static int64_t make_indices(const attn_shape *s, int decode, uint64_t *rng, int32_t *idx) {
  int64_t m = decode ? s->batch : s->s_q, valid = 0, local = s->s_kv / s->dcp;
  int k = s->topk;
  for (int64_t i = 0; i < m; i++) {
    int32_t *row = idx + i * k;
    if (!decode) {
      int64_t ctx = s->causal ? s->s_kv - s->s_q + i + 1 : s->s_kv;
      int n = ctx < k ? (int)ctx : k;
      distinct_sample(rng, ctx, n, row);
      for (int j = n; j < k; j++) row[j] = -1;
      valid += n;
      continue;
    }
    /* decode: topk/D tokens of the row's own region at random places among the topk entries */
    int n = k / s->dcp;
    distinct_sample(rng, local, n, row);
    for (int j = 0; j < n; j++) row[j] = (int32_t)(i * local + row[j]);
    for (int j = n; j < k; j++) row[j] = -1;
    for (int j = k - 1; s->dcp > 1 && j > 0; j--) {
      int r = (int)rnd(rng, (uint64_t)j + 1);
      int32_t x = row[j];
      row[j] = row[r], row[r] = x;
    }
    valid += n;
  }
  return valid;
}

static int64_t count_unique(const int32_t *idx, int64_t n, int64_t slots) {
  uint8_t *seen = calloc((size_t)(slots + 7) / 8, 1);
  int64_t u = 0;
  if (!seen) return -1;
  for (int64_t e = 0; e < n; e++) {
    int64_t x = idx[e];
    if (x < 0 || x >= slots || (seen[x >> 3] >> (x & 7) & 1)) continue;
    seen[x >> 3] |= (uint8_t)(1u << (x & 7));
    u++;
  }
  free(seen);
  return u;
}

/* Device arrays of int32 / int64 from host ones. */
static int upload(void **dev, const void *host, size_t bytes, cplab_diag *d) {
  int rc = cplab_dev_alloc(dev, bytes, d);
  return rc ? rc : cplab_dev_upload(*dev, host, bytes, d);
}

/* Generate set si's cache (and workspace) and queries; idx is its host lists. */
static int make_set(attn_inst *x, int si, const int32_t *idx, uint64_t seed, void *stream, cplab_diag *d) {
  const attn_shape *s = x->s;
  attn_set *st = &x->set[si];
  int64_t m = x->m, k = s->topk, local = s->s_kv / s->dcp;
  size_t qb = (size_t)m * s->heads * DQK * 2;
  int64_t n = x->decode ? 0 : s->s_kv; /* entries to generate */
  if (x->decode)
    for (int64_t e = 0; e < m * k; e++) n += idx[e] >= 0;
  int32_t *req = malloc((size_t)(n > m ? n : m) * 4), *pos = malloc((size_t)(n > m ? n : m) * 4);
  int64_t *slot = malloc((size_t)(n ? n : 1) * 8);
  void *d_req = NULL, *d_pos = NULL, *d_slot = NULL;
  int rc = !req || !pos || !slot ? cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory") : 0;
  if (!rc) rc = cplab_dev_alloc((void **)&st->cache, (size_t)x->num_slots * CPLAB_MLA_ENTRY_BYTES, d);
  if (!rc) rc = cplab_poison_bytes(st->cache, (size_t)x->num_slots * CPLAB_MLA_ENTRY_BYTES, 0x7F, stream, d);
  if (!rc && x->decode) {
    int64_t g = 0;
    for (int64_t e = 0; e < m * k; e++)
      if (idx[e] >= 0) {
        int64_t b = idx[e] / local;
        req[g] = (int32_t)(si * s->batch + b), pos[g] = (int32_t)((idx[e] - b * local) * s->dcp), slot[g++] = idx[e];
      }
  } else {
    for (int64_t t = 0; t < n; t++) req[t] = si, pos[t] = (int32_t)t, slot[t] = t;
  }
  if (!rc) rc = upload(&d_req, req, (size_t)n * 4, d);
  if (!rc) rc = upload(&d_pos, pos, (size_t)n * 4, d);
  if (!rc) rc = upload(&d_slot, slot, (size_t)n * 8, d);
  if (!rc) rc = cplab_gen_cache(&(cplab_gen_cache_params){.seed = seed, .layer = LAYER, .req = d_req, .pos = d_pos,
                                                          .slot = d_slot, .n = n, .kv_cache = st->cache,
                                                          .idx_cache = NULL, .num_slots = x->num_slots}, stream, d);
  if (!rc && !x->decode) {
    rc = cplab_dev_alloc((void **)&st->ws, (size_t)s->s_kv * DQK * 2, d);
    if (!rc) rc = cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = st->cache, .num_slots = x->num_slots,
                                                              .slot = d_slot, .rows = s->s_kv, .out = st->ws},
                                   stream, d);
  }
  if (!rc) rc = cplab_dev_sync(stream, d); /* the request lists are reused below */
  cplab_dev_free(d_req, d), cplab_dev_free(d_pos, d), cplab_dev_free(d_slot, d);
  d_req = d_pos = NULL;
  /* queries: prefill row i is position s_kv - s_q + i of request si; decode row b position s_kv of its request */
  for (int64_t i = 0; !rc && i < m; i++) {
    req[i] = (int32_t)(x->decode ? si * s->batch + i : si);
    pos[i] = (int32_t)(x->decode ? s->s_kv : s->s_kv - s->s_q + i);
  }
  if (!rc) rc = upload(&d_req, req, (size_t)m * 4, d);
  if (!rc) rc = upload(&d_pos, pos, (size_t)m * 4, d);
  if (!rc) rc = cplab_dev_alloc((void **)&st->q, qb, d);
  if (!rc)
    rc = cplab_gen_mla_query(&(cplab_gen_mla_query_params){.seed = seed, .layer = LAYER, .req = d_req, .pos = d_pos,
                                                           .m = m, .head0 = 0, .heads_local = s->heads, .q = st->q},
                             stream, d);
  if (!rc) rc = upload((void **)&st->idx, idx, (size_t)(m * k) * 4, d);
  if (!rc) rc = cplab_dev_alloc((void **)&st->out, (size_t)m * s->heads * DV * 4, d);
  if (!rc) rc = cplab_dev_alloc((void **)&st->lse, (size_t)m * s->heads * 4, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  cplab_dev_free(d_req, d), cplab_dev_free(d_pos, d);
  free(req), free(pos), free(slot);
  return rc;
}

static void teardown(void *p) {
  attn_inst *x = p;
  cplab_diag d = {0};
  if (!x) return;
  for (int i = 0; i < x->sets; i++) {
    attn_set *st = &x->set[i];
    cplab_dev_free(st->cache, &d), cplab_dev_free(st->ws, &d), cplab_dev_free(st->q, &d);
    cplab_dev_free(st->idx, &d), cplab_dev_free(st->out, &d), cplab_dev_free(st->lse, &d);
  }
  cplab_dev_free(x->scratch, &d);
  free(x->idx0);
  free(x);
}

static int setup(const cplab_kb_case *c, const cplab_kb_env *env, int decode, void *stream, void **inst,
                 cplab_diag *d) {
  const attn_shape *s = c->shape;
  attn_inst *x = calloc(1, sizeof *x);
  *inst = x;
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  x->s = s, x->decode = decode, x->check_rows = env->check_rows;
  x->m = decode ? s->batch : s->s_q;
  x->num_slots = decode ? (int64_t)s->batch * (s->s_kv / s->dcp) : s->s_kv;
  int64_t k = s->topk, m = x->m;
  uint64_t rng = env->seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t)(c - (decode ? decode_cases : prefill_cases) + 1));
  int32_t *idx = malloc((size_t)(m * k) * 4);
  x->idx0 = malloc((size_t)(m * k) * 4);
  if (!idx || !x->idx0) {
    free(idx);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory for %lld index lists", (long long)m);
  }
  x->valid0 = make_indices(s, decode, &rng, x->idx0);
  x->unique0 = count_unique(x->idx0, m * k, x->num_slots);
  if (x->unique0 < 0) {
    free(idx);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  }
  /* rotation: enough sets that the bytes the runs touch span 4x the L2, within the limits */
  double row_bytes = decode ? CPLAB_MLA_ENTRY_BYTES : DQK * 2;
  double io = (double)m * s->heads * (DQK * 2 + DV * 4 + 4);
  x->set_bytes = (double)x->unique0 * row_bytes + io;
  double alloc = (double)x->num_slots * CPLAB_MLA_ENTRY_BYTES + (decode ? 0 : (double)s->s_kv * DQK * 2) + io +
                 (double)(m * k) * 4;
  int64_t sets = (int64_t)ceil(4.0 * (double)env->l2_bytes / x->set_bytes);
  int cap = env->max_sets < (int)(sizeof x->set / sizeof x->set[0]) ? env->max_sets
                                                                     : (int)(sizeof x->set / sizeof x->set[0]);
  if (sets > cap) sets = cap;
  while (sets > 2 && (double)sets * alloc > (double)env->mem_budget) sets--;
  if (sets < 2) sets = 2;
  int rc = 0;
  for (int si = 0; !rc && si < sets; si++) {
    x->sets = si + 1;
    if (si) make_indices(s, decode, &rng, idx);
    rc = make_set(x, si, si ? idx : x->idx0, env->seed, stream, d);
  }
  free(idx);
  /* decode runs the split launcher, as production would: it splits a small batch's rows over more blocks (its
   * scratch holds the partial results, one buffer for every set: the runs are serial) or, when no split pays,
   * launches the plain kernel */
  if (!rc && decode) rc = cplab_sparse_mla_decode_splits(m, s->heads, s->topk, &x->splits, d);
  if (!rc && decode) rc = cplab_sparse_mla_decode_scratch(m, s->heads, s->topk, x->splits, &x->scratch_bytes, d);
  if (!rc && x->scratch_bytes) rc = cplab_dev_alloc(&x->scratch, x->scratch_bytes, d);
  return rc;
}

static int setup_prefill(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  return setup(c, env, 0, stream, inst, d);
}
static int setup_decode(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  return setup(c, env, 1, stream, inst, d);
}

static int run_set(attn_inst *x, int si, void *stream, cplab_diag *d) {
  const attn_shape *s = x->s;
  attn_set *st = &x->set[si];
  if (x->decode) {
    cplab_sparse_mla_decode_params p = {.q = st->q, .m = x->m, .heads = s->heads, .kv_cache = st->cache,
                                        .num_slots = x->num_slots, .slot = st->idx, .k = s->topk,
                                        .scale = (float)s->scale, .out = st->out, .lse = st->lse,
                                        .splits = x->splits, .scratch = x->scratch, .scratch_bytes = x->scratch_bytes};
    return cplab_sparse_mla_decode_split(&p, stream, d);
  }
  cplab_sparse_mla_prefill_params p = {.q = st->q, .m = x->m, .heads = s->heads, .workspace = st->ws,
                                       .rows = s->s_kv, .idx = st->idx, .k = s->topk, .scale = (float)s->scale,
                                       .out = st->out, .lse = st->lse};
  return cplab_sparse_mla_prefill(&p, stream, d);
}

static int run(void *p, void *stream, cplab_diag *d) {
  attn_inst *x = p;
  return run_set(x, x->turn++ % x->sets, stream, d);
}

/* ---- the check ----------------------------------------------------------------------- */

typedef struct check_row {
  const attn_inst *x;
  int64_t row;
  size_t n;              /* valid entries */
  const uint16_t *rows;  /* their dequantised bf16 rows [n][576] */
  const uint16_t *q;     /* [heads][576] */
  const float *out, *lse; /* the kernel's [heads][512], [heads] */
  double max_rel, max_lse, max_lse_bound; /* max_lse_bound: the worst lse error over its bound */
  int bad_empty, alloc_failed;
} check_row;

static double bf16(uint16_t b) { return (double)cplab_bf16_to_f32(b); }

static void *check_one(void *p) {
  check_row *r = p;
  const attn_shape *s = r->x->s;
  int H = s->heads;
  double *q = malloc((size_t)H * DQK * 8), *kv = malloc((r->n ? r->n : 1) * DQK * 8);
  double *out = malloc((size_t)H * DV * 8), *lse = malloc((size_t)H * 8);
  if (!q || !kv || !out || !lse) {
    r->alloc_failed = 1;
  } else {
    for (size_t e = 0; e < (size_t)H * DQK; e++) q[e] = bf16(r->q[e]);
    for (size_t e = 0; e < r->n * DQK; e++) kv[e] = bf16(r->rows[e]);
    sim_attention(q, H, kv, r->n, s->scale, out, lse);
    for (int h = 0; h < H; h++) {
      const float *got = r->out + (size_t)h * DV;
      if (r->n == 0) {
        int ok = r->lse[h] == -INFINITY;
        for (int e = 0; e < DV; e++) ok &= got[e] == 0.0f;
        r->bad_empty += !ok;
        continue;
      }
      double num = 0, den = 0;
      for (int e = 0; e < DV; e++) {
        double diff = got[e] - out[(size_t)h * DV + e];
        num += diff * diff, den += out[(size_t)h * DV + e] * out[(size_t)h * DV + e];
      }
      double rel = sqrt(num) / (den > 0 ? sqrt(den) : 1.0), el = fabs(r->lse[h] - lse[h]);
      double eb = el / (ATTN_TOL_LSE_ABS + ATTN_TOL_LSE_REL * fabs(lse[h]));
      r->max_lse_bound = cplab_stats_worst(r->max_lse_bound, eb);
      r->max_rel = cplab_stats_worst(r->max_rel, rel);
      r->max_lse = cplab_stats_worst(r->max_lse, el);
    }
  }
  free(q), free(kv), free(out), free(lse);
  return NULL;
}

static int check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  attn_inst *x = p;
  const attn_shape *s = x->s;
  attn_set *st = &x->set[0];
  int H = s->heads, k = s->topk;
  int64_t m = x->m;
  int nrows = x->check_rows < m ? x->check_rows : (int)m;
  if (nrows > MAX_CHECK_ROWS) nrows = MAX_CHECK_ROWS;
  memset(res, 0, sizeof *res);
  /* poison the outputs, run on set 0 */
  int rc = cplab_poison_bytes(st->out, (size_t)m * H * DV * 4, 0xFF, stream, d);
  if (!rc) rc = cplab_poison_bytes(st->lse, (size_t)m * H * 4, 0xFF, stream, d);
  if (!rc) rc = run_set(x, 0, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  if (rc) return rc;
  /* the sampled rows (spread over the call, first and last included) and their valid entries */
  check_row cr[MAX_CHECK_ROWS];
  int64_t total = 0, *slots = malloc((size_t)nrows * k * 8);
  size_t per_q = (size_t)H * DQK, per_out = (size_t)H * DV;
  uint16_t *q = malloc((size_t)nrows * per_q * 2);
  float *out = malloc((size_t)nrows * per_out * 4), *lse = malloc((size_t)nrows * H * 4);
  uint16_t *rows = NULL;
  void *d_slots = NULL, *d_rows = NULL;
  if (!slots || !q || !out || !lse) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for the check");
  for (int i = 0; !rc && i < nrows; i++) {
    int64_t row = nrows == 1 ? 0 : (int64_t)i * (m - 1) / (nrows - 1);
    cr[i] = (check_row){.x = x, .row = row};
    for (int j = 0; j < k; j++) {
      int32_t v = x->idx0[row * k + j];
      if (v >= 0 && v < x->num_slots) slots[total++] = v, cr[i].n++;
    }
    rc = cplab_dev_download(q + i * per_q, st->q + row * per_q, per_q * 2, d);
    if (!rc) rc = cplab_dev_download(out + i * per_out, st->out + row * per_out, per_out * 4, d);
    if (!rc) rc = cplab_dev_download(lse + (size_t)i * H, st->lse + row * H, (size_t)H * 4, d);
  }
  /* the rows the kernel was given, dequantised on the device as the kernels do it */
  if (!rc && total) {
    rows = malloc((size_t)total * DQK * 2);
    if (!rows) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for the check");
    if (!rc) rc = upload(&d_slots, slots, (size_t)total * 8, d);
    if (!rc) rc = cplab_dev_alloc(&d_rows, (size_t)total * DQK * 2, d);
    if (!rc) rc = cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = st->cache, .num_slots = x->num_slots,
                                                              .slot = d_slots, .rows = total, .out = d_rows},
                                   stream, d);
    if (!rc) rc = cplab_dev_sync(stream, d);
    if (!rc) rc = cplab_dev_download(rows, d_rows, (size_t)total * DQK * 2, d);
  }
  if (!rc) {
    size_t at = 0;
    for (int i = 0; i < nrows; i++) {
      cr[i].rows = rows + at * DQK, cr[i].q = q + i * per_q, cr[i].out = out + i * per_out, cr[i].lse = lse + i * H;
      at += cr[i].n;
    }
    cplab_kb_each_on_a_thread(check_one, cr, sizeof cr[0], nrows);
    int bad_empty = 0, failed_alloc = 0;
    double lse_bound = 0;
    for (int i = 0; i < nrows; i++) {
      res->max_rel_l2 = cplab_stats_worst(res->max_rel_l2, cr[i].max_rel);
      res->max_lse_abs = cplab_stats_worst(res->max_lse_abs, cr[i].max_lse);
      lse_bound = cplab_stats_worst(lse_bound, cr[i].max_lse_bound);
      bad_empty += cr[i].bad_empty, failed_alloc |= cr[i].alloc_failed;
    }
    if (failed_alloc) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for the reference");
    res->rows = nrows;
    res->tol_rel_l2 = ATTN_TOL_OUT_REL_L2, res->tol_lse_abs = ATTN_TOL_LSE_ABS, res->tol_lse_rel = ATTN_TOL_LSE_REL;
    res->ok = res->max_rel_l2 <= ATTN_TOL_OUT_REL_L2 && lse_bound <= 1 && !bad_empty;
    snprintf(res->detail, sizeof res->detail,
             "%d rows x %d heads: max relative L2 error of out %.3g (<= %g), max |lse error| %.3g (%.2f of its "
             "bound %g + %g |lse|)%s",
             nrows, H, res->max_rel_l2, ATTN_TOL_OUT_REL_L2, res->max_lse_abs, lse_bound, ATTN_TOL_LSE_ABS,
             ATTN_TOL_LSE_REL, bad_empty ? "; a row without valid entries is not lse -inf / out 0" : "");
  }
  cplab_dev_free(d_slots, d), cplab_dev_free(d_rows, d);
  free(slots), free(q), free(out), free(lse), free(rows);
  return rc;
}

static void work(const void *p, cplab_kb_work *w) {
  const attn_inst *x = p;
  const attn_shape *s = x->s;
  double per_pair = 2.0 * s->heads * (DQK + DV);
  double row_bytes = x->decode ? CPLAB_MLA_ENTRY_BYTES : DQK * 2;
  w->flop = (double)x->m * s->topk * per_pair;
  w->flop_valid = (double)x->valid0 * per_pair;
  w->bytes = (double)x->unique0 * row_bytes + (double)x->m * s->heads * (DQK * 2 + DV * 4 + 4);
  w->sets = x->sets;
  w->set_bytes = x->set_bytes;
  if (!x->decode)
    snprintf(w->launcher, sizeof w->launcher, "cplab_sparse_mla_prefill");
  else if (x->splits > 1)
    snprintf(w->launcher, sizeof w->launcher, "cplab_sparse_mla_decode_split (%d splits a row + merge)", x->splits);
  else
    snprintf(w->launcher, sizeof w->launcher, "cplab_sparse_mla_decode_split (no split pays: the plain kernel)");
}

#define ATTN_KERNEL(kname, text, table, setup_fn)                                                                  \
  {                                                                                                                 \
    .name = kname, .summary = text, .cases = table, .ncases = (int)(sizeof table / sizeof table[0]),                \
    .shape_json = shape_json, .shape_text = shape_text, .setup = setup_fn, .check = check, .run = run, .work = work, \
    .teardown = teardown                                                                                            \
  }
const cplab_kb_kernel cplab_kb_sparse_mla_prefill = ATTN_KERNEL(
    "sparse_mla_prefill",
    "cplab_sparse_mla_prefill: bf16 q [rows][heads][576] over the gathered bf16 workspace, idx = its rows",
    prefill_cases, setup_prefill);
const cplab_kb_kernel cplab_kb_sparse_mla_decode_fp8 = ATTN_KERNEL(
    "sparse_mla_decode_fp8",
    "cplab_sparse_mla_decode(_split): bf16 q [batch][heads][576] over the 656-byte fp8 cache, idx = its slots",
    decode_cases, setup_decode);
