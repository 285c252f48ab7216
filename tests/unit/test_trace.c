/* Traces: round trip of every plan dataset, byte-identical rewrites, schema
 * versions, atomic writes, and rejection of truncated, bit-flipped,
 * wrong-type, wrong-shape, missing-key and out-of-range files with the right
 * message (never a crash). */
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cplab/trace.h"
#include "sweep.h"
#include "testutil.h"

static char dir[] = "/tmp/cplab-trace-test-XXXXXX";

static int setup(void **state) {
  (void)state;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void replace_dataset(hid_t file, const char *path, hid_t type, int rank, const hsize_t *dims, const void *data);

static const cplab_trace_provenance prov = {"sim", "test_trace", NULL, NULL, NULL, NULL, NULL};

/* Write the run of scenario s (all ranks, token maps) to NAME.h5 in dir;
 * return the derived plans [step][rank] in *plans (caller frees). */
static void write_run(const cplab_scenario *s, const char *name, cplab_rank_plan ***plans_out) {
  int world = cplab_parallel_world(&s->par);
  const cplab_layout *layout = cplab_layout_find(s->layout);
  char path[256], rpath[320];
  snprintf(path, sizeof path, "%s/%s.h5", dir, name);
  cplab_rank_plan **plans = calloc(s->num_steps * (size_t)world, sizeof *plans);
  cplab_diag d = {0};
  for (int r = 0; r < world; r++) {
    cplab_trace_writer *w = NULL;
    assert_int_equal(cplab_trace_rank_path(path, r, rpath, sizeof rpath, &d), 0);
    if (cplab_trace_create(rpath, s, r, &prov, &w, &d)) fail_msg("create: %s", d.msg);
    for (size_t st = 0; st < s->num_steps; st++) {
      cplab_step_input in = {&s->steps[st], st, s->seed, &s->par, &s->model, layout};
      cplab_rank_plan **p = &plans[st * (size_t)world + (size_t)r];
      if (cplab_rank_plan_derive(&in, r, CPLAB_PLAN_TOKEN_MAPS, p, &d)) fail_msg("derive: %s", d.msg);
      if (cplab_trace_write_plan(w, st, *p, &d)) fail_msg("write: %s", d.msg);
    }
    if (cplab_trace_commit(w, &d)) fail_msg("commit: %s", d.msg);
  }
  cplab_trace_writer *run = NULL;
  assert_int_equal(cplab_trace_create(path, s, -1, &prov, &run, &d), 0);
  assert_int_equal(cplab_trace_link_ranks(run, world, &d), 0);
  assert_int_equal(cplab_trace_commit(run, &d), 0);
  if (plans_out) *plans_out = plans;
  else {
    for (size_t i = 0; i < s->num_steps * (size_t)world; i++) cplab_rank_plan_free(plans[i]);
    free(plans);
  }
}

/* Every plan read back through the run file equals the derived one. */
static void check_round_trip(const cplab_scenario *s, const char *name) {
  cplab_rank_plan **plans;
  write_run(s, name, &plans);
  int world = cplab_parallel_world(&s->par);
  char path[256];
  snprintf(path, sizeof path, "%s/%s.h5", dir, name);
  cplab_trace *run = NULL;
  cplab_diag d = {0};
  if (cplab_trace_open(path, &run, &d)) fail_msg("open: %s", d.msg);
  if (cplab_trace_validate(run, &d)) fail_msg("validate: %s", d.msg);
  for (int r = 0; r < world; r++) {
    cplab_trace *rt = NULL;
    assert_int_equal(cplab_trace_open_rank(run, r, &rt, &d), 0);
    for (size_t st = 0; st < s->num_steps; st++) {
      cplab_rank_plan *back = NULL;
      if (cplab_trace_read_plan(rt, st, &back, &d)) fail_msg("read: %s", d.msg);
      char what[128];
      if (!cplab_rank_plan_equal(plans[st * (size_t)world + (size_t)r], back, what, sizeof what))
        fail_msg("%s rank %d step %zu: %s differ after the round trip", name, r, st, what);
      cplab_rank_plan_free(back);
      cplab_rank_plan_free(plans[st * (size_t)world + (size_t)r]);
    }
    cplab_trace_close(rt);
  }
  free(plans);
  cplab_trace_close(run);
}

static cplab_scenario *load(const char *name) {
  cplab_scenario *s = NULL;
  cplab_diag d = {0};
  if (cplab_scenario_load(name, NULL, &s, &d)) fail_msg("%s", d.msg);
  return s;
}

static void test_round_trip_builtins(void **state) {
  (void)state;
  for (const char *const *n = cplab_scenario_builtin_names(); *n; n++) {
    if (strcmp(*n, "pr56157") == 0) continue; /* 32k-token prefill: covered by the CLI test */
    cplab_scenario *s = load(*n);
    check_round_trip(s, *n);
    cplab_scenario_free(s);
  }
}

/* Random steps of the sweep, each as a one-step scenario. */
static void test_round_trip_random(void **state) {
  (void)state;
  cplab_scenario *s = load("smoke");
  prop_run pr;
  prop_begin(&pr);
  for (long trial = 0; trial < 60; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    sweep_case c;
    sweep_random_case(&pr, &c);
    cplab_step step = {c.n, c.reqs};
    cplab_step *saved = s->steps;
    size_t saved_n = s->num_steps;
    cplab_parallel saved_par = s->par;
    int64_t saved_heads = s->model.num_heads;
    s->steps = &step, s->num_steps = 1, s->par = c.par;
    /* DCP without PCP needs fewer than 32 heads per rank (vLLM's mixed-batch path), or the
     * stored scenario would not validate. */
    if (c.par.pcp == 1 && c.par.dcp > 1) s->model.num_heads = 16 * c.par.tp;
    char name[32];
    snprintf(name, sizeof name, "rand%ld", trial);
    check_round_trip(s, name);
    s->steps = saved, s->num_steps = saved_n, s->par = saved_par, s->model.num_heads = saved_heads;
  }
  prop_end(&pr);
  cplab_scenario_free(s);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc(*len + 1);
  assert_int_equal(fread(buf, 1, *len, f), *len);
  fclose(f);
  return buf;
}

static void test_byte_identical(void **state) {
  (void)state;
  cplab_scenario *s = load("mixed");
  write_run(s, "det1", NULL);
  write_run(s, "det2", NULL);
  const char *names[][2] = {{"det1.h5", "det2.h5"}, {"det1.r0000.h5", "det2.r0000.h5"}, {"det1.r0003.h5", "det2.r0003.h5"}};
  for (int i = 0; i < 3; i++) {
    char a[256], b[256];
    size_t la, lb;
    snprintf(a, sizeof a, "%s/%s", dir, names[i][0]);
    snprintf(b, sizeof b, "%s/%s", dir, names[i][1]);
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    if (i > 0) { /* rank files hold no run-level name: identical bytes */
      assert_int_equal(la, lb);
      assert_memory_equal(x, y, la);
    }
    free(x);
    free(y);
  }
  cplab_scenario_free(s);
}

/* Schema 1.1: every rank file records its ids and group members as the
 * layout numbers them (mixed: TP2/PCP2/DCP4, so DCP groups span TP), and
 * /config its num_spec_tokens (mtp-pcp2: 1), both read back. */
static void check_groups_round_trip(const char *name) {
  cplab_scenario *s = load(name);
  write_run(s, name, NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/%s.h5", dir, name);
  cplab_trace *run = NULL, *rt = NULL;
  cplab_diag d = {0};
  assert_int_equal(cplab_trace_open(path, &run, &d), 0);
  if (cplab_trace_validate(run, &d)) fail_msg("validate: %s", d.msg);
  int world = cplab_parallel_world(&s->par), want[64];
  for (int r = 0; r < world; r++) {
    assert_int_equal(cplab_trace_open_rank(run, r, &rt, &d), 0);
    cplab_trace_groups g;
    cplab_rank_ids ids;
    if (cplab_trace_read_groups(rt, &g, &d)) fail_msg("groups: %s", d.msg);
    assert_int_equal(cplab_rank_ids_get(&s->par, r, &ids, &d), 0);
    assert_memory_equal(&g.ids, &ids, sizeof ids);
    for (int k = CPLAB_GROUP_TP; k <= CPLAB_GROUP_DCP; k++) {
      assert_int_equal(g.size[k], cplab_group_size(&s->par, (cplab_group_kind)k));
      assert_int_equal(cplab_group_members(&s->par, (cplab_group_kind)k, r, want, &d), 0);
      assert_memory_equal(g.members[k], want, sizeof *want * (size_t)g.size[k]);
    }
    cplab_trace_groups_fini(&g);
    cplab_rank_plan *p = NULL;
    assert_int_equal(cplab_trace_read_plan(rt, 0, &p, &d), 0);
    assert_int_equal(p->env.par.num_spec_tokens, s->par.num_spec_tokens);
    cplab_rank_plan_free(p);
    cplab_trace_close(rt);
  }
  /* A run file holds no groups. */
  cplab_trace_groups g;
  assert_int_equal(cplab_trace_read_groups(run, &g, &d), CPLAB_EINVAL);
  cplab_trace_close(run);
  cplab_scenario_free(s);
}

static void test_groups_and_spec_tokens(void **state) {
  (void)state;
  check_groups_round_trip("mixed");
  check_groups_round_trip("mtp-pcp2");
  /* A plan derived with other ids than its file records is refused. */
  cplab_scenario *s = load("smoke");
  char path[256];
  snprintf(path, sizeof path, "%s/ids.r0001.h5", dir);
  cplab_diag d = {0};
  cplab_trace_writer *w = NULL;
  assert_int_equal(cplab_trace_create(path, s, 1, &prov, &w, &d), 0);
  cplab_step_input in = {&s->steps[0], 0, s->seed, &s->par, &s->model, cplab_layout_find("vllm")};
  cplab_rank_plan *p = NULL;
  assert_int_equal(cplab_rank_plan_derive(&in, 1, 0, &p, &d), 0);
  p->ids.dcp_rank = 0;
  assert_int_equal(cplab_trace_write_plan(w, 0, p, &d), CPLAB_EINVAL);
  assert_non_null(strstr(d.msg, "carries other group ids (dcp_rank 0) than its file records (dcp_rank 1)"));
  cplab_trace_abort(w);
  cplab_rank_plan_free(p);
  cplab_scenario_free(s);
}

/* The file at path opens and fails validation with a message holding fragment. */
static void expect_invalid(const char *path, const char *fragment) {
  cplab_trace *t = NULL;
  cplab_diag d = {0};
  assert_int_equal(cplab_trace_open(path, &t, &d), 0);
  assert_int_equal(cplab_trace_validate(t, &d), CPLAB_ESCHEMA);
  if (!strstr(d.msg, fragment)) fail_msg("expected '%s', got '%s'", fragment, d.msg);
  cplab_trace_close(t);
}

/* Rank 0's file NAME.r0000.h5 of scenario s in dir (its path in path[256])
 * with every step's plan, open for layer tensors; tokens[step] gets each
 * step's local tokens (may be NULL). */
static cplab_trace_writer *rank0_with_plans(const cplab_scenario *s, const char *name, char *path, int64_t *tokens) {
  cplab_diag d = {0};
  snprintf(path, 256, "%s/%s.r0000.h5", dir, name);
  cplab_trace_writer *w = NULL;
  assert_int_equal(cplab_trace_create(path, s, 0, &prov, &w, &d), 0);
  for (size_t st = 0; st < s->num_steps; st++) {
    cplab_step_input in = {&s->steps[st], st, s->seed, &s->par, &s->model, cplab_layout_find("vllm")};
    cplab_rank_plan *p = NULL;
    assert_int_equal(cplab_rank_plan_derive(&in, 0, 0, &p, &d), 0);
    assert_int_equal(cplab_trace_write_plan(w, st, p, &d), 0);
    if (tokens) tokens[st] = p->split.num_tokens;
    cplab_rank_plan_free(p);
  }
  return w;
}

/* Commit w (at path) and open the file, which must validate. */
static cplab_trace *commit_valid(cplab_trace_writer *w, const char *path) {
  cplab_diag d = {0};
  cplab_trace *t = NULL;
  assert_int_equal(cplab_trace_commit(w, &d), 0);
  assert_int_equal(cplab_trace_open(path, &t, &d), 0);
  if (cplab_trace_validate(t, &d)) fail_msg("validate: %s", d.msg);
  return t;
}

/* Layer tensors and events: written, validated, read back equal; shapes the
 * schema forbids are refused by the writer or rejected by the reader. */
static void test_tensors_and_events(void **state) {
  (void)state;
  cplab_scenario *s = load("smoke");
  char path[256];
  int64_t tokens[3];
  assert_true(s->num_steps <= 3);
  cplab_trace_writer *w = rank0_with_plans(s, "tensors", path, tokens);
  cplab_diag d = {0};
  enum { SLOTS = 300, K = 16 };
  uint8_t *kv = malloc(SLOTS * 656);
  for (int i = 0; i < SLOTS * 656; i++) kv[i] = (uint8_t)(i * 131 + 7);
  /* Two sampled rows (local tokens 0 and 5) carry the per-row tensors. */
  int64_t sampled[2] = {0, 5};
  int32_t *topk = malloc((size_t)tokens[1] * K * sizeof *topk);
  for (int64_t i = 0; i < tokens[1] * K; i++) topk[i] = (int32_t)(i % 37) - 1;
  float lse[2 * 64];
  for (int i = 0; i < 128; i++) lse[i] = (float)i * 0.25f - 3.0f;
  uint64_t kv_dims[2] = {SLOTS, 656}, topk_dims[2] = {2, K}, lse_dims[2] = {2, 64}, s_dims[1] = {2};
  assert_int_equal(cplab_trace_write_tensor(w, 1, 0, CPLAB_TT_KV_CACHE, kv_dims, kv, 0, &d), 0);
  assert_int_equal(cplab_trace_write_tensor(w, 1, 1, CPLAB_TT_KV_CACHE, kv_dims, kv, 1, &d), 0);
  assert_int_equal(cplab_trace_write_tensor(w, 1, 0, CPLAB_TT_SAMPLED_TOKENS, s_dims, sampled, 1, &d), 0);
  assert_int_equal(cplab_trace_write_tensor(w, 1, 0, CPLAB_TT_TOPK, topk_dims, topk, 1, &d), 0);
  assert_int_equal(cplab_trace_write_tensor(w, 1, 0, CPLAB_TT_ATTN_LSE, lse_dims, lse, 1, &d), 0);
  /* Row 0's topk starts with its only -1, row 1 has none. */
  int32_t valid[2] = {K - 1, K};
  assert_int_equal(cplab_trace_write_tensor(w, 1, 0, CPLAB_TT_TOPK_VALID, s_dims, valid, 1, &d), 0);
  uint64_t bad[2] = {SLOTS, 600};
  assert_int_equal(cplab_trace_write_tensor(w, 1, 0, CPLAB_TT_KV_CACHE, bad, kv, 0, &d), CPLAB_EINVAL);
  cplab_diag_clear(&d);
  cplab_trace_event ev[2] = {{0, 0, 3, 100, 250, 4096}, {1, -1, 12, 300, 300, 0}};
  assert_int_equal(cplab_trace_write_events(w, ev, 2, &d), 0);
  cplab_trace *t = commit_valid(w, path);
  uint64_t dims[3];
  void *back = NULL;
  for (int layer = 0; layer < 2; layer++) {
    assert_int_equal(cplab_trace_read_tensor(t, 1, layer, CPLAB_TT_KV_CACHE, dims, &back, &d), 0);
    assert_true(dims[0] == SLOTS && dims[1] == 656);
    assert_memory_equal(back, kv, SLOTS * 656);
    free(back);
  }
  assert_int_equal(cplab_trace_read_tensor(t, 1, 0, CPLAB_TT_TOPK, dims, &back, &d), 0);
  assert_true(dims[0] == 2 && dims[1] == K);
  assert_memory_equal(back, topk, 2 * K * sizeof *topk);
  free(back);
  assert_int_equal(cplab_trace_read_tensor(t, 1, 0, CPLAB_TT_TOPK_VALID, dims, &back, &d), 0);
  assert_true(dims[0] == 2);
  assert_memory_equal(back, valid, sizeof valid);
  free(back);
  assert_int_equal(cplab_trace_read_tensor(t, 1, 0, CPLAB_TT_ATTN_OUT, dims, &back, &d), CPLAB_ENOTFOUND);
  cplab_diag_clear(&d);
  cplab_trace_close(t);
  /* A valid count that disagrees with its topk, and a negative one. */
  int32_t miscount[2] = {K - 1, K - 2}, negative[2] = {-1, K};
  hsize_t two_rows[1] = {2};
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  replace_dataset(f, "steps/000001/layers/000/topk_valid", H5T_NATIVE_INT32, 1, two_rows, miscount);
  H5Fclose(f);
  expect_invalid(path, "topk_valid of row 1 is 14, its topk holds 16 valid entries");
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(f, "steps/000001/layers/000/topk", H5P_DEFAULT); /* without topk, only the sign is checked */
  replace_dataset(f, "steps/000001/layers/000/topk_valid", H5T_NATIVE_INT32, 1, two_rows, negative);
  H5Fclose(f);
  expect_invalid(path, "topk_valid of row 0 is negative (-1)");
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(f, "steps/000001/layers/000/topk_valid", H5P_DEFAULT);
  H5Fclose(f);
  /* A topk with the wrong number of rows, and an unknown tensor. */
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hsize_t wrong[2] = {3, K};
  replace_dataset(f, "steps/000001/layers/000/topk", H5T_NATIVE_INT32, 2, wrong, topk);
  H5Fclose(f);
  assert_int_equal(cplab_trace_open(path, &t, &d), 0);
  assert_int_equal(cplab_trace_validate(t, &d), CPLAB_ESCHEMA);
  if (!strstr(d.msg, "tensor 'topk' must have a row per sampled token")) fail_msg("got '%s'", d.msg);
  cplab_trace_close(t);
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hsize_t right[2] = {2, K};
  replace_dataset(f, "steps/000001/layers/000/topk", H5T_NATIVE_INT32, 2, right, topk);
  replace_dataset(f, "steps/000001/layers/001/mystery", H5T_NATIVE_INT32, 2, right, topk);
  H5Fclose(f);
  cplab_diag_clear(&d);
  assert_int_equal(cplab_trace_open(path, &t, &d), 0);
  assert_int_equal(cplab_trace_validate(t, &d), CPLAB_ESCHEMA);
  assert_non_null(strstr(d.msg, "unknown tensor 'mystery'"));
  cplab_trace_close(t);
  /* A sampled token outside the rank's local tokens fails validation (it once
   * set the message but let validate return 0). */
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(f, "steps/000001/layers/001/mystery", H5P_DEFAULT);
  int64_t far[2] = {0, 1 << 20};
  hsize_t two[1] = {2};
  replace_dataset(f, "steps/000001/layers/000/sampled_tokens", H5T_NATIVE_INT64, 1, two, far);
  H5Fclose(f);
  cplab_diag_clear(&d);
  assert_int_equal(cplab_trace_open(path, &t, &d), 0);
  assert_int_equal(cplab_trace_validate(t, &d), CPLAB_ESCHEMA);
  if (!strstr(d.msg, "is not a local token")) fail_msg("got '%s'", d.msg);
  cplab_trace_close(t);
  free(kv);
  free(topk);
  cplab_scenario_free(s);
}

/* Schema 1.2: a layer's decode partials (smoke: TP1/PCP2/DCP2, one head
 * block) go through write_rows, validate and read back; a pair split, widths
 * that disagree or a width other than G·heads are rejected. */
static void test_decode_partials(void **state) {
  (void)state;
  cplab_scenario *s = load("smoke");
  char path[256];
  cplab_trace_writer *w = rank0_with_plans(s, "partials", path, NULL);
  cplab_diag d = {0};
  enum { H = 64, N = 2, V = 512 };
  assert_int_equal(cplab_dcp_partial_blocks(&s->par), 1);
  int64_t tokens[N] = {0, 1};
  static float out[N * H * V], lse[N * H], pout[N * H * V], plse[N * H];
  for (int i = 0; i < N * H * V; i++) out[i] = 0.001f * (float)(i % 997), pout[i] = i < H * V ? 0.5f : NAN;
  for (int i = 0; i < N * H; i++) lse[i] = 2.5f, plse[i] = i < H ? 1.75f : NAN;
  cplab_trace_rows rows = {.layer = 0, .rows = N, .heads = H, .tokens = tokens, .out = out, .lse = lse,
                           .partial_blocks = 0, .partial_out = pout, .partial_lse = plse};
  assert_int_equal(cplab_trace_write_rows(w, 1, &rows, &d), CPLAB_EINVAL);
  assert_non_null(strstr(d.msg, "head block count"));
  cplab_diag_clear(&d);
  rows.partial_blocks = 1;
  if (cplab_trace_write_rows(w, 1, &rows, &d)) fail_msg("write_rows: %s", d.msg);
  cplab_trace *t = commit_valid(w, path);
  uint64_t dims[3];
  void *back = NULL;
  assert_int_equal(cplab_trace_read_tensor(t, 1, 0, CPLAB_TT_ATTN_PARTIAL_OUT, dims, &back, &d), 0);
  assert_true(dims[0] == N && dims[1] == H && dims[2] == V);
  assert_memory_equal(back, pout, sizeof pout);
  free(back);
  assert_int_equal(cplab_trace_read_tensor(t, 1, 0, CPLAB_TT_ATTN_PARTIAL_LSE, dims, &back, &d), 0);
  assert_true(dims[0] == N && dims[1] == H);
  assert_memory_equal(back, plse, sizeof plse);
  free(back);
  cplab_trace_close(t);
  assert_int_equal(cplab_trace_tensor_since_minor(CPLAB_TT_ATTN_PARTIAL_OUT), 2);
  const char *layer = "steps/000001/layers/000";
  char name[96];
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT); /* twice the heads in both: not G·heads (G = 1) */
  hsize_t wide[3] = {N, 2 * H, V}, wide_lse[2] = {N, 2 * H}, narrow_lse[2] = {N, H / 2};
  float *big = calloc((size_t)N * 2 * H * V, sizeof *big);
  snprintf(name, sizeof name, "%s/attn_partial_out", layer);
  replace_dataset(f, name, H5T_NATIVE_FLOAT, 3, wide, big);
  snprintf(name, sizeof name, "%s/attn_partial_lse", layer);
  replace_dataset(f, name, H5T_NATIVE_FLOAT, 2, wide_lse, big);
  H5Fclose(f);
  expect_invalid(path, "attn_partial_out has 128 heads, 1 block(s) of attn_out's 64 expected");
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  replace_dataset(f, name, H5T_NATIVE_FLOAT, 2, narrow_lse, big);
  H5Fclose(f);
  expect_invalid(path, "attn_partial_out has 128 heads, attn_partial_lse 32");
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(f, name, H5P_DEFAULT);
  H5Fclose(f);
  expect_invalid(path, "attn_partial_out and attn_partial_lse must be stored together");
  free(big);
  cplab_scenario_free(s);
}

/* ---- malformed files ------------------------------------------------------- */
static void copy_file(const char *from, const char *to) {
  size_t n;
  char *buf = slurp(from, &n);
  FILE *f = fopen(to, "wb");
  assert_int_equal(fwrite(buf, 1, n, f), n);
  fclose(f);
  free(buf);
}

typedef void (*mutation)(hid_t file);

static void set_str_attr(hid_t obj, const char *name, const char *v) {
  H5Adelete(obj, name);
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(t, strlen(v));
  hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, t, v);
  H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
}

static void replace_dataset(hid_t file, const char *path, hid_t type, int rank, const hsize_t *dims, const void *data) {
  H5Ldelete(file, path, H5P_DEFAULT);
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  hid_t ds = H5Dcreate2(file, path, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  H5Dclose(ds);
  H5Sclose(sp);
}

static void m_future_major(hid_t f) { set_str_attr(f, "cplab_schema", "2.0.0"); }
static void m_missing_dataset(hid_t f) { H5Ldelete(f, "steps/000000/seq_len", H5P_DEFAULT); }
static void m_missing_attr(hid_t f) { H5Adelete(f, "world_size"); }
static void m_missing_step(hid_t f) { H5Ldelete(f, "steps/000001", H5P_DEFAULT); }
static void m_rows_float(hid_t f) {
  double v[20] = {0};
  hsize_t dims[2] = {2, 10};
  replace_dataset(f, "steps/000000/rows", H5T_NATIVE_DOUBLE, 2, dims, v);
}
static void m_rows_shape(hid_t f) {
  int64_t v[18] = {0};
  hsize_t dims[2] = {2, 9};
  replace_dataset(f, "steps/000000/rows", H5T_NATIVE_INT64, 2, dims, v);
}
static void m_seq_len_2d(hid_t f) {
  int64_t v[4] = {10, 3, 0, 0};
  hsize_t dims[2] = {2, 2};
  replace_dataset(f, "steps/000000/seq_len", H5T_NATIVE_INT64, 2, dims, v);
}
static void m_rows_bad_request(hid_t f) {
  int64_t v[30] = {999, 1, 0, 0, 0, 3, 0, 3, 2, 0};
  hsize_t dims[2] = {1, 10};
  replace_dataset(f, "steps/000000/rows", H5T_NATIVE_INT64, 2, dims, v);
}
static void m_collective_kind(hid_t f) {
  int64_t v[5] = {7, 0, 0, 10, 0};
  hsize_t dims[2] = {1, 5};
  replace_dataset(f, "steps/000000/collectives", H5T_NATIVE_INT64, 2, dims, v);
}
static void m_negative_block(hid_t f) {
  int32_t v[64];
  for (int i = 0; i < 64; i++) v[i] = -3;
  hsize_t dims[2] = {2, 32};
  replace_dataset(f, "steps/000000/block_table", H5T_NATIVE_INT32, 2, dims, v);
}
static void set_i32_attr(hid_t obj, const char *name, int32_t v) {
  H5Adelete(obj, name);
  hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(obj, name, H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT32, &v);
  H5Aclose(a);
  H5Sclose(sp);
}
static void set_i32_attr_at(hid_t f, const char *group, const char *name, int32_t v) {
  hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
  set_i32_attr(g, name, v);
  H5Gclose(g);
}
static void m_world_mismatch(hid_t f) { set_i32_attr(f, "world_size", 4); }
/* good.r0001.h5 is smoke's rank 1: TP1/PCP2/DCP2, dcp_rank 1, DCP group {0, 1}. */
static void m_groups_dcp_rank(hid_t f) { set_i32_attr_at(f, "groups", "dcp_rank", 0); }
static void m_groups_members(hid_t f) {
  int32_t v[2] = {1, 0};
  hsize_t dims[1] = {2};
  replace_dataset(f, "groups/dcp_members", H5T_NATIVE_INT32, 1, dims, v);
}
static void m_groups_size(hid_t f) {
  int32_t v[3] = {0, 1, 1};
  hsize_t dims[1] = {3};
  replace_dataset(f, "groups/pcp_members", H5T_NATIVE_INT32, 1, dims, v);
}
static void m_groups_missing_list(hid_t f) { H5Ldelete(f, "groups/tp_members", H5P_DEFAULT); }
static void m_spec_tokens_disagree(hid_t f) { set_i32_attr_at(f, "config", "num_spec_tokens", 3); }
static void m_spec_tokens_range(hid_t f) { set_i32_attr_at(f, "config", "num_spec_tokens", 9); }

/* seq_len as a chunked dataset whose (unlimited) chunks claim 128 MiB. */
static void m_huge_chunks(hid_t f) {
  int64_t v[2] = {10, 3};
  hsize_t dims[1] = {2}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {(hsize_t)1 << 24};
  H5Ldelete(f, "steps/000000/seq_len", H5P_DEFAULT);
  hid_t sp = H5Screate_simple(1, dims, maxdims), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, chunk);
  hid_t ds = H5Dcreate2(f, "steps/000000/seq_len", H5T_NATIVE_INT64, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(sp);
}

static void test_malformed_rejected(void **state) {
  (void)state;
  cplab_scenario *s = load("smoke");
  write_run(s, "good", NULL);
  cplab_scenario_free(s);
  char good[256];
  snprintf(good, sizeof good, "%s/good.r0001.h5", dir);
  struct {
    const char *name;
    mutation m;
    int code;
    const char *fragment;
  } cases[] = {
      {"future major version", m_future_major, CPLAB_EUNSUPPORTED, "schema 2.0.0 is not readable"},
      {"missing dataset", m_missing_dataset, CPLAB_ESCHEMA, "missing dataset 'seq_len'"},
      {"missing attribute", m_missing_attr, CPLAB_ESCHEMA, "missing attribute 'world_size'"},
      {"missing step", m_missing_step, CPLAB_ESCHEMA, "steps/000001: missing step group"},
      {"wrong type", m_rows_float, CPLAB_ESCHEMA, "dataset 'rows' must hold int64 values"},
      {"wrong shape", m_rows_shape, CPLAB_ESCHEMA, "table 'rows' must have 10 columns, has 9"},
      {"wrong rank", m_seq_len_2d, CPLAB_ESCHEMA, "dataset 'seq_len' must have 1 dimension, has 2"},
      {"index out of range", m_rows_bad_request, CPLAB_ESCHEMA, "row 0 is inconsistent"},
      {"unknown enum", m_collective_kind, CPLAB_ESCHEMA, "collective 0 has an unknown kind"},
      {"negative block id", m_negative_block, CPLAB_ESCHEMA, "negative block id"},
      {"world disagrees with config", m_world_mismatch, CPLAB_ESCHEMA, "world_size 4 disagrees with /config"},
      {"chunks of 128 MiB", m_huge_chunks, CPLAB_ESCHEMA, "dataset 'seq_len' claims chunks over 67108864 bytes"},
      {"groups: another dcp_rank", m_groups_dcp_rank, CPLAB_ESCHEMA,
       "groups: dcp_rank is 0, the layout's numbering (SCHEMA.md \"/groups\") gives 1"},
      {"groups: members out of order", m_groups_members, CPLAB_ESCHEMA,
       "dcp_members[0] is 1, the layout's numbering (SCHEMA.md \"/groups\") gives 0"},
      {"groups: a list of the wrong size", m_groups_size, CPLAB_ESCHEMA,
       "dataset 'pcp_members' has 3 elements, expected 2"},
      {"groups: a list missing", m_groups_missing_list, CPLAB_ESCHEMA, "missing dataset 'tp_members'"},
      {"num_spec_tokens disagrees", m_spec_tokens_disagree, CPLAB_ESCHEMA,
       "num_spec_tokens 3 disagrees with scenario_json's 0"},
      {"num_spec_tokens out of range", m_spec_tokens_range, CPLAB_ESCHEMA, "num_spec_tokens 9 out of range (0..7)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, "%s/bad%zu.h5", dir, i);
    copy_file(good, path);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    cases[i].m(f);
    H5Fclose(f);
    cplab_trace *t = NULL;
    cplab_diag d = {0};
    int rc = cplab_trace_open(path, &t, &d);
    if (!rc) rc = cplab_trace_validate(t, &d);
    cplab_trace_close(t);
    if (rc != cases[i].code || !strstr(d.msg, cases[i].fragment))
      fail_msg("%s: got %s '%s', expected %s with '%s'", cases[i].name, cplab_err_name(rc), d.msg,
               cplab_err_name(cases[i].code), cases[i].fragment);
  }
  /* A newer minor version is read, with a warning. */
  char path[256];
  snprintf(path, sizeof path, "%s/minor.h5", dir);
  copy_file(good, path);
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  set_str_attr(f, "cplab_schema", "1.7.0");
  H5Fclose(f);
  cplab_trace *t = NULL;
  cplab_diag d = {0};
  assert_int_equal(cplab_trace_open(path, &t, &d), 0);
  assert_non_null(strstr(cplab_trace_get_info(t)->warning, "newer"));
  assert_int_equal(cplab_trace_validate(t, &d), 0);
  cplab_trace_close(t);
  /* Files without what 1.1 added (/groups, num_spec_tokens) are valid. */
  snprintf(path, sizeof path, "%s/old.h5", dir);
  copy_file(good, path);
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  set_str_attr(f, "cplab_schema", "1.0.0");
  H5Ldelete(f, "groups", H5P_DEFAULT);
  hid_t cfg = H5Gopen2(f, "config", H5P_DEFAULT);
  H5Adelete(cfg, "num_spec_tokens");
  H5Gclose(cfg);
  H5Fclose(f);
  assert_int_equal(cplab_trace_open(path, &t, &d), 0);
  if (cplab_trace_validate(t, &d)) fail_msg("a 1.0 file: %s", d.msg);
  assert_int_equal(cplab_trace_schema_minor(t), 0);
  cplab_trace_groups g;
  assert_int_equal(cplab_trace_read_groups(t, &g, &d), CPLAB_ENOTFOUND);
  cplab_diag_clear(&d);
  cplab_trace_close(t);
  /* A missing rank link in the run file. */
  char run[256];
  snprintf(run, sizeof run, "%s/good.h5", dir);
  f = H5Fopen(run, H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(f, "ranks/r0001", H5P_DEFAULT);
  H5Fclose(f);
  assert_int_equal(cplab_trace_open(run, &t, &d), 0);
  assert_int_equal(cplab_trace_validate(t, &d), CPLAB_ESCHEMA);
  assert_non_null(strstr(d.msg, "missing link /ranks/r0001"));
  cplab_trace_close(t);
}

/* Truncations and random byte flips of a valid rank file, opened from
 * memory: every outcome is a clean result, and truncations always fail. */
static void test_truncated_and_bitflipped(void **state) {
  (void)state;
  char good[256];
  snprintf(good, sizeof good, "%s/good.r0000.h5", dir);
  size_t n;
  char *buf = slurp(good, &n);
  char *copy = malloc(n);
  for (size_t cut = 0; cut < n; cut += n / 23 + 1) {
    cplab_trace *t = NULL;
    cplab_diag d = {0};
    int rc = cplab_trace_open_image(buf, cut, &t, &d);
    if (!rc) rc = cplab_trace_validate(t, &d);
    cplab_trace_close(t);
    if (rc == 0) fail_msg("a file truncated to %zu of %zu bytes validated", cut, n);
    assert_true(d.msg[0] != '\0');
  }
  prop_run pr;
  prop_begin(&pr);
  long rejected = 0, accepted = 0;
  for (long trial = 0; trial < 400; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    memcpy(copy, buf, n);
    int flips = (int)prop_int(&pr, 1, 4);
    for (int k = 0; k < flips; k++) copy[prop_int(&pr, 0, (long)n - 1)] ^= (char)(1 << prop_int(&pr, 0, 7));
    cplab_trace *t = NULL;
    cplab_diag d = {0};
    int rc = cplab_trace_open_image(copy, n, &t, &d);
    if (!rc) rc = cplab_trace_validate(t, &d);
    cplab_trace_close(t);
    if (rc) {
      rejected++;
      prop_check(&pr, trial, d.msg[0] != '\0', "rejected without a message");
    } else {
      accepted++; /* a flip in unused bytes or in a value that stays in range */
    }
  }
  prop_end(&pr);
  print_message("# bit flips: %ld rejected, %ld harmless\n", rejected, accepted);
  free(copy);
  free(buf);
}

/* A writer killed before it commits leaves the file at the final name as it
 * was (here an earlier trace), and what it left under the temporary name does
 * not validate. */
static void test_killed_writer(void **state) {
  (void)state;
  cplab_scenario *s = load("mixed");
  char path[256], good[256];
  snprintf(path, sizeof path, "%s/killed.r0000.h5", dir);
  snprintf(good, sizeof good, "%s/good.r0000.h5", dir);
  copy_file(good, path); /* an earlier trace at the final name must survive intact */
  size_t before_len;
  char *before = slurp(path, &before_len);
  pid_t pid = fork();
  if (pid == 0) {
    cplab_trace_writer *w = NULL;
    cplab_diag d = {0};
    if (cplab_trace_create(path, s, 0, &prov, &w, &d)) _exit(3);
    for (size_t st = 0; st < 5; st++) {
      cplab_step_input in = {&s->steps[st], st, s->seed, &s->par, &s->model, cplab_layout_find("vllm")};
      cplab_rank_plan *p = NULL;
      if (cplab_rank_plan_derive(&in, 0, CPLAB_PLAN_TOKEN_MAPS, &p, &d) || cplab_trace_write_plan(w, st, p, &d)) _exit(4);
      cplab_rank_plan_free(p);
    }
    raise(SIGKILL);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFSIGNALED(status));
  size_t after_len;
  char *after = slurp(path, &after_len);
  assert_int_equal(after_len, before_len);
  assert_memory_equal(after, before, before_len);
  free(before);
  free(after);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls %s/killed.r0000.h5.tmp.* > %s/leftover 2>/dev/null", dir, dir);
  assert_int_equal(system(cmd), 0);
  char list[256], leftover[256] = "";
  snprintf(list, sizeof list, "%s/leftover", dir);
  FILE *f = fopen(list, "r");
  assert_non_null(fgets(leftover, sizeof leftover, f));
  fclose(f);
  leftover[strcspn(leftover, "\n")] = '\0';
  cplab_trace *t = NULL;
  cplab_diag d = {0};
  int rc = cplab_trace_open(leftover, &t, &d);
  if (!rc) rc = cplab_trace_validate(t, &d);
  cplab_trace_close(t);
  if (rc == 0) fail_msg("the killed writer's temporary file validated");
  cplab_scenario_free(s);
}

/* SCHEMA.md's table of layer tensors states the facts of the tensor table
 * (cplab_trace_tensor_info_of) for readers: every tensor once, with the
 * table's type, rank, fixed last dimension, per-row first dimension (r) and
 * the minor version that introduced it ("since 1.N"). */
static void check_schema_row(char *line, int *seen) {
  char name[64], type[32], shape[128];
  if (sscanf(line, "| `%63[^`]` | %31s [%127[^]]] |", name, type, shape) != 3) fail_msg("unparsed row: %s", line);
  int t = cplab_trace_tensor_find(name);
  if (t < 0) fail_msg("SCHEMA.md lists '%s', which the tensor table lacks", name);
  const cplab_trace_tensor_info *info = cplab_trace_tensor_info_of((cplab_trace_tensor)t);
  seen[t]++;
  if (strcmp(type, cplab_trace_dtype_name(info->dtype)) != 0)
    fail_msg("%s: SCHEMA.md says %s, the table %s", name, type, cplab_trace_dtype_name(info->dtype));
  char *dims[4] = {0}, *save = NULL;
  int rank = 0;
  for (char *tok = strtok_r(shape, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
    if (rank == 4) fail_msg("%s: too many dimensions in SCHEMA.md", name);
    dims[rank++] = tok;
  }
  if (rank != info->rank) fail_msg("%s: SCHEMA.md has rank %d, the table %d", name, rank, info->rank);
  char *end;
  unsigned long long last = strtoull(dims[rank - 1], &end, 10);
  if ((*end ? 0 : last) != info->last)
    fail_msg("%s: last dimension '%s' in SCHEMA.md, %llu in the table", name, dims[rank - 1],
             (unsigned long long)info->last);
  /* sampled_tokens is the row list itself: r is its length by definition,
   * so the table has nothing to check it against. */
  int defines_rows = t == CPLAB_TT_SAMPLED_TOKENS;
  if ((strcmp(dims[0], "r") == 0) != (info->per_row != 0 || defines_rows))
    fail_msg("%s: first dimension '%s' in SCHEMA.md, per_row %d in the table", name, dims[0], info->per_row);
  const char *since = strstr(line, "| since 1.");
  int minor = since ? atoi(since + strlen("| since 1.")) : 0;
  if (minor != info->since_minor) fail_msg("%s: since 1.%d in SCHEMA.md, 1.%d in the table", name, minor, info->since_minor);
}

static void test_schema_doc_matches_table(void **state) {
  (void)state;
  const char *top = getenv("top_srcdir");
  char path[512], line[4096];
  snprintf(path, sizeof path, "%s/traces/SCHEMA.md", top ? top : "..");
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s (set top_srcdir)", path);
  int seen[CPLAB_TT_COUNT] = {0}, in_section = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "## ", 3) == 0 || strncmp(line, "### ", 4) == 0)
      in_section = strncmp(line, "## Layer tensors", 16) == 0;
    else if (in_section && strncmp(line, "| `", 3) == 0)
      check_schema_row(line, seen);
  }
  fclose(f);
  for (int t = 0; t < CPLAB_TT_COUNT; t++)
    if (seen[t] != 1) fail_msg("SCHEMA.md lists '%s' %d times", cplab_trace_tensor_name((cplab_trace_tensor)t), seen[t]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_builtins), cmocka_unit_test(test_round_trip_random),
      cmocka_unit_test(test_byte_identical),      cmocka_unit_test(test_tensors_and_events),
      cmocka_unit_test(test_groups_and_spec_tokens), cmocka_unit_test(test_decode_partials),
      cmocka_unit_test(test_malformed_rejected), cmocka_unit_test(test_schema_doc_matches_table),
      cmocka_unit_test(test_truncated_and_bitflipped), cmocka_unit_test(test_killed_writer),
  };
  return cmocka_run_group_tests_name("trace", tests, setup, teardown);
}
