/* Rank plans: the worked examples of vllm-pcp-dcp.md §2–§5 and §10.2. */
#include "cplab/kv.h"
#include "cplab/plan.h"
#include "mutants_table.h"
#include "testutil.h"

static cplab_parallel par_of(int tp, int pcp, int dcp, int il, int64_t mml) {
  cplab_parallel p;
  cplab_parallel_defaults(&p);
  p.tp = tp, p.pcp = pcp, p.dcp = dcp, p.interleave = il, p.max_model_len = mml;
  return p;
}

static cplab_request pre(int64_t id, int64_t done, int64_t q) {
  return (cplab_request){id, done, q, CPLAB_PHASE_PREFILL};
}
static cplab_request dec(int64_t id, int64_t done) { return (cplab_request){id, done, 1, CPLAB_PHASE_DECODE}; }

static cplab_rank_plan *derive(const cplab_parallel *par, cplab_request *reqs, size_t n, int rank, const char *layout) {
  static cplab_model model;
  cplab_model_preset("glm-5", &model);
  cplab_step step = {n, reqs};
  cplab_step_input in = {&step, 0, 42, par, &model, cplab_layout_find(layout ? layout : "vllm")};
  cplab_rank_plan *p = NULL;
  cplab_diag d = {0};
  if (cplab_rank_plan_derive(&in, rank, CPLAB_PLAN_TOKEN_MAPS, &p, &d) != 0) fail_msg("derive: %s", d.msg);
  return p;
}

/* §3.2: P=2 with DCP: q in {1,2,3,5,6,9} replicated, {4,7,8} split; none without DCP. */
static void test_replication_p2(void **state) {
  (void)state;
  cplab_parallel with = par_of(1, 2, 2, 1, 4096), without = par_of(1, 2, 1, 1, 4096);
  cplab_layout_env e1, e2;
  cplab_layout_env_init(&e1, &with);
  cplab_layout_env_init(&e2, &without);
  const int replicated[] = {0, 1, 1, 1, 0, 1, 1, 0, 0, 1};
  for (int q = 1; q <= 9; q++) {
    if (cplab_layout_vllm_replicated(&e1, q, 1) != replicated[q]) fail_msg("q=%d with DCP", q);
    assert_int_equal(cplab_layout_vllm_replicated(&e2, q, 1), 0);
  }
  assert_int_equal(cplab_layout_vllm_replicated(&e2, 1, 0), 1); /* decodes always */
}

/* §2.2: local lengths. */
static void test_local_lengths(void **state) {
  (void)state;
  const int64_t a[] = {3, 3, 2, 2};
  for (int r = 0; r < 4; r++) assert_int_equal(cplab_kv_local_len(10, r, 1, 4), a[r]);
  assert_int_equal(cplab_kv_local_len(5, 0, 4, 2), 4);
  assert_int_equal(cplab_kv_local_len(5, 1, 4, 2), 1);
  for (int64_t L = 0; L < 300; L++)
    for (int D = 1; D <= 8; D++)
      for (int I = 1; I <= 64; I *= 4) {
        int64_t sum = 0;
        for (int r = 0; r < D; r++) {
          sum += cplab_kv_local_len(L, r, I, D);
          assert_true(cplab_kv_local_len(L, r, I, D) <= cplab_kv_local_len(L, 0, I, D));
        }
        if (sum != L) fail_msg("sum of local lengths of %lld over D=%d I=%d is %lld", (long long)L, D, I, (long long)sum);
      }
}

/* §3.1 / §3.7: P=2, q=7 without DCP: rank 0 [A B G], rank 1 [C D E F]. */
static void test_gather_restore_example(void **state) {
  (void)state;
  cplab_parallel par = par_of(1, 2, 1, 1, 4096);
  cplab_request reqs[] = {pre(0, 0, 7)};
  cplab_rank_plan *p = derive(&par, reqs, 1, 0, NULL);
  assert_int_equal(p->sched.padded_num_tokens, 4);
  const int32_t restore[] = {0, 1, 4, 5, 6, 7, 2}, gather[] = {0, 1, 6, 0, 2, 3, 4, 5};
  assert_memory_equal(p->restore_idx, restore, sizeof restore);
  assert_memory_equal(p->gather_idx, gather, sizeof gather);
  const uint8_t mask[] = {1, 1, 1, 0, 1, 1, 1, 1};
  assert_memory_equal(p->write_mask, mask, sizeof mask);
  assert_int_equal(p->split.num_rows, 2);
  assert_int_equal(p->split.rows[0].start, 0);
  assert_int_equal(p->split.rows[1].start, 6);
  cplab_rank_plan_free(p);
}

static void expect_dispatch(int pcp, int dcp, cplab_request *reqs, size_t n, int tokens) {
  cplab_parallel par = par_of(1, pcp, dcp, 1, 4096);
  cplab_rank_plan *p = derive(&par, reqs, n, 0, NULL);
  if (p->sched.dispatch_tokens != tokens)
    fail_msg("P=%d D=%d: dispatch tokens %d, expected %d", pcp, dcp, p->sched.dispatch_tokens, tokens);
  cplab_rank_plan_free(p);
}

/* §3.7 test values of get_dispatch_batch_shape. */
static void test_dispatch_shapes(void **state) {
  (void)state;
  cplab_request a[] = {pre(0, 0, 8)}, b[] = {pre(0, 0, 7)}, c[] = {dec(0, 5), dec(1, 9), dec(2, 3)};
  cplab_request e[] = {dec(0, 5), dec(1, 9), dec(2, 3), pre(3, 0, 8)}, f[] = {dec(0, 4), dec(1, 4), pre(2, 0, 9)};
  expect_dispatch(2, 1, a, 1, 4);
  expect_dispatch(2, 1, b, 1, 4);
  expect_dispatch(2, 1, c, 3, 3);
  expect_dispatch(2, 1, e, 4, 7);
  expect_dispatch(4, 1, f, 3, 5);
  expect_dispatch(4, 4, f, 3, 11); /* q=9 is replicated under DCP */
}

/* §4.1: rows [3,3,5,5,9] with extents 128/256/64 and W=2. */
static void test_prefill_plan_example(void **state) {
  (void)state;
  cplab_parallel par = par_of(1, 2, 2, 1, 4096);
  cplab_request reqs[10];
  for (int g = 0; g < 10; g++) reqs[g] = dec(g, 10);
  reqs[3] = pre(3, 64, 64);
  reqs[5] = pre(5, 192, 64);
  reqs[9] = pre(9, 0, 64);
  for (int rank = 0; rank < 2; rank++) {
    cplab_rank_plan *p = derive(&par, reqs, 10, rank, NULL);
    const cplab_prefill_plan *pl = &p->prefill;
    assert_int_equal(p->split.num_decode_rows, 7);
    assert_int_equal(pl->num_regions, 3);
    const int32_t req[] = {3, 5, 9};
    const int64_t rows[] = {64, 128, 32}, ws[] = {0, 64, 192};
    assert_memory_equal(pl->region_req, req, sizeof req);
    assert_memory_equal(pl->rows_per_rank, rows, sizeof rows);
    assert_memory_equal(pl->workspace_start, ws, sizeof ws);
    for (int k = 0; k < 3; k++) assert_int_equal(pl->region_first_row[k] - p->split.num_decode_rows, 2 * k);
    assert_int_equal(pl->num_chunks, 1);
    assert_int_equal(pl->chunks[0].shard_rows, 224);
    cplab_rank_plan_free(p);
  }
}

/* §4.1: 4 regions of extent 256, max_gathered_rows 512, W=2: chunks
 * [(0,2),(2,4)], workspace starts [0,128,0,128]; a region over budget is
 * rejected. */
static void test_prefill_plan_budget(void **state) {
  (void)state;
  cplab_parallel par = par_of(1, 2, 2, 1, 4096);
  cplab_request reqs[] = {pre(0, 0, 256), pre(1, 0, 256), pre(2, 0, 256), pre(3, 0, 256)};
  cplab_rank_plan *p = derive(&par, reqs, 4, 0, NULL);
  cplab_prefill_plan_free(&p->prefill);
  p->env.max_gathered_rows = 512;
  cplab_diag d = {0};
  assert_int_equal(cplab_prefill_plan_derive(p, &p->prefill, &d), 0);
  assert_int_equal(p->prefill.num_chunks, 2);
  assert_int_equal(p->prefill.chunks[0].first_region, 0);
  assert_int_equal(p->prefill.chunks[1].first_region, 2);
  const int64_t ws[] = {0, 128, 0, 128};
  assert_memory_equal(p->prefill.workspace_start, ws, sizeof ws);
  assert_int_equal(p->prefill.chunks[1].token_end, p->split.num_tokens);
  cplab_prefill_plan_free(&p->prefill);
  p->env.max_gathered_rows = 200; /* budget 100 < 128 rows */
  assert_int_equal(cplab_prefill_plan_derive(p, &p->prefill, &d), CPLAB_ERANGE);
  assert_non_null(strstr(d.msg, "contiguous KV rows"));
  cplab_rank_plan_free(p);
}

/* §10.2: an empty context is rejected; the mutant accepts it. */
static void test_empty_context(void **state) {
  (void)state;
  cplab_model model;
  cplab_model_preset("glm-5", &model);
  cplab_parallel par = par_of(1, 2, 2, 1, 4096);
  cplab_request reqs[] = {pre(0, 0, 0)};
  cplab_step step = {1, reqs};
  cplab_step_input in = {&step, 0, 1, &par, &model, cplab_layout_find("vllm")};
  cplab_rank_plan *p = NULL;
  cplab_diag d = {0};
  assert_int_equal(cplab_rank_plan_derive(&in, 0, 0, &p, &d), CPLAB_EINVAL);
  assert_non_null(strstr(d.msg, "empty scheduled context"));
  in.layout = cplab_layout_find("mutant-empty-context");
  assert_int_equal(cplab_rank_plan_derive(&in, 0, 0, &p, &d), 0);
  cplab_rank_plan_free(p);
}

/* §5.3: the fixed conversion keeps 128 at a prefill row of region 0 (ws 0)
 * with B=16, max_blocks=8; the pre-fix conversion turned it into -1. */
static void test_conversion_fix(void **state) {
  (void)state;
  cplab_parallel par = par_of(1, 1, 1, 1, 128);
  par.block_size = 16;
  cplab_layout_env env;
  cplab_layout_env_init(&env, &par);
  assert_int_equal(env.max_blocks, 8);
  int32_t chunk_of[] = {0, 0};
  int64_t ws[] = {0, 100};
  cplab_prefill_chunk chunk = {0, 2, 300, 0, 0};
  cplab_prefill_plan plan = {.active = 1, .W = 1, .num_regions = 2, .region_chunk = chunk_of, .workspace_start = ws,
                             .num_chunks = 1, .chunks = &chunk};
  const cplab_layout *fixed = cplab_layout_find("vllm"), *old = cplab_layout_find("mutant-prefill-block-bound");
  assert_int_equal(cplab_layout_convert_prefill(fixed, &env, &plan, 0, 128, 0), 128);
  assert_int_equal(cplab_layout_convert_prefill(fixed, &env, &plan, 1, 128, 0), 228);
  assert_int_equal(cplab_layout_convert_prefill(fixed, &env, &plan, 0, -1, 0), -1);
  assert_int_equal(cplab_layout_convert_prefill(old, &env, &plan, 0, 128, 0), -1);
  assert_int_equal(cplab_layout_convert_prefill(old, &env, &plan, 0, 127, 0), 127);
  /* Decode rows keep the block bound. */
  int32_t row[8] = {3, 1, 4, 1, 5, 9, 2, 6};
  assert_int_equal(cplab_layout_convert_decode(fixed, &env, row, 8, 17, 0), 1 * 16 + 1);
  assert_int_equal(cplab_layout_convert_decode(fixed, &env, row, 8, 128, 0), -1);
}

/* §5.3, the change's test case: 12 query rows (0-5 decode rows of requests 0
 * and 1, 6-11 prefill rows of regions 0 and 1), workspace starts [0, 100],
 * B = 16, 8 blocks, top-k 128, random tokens, and the out-of-bound value 128
 * at [6, 110:120]. The fixed conversion matches the reference of §5.1
 * everywhere; the pre-fix one differs exactly there. The old test wrote the
 * value into [6, 150:160] -- an empty slice of 128 columns -- so it passed
 * the buggy conversion. */
static void test_conversion_case_of_the_change(void **state) {
  (void)state;
  enum { T = 12, K = 128, B = 16, MB = 8 };
  cplab_parallel par = par_of(1, 1, 1, 1, MB * B);
  par.block_size = B;
  cplab_layout_env env;
  cplab_layout_env_init(&env, &par);
  int32_t chunk_of[] = {0, 0};
  int64_t ws[] = {0, 100};
  cplab_prefill_chunk chunk = {0, 2, 300, 0, 0};
  cplab_prefill_plan plan = {.active = 1, .W = 1, .num_regions = 2, .region_chunk = chunk_of, .workspace_start = ws,
                             .num_chunks = 1, .chunks = &chunk};
  const int req_id[T] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}, prefill_id[T] = {-1, -1, -1, -1, -1, -1, 0, 0, 0, 1, 1, 1};
  int32_t block_table[2][MB], tokens[T][K];
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  for (int r = 0; r < 2; r++)
    for (int b = 0; b < MB; b++) block_table[r][b] = (int32_t)gsl_rng_uniform_int(rng, 64);
  for (int i = 0; i < T; i++)
    for (int j = 0; j < K; j++) tokens[i][j] = gsl_rng_uniform(rng) < 0.1 ? -1 : (int32_t)gsl_rng_uniform_int(rng, K);
  gsl_rng_free(rng);
  for (int j = 110; j < 120; j++) tokens[6][j] = MB * B; /* the fixed test's slice */
  const cplab_layout *fixed = cplab_layout_find("vllm"), *old = cplab_layout_find("mutant-prefill-block-bound");
  int differences = 0, old_test_slice = 0;
  for (int i = 0; i < T; i++)
    for (int j = 0; j < K; j++) {
      int32_t tok = tokens[i][j], want, got_fixed, got_old;
      if (tok == -1) want = -1; /* §5.1 reference */
      else if (prefill_id[i] >= 0) want = (int32_t)ws[prefill_id[i]] + tok;
      else want = tok / B >= MB ? -1 : block_table[req_id[i]][tok / B] * B + tok % B;
      if (prefill_id[i] >= 0) {
        got_fixed = cplab_layout_convert_prefill(fixed, &env, &plan, prefill_id[i], tok, 0);
        got_old = cplab_layout_convert_prefill(old, &env, &plan, prefill_id[i], tok, 0);
      } else {
        got_fixed = cplab_layout_convert_decode(fixed, &env, block_table[req_id[i]], MB, tok, 0);
        got_old = cplab_layout_convert_decode(old, &env, block_table[req_id[i]], MB, tok, 0);
      }
      if (got_fixed != want) fail_msg("fixed conversion at [%d, %d]: %d, reference %d", i, j, got_fixed, want);
      if (got_old != want) {
        differences++;
        assert_true(i == 6 && j >= 110 && j < 120);
      }
      old_test_slice += i == 6 && j >= 150 && j < 160; /* columns that do not exist */
    }
  assert_int_equal(differences, 10);
  assert_int_equal(old_test_slice, 0);
}

/* §4.1 "rows_per_rank is the max slot": W in {2,3,8}, extents 1..1000, any interleave. */
static void test_rows_per_rank_is_largest_shard(void **state) {
  (void)state;
  const int Ws[] = {2, 3, 8}, Is[] = {1, 2, 4, 64};
  for (int w = 0; w < 3; w++)
    for (int i = 0; i < 4; i++) {
      cplab_parallel par = par_of(1, 1, 1, Is[i], 4096);
      par.dcp = Ws[w];
      cplab_layout_env env;
      cplab_layout_env_init(&env, &par);
      for (int64_t e = 1; e <= 1000; e++) {
        int64_t largest = 0;
        for (int o = 0; o < Ws[w]; o++)
          if (cplab_kv_local_len(e, o, Is[i], Ws[w]) > largest) largest = cplab_kv_local_len(e, o, Is[i], Ws[w]);
        if (cplab_layout_vllm_rows_per_rank(&env, e, NULL) != largest)
          fail_msg("W=%d I=%d extent %lld: rows_per_rank %lld, largest shard %lld", Ws[w], Is[i], (long long)e,
                   (long long)cplab_layout_vllm_rows_per_rank(&env, e, NULL), (long long)largest);
        if (Is[i] == 1) assert_int_equal(largest, (e + Ws[w] - 1) / Ws[w]);
      }
    }
}

/* Layout registry: vllm first, correct layouts before mutants, names unique;
 * every mutant declares the bug, the rule that must catch it, its needs and a
 * claim for every command of the catalogue; a correct layout declares none. */
static void test_registry(void **state) {
  (void)state;
  mutant_row rows[MUTANTS_MAX];
  size_t n = mutants_table(rows);
  int correct = 0, seen_mutant = 0;
  size_t mutants = 0;
  assert_string_equal(cplab_layouts()[0]->name, "vllm");
  for (const cplab_layout *const *l = cplab_layouts(); *l; l++) {
    assert_ptr_equal(cplab_layout_find((*l)->name), *l);
    if ((*l)->mutant) {
      mutants++, seen_mutant = 1;
      assert_true(strncmp((*l)->name, "mutant-", 7) == 0);
      for (int c = 0; c < CPLAB_CATCH_COUNT; c++)
        if (!(*l)->caught[c] || !(*l)->caught[c][0])
          fail_msg("mutant %s declares no claim for %s (.caught)", (*l)->name,
                   cplab_layout_catch_name((cplab_layout_catch)c));
    } else {
      assert_false(seen_mutant);
      assert_true(strncmp((*l)->name, "mutant-", 7) != 0);
      assert_null((*l)->breaks);
      correct++;
    }
  }
  assert_true(correct >= 2);
  assert_true(mutants > 0);
  assert_int_equal(n, mutants);
  assert_null(cplab_layout_find("nope"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replication_p2),      cmocka_unit_test(test_local_lengths),
      cmocka_unit_test(test_gather_restore_example), cmocka_unit_test(test_dispatch_shapes),
      cmocka_unit_test(test_prefill_plan_example), cmocka_unit_test(test_prefill_plan_budget),
      cmocka_unit_test(test_empty_context),       cmocka_unit_test(test_conversion_fix),
      cmocka_unit_test(test_conversion_case_of_the_change), cmocka_unit_test(test_rows_per_rank_is_largest_shard),
      cmocka_unit_test(test_registry),
  };
  return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
