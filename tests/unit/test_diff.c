/* cplab-diff's agreement rules on tensors: exact bytes, float policy
 * (tolerance, NaN/Inf positions, cosine), top-k modulo ties and the
 * converted entries of common indices. Two one-rank runs of the smoke
 * scenario's first step are written with chosen tensors and compared. */
#include <hdf5.h>
#include <math.h>
#include <unistd.h>

#include "cplab/trace.h"
#include "diff.h"
#include "testutil.h"

enum { K = 4, SLOTS = 64, HEADS = 64 };

typedef struct run_data {
  uint8_t kv[SLOTS * 656];
  int32_t topk[64 * K], conv[64 * K];
  float scores[64 * K], kth[64], lse[64 * HEADS];
  int32_t valid[64];  /* topk_valid, written when has_valid */
  int has_valid;
  float plse[64 * HEADS]; /* attn_partial_lse, written when has_partial (its lse alone: the diff pairs none) */
  int has_partial;
  const char *schema; /* cplab_schema the files claim, NULL: the writer's */
} run_data;

static char dir[] = "/tmp/cplab-diff-test-XXXXXX";
static int64_t tokens;

static int setup(void **state) {
  (void)state;
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void base_data(run_data *r) {
  for (int i = 0; i < SLOTS * 656; i++) r->kv[i] = (uint8_t)(i * 31 + 3);
  for (int m = 0; m < 64; m++) {
    for (int j = 0; j < K; j++) {
      r->topk[m * K + j] = j;
      r->conv[m * K + j] = 100 + j;
      r->scores[m * K + j] = 10.0f - (float)j;
    }
    r->kth[m] = 10.0f - (float)(K - 1);
    r->valid[m] = K;
  }
  r->has_valid = 1;
  r->has_partial = 0;
  r->schema = NULL;
  for (int i = 0; i < 64 * HEADS; i++) r->lse[i] = 1.0f + 0.01f * (float)i, r->plse[i] = 0.5f - 0.01f * (float)i;
}

/* Make a file claim another schema version (an older writer's file). */
static void claim_schema(const char *path, const char *version) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  assert_true(f >= 0);
  H5Adelete(f, "cplab_schema");
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(t, strlen(version));
  hid_t a = H5Acreate2(f, "cplab_schema", t, sp, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(a >= 0 && H5Awrite(a, t, version) >= 0);
  H5Aclose(a), H5Sclose(sp), H5Tclose(t), H5Fclose(f);
}

/* A one-rank run (smoke scenario on TP1/PCP1/DCP1, first step only). */
static void write_run(const char *name, const run_data *r) {
  cplab_scenario *s = NULL;
  cplab_diag d = {0};
  assert_int_equal(cplab_scenario_load("smoke", NULL, &s, &d), 0);
  s->par.pcp = s->par.dcp = 1;
  size_t all_steps = s->num_steps;
  s->num_steps = 1; /* a one-step run; restored before the scenario is freed */
  char path[256], rpath[300];
  snprintf(path, sizeof path, "%s/%s.h5", dir, name);
  assert_int_equal(cplab_trace_rank_path(path, 0, rpath, sizeof rpath, &d), 0);
  const cplab_trace_provenance prov = {"sim", "test_diff", NULL, NULL, NULL, NULL, NULL};
  cplab_trace_writer *w = NULL;
  assert_int_equal(cplab_trace_create(rpath, s, 0, &prov, &w, &d), 0);
  cplab_step_input in = {&s->steps[0], 0, s->seed, &s->par, &s->model, cplab_layout_find("vllm")};
  cplab_rank_plan *p = NULL;
  assert_int_equal(cplab_rank_plan_derive(&in, 0, 0, &p, &d), 0);
  tokens = p->split.num_tokens;
  assert_true(tokens <= 64);
  assert_int_equal(cplab_trace_write_plan(w, 0, p, &d), 0);
  cplab_rank_plan_free(p);
  uint64_t kv_dims[2] = {SLOTS, 656}, tk[2] = {(uint64_t)tokens, K}, kth[1] = {(uint64_t)tokens},
           lse[2] = {(uint64_t)tokens, HEADS};
  if (cplab_trace_write_tensor(w, 0, 0, CPLAB_TT_KV_CACHE, kv_dims, r->kv, 0, &d) ||
      cplab_trace_write_tensor(w, 0, 0, CPLAB_TT_TOPK, tk, r->topk, 1, &d) ||
      cplab_trace_write_tensor(w, 0, 0, CPLAB_TT_TOPK_CONVERTED, tk, r->conv, 1, &d) ||
      cplab_trace_write_tensor(w, 0, 0, CPLAB_TT_TOPK_SCORES, tk, r->scores, 1, &d) ||
      cplab_trace_write_tensor(w, 0, 0, CPLAB_TT_KTH_SCORE, kth, r->kth, 1, &d) ||
      cplab_trace_write_tensor(w, 0, 0, CPLAB_TT_ATTN_LSE, lse, r->lse, 1, &d) ||
      (r->has_valid && cplab_trace_write_tensor(w, 0, 0, CPLAB_TT_TOPK_VALID, kth, r->valid, 1, &d)) ||
      (r->has_partial && cplab_trace_write_tensor(w, 0, 0, CPLAB_TT_ATTN_PARTIAL_LSE, lse, r->plse, 1, &d)))
    fail_msg("write: %s", d.msg);
  assert_int_equal(cplab_trace_commit(w, &d), 0);
  if (r->schema) claim_schema(rpath, r->schema);
  cplab_trace_writer *run = NULL;
  assert_int_equal(cplab_trace_create(path, s, -1, &prov, &run, &d), 0);
  assert_int_equal(cplab_trace_link_ranks(run, 1, &d), 0);
  assert_int_equal(cplab_trace_commit(run, &d), 0);
  if (r->schema) claim_schema(path, r->schema);
  s->num_steps = all_steps;
  cplab_scenario_free(s);
}

/* Compare base with a run written from `other`; return the report. */
static void compare(const run_data *base, const run_data *other, diff_report *rep) {
  write_run("a", base);
  write_run("b", other);
  char a[256], b[256];
  snprintf(a, sizeof a, "%s/a.h5", dir);
  snprintf(b, sizeof b, "%s/b.h5", dir);
  diff_policy pol;
  cplab_diag d = {0};
  assert_int_equal(diff_policy_load(NULL, &pol, &d), 0);
  assert_int_equal(diff_report_init(rep, 10), 0);
  if (diff_agree(a, b, &pol, rep, &d)) fail_msg("diff: %s", d.msg);
}

static const diff_dataset *dataset(const diff_report *r, const char *name) {
  for (int i = 0; i < r->num_datasets; i++)
    if (strcmp(r->datasets[i].name, name) == 0) return &r->datasets[i];
  fail_msg("no dataset %s in the report", name);
  return NULL;
}

static void test_identical(void **state) {
  (void)state;
  static run_data a;
  base_data(&a);
  diff_report r;
  compare(&a, &a, &r);
  assert_int_equal(r.differences, 0);
  assert_true(dataset(&r, "kv_cache")->compared == SLOTS * 656);
  assert_true(r.compared_bytes > 2 * SLOTS * 656);
  diff_report_free(&r);
}

static void test_quantised_byte(void **state) {
  (void)state;
  static run_data a, b;
  base_data(&a);
  b = a;
  b.kv[3 * 656 + 17] ^= 1;
  diff_report r;
  compare(&a, &b, &r);
  assert_int_equal(r.differences, 1);
  assert_non_null(strstr(r.first[0], "kv_cache: rank 0 step 0 layer 0: 1 elements differ, first at row 3 column 17"));
  diff_report_free(&r);
}

static void test_float_policy(void **state) {
  (void)state;
  static run_data a, b;
  base_data(&a);
  b = a;
  b.lse[5] += 1e-5f; /* inside atol 1e-3 */
  diff_report r;
  compare(&a, &b, &r);
  assert_int_equal(r.differences, 0);
  assert_true(dataset(&r, "attn_lse")->max_abs > 0);
  diff_report_free(&r);
  b.lse[7] += 0.5f; /* outside */
  b.lse[9] = NAN;   /* NaN where the reference has a number */
  compare(&a, &b, &r);
  assert_int_equal(r.differences, 2);
  /* Row 0 is sampled token 0's row; column 7 of attn_lse is head 7. */
  assert_non_null(strstr(r.first[0], "attn_lse: rank 0 step 0 layer 0 token "));
  assert_non_null(strstr(r.first[0], " head 7: "));
  assert_non_null(strstr(r.first[1], "NaN/Inf must match"));
  diff_report_free(&r);
}

static void test_topk_ties(void **state) {
  (void)state;
  static run_data a, b;
  base_data(&a);
  b = a;
  /* Row 0: B picked 9 instead of 3, and both score like the k-th: a tie. */
  b.topk[0 * K + 3] = 9;
  b.scores[0 * K + 3] = a.kth[0];
  diff_report r;
  compare(&a, &b, &r);
  assert_int_equal(r.differences, 0);
  assert_int_equal(dataset(&r, "topk")->tie_swaps, 2); /* 3 only in A, 9 only in B */
  diff_report_free(&r);
  /* Row 1: B picked 9 instead of 1, which A scored far above the k-th: not a tie. */
  b.topk[1 * K + 1] = 9;
  b.scores[1 * K + 1] = 3.0f;
  compare(&a, &b, &r);
  assert_int_equal(r.differences, 1);
  assert_non_null(strstr(r.first[0], "topk: rank 0 step 0 layer 0 token 1"));
  assert_non_null(strstr(r.first[0], "not a tie"));
  diff_report_free(&r);
  /* A common index converted differently is caught. */
  b = a;
  b.conv[2 * K + 0] = 7;
  compare(&a, &b, &r);
  assert_int_equal(r.differences, 1);
  assert_non_null(strstr(r.first[0], "topk_converted: rank 0 step 0 layer 0 token 2"));
  diff_report_free(&r);
}

/* The indexer's scores are held to a share of their row's largest |score|
 * (row_rtol: 2e-3 for scores and k-th scores, 4e-3 for ties; the rows' largest
 * is 10 here, so 0.02 and 0.04 beyond atol + rtol |a|), not of their own. */
static void test_row_scale(void **state) {
  (void)state;
  static run_data a, b;
  base_data(&a);
  b = a;
  b.scores[0 * K + 3] += 0.015f; /* 7 + 0.015: beyond 1e-3 + 1e-4 * 7, within the row's 0.02 */
  b.kth[1] += 0.015f;
  b.topk[2 * K + 3] = 9; /* B picked 9 instead of 3, scoring 0.035 above the k-th: a tie at 0.04 */
  b.scores[2 * K + 3] = a.kth[2] + 0.035f;
  diff_report r;
  compare(&a, &b, &r);
  assert_int_equal(r.differences, 0);
  assert_int_equal(dataset(&r, "topk")->tie_swaps, 2);
  diff_report_free(&r);
  b = a;
  b.scores[0 * K + 3] += 0.03f; /* beyond the row's share */
  b.kth[1] += 0.03f;
  b.topk[2 * K + 3] = 9;
  b.scores[2 * K + 3] = a.kth[2] + 0.06f;
  compare(&a, &b, &r);
  assert_int_equal(dataset(&r, "topk_scores")->differences, 1);
  assert_int_equal(dataset(&r, "kth_score")->differences, 1);
  assert_int_equal(dataset(&r, "topk")->differences, 1);
  diff_report_free(&r);
}

/* A row whose top-k sets differ by a tie read other keys: its attention is
 * not compared (counted among attn_lse's tie-swaps); a row without one is. */
static void test_tie_swapped_attention(void **state) {
  (void)state;
  static run_data a, b;
  base_data(&a);
  b = a;
  b.topk[0 * K + 3] = 9; /* a tie, as in test_topk_ties */
  b.scores[0 * K + 3] = a.kth[0];
  b.lse[0 * HEADS + 5] += 30.0f; /* a key of its own dominates */
  diff_report r;
  compare(&a, &b, &r);
  assert_int_equal(r.differences, 0);
  assert_int_equal(dataset(&r, "attn_lse")->tie_swaps, 1);
  diff_report_free(&r);
  b.lse[1 * HEADS + 5] += 30.0f; /* row 1 picked the same keys */
  compare(&a, &b, &r);
  assert_int_equal(dataset(&r, "attn_lse")->differences, 1);
  assert_non_null(strstr(r.first[0], "attn_lse: rank 0 step 0 layer 0 token 1"));
  diff_report_free(&r);
}

/* b lacks a tensor a holds: no difference where b claims an older schema
 * (counted under newer-schema), one ("only in A", in the message) where b
 * is of the writer's schema. */
static void expect_schema_gap(const run_data *a, run_data *b, const char *older, const char *only_in_a) {
  diff_report r;
  b->schema = older;
  compare(a, b, &r);
  assert_int_equal(r.differences, 0);
  assert_int_equal(dataset(&r, "newer-schema")->compared, tokens);
  diff_report_free(&r);
  b->schema = NULL;
  compare(a, b, &r);
  assert_int_equal(r.differences, 1);
  assert_non_null(strstr(r.first[0], only_in_a));
  diff_report_free(&r);
}

/* topk_valid is compared exactly; a file whose schema (1.0) predates it is
 * no difference for lacking it, a 1.1 file is. */
static void test_topk_valid(void **state) {
  (void)state;
  static run_data a, b;
  base_data(&a);
  a.topk[2 * K + K - 1] = -1; /* row 2 has one key fewer than k */
  a.valid[2] = K - 1;
  b = a;
  b.valid[2] = K - 2;
  diff_report r;
  compare(&a, &b, &r);
  assert_int_equal(dataset(&r, "topk_valid")->differences, 1);
  assert_non_null(strstr(r.first[0], "topk_valid: rank 0 step 0 layer 0: 1 elements differ, first at row 2 column 0"));
  diff_report_free(&r);
  b = a;
  b.has_valid = 0;
  expect_schema_gap(&a, &b, "1.0.0", "topk_valid: rank 0 step 0 layer 0: only in A");
}

/* The decode partials (1.2) are compared by the policy's attn_partial_*
 * entries and named by token and head; a file of 1.1 lacks them without
 * a difference, a 1.2 file does not. */
static void test_partials(void **state) {
  (void)state;
  static run_data a, b;
  base_data(&a);
  a.has_partial = 1;
  b = a;
  b.plse[1 * HEADS + 7] += 5e-4f; /* within attn_partial_lse's atol 1e-3 */
  diff_report r;
  compare(&a, &b, &r);
  assert_int_equal(r.differences, 0);
  assert_true(dataset(&r, "attn_partial_lse")->max_abs > 0);
  diff_report_free(&r);
  b.plse[1 * HEADS + 7] += 0.01f;
  compare(&a, &b, &r);
  assert_int_equal(dataset(&r, "attn_partial_lse")->differences, 1);
  assert_non_null(strstr(r.first[0], "attn_partial_lse: rank 0 step 0 layer 0 token 1 "));
  assert_non_null(strstr(r.first[0], " head 7: "));
  diff_report_free(&r);
  b = a;
  b.has_partial = 0;
  expect_schema_gap(&a, &b, "1.1.0", "attn_partial_lse: rank 0 step 0 layer 0: only in A");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identical), cmocka_unit_test(test_quantised_byte), cmocka_unit_test(test_float_policy),
      cmocka_unit_test(test_topk_ties), cmocka_unit_test(test_row_scale), cmocka_unit_test(test_tie_swapped_attention),
      cmocka_unit_test(test_topk_valid), cmocka_unit_test(test_partials),
  };
  return cmocka_run_group_tests_name("diff", tests, setup, teardown);
}
