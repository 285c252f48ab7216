/* The decode reference (§7): attention over the shards of a DCP group,
 * combined by LSE, equals attention over the whole selected context (relative
 * error <= 1e-12 in double), for random queries, keys from the simulator's
 * Philox inputs, random top-k selections and every D and interleave; and the
 * kernel's NaN/inf rules of the combine hold. */
#include <math.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "reference.h"
#include "testutil.h"

enum { HEADS = 4, MAX_CTX = 700 };

/* Latent rows of a context as the cache holds them: quantised to the
 * 656-byte entry and dequantised to the bf16 workspace row. */
static void context_rows(uint64_t seed, int64_t len, double *rows) {
  uint8_t entry[CPLAB_MLA_ENTRY_BYTES];
  uint16_t row[SIM_MLA_QK];
  for (int64_t p = 0; p < len; p++) {
    cplab_kvformat_mla_generate(seed, 0, 0, (uint32_t)p, entry);
    cplab_kvformat_mla_dequantize(entry, row);
    for (int c = 0; c < SIM_MLA_QK; c++) {
      uint32_t bits = (uint32_t)row[c] << 16;
      float f;
      memcpy(&f, &bits, 4);
      rows[p * SIM_MLA_QK + c] = f;
    }
  }
}

static double rel_err(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void test_shards_combine_to_full_attention(void **state) {
  (void)state;
  static double rows[MAX_CTX * SIM_MLA_QK], sel[MAX_CTX * SIM_MLA_QK], shard[MAX_CTX * SIM_MLA_QK];
  static double q[HEADS * SIM_MLA_QK], full[HEADS * SIM_MLA_V], part[8 * HEADS * SIM_MLA_V], lse[8 * HEADS],
      lse_full[HEADS], combined[HEADS * SIM_MLA_V];
  prop_run pr;
  prop_begin(&pr);
  double worst = 0;
  long trials = 0;
  for (long trial = 0; trial < 60; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    int64_t len = prop_int(&pr, 1, MAX_CTX);
    static const int Ds[] = {1, 2, 3, 4, 8}, Is[] = {1, 2, 4, 64};
    int D = Ds[prop_int(&pr, 0, 4)], I = Is[prop_int(&pr, 0, 3)];
    context_rows((uint64_t)trial, len, rows);
    for (int i = 0; i < HEADS * SIM_MLA_QK; i++) q[i] = gsl_rng_uniform(pr.rng) - 0.5;
    /* A top-k selection (some positions) of the context. */
    int selected[MAX_CTX], n = 0;
    for (int64_t p = 0; p < len; p++)
      if (gsl_rng_uniform(pr.rng) < 0.6) selected[n++] = (int)p;
    for (int i = 0; i < n; i++) memcpy(sel + (size_t)i * SIM_MLA_QK, rows + (size_t)selected[i] * SIM_MLA_QK, sizeof(double) * SIM_MLA_QK);
    double scale = 1.0 / 16.0;
    sim_attention(q, HEADS, sel, (size_t)n, scale, full, lse_full);
    /* Each DCP rank attends over the selected tokens it owns. */
    for (int d = 0; d < D; d++) {
      size_t m = 0;
      for (int i = 0; i < n; i++)
        if (cplab_kv_owner(selected[i], I, D) == d)
          memcpy(shard + m++ * SIM_MLA_QK, sel + (size_t)i * SIM_MLA_QK, sizeof(double) * SIM_MLA_QK);
      sim_attention(q, HEADS, shard, m, scale, part + (size_t)d * HEADS * SIM_MLA_V, lse + (size_t)d * HEADS);
    }
    sim_lse_combine(D, HEADS, lse, part, combined);
    double e = rel_err(combined, full, HEADS * SIM_MLA_V);
    if (e > worst) worst = e;
    prop_check(&pr, trial, e <= 1e-12, "D=%d I=%d len=%lld selected=%d: relative error %.3g", D, I, (long long)len, n, e);
    trials++;
  }
  prop_end(&pr);
  print_message("# %ld trials, worst relative error %.3g\n", trials, worst);
}

static void test_combine_rules(void **state) {
  (void)state;
  enum { D = 3, H = 1 };
  static double out[D * SIM_MLA_V], final[SIM_MLA_V];
  for (int c = 0; c < SIM_MLA_V; c++) out[c] = 1.0, out[SIM_MLA_V + c] = NAN, out[2 * SIM_MLA_V + c] = 3.0;
  /* Rank 1 owns nothing (lse -inf, NaN output): cleared, not propagated. */
  double lse[D] = {0.0, -INFINITY, 0.0};
  sim_lse_combine(D, H, lse, out, final);
  for (int c = 0; c < SIM_MLA_V; c++) assert_true(fabs(final[c] - 2.0) < 1e-15);
  /* NaN and +inf lse count as -inf. */
  double lse2[D] = {NAN, INFINITY, 0.0};
  sim_lse_combine(D, H, lse2, out, final);
  for (int c = 0; c < SIM_MLA_V; c++) assert_true(fabs(final[c] - 3.0) < 1e-15);
  /* Every shard empty: out = 0 (M is taken as 0, every factor is NaN -> 0). */
  double lse3[D] = {-INFINITY, -INFINITY, -INFINITY};
  sim_lse_combine(D, H, lse3, out, final);
  for (int c = 0; c < SIM_MLA_V; c++) assert_true(final[c] == 0.0);
  /* An empty selection: lse -inf, out 0. */
  double q[SIM_MLA_QK] = {1}, o[SIM_MLA_V], l;
  sim_attention(q, 1, NULL, 0, 0.1, o, &l);
  assert_true(l == -INFINITY);
  for (int c = 0; c < SIM_MLA_V; c++) assert_true(o[c] == 0.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shards_combine_to_full_attention),
      cmocka_unit_test(test_combine_rules),
  };
  return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
