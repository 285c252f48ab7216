/* The numeric pass (sim/numeric.c) against the single-rank truth, over
 * generated steps and layouts: P in {1,2,4,8}, TP in {1,2}, D in {1,P,TP·P},
 * I in {1,64}, every correct layout. Each sampled row's top-k and scores must equal the
 * single-rank indexer's exactly, prefill rows' attention must equal
 * single-rank attention bit for bit (the gathered rows are the same rows in
 * the same order), rows on the local shard (decodes; every row under DCP
 * without PCP) their combined attention within 1e-12 relative error. Mutant layouts that misplace rows must be caught by the same
 * comparison. */
#include <math.h>

#include "cplab/kvformat.h"
#include "cplab/fp8.h"
#include "cplab/maps.h"
#include "cplab/plan.h"
#include "indexer_ref.h"
#include "numeric.h"
#include "check.h"
#include "reference.h"
#include "testutil.h"

enum { TOPK = 32, HEADS = 4, IDX_HEADS = 4, SAMPLED = 6, MAX_CTX = 900 };

typedef struct truth_row {
  int32_t topk[TOPK];
  double scores[TOPK], kth;
  double out[HEADS * SIM_MLA_V], lse[HEADS];
} truth_row;

/* What one rank would compute holding the whole context of request id, for
 * the H heads of TP rank tp_rank (global heads tp_rank·H ...). */
static void single_rank(uint64_t seed, uint32_t id, int64_t pos, const cplab_model *m, int tp_rank, int H,
                        truth_row *t) {
  static uint8_t keys[MAX_CTX + 1][CPLAB_IDX_ENTRY_BYTES];
  static double rows[TOPK * SIM_MLA_QK], q[HEADS * SIM_MLA_QK];
  sim_indexer_query iq;
  cplab_diag d = {0};
  assert_int_equal(sim_indexer_query_make(seed, 0, id, (uint32_t)pos, (int)m->index_n_heads, &iq, &d), 0);
  for (int64_t p = 0; p <= pos; p++) cplab_kvformat_idx_generate(seed, 0, id, (uint32_t)p, keys[p]);
  assert_int_equal(sim_indexer_topk(&iq, (const uint8_t(*)[CPLAB_IDX_ENTRY_BYTES])keys, pos + 1, TOPK, t->topk,
                                    t->scores, &t->kth, &d),
                   0);
  size_t n = 0;
  for (int j = 0; j < TOPK; j++) {
    if (t->topk[j] < 0) continue;
    uint8_t e[CPLAB_MLA_ENTRY_BYTES];
    uint16_t bf[SIM_MLA_QK];
    cplab_kvformat_mla_generate(seed, 0, id, (uint32_t)t->topk[j], e);
    cplab_kvformat_mla_dequantize(e, bf);
    for (int c = 0; c < SIM_MLA_QK; c++) rows[n * SIM_MLA_QK + c] = cplab_bf16_to_f32(bf[c]);
    n++;
  }
  for (int h = 0; h < H; h++) {
    uint16_t bf[SIM_MLA_QK];
    cplab_kvformat_mla_query(seed, 0, id, (uint32_t)pos, (uint32_t)(tp_rank * H + h), bf);
    for (int c = 0; c < SIM_MLA_QK; c++) q[h * SIM_MLA_QK + c] = cplab_bf16_to_f32(bf[c]);
  }
  sim_attention(q, H, rows, n, cplab_model_softmax_scale(m), t->out, t->lse);
}

static double rel_err(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

typedef struct tally {
  long rows, prefill_rows, decode_rows, spec_rows, topk_differ, prefill_differ, decode_over;
  double worst_decode;
} tally;

static void small_model(cplab_model *m) {
  cplab_model_preset("glm-5", m);
  m->num_heads = HEADS, m->index_n_heads = IDX_HEADS, m->index_topk = TOPK;
}

/* A random step: 1..4 requests, decodes of 1 + num_spec tokens (MTP) and
 * (chunked) prefills. */
static void random_step_spec(gsl_rng *r, int num_spec, cplab_request *reqs, size_t *n) {
  *n = 1 + gsl_rng_uniform_int(r, 4);
  for (size_t i = 0; i < *n; i++) {
    cplab_request *q = &reqs[i];
    q->id = (int64_t)i;
    if (gsl_rng_uniform(r) < 0.4) {
      q->phase = CPLAB_PHASE_DECODE, q->new_tokens = 1 + num_spec;
      q->num_computed = 1 + (int64_t)gsl_rng_uniform_int(r, MAX_CTX - 1);
    } else {
      q->phase = CPLAB_PHASE_PREFILL, q->new_tokens = 1 + (int64_t)gsl_rng_uniform_int(r, 400);
      q->num_computed = gsl_rng_uniform(r) < 0.6 ? 0 : (int64_t)gsl_rng_uniform_int(r, 400);
    }
  }
}

static void random_step(gsl_rng *r, cplab_request *reqs, size_t *n) { random_step_spec(r, 0, reqs, n); }

/* Every rank's numeric pass of the step against the single-rank truth. */
static void compare_step(const cplab_step_input *in, tally *t) {
  static truth_row truth;
  for (int rank = 0; rank < cplab_parallel_world(in->par); rank++) {
    cplab_rank_plan *p = NULL;
    cplab_diag d = {0};
    if (cplab_rank_plan_derive(in, rank, 0, &p, &d)) fail_msg("%s", d.msg);
    sim_numeric_layer l;
    if (sim_numeric_compute(in, p, 0, SAMPLED, &l, &d)) fail_msg("%s", d.msg);
    for (int64_t i = 0; i < l.rows; i++) {
      const cplab_row *row = cplab_split_row_of(&p->split, l.tokens[i]);
      assert_non_null(row);
      int64_t pos = row->start_pos + l.tokens[i] - row->token_offset;
      int H = l.heads; /* num_heads / tp */
      single_rank(in->seed, (uint32_t)in->step->requests[row->req].id, pos, in->model, p->ids.tp, H, &truth);
      const double *out = l.out + (size_t)i * H * SIM_MLA_V, *lse = l.lse + (size_t)i * H;
      int topk_same = memcmp(l.topk + i * TOPK, truth.topk, sizeof truth.topk) == 0;
      for (int j = 0; j < TOPK && topk_same; j++) topk_same = l.scores[i * TOPK + j] == (float)truth.scores[j];
      t->rows++;
      t->spec_rows += !row->is_prefill && pos > row->start_pos;
      t->topk_differ += !topk_same;
      if (!cplab_row_on_local_shard(in->par, row)) { /* over the gathered workspace or the whole context: the same rows */
        t->prefill_rows++;
        t->prefill_differ += memcmp(out, truth.out, sizeof(double) * (size_t)H * SIM_MLA_V) != 0 ||
                             memcmp(lse, truth.lse, sizeof(double) * (size_t)H) != 0;
      } else { /* partials over the DCP shards, combined by LSE (decodes; every row under DCP without PCP) */
        double e = rel_err(out, truth.out, (size_t)H * SIM_MLA_V);
        t->decode_rows++;
        if (!(e <= 1e-12)) t->decode_over++;
        else if (e > t->worst_decode) t->worst_decode = e;
      }
    }
    sim_numeric_layer_free(&l);
    cplab_rank_plan_free(p);
  }
}

/* compare_step as one property check: no row may differ from one rank. */
static void compare_and_check(prop_run *pr, long trial, const cplab_step_input *in, tally *t) {
  tally before = *t;
  compare_step(in, t);
  const cplab_parallel *par = in->par;
  prop_check(pr, trial,
             t->topk_differ == before.topk_differ && t->prefill_differ == before.prefill_differ &&
                 t->decode_over == before.decode_over,
             "%s TP=%d P=%d D=%d I=%d spec=%d: %ld top-k rows, %ld prefill rows, %ld decode rows differ from one rank",
             in->layout->name, par->tp, par->pcp, par->dcp, par->interleave, par->num_spec_tokens,
             t->topk_differ - before.topk_differ, t->prefill_differ - before.prefill_differ,
             t->decode_over - before.decode_over);
}

/* P in {1,2,4,8}, TP in {1,2}, DCP in {1, P, TP·P} where the rules allow it
 * (DCP adds no ranks: it spans PCP first, then TP), I in {1,64}. */
static void random_layout(prop_run *pr, cplab_parallel *par) {
  static const int Ps[] = {1, 2, 4, 8}, Is[] = {1, 64};
  for (;;) {
    cplab_parallel_defaults(par);
    par->pcp = Ps[prop_int(pr, 0, 3)];
    par->tp = (int)prop_int(pr, 1, 2);
    long pick = prop_int(pr, 0, 2);
    par->dcp = pick == 0 ? 1 : pick == 1 ? par->pcp : par->tp * par->pcp;
    par->interleave = Is[prop_int(pr, 0, 1)];
    par->max_model_len = 2048;
    if (cplab_parallel_check(par, HEADS, NULL) == 0) return;
  }
}

static void test_correct_layouts_equal_single_rank(void **state) {
  (void)state;
  cplab_model model;
  small_model(&model);
  prop_run pr;
  prop_begin(&pr);
  tally t = {0};
  for (long trial = 0; trial < 24; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    cplab_parallel par;
    random_layout(&pr, &par);
    cplab_request reqs[4];
    cplab_step step = {0, reqs};
    random_step(pr.rng, reqs, &step.num_requests);
    for (const cplab_layout *const *l = cplab_layouts(); *l; l++) {
      if ((*l)->mutant) continue;
      cplab_step_input in = {&step, (size_t)trial, 100 + (uint64_t)trial, &par, &model, *l};
      compare_and_check(&pr, trial, &in, &t);
    }
  }
  prop_end(&pr);
  assert_true(t.prefill_rows > 50 && t.decode_rows > 50);
  print_message("# %ld rows (%ld prefill, %ld decode) equal the single-rank result; worst decode relative error %.3g\n",
                t.rows, t.prefill_rows, t.decode_rows, t.worst_decode);
}

/* MTP under PCP+DCP (docs/mtp.md): decode rows of 1 + num_spec tokens
 * (num_spec 1..3) beside chunked prefills, PCP in {2, 4}, DCP = PCP,
 * interleave in {1, 64}, block 64. Every invariant holds over all ranks'
 * plans, and every sampled row, speculative positions included, equals what
 * one rank computes over that position's causal context. */
static void test_mtp_equals_single_rank(void **state) {
  (void)state;
  cplab_model model;
  small_model(&model);
  prop_run pr;
  prop_begin(&pr);
  tally t = {0};
  int64_t checks = 0;
  for (long trial = 0; trial < 36; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    cplab_parallel par;
    cplab_parallel_defaults(&par);
    par.pcp = par.dcp = prop_int(&pr, 0, 1) ? 4 : 2;
    par.interleave = prop_int(&pr, 0, 1) ? 64 : 1;
    par.block_size = 64, par.max_model_len = 2048;
    par.num_spec_tokens = (int)prop_int(&pr, 1, 3);
    cplab_request reqs[4];
    cplab_step step = {0, reqs};
    random_step_spec(pr.rng, par.num_spec_tokens, reqs, &step.num_requests);
    cplab_step_input in = {&step, (size_t)trial, 300 + (uint64_t)trial, &par, &model, cplab_layout_find("vllm")};
    cplab_rank_plan *plans[4] = {0};
    cplab_check chk = {0};
    cplab_diag d = {0};
    for (int r = 0; r < par.pcp; r++)
      if (cplab_rank_plan_derive(&in, r, CPLAB_PLAN_TOKEN_MAPS, &plans[r], &d)) fail_msg("%s", d.msg);
    if (cplab_check_step(&in, plans, par.pcp, 7 + (uint64_t)trial, &chk, &d)) fail_msg("%s", d.msg);
    for (int r = 0; r < par.pcp; r++) cplab_rank_plan_free(plans[r]);
    checks += chk.checks;
    prop_check(&pr, trial, chk.violations == 0, "P=%d I=%d spec=%d: %lld invariant violations, first: %s", par.pcp,
               par.interleave, par.num_spec_tokens, (long long)chk.violations, chk.kept ? chk.first[0] : "");
    compare_and_check(&pr, trial, &in, &t);
  }
  prop_end(&pr);
  assert_true(t.spec_rows > 30);
  print_message("# MTP: %lld invariant checks, 0 violations; %ld rows (%ld decode, %ld at speculative positions) equal "
                "the single-rank result; worst decode relative error %.3g\n",
                (long long)checks, t.rows, t.decode_rows, t.spec_rows, t.worst_decode);
}

/* A mutant that misplaces rows is caught by the same comparison. */
static long mutant_differences(const char *name, int interleave) {
  cplab_model model;
  small_model(&model);
  cplab_parallel par;
  cplab_parallel_defaults(&par);
  par.pcp = par.dcp = 2, par.interleave = interleave, par.max_model_len = 2048;
  cplab_request reqs[] = {{0, 0, 300, CPLAB_PHASE_PREFILL}, {1, 200, 150, CPLAB_PHASE_PREFILL}};
  cplab_step step = {2, reqs};
  cplab_step_input in = {&step, 0, 5, &par, &model, cplab_layout_find(name)};
  tally t = {0};
  compare_step(&in, &t);
  assert_true(t.rows > 0);
  return t.topk_differ + t.prefill_differ + t.decode_over;
}

static void test_mutants_are_caught(void **state) {
  (void)state;
  assert_int_equal(mutant_differences("vllm", 1), 0);
  assert_int_equal(mutant_differences("vllm", 64), 0);
  long pbb = mutant_differences("mutant-prefill-block-bound", 1);
  long bad = mutant_differences("mutant-bad-deinterleave", 64);
  long ceil = mutant_differences("mutant-shard-rows-ceil", 64);
  print_message("# rows differing: prefill-block-bound %ld, bad-deinterleave %ld, shard-rows-ceil %ld\n", pbb, bad,
                ceil);
  assert_true(pbb > 0);
  assert_true(bad > 0);
  assert_true(ceil > 0);
}

/* The sampled tokens: the same global tokens for every layout, each held by
 * the ranks that hold its row, decode tokens favoured. */
static void test_sampling(void **state) {
  (void)state;
  cplab_model model;
  small_model(&model);
  cplab_request reqs[] = {{0, 40, 1, CPLAB_PHASE_DECODE}, {1, 0, 500, CPLAB_PHASE_PREFILL}, {2, 7, 1, CPLAB_PHASE_DECODE}};
  cplab_step step = {3, reqs};
  cplab_parallel par;
  cplab_parallel_defaults(&par);
  par.pcp = par.dcp = 4, par.max_model_len = 2048;
  cplab_step_input in = {&step, 3, 9, &par, &model, cplab_layout_find("vllm")};
  int64_t total = 0;
  for (int rank = 0; rank < 4; rank++) {
    cplab_rank_plan *p = NULL;
    cplab_diag d = {0};
    assert_int_equal(cplab_rank_plan_derive(&in, rank, 0, &p, &d), 0);
    int64_t *tok, n;
    assert_int_equal(cplab_maps_sample(&in, p, 8, &tok, &n, &d), 0);
    int decodes = 0;
    for (int64_t i = 0; i < n; i++) {
      if (i) assert_true(tok[i] > tok[i - 1]);
      decodes += tok[i] < p->split.num_decode_tokens;
    }
    assert_int_equal(decodes, 2); /* both decode tokens, replicated on every PCP rank */
    total += n - decodes;
    free(tok);
    cplab_rank_plan_free(p);
  }
  assert_int_equal(total, 6); /* the 6 prefill tokens, each on one rank */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sampling),
      cmocka_unit_test(test_mutants_are_caught),
      cmocka_unit_test(test_correct_layouts_equal_single_rank),
      cmocka_unit_test(test_mtp_equals_single_rank),
  };
  return cmocka_run_group_tests_name("numeric", tests, NULL, NULL);
}
