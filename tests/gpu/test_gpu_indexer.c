/* GPU test: the indexer pipeline against sim/indexer_ref.h.
 *   - keys generated into the cache through slots (cplab_gen_cache) and
 *     gathered into logical order (cplab_gather_idx): equal to
 *     cplab_kvformat_idx_generate;
 *   - queries from cplab_gen_indexer_query; logits (cplab_indexer_logits)
 *     within 1e-5 of the row's max |logit| of sim_indexer_logit, -inf outside
 *     [ks, ke) exactly, and copied keys (ties) bit-identical on the device;
 *   - top-k (cplab_topk, k = 2048 and 64): exactly the order "higher logit,
 *     then lower index" over the device's own fp32 logits, and equal to
 *     sim_indexer_topk modulo ties (an index only one side picked must score
 *     within 1e-5 · max |logit| of the reference's k-th score), with exact -1
 *     / -inf padding;
 *   - top-k on synthetic rows of 131072 columns: heavy ties, ±0, -inf inside
 *     the range, empty and short ranges, k = 1, 2048, 4096. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "indexer_ref.h"
#include "kt.h"

#define HEADS 64
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
  kt_ok(cplab_gen_cache(SEED, LAYER, d_req, d_pos, d_slot, NKEYS, NULL, d_cache, num_slots, NULL, kt_diag()),
        "cplab_gen_cache");
  kt_ok(cplab_gather_idx(d_cache, num_slots, d_slot, NKEYS, d_keys, NULL, kt_diag()), "cplab_gather_idx");
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

/* Logits vs sim_indexer_logit; ties bit-identical. Fills maxabs per row. */
static void check_logits(const rows *q, const uint8_t *keys, const sim_indexer_query *ref, const float *logits,
                         double *maxabs) {
  double worst = 0;
  long outside_bad = 0, in_range = 0, tie_pairs = 0, tie_bad = 0;
  for (int r = 0; r < q->m; r++) {
    const float *row = logits + (size_t)r * NKEYS;
    double err = 0;
    maxabs[r] = 0;
    for (int64_t j = 0; j < NKEYS; j++) {
      if (j < q->ks[r] || j >= q->ke[r]) {
        outside_bad += row[j] != -INFINITY;
        continue;
      }
      double want = sim_indexer_logit(&ref[r], keys + j * CPLAB_IDX_ENTRY_BYTES);
      in_range++;
      if (fabs(want) > maxabs[r]) maxabs[r] = fabs(want);
      double e = fabs((double)row[j] - want);
      if (!(e <= err)) err = e;
      uint32_t p = (uint32_t)(j - q->ks[r]);
      uint32_t src = cplab_kvformat_idx_source(SEED, LAYER, (uint32_t)q->req[r], p);
      if (src != p) {
        tie_pairs++;
        tie_bad += memcmp(&row[j], &row[q->ks[r] + src], sizeof(float)) != 0;
      }
    }
    double rel = maxabs[r] > 0 ? err / maxabs[r] : err;
    if (!(rel <= worst)) worst = rel;
  }
  kt_check(worst <= 1e-5 && outside_bad == 0,
           "indexer_logits: %d rows, %ld logits in range, max error %.3g of the row's max |logit| (<= 1e-5), "
           "%ld values outside [ks, ke) not -inf",
           q->m, in_range, worst, outside_bad);
  kt_check(tie_bad == 0 && tie_pairs > 0, "indexer_logits: %ld copied keys score bit-identically to their source (%ld differ)",
           tie_pairs, tie_bad);
}

/* Modulo ties against sim_indexer_topk; exact padding. */
static void check_topk_ref(const rows *q, const uint8_t *keys, const sim_indexer_query *ref, const double *maxabs,
                           int k, const int32_t *idx) {
  int32_t *want = kt_host((size_t)k * sizeof *want);
  double *want_s = kt_host((size_t)k * sizeof *want_s);
  long only_one = 0, bad = 0, padding = 0;
  for (int r = 0; r < q->m; r++) {
    int64_t L = q->ke[r] - q->ks[r];
    double kth;
    const uint8_t(*rk)[CPLAB_IDX_ENTRY_BYTES] = (const uint8_t(*)[CPLAB_IDX_ENTRY_BYTES])(keys + (size_t)q->ks[r] * CPLAB_IDX_ENTRY_BYTES);
    kt_ok(sim_indexer_topk(&ref[r], rk, L, k, want, want_s, &kth, kt_diag()), "sim_indexer_topk");
    double eps = 1e-5 * maxabs[r];
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
           "1e-5 of the k-th score), %ld padding entries -1 on both sides, %ld failures",
           k, q->m, only_one, padding, bad);
  free(want);
  free(want_s);
}

static void run_topk(const float *d_logits, int64_t m, int64_t n, const int32_t *ks, const int32_t *ke, int k,
                     int32_t *idx, float *score) {
  int32_t *d_ks = kt_dev_from(ks, (size_t)m * 4), *d_ke = kt_dev_from(ke, (size_t)m * 4);
  int32_t *d_idx = kt_dev((size_t)m * k * 4);
  float *d_score = kt_dev((size_t)m * k * 4);
  kt_ok(cplab_topk(d_logits, m, n, d_ks, d_ke, k, d_idx, d_score, NULL, kt_diag()), "cplab_topk");
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
  kt_ok(cplab_gen_indexer_query(SEED, LAYER, d_req, d_pos, q.m, HEADS, d_q, d_scale, d_w, NULL, kt_diag()),
        "cplab_gen_indexer_query");
  kt_ok(cplab_indexer_logits(d_q, d_w, q.m, HEADS, d_keys, NKEYS, d_ks, d_ke, d_logits, NULL, kt_diag()),
        "cplab_indexer_logits");
  kt_sync();
  float *logits = kt_host((size_t)q.m * NKEYS * 4);
  kt_down(logits, d_logits, (size_t)q.m * NKEYS * 4);
  sim_indexer_query *ref = kt_host((size_t)q.m * sizeof *ref);
  for (int r = 0; r < q.m; r++)
    kt_ok(sim_indexer_query_make(SEED, LAYER, (uint32_t)q.req[r], (uint32_t)q.pos[r], HEADS, &ref[r], kt_diag()),
          "sim_indexer_query_make");
  double maxabs[32];
  check_logits(&q, keys, ref, logits, maxabs);
  static const int ks_[] = {2048, 64};
  for (int t = 0; t < 2; t++) {
    int k = ks_[t];
    int32_t *idx = kt_host((size_t)q.m * k * 4);
    float *score = kt_host((size_t)q.m * k * 4);
    run_topk(d_logits, q.m, NKEYS, q.ks, q.ke, k, idx, score);
    int bad = exact_rows(logits, q.m, NKEYS, q.ks, q.ke, k, idx, score, "topk (pipeline)");
    kt_check(bad == 0, "topk k=%d: %d rows exactly the host order of the device logits (%d rows differ)", k, q.m, bad);
    check_topk_ref(&q, keys, ref, maxabs, k, idx);
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
  kt_ok(cplab_topk_merge(d_cand, d_cand_s, D, MERGE_M, k, I, d_idx, d_score, NULL, kt_diag()), "cplab_topk_merge");
  kt_sync();
  int32_t *got = kt_host((size_t)MERGE_M * k * 4);
  float *got_s = kt_host((size_t)MERGE_M * k * 4);
  kt_down(got, d_idx, (size_t)MERGE_M * k * 4);
  kt_down(got_s, d_score, (size_t)MERGE_M * k * 4);
  int same = !memcmp(got, want, (size_t)MERGE_M * k * 4) && !memcmp(got_s, want_s, (size_t)MERGE_M * k * 4);
  if (!same) fprintf(stderr, "merge: D %d, interleave %d, k %d, %lld keys, values of kind %d differ\n", D, I, k,
                     (long long)N, dist);
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
  cases += 2;
  kt_check(good == cases,
           "topk_merge: %d cases (D 1..8, interleave 1..64, k 1..2048, ties, ±0, -inf, rows shorter than k) equal "
           "cplab_topk over all keys: indices, scores and padding (%d differ)",
           cases, cases - good);
  int32_t one = 0;
  float s = 0;
  kt_check(cplab_topk_merge(&one, &s, 0, 1, 1, 1, &one, &s, NULL, kt_diag()) == CPLAB_EINVAL,
           "topk_merge refuses 0 owners");
  kt_check(cplab_topk_merge(&one, &s, 1, 1, CPLAB_TOPK_MAX + 1, 1, &one, &s, NULL, kt_diag()) == CPLAB_EINVAL,
           "topk_merge refuses k above CPLAB_TOPK_MAX");
}

int main(void) {
  uint64_t rng;
  kt_begin("test_gpu_indexer", &rng);
  pipeline(&rng);
  synthetic(&rng);
  merge_cases(&rng);
  return kt_end();
}
