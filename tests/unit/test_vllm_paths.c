/* Three paths where cplab once deviated from vLLM (issue 19, item 2), each
 * checked against the rule as vLLM states it:
 *
 *   - DCP without PCP: vLLM gathers prefill KV only under PCP + DCP
 *     (FlashMLASparseMetadataBuilder: pcp_dcp_kv_gather = use_pcp and
 *     dcp_world_size > 1). With PCP = 1 every row, prefill rows included,
 *     runs the mixed-batch fp8 path: its top-k filtered to the rank's own
 *     tokens (triton_filter_and_convert_dcp_index: the others -1), partial
 *     attention over the local shard, LSE combine. The configurations the
 *     backend's builder rejects are rejected, naming the rule.
 *   - The placeholder row of a rank without rows (PCPManager.partition_batch):
 *     an empty slice of request 0 at its computed position.
 *   - MTP rows with fewer drafts than num_spec_tokens (the scheduler drops the
 *     drafts that do not fit, e.g. near max_model_len): accepted, planned as
 *     replicated decode rows of their own length. */
#include "check.h"
#include "cplab/kv.h"
#include "cplab/plan.h"
#include "cplab/scenario.h"
#include "numeric.h"
#include "testutil.h"

enum { TOPK = 32, HEADS = 8, IDX_HEADS = 4, SAMPLED = 8 };

static cplab_parallel par_of(int tp, int pcp, int dcp, int il, int64_t mml) {
  cplab_parallel p;
  cplab_parallel_defaults(&p);
  p.tp = tp, p.pcp = pcp, p.dcp = dcp, p.interleave = il, p.max_model_len = mml;
  return p;
}

static cplab_request pre(int64_t id, int64_t done, int64_t q) { return (cplab_request){id, done, q, CPLAB_PHASE_PREFILL}; }
static cplab_request dec(int64_t id, int64_t done, int64_t q) { return (cplab_request){id, done, q, CPLAB_PHASE_DECODE}; }

/* GLM-5's shapes with few heads: per-rank head counts vLLM runs under DCP without PCP. */
static void small_model(cplab_model *m) {
  cplab_model_preset("glm-5", m);
  m->num_heads = HEADS, m->index_n_heads = IDX_HEADS, m->index_topk = TOPK;
}

static cplab_rank_plan *derive(const cplab_step_input *in, int rank) {
  cplab_rank_plan *p = NULL;
  cplab_diag d = {0};
  if (cplab_rank_plan_derive(in, rank, CPLAB_PLAN_TOKEN_MAPS, &p, &d) != 0) fail_msg("derive: %s", d.msg);
  return p;
}

static int count_what(const cplab_rank_plan *p, cplab_coll_what w, const cplab_collective **first) {
  int n = 0;
  for (int i = 0; i < p->num_collectives; i++)
    if (p->collectives[i].what == w && n++ == 0 && first) *first = &p->collectives[i];
  return n;
}

/* TP2/PCP1/DCP2: no gathered prefill or indexer plan, every row on the local
 * shard, and the DCP combine covers every token; TP1/PCP2/DCP2 still gathers. */
static void test_dcp_without_pcp_plan(void **state) {
  (void)state;
  cplab_model m;
  small_model(&m);
  cplab_parallel par = par_of(2, 1, 2, 1, 4096);
  cplab_request reqs[] = {dec(0, 100, 1), pre(1, 0, 300), pre(2, 0, 3), pre(3, 200, 70)};
  cplab_step step = {4, reqs};
  cplab_step_input in = {&step, 0, 5, &par, &m, cplab_layout_find("vllm")};
  assert_int_equal(cplab_parallel_gathers_prefill(&par), 0);
  for (int r = 0; r < 2; r++) {
    cplab_rank_plan *p = derive(&in, r);
    assert_int_equal(p->prefill.active, 0);
    assert_int_equal(p->indexer.active, 0);
    assert_int_equal(p->split.num_rows, 4);
    for (int i = 0; i < p->split.num_rows; i++) assert_true(cplab_row_on_local_shard(&par, &p->split.rows[i]));
    int64_t T = p->split.num_tokens, H = m.num_heads / par.tp;
    assert_int_equal(T, 374);
    assert_int_equal(cplab_split_shard_tokens(&p->split, &par), T);
    assert_int_equal(count_what(p, CPLAB_CW_MLA_KV_GATHER, NULL), 0);
    assert_int_equal(count_what(p, CPLAB_CW_INDEXER_K_GATHER, NULL), 0);
    const cplab_collective *q = NULL, *lse = NULL, *out = NULL;
    assert_int_equal(count_what(p, CPLAB_CW_DECODE_Q_GATHER, &q), 1);
    assert_int_equal(count_what(p, CPLAB_CW_DECODE_LSE_GATHER, &lse), 1);
    assert_int_equal(count_what(p, CPLAB_CW_DECODE_OUT_COMBINE, &out), 1);
    assert_int_equal(q->group, CPLAB_GROUP_DCP); /* classic DCP gathers the heads over the DCP group (§1.4) */
    assert_int_equal(q->count, T * H * 576);
    assert_int_equal(lse->count, T * H * par.dcp);
    assert_int_equal(out->kind, CPLAB_COLL_REDUCE_SCATTER);
    cplab_rank_plan_free(p);
  }
  cplab_parallel pd = par_of(1, 2, 2, 1, 4096);
  in.par = &pd;
  cplab_rank_plan *p = derive(&in, 0);
  assert_int_equal(cplab_parallel_gathers_prefill(&pd), 1);
  assert_int_equal(p->prefill.active, 1);
  assert_int_equal(p->indexer.active, 1);
  assert_int_equal(cplab_split_shard_tokens(&p->split, &pd), p->split.num_decode_tokens);
  assert_int_equal(count_what(p, CPLAB_CW_MLA_KV_GATHER, NULL), p->prefill.num_chunks);
  cplab_rank_plan_free(p);
}

/* A random step of 1..5 requests: decodes, short and long prefills, chunked prefills. */
static void random_step(prop_run *pr, int64_t mml, cplab_request *reqs, size_t *n) {
  *n = (size_t)prop_int(pr, 1, 5);
  for (size_t g = 0; g < *n; g++) {
    double u = gsl_rng_uniform(pr->rng);
    if (u < 0.3) reqs[g] = dec((int64_t)g, prop_int(pr, 1, 700), 1);
    else {
      int64_t q = u < 0.5 ? prop_int(pr, 1, 8) : prop_int(pr, 1, 400);
      reqs[g] = pre((int64_t)g, prop_int(pr, 0, 2) ? 0 : prop_int(pr, 0, mml - q - 400 > 0 ? 400 : 0), q);
    }
  }
}

/* The converted entry the rule gives: -1 for -1 and for tokens another DCP
 * rank owns, else the token's slot in this rank's cache (written here from
 * the ownership formulas, not through the layout). */
static int32_t filtered(const cplab_rank_plan *p, const cplab_row *row, int32_t tok) {
  const cplab_parallel *par = &p->env.par;
  int I = par->interleave, D = par->dcp, B = par->block_size;
  if (tok < 0 || (tok / I) % D != p->ids.dcp_rank) return -1;
  int64_t lidx = (tok / ((int64_t)I * D)) * I + tok % I;
  const int32_t *bt = p->sched.block_table + (size_t)row->req * p->sched.max_blocks;
  return (int32_t)((int64_t)bt[lidx / B] * B + lidx % B);
}

/* Property: over generated steps on TP in {2,4} with DCP dividing TP (> 1)
 * and interleave in {1,2,64}, every sampled row's converted top-k, prefill
 * rows included, is the filtered conversion, and every invariant holds. */
static void test_dcp_without_pcp_filters_prefill(void **state) {
  (void)state;
  cplab_model m;
  small_model(&m);
  prop_run pr;
  prop_begin(&pr);
  static const int ils[] = {1, 2, 64};
  long prefill_rows = 0, remote = 0, entries = 0;
  for (long trial = 0; trial < 24; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    int tp = prop_int(&pr, 0, 1) ? 4 : 2, dcp = tp == 4 && prop_int(&pr, 0, 1) ? 4 : 2;
    cplab_parallel par = par_of(tp, 1, dcp, ils[prop_int(&pr, 0, 2)], 2048);
    cplab_diag d = {0};
    if (cplab_parallel_check(&par, m.num_heads, &d)) fail_msg("TP%d/DCP%d: %s", tp, dcp, d.msg);
    cplab_request reqs[5];
    cplab_step step = {0, reqs};
    random_step(&pr, par.max_model_len, reqs, &step.num_requests);
    cplab_step_input in = {&step, (size_t)trial, 900 + (uint64_t)trial, &par, &m, cplab_layout_find("vllm")};
    cplab_rank_plan *plans[4] = {0};
    for (int r = 0; r < tp; r++) plans[r] = derive(&in, r);
    cplab_check chk = {0};
    if (cplab_check_step(&in, plans, tp, 11 + (uint64_t)trial, &chk, &d)) fail_msg("%s", d.msg);
    prop_check(&pr, trial, chk.violations == 0, "TP%d/DCP%d I=%d: %lld violations, first: %s", tp, dcp,
               par.interleave, (long long)chk.violations, chk.kept ? chk.first[0] : "");
    for (int r = 0; r < tp; r++) {
      const cplab_rank_plan *p = plans[r];
      prop_check(&pr, trial, !p->prefill.active && !p->indexer.active, "rank %d gathers without PCP", r);
      sim_numeric_layer l;
      if (sim_numeric_compute(&in, p, 0, SAMPLED, &l, &d)) fail_msg("%s", d.msg);
      for (int64_t i = 0; i < l.rows; i++) {
        const cplab_row *row = cplab_split_row_of(&p->split, l.tokens[i]);
        prefill_rows += row->is_prefill;
        for (int j = 0; j < l.k; j++) {
          int32_t tok = l.topk[i * l.k + j], want = filtered(p, row, tok), got = l.converted[i * l.k + j];
          entries++;
          remote += tok >= 0 && want < 0;
          prop_check(&pr, trial, got == want,
                     "TP%d/DCP%d I=%d rank %d local token %lld (%s): top-k %d converted to %d, the filtered rule says %d",
                     tp, dcp, par.interleave, r, (long long)l.tokens[i], row->is_prefill ? "prefill" : "decode", tok,
                     got, want);
        }
      }
      sim_numeric_layer_free(&l);
    }
    for (int r = 0; r < tp; r++) cplab_rank_plan_free(plans[r]);
  }
  prop_end(&pr);
  assert_true(prefill_rows > 40 && remote > entries / 8);
  print_message("# DCP without PCP: %ld prefill rows, %ld converted entries, %ld of them remote (-1)\n", prefill_rows,
                entries, remote);
}

/* vLLM's rules for DCP without PCP (FlashMLASparseMetadataBuilder.__init__,
 * on top of ParallelConfig._validate_parallel_config's dcp | tp): fewer than
 * 32 heads per rank, and local and DCP-gathered heads in one fp8 envelope. */
static void expect_rule(int tp, int pcp, int dcp, int64_t heads, const char *fragment) {
  cplab_parallel par = par_of(tp, pcp, dcp, 1, 4096);
  cplab_diag d = {0};
  int rc = cplab_parallel_check(&par, heads, &d);
  if (!fragment) {
    if (rc) fail_msg("TP%d/PCP%d/DCP%d with %lld heads rejected: %s", tp, pcp, dcp, (long long)heads, d.msg);
    return;
  }
  assert_int_equal(rc, CPLAB_EUNSUPPORTED);
  if (!strstr(d.msg, fragment)) fail_msg("TP%d/PCP%d/DCP%d: '%s' does not say '%s'", tp, pcp, dcp, d.msg, fragment);
  assert_int_equal(strncmp(d.msg, "dcp: ", 5), 0);
}

static void test_dcp_without_pcp_rules(void **state) {
  (void)state;
  expect_rule(2, 1, 2, 64, "mixed-batch rule"); /* GLM-5: 32 heads per rank */
  expect_rule(4, 1, 2, 64, NULL);               /* 16 -> 32 gathered: both pad to 64 */
  expect_rule(4, 1, 4, 64, NULL);
  expect_rule(8, 1, 8, 64, NULL);
  expect_rule(4, 1, 4, 128, "mixed-batch rule");  /* DeepSeek-V3.2: 32 heads per rank */
  expect_rule(8, 1, 4, 128, NULL);                /* 16 -> 64 */
  expect_rule(8, 1, 8, 128, "padded-head rule");  /* 16 pad to 64, 128 gathered to 128 */
  expect_rule(2, 1, 2, 0, NULL);                  /* heads unknown: the rules need them */
  expect_rule(2, 1, 1, 64, NULL);                 /* no DCP */
  expect_rule(2, 2, 2, 64, NULL);                 /* PCP + DCP: the gathered path */
  expect_rule(1, 4, 4, 64, NULL);
  /* Through a scenario: the error names the field and the rule. */
  const char *json = "{\"name\": \"bad\", \"model\": \"glm-5\", \"parallel\": {\"tp\": 2, \"pcp\": 1, \"dcp\": 2, "
                     "\"max_model_len\": 4096}, \"workload\": {\"steps\": [{\"requests\": [{\"id\": 0, "
                     "\"num_computed\": 0, \"new_tokens\": 8, \"phase\": \"prefill\"}]}]}}";
  cplab_scenario *s = NULL;
  cplab_diag d = {0};
  assert_int_equal(cplab_scenario_parse(json, strlen(json), "t.json", NULL, &s, &d), CPLAB_EUNSUPPORTED);
  assert_non_null(strstr(d.msg, "parallel.dcp: with pcp = 1"));
  assert_non_null(strstr(d.msg, "FlashMLASparseMetadataBuilder"));
}

/* PCP2 without DCP: a one-token prefill splits into one chunk on rank 0, so
 * rank 1 runs the placeholder: request 0, no tokens, at its computed position. */
static void test_placeholder_row(void **state) {
  (void)state;
  cplab_model m;
  small_model(&m);
  cplab_parallel par = par_of(1, 2, 1, 1, 4096);
  cplab_request reqs[] = {pre(0, 37, 1), pre(1, 0, 1)};
  cplab_step step = {2, reqs};
  cplab_step_input in = {&step, 0, 3, &par, &m, cplab_layout_find("vllm")};
  cplab_rank_plan *plans[2] = {derive(&in, 0), derive(&in, 1)};
  const cplab_split *sp = &plans[1]->split;
  assert_int_equal(plans[0]->split.num_rows, 2);
  assert_int_equal(sp->num_rows, 1);
  const cplab_row *r = &sp->rows[0];
  assert_int_equal(r->dummy, 1);
  assert_int_equal(r->req, 0);
  assert_int_equal(r->is_prefill, 1); /* request 0 is prefilling */
  assert_int_equal(r->replicated, 0);
  assert_int_equal(r->start, 0);
  assert_int_equal(r->len, 0);
  assert_int_equal(r->start_pos, 37); /* num_computed of request 0 */
  assert_int_equal(r->seq_len, 37);
  assert_int_equal(r->dcp_local_seq_len, 37);
  assert_int_equal(r->token_offset, 0);
  assert_int_equal(sp->num_decode_rows, 0);
  assert_int_equal(sp->num_tokens, 0);
  assert_null(cplab_split_row_of(sp, 0));
  cplab_check chk = {0};
  cplab_diag d = {0};
  assert_int_equal(cplab_check_step(&in, plans, 2, 1, &chk, &d), 0);
  if (chk.violations) fail_msg("%lld violations, first: %s", (long long)chk.violations, chk.first[0]);
  cplab_rank_plan_free(plans[0]);
  cplab_rank_plan_free(plans[1]);
}

/* MTP with N = 3: a decode row of 1 + 1 drafts two tokens short of
 * max_model_len is accepted and planned as a replicated decode row of 2
 * tokens; the step is then not a uniform decode batch (no FULL graph). More
 * than 1 + N tokens stays an error. */
static void test_mtp_fewer_drafts(void **state) {
  (void)state;
  char json[1024];
  const char *fmt = "{\"name\": \"mtp-short\", \"model\": \"glm-5\", \"parallel\": {\"tp\": 1, \"pcp\": 2, \"dcp\": 2, "
                    "\"max_model_len\": 4096}, \"speculative\": {\"num_spec_tokens\": 3}, \"workload\": {\"steps\": "
                    "[{\"requests\": [{\"id\": 0, \"num_computed\": 4094, \"new_tokens\": %d, \"phase\": \"decode\"}, "
                    "{\"id\": 1, \"num_computed\": 20, \"new_tokens\": 4, \"phase\": \"decode\"}]}]}}";
  snprintf(json, sizeof json, fmt, 2);
  cplab_scenario *s = NULL;
  cplab_diag d = {0};
  if (cplab_scenario_parse(json, strlen(json), "t.json", NULL, &s, &d)) fail_msg("%s", d.msg);
  cplab_step_input in = {&s->steps[0], 0, s->seed, &s->par, &s->model, cplab_layout_find("vllm")};
  cplab_rank_plan *plans[2];
  for (int r = 0; r < 2; r++) {
    cplab_rank_plan *p = plans[r] = derive(&in, r);
    assert_int_equal(p->split.num_decode_rows, 2);
    const cplab_row *row = &p->split.rows[0];
    assert_int_equal(row->req, 0);
    assert_int_equal(row->is_prefill, 0);
    assert_int_equal(row->replicated, 1);
    assert_int_equal(row->len, 2);
    assert_int_equal(row->start_pos, 4094);
    assert_int_equal(row->seq_len, 4096);
    assert_int_equal(row->dcp_local_seq_len, cplab_kv_local_len(4096, p->ids.dcp_rank, 1, 2));
    assert_int_equal(p->split.rows[1].token_offset, 2);
    assert_int_equal(p->split.num_tokens, 6);
    assert_int_equal(p->sched.uniform_decode, 0);
    assert_int_equal(p->sched.runtime_mode, CPLAB_GRAPH_PIECEWISE);
    /* Both tokens written by their owners: positions 4094 and 4095. */
    assert_int_equal(p->slot_mapping[0] >= 0, cplab_kv_owner(4094, 1, 2) == p->ids.dcp_rank);
    assert_int_equal(p->slot_mapping[1] >= 0, cplab_kv_owner(4095, 1, 2) == p->ids.dcp_rank);
  }
  cplab_check chk = {0};
  assert_int_equal(cplab_check_step(&in, plans, 2, 5, &chk, &d), 0);
  if (chk.violations) fail_msg("%lld violations, first: %s", (long long)chk.violations, chk.first[0]);
  for (int r = 0; r < 2; r++) cplab_rank_plan_free(plans[r]);
  cplab_scenario_free(s);
  s = NULL;
  snprintf(json, sizeof json, fmt, 1); /* no draft at all: still a decode row */
  if (cplab_scenario_parse(json, strlen(json), "t.json", NULL, &s, &d)) fail_msg("%s", d.msg);
  cplab_scenario_free(s);
  s = NULL;
  const char *over = "{\"name\": \"mtp-over\", \"model\": \"glm-5\", \"parallel\": {\"tp\": 1, \"pcp\": 2, \"dcp\": 2, "
                     "\"max_model_len\": 4096}, \"speculative\": {\"num_spec_tokens\": 3}, \"workload\": {\"steps\": "
                     "[{\"requests\": [{\"id\": 0, \"num_computed\": 100, \"new_tokens\": %d, \"phase\": \"decode\"}]}]}}";
  snprintf(json, sizeof json, over, 5);
  assert_int_equal(cplab_scenario_parse(json, strlen(json), "t.json", NULL, &s, &d), CPLAB_EUNSUPPORTED);
  assert_non_null(strstr(d.msg, "at most 1 + speculative.num_spec_tokens = 4 new tokens, got 5"));
}

/* The generator schedules what fits: a decode whose drafts would pass
 * max_model_len keeps mml - num_computed tokens; every other keeps 1 + N. */
static void test_generator_drops_drafts(void **state) {
  (void)state;
  cplab_parallel par = par_of(1, 2, 2, 1, 64);
  par.num_spec_tokens = 3;
  cplab_generator g = {.steps = 200, .requests = {.kind = CPLAB_DIST_UNIFORM, .min = 1, .max = 4},
                       .decode_fraction = 0.8, .context = {.kind = CPLAB_DIST_UNIFORM, .min = 1, .max = 64},
                       .prefill_tokens = {.kind = CPLAB_DIST_UNIFORM, .min = 1, .max = 8}, .chunked_fraction = 0};
  cplab_step *steps = NULL;
  size_t n = 0;
  cplab_diag d = {0};
  assert_int_equal(cplab_workload_generate(&g, &par, 9, &steps, &n, &d), 0);
  long short_rows = 0;
  for (size_t s = 0; s < n; s++)
    for (size_t i = 0; i < steps[s].num_requests; i++) {
      const cplab_request *q = &steps[s].requests[i];
      if (q->phase != CPLAB_PHASE_DECODE) continue;
      int64_t want = q->num_computed + 4 <= 64 ? 4 : 64 - q->num_computed;
      assert_int_equal(q->new_tokens, want);
      assert_true(q->num_computed >= 1 && q->num_computed + q->new_tokens <= 64);
      short_rows += q->new_tokens < 4;
    }
  assert_true(short_rows > 0);
  cplab_steps_free(steps, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dcp_without_pcp_plan),   cmocka_unit_test(test_dcp_without_pcp_filters_prefill),
      cmocka_unit_test(test_dcp_without_pcp_rules),  cmocka_unit_test(test_placeholder_row),
      cmocka_unit_test(test_mtp_fewer_drafts),       cmocka_unit_test(test_generator_drops_drafts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
