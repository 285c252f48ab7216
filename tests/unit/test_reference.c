/* The decode reference (§7): attention over the shards of a DCP group,
 * combined by LSE, equals attention over the whole selected context (relative
 * error <= 1e-12 in double), for random queries, keys from the simulator's
 * Philox inputs, random top-k selections and every D and interleave; and the
 * kernel's NaN/inf rules of the combine hold. */
#include <math.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/plan.h"
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

/* The bf16 workspace row of (request, position), widened to double. */
static void workspace_row(uint64_t seed, uint32_t request, uint32_t position, double *row) {
  uint8_t entry[CPLAB_MLA_ENTRY_BYTES];
  uint16_t bf[SIM_MLA_QK];
  cplab_kvformat_mla_generate(seed, 0, request, position, entry);
  cplab_kvformat_mla_dequantize(entry, bf);
  for (int c = 0; c < SIM_MLA_QK; c++) {
    uint32_t bits = (uint32_t)bf[c] << 16;
    float f;
    memcpy(&f, &bits, 4);
    row[c] = f;
  }
}

/* Prefill rows under PCP+DCP: every rank fills its shard from its own cache,
 * the shards are gathered rank-major, top-k indices are converted by the
 * layout, and attention over the rows they point at must equal, bit for bit,
 * attention over the same tokens read directly (the single-rank view).
 * Returns the number of (rank, token) pairs that differ. */
static int64_t prefill_equivalence_on(const char *layout_name, const cplab_parallel *layout_par);

static int64_t prefill_equivalence(const char *layout_name, int interleave) {
  cplab_parallel par;
  cplab_parallel_defaults(&par);
  par.pcp = par.dcp = 2, par.interleave = interleave, par.max_model_len = 1024;
  return prefill_equivalence_on(layout_name, &par);
}

static int64_t prefill_equivalence_on(const char *layout_name, const cplab_parallel *layout_par) {
  enum { H = 2, TOPK = 48 };
  cplab_model model;
  cplab_model_preset("glm-5", &model);
  cplab_parallel par = *layout_par;
  int interleave = par.interleave, W = par.dcp;
  cplab_request reqs[] = {{0, 0, 45, CPLAB_PHASE_PREFILL}, {1, 70, 50, CPLAB_PHASE_PREFILL}};
  cplab_step step = {2, reqs};
  const cplab_layout *layout = cplab_layout_find(layout_name);
  cplab_step_input in = {&step, 0, 21, &par, &model, layout};
  int64_t differing = 0;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  for (int rank = 0; rank < cplab_parallel_world(&par); rank++) {
    cplab_rank_plan *p = NULL;
    cplab_diag d = {0};
    if (cplab_rank_plan_derive(&in, rank, 0, &p, &d)) fail_msg("%s", d.msg);
    const cplab_prefill_plan *pl = &p->prefill;
    assert_true(pl->active && pl->num_chunks == 1);
    int64_t S = pl->chunks[0].shard_rows;
    double *ws = calloc((size_t)(W * S) * SIM_MLA_QK, sizeof *ws);
    for (int o = 0; o < W; o++)
      for (int k = 0; k < pl->num_regions; k++)
        for (int64_t t = 0; t < pl->extent[k]; t++)
          if (cplab_kv_owner(t, interleave, W) == o)
            workspace_row(21, (uint32_t)pl->region_req[k], (uint32_t)t,
                          ws + (size_t)(o * S + pl->workspace_start[k] + cplab_kv_local_idx(t, interleave, W)) * SIM_MLA_QK);
    static double q[H * SIM_MLA_QK], via_ws[TOPK * SIM_MLA_QK], direct[TOPK * SIM_MLA_QK];
    double out_ws[H * SIM_MLA_V], out_direct[H * SIM_MLA_V], lse_ws[H], lse_direct[H];
    for (int k = 0; k < pl->num_regions; k++) {
      int first = pl->region_first_row[k];
      const cplab_row *row = &p->split.rows[first];
      for (int j = 0; j < 3; j++) { /* a few query tokens of the region's first row */
        int64_t pos = row->start_pos + j;
        for (int i = 0; i < H * SIM_MLA_QK; i++) q[i] = gsl_rng_uniform(rng) - 0.5;
        size_t n_ws = 0, n_direct = 0;
        for (int e = 0; e < TOPK; e++) { /* causal top-k: positions 0..pos */
          int32_t tok = (int32_t)gsl_rng_uniform_int(rng, (unsigned long)(pos + 1));
          int32_t conv = cplab_layout_convert_prefill(layout, &p->env, pl, k, tok, p->ids.dcp_rank);
          if (conv >= 0 && conv < W * S) memcpy(via_ws + n_ws++ * SIM_MLA_QK, ws + (size_t)conv * SIM_MLA_QK, sizeof(double) * SIM_MLA_QK);
          workspace_row(21, (uint32_t)pl->region_req[k], (uint32_t)tok, direct + n_direct++ * SIM_MLA_QK);
        }
        sim_attention(q, H, via_ws, n_ws, 1.0 / 16.0, out_ws, lse_ws);
        sim_attention(q, H, direct, n_direct, 1.0 / 16.0, out_direct, lse_direct);
        differing += memcmp(out_ws, out_direct, sizeof out_ws) != 0 || memcmp(lse_ws, lse_direct, sizeof lse_ws) != 0;
      }
    }
    free(ws);
    cplab_rank_plan_free(p);
  }
  gsl_rng_free(rng);
  return differing;
}

static void test_prefill_rows_read_what_one_rank_would(void **state) {
  (void)state;
  for (int il = 1; il <= 4; il *= 2) assert_int_equal(prefill_equivalence("vllm", il), 0);
  assert_int_equal(prefill_equivalence("block-aligned", 4), 0);
  assert_true(prefill_equivalence("mutant-prefill-block-bound", 1) > 0);
}

/* Decode rows under DCP, through the layout: each DCP rank converts the
 * row's top-k into slots of its own cache, attends over the rows those slots
 * hold, and the LSE combine of the ranks' partials must equal attention over
 * the whole selection (relative error <= 1e-12). Returns the worst error. */
static double decode_equivalence(const cplab_parallel *par, const cplab_layout *layout, gsl_rng *rng) {
  enum { H = 2, TOPK = 40, MAX_CTX2 = 2048 };
  cplab_model model;
  cplab_model_preset("glm-5", &model);
  int64_t ctx = 1 + (int64_t)gsl_rng_uniform_int(rng, MAX_CTX2 - 1);
  cplab_request req = {0, ctx, 1, CPLAB_PHASE_DECODE};
  cplab_step step = {1, &req};
  cplab_step_input in = {&step, 0, 31, par, &model, layout};
  static double q[H * SIM_MLA_QK], sel[TOPK * SIM_MLA_QK], mine[TOPK * SIM_MLA_QK];
  static double full[H * SIM_MLA_V], lse_full[H], part[8 * H * SIM_MLA_V], lse[8 * H], combined[H * SIM_MLA_V];
  int32_t tok[TOPK];
  for (int i = 0; i < H * SIM_MLA_QK; i++) q[i] = gsl_rng_uniform(rng) - 0.5;
  for (int e = 0; e < TOPK; e++) {
    tok[e] = gsl_rng_uniform(rng) < 0.1 ? -1 : (int32_t)gsl_rng_uniform_int(rng, (unsigned long)(ctx + 1));
    if (tok[e] >= 0) workspace_row(31, 0, (uint32_t)tok[e], sel + (size_t)e * SIM_MLA_QK);
  }
  size_t n = 0;
  for (int e = 0; e < TOPK; e++) /* the single-rank view: every selected token */
    if (tok[e] >= 0) memmove(sel + n++ * SIM_MLA_QK, sel + (size_t)e * SIM_MLA_QK, sizeof(double) * SIM_MLA_QK);
  sim_attention(q, H, sel, n, 1.0 / 16.0, full, lse_full);
  int D = par->dcp;
  for (int o = 0; o < D; o++) {
    cplab_rank_plan *p = NULL;
    cplab_diag d = {0};
    int rank = -1;
    for (int r = 0; r < cplab_parallel_world(par) && rank < 0; r++) { /* a rank with dcp_rank o */
      cplab_rank_ids id;
      cplab_rank_ids_get(par, r, &id, NULL);
      if (id.dcp_rank == o) rank = r;
    }
    if (cplab_rank_plan_derive(&in, rank, 0, &p, &d)) fail_msg("%s", d.msg);
    const int32_t *bt = p->sched.block_table;
    size_t m = 0;
    for (int e = 0; e < TOPK; e++) {
      int32_t slot = cplab_layout_convert_decode(layout, &p->env, bt, p->sched.max_blocks, tok[e], o);
      if (slot < 0) continue;
      /* This rank's cache: the slot holds the owned position that maps to it. */
      int64_t found = -1;
      for (int64_t pos = 0; pos <= ctx && found < 0; pos++)
        if (cplab_kv_slot_global(par, o, bt, p->sched.max_blocks, pos) == slot) found = pos;
      assert_true(found >= 0);
      workspace_row(31, 0, (uint32_t)found, mine + m++ * SIM_MLA_QK);
    }
    sim_attention(q, H, mine, m, 1.0 / 16.0, part + (size_t)o * H * SIM_MLA_V, lse + (size_t)o * H);
    cplab_rank_plan_free(p);
  }
  sim_lse_combine(D, H, lse, part, combined);
  return rel_err(combined, full, H * SIM_MLA_V);
}

/* Layout equivalence over generated layouts: P in {1,2,4,8}, D in {1,P},
 * I in {1,64}, every correct layout; decode rows combine to single-rank
 * attention; prefill rows (D > 1) read bitwise what one rank would. */
static void test_layout_equivalence_generated(void **state) {
  (void)state;
  static const int Ps[] = {1, 2, 4, 8}, Is[] = {1, 64};
  prop_run pr;
  prop_begin(&pr);
  double worst = 0;
  for (long trial = 0; trial < 40; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    cplab_parallel par;
    cplab_parallel_defaults(&par);
    par.pcp = Ps[prop_int(&pr, 0, 3)];
    par.dcp = prop_int(&pr, 0, 1) ? par.pcp : 1;
    par.interleave = Is[prop_int(&pr, 0, 1)];
    par.max_model_len = 4096;
    for (const cplab_layout *const *l = cplab_layouts(); *l; l++) {
      if ((*l)->mutant) continue;
      if (par.dcp > 1)
        prop_check(&pr, trial, prefill_equivalence_on((*l)->name, &par) == 0, "%s P=%d D=%d I=%d: prefill rows differ",
                   (*l)->name, par.pcp, par.dcp, par.interleave);
      double e = decode_equivalence(&par, *l, pr.rng);
      worst = e > worst ? e : worst;
      prop_check(&pr, trial, e <= 1e-12, "%s P=%d D=%d I=%d: decode combine relative error %.3g", (*l)->name, par.pcp,
                 par.dcp, par.interleave, e);
    }
  }
  prop_end(&pr);
  print_message("# decode rows: worst relative error %.3g\n", worst);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shards_combine_to_full_attention),
      cmocka_unit_test(test_combine_rules),
      cmocka_unit_test(test_prefill_rows_read_what_one_rank_would),
      cmocka_unit_test(test_layout_equivalence_generated),
  };
  return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
