/* GPU test: the indexer pipeline against sim/indexer_ref.h.
 *   - keys generated into the cache through slots (cplab_gen_cache) and
 *     gathered into logical order (cplab_gather_idx): equal to
 *     cplab_kvformat_idx_generate;
 *   - queries from cplab_gen_indexer_query; logits (cplab_indexer_logits)
 *     within LOGIT_TOL of each one's magnitude sum of sim_indexer_logit, -inf outside
 *     [ks, ke) exactly, and copied keys (ties) bit-identical on the device;
 *   - top-k (cplab_topk, k = 2048 and 64): exactly the order "higher logit,
 *     then lower index" over the device's own fp32 logits, and equal to
 *     sim_indexer_topk modulo ties (an index only one side picked must score
 *     within 2 LOGIT_TOL · the row's largest magnitude sum of the reference's
 *     k-th score), with exact -1 / -inf padding;
 *   - top-k on synthetic rows of 131072 columns: heavy ties, ±0, -inf inside
 *     the range, empty and short ranges, k = 1, 2048, 4096. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/fp8.h"
#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/layout.h"
#include "indexer_ref.h"
#include "kt.h"

#define HEADS 64
/* The logits' bound: each logit within LOGIT_TOL of its own magnitude sum,
 * M = |key scale| · sum_h |w_h| · sum_c |q_hc · k_c| (every fp8 product
 * exact; the logit is at most M in size). Why that sum: the dot products run
 * on fp8 tensor cores, whose products are exact and whose accumulation
 * (order and internal rounding the hardware's; Hopper's fp8 MMA keeps about
 * 14 bits of its running sum, as DeepSeek-V3's report measured on H800s)
 * leaves a dot product of 128 within a rounding of 2^-13 of its partial
 * magnitude sums a k32 step, at most 4 · 2^-13 ≈ 4.9e-4 of its M; the fp32
 * head sum and the scale add roundings of 2^-24. So a device's error scales
 * with M, not with the logit or its row: a row's max |logit|, the scale until
 * 2026-12-06, is small against a key's M where a row has few keys, one head,
 * or signed weights cancelling (a one-head decode row showed 5.39e-3 of its
 * max on an H100: bench/results/2026-12-05-merge-convert-h100/). On a GPU,
 * LOGIT_TOL is 2e-3: that bound with a margin of 4 (an H200 showed 4.8e-4 of
 * the row's max at most over the 150 random cases; the row's max error is
 * still reported). Under the CPU emulation (tests/emu, CPLAB_KT_EMULATED) the
 * same kernels run with the emulation's model of the MMA (double sums
 * rounded to fp32 once a k32 step: 4 · 2^-24 of M, 1e-7 seen), so the bound
 * there is 1e-6: far below what a wrong weight, scale, head or k step
 * would leave, which a bound for the hardware's accumulation could let
 * through (a 1% weight error is ~5e-4 of M on a 64-head row). */
#ifdef CPLAB_KT_EMULATED
#define LOGIT_TOL 1e-6
#else
#define LOGIT_TOL 2e-3
#endif

/* The worst errors seen: over the logit's magnitude sum (the bound) and over
 * its row's max |logit| (reported). */
typedef struct logit_worst {
  double of_mag, of_max;
} logit_worst;

/* Whether got is within LOGIT_TOL · mag of want; records the ratios. */
static int logit_ok(double got, double want, double mag, double maxabs, logit_worst *w) {
  double e = fabs(got - want);
  if (mag > 0 && !(e / mag <= w->of_mag)) w->of_mag = e / mag;
  if (maxabs > 0 && !(e / maxabs <= w->of_max)) w->of_max = e / maxabs;
  return e <= LOGIT_TOL * mag;
}

#define SEED UINT64_C(0x5EED)
#define LAYER 11

typedef struct region {
  int32_t req;
  int64_t start, extent;
} region;

static const region regions[] = {{5, 0, 5000}, {9, 5000, 700}};
#define NREG 2
#define NKEYS 5700

/* ---- host top-k over fp32 values, the exact rule ---- */

typedef struct fv {
  float v;
  int32_t i;
} fv;

static int fv_order(const void *a, const void *b) {
  const fv *x = a, *y = b;
  if (x->v != y->v) return x->v > y->v ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Expected idx/score of one row: columns [ks, ke) of row (clamped to n). */
static void host_topk(const float *row, int64_t n, int32_t ks, int32_t ke, int k, int32_t *idx, float *score) {
  int64_t lo = ks < 0 ? 0 : ks > n ? n : ks, hi = ke > n ? n : ke;
  int64_t L = hi > lo ? hi - lo : 0;
  fv *all = kt_host((size_t)(L ? L : 1) * sizeof *all);
  for (int64_t i = 0; i < L; i++) all[i] = (fv){row[lo + i], (int32_t)(lo + i - ks)};
  qsort(all, (size_t)L, sizeof *all, fv_order);
  for (int j = 0; j < k; j++) {
    idx[j] = j < L ? all[j].i : -1;
    score[j] = j < L ? all[j].v : -INFINITY;
  }
  free(all);
}

/* Device top-k vs host_topk over the same logits: counts rows that differ. */
static int exact_rows(const float *logits, int64_t m, int64_t n, const int32_t *ks, const int32_t *ke, int k,
                      const int32_t *idx, const float *score, const char *what) {
  int32_t *want = kt_host((size_t)k * sizeof *want);
  float *want_s = kt_host((size_t)k * sizeof *want_s);
  int bad = 0;
  for (int64_t r = 0; r < m; r++) {
    host_topk(logits + r * n, n, ks[r], ke[r], k, want, want_s);
    for (int j = 0; j < k; j++) {
      int32_t gi = idx[r * k + j];
      float gs = score[r * k + j];
      if (gi != want[j] || !(gs == want_s[j])) {
        if (bad++ == 0)
          printf("# %s: row %" PRId64 " rank %d: got (%" PRId32 ", %.9g), want (%" PRId32 ", %.9g)\n", what, r, j, gi,
                 (double)gs, want[j], (double)want_s[j]);
        break;
      }
    }
  }
  free(want);
  free(want_s);
  return bad;
}

/* ---- the pipeline case ---- */

typedef struct rows {
  int m;
  int32_t req[32], pos[32], ks[32], ke[32];
  int reg[32];
} rows;

static void make_rows(uint64_t *rng, rows *q) {
  static const int32_t fixed_a[] = {0, 1, 63, 2046, 2047, 2048, 2049, 4999}, fixed_b[] = {0, 5, 699};
  q->m = 0;
  for (size_t i = 0; i < sizeof fixed_a / sizeof *fixed_a + 5; i++) {
    q->reg[q->m] = 0;
    q->pos[q->m++] = i < sizeof fixed_a / sizeof *fixed_a ? fixed_a[i] : (int32_t)kt_int(rng, 0, 4999);
  }
  for (size_t i = 0; i < sizeof fixed_b / sizeof *fixed_b + 3; i++) {
    q->reg[q->m] = 1;
    q->pos[q->m++] = i < sizeof fixed_b / sizeof *fixed_b ? fixed_b[i] : (int32_t)kt_int(rng, 0, 699);
  }
  for (int i = 0; i < q->m; i++) {
    const region *g = &regions[q->reg[i]];
    q->req[i] = g->req;
    q->ks[i] = (int32_t)g->start;
    q->ke[i] = (int32_t)(g->start + q->pos[i] + 1); /* causal: the token and every earlier one */
  }
}

/* Keys of both regions generated through a shuffled slot list, gathered back
 * in logical order; returns the device buffer and fills the host copy. */
static uint8_t *make_keys(uint64_t *rng, uint8_t *host) {
  const int64_t num_slots = NKEYS + 100;
  int32_t *req = kt_host(NKEYS * sizeof *req), *pos = kt_host(NKEYS * sizeof *pos);
  int64_t *slot = kt_host(NKEYS * sizeof *slot), *perm = kt_host((size_t)num_slots * sizeof *perm);
  for (int64_t i = 0; i < num_slots; i++) perm[i] = i;
  for (int64_t i = num_slots - 1; i > 0; i--) {
    int64_t j = kt_int(rng, 0, i), x = perm[i];
    perm[i] = perm[j];
    perm[j] = x;
  }
  for (int g = 0; g < NREG; g++)
    for (int64_t p = 0; p < regions[g].extent; p++) {
      int64_t i = regions[g].start + p;
      req[i] = regions[g].req;
      pos[i] = (int32_t)p;
      slot[i] = perm[i];
      cplab_kvformat_idx_generate(SEED, LAYER, (uint32_t)req[i], (uint32_t)p, host + i * CPLAB_IDX_ENTRY_BYTES);
    }
  int32_t *d_req = kt_dev_from(req, NKEYS * sizeof *req), *d_pos = kt_dev_from(pos, NKEYS * sizeof *pos);
  int64_t *d_slot = kt_dev_from(slot, NKEYS * sizeof *slot);
  uint8_t *d_cache = kt_dev((size_t)num_slots * CPLAB_IDX_ENTRY_BYTES), *d_keys = kt_dev(NKEYS * CPLAB_IDX_ENTRY_BYTES);
  kt_ok(cplab_gen_cache(&(cplab_gen_cache_params){.seed = SEED, .layer = LAYER, .req = d_req, .pos = d_pos,
                                                  .slot = d_slot, .n = NKEYS, .kv_cache = NULL, .idx_cache = d_cache,
                                                  .num_slots = num_slots}, NULL, kt_diag()),
        "cplab_gen_cache");
  kt_ok(cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = d_cache, .num_slots = num_slots, .slot = d_slot,
                                                    .rows = NKEYS, .out = d_keys},
                         NULL, kt_diag()), "cplab_gather_idx");
  kt_sync();
  uint8_t *got = kt_host(NKEYS * CPLAB_IDX_ENTRY_BYTES);
  kt_down(got, d_keys, NKEYS * CPLAB_IDX_ENTRY_BYTES);
  kt_check(!memcmp(got, host, NKEYS * CPLAB_IDX_ENTRY_BYTES),
           "indexer keys: %d entries generated through shuffled slots and gathered back equal cplab_kvformat_idx_generate",
           NKEYS);
  free(got);
  free(req);
  free(pos);
  free(slot);
  free(perm);
  kt_free(d_req);
  kt_free(d_pos);
  kt_free(d_slot);
  kt_free(d_cache);
  return d_keys;
}

/* Logits vs sim_indexer_logit; ties bit-identical. Fills maxmag per row:
 * its largest magnitude sum (check_topk_ref's scale). */
static void check_logits(const rows *q, const uint8_t *keys, const sim_indexer_query *ref, const float *logits,
                         double *maxmag) {
  logit_worst worst = {0, 0};
  long outside_bad = 0, in_range = 0, tie_pairs = 0, tie_bad = 0, bad = 0;
  double *want = kt_host(NKEYS * sizeof *want), *mag = kt_host(NKEYS * sizeof *mag);
  for (int r = 0; r < q->m; r++) {
    const float *row = logits + (size_t)r * NKEYS;
    double maxabs = 0;
    maxmag[r] = 0;
    for (int64_t j = q->ks[r] > 0 ? q->ks[r] : 0; j < q->ke[r] && j < NKEYS; j++) {
      want[j] = sim_indexer_logit_mag(&ref[r], keys + j * CPLAB_IDX_ENTRY_BYTES, &mag[j]);
      if (fabs(want[j]) > maxabs) maxabs = fabs(want[j]);
      if (mag[j] > maxmag[r]) maxmag[r] = mag[j];
    }
    for (int64_t j = 0; j < NKEYS; j++) {
      if (j < q->ks[r] || j >= q->ke[r]) {
        outside_bad += row[j] != -INFINITY;
        continue;
      }
      in_range++;
      bad += !logit_ok(row[j], want[j], mag[j], maxabs, &worst);
      uint32_t p = (uint32_t)(j - q->ks[r]);
      uint32_t src = cplab_kvformat_idx_source(SEED, LAYER, (uint32_t)q->req[r], p);
      if (src != p) {
        tie_pairs++;
        tie_bad += memcmp(&row[j], &row[q->ks[r] + src], sizeof(float)) != 0;
      }
    }
  }
  free(want), free(mag);
  kt_check(bad == 0 && outside_bad == 0,
           "indexer_logits: %d rows, %ld logits in range, max error %.3g of the logit's magnitude sum (<= %g; %.3g of "
           "the row's max |logit|), %ld values outside [ks, ke) not -inf: %ld wrong",
           q->m, in_range, worst.of_mag, LOGIT_TOL, worst.of_max, outside_bad, bad);
  kt_check(tie_bad == 0 && tie_pairs > 0, "indexer_logits: %ld copied keys score bit-identically to their source (%ld differ)",
           tie_pairs, tie_bad);
}

/* Modulo ties against sim_indexer_topk; exact padding. */
static void check_topk_ref(const rows *q, const uint8_t *keys, const sim_indexer_query *ref, const double *maxmag,
                           int k, const int32_t *idx) {
  int32_t *want = kt_host((size_t)k * sizeof *want);
  double *want_s = kt_host((size_t)k * sizeof *want_s);
  long only_one = 0, bad = 0, padding = 0;
  for (int r = 0; r < q->m; r++) {
    int64_t L = q->ke[r] - q->ks[r];
    double kth;
    const uint8_t(*rk)[CPLAB_IDX_ENTRY_BYTES] = (const uint8_t(*)[CPLAB_IDX_ENTRY_BYTES])(keys + (size_t)q->ks[r] * CPLAB_IDX_ENTRY_BYTES);
    kt_ok(sim_indexer_topk(&ref[r], rk, L, k, want, want_s, &kth, kt_diag()), "sim_indexer_topk");
    double eps = 2 * LOGIT_TOL * maxmag[r]; /* either side's logit may be off by LOGIT_TOL of its magnitude sum */
    uint8_t *in_dev = kt_host((size_t)L), *in_ref = kt_host((size_t)L);
    const int32_t *got = idx + (size_t)r * k;
    int64_t take = L < k ? L : k;
    for (int j = 0; j < k; j++) {
      if (j >= take) {
        padding++;
        bad += got[j] != -1 || want[j] != -1;
        continue;
      }
      if (got[j] < 0 || got[j] >= L) {
        bad++;
        continue;
      }
      in_dev[got[j]] = 1;
      in_ref[want[j]] = 1;
    }
    for (int64_t t = 0; t < L; t++) {
      if (in_dev[t] == in_ref[t]) continue;
      only_one++;
      double s = sim_indexer_logit(&ref[r], rk[t]);
      if (!(fabs(s - kth) <= eps)) {
        if (bad++ == 0)
          printf("# top-k %d row %d: index %" PRId64 " picked by %s only, score %.9g vs k-th %.9g\n", k, r, t,
                 in_dev[t] ? "the device" : "the reference", s, kth);
      }
    }
    free(in_dev);
    free(in_ref);
  }
  kt_check(bad == 0,
           "topk k=%d vs sim_indexer_topk: %d rows equal modulo ties (%ld indices picked by one side only, all within "
           "2 LOGIT_TOL of the row's largest magnitude sum of the k-th score), %ld padding entries -1 on both sides, "
           "%ld failures",
           k, q->m, only_one, padding, bad);
  free(want);
  free(want_s);
}

static void run_topk(const float *d_logits, int64_t m, int64_t n, const int32_t *ks, const int32_t *ke, int k,
                     int32_t *idx, float *score) {
  int32_t *d_ks = kt_dev_from(ks, (size_t)m * 4), *d_ke = kt_dev_from(ke, (size_t)m * 4);
  int32_t *d_idx = kt_dev((size_t)m * k * 4);
  float *d_score = kt_dev((size_t)m * k * 4);
  kt_ok(cplab_topk(&(cplab_topk_params){.logits = d_logits, .m = m, .n = n, .ks = d_ks, .ke = d_ke, .k = k,
                                        .idx = d_idx, .score = d_score}, NULL, kt_diag()), "cplab_topk");
  kt_sync();
  kt_down(idx, d_idx, (size_t)m * k * 4);
  kt_down(score, d_score, (size_t)m * k * 4);
  kt_free(d_ks);
  kt_free(d_ke);
  kt_free(d_idx);
  kt_free(d_score);
}

static void pipeline(uint64_t *rng) {
  rows q;
  make_rows(rng, &q);
  uint8_t *keys = kt_host(NKEYS * CPLAB_IDX_ENTRY_BYTES);
  uint8_t *d_keys = make_keys(rng, keys);
  int32_t *d_req = kt_dev_from(q.req, (size_t)q.m * 4), *d_pos = kt_dev_from(q.pos, (size_t)q.m * 4);
  int32_t *d_ks = kt_dev_from(q.ks, (size_t)q.m * 4), *d_ke = kt_dev_from(q.ke, (size_t)q.m * 4);
  uint8_t *d_q = kt_dev((size_t)q.m * HEADS * CPLAB_IDX_DIM);
  float *d_scale = kt_dev((size_t)q.m * HEADS * 4), *d_w = kt_dev((size_t)q.m * HEADS * 4);
  float *d_logits = kt_dev((size_t)q.m * NKEYS * 4);
  kt_ok(cplab_gen_indexer_query(
      &(cplab_gen_indexer_query_params){.seed = SEED, .layer = LAYER, .req = d_req, .pos = d_pos, .m = q.m,
                                        .heads = HEADS, .q = d_q, .scale = d_scale, .weight = d_w}, NULL, kt_diag()),
        "cplab_gen_indexer_query");
  kt_ok(cplab_indexer_logits(&(cplab_indexer_logits_params){.q = d_q, .weight = d_w, .m = q.m, .heads = HEADS,
                                                            .keys = d_keys, .n = NKEYS, .ks = d_ks, .ke = d_ke,
                                                            .logits = d_logits}, NULL, kt_diag()),
        "cplab_indexer_logits");
  kt_sync();
  float *logits = kt_host((size_t)q.m * NKEYS * 4);
  kt_down(logits, d_logits, (size_t)q.m * NKEYS * 4);
  sim_indexer_query *ref = kt_host((size_t)q.m * sizeof *ref);
  for (int r = 0; r < q.m; r++)
    kt_ok(sim_indexer_query_make(SEED, LAYER, (uint32_t)q.req[r], (uint32_t)q.pos[r], HEADS, &ref[r], kt_diag()),
          "sim_indexer_query_make");
  double maxmag[32];
  check_logits(&q, keys, ref, logits, maxmag);
  static const int ks_[] = {2048, 64};
  for (int t = 0; t < 2; t++) {
    int k = ks_[t];
    int32_t *idx = kt_host((size_t)q.m * k * 4);
    float *score = kt_host((size_t)q.m * k * 4);
    run_topk(d_logits, q.m, NKEYS, q.ks, q.ke, k, idx, score);
    int bad = exact_rows(logits, q.m, NKEYS, q.ks, q.ke, k, idx, score, "topk (pipeline)");
    kt_check(bad == 0, "topk k=%d: %d rows exactly the host order of the device logits (%d rows differ)", k, q.m, bad);
    check_topk_ref(&q, keys, ref, maxmag, k, idx);
    free(idx);
    free(score);
  }
  free(ref);
  free(logits);
  free(keys);
  kt_free(d_keys);
  kt_free(d_req);
  kt_free(d_pos);
  kt_free(d_ks);
  kt_free(d_ke);
  kt_free(d_q);
  kt_free(d_scale);
  kt_free(d_w);
  kt_free(d_logits);
}

/* ---- synthetic rows ---- */

#define SYN_N 131072
#define SYN_M 9

static float syn_value(uint64_t *rng, int row) {
  static const float few[] = {-1.5f, -0.0f, 0.0f, 0.25f, 1.0f, 3.5f, 7.0f, 7.0f};
  switch (row) {
  case 0: return kt_int(rng, 0, 99) < 3 ? -INFINITY : few[kt_int(rng, 0, 7)]; /* heavy ties, ±0, -inf */
  case 5: return 1.0f;                                                      /* all tied */
  case 6: return -INFINITY;                                                 /* every logit -inf */
  case 8: return (float)kt_int(rng, 0, 3000) * 0.125f;                     /* ~44 copies of each value */
  default: return (float)(kt_unit(rng) * 200.0 - 100.0);                  /* nearly distinct */
  }
}

static void synthetic(uint64_t *rng) {
  static const int32_t ks[SYN_M] = {0, 100, 5, SYN_N - 3000, 1000, 0, 0, 50, 7};
  static const int32_t ke[SYN_M] = {SYN_N, 1100, 5, SYN_N, 120000, SYN_N, SYN_N, 2098, SYN_N - 11};
  float *logits = kt_host((size_t)SYN_M * SYN_N * 4);
  for (int r = 0; r < SYN_M; r++)
    for (int64_t j = 0; j < SYN_N; j++) logits[(size_t)r * SYN_N + j] = syn_value(rng, r);
  float *d_logits = kt_dev_from(logits, (size_t)SYN_M * SYN_N * 4);
  static const int kk[] = {2048, 4096, 1, 100};
  for (int t = 0; t < 4; t++) {
    int k = kk[t];
    int32_t *idx = kt_host((size_t)SYN_M * k * 4);
    float *score = kt_host((size_t)SYN_M * k * 4);
    run_topk(d_logits, SYN_M, SYN_N, ks, ke, k, idx, score);
    int bad = exact_rows(logits, SYN_M, SYN_N, ks, ke, k, idx, score, "topk (synthetic)");
    kt_check(bad == 0,
             "topk k=%d on %d synthetic rows of %d columns (ties, ±0, -inf, empty / short / exact-k ranges): exact "
             "indices, scores and padding (%d rows differ)",
             k, SYN_M, SYN_N, bad);
    free(idx);
    free(score);
  }
  free(logits);
  kt_free(d_logits);
}

/* ---- the DCP merge of local top-k lists ---- */

#define MERGE_M 3

/* The merge with its conversion for a random rank (cplab_topk_convert):
 * the same idx and scores as without (want, want_s), and out equal to
 * cplab_layout_vllm_convert_decode of every merged entry, bit for bit. The
 * table: random entries (some negative: the rule's arithmetic wraps the same
 * way), too few blocks for the longest owner's keys at times, and one row
 * whose request is outside it. */
static int merge_convert_case(uint64_t *rng, int D, int I, int k, int64_t NL, const int32_t *d_cand,
                              const float *d_cand_s, const int32_t *want, const float *want_s) {
  static const int Bs[] = {1, 3, 16, 64};
  int B = Bs[kt_int(rng, 0, 3)], rank = (int)kt_int(rng, 0, D - 1), num_req = MERGE_M + 1;
  int max_blocks = (int)((NL + B - 1) / B) - (int)kt_int(rng, 0, 1); /* at times one block short */
  if (max_blocks < 0) max_blocks = 0;
  int32_t row_req[MERGE_M];
  for (int r = 0; r < MERGE_M; r++) row_req[r] = r == 1 && kt_int(rng, 0, 1) ? num_req : (int32_t)(num_req - 1 - r);
  int32_t *table = kt_host((size_t)num_req * (max_blocks ? max_blocks : 1) * 4);
  for (int64_t i = 0; i < (int64_t)num_req * max_blocks; i++) table[i] = (int32_t)kt_int(rng, -2, 1 << 20);
  int32_t *d_table = kt_dev_from(table, (size_t)num_req * (max_blocks ? max_blocks : 1) * 4);
  int32_t *d_req = kt_dev_from(row_req, sizeof row_req), *d_idx = kt_dev((size_t)MERGE_M * k * 4);
  int32_t *d_slot = kt_dev((size_t)MERGE_M * k * 4);
  float *d_score = kt_dev((size_t)MERGE_M * k * 4);
  cplab_topk_convert c = {.row_req = d_req, .block_table = d_table, .num_req = num_req,
                                .max_blocks = max_blocks, .block_size = B, .dcp_rank = rank, .out = d_slot};
  kt_ok(cplab_topk_merge(&(cplab_topk_merge_params){.cand_idx = d_cand, .cand_score = d_cand_s, .D = D, .m = MERGE_M,
                                                    .k = k, .interleave = I, .idx = d_idx, .score = d_score,
                                                    .convert = &c},
                         NULL, kt_diag()), "cplab_topk_merge with its conversion");
  kt_sync();
  int32_t *got = kt_host((size_t)MERGE_M * k * 4), *slot = kt_host((size_t)MERGE_M * k * 4);
  float *got_s = kt_host((size_t)MERGE_M * k * 4);
  kt_down(got, d_idx, (size_t)MERGE_M * k * 4);
  kt_down(got_s, d_score, (size_t)MERGE_M * k * 4);
  kt_down(slot, d_slot, (size_t)MERGE_M * k * 4);
  int same = !memcmp(got, want, (size_t)MERGE_M * k * 4) && !memcmp(got_s, want_s, (size_t)MERGE_M * k * 4);
  cplab_layout_env env;
  memset(&env, 0, sizeof env);
  env.par.dcp = D, env.par.interleave = I, env.par.block_size = B;
  int64_t bad = 0;
  for (int r = 0; r < MERGE_M; r++)
    for (int j = 0; j < k; j++) {
      int32_t t = want[(size_t)r * k + j];
      int32_t ref = row_req[r] < 0 || row_req[r] >= num_req
                        ? -1
                        : cplab_layout_vllm_convert_decode(&env, table + (size_t)row_req[r] * max_blocks, max_blocks,
                                                           t, rank);
      bad += slot[(size_t)r * k + j] != ref;
    }
  if (!same || bad)
    fprintf(stderr, "merge with conversion: D %d rank %d, interleave %d, block %d, %d blocks, k %d: %s, %lld slots differ\n",
            D, rank, I, B, max_blocks, k, same ? "same lists" : "lists differ", (long long)bad);
  free(table), free(got), free(slot), free(got_s);
  kt_free(d_table), kt_free(d_req), kt_free(d_idx), kt_free(d_slot), kt_free(d_score);
  return same && !bad;
}

/* One case: rows of n_r keys owned round-robin by D owners in blocks of I
 * (kv.h); every owner's cplab_topk over its own keys, merged, must equal
 * cplab_topk over all the keys: indices, scores and padding, exactly. */
static int merge_case(uint64_t *rng, int D, int I, int k, int64_t N, int dist) {
  int32_t ks[MERGE_M] = {0}, ke[MERGE_M], lks[MERGE_M] = {0}, lke[MERGE_M];
  float *full = kt_host((size_t)MERGE_M * N * 4);
  for (int r = 0; r < MERGE_M; r++) {
    ke[r] = r == 0 ? (int32_t)N : (int32_t)kt_int(rng, 1, N); /* one full row, the others shorter (some below k) */
    for (int64_t j = 0; j < N; j++) full[(size_t)r * N + j] = syn_value(rng, dist);
  }
  int64_t NL = cplab_kv_local_len(N, 0, I, D); /* owner 0 holds the most */
  float *local = kt_host((size_t)MERGE_M * (NL ? NL : 1) * 4);
  int32_t *cand = kt_host((size_t)D * MERGE_M * k * 4), *want = kt_host((size_t)MERGE_M * k * 4);
  float *cand_s = kt_host((size_t)D * MERGE_M * k * 4), *want_s = kt_host((size_t)MERGE_M * k * 4);
  float *d_full = kt_dev_from(full, (size_t)MERGE_M * N * 4);
  run_topk(d_full, MERGE_M, N, ks, ke, k, want, want_s);
  for (int o = 0; o < D; o++) {
    for (int r = 0; r < MERGE_M; r++) {
      lke[r] = (int32_t)cplab_kv_local_len(ke[r], o, I, D);
      for (int64_t l = 0; l < NL; l++) {
        int64_t pos = cplab_kv_position(l, o, I, D);
        local[(size_t)r * NL + l] = pos < N ? full[(size_t)r * N + pos] : 0.0f;
      }
    }
    float *d_local = kt_dev_from(local, (size_t)MERGE_M * (NL ? NL : 1) * 4);
    run_topk(d_local, MERGE_M, NL, lks, lke, k, cand + (size_t)o * MERGE_M * k, cand_s + (size_t)o * MERGE_M * k);
    kt_free(d_local);
  }
  int32_t *d_cand = kt_dev_from(cand, (size_t)D * MERGE_M * k * 4), *d_idx = kt_dev((size_t)MERGE_M * k * 4);
  float *d_cand_s = kt_dev_from(cand_s, (size_t)D * MERGE_M * k * 4), *d_score = kt_dev((size_t)MERGE_M * k * 4);
  kt_ok(cplab_topk_merge(&(cplab_topk_merge_params){.cand_idx = d_cand, .cand_score = d_cand_s, .D = D, .m = MERGE_M,
                                                    .k = k, .interleave = I, .idx = d_idx, .score = d_score},
                         NULL, kt_diag()), "cplab_topk_merge");
  kt_sync();
  int32_t *got = kt_host((size_t)MERGE_M * k * 4);
  float *got_s = kt_host((size_t)MERGE_M * k * 4);
  kt_down(got, d_idx, (size_t)MERGE_M * k * 4);
  kt_down(got_s, d_score, (size_t)MERGE_M * k * 4);
  int same = !memcmp(got, want, (size_t)MERGE_M * k * 4) && !memcmp(got_s, want_s, (size_t)MERGE_M * k * 4);
  if (!same) fprintf(stderr, "merge: D %d, interleave %d, k %d, %lld keys, values of kind %d differ\n", D, I, k,
                     (long long)N, dist);
  /* its own stream, so that the cases after this section stay those they were */
  uint64_t crng = *rng ^ UINT64_C(0xC0417E);
  if (same) same = merge_convert_case(&crng, D, I, k, NL, d_cand, d_cand_s, want, want_s);
  free(full), free(local), free(cand), free(want), free(cand_s), free(want_s), free(got), free(got_s);
  kt_free(d_full), kt_free(d_cand), kt_free(d_idx), kt_free(d_cand_s), kt_free(d_score);
  return same;
}

static void merge_cases(uint64_t *rng) {
  static const int Ds[] = {1, 2, 3, 4, 8}, Is[] = {1, 2, 64}, Ks[] = {1, 16, 256, 2048}, dists[] = {0, 8, 1};
  int cases = 0, good = 0;
  for (int t = 0; t < 40; t++) {
    int D = Ds[t % 5], I = Is[t % 3], k = Ks[(t / 3) % 4], dist = dists[(t / 5) % 3];
    int64_t N = kt_int(rng, 1, 5000);
    cases++, good += merge_case(rng, D, I, k, N, dist);
  }
  good += merge_case(rng, 2, 1, 4, 1, 5) + merge_case(rng, 4, 64, 2048, 3000, 5); /* all tied */
  /* 16 owners' lists of 2048 (256 KiB) do not fit a block's shared memory:
   * the searches read global memory. */
  good += merge_case(rng, 16, 1, 2048, 34000, 0) + merge_case(rng, 16, 64, 2048, 6000, 8);
  cases += 4;
  kt_check(good == cases,
           "topk_merge: %d cases (D 1..8 from shared memory, 16 from global memory, interleave 1..64, k 1..2048, ties, ±0, "
           "-inf, rows shorter than k) equal "
           "cplab_topk over all keys: indices, scores and padding; with the conversion for a random rank the same lists "
           "and cplab_layout_vllm_convert_decode's slots (%d differ)",
           cases, cases - good);
  int32_t one = 0;
  float s = 0;
  cplab_topk_merge_params p = {.cand_idx = &one, .cand_score = &s, .D = 0, .m = 1, .k = 1, .interleave = 1,
                               .idx = &one, .score = &s};
  kt_check(cplab_topk_merge(&p, NULL, kt_diag()) == CPLAB_EINVAL, "topk_merge refuses 0 owners");
  p.D = 1, p.k = CPLAB_TOPK_MAX + 1;
  kt_check(cplab_topk_merge(&p, NULL, kt_diag()) == CPLAB_EINVAL, "topk_merge refuses k above CPLAB_TOPK_MAX");
  kt_check(cplab_topk_merge(NULL, NULL, kt_diag()) == CPLAB_EINVAL, "topk_merge refuses a NULL parameter struct");
  cplab_topk_convert c = {.row_req = &one, .block_table = &one, .num_req = 1, .max_blocks = 1, .block_size = 1,
                                .dcp_rank = 1, .out = &one};
  p.k = 1, p.convert = &c;
  kt_check(cplab_topk_merge(&p, NULL, kt_diag()) == CPLAB_EINVAL, "topk_merge refuses a conversion rank outside D");
  c.dcp_rank = 0, c.block_size = 0;
  kt_check(cplab_topk_merge(&p, NULL, kt_diag()) == CPLAB_EINVAL, "topk_merge refuses a conversion block size of 0");
  c.block_size = 1, c.out = NULL;
  kt_check(cplab_topk_merge(&p, NULL, kt_diag()) == CPLAB_EINVAL, "topk_merge refuses a conversion without out");
}

/* ---- logits: seeded random shapes against a host double reference ---- */

/* A random e4m3 byte of magnitude at most 8 (no NaN), either sign. */
static uint8_t rand_e4m3(uint64_t *rng) { return cplab_e4m3_from_f32((float)(kt_unit(rng) * 16.0 - 8.0)); }

/* The host logit of one entry for row i's query (NULL entry: a zero key). */
static double host_logit(const uint8_t *q, const float *w, int heads, int64_t i, const uint8_t *e, double *mag) {
  *mag = 0;
  if (!e) return 0;
  float scale;
  memcpy(&scale, e + CPLAB_IDX_SCALE_OFFSET, sizeof scale);
  double acc = 0, m = 0;
  for (int h = 0; h < heads; h++) {
    const uint8_t *qh = q + ((size_t)i * (size_t)heads + (size_t)h) * CPLAB_IDX_DIM;
    double dot = 0, abs = 0;
    for (int c = 0; c < CPLAB_IDX_DIM; c++) {
      double p = (double)cplab_e4m3_to_f32(qh[c]) * cplab_e4m3_to_f32(e[c]);
      dot += p, abs += fabs(p);
    }
    if (dot > 0) acc += (double)w[i * heads + h] * dot;
    m += fabs((double)w[i * heads + h]) * abs;
  }
  *mag = m * fabs((double)scale); /* the magnitude sum (LOGIT_TOL) */
  return acc * scale;
}

/* A random key entry: e4m3 values of magnitude <= 8, a power-of-two scale. */
static void rand_entry(uint64_t *rng, uint8_t *e) {
  for (int c = 0; c < CPLAB_IDX_DIM; c++) e[c] = rand_e4m3(rng);
  float scale = (float)ldexp(1.0, (int)kt_int(rng, -12, -4));
  memcpy(e + CPLAB_IDX_SCALE_OFFSET, &scale, sizeof scale);
}

/* One random case: heads, m rows, n keys (a few of them copies of others),
 * ranges anywhere (empty, negative ks, ke past n). Returns the failures and
 * raises *worst to the case's worst errors. */
static long logits_case(uint64_t *rng, int heads, int64_t m, int64_t n, logit_worst *worst, long *ties) {
  size_t qb = (size_t)m * (size_t)heads * CPLAB_IDX_DIM, kb = (size_t)n * CPLAB_IDX_ENTRY_BYTES;
  uint8_t *q = kt_host(qb), *keys = kt_host(kb);
  float *w = kt_host((size_t)m * (size_t)heads * sizeof *w), *got = kt_host((size_t)(m * n) * sizeof *got);
  int32_t *ks = kt_host((size_t)m * sizeof *ks), *ke = kt_host((size_t)m * sizeof *ke);
  int64_t *src = kt_host((size_t)n * sizeof *src);
  for (size_t i = 0; i < qb; i++) q[i] = rand_e4m3(rng);
  for (int64_t i = 0; i < m * heads; i++) w[i] = (float)(kt_unit(rng) * 2.0 - 0.5);
  for (int64_t j = 0; j < n; j++) {
    src[j] = j > 0 && kt_int(rng, 0, 7) == 0 ? kt_int(rng, 0, j - 1) : j; /* 1 in 8 a copy of an earlier key */
    uint8_t *e = keys + j * CPLAB_IDX_ENTRY_BYTES;
    if (src[j] != j) {
      memcpy(e, keys + src[j] * CPLAB_IDX_ENTRY_BYTES, CPLAB_IDX_ENTRY_BYTES);
      continue;
    }
    rand_entry(rng, e);
  }
  for (int64_t i = 0; i < m; i++) {
    int kind = (int)kt_int(rng, 0, 5);
    int64_t a = kt_int(rng, -70, n + 70), b = kt_int(rng, -70, n + 70);
    if (kind == 0) a = 0, b = n;                  /* every key */
    else if (kind == 1) a = b = kt_int(rng, 0, n); /* empty */
    else if (a > b) { int64_t t = a; a = b; b = t; }
    ks[i] = (int32_t)a, ke[i] = (int32_t)b;
  }
  uint8_t *dq = kt_dev_from(q, qb), *dk = kt_dev_from(keys, kb);
  float *dw = kt_dev_from(w, (size_t)m * (size_t)heads * sizeof *w), *dl = kt_dev((size_t)(m * n) * sizeof *got);
  int32_t *dks = kt_dev_from(ks, (size_t)m * sizeof *ks), *dke = kt_dev_from(ke, (size_t)m * sizeof *ke);
  kt_ok(cplab_poison_bytes(dl, (size_t)(m * n) * sizeof *got, 0x7F, NULL, kt_diag()), "cplab_poison_bytes");
  kt_ok(cplab_indexer_logits(&(cplab_indexer_logits_params){.q = dq, .weight = dw, .m = m, .heads = heads, .keys = dk,
                                                            .n = n, .ks = dks, .ke = dke, .logits = dl},
                             NULL, kt_diag()), "cplab_indexer_logits");
  kt_sync();
  kt_down(got, dl, (size_t)(m * n) * sizeof *got);
  long bad = 0;
  double *want = kt_host((size_t)n * sizeof *want), *mag = kt_host((size_t)n * sizeof *mag);
  for (int64_t i = 0; i < m; i++) {
    double maxabs = 0;
    for (int64_t j = 0; j < n; j++) {
      want[j] = host_logit(q, w, heads, i, keys + j * CPLAB_IDX_ENTRY_BYTES, &mag[j]);
      if (j >= ks[i] && j < ke[i] && fabs(want[j]) > maxabs) maxabs = fabs(want[j]);
    }
    for (int64_t j = 0; j < n; j++) {
      float v = got[i * n + j];
      if (j < ks[i] || j >= ke[i]) {
        bad += v != -INFINITY;
        continue;
      }
      bad += !logit_ok(v, want[j], mag[j], maxabs, worst);
      if (src[j] != j && src[j] >= ks[i]) {
        (*ties)++;
        bad += memcmp(&v, &got[i * n + src[j]], sizeof v) != 0;
      }
    }
  }
  free(want), free(mag), free(q), free(keys), free(w), free(got), free(ks), free(ke), free(src);
  kt_free(dq), kt_free(dk), kt_free(dw), kt_free(dl), kt_free(dks), kt_free(dke);
  return bad;
}

/* Head counts across every padding class (8, 16, 32, 64, 128 columns a
 * query), rows not a multiple of a block's, keys not a multiple of a tile's
 * and across chunks of 4096, ranges empty / partial / beyond the keys. */
static void logits_random(uint64_t *rng) {
  static const int head_set[] = {1, 5, 8, 13, 16, 24, 32, 48, 64, 100, 128};
  int cases = kt_model_size("the logits' 150 random cases on the device (12 in the emulation)") ? 150 : 12;
  long bad = 0, ties = 0, failing = 0;
  logit_worst worst = {0, 0};
  for (int c = 0; c < cases; c++) {
    int heads = head_set[c % (int)(sizeof head_set / sizeof *head_set)];
    int64_t m = kt_int(rng, 1, 20), n = c % 4 == 3 ? kt_int(rng, 4000, 9000) : kt_int(rng, 1, 700);
    if (cases < 100 && n > 700) n = kt_int(rng, 4097, 4300); /* the emulation: just across a chunk */
    long b = logits_case(rng, heads, m, n, &worst, &ties);
    if (b && failing++ == 0) printf("# logits case %d: heads %d, %lld rows, %lld keys: %ld wrong\n", c, heads,
                                    (long long)m, (long long)n, b);
    bad += b;
  }
  kt_check(bad == 0 && ties > 0,
           "indexer_logits: %d random cases (heads 1..128, ranges empty / partial / past the keys): max error %.3g of "
           "the logit's magnitude sum (<= %g; %.3g of the row's max |logit|), -inf outside [ks, ke), %ld copied keys "
           "bit-identical: %ld wrong values in %ld cases",
           cases, worst.of_mag, LOGIT_TOL, worst.of_max, ties, bad, failing);
}

/* ---- top-k paths: staged rows, the global-memory fallback, the split path ----
 *
 * Every case below is compared exactly with the contract computed here on
 * the host: the 64-bit key of the kernel's comment (the logit's bits made
 * order-preserving, -0 as +0, NaNs by their bits; then the lower index),
 * sorted descending, indices and score bits (the score of a -0 winner is
 * +0, as the kernel always wrote it). cplab_topk stages a row's range in
 * shared memory when it fits (about 43000 columns at k <= 2048, 39000 at
 * k = 4096) and reads longer ones from global memory; cplab_topk_split,
 * where cplab_topk_scratch asks for scratch, selects per chunk and merges. */

static uint32_t tk_ord(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  if (b == 0x80000000u) b = 0;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

static uint32_t tk_unord_bits(uint32_t o) { return (o & 0x80000000u) ? (o & 0x7FFFFFFFu) : ~o; }

static int tk_desc(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Rows of (idx, score) that differ from the contract; prints the first. */
static int tk_bad_rows(const float *logits, int64_t m, int64_t n, const int32_t *ks, const int32_t *ke, int k,
                       const int32_t *idx, const float *score, const char *what) {
  uint64_t *key = kt_host((size_t)(n ? n : 1) * sizeof *key);
  int bad = 0;
  for (int64_t r = 0; r < m; r++) {
    int64_t lo = ks[r] < 0 ? 0 : ks[r] > n ? n : ks[r], hi = ke[r] > n ? n : ke[r];
    int64_t L = hi > lo ? hi - lo : 0;
    for (int64_t j = 0; j < L; j++)
      key[j] = (uint64_t)tk_ord(logits[r * n + lo + j]) << 32 | (0xFFFFFFFFu - (uint32_t)(lo + j - ks[r]));
    qsort(key, (size_t)L, sizeof *key, tk_desc);
    for (int j = 0; j < k; j++) {
      int32_t wi = j < L ? (int32_t)(0xFFFFFFFFu - (uint32_t)key[j]) : -1;
      uint32_t ws = j < L ? tk_unord_bits((uint32_t)(key[j] >> 32)) : 0xFF800000u, gs;
      memcpy(&gs, &score[r * k + j], sizeof gs);
      if (idx[r * k + j] != wi || gs != ws) {
        if (bad++ == 0)
          printf("# %s: row %" PRId64 " (%" PRId64 " columns of %" PRId64 ", k %d) rank %d: got (%" PRId32
                 ", 0x%08" PRIx32 "), want (%" PRId32 ", 0x%08" PRIx32 ")\n",
                 what, r, L, n, k, j, idx[r * k + j], gs, wi, ws);
        break;
      }
    }
  }
  free(key);
  return bad;
}

/* A conversion for tk_conv_run (cplab_topk_convert at dcp 1, rank 0): the
 * host's table int32 [num_req][max_blocks] and rows' requests [m]; slot
 * receives the kernel's out [m][k]. */
typedef struct tk_conv {
  const int32_t *row_req, *table;
  int num_req, max_blocks, block_size;
  int32_t *slot;
} tk_conv;

/* cplab_topk (split 0) or cplab_topk_split with the scratch cplab_topk_scratch
 * asks for (split 1; *scratch_bytes receives it) over host logits, uploaded
 * `shift` floats into the device buffer (an unaligned base for shift % 4),
 * with the conversion cv where not NULL. */
static void tk_conv_run(const float *logits, int64_t m, int64_t n, const int32_t *ks, const int32_t *ke, int k,
                        int split, int shift, int32_t *idx, float *score, size_t *scratch_bytes, const tk_conv *cv) {
  size_t lb = (size_t)(m * n) * sizeof *logits;
  float *d_buf = kt_dev(lb + (size_t)shift * sizeof *logits + 4);
  kt_ok(cplab_dev_upload(d_buf + shift, logits, lb, kt_diag()), "cplab_dev_upload");
  int32_t *d_ks = kt_dev_from(ks, (size_t)m * 4), *d_ke = kt_dev_from(ke, (size_t)m * 4);
  int32_t *d_idx = kt_dev((size_t)m * k * 4);
  float *d_score = kt_dev((size_t)m * k * 4);
  cplab_topk_params p = {.logits = d_buf + shift, .m = m, .n = n, .ks = d_ks, .ke = d_ke, .k = k, .idx = d_idx,
                         .score = d_score};
  cplab_topk_convert c = {0};
  if (cv) {
    size_t tb = (size_t)cv->num_req * (size_t)cv->max_blocks * 4;
    c = (cplab_topk_convert){.row_req = kt_dev_from(cv->row_req, (size_t)m * 4),
                             .block_table = kt_dev_from(cv->table, tb ? tb : 4), .num_req = cv->num_req,
                             .max_blocks = cv->max_blocks, .block_size = cv->block_size, .dcp_rank = 0,
                             .out = kt_dev((size_t)m * k * 4)};
    p.convert = &c;
  }
  if (split) {
    kt_ok(cplab_topk_scratch(m, n, k, &p.scratch_bytes, kt_diag()), "cplab_topk_scratch");
    if (p.scratch_bytes) p.scratch = kt_dev(p.scratch_bytes);
    kt_ok(cplab_topk_split(&p, NULL, kt_diag()), "cplab_topk_split");
  } else {
    kt_ok(cplab_topk(&p, NULL, kt_diag()), "cplab_topk");
  }
  kt_sync();
  kt_down(idx, d_idx, (size_t)m * k * 4);
  kt_down(score, d_score, (size_t)m * k * 4);
  if (cv) {
    kt_down(cv->slot, c.out, (size_t)m * k * 4);
    kt_free((void *)c.row_req), kt_free((void *)c.block_table), kt_free(c.out);
  }
  if (scratch_bytes) *scratch_bytes = p.scratch_bytes;
  if (p.scratch) kt_free(p.scratch);
  kt_free(d_buf), kt_free(d_ks), kt_free(d_ke), kt_free(d_idx), kt_free(d_score);
}

static void tk_run(const float *logits, int64_t m, int64_t n, const int32_t *ks, const int32_t *ke, int k, int split,
                   int shift, int32_t *idx, float *score, size_t *scratch_bytes) {
  tk_conv_run(logits, m, n, ks, ke, k, split, shift, idx, score, scratch_bytes, NULL);
}

/* A value of one of the row kinds: few distinct values (ties, ±0, ±inf),
 * two values (the threshold tied far beyond what is needed), nearly
 * distinct, quantised (dozens of copies each), quiet NaNs of both signs
 * among few values, all equal, mostly -inf. */
#define TK_KINDS 7
static float tk_value(uint64_t *rng, int kind) {
  static const float few[] = {-INFINITY, -3.0f, -1.5f, -0.0f, 0.0f, 0.25f, 1.0f, 7.0f, INFINITY};
  switch (kind) {
  case 0: return few[kt_int(rng, 0, 8)];
  case 1: return kt_int(rng, 0, 1) ? 2.0f : 1.0f;
  case 2: return (float)(kt_unit(rng) * 200.0 - 100.0);
  case 3: return (float)kt_int(rng, 0, 300) * 0.5f - 40.0f;
  case 4:
    if (kt_int(rng, 0, 40) == 0) {
      uint32_t b = (kt_int(rng, 0, 1) ? 0xFFC00000u : 0x7FC00000u) | (uint32_t)kt_int(rng, 0, 0x3FFFFF);
      float f;
      memcpy(&f, &b, sizeof f);
      return f;
    }
    return few[kt_int(rng, 1, 7)];
  case 5: return 1.0f;
  default: return kt_int(rng, 0, 30) ? -INFINITY : (float)kt_int(rng, -3, 3);
  }
}

/* Rows of random kinds and ranges (full, empty, reversed, partial, past the
 * columns on either side). */
static void tk_fill(uint64_t *rng, float *logits, int64_t m, int64_t n, int32_t *ks, int32_t *ke, int kind_fixed) {
  for (int64_t r = 0; r < m; r++) {
    int kind = kind_fixed >= 0 ? kind_fixed : (int)kt_int(rng, 0, TK_KINDS - 1);
    for (int64_t j = 0; j < n; j++) logits[r * n + j] = tk_value(rng, kind);
    int shape = (int)kt_int(rng, 0, 5);
    int64_t a = kt_int(rng, -70, n + 70), b = kt_int(rng, -70, n + 70);
    if (shape == 0) a = 0, b = n;                         /* every column */
    else if (shape == 1) a = b = kt_int(rng, 0, n);       /* empty */
    else if (shape == 2) b = a - kt_int(rng, 1, 9);       /* reversed: empty */
    else if (shape == 3) a = kt_int(rng, 0, 9), b = n - kt_int(rng, 0, 9); /* nearly all, unaligned ends */
    else if (a > b) {
      int64_t t = a;
      a = b;
      b = t;
    }
    ks[r] = (int32_t)a, ke[r] = (int32_t)b;
  }
}

/* One case through one launcher; returns the rows that differ. */
static int tk_case(uint64_t *rng, int64_t m, int64_t n, int k, int kind, int split, int shift, size_t *scratch_bytes,
                   const char *what) {
  float *logits = kt_host((size_t)(m * n) * sizeof *logits), *score = kt_host((size_t)m * k * sizeof *score);
  int32_t *ks = kt_host((size_t)m * 4), *ke = kt_host((size_t)m * 4), *idx = kt_host((size_t)m * k * 4);
  tk_fill(rng, logits, m, n, ks, ke, kind);
  tk_run(logits, m, n, ks, ke, k, split, shift, idx, score, scratch_bytes);
  int bad = tk_bad_rows(logits, m, n, ks, ke, k, idx, score, what);
  free(logits), free(score), free(ks), free(ke), free(idx);
  return bad;
}

/* Many small seeded cases: random rows, ranges, k and value kinds, bases
 * unaligned by 0..3 floats, half through cplab_topk and half through
 * cplab_topk_split (which splits the long ones, where few). */
static void tk_random(uint64_t *rng) {
  static const int kset[] = {1, 2, 3, 31, 64, 65, 100, 1000, 2047, 2048, 2049, 4095, 4096};
  int cases = 400, bad_cases = 0, split_cases = 0;
  for (int c = 0; c < cases; c++) {
    int64_t m = kt_int(rng, 1, 5), n, u = kt_int(rng, 0, 99);
    n = u < 60 ? kt_int(rng, 1, 3000) : u < 85 ? kt_int(rng, 3000, 20000) : kt_int(rng, 20000, 70000);
    int k = kt_int(rng, 0, 3) == 0 ? (int)kt_int(rng, 1, CPLAB_TOPK_MAX) : kset[kt_int(rng, 0, 12)];
    size_t bytes = 0;
    int split = c % 2, b = tk_case(rng, m, n, k, -1, split, (int)kt_int(rng, 0, 3), &bytes, "topk (random)");
    split_cases += bytes > 0;
    if (b && bad_cases++ == 0)
      printf("# random top-k case %d: %" PRId64 " rows of %" PRId64 " columns, k %d, %s: %d rows differ\n", c, m, n,
             k, split ? "cplab_topk_split" : "cplab_topk", b);
  }
  kt_check(bad_cases == 0,
           "topk: %d seeded random cases (1..5 rows of 1..70000 columns, k 1..4096, ties, ±0, ±inf, NaNs, ranges empty "
           "/ reversed / partial / past the row, unaligned bases; half through cplab_topk_split, %d of them split): "
           "exact indices and score bits (%d cases differ)",
           cases, split_cases, bad_cases);
}

/* Rows staged in shared memory and their limits: lengths both sides of
 * what fits (k 2048 and 4096), rows whose threshold bin overflows the
 * candidate list (all tied, two values: the passes stay on the staged row,
 * then go on over the index bits), rows longer than any staging (global). */
static void tk_staged(uint64_t *rng) {
  static const struct {
    int64_t m, n;
    int k, kind;
  } cs[] = {{3, 32768, 2048, 2}, {3, 32768, 2048, 5}, {3, 32768, 2048, 1}, {3, 32768, 4096, 3},
            {3, 43000, 2048, 2}, {3, 44500, 2048, 0}, {3, 39000, 4096, 2}, {3, 40500, 4096, 1},
            {2, 60001, 2048, 5}, {2, 60001, 2048, 3}, {2, 60001, 4096, 4}, {4, 20000, 1, 6}};
  int bad = 0, n_cases = (int)(sizeof cs / sizeof *cs);
  for (int c = 0; c < n_cases; c++) {
    int b = tk_case(rng, cs[c].m, cs[c].n, cs[c].k, cs[c].kind, 0, c % 4, NULL, "topk (staged limits)");
    if (b) printf("# staged case %d: %d rows differ\n", c, b);
    bad += b;
  }
  kt_check(bad == 0,
           "topk: %d cases of rows around the shared-memory staging limit (32768 .. 60001 columns, k 1 / 2048 / 4096; "
           "all tied, two values, ties, NaNs): exact (%d rows differ)",
           n_cases, bad);
}

/* Rows around the bin path's floor: a block's threads each need k / threads
 * keys of their own (2048 columns for 512 threads of 16-byte groups), so
 * shorter rows go to the radix path and longer ones take the bin path; both
 * sides of that edge, k 1..512, nearly distinct and quantised values,
 * unaligned starts. */
static void tk_floor_edge(uint64_t *rng) {
  static const int ks[] = {1, 2, 7, 64, 100, 255, 256, 511, 512};
  int bad = 0, cases = 0;
  for (int c = 0; c < 36; c++, cases++) {
    int k = ks[c % 9];
    int64_t n = kt_int(rng, 1900, 2300);
    bad += tk_case(rng, 3, n, k, c % 2 ? 2 : 3, 0, c % 4, NULL, "topk (floor edge)") != 0;
  }
  kt_check(bad == 0,
           "topk: %d cases of 3 rows of 1900..2300 columns at k 1..512 (nearly distinct and quantised values, "
           "unaligned starts), both sides of the bin path's shortest row: exact (%d cases differ)",
           cases, bad);
}

/* The bin path starts from a floor it has not proven (the largest of its
 * warps' least keys) and goes back to the proven one where fewer than k keys
 * lie above it. Rows whose large values all fall in one warp's share of the
 * row (the first 128 of every 2048 columns) make that happen: one warp's
 * least keys are large, the rest small. Staged rows, a global one and split
 * rows, shifted starts: exact either way. */
static void tk_clustered(uint64_t *rng) {
  static const struct {
    int64_t m, n;
    int k, split;
  } cs[] = {{3, 32768, 2048, 0}, {3, 32768, 1000, 0}, {2, 65536, 2048, 0}, {2, 131072, 2048, 1}};
  int bad = 0, n_cases = (int)(sizeof cs / sizeof *cs);
  for (int c = 0; c < n_cases; c++) {
    int64_t m = cs[c].m, n = cs[c].n;
    float *logits = kt_host((size_t)(m * n) * sizeof *logits), *score = kt_host((size_t)m * cs[c].k * sizeof *score);
    int32_t *ks = kt_host((size_t)m * 4), *ke = kt_host((size_t)m * 4), *idx = kt_host((size_t)m * cs[c].k * 4);
    for (int64_t r = 0; r < m; r++) {
      for (int64_t j = 0; j < n; j++)
        logits[r * n + j] = j % 2048 < 128 ? (float)(100.0 + 100.0 * kt_unit(rng)) : (float)(-100.0 * kt_unit(rng));
      ks[r] = (int32_t)(r % 2) * 3, ke[r] = (int32_t)n;
    }
    tk_run(logits, m, n, ks, ke, cs[c].k, cs[c].split, c % 4, idx, score, NULL);
    int b = tk_bad_rows(logits, m, n, ks, ke, cs[c].k, idx, score, "topk (clustered)");
    if (b) printf("# clustered case %d: %d rows differ\n", c, b);
    bad += b;
    free(logits), free(score), free(ks), free(ke), free(idx);
  }
  kt_check(bad == 0,
           "topk: %d cases of rows whose large values lie in one warp's share (the bin path's first floor leaves "
           "too few keys; 32768 .. 131072 columns, k 1000 / 2048, staged, global and split): exact (%d rows differ)",
           n_cases, bad);
}

/* A value of the sign cases below: nearly distinct negatives, those with
 * -NaNs among them, positives with one +NaN a row, or ±0 among positives. */
static float tk_sign_value(uint64_t *rng, int kind, int64_t j, int64_t nan_at) {
  uint32_t b;
  float f;
  switch (kind) {
  case 0: return (float)(-1.0 - 100.0 * kt_unit(rng));
  case 1:
    if (kt_int(rng, 0, 9) != 0) return (float)(-1.0 - 100.0 * kt_unit(rng));
    b = 0xFFC00000u | (uint32_t)kt_int(rng, 0, 0x3FFFFF);
    memcpy(&f, &b, sizeof f);
    return f;
  case 2:
    if (j != nan_at) return (float)(100.0 * kt_unit(rng));
    b = 0x7FC00000u | (uint32_t)kt_int(rng, 0, 0x3FFFFF);
    memcpy(&f, &b, sizeof f);
    return f;
  default: return kt_int(rng, 0, 3) ? (kt_int(rng, 0, 1) ? 0.0f : -0.0f) : (float)(100.0 * kt_unit(rng));
  }
}

/* Staged rows long enough for the floor pass by 16-byte group (a group
 * gives it its largest word as a signed integer: for a group of negative
 * words some other word of it, -NaN vouching for nothing, +NaN making the
 * maximum not finite) through cplab_topk and one row of each through
 * cplab_topk_split's cluster path, unaligned starts: exact. */
static void tk_signs(uint64_t *rng) {
  static const char *kinds[] = {"negative", "negative with -NaNs", "one +NaN", "+0 and -0 among positives"};
  int bad = 0, cases = 0;
  for (int kind = 0; kind < 4; kind++)
    for (int split = 0; split < 2; split++, cases++) {
      int64_t m = split ? 1 : 3, n = 32768;
      int k = 2048;
      float *logits = kt_host((size_t)(m * n) * sizeof *logits), *score = kt_host((size_t)m * k * sizeof *score);
      int32_t *ks = kt_host((size_t)m * 4), *ke = kt_host((size_t)m * 4), *idx = kt_host((size_t)m * k * 4);
      for (int64_t r = 0; r < m; r++) {
        int64_t nan_at = kt_int(rng, 0, n - 1);
        for (int64_t j = 0; j < n; j++) logits[r * n + j] = tk_sign_value(rng, kind, j, nan_at);
        ks[r] = (int32_t)(r % 3), ke[r] = (int32_t)(n - r % 2);
      }
      tk_run(logits, m, n, ks, ke, k, split, cases % 4, idx, score, NULL);
      int b = tk_bad_rows(logits, m, n, ks, ke, k, idx, score, "topk (signs)");
      if (b) printf("# sign case %s, %s: %d rows differ\n", kinds[kind], split ? "cplab_topk_split" : "cplab_topk", b);
      bad += b != 0;
      free(logits), free(score), free(ks), free(ke), free(idx);
    }
  kt_check(bad == 0,
           "topk: %d cases of staged rows of 32768 columns, k 2048 (all negative, negative with -NaNs, one +NaN a row, "
           "+0 and -0 among positives), through cplab_topk and the cluster path: exact (%d cases differ)",
           cases, bad);
}

/* cplab_topk_split's routes on an H200 (132 SMs, 227 KiB of shared memory a
 * block), as bench/NOTES.md's measurements took them: the prefill chunks one
 * block a row; few decode rows that one block could stage, a cluster of
 * slices of at least max(8192, 2k) columns; few long rows, the cluster of
 * the split's chunks where all clusters fit the SMs at once, else the
 * chunks' kernel and the merge; many long rows, one block a row. */
static void tk_route(void) {
  static const struct {
    int64_t m, n;
    int k;
    cplab_topk_path path, refused;
    int blocks;
    int64_t chunk;
  } cs[] = {
      {4096, 32768, 2048, CPLAB_TOPK_PATH_ROWS, CPLAB_TOPK_PATH_ROWS, 1, 0},
      {1, 32768, 2048, CPLAB_TOPK_PATH_CLUSTER, CPLAB_TOPK_PATH_ROWS, 4, 0},
      {16, 32768, 2048, CPLAB_TOPK_PATH_CLUSTER, CPLAB_TOPK_PATH_ROWS, 4, 0},
      {64, 32768, 2048, CPLAB_TOPK_PATH_CLUSTER, CPLAB_TOPK_PATH_ROWS, 2, 0},
      {128, 32768, 2048, CPLAB_TOPK_PATH_ROWS, CPLAB_TOPK_PATH_ROWS, 1, 0},
      {1, 8192, 2048, CPLAB_TOPK_PATH_ROWS, CPLAB_TOPK_PATH_ROWS, 1, 0},
      {1, 131072, 2048, CPLAB_TOPK_PATH_CLUSTER, CPLAB_TOPK_PATH_CHUNKS, 8, 16384},
      {64, 131072, 2048, CPLAB_TOPK_PATH_CHUNKS, CPLAB_TOPK_PATH_CHUNKS, 8, 16384},
      {1, 131072, 4096, CPLAB_TOPK_PATH_CLUSTER, CPLAB_TOPK_PATH_CHUNKS, 4, 32768},
      {1, 262144, 2048, CPLAB_TOPK_PATH_CHUNKS, CPLAB_TOPK_PATH_CHUNKS, 16, 16384},
      {1000, 131072, 2048, CPLAB_TOPK_PATH_ROWS, CPLAB_TOPK_PATH_ROWS, 1, 0},
      {0, 131072, 2048, CPLAB_TOPK_PATH_ROWS, CPLAB_TOPK_PATH_ROWS, 1, 0},
  };
  int bad = 0, n_cases = (int)(sizeof cs / sizeof *cs);
  for (int c = 0; c < n_cases; c++) {
    cplab_topk_route r;
    int rc = cplab_topk_split_route(cs[c].m, cs[c].n, cs[c].k, 132, 232448, &r, kt_diag());
    int64_t chunks = cs[c].chunk ? (cs[c].n + cs[c].chunk - 1) / cs[c].chunk : 0;
    size_t scratch = (size_t)cs[c].m * (size_t)chunks * (size_t)cs[c].k * 8;
    if (rc || r.path != cs[c].path || r.refused != cs[c].refused || r.blocks != cs[c].blocks ||
        r.chunk != cs[c].chunk || r.chunks != chunks || r.scratch_bytes != scratch) {
      if (bad++ == 0)
        printf("# route %" PRId64 " x %" PRId64 " k %d: rc %d, path %d (refused %d), %d blocks, chunk %" PRId64
               " x %" PRId64 ", scratch %zu\n",
               cs[c].m, cs[c].n, cs[c].k, rc, (int)r.path, (int)r.refused, r.blocks, r.chunk, r.chunks,
               r.scratch_bytes);
    }
  }
  cplab_topk_route r;
  int refused = cplab_topk_split_route(1, 100, 2048, 0, 232448, &r, kt_diag()) == CPLAB_EINVAL &&
                cplab_topk_split_route(1, 100, 0, 132, 232448, &r, kt_diag()) == CPLAB_EINVAL &&
                cplab_topk_split_route(1, 100, 2048, 132, 232448, NULL, kt_diag()) == CPLAB_EINVAL;
  kt_check(bad == 0 && refused,
           "topk_split routes on an H200's 132 SMs: %d shapes (prefill rows, decode rows as clusters of 2..8, "
           "the split's chunks, many long rows) take the measured paths (%d differ); 0 SMs, k 0 and a NULL route "
           "refused",
           n_cases, bad);
}

/* One row through cplab_topk_split: on every device (the emulation's one
 * SM included) the cluster path, one row a cluster of blocks over its
 * slices, for long rows (65536..131072 columns: the split's chunks) and for
 * rows one block could stage (16384..36000 columns: slices of max(8192, 2k)):
 * nearly distinct values (the bin path across the cluster), large values in
 * one warp's share of every 2048 columns (its first floor leaves too few
 * keys: the proven one, again), quantised values on a partial, unaligned
 * range, k 1000 / 2048 / 4096 (4096: clusters of 4), and few values (ties
 * beyond b*'s limit: block 0 takes the row alone). Exact, and bit-identical
 * to cplab_topk. */
static void tk_cluster(uint64_t *rng) {
  static const struct {
    int64_t n;
    int k, kind, ks, ke; /* kind -2: the clustered rows above; ke 0: n */
  } cs[] = {{131072, 2048, 2, 0, 0},  {131072, 2048, -2, 3, 0}, {100003, 1000, 3, 37, 99001},
            {131072, 4096, 2, 0, 0},  {65536, 2048, 2, 5, 0},   {131072, 2048, 0, 0, 0},
            /* rows one block could stage: slices of max(8192, 2k) columns */
            {32768, 2048, 2, 0, 0},   {32768, 2048, -2, 1, 0},  {20000, 1000, 3, 11, 19001},
            {36000, 4096, 2, 0, 0},   {24576, 2048, 0, 0, 0},   {16384, 2048, 1, 2, 16383}};
  int n_cases = (int)(sizeof cs / sizeof *cs), bad = 0, differ = 0;
  for (int c = 0; c < n_cases; c++) {
    int64_t n = cs[c].n;
    int k = cs[c].k;
    float *logits = kt_host((size_t)n * sizeof *logits), *score = kt_host((size_t)k * 4), *score2 = kt_host((size_t)k * 4);
    int32_t ks = cs[c].ks, ke = cs[c].ke ? cs[c].ke : (int32_t)n, *idx = kt_host((size_t)k * 4), *idx2 = kt_host((size_t)k * 4);
    for (int64_t j = 0; j < n; j++)
      logits[j] = cs[c].kind == -2 ? (j % 2048 < 128 ? (float)(100.0 + 100.0 * kt_unit(rng)) : (float)(-100.0 * kt_unit(rng)))
                                   : tk_value(rng, cs[c].kind);
    tk_run(logits, 1, n, &ks, &ke, k, 1, c % 4, idx, score, NULL);
    tk_run(logits, 1, n, &ks, &ke, k, 0, c % 4, idx2, score2, NULL);
    int b = tk_bad_rows(logits, 1, n, &ks, &ke, k, idx, score, "topk (one row, cluster)");
    if (b) printf("# cluster case %d: %" PRId64 " columns, k %d: row differs\n", c, n, k);
    bad += b;
    differ += memcmp(idx, idx2, (size_t)k * 4) != 0 || memcmp(score, score2, (size_t)k * 4) != 0;
    free(logits), free(score), free(score2), free(idx), free(idx2);
  }
  kt_check(bad == 0 && differ == 0,
           "topk_split: %d cases of one row of 16384..131072 columns (the cluster path; k 1000 / 2048 / 4096; nearly "
           "distinct, clustered, quantised on a partial range, few values): exact (%d rows differ), bit-identical to "
           "cplab_topk (%d cases differ)",
           n_cases, bad, differ);
}

/* More rows than SMs, so that a block takes several rows and stages the
 * next while it sorts this one (on the GPU: cp.async overlap), through both
 * launchers: staged prefill-like rows (causal ranges) and long decode-like
 * rows (split where the device allows it, else the global path). */
static void tk_many_rows(uint64_t *rng) {
  int big = kt_model_size("topk: 2048 rows of 32768 (at least 16 an SM) and 150 rows of 131072 columns (300 and 40 in "
                          "the emulation)");
  cplab_device_facts f;
  kt_ok(cplab_device_facts_get(&f, kt_diag()), "cplab_device_facts_get");
  /* 16 rows an SM or more, so that every persistent block stages and ranks many rows in turn, the common rows
   * (kind 2) between rare ones: every fifth row of a random kind, rows with an over-full bin above b*, short
   * causal ranges */
  int64_t many = 16 * (int64_t)f.sm_count + 64, m1 = big ? (many > 2048 ? many : 2048) : 300;
  int64_t n1 = 32768, m2 = big ? 150 : 40, n2 = 131072;
  float *logits = kt_host((size_t)(m1 * n1) * sizeof *logits);
  int32_t *ks = kt_host((size_t)m1 * 4), *ke = kt_host((size_t)m1 * 4);
  int32_t *idx = kt_host((size_t)m1 * 2048 * 4);
  float *score = kt_host((size_t)m1 * 2048 * sizeof *score);
  for (int64_t r = 0; r < m1; r++) {
    int kind = r % 5 == 4 ? (int)kt_int(rng, 0, TK_KINDS - 1) : 2;
    for (int64_t j = 0; j < n1; j++) logits[r * n1 + j] = tk_value(rng, kind);
    if (r % 11 == 5) /* 400 copies of a value above the rest: a bin above b* too full to rank by counting (the sort) */
      for (int i = 0; i < 400; i++) logits[r * n1 + kt_int(rng, 0, n1 - 1)] = 150.0f;
    ks[r] = r % 7 == 0 ? (int32_t)kt_int(rng, 0, 100) : 0;
    ke[r] = (int32_t)(r % 3 == 0 ? n1 : kt_int(rng, 1, n1)); /* causal: the token and the ones before */
  }
  tk_run(logits, m1, n1, ks, ke, 2048, 0, 0, idx, score, NULL);
  int bad1 = tk_bad_rows(logits, m1, n1, ks, ke, 2048, idx, score, "topk (many staged rows)");
  for (int64_t r = 0; r < m2; r++) { /* the first m2 · n2 values as long rows: full, partial, short */
    ks[r] = r % 4 == 0 ? 0 : (int32_t)kt_int(rng, -10, 4000);
    ke[r] = r % 4 == 0 ? (int32_t)n2
            : r % 4 == 3 ? ks[r] + (int32_t)kt_int(rng, 0, 3000)
                         : (int32_t)kt_int(rng, 60000, n2 + 10);
  }
  size_t bytes = 0;
  tk_run(logits, m2, n2, ks, ke, 2048, 1, 1, idx, score, &bytes);
  int bad2 = tk_bad_rows(logits, m2, n2, ks, ke, 2048, idx, score, "topk (many long rows)");
  kt_check(bad1 == 0 && bad2 == 0,
           "topk k=2048: %" PRId64 " prefill-like rows of %" PRId64 " columns (cplab_topk) and %" PRId64
           " rows of %" PRId64 " columns (cplab_topk_split, %s): exact (%d, %d rows differ)",
           m1, n1, m2, n2, bytes ? "split" : "not split on this device", bad1, bad2);
  free(logits), free(ks), free(ke), free(idx), free(score);
}

/* The split path: few long rows (each case asks cplab_topk_scratch for
 * scratch: it must split them), compared with the contract and with
 * cplab_topk bit for bit; candidates that fit the merge's shared memory and
 * ones that do not (196608 and 262144 columns); a short row through the
 * split launcher without scratch; scratch refused when short, missing or
 * misaligned. */
static void tk_split(uint64_t *rng) {
  static const struct {
    int64_t m, n;
    int k, kind;
  } cs[] = {{4, 131072, 2048, -1}, {4, 131072, 2048, 2}, {3, 131072, 4096, -1}, {2, 65621, 100, -1},
            {4, 131072, 1, 0},     {1, 196608, 2048, 2}, {1, 262144, 2048, 5},  {1, 262144, 2048, 1},
            {2, 100003, 4096, 4},  {4, 50001, 2048, 3}};
  int n_cases = (int)(sizeof cs / sizeof *cs), bad = 0, unsplit = 0, differ = 0;
  for (int c = 0; c < n_cases; c++) {
    int64_t m = cs[c].m, n = cs[c].n;
    int k = cs[c].k;
    float *logits = kt_host((size_t)(m * n) * sizeof *logits), *score = kt_host((size_t)m * k * 4);
    float *score2 = kt_host((size_t)m * k * 4);
    int32_t *ks = kt_host((size_t)m * 4), *ke = kt_host((size_t)m * 4), *idx = kt_host((size_t)m * k * 4);
    int32_t *idx2 = kt_host((size_t)m * k * 4);
    tk_fill(rng, logits, m, n, ks, ke, cs[c].kind);
    ks[0] = 0, ke[0] = (int32_t)n; /* one full row: the most candidates */
    size_t bytes = 0;
    tk_run(logits, m, n, ks, ke, k, 1, c % 4, idx, score, &bytes);
    tk_run(logits, m, n, ks, ke, k, 0, 0, idx2, score2, NULL);
    unsplit += bytes == 0;
    int b = tk_bad_rows(logits, m, n, ks, ke, k, idx, score, "topk (split)");
    if (b) printf("# split case %d: %" PRId64 " rows of %" PRId64 " columns, k %d: %d rows differ\n", c, m, n, k, b);
    bad += b;
    differ += memcmp(idx, idx2, (size_t)m * k * 4) != 0 || memcmp(score, score2, (size_t)m * k * 4) != 0;
    free(logits), free(score), free(score2), free(ks), free(ke), free(idx), free(idx2);
  }
  kt_check(bad == 0 && unsplit == 0 && differ == 0,
           "topk_split: %d cases of 1..4 rows of 50001..262144 columns (k 1..4096; ties, ±0, ±inf, NaNs, all tied, "
           "empty / short / partial ranges): all split (%d not), exact (%d rows differ), bit-identical to cplab_topk "
           "(%d cases differ)",
           n_cases, unsplit, bad, differ);

  /* rows that fit: no scratch asked, none needed */
  size_t bytes = 1;
  kt_ok(cplab_topk_scratch(7, 5000, 2048, &bytes, kt_diag()), "cplab_topk_scratch");
  int b0 = bytes != 0 ? 1 : tk_case(rng, 7, 5000, 2048, -1, 1, 0, &bytes, "topk (split launcher, short rows)");
  kt_check(b0 == 0 && bytes == 0, "topk_split: short rows ask for no scratch and run without (exact, %d rows differ)",
           b0);

  /* refusals */
  const int64_t m = 2, n = 131072;
  const int k = 2048;
  size_t need = 0;
  kt_ok(cplab_topk_scratch(m, n, k, &need, kt_diag()), "cplab_topk_scratch");
  float *d_l = kt_dev((size_t)(m * n) * 4);
  int32_t ks[2] = {0, 5}, ke[2] = {(int32_t)n, (int32_t)n};
  int32_t *d_ks = kt_dev_from(ks, sizeof ks), *d_ke = kt_dev_from(ke, sizeof ke), *d_idx = kt_dev((size_t)m * k * 4);
  uint8_t *scratch = kt_dev(need + 16);
  cplab_diag d;
  cplab_diag_clear(&d);
  cplab_topk_params p = {.logits = d_l, .m = m, .n = n, .ks = d_ks, .ke = d_ke, .k = k, .idx = d_idx,
                         .scratch = scratch, .scratch_bytes = need - 8};
  int short_rc = cplab_topk_split(&p, NULL, &d);
  int named = strstr(d.msg, "cplab_topk_scratch") != NULL;
  cplab_diag_clear(&d);
  p.scratch = NULL, p.scratch_bytes = need;
  int null_rc = cplab_topk_split(&p, NULL, &d);
  cplab_diag_clear(&d);
  p.scratch = scratch + 8;
  int align_rc = cplab_topk_split(&p, NULL, &d);
  cplab_diag_clear(&d);
  int args_rc = cplab_topk_scratch(m, n, 0, &need, &d);
  cplab_diag_clear(&d);
  int nullb_rc = cplab_topk_scratch(m, n, k, NULL, &d);
  kt_check(need > 0 && short_rc == CPLAB_EINVAL && named && null_rc == CPLAB_EINVAL && align_rc == CPLAB_EINVAL &&
               args_rc == CPLAB_EINVAL && nullb_rc == CPLAB_EINVAL,
           "topk_split refuses scratch 8 bytes short of the %zu asked (CPLAB_EINVAL naming cplab_topk_scratch), NULL "
           "and misaligned scratch; cplab_topk_scratch refuses k 0 and a NULL size",
           need);
  kt_free(d_l), kt_free(d_ks), kt_free(d_ke), kt_free(d_idx), kt_free(scratch);
}

/* ---- the top-k with its conversion (cplab_topk_convert, dcp 1) ---- */

/* One case: the rows' top-k through `split` (cplab_topk or cplab_topk_split)
 * without and with a conversion: the same indices and scores, the contract's
 * (tk_bad_rows), and every slot what cplab_layout_vllm_convert_decode gives
 * at dcp 1 for its index. The table: random entries (some negative: the
 * rule's arithmetic wraps the same way), whole, one block short of the
 * row's keys or cut at a random block, and rows whose request is outside it. *path receives the
 * route's path (cplab_topk: ROWS). Returns the rows or slots that differ. */
static int tk_convert_case(uint64_t *rng, int64_t m, int64_t n, int k, int split, const cplab_device_facts *f,
                           int *path) {
  static const int Bs[] = {1, 3, 16, 64};
  size_t mk = (size_t)m * k;
  float *logits = kt_host((size_t)(m * n) * sizeof *logits), *score = kt_host(mk * 4), *score2 = kt_host(mk * 4);
  int32_t *ks = kt_host((size_t)m * 4), *ke = kt_host((size_t)m * 4), *idx = kt_host(mk * 4),
          *idx2 = kt_host(mk * 4), *slot = kt_host(mk * 4), *row_req = kt_host((size_t)m * 4);
  tk_fill(rng, logits, m, n, ks, ke, -1);
  int B = Bs[kt_int(rng, 0, 3)], num_req = (int)m + 1;
  int full = (int)((n + B - 1) / B), cut = (int)kt_int(rng, 0, 2);
  /* whole, one block short, or cut at a random block (selected keys on both sides of the bound) */
  int max_blocks = cut == 0 ? full : cut == 1 ? full - 1 : (int)kt_int(rng, 0, full);
  if (max_blocks < 0) max_blocks = 0;
  for (int64_t r = 0; r < m; r++) row_req[r] = (int32_t)(kt_int(rng, 0, 7) ? kt_int(rng, 0, num_req - 1) : kt_int(rng, -1, 0) ? num_req : -1);
  int32_t *table = kt_host((size_t)num_req * (size_t)(max_blocks ? max_blocks : 1) * 4);
  for (int64_t i = 0; i < (int64_t)num_req * max_blocks; i++) table[i] = (int32_t)kt_int(rng, -2, 1 << 20);
  tk_conv cv = {.row_req = row_req, .table = table, .num_req = num_req, .max_blocks = max_blocks, .block_size = B,
                .slot = slot};
  int shift = (int)kt_int(rng, 0, 3);
  tk_run(logits, m, n, ks, ke, k, split, shift, idx, score, NULL);
  tk_conv_run(logits, m, n, ks, ke, k, split, shift, idx2, score2, NULL, &cv);
  int bad = tk_bad_rows(logits, m, n, ks, ke, k, idx2, score2, "topk (with its conversion)");
  bad += memcmp(idx, idx2, mk * 4) != 0 || memcmp(score, score2, mk * 4) != 0;
  cplab_layout_env env;
  memset(&env, 0, sizeof env);
  env.par.dcp = 1, env.par.interleave = 1, env.par.block_size = B;
  int64_t wrong = 0;
  for (int64_t r = 0; r < m; r++)
    for (int j = 0; j < k; j++) {
      int32_t t = idx2[r * k + j];
      int32_t ref = row_req[r] < 0 || row_req[r] >= num_req
                        ? -1
                        : cplab_layout_vllm_convert_decode(&env, table + (size_t)row_req[r] * max_blocks, max_blocks,
                                                           t, 0);
      wrong += slot[r * k + j] != ref;
    }
  cplab_topk_route route = {.path = CPLAB_TOPK_PATH_ROWS};
  if (split) kt_ok(cplab_topk_split_route(m, n, k, f->sm_count, f->smem_optin, &route, kt_diag()), "route");
  *path = route.path;
  if (bad || wrong)
    printf("# top-k with its conversion: %" PRId64 " rows of %" PRId64 " columns, k %d, %s (path %d), block %d, "
           "%d blocks: %d rows differ, %" PRId64 " slots differ\n",
           m, n, k, split ? "cplab_topk_split" : "cplab_topk", (int)route.path, B, max_blocks, bad, wrong);
  free(logits), free(score), free(score2), free(ks), free(ke), free(idx), free(idx2), free(slot), free(row_req),
      free(table);
  return bad + (wrong > 0);
}

/* Every path of the top-k's write with the conversion: one block a row
 * (staged and from global memory), the cluster, the chunks and their merge
 * (more rows than the SMs take as clusters), and the refusals. Its own
 * random stream, so that the sections after it keep their cases. */
static void tk_convert(const uint64_t *seed) {
  uint64_t rng = *seed ^ UINT64_C(0x70C0417E);
  cplab_device_facts f;
  kt_ok(cplab_device_facts_get(&f, kt_diag()), "cplab_device_facts_get");
  /* the chunks path: rows too long to stage, more of them than the SMs' clusters take */
  int64_t m_chunks = f.sm_count / 4 + 1 < 2 ? 2 : f.sm_count / 4 + 1;
  static const int kset[] = {1, 7, 256, 2048, 4096};
  int cases = 0, bad_cases = 0, seen[3] = {0, 0, 0};
  for (int c = 0; c < 24; c++) {
    int shape = c % 4, k = kset[kt_int(&rng, 0, shape == 3 ? 3 : 4)], path = 0; /* (k 4096 halves the chunks) */
    int64_t m = shape == 0 ? kt_int(&rng, 1, 4) : shape == 3 ? m_chunks : 1;
    int64_t n = shape == 0 ? kt_int(&rng, 1, 5000) : shape == 1 ? kt_int(&rng, 50000, 60000)
              : shape == 2 ? kt_int(&rng, 20000, 40000) : kt_int(&rng, 50000, 60000);
    int split = shape >= 2 || (shape == 0 && c % 8 == 4); /* shape 1: cplab_topk from global memory */
    bad_cases += tk_convert_case(&rng, m, n, k, split, &f, &path) != 0;
    seen[path]++, cases++;
  }
  kt_check(bad_cases == 0 && seen[CPLAB_TOPK_PATH_ROWS] && seen[CPLAB_TOPK_PATH_CLUSTER] &&
               seen[CPLAB_TOPK_PATH_CHUNKS],
           "topk with its conversion: %d seeded cases (one block a row %d, cluster %d, chunks %d; k 1..4096, ranges "
           "empty / partial, tables short by a block or cut, rows outside the table): the same indices and scores as without, "
           "and cplab_layout_vllm_convert_decode's slots at dcp 1 (%d cases differ)",
           cases, seen[CPLAB_TOPK_PATH_ROWS], seen[CPLAB_TOPK_PATH_CLUSTER], seen[CPLAB_TOPK_PATH_CHUNKS], bad_cases);
  int32_t one = 0, ks = 0, ke = 1;
  float l = 0;
  cplab_topk_convert cv = {.row_req = &one, .block_table = &one, .num_req = 1, .max_blocks = 1, .block_size = 1,
                           .dcp_rank = 1, .out = &one};
  cplab_topk_params p = {.logits = &l, .m = 1, .n = 1, .ks = &ks, .ke = &ke, .k = 1, .idx = &one, .convert = &cv};
  int rank_rc = cplab_topk(&p, NULL, kt_diag()), rank_split_rc = cplab_topk_split(&p, NULL, kt_diag());
  cv.dcp_rank = 0, cv.block_size = 0;
  int block_rc = cplab_topk(&p, NULL, kt_diag());
  cv.block_size = 1, cv.out = NULL;
  int out_rc = cplab_topk_split(&p, NULL, kt_diag());
  kt_check(rank_rc == CPLAB_EINVAL && rank_split_rc == CPLAB_EINVAL && block_rc == CPLAB_EINVAL &&
               out_rc == CPLAB_EINVAL,
           "topk and topk_split refuse a conversion for rank 1 (the top-k converts at dcp 1), one of block size 0 "
           "and one without out");
}

/* ---- decode logits from the paged cache: seeded random tables ---- */

/* One case: a cache of random entries (1 in 8 a copy of another), a block
 * table with a few negative and out-of-range entries, rows with key counts
 * from 0 past the table's reach and past n, a row outside the table. */
static long decode_case(uint64_t *rng, int heads, logit_worst *worst, long *ties) {
  static const int block_sizes[] = {1, 16, 64, 128}; /* 64 and 128: whole tiles copied as runs */
  int B = block_sizes[kt_int(rng, 0, 3)];
  int num_req = (int)kt_int(rng, 1, 4), max_blocks = (int)kt_int(rng, 1, 1200 / B + 1);
  int64_t num_slots = (int64_t)max_blocks * B + kt_int(rng, 0, 50), m = kt_int(rng, 1, 6);
  int64_t n = kt_int(rng, 1, (int64_t)max_blocks * B + 100);
  size_t cb = (size_t)num_slots * CPLAB_IDX_ENTRY_BYTES, qb = (size_t)m * (size_t)heads * CPLAB_IDX_DIM;
  uint8_t *cache = kt_host(cb), *q = kt_host(qb);
  int64_t *src = kt_host((size_t)num_slots * sizeof *src);
  for (int64_t sl = 0; sl < num_slots; sl++) {
    uint8_t *e = cache + sl * CPLAB_IDX_ENTRY_BYTES;
    src[sl] = sl > 0 && kt_int(rng, 0, 7) == 0 ? kt_int(rng, 0, sl - 1) : sl;
    if (src[sl] != sl) {
      memcpy(e, cache + src[sl] * CPLAB_IDX_ENTRY_BYTES, CPLAB_IDX_ENTRY_BYTES);
      continue;
    }
    rand_entry(rng, e);
  }
  for (size_t i = 0; i < qb; i++) q[i] = rand_e4m3(rng);
  float *w = kt_host((size_t)m * (size_t)heads * sizeof *w);
  for (int64_t i = 0; i < m * heads; i++) w[i] = (float)(kt_unit(rng) * 2.0 - 0.5);
  int32_t *bt = kt_host((size_t)num_req * (size_t)max_blocks * sizeof *bt);
  int64_t nblk = num_slots / B;
  for (int64_t i = 0; i < (int64_t)num_req * max_blocks; i++) {
    int kind = (int)kt_int(rng, 0, 19);
    bt[i] = kind == 0 ? -1 : kind == 1 ? (int32_t)(nblk + kt_int(rng, 0, 3)) : (int32_t)kt_int(rng, 0, nblk - 1);
  }
  int32_t *req = kt_host((size_t)m * sizeof *req), *cnt = kt_host((size_t)m * sizeof *cnt);
  for (int64_t i = 0; i < m; i++) {
    req[i] = kt_int(rng, 0, 9) == 0 ? num_req : (int32_t)kt_int(rng, 0, num_req - 1); /* 1 in 10 outside */
    int kind = (int)kt_int(rng, 0, 5);
    cnt[i] = kind == 0 ? 0 : kind == 1 ? (int32_t)(n + 7) : (int32_t)kt_int(rng, 1, (int64_t)max_blocks * B + 40);
  }
  uint8_t *dc = kt_dev_from(cache, cb), *dq = kt_dev_from(q, qb);
  float *dw = kt_dev_from(w, (size_t)m * (size_t)heads * sizeof *w), *dl = kt_dev((size_t)(m * n) * sizeof(float));
  int32_t *dbt = kt_dev_from(bt, (size_t)num_req * (size_t)max_blocks * sizeof *bt);
  int32_t *dreq = kt_dev_from(req, (size_t)m * sizeof *req), *dcnt = kt_dev_from(cnt, (size_t)m * sizeof *cnt);
  kt_ok(cplab_poison_bytes(dl, (size_t)(m * n) * sizeof(float), 0x7F, NULL, kt_diag()), "cplab_poison_bytes");
  kt_ok(cplab_indexer_logits_decode(
      &(cplab_indexer_logits_decode_params){.q = dq, .weight = dw, .m = m, .heads = heads, .idx_cache = dc,
                                            .num_slots = num_slots, .block_table = dbt, .num_req = num_req,
                                            .max_blocks = max_blocks, .block_size = B, .row_req = dreq,
                                            .row_keys = dcnt, .n = n, .logits = dl}, NULL, kt_diag()),
        "cplab_indexer_logits_decode");
  kt_sync();
  float *got = kt_host((size_t)(m * n) * sizeof *got);
  kt_down(got, dl, (size_t)(m * n) * sizeof *got);
  double *want = kt_host((size_t)n * sizeof *want), *mag = kt_host((size_t)n * sizeof *mag);
  int64_t *slot_of = kt_host((size_t)n * sizeof *slot_of);
  long bad = 0;
  for (int64_t i = 0; i < m; i++) {
    int64_t keys = req[i] >= num_req ? 0 : cnt[i] < n ? cnt[i] : n;
    double maxabs = 0;
    for (int64_t l = 0; l < keys; l++) {
      int64_t blk = l / B, sl = -1;
      if (blk < max_blocks) {
        int32_t e = bt[(int64_t)req[i] * max_blocks + blk];
        sl = e >= 0 && (int64_t)e * B + l % B < num_slots ? (int64_t)e * B + l % B : -1;
      }
      slot_of[l] = sl;
      want[l] = host_logit(q, w, heads, i, sl >= 0 ? cache + sl * CPLAB_IDX_ENTRY_BYTES : NULL, &mag[l]);
      if (fabs(want[l]) > maxabs) maxabs = fabs(want[l]);
    }
    for (int64_t l = 0; l < n; l++) {
      float v = got[i * n + l];
      if (l >= keys) {
        bad += v != -INFINITY;
        continue;
      }
      bad += !logit_ok(v, want[l], mag[l], maxabs, worst);
    }
    /* Keys whose entries are equal (copies of one entry, or one slot twice)
     * score bit-identically: each against the first such key. */
    for (int64_t l = 1; l < keys; l++) {
      if (slot_of[l] < 0) continue;
      int64_t c = slot_of[l];
      while (src[c] != c) c = src[c];
      for (int64_t l2 = 0; l2 < l; l2++) {
        int64_t c2 = slot_of[l2];
        if (c2 < 0) continue;
        while (src[c2] != c2) c2 = src[c2];
        if (c2 != c) continue;
        (*ties)++;
        bad += memcmp(&got[i * n + l], &got[i * n + l2], sizeof(float)) != 0;
        break;
      }
    }
  }
  free(cache), free(q), free(src), free(w), free(bt), free(req), free(cnt), free(got), free(want), free(mag), free(slot_of);
  kt_free(dc), kt_free(dq), kt_free(dw), kt_free(dl), kt_free(dbt), kt_free(dreq), kt_free(dcnt);
  return bad;
}

static void logits_decode_random(uint64_t *rng) {
  static const int head_set[] = {1, 9, 16, 32, 40, 64, 128};
  int cases = kt_model_size("the decode logits' 120 random cases on the device (10 in the emulation)") ? 120 : 10;
  long bad = 0, ties = 0, failing = 0;
  logit_worst worst = {0, 0};
  for (int c = 0; c < cases; c++) {
    int heads = head_set[c % (int)(sizeof head_set / sizeof *head_set)];
    long b = decode_case(rng, heads, &worst, &ties);
    if (b && failing++ == 0) printf("# decode logits case %d (heads %d): %ld wrong\n", c, heads, b);
    bad += b;
  }
  kt_check(bad == 0 && ties > 0,
           "indexer_logits_decode: %d random paged cases (block sizes 1/16/64/128, negative and out-of-range table "
           "entries, rows outside the table, key counts 0 .. past n): max error %.3g of the logit's magnitude sum "
           "(<= %g; %.3g of the row's max |logit|), -inf after the row's keys, %ld equal entries bit-identical: %ld "
           "wrong values in %ld cases",
           cases, worst.of_mag, LOGIT_TOL, worst.of_max, ties, bad, failing);
  uint8_t one = 0;
  float f = 0;
  int32_t z = 0;
  cplab_indexer_logits_decode_params p = {.q = &one, .weight = &f, .m = 1, .heads = 129, .idx_cache = &one,
                                         .num_slots = 1, .block_table = &z, .num_req = 1, .max_blocks = 1,
                                         .block_size = 1, .row_req = &z, .row_keys = &z, .n = 1, .logits = &f};
  kt_check(cplab_indexer_logits_decode(&p, NULL, kt_diag()) == CPLAB_EINVAL, "indexer_logits_decode refuses 129 heads");
  p.heads = 8, p.block_size = 0;
  kt_check(cplab_indexer_logits_decode(&p, NULL, kt_diag()) == CPLAB_EINVAL,
           "indexer_logits_decode refuses block size 0");
  /* The tile loop's columns are 32-bit up to n rounded up to a 64-key tile: n is refused from 2^31 - 64
   * on (before any launch, so the 1-element buffers are never read). */
  cplab_diag dn = {0};
  p.block_size = 1, p.n = (int64_t)INT32_MAX - 63, p.q = p.idx_cache = (const uint8_t *)&z; /* 4-byte aligned */
  int rc_n = cplab_indexer_logits_decode(&p, NULL, &dn);
  kt_check(rc_n == CPLAB_EINVAL && strstr(dn.msg, "keys below 2^31 - 64"),
           "indexer_logits_decode refuses n = 2^31 - 64 keys: rc %d (%s)", rc_n, dn.msg);
}

int main(void) {
  uint64_t rng;
  kt_begin("test_gpu_indexer", &rng);
  pipeline(&rng);
  synthetic(&rng);
  merge_cases(&rng);
  logits_random(&rng);
  logits_decode_random(&rng);
  tk_random(&rng);
  tk_staged(&rng);
  tk_floor_edge(&rng);
  tk_clustered(&rng);
  tk_signs(&rng);
  tk_route();
  tk_cluster(&rng);
  tk_many_rows(&rng);
  tk_split(&rng);
  tk_convert(&rng);
  return kt_end();
}
