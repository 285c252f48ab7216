/* GPU test: sparse MLA attention and the DCP combine against sim/reference.h.
 * Both kernels run on tensor cores (wgmma on sm_90a, mma.sync elsewhere and
 * under the emulation) with bf16 softmax weights: every float check below is
 * against the double-precision reference within ATT_REL_L2 (out, relative L2
 * norm per row and head) and LSE_ABS + LSE_REL · |lse| (lse), empty rows
 * exactly lse -inf / out 0.
 *   - prefill (cplab_sparse_mla_prefill) over a workspace gathered from
 *     generated cache entries, queries from cplab_gen_mla_query: GLM-5-like
 *     (64 heads, k = 2048), small (20 heads, k = 64, duplicates) and one of
 *     72 heads (a second, partial block of 64) with k = 200 (a partial last
 *     tile of 64 entries) and rows whose tiles alternate between valid and
 *     all -1 (skipped tiles) or whose only valid entries are the last ones;
 *     rows with -1, out-of-range and all -1 (empty) indices;
 *   - decode (cplab_sparse_mla_decode) over the fp8 cache, the same cases,
 *     and within the bounds of the prefill kernel over the gathered rows of
 *     the same slots; rows holding 1/D of their entries (a DCP rank's: the
 *     valid ones compacted into tiles);
 *   - the split decode (cplab_sparse_mla_decode_split: a few rows spread
 *     over the GPU, partial results merged; the model's split count and
 *     given ones, up to one tile a split, uneven shares, empty splits of a
 *     DCP row) against the reference, the unsplit decode and one call a
 *     row, its scratch query, and its refusal of too little scratch and of
 *     more splits than tiles;
 *   - combine (cplab_lse_combine): within 1e-6 (relative to max(1, |x|)) of
 *     sim_lse_combine, incl. NaN / +inf / -inf lse and NaN outputs of empty
 *     shards; and decode split over DCP shards + combine against the
 *     unsplit decode (within both bounds);
 *   - head padding (cplab-bench --head-pad): 16 real heads run as 64 with
 *     zero queries give the real heads' results bit for bit (prefill,
 *     decode) or within the bounds (split decode), the padding heads'
 *     finite;
 *   - batch invariance: 64 rows of 64 heads in one call and in calls of 40,
 *     20, 2 and 1 rows, and 128 rows of 20 heads in one call and in calls of
 *     100, 27 and 1 rows, give bit-identical outputs and lse, for both
 *     kernels. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kvformat.h"
#include "cplab/stats.h"
#include "kt.h"
#include "reference.h"

#define SEED UINT64_C(77)
#define LAYER 3
#define DQK CPLAB_MLA_ROW_DIM
#define DV CPLAB_MLA_NOPE_DIM

/* Bounds against the double-precision reference. The kernels round the
 * softmax weights to bf16 before they multiply the values (as FlashMLA
 * does): each weight within 2^-9 relative, and the output's relative error
 * about that divided by the square root of the entries it averages; 1e-2
 * is five times 2^-9, and at most 0.3% was seen (k = 64). lse comes from
 * the fp32 weights, and its error is the scores': the tensor cores' fp32
 * accumulation over 576 columns is within a few units of 2^-23 of the
 * partial sums, so the bound is LSE_ABS + LSE_REL · |lse| (LSE_REL about
 * FlashMLA's 2/65536; this test's scores reach the hundreds, where a GPU
 * run saw 1.8e-3 absolute). cplab-diff's policy (analysis/policy.json:
 * attn_out rtol 2e-2, cosine 0.9999; attn_lse atol 1e-3, rtol 1e-4) admits
 * both. */
#define ATT_REL_L2 1e-2
#define LSE_ABS 1e-3
#define LSE_REL 3e-5

/* A cache of num_slots entries; slots [0, filled) hold the tokens
 * (request 2, position = slot); the rest keep poison bytes. Returns the
 * device cache and the device workspace gathered from it (row s = slot s). */
typedef struct kvset {
  int64_t num_slots, filled;
  uint8_t *d_cache;
  uint16_t *d_ws; /* [num_slots][576] */
  uint16_t *ws;   /* host copy */
} kvset;

static void make_kvset(int64_t num_slots, int64_t filled, kvset *s) {
  cplab_diag *d = kt_diag();
  s->num_slots = num_slots;
  s->filled = filled;
  int32_t *req = kt_host((size_t)filled * 4), *pos = kt_host((size_t)filled * 4);
  int64_t *slot = kt_host((size_t)num_slots * 8);
  for (int64_t i = 0; i < num_slots; i++) slot[i] = i;
  for (int64_t i = 0; i < filled; i++) {
    req[i] = 2;
    pos[i] = (int32_t)i;
  }
  int32_t *d_req = kt_dev_from(req, (size_t)filled * 4), *d_pos = kt_dev_from(pos, (size_t)filled * 4);
  int64_t *d_slot = kt_dev_from(slot, (size_t)num_slots * 8);
  s->d_cache = kt_dev((size_t)num_slots * CPLAB_MLA_ENTRY_BYTES);
  s->d_ws = kt_dev((size_t)num_slots * DQK * 2);
  kt_ok(cplab_poison_bytes(s->d_cache, (size_t)num_slots * CPLAB_MLA_ENTRY_BYTES, 0x7F, NULL, d), "cplab_poison_bytes");
  kt_ok(cplab_gen_cache(&(cplab_gen_cache_params){.seed = SEED, .layer = LAYER, .req = d_req, .pos = d_pos,
                                                  .slot = d_slot, .n = filled, .kv_cache = s->d_cache,
                                                  .idx_cache = NULL, .num_slots = num_slots}, NULL, d),
        "cplab_gen_cache");
  kt_ok(cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = s->d_cache, .num_slots = num_slots, .slot = d_slot,
                                                    .rows = num_slots, .out = s->d_ws}, NULL, d), "cplab_gather_mla");
  kt_sync();
  s->ws = kt_host((size_t)num_slots * DQK * 2);
  kt_down(s->ws, s->d_ws, (size_t)num_slots * DQK * 2);
  free(req);
  free(pos);
  free(slot);
  kt_free(d_req);
  kt_free(d_pos);
  kt_free(d_slot);
}

static void free_kvset(kvset *s) {
  kt_free(s->d_cache);
  kt_free(s->d_ws);
  free(s->ws);
}

/* An attention case: m query rows of `heads` heads over k indices each. */
typedef struct att_case {
  const char *name;
  int64_t m;
  int heads, k;
  int32_t *idx;      /* [m][k] */
  uint16_t *q;       /* host copy of the generated queries */
  uint16_t *d_q;
  int32_t *d_idx;
} att_case;

/* Index rows by kind: 0 distinct random valid rows; 1 valid then a -1 tail;
 * 2 all -1 (empty); 3 random with -1, out-of-range and duplicates; 4 runs
 * of 64 entries alternately valid (random, duplicates possible) and all -1;
 * 5 all -1 but the last 5 entries; 6 random valid at every DCP_D-th
 * entry, -1 elsewhere (a DCP rank's row). */
#define DCP_D 4
static void fill_indices(uint64_t *rng, int kind, int k, int64_t valid_rows, int64_t all_rows, int32_t *row) {
  if (kind == 0) {
    int64_t stride = valid_rows / k;
    for (int j = 0; j < k; j++) row[j] = (int32_t)(j * stride + kt_int(rng, 0, stride - 1)); /* distinct */
    for (int j = k - 1; j > 0; j--) {
      int64_t i = kt_int(rng, 0, j);
      int32_t x = row[j];
      row[j] = row[i];
      row[i] = x;
    }
    return;
  }
  for (int j = 0; j < k; j++) {
    if (kind == 1) row[j] = j < k * 3 / 4 ? (int32_t)kt_int(rng, 0, valid_rows - 1) : -1;
    else if (kind == 2) row[j] = -1;
    else if (kind == 4) row[j] = (j / 64) % 2 ? -1 : (int32_t)kt_int(rng, 0, valid_rows - 1);
    else if (kind == 5) row[j] = j >= k - 5 ? (int32_t)kt_int(rng, 0, valid_rows - 1) : -1;
    else if (kind == 6) row[j] = j % DCP_D == 1 ? (int32_t)kt_int(rng, 0, valid_rows - 1) : -1;
    else {
      int64_t u = kt_int(rng, 0, 9);
      row[j] = u == 0 ? -1 : u == 1 ? (int32_t)kt_int(rng, all_rows, all_rows + 50) : (int32_t)kt_int(rng, 0, valid_rows - 1);
    }
  }
}

static void make_case(uint64_t *rng, att_case *c, const int *kinds, int64_t valid_rows, int64_t all_rows) {
  int32_t *req = kt_host((size_t)c->m * 4), *pos = kt_host((size_t)c->m * 4);
  c->idx = kt_host((size_t)c->m * c->k * 4);
  for (int64_t i = 0; i < c->m; i++) {
    req[i] = 2;
    pos[i] = (int32_t)(valid_rows + i);
    fill_indices(rng, kinds[i], c->k, valid_rows, all_rows, c->idx + i * c->k);
  }
  size_t qn = (size_t)c->m * c->heads * DQK;
  int32_t *d_req = kt_dev_from(req, (size_t)c->m * 4), *d_pos = kt_dev_from(pos, (size_t)c->m * 4);
  c->d_q = kt_dev(qn * 2);
  kt_ok(cplab_gen_mla_query(&(cplab_gen_mla_query_params){.seed = SEED, .layer = LAYER, .req = d_req, .pos = d_pos,
                                                          .m = c->m, .head0 = 0, .heads_local = c->heads, .q = c->d_q},
                            NULL, kt_diag()),
        "cplab_gen_mla_query");
  kt_sync();
  c->q = kt_host(qn * 2);
  kt_down(c->q, c->d_q, qn * 2);
  c->d_idx = kt_dev_from(c->idx, (size_t)c->m * c->k * 4);
  free(req);
  free(pos);
  kt_free(d_req);
  kt_free(d_pos);
}

static void free_case(att_case *c) {
  free(c->idx);
  free(c->q);
  kt_free(c->d_q);
  kt_free(c->d_idx);
}

typedef struct att_result {
  float *out, *lse; /* host */
} att_result;

static void run_prefill(const att_case *c, const kvset *s, float scale, att_result *r) {
  size_t no = (size_t)c->m * c->heads * DV, nl = (size_t)c->m * c->heads;
  float *d_out = kt_dev(no * 4), *d_lse = kt_dev(nl * 4);
  cplab_sparse_mla_prefill_params p = {.q = c->d_q, .m = c->m, .heads = c->heads, .workspace = s->d_ws,
                                       .rows = s->num_slots, .idx = c->d_idx, .k = c->k, .scale = scale,
                                       .out = d_out, .lse = d_lse};
  kt_ok(cplab_sparse_mla_prefill(&p, NULL, kt_diag()), "cplab_sparse_mla_prefill");
  kt_sync();
  r->out = kt_host(no * 4);
  r->lse = kt_host(nl * 4);
  kt_down(r->out, d_out, no * 4);
  kt_down(r->lse, d_lse, nl * 4);
  kt_free(d_out);
  kt_free(d_lse);
}

/* The decode parameters of rows [r0, r0 + n) of c over the slot lists d_slots, results to out and lse. */
static cplab_sparse_mla_decode_params decode_params(const att_case *c, const kvset *s, const int32_t *d_slots,
                                                    float scale, int64_t r0, int64_t n, float *d_out, float *d_lse) {
  size_t H = (size_t)c->heads, K = (size_t)c->k;
  return (cplab_sparse_mla_decode_params){.q = c->d_q + r0 * H * DQK, .m = n, .heads = c->heads,
                                          .kv_cache = s->d_cache, .num_slots = s->num_slots,
                                          .slot = d_slots + r0 * K, .k = c->k, .scale = scale,
                                          .out = d_out + r0 * H * DV, .lse = d_lse + r0 * H};
}

static void run_decode(const att_case *c, const kvset *s, const int32_t *d_slots, float scale, float *d_out,
                       float *d_lse) {
  cplab_sparse_mla_decode_params p = decode_params(c, s, d_slots, scale, 0, c->m, d_out, d_lse);
  kt_ok(cplab_sparse_mla_decode(&p, NULL, kt_diag()), "cplab_sparse_mla_decode");
}

static void download_result(const att_case *c, const float *d_out, const float *d_lse, att_result *r) {
  size_t no = (size_t)c->m * c->heads * DV, nl = (size_t)c->m * c->heads;
  kt_sync();
  r->out = kt_host(no * 4);
  r->lse = kt_host(nl * 4);
  kt_down(r->out, d_out, no * 4);
  kt_down(r->lse, d_lse, nl * 4);
}

static void free_result(att_result *r) {
  free(r->out);
  free(r->lse);
}

/* Compare with sim_attention over the valid indices of each row (valid:
 * 0 <= i < the valid range of the kernel, rows). */
static void check_reference(const att_case *c, const kvset *s, int64_t rows, float scale, const att_result *r,
                            double rel_bound, const char *what) {
  double worst = 0, worst_lse = 0, lse_max = 0; /* worst_lse: in units of the bound */
  int empty = 0, empty_bad = 0;
  double *q = kt_host((size_t)c->heads * DQK * 8), *kv = kt_host((size_t)c->k * DQK * 8);
  double *out = kt_host((size_t)c->heads * DV * 8), *lse = kt_host((size_t)c->heads * 8);
  for (int64_t i = 0; i < c->m; i++) {
    for (size_t e = 0; e < (size_t)c->heads * DQK; e++) q[e] = kt_bf16(c->q[(size_t)i * c->heads * DQK + e]);
    size_t n = 0;
    for (int j = 0; j < c->k; j++) {
      int32_t x = c->idx[i * c->k + j];
      if (x < 0 || x >= rows) continue;
      for (int e = 0; e < DQK; e++) kv[n * DQK + e] = kt_bf16(s->ws[(size_t)x * DQK + e]);
      n++;
    }
    sim_attention(q, c->heads, kv, n, scale, out, lse);
    for (int h = 0; h < c->heads; h++) {
      const float *got = r->out + ((size_t)i * c->heads + h) * DV;
      float got_lse = r->lse[i * c->heads + h];
      if (n == 0) {
        empty++;
        int ok = got_lse == -INFINITY;
        for (int e = 0; e < DV; e++) ok &= got[e] == 0.0f;
        empty_bad += !ok;
        continue;
      }
      double num = 0, den = 0;
      for (int e = 0; e < DV; e++) {
        double diff = got[e] - out[(size_t)h * DV + e];
        num += diff * diff;
        den += out[(size_t)h * DV + e] * out[(size_t)h * DV + e];
      }
      double rel = sqrt(num) / (den > 0 ? sqrt(den) : 1.0);
      double el = fabs(got_lse - lse[h]) / (LSE_ABS + LSE_REL * fabs(lse[h]));
      worst = cplab_stats_worst(worst, rel);
      worst_lse = cplab_stats_worst(worst_lse, el);
      if (fabs(lse[h]) > lse_max) lse_max = fabs(lse[h]);
    }
  }
  kt_check(worst <= rel_bound && worst_lse <= 1 && empty_bad == 0,
           "%s: %" PRId64 " rows x %d heads, k %d: max relative L2 error of out %.3g (<= %.3g), max |lse error| "
           "%.3g of its bound %.0e + %.0e |lse| (|lse| up to %.3g); %d empty (row, head) pairs lse -inf / out 0 "
           "(%d wrong)",
           what, c->m, c->heads, c->k, worst, rel_bound, worst_lse, LSE_ABS, LSE_REL, lse_max, empty, empty_bad);
  free(q);
  free(kv);
  free(out);
  free(lse);
}

static void prefill_case(uint64_t *rng, const char *name, int64_t m, int heads, int k, const int *kinds, kvset *s,
                         float scale) {
  att_case c = {.name = name, .m = m, .heads = heads, .k = k};
  make_case(rng, &c, kinds, s->filled, s->num_slots);
  att_result r;
  run_prefill(&c, s, scale, &r);
  check_reference(&c, s, s->num_slots, scale, &r, ATT_REL_L2, name);
  free_result(&r);
  free_case(&c);
}

/* Two results for the same rows (`what` says which) agree within both bounds. */
static void check_kernels_agree(const att_case *c, const att_result *dec, const att_result *pre, const char *name,
                                const char *what) {
  size_t nl = (size_t)c->m * c->heads;
  double worst = 0, worst_lse = 0;
  int inf_differ = 0;
  for (size_t g = 0; g < nl; g++) {
    double num = 0, den = 0;
    for (int e = 0; e < DV; e++) {
      double a = pre->out[g * DV + e], b = dec->out[g * DV + e];
      num += (a - b) * (a - b);
      den += b * b;
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    worst = cplab_stats_worst(worst, rel);
    double el = fabs(dec->lse[g] - pre->lse[g]) / (2 * (LSE_ABS + LSE_REL * fabs(dec->lse[g])));
    if (isinf(dec->lse[g]) || isinf(pre->lse[g])) inf_differ += dec->lse[g] != pre->lse[g];
    else worst_lse = cplab_stats_worst(worst_lse, el);
  }
  kt_check(worst <= 2 * ATT_REL_L2 && worst_lse <= 1 && inf_differ == 0,
           "%s: %s agree: relative L2 %.3g (<= %.3g), |lse difference| %.3g of the sum of both bounds, the same "
           "empty rows (%d differ)",
           name, what, worst, 2 * ATT_REL_L2, worst_lse, inf_differ);
}

/* Decode over slots vs the reference, and vs prefill over the same rows. */
static void decode_case(uint64_t *rng, const char *name, int64_t m, int heads, int k, const int *kinds, kvset *s,
                        float scale) {
  att_case c = {.name = name, .m = m, .heads = heads, .k = k};
  make_case(rng, &c, kinds, s->filled, s->num_slots);
  size_t no = (size_t)m * heads * DV, nl = (size_t)m * heads;
  float *d_out = kt_dev(no * 4), *d_lse = kt_dev(nl * 4);
  run_decode(&c, s, c.d_idx, scale, d_out, d_lse);
  att_result dec, pre;
  download_result(&c, d_out, d_lse, &dec);
  check_reference(&c, s, s->num_slots, scale, &dec, ATT_REL_L2, name);
  run_prefill(&c, s, scale, &pre);
  check_kernels_agree(&c, &dec, &pre, name, "decode over the fp8 cache and prefill over the gathered rows");
  free_result(&dec);
  free_result(&pre);
  kt_free(d_out);
  kt_free(d_lse);
  free_case(&c);
}

/* ---- combine ---- */

static float lse_special(int which) {
  switch (which) {
  case 0: return -INFINITY;
  case 1: return NAN;
  case 2: return INFINITY;
  default: return 0;
  }
}

static void check_combine(uint64_t *rng, int D, int64_t m, int heads) {
  size_t mh = (size_t)m * heads;
  float *lse = kt_host(D * mh * 4), *out = kt_host(D * mh * DV * 4), *final = kt_host(mh * DV * 4);
  for (int r = 0; r < D; r++)
    for (size_t g = 0; g < mh; g++) {
      float l = (float)(kt_unit(rng) * 25.0 - 5.0);
      int empty = 0;
      size_t row = g / heads;
      /* Row kinds: 0 all -inf (empty everywhere), 1 rank 0 -inf, 2 rank 1 NaN,
       * 3 rank 0 +inf, 4 all but the last -inf, else ordinary. */
      int special = -1;
      if (row == 0 || (row == 1 && r == 0) || (row == 4 && r != D - 1)) special = 0;
      if (row == 2 && r == 1 % D) special = 1;
      if (row == 3 && r == 0) special = 2;
      if (special >= 0) {
        l = lse_special(special);
        empty = 1;
      }
      lse[r * mh + g] = l;
      for (int e = 0; e < DV; e++)
        out[(r * mh + g) * DV + e] = empty ? NAN : (float)(kt_unit(rng) * 6.0 - 3.0);
    }
  float *d_lse = kt_dev_from(lse, D * mh * 4), *d_out = kt_dev_from(out, D * mh * DV * 4);
  float *d_final = kt_dev(mh * DV * 4);
  kt_ok(cplab_lse_combine(&(cplab_lse_combine_params){.lse = d_lse, .out = d_out, .D = D, .m = m, .heads = heads,
                                                      .final = d_final}, NULL, kt_diag()), "cplab_lse_combine");
  kt_sync();
  kt_down(final, d_final, mh * DV * 4);
  double *dl = kt_host(D * heads * 8), *dout = kt_host(D * heads * DV * 8), *want = kt_host(heads * DV * 8);
  double worst = 0;
  for (int64_t i = 0; i < m; i++) {
    for (int r = 0; r < D; r++)
      for (int h = 0; h < heads; h++) {
        size_t g = (size_t)i * heads + h;
        dl[r * heads + h] = lse[r * mh + g];
        for (int e = 0; e < DV; e++) dout[((size_t)r * heads + h) * DV + e] = out[(r * mh + g) * DV + e];
      }
    sim_lse_combine(D, heads, dl, dout, want);
    for (int e = 0; e < heads * DV; e++) {
      double got = final[(size_t)i * heads * DV + e], w = want[e];
      double err = fabs(got - w) / (fabs(w) > 1 ? fabs(w) : 1);
      worst = cplab_stats_worst(worst, err);
    }
  }
  kt_check(worst <= 1e-6,
           "lse_combine D %d: %" PRId64 " rows x %d heads (all-empty, NaN, +inf, -inf lse, NaN outputs of empty "
           "shards) within %.3g of sim_lse_combine (<= 1e-6)",
           D, m, heads, worst);
  free(lse);
  free(out);
  free(final);
  free(dl);
  free(dout);
  free(want);
  kt_free(d_lse);
  kt_free(d_out);
  kt_free(d_final);
}

/* The split decode: m rows spread over `splits` blocks a row (0: the
 * launcher's model, which sees the emulation's one SM and splits nothing
 * there), against the reference and the unsplit decode; then the same rows
 * one call a row (the model's splits for one row, as cplab-exec runs them)
 * within both bounds of the batched call (cplab-bench --check's rule); too
 * little scratch and more splits than tiles are refused. */
static void check_decode_split(uint64_t *rng, const char *name, int64_t m, int heads, int k, const int *kinds,
                               kvset *s, float scale, int splits) {
  att_case c = {.name = name, .m = m, .heads = heads, .k = k};
  make_case(rng, &c, kinds, s->filled, s->num_slots);
  size_t no = (size_t)m * heads * DV, nl = (size_t)m * heads, bytes = 0, bytes1 = 0;
  int chosen = 0;
  kt_ok(cplab_sparse_mla_decode_splits(m, heads, k, &chosen, kt_diag()), "cplab_sparse_mla_decode_splits");
  kt_ok(cplab_sparse_mla_decode_scratch(m, heads, k, splits, &bytes, kt_diag()), "cplab_sparse_mla_decode_scratch");
  kt_ok(cplab_sparse_mla_decode_scratch(1, heads, k, 0, &bytes1, kt_diag()), "cplab_sparse_mla_decode_scratch");
  int z = splits ? splits : chosen;
  void *scratch = bytes ? kt_dev(bytes) : NULL, *scratch1 = bytes1 ? kt_dev(bytes1) : NULL;
  float *d_out = kt_dev(no * 4), *d_lse = kt_dev(nl * 4);
  kt_ok(cplab_poison_bytes(d_out, no * 4, 0x7F, NULL, kt_diag()), "cplab_poison_bytes");
  cplab_sparse_mla_decode_params p = decode_params(&c, s, c.d_idx, scale, 0, m, d_out, d_lse);
  p.splits = splits, p.scratch = scratch, p.scratch_bytes = bytes;
  kt_ok(cplab_sparse_mla_decode_split(&p, NULL, kt_diag()), "cplab_sparse_mla_decode_split");
  att_result split, whole, alone;
  download_result(&c, d_out, d_lse, &split);
  kt_check(chosen >= 1 && (z > 1) == (bytes > 0),
           "%s: %d splits a row (the model's: %d), scratch %zu bytes (none unless split)", name, z, chosen, bytes);
  check_reference(&c, s, s->num_slots, scale, &split, ATT_REL_L2, name);
  run_decode(&c, s, c.d_idx, scale, d_out, d_lse);
  download_result(&c, d_out, d_lse, &whole);
  check_kernels_agree(&c, &whole, &split, name, "the split and the unsplit decode");
  kt_ok(cplab_poison_bytes(d_out, no * 4, 0x7F, NULL, kt_diag()), "cplab_poison_bytes");
  for (int64_t i = 0; i < m; i++) {
    cplab_sparse_mla_decode_params p1 = decode_params(&c, s, c.d_idx, scale, i, 1, d_out, d_lse);
    p1.scratch = scratch1, p1.scratch_bytes = bytes1;
    kt_ok(cplab_sparse_mla_decode_split(&p1, NULL, kt_diag()), "cplab_sparse_mla_decode_split");
  }
  download_result(&c, d_out, d_lse, &alone);
  check_kernels_agree(&c, &split, &alone, name, "the batched split decode and one call a row");
  if (z > 1) {
    cplab_diag d = {0};
    cplab_sparse_mla_decode_params short_scratch = p;
    short_scratch.scratch_bytes = bytes - 16;
    int rc = cplab_sparse_mla_decode_split(&short_scratch, NULL, &d);
    kt_check(rc == CPLAB_EINVAL && strstr(d.msg, "scratch"), "%s: %zu bytes of scratch refused (%s)", name,
             bytes - 16, d.msg);
  }
  cplab_diag dz = {0};
  int tiles = (k + 63) / 64;
  cplab_sparse_mla_decode_params too_many = p;
  too_many.splits = tiles + 1;
  int rc = cplab_sparse_mla_decode_split(&too_many, NULL, &dz);
  kt_check(rc == CPLAB_EINVAL && strstr(dz.msg, "splits"), "%s: %d splits for %d tiles refused (%s)", name, tiles + 1,
           tiles, dz.msg);
  /* The compacted list holds at most 8064 entries a row: beyond, a clear refusal, nothing launched. */
  cplab_diag dk = {0};
  cplab_sparse_mla_decode_params too_long = decode_params(&c, s, c.d_idx, scale, 0, 1, d_out, d_lse);
  too_long.k = 8065;
  rc = cplab_sparse_mla_decode(&too_long, NULL, &dk);
  kt_check(rc == CPLAB_EUNSUPPORTED && strstr(dk.msg, "8064"), "%s: k 8065 refused (%s)", name, dk.msg);
  cplab_diag dn = {0};
  rc = cplab_sparse_mla_decode_split(NULL, NULL, &dn);
  kt_check(rc == CPLAB_EINVAL && strstr(dn.msg, "NULL parameters"), "%s: no parameters refused (%s)", name, dn.msg);
  free_result(&split);
  free_result(&whole);
  free_result(&alone);
  kt_free(scratch);
  kt_free(scratch1);
  kt_free(d_out);
  kt_free(d_lse);
  free_case(&c);
}

/* Decode split over D DCP shards (slot kept on shard (slot / I) mod D, -1
 * elsewhere) and combined, against the unsplit decode. */
static void check_split_decode(uint64_t *rng, kvset *s, float scale) {
  const int D = 4, I = 1, heads = 16, k = 256;
  const int64_t m = 4;
  static const int kinds[] = {0, 1, 3, 2};
  att_case c = {.name = "split", .m = m, .heads = heads, .k = k};
  make_case(rng, &c, kinds, s->filled, s->num_slots);
  /* Row 1 keeps only tokens of shard 0..2 (shard 3 empty for it). */
  for (int j = 0; j < k; j++)
    if (c.idx[k + j] >= 0 && (c.idx[k + j] / I) % D == 3) c.idx[k + j] = -1;
  size_t no = (size_t)m * heads * DV, nl = (size_t)m * heads;
  int32_t *shard = kt_host((size_t)m * k * 4);
  int32_t *d_shard = kt_dev((size_t)m * k * 4), *d_full = kt_dev_from(c.idx, (size_t)m * k * 4);
  float *d_out = kt_dev(D * no * 4), *d_lse = kt_dev(D * nl * 4), *d_final = kt_dev(no * 4);
  for (int r = 0; r < D; r++) {
    for (size_t e = 0; e < (size_t)m * k; e++) shard[e] = c.idx[e] >= 0 && (c.idx[e] / I) % D == r ? c.idx[e] : -1;
    kt_ok(cplab_dev_upload(d_shard, shard, (size_t)m * k * 4, kt_diag()), "cplab_dev_upload");
    run_decode(&c, s, d_shard, scale, d_out + r * no, d_lse + r * nl);
    kt_sync(); /* d_shard is reused */
  }
  kt_ok(cplab_lse_combine(&(cplab_lse_combine_params){.lse = d_lse, .out = d_out, .D = D, .m = m, .heads = heads,
                                                      .final = d_final}, NULL, kt_diag()), "cplab_lse_combine");
  att_result whole, split = {kt_host(no * 4), NULL};
  run_decode(&c, s, d_full, scale, d_out, d_lse);
  download_result(&c, d_out, d_lse, &whole);
  kt_down(split.out, d_final, no * 4);
  double worst = 0;
  for (size_t g = 0; g < nl; g++) {
    double num = 0, den = 0;
    for (int e = 0; e < DV; e++) {
      double a = split.out[g * DV + e], b = whole.out[g * DV + e];
      num += (a - b) * (a - b);
      den += b * b;
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    worst = cplab_stats_worst(worst, rel);
  }
  kt_check(worst <= 2 * ATT_REL_L2, "decode split over %d DCP shards + lse_combine agrees with the unsplit decode: max "
           "relative L2 difference %.3g (<= %.3g, both bounds; one row with an empty shard, one empty row)",
           D, worst, 2 * ATT_REL_L2);
  free(shard);
  free(split.out);
  free_result(&whole);
  kt_free(d_shard);
  kt_free(d_full);
  kt_free(d_out);
  kt_free(d_lse);
  kt_free(d_final);
  free_case(&c);
}

/* A row's result is the same bits batched or alone, for both unsplit
 * kernels (the split launcher is not: its split count follows the batch;
 * check_decode_split compares it by the bounds). The m rows of H heads run in one call, then
 * in the calls `parts` lists ({first row, rows}, covering all m), and both
 * results must be the same bits; the one-call result is also checked
 * against the reference. */
typedef struct batch_case {
  const char *what; /* the head groups the calls use */
  int64_t m;
  int heads, k, nparts;
  int parts[6][2];
} batch_case;

/* One call of the kernel under test over rows [r0, r0 + n) of c. */
static void run_rows(int decode, const att_case *c, const kvset *s, float scale, int64_t r0, int64_t n, float *d_out,
                     float *d_lse) {
  size_t H = (size_t)c->heads, K = (size_t)c->k;
  if (decode) {
    cplab_sparse_mla_decode_params p = decode_params(c, s, c->d_idx, scale, r0, n, d_out, d_lse);
    kt_ok(cplab_sparse_mla_decode(&p, NULL, kt_diag()), "cplab_sparse_mla_decode");
  } else {
    cplab_sparse_mla_prefill_params p = {.q = c->d_q + r0 * H * DQK, .m = n, .heads = c->heads, .workspace = s->d_ws,
                                         .rows = s->num_slots, .idx = c->d_idx + r0 * K, .k = c->k, .scale = scale,
                                         .out = d_out + r0 * H * DV, .lse = d_lse + r0 * H};
    kt_ok(cplab_sparse_mla_prefill(&p, NULL, kt_diag()), "cplab_sparse_mla_prefill");
  }
}

static void check_batch_invariance(uint64_t *rng, const kvset *s, float scale, const batch_case *b, int decode) {
  int64_t M = b->m;
  int H = b->heads, K = b->k;
  int *kinds = kt_host((size_t)M * sizeof *kinds);
  for (int64_t i = 0; i < M; i++) kinds[i] = i == 7 ? 2 : i % 4 == 1 ? 1 : 0; /* one empty row */
  att_case c = {.name = "batch", .m = M, .heads = H, .k = K};
  make_case(rng, &c, kinds, s->filled, s->num_slots);
  size_t row_out = (size_t)H * DV;
  float *d_out = kt_dev(M * row_out * 4), *d_lse = kt_dev((size_t)M * H * 4);
  float *out = kt_host(M * row_out * 4), *lse = kt_host((size_t)M * H * 4);
  att_result all;
  run_rows(decode, &c, s, scale, 0, M, d_out, d_lse);
  download_result(&c, d_out, d_lse, &all);
  /* Poison first, so a row the smaller calls leave unwritten shows. */
  kt_ok(cplab_poison_bytes(d_out, M * row_out * 4, 0x7F, NULL, kt_diag()), "cplab_poison_bytes");
  kt_ok(cplab_poison_bytes(d_lse, (size_t)M * H * 4, 0x7F, NULL, kt_diag()), "cplab_poison_bytes");
  for (int p = 0; p < b->nparts; p++) run_rows(decode, &c, s, scale, b->parts[p][0], b->parts[p][1], d_out, d_lse);
  kt_sync();
  kt_down(out, d_out, M * row_out * 4);
  kt_down(lse, d_lse, (size_t)M * H * 4);
  int differ = 0;
  for (int64_t i = 0; i < M; i++)
    differ += memcmp(out + i * row_out, all.out + i * row_out, row_out * 4) != 0 ||
              memcmp(lse + (size_t)i * H, all.lse + (size_t)i * H, (size_t)H * 4) != 0;
  kt_check(differ == 0,
           "%s: %" PRId64 " rows x %d heads, k %d, in one call and in %d smaller calls (%s): bit-identical "
           "outputs and lse (%d rows differ)",
           decode ? "decode" : "prefill", M, H, K, b->nparts, b->what, differ);
  char name[96];
  snprintf(name, sizeof name, "%s %" PRId64 " rows x %d heads in one call", decode ? "decode" : "prefill", M, H);
  check_reference(&c, s, s->num_slots, scale, &all, ATT_REL_L2, name);
  free(kinds);
  free(out);
  free(lse);
  kt_free(d_out);
  kt_free(d_lse);
  free_result(&all);
  free_case(&c);
}

/* Head padding (cplab-bench --head-pad): a rank's H real heads run as P
 * heads whose extra queries are zero. The real heads' results do not change:
 * bit for bit for prefill and the unsplit decode (a row's heads do not
 * depend on the others in its block of 64), within the reference bounds for
 * the split decode (whose split count follows the heads); the padding heads'
 * results are finite (they are discarded). */
static void check_head_padding(uint64_t *rng, const kvset *s, float scale, int kernel) {
  enum { M = 6, H = 16, P = 64, K = 256 };
  static const int kinds[M] = {0, 1, 2, 3, 6, 0};
  static const char *const names[3] = {"prefill", "decode", "split decode"};
  att_case c = {.name = "padding", .m = M, .heads = H, .k = K};
  make_case(rng, &c, kinds, s->filled, s->num_slots);
  uint16_t *qp = calloc((size_t)M * P * DQK, 2);
  for (int64_t i = 0; i < M; i++) memcpy(qp + (size_t)i * P * DQK, c.q + (size_t)i * H * DQK, (size_t)H * DQK * 2);
  att_case cp = c;
  cp.heads = P, cp.q = qp, cp.d_q = kt_dev_from(qp, (size_t)M * P * DQK * 2);
  att_result real, padded;
  for (int pass = 0; pass < 2; pass++) {
    const att_case *x = pass ? &cp : &c;
    size_t no = (size_t)M * x->heads * DV, nl = (size_t)M * x->heads, bytes = 0;
    float *d_out = kt_dev(no * 4), *d_lse = kt_dev(nl * 4);
    if (kernel < 2) {
      run_rows(kernel, x, s, scale, 0, M, d_out, d_lse);
    } else {
      kt_ok(cplab_sparse_mla_decode_scratch(M, x->heads, K, 0, &bytes, kt_diag()), "cplab_sparse_mla_decode_scratch");
      void *scratch = bytes ? kt_dev(bytes) : NULL;
      cplab_sparse_mla_decode_params p = decode_params(x, s, x->d_idx, scale, 0, M, d_out, d_lse);
      p.scratch = scratch, p.scratch_bytes = bytes;
      kt_ok(cplab_sparse_mla_decode_split(&p, NULL, kt_diag()), "cplab_sparse_mla_decode_split");
      kt_sync();
      kt_free(scratch);
    }
    download_result(x, d_out, d_lse, pass ? &padded : &real);
    kt_free(d_out);
    kt_free(d_lse);
  }
  /* The real heads of the padded run, as a result of c. */
  att_result kept = {kt_host((size_t)M * H * DV * 4), kt_host((size_t)M * H * 4)};
  int differ = 0, finite = 1;
  for (int64_t i = 0; i < M; i++) {
    memcpy(kept.out + (size_t)i * H * DV, padded.out + (size_t)i * P * DV, (size_t)H * DV * 4);
    memcpy(kept.lse + (size_t)i * H, padded.lse + (size_t)i * P, (size_t)H * 4);
    for (size_t e = (size_t)H * DV; e < (size_t)P * DV && kinds[i] != 2; e++)
      finite &= isfinite(padded.out[(size_t)i * P * DV + e]) != 0;
  }
  differ = memcmp(kept.out, real.out, (size_t)M * H * DV * 4) != 0 ||
           memcmp(kept.lse, real.lse, (size_t)M * H * 4) != 0;
  char name[96];
  snprintf(name, sizeof name, "%s, %d real heads padded to %d", names[kernel], H, P);
  if (kernel < 2)
    kt_check(!differ, "%s: the real heads' outputs and lse are bit-identical to an unpadded call's", name);
  kt_check(finite, "%s: the padding heads' outputs are finite", name);
  check_reference(&c, s, s->num_slots, scale, &kept, ATT_REL_L2, name);
  free_result(&real);
  free_result(&padded);
  free_result(&kept);
  free(qp);
  kt_free(cp.d_q);
  free_case(&c);
}

int main(void) {
  uint64_t rng;
  kt_begin("test_gpu_attention", &rng);
  const float scale = (float)(1.0 / sqrt(192.0 + 64.0)); /* GLM-5: qk_nope 192 + rope 64 */
  kvset big, small;
  make_kvset(6000, 5000, &big);  /* slots 5000..5999: poison, never valid */
  make_kvset(400, 300, &small);
  static const int glm_kinds[] = {0, 1, 2, 3};
  static const int small_kinds[] = {3, 0, 2, 1, 3};
  prefill_case(&rng, "prefill GLM-5-like", 4, 64, 2048, glm_kinds, &big, scale);
  prefill_case(&rng, "prefill small", 5, 20, 64, small_kinds, &small, scale);
  static const int tile_kinds[] = {4, 5, 3};
  prefill_case(&rng, "prefill 72 heads, partial and skipped tiles", 3, 72, 200, tile_kinds, &small, scale);
  decode_case(&rng, "decode GLM-5-like", 4, 64, 2048, glm_kinds, &big, scale);
  decode_case(&rng, "decode small", 5, 20, 64, small_kinds, &small, scale);
  check_combine(&rng, 4, 6, 8);
  check_combine(&rng, 1, 6, 8);
  check_combine(&rng, 8, 6, 4);
  check_combine(&rng, 40, 6, 2); /* more ranks than the factors' warp has lanes */
  check_split_decode(&rng, &big, scale);
  static const int dcp_kinds[] = {6, 0};
  decode_case(&rng, "decode DCP rows (1/4 valid)", 2, 64, 2048, dcp_kinds, &big, scale);
  static const int one_kind[] = {0}, split_kinds[] = {6, 1, 2};
  check_decode_split(&rng, "split decode, batch 1, the model's splits", 1, 64, 2048, one_kind, &big, scale, 0);
  check_decode_split(&rng, "split decode, batch 1, 32 splits (one tile each)", 1, 64, 2048, one_kind, &big, scale, 32);
  check_decode_split(&rng, "split decode, DCP row, -1 tail, empty row, 72 heads, 5 splits", 3, 72, 1024, split_kinds,
                     &big, scale, 5);
  check_decode_split(&rng, "split decode, DCP row, -1 tail, empty row, 72 heads, 16 splits", 3, 72, 1024, split_kinds,
                     &big, scale, 16);
  /* 64 heads: groups of 16 in one call, 8, 4 and 2 in the parts. 20 heads:
   * 128 rows give groups of 16 (one of them 4 heads short), 100 rows of 8
   * (one short by 4), fewer rows of 2. */
  static const batch_case wide = {"calls of 40, 20, 1, 1 and 2 rows", 64, 64, 256, 5,
                                  {{0, 40}, {40, 20}, {60, 1}, {61, 1}, {62, 2}}};
  static const batch_case partial = {"calls of 100, 27 and 1 rows", 128, 20, 64, 3,
                                     {{0, 100}, {100, 27}, {127, 1}}};
  for (int decode = 0; decode < 2; decode++) {
    check_batch_invariance(&rng, &big, scale, &wide, decode);
    check_batch_invariance(&rng, &small, scale, &partial, decode);
  }
  for (int kernel = 0; kernel < 3; kernel++) check_head_padding(&rng, &big, scale, kernel);
  free_kvset(&big);
  free_kvset(&small);
  return kt_end();
}
