/* cplab-model's parts (model/): the cost table's interpolation and its
 * refusals, the shape rules against kernels.json's own FLOP counts, the
 * link model's ring factors, the line fit, input validation (a bad table,
 * a missing field, a missing shape: each a clear error), and the step
 * model's structure (layers, graph savings, one rank without collectives,
 * the plan-cost split it reads). Properties are seeded (testutil.h). */
#include <math.h>
#include <unistd.h>

#include "calib.h"
#include "cplab/kvformat.h"
#include "dryrun.h"
#include "link.h"
#include "matrix.h"
#include "plancost.h"
#include "step.h"
#include "table.h"
#include "testutil.h"

/* cmocka 1.1 has no double comparison: |a - b| <= eps, printing both on failure. */
#define assert_near(a, b, eps)                                                                   \
  do {                                                                                           \
    double a_ = (double)(a), b_ = (double)(b);                                                   \
    if (!(fabs(a_ - b_) <= (eps))) print_error("%s = %.17g, expected %.17g\n", #a, a_, b_);      \
    assert_true(fabs(a_ - b_) <= (eps));                                                         \
  } while (0)

#ifndef CPLAB_SRCDIR
#define CPLAB_SRCDIR "."
#endif

static cplab_model_table *new_table(void) {
  cplab_model_table *t = NULL;
  cplab_diag d = {0};
  assert_int_equal(cplab_model_table_alloc(&t, &d), 0);
  return t;
}

static void add(cplab_model_table *t, cplab_model_kernel k, double s, double w, double us) {
  cplab_diag d = {0};
  assert_int_equal(cplab_model_table_add(t, k, s, w, us, 0, &d), 0);
}

static double at(const cplab_model_table *t, cplab_model_kernel k, double s, double w, int ext, int *extrapolated) {
  cplab_model_lookup l;
  cplab_diag d = {0};
  int rc = cplab_model_table_time(t, k, s, w, ext, &l, &d);
  if (rc) print_error("%s\n", d.msg);
  assert_int_equal(rc, 0);
  if (extrapolated) *extrapolated = l.extrapolated;
  return l.time_us;
}

/* The documented rules on a small table. */
static void test_interpolation(void **state) {
  (void)state;
  cplab_model_table *t = new_table();
  add(t, CPLAB_MK_ATTN_PREFILL, 64, 100, 10);
  add(t, CPLAB_MK_ATTN_PREFILL, 64, 300, 30);
  add(t, CPLAB_MK_ATTN_PREFILL, 64, 300, 50); /* equal work: averaged to 40 */
  add(t, CPLAB_MK_ATTN_PREFILL, 128, 100, 20);
  add(t, CPLAB_MK_ATTN_PREFILL, 128, 300, 60);
  int e = -1;
  assert_near(at(t, CPLAB_MK_ATTN_PREFILL, 64, 100, 0, &e), 10, 1e-12);
  assert_int_equal(e, 0);
  assert_near(at(t, CPLAB_MK_ATTN_PREFILL, 64, 300, 0, NULL), 40, 1e-12);
  assert_near(at(t, CPLAB_MK_ATTN_PREFILL, 64, 200, 0, NULL), 25, 1e-12); /* piecewise-linear */
  /* Between series: linear in the series at the same work. */
  assert_near(at(t, CPLAB_MK_ATTN_PREFILL, 96, 200, 0, NULL), (25 + 40) / 2.0, 1e-12);
  /* Work 0 costs nothing, even for a kernel without points. */
  assert_near(at(t, CPLAB_MK_GATHER, 0, 0, 0, NULL), 0, 0);
  /* Outside: refused, naming kernel, series and work. */
  cplab_model_lookup l;
  cplab_diag d = {0};
  assert_int_equal(cplab_model_table_time(t, CPLAB_MK_ATTN_PREFILL, 64, 600, 0, &l, &d), CPLAB_ERANGE);
  assert_non_null(strstr(d.msg, "sparse_mla_prefill"));
  assert_non_null(strstr(d.msg, "series 64"));
  assert_non_null(strstr(d.msg, "work 600"));
  assert_non_null(strstr(d.msg, "--extrapolate"));
  cplab_diag_clear(&d);
  assert_int_equal(cplab_model_table_time(t, CPLAB_MK_ATTN_PREFILL, 32, 200, 0, &l, &d), CPLAB_ERANGE);
  cplab_diag_clear(&d);
  assert_int_equal(cplab_model_table_time(t, CPLAB_MK_ATTN_PREFILL, 64, 50, 0, &l, &d), CPLAB_ERANGE);
  cplab_diag_clear(&d);
  assert_int_equal(cplab_model_table_time(t, CPLAB_MK_TOPK_MERGE, 2, 5, 1, &l, &d), CPLAB_ENOTFOUND);
  assert_non_null(strstr(d.msg, "topk_merge"));
  /* Extrapolated: above the range at the largest shape's rate, below at the smallest's but no
   * faster than the kernel's fastest launch, a series outside clamped to the nearest. */
  assert_near(at(t, CPLAB_MK_ATTN_PREFILL, 64, 600, 1, &e), 80, 1e-12);
  assert_int_equal(e, 1);
  assert_near(at(t, CPLAB_MK_ATTN_PREFILL, 64, 50, 1, &e), 10, 1e-12); /* floor: the fastest, 10 */
  assert_near(at(t, CPLAB_MK_ATTN_PREFILL, 128, 80, 1, &e), 16, 1e-12); /* rate 0.2 us a unit, above 10 */
  assert_near(at(t, CPLAB_MK_ATTN_PREFILL, 256, 300, 1, &e), 60, 1e-12);
  assert_int_equal(e, 1);
  /* Bad points are refused. */
  assert_int_equal(cplab_model_table_add(t, CPLAB_MK_GATHER, 0, 10, -1, 0, &d), CPLAB_ERANGE);
  assert_int_equal(cplab_model_table_add(t, CPLAB_MK_GATHER, 0, NAN, 1, 0, &d), CPLAB_ERANGE);
  cplab_model_table_free(t);
}

/* Properties over random tables: every measured work gives its (averaged)
 * time back; between two measured works the time lies between theirs and
 * is linear (the midpoint gives the mean); extrapolation above is
 * proportional to work. */
static void test_interpolation_properties(void **state) {
  (void)state;
  prop_run p;
  prop_begin(&p);
  for (long trial = 0; trial < 300; trial++) {
    if (!prop_trial(&p, trial)) continue;
    cplab_model_table *t = new_table();
    int n = (int)prop_int(&p, 1, 12);
    double w[12], us[12], x = 0;
    for (int i = 0; i < n; i++) {
      x += (double)prop_int(&p, 1, 1000);
      w[i] = x, us[i] = (double)prop_int(&p, 1, 100000) / 10.0;
      add(t, CPLAB_MK_TOPK_DECODE, 0, w[i], us[i]);
    }
    for (int i = 0; i < n; i++)
      prop_check(&p, trial, fabs(at(t, CPLAB_MK_TOPK_DECODE, 0, w[i], 0, NULL) - us[i]) < 1e-9 * us[i],
                 "point %d not returned", i);
    for (int i = 0; i + 1 < n; i++) {
      double mid = at(t, CPLAB_MK_TOPK_DECODE, 0, (w[i] + w[i + 1]) / 2, 0, NULL);
      prop_check(&p, trial, fabs(mid - (us[i] + us[i + 1]) / 2) < 1e-9 * (us[i] + us[i + 1]), "midpoint %d", i);
      double q = w[i] + (w[i + 1] - w[i]) * gsl_rng_uniform(p.rng), v = at(t, CPLAB_MK_TOPK_DECODE, 0, q, 0, NULL);
      prop_check(&p, trial, v >= fmin(us[i], us[i + 1]) - 1e-9 && v <= fmax(us[i], us[i + 1]) + 1e-9, "between %d", i);
    }
    double big = w[n - 1] * (1 + (double)prop_int(&p, 1, 50));
    prop_check(&p, trial, fabs(at(t, CPLAB_MK_TOPK_DECODE, 0, big, 1, NULL) - us[n - 1] * big / w[n - 1]) < 1e-6 * big,
               "extrapolation above");
    cplab_model_table_free(t);
  }
  prop_end(&p);
}

/* The shape rules reproduce the kernel bench's own FLOP counts (FlashMLA's
 * valid-entry count for attention, DeepGEMM's in-range pairs for logits). */
static void test_rules_against_kernels_json(void **state) {
  (void)state;
  cplab_model_table *t = new_table();
  cplab_diag d = {0};
  const char *files[] = {CPLAB_SRCDIR "/bench/results/2026-12-01-kernels-h200/kernels.json",
                         CPLAB_SRCDIR "/bench/results/2026-12-01-indexer-kernels-h200/kernels.json"};
  for (int f = 0; f < 2; f++) {
    int rc = cplab_model_table_load(t, files[f], &d);
    if (rc) print_error("%s\n", d.msg);
    assert_int_equal(rc, 0);
  }
  assert_true(t->copy_gbps > 4000 && t->copy_gbps < 4500);
  assert_string_equal(t->card, "NVIDIA H200");
  /* prefill-h8-4k: flop_valid 109539491840 = 2 * 1088 * 8 * work. */
  assert_near(at(t, CPLAB_MK_ATTN_PREFILL, 8, 109539491840.0 / (2 * 1088 * 8), 0, NULL), 2630.4800510406494, 1e-6);
  /* logits-h32-4k-causal-32k: pairs 4096 * 28672 + 4096 * 4097 / 2, its median 1465.44 us. */
  assert_near(at(t, CPLAB_MK_LOGITS_PREFILL, 32, 4096.0 * 28672 + 4096.0 * 4097 / 2, 0, NULL), 1465.4399752616882, 1e-6);
  /* dcp4-h64-b1-32k: 2048 / 4 valid entries. */
  assert_near(at(t, CPLAB_MK_ATTN_DECODE, 64, 512, 0, NULL), 25.439999997615814, 1e-9);
  /* dlogits-h64-b16-128k-dcp4: 16 * 32768 keys. */
  assert_near(at(t, CPLAB_MK_LOGITS_DECODE, 64, 16 * 32768.0, 0, NULL) > 0, 1, 0);
  assert_int_equal((int)t->num_sources, 2);
  cplab_model_table_free(t);
}

/* A file with text into a temporary path; returns the path (static buffer per slot). */
static const char *write_tmp(int slot, const char *text) {
  static char paths[4][64];
  snprintf(paths[slot], sizeof paths[slot], "/tmp/cplab-test-model-%d-%d.json", (int)getpid(), slot);
  FILE *f = fopen(paths[slot], "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return paths[slot];
}

static void expect_load_error(const char *text, int code, const char *needle1, const char *needle2) {
  cplab_model_table *t = new_table();
  cplab_diag d = {0};
  const char *path = write_tmp(0, text);
  int rc = cplab_model_table_load(t, path, &d);
  if (rc != code || !strstr(d.msg, needle1) || (needle2 && !strstr(d.msg, needle2)) || !strstr(d.msg, path))
    print_error("got %d '%s', wanted %d with '%s' and '%s'\n", rc, d.msg, code, needle1, needle2 ? needle2 : "");
  assert_int_equal(rc, code);
  assert_non_null(strstr(d.msg, needle1));
  if (needle2) assert_non_null(strstr(d.msg, needle2));
  assert_non_null(strstr(d.msg, path)); /* every message names the file */
  assert_int_equal((int)t->num_sources, 0); /* nothing of a bad file is kept */
  cplab_model_table_free(t);
  unlink(path);
}

static void test_bad_tables(void **state) {
  (void)state;
  expect_load_error("{\"entries\": [", CPLAB_ESYNTAX, ":1:", NULL);
  expect_load_error("[1, 2]", CPLAB_ESCHEMA, "object", NULL);
  expect_load_error("{\"entries\": []}", CPLAB_ESCHEMA, "cplab_model_table", NULL);
  expect_load_error("{\"cplab_model_table\": \"2.0.0\", \"entries\": []}", CPLAB_ESCHEMA, "2.0.0", NULL);
  expect_load_error("{\"cplab_model_table\": \"1.0.0\", \"entries\": [{\"kernel\": \"sparse_mla_prefill\", "
                    "\"series\": 64, \"work\": 10}]}",
                    CPLAB_ESCHEMA, "entries[0]", "time_us");
  expect_load_error("{\"cplab_model_table\": \"1.0.0\", \"entries\": [{\"kernel\": \"warp_drive\", \"work\": 1, "
                    "\"time_us\": 1}]}",
                    CPLAB_ESCHEMA, "warp_drive", NULL);
  expect_load_error("{\"cplab_model_table\": \"1.0.0\", \"entries\": [{\"kernel\": \"topk_decode\", \"work\": 1, "
                    "\"time_us\": -3}]}",
                    CPLAB_ERANGE, "time_us", NULL);
  expect_load_error("{\"cplab_model_table\": \"1.0.0\", \"entries\": [{\"kernel\": \"topk_decode\", \"work\": 1, "
                    "\"time_us\": 3, \"speed\": 9}]}",
                    CPLAB_ESCHEMA, "speed", NULL);
  /* A kernels.json entry missing a shape field names it; one missing its time too. */
  expect_load_error("{\"program\": \"cplab-kernel-bench\", \"entries\": [{\"kernel\": \"sparse_mla_prefill\", "
                    "\"s_q\": 4096, \"s_kv\": 4096, \"topk\": 2048, \"causal\": true, \"batch\": 1, \"median_us\": 5}]}",
                    CPLAB_ESCHEMA, "entries[0]", "heads");
  expect_load_error("{\"program\": \"cplab-kernel-bench\", \"entries\": [{\"kernel\": \"gather_upconvert\", "
                    "\"keys\": 8192}]}",
                    CPLAB_ESCHEMA, "entries[0]", "median_us");
  expect_load_error("{\"program\": \"cplab-kernel-bench\", \"entries\": [{\"kernel\": \"gather_upconvert\", "
                    "\"keys\": \"many\", \"median_us\": 3}]}",
                    CPLAB_ESCHEMA, "entries[0].keys", NULL);
  /* Only kernels the model does not use, or only failed cases: nothing to load. */
  expect_load_error("{\"program\": \"cplab-kernel-bench\", \"entries\": [{\"kernel\": \"gemm\", \"median_us\": 3}]}",
                    CPLAB_ESCHEMA, "no entry", NULL);
  expect_load_error("{\"program\": \"cplab-kernel-bench\", \"entries\": [{\"kernel\": \"gather_upconvert\", "
                    "\"keys\": 8, \"median_us\": 3, \"check\": {\"ok\": false}}]}",
                    CPLAB_ESCHEMA, "no entry", NULL);
  /* A good table file of the documented format, and a later file replacing a kernel. */
  cplab_model_table *t = new_table();
  cplab_diag d = {0};
  const char *a = write_tmp(1, "{\"cplab_model_table\": \"1.0.0\", \"card\": \"X\", \"copy_gbps\": 1000, \"entries\": ["
                               "{\"kernel\": \"topk_decode\", \"work\": 10, \"time_us\": 5},"
                               "{\"kernel\": \"gather_upconvert\", \"work\": 10, \"time_us\": 7, \"comment\": \"c\"}]}");
  const char *b = write_tmp(2, "{\"cplab_model_table\": \"1.0.0\", \"entries\": ["
                               "{\"kernel\": \"topk_decode\", \"work\": 20, \"time_us\": 6}]}");
  assert_int_equal(cplab_model_table_load(t, a, &d), 0);
  assert_int_equal(cplab_model_table_load(t, b, &d), 0);
  assert_int_equal((int)t->count[CPLAB_MK_TOPK_DECODE], 1);
  assert_int_equal((int)t->count[CPLAB_MK_GATHER], 1);
  assert_near(t->copy_gbps, 1000, 0);
  assert_near(at(t, CPLAB_MK_TOPK_DECODE, 0, 20, 0, NULL), 6, 0);
  cplab_model_table_free(t);
  unlink(a), unlink(b);
}

static void test_link(void **state) {
  (void)state;
  assert_near(cplab_model_coll_factor(CPLAB_COLL_ALL_GATHER, 1), 0, 0);
  assert_near(cplab_model_coll_factor(CPLAB_COLL_ALL_REDUCE, 1), 0, 0);
  assert_near(cplab_model_coll_factor(CPLAB_COLL_ALL_GATHER, 4), 0.75, 1e-15);
  assert_near(cplab_model_coll_factor(CPLAB_COLL_REDUCE_SCATTER, 8), 7.0 / 8, 1e-15);
  assert_near(cplab_model_coll_factor(CPLAB_COLL_ALL_REDUCE, 2), 1.0, 1e-15);
  assert_near(cplab_model_coll_bytes(CPLAB_COLL_ALL_GATHER, 4, 100, CPLAB_DT_BF16), 800, 0);
  assert_near(cplab_model_coll_bytes(CPLAB_COLL_ALL_REDUCE, 4, 100, CPLAB_DT_FP32), 400, 0);
  cplab_model_tier tier = {10, 100}; /* 100 GB/s = 1e5 B/us */
  assert_near(cplab_model_tier_us(&tier, CPLAB_COLL_ALL_REDUCE, 4, 1e6), 10 + 1e6 * 1.5 / 1e5, 1e-9);
  assert_near(cplab_model_tier_us(&tier, CPLAB_COLL_ALL_GATHER, 1, 1e9), 0, 0);
  /* Properties: AR moves twice what AG does; F < 1 for AG and RS and tends to it. */
  prop_run p;
  prop_begin(&p);
  for (long trial = 0; trial < 200; trial++) {
    if (!prop_trial(&p, trial)) continue;
    int n = (int)prop_int(&p, 2, 1024);
    double ag = cplab_model_coll_factor(CPLAB_COLL_ALL_GATHER, n), ar = cplab_model_coll_factor(CPLAB_COLL_ALL_REDUCE, n);
    prop_check(&p, trial, fabs(ar - 2 * ag) < 1e-15 && ag > 0 && ag < 1 &&
                              ag == cplab_model_coll_factor(CPLAB_COLL_REDUCE_SCATTER, n) &&
                              ag >= cplab_model_coll_factor(CPLAB_COLL_ALL_GATHER, n - 1),
               "factors at n = %d", n);
  }
  prop_end(&p);
  cplab_model_link l;
  cplab_diag d = {0};
  assert_int_equal(cplab_model_link_preset("h200", &l, &d), 0);
  assert_int_equal(l.gpus_per_node, 8);
  assert_int_equal(cplab_model_link_preset("tpu", &l, &d), CPLAB_ENOTFOUND);
  assert_non_null(strstr(d.msg, "tpu"));
  /* Calibration on the committed two-H200 gather bench: a plausible NVLink ring. */
  cplab_diag_clear(&d);
  assert_int_equal(cplab_model_link_preset("h200", &l, &d), 0);
  assert_int_equal(cplab_model_link_calibrate(CPLAB_SRCDIR "/bench/results/2026-11-29-gather-bench-h200x2-np2.json", &l, &d), 0);
  assert_true(l.intra.latency_us > 5 && l.intra.latency_us < 60);
  assert_true(l.intra.busbw_gbps > 150 && l.intra.busbw_gbps < 450);
  /* And on cplab-kernel-bench's kernels.json (--kernel gather_nccl): only the gather_nccl entries of op
   * nccl_allgather count. Two ranks, times on the line 20 us + S (n-1)/n / 300 GB/s. */
  const char *kb = write_tmp(2, "{\"program\": \"cplab-kernel-bench\", \"ranks\": 2, \"entries\": ["
                                "{\"kernel\": \"gather_nccl\", \"case\": \"a\", \"op\": \"nccl_allgather\", "
                                "\"total_bytes\": 1.2e6, \"median_us\": 22},"
                                "{\"kernel\": \"gather_nccl\", \"case\": \"a\", \"op\": \"executor_gather\", "
                                "\"total_bytes\": 1.2e6, \"median_us\": 99},"
                                "{\"kernel\": \"moe_paths\", \"case\": \"m\", \"op\": \"fast\", \"median_us\": 5},"
                                "{\"kernel\": \"gather_nccl\", \"case\": \"b\", \"op\": \"nccl_allgather\", "
                                "\"total_bytes\": 1.2e8, \"median_us\": 220}]}");
  cplab_diag_clear(&d);
  assert_int_equal(cplab_model_link_calibrate(kb, &l, &d), 0);
  assert_near(l.intra.latency_us, 20, 1e-9);
  assert_near(l.intra.busbw_gbps, 300, 1e-9);
  unlink(kb);
  /* Link files: a good one, and a missing field named. */
  const char *good = write_tmp(0, "{\"cplab_model_link\": \"1.0.0\", \"name\": \"n\", \"gpus_per_node\": 4, "
                                  "\"intra\": {\"latency_us\": 5, \"busbw_gbps\": 300}, "
                                  "\"inter\": {\"latency_us\": 9, \"busbw_gbps\": 40}}");
  assert_int_equal(cplab_model_link_load(good, &l, &d), 0);
  assert_int_equal(l.gpus_per_node, 4);
  assert_near(l.inter.busbw_gbps, 40, 0);
  const char *bad = write_tmp(1, "{\"cplab_model_link\": \"1.0.0\", \"gpus_per_node\": 4, "
                                 "\"intra\": {\"latency_us\": 5}, \"inter\": {\"latency_us\": 9, \"busbw_gbps\": 40}}");
  assert_int_equal(cplab_model_link_load(bad, &l, &d), CPLAB_ESCHEMA);
  assert_non_null(strstr(d.msg, "busbw_gbps"));
  assert_non_null(strstr(d.msg, bad));
  unlink(good), unlink(bad);
}

static void test_fit_line(void **state) {
  (void)state;
  double x[] = {1, 2, 3, 4}, y[] = {5, 7, 9, 11}, w[] = {1, 10, 0.1, 3}, a, b;
  cplab_diag d = {0};
  assert_int_equal(cplab_model_fit_line(x, y, NULL, 4, &a, &b, &d), 0);
  assert_near(a, 3, 1e-12);
  assert_near(b, 2, 1e-12);
  assert_int_equal(cplab_model_fit_line(x, y, w, 4, &a, &b, &d), 0); /* any weights recover an exact line */
  assert_near(a, 3, 1e-9);
  assert_near(b, 2, 1e-9);
  double same[] = {2, 2, 2};
  assert_int_equal(cplab_model_fit_line(same, y, NULL, 3, &a, &b, &d), CPLAB_EINVAL);
}

/* A table where every kernel costs 1 us per unit of work, for the step tests. */
static cplab_model_table *unit_table(void) {
  cplab_model_table *t = new_table();
  for (int k = 0; k < CPLAB_MK_COUNT; k++)
    for (double s = 0; s <= 256; s = s ? 2 * s : 1) add(t, (cplab_model_kernel)k, s, 1, 1), add(t, (cplab_model_kernel)k, s, 1e12, 1e12);
  t->copy_gbps = 4000;
  return t;
}

static cplab_scenario *scenario(const char *layout, cplab_bench_kind kind, int64_t tokens, int64_t batch,
                                cplab_graph_mode g) {
  cplab_bench_matrix m;
  cplab_bench_parallel l;
  cplab_diag d = {0};
  memset(&m, 0, sizeof m);
  snprintf(m.preset, sizeof m.preset, "glm-5");
  m.seed = 1, m.interleave = 1, m.block_size = 64;
  assert_int_equal(cplab_bench_parallel_parse(layout, &l, &d), 0);
  cplab_bench_workload w = {kind, tokens, batch, 0, kind == CPLAB_BENCH_DECODE ? 2 : 1};
  cplab_scenario *s = NULL;
  int rc = cplab_bench_scenario(&m, &l, &w, g, &s, &d);
  if (rc) print_error("%s\n", d.msg);
  assert_int_equal(rc, 0);
  return s;
}

static double predict(const cplab_scenario *s, const cplab_model_table *t, const cplab_model_link *link,
                      const cplab_model_params *pa, int layers, cplab_model_result *r) {
  cplab_model_inputs in = {t, link, t->copy_gbps, pa, layers, 0, 1, 1, 0, 0, 1, 1};
  cplab_diag d = {0};
  int rc = cplab_model_predict(s, &in, r, &d);
  if (rc) print_error("%s\n", d.msg);
  assert_int_equal(rc, 0);
  return r->step_ms;
}

static void test_step_structure(void **state) {
  (void)state;
  cplab_model_table *t = unit_table();
  cplab_model_params pa = {0};
  cplab_model_link link;
  cplab_diag d = {0};
  assert_int_equal(cplab_model_link_preset("h200", &link, &d), 0);
  cplab_model_result r1, r2, r;
  /* Layers multiply the per-layer part; the output gather (pcp) is paid once. */
  cplab_scenario *s = scenario("pcp4", CPLAB_BENCH_PREFILL, 4096, 1, CPLAB_GRAPH_NONE);
  double one = predict(s, t, &link, &pa, 1, &r1), ten = predict(s, t, &link, &pa, 10, &r2);
  assert_true(one > 0);
  assert_true(ten < 10 * one && ten > 9 * one); /* the output gather is once */
  double ph = 0;
  for (int k = 0; k < CPLAB_MODEL_PHASES; k++) ph += r1.phase_ms[k];
  assert_true(ph >= one * (1 - 1e-12)); /* a step is a sum of slowest segments: no more than the phases' sum */
  assert_true(r1.phase_ms[4] > 0);
  cplab_scenario_free(s);
  /* One rank: no collective costs anything over a link. */
  s = scenario("tp1", CPLAB_BENCH_DECODE, 4096, 1, CPLAB_GRAPH_NONE);
  predict(s, t, &link, &pa, 1, &r);
  assert_near(r.phase_ms[4], 0, 0);
  cplab_scenario_free(s);
  /* A graph mode's saving is taken once a layer; the plan says which mode a batch runs in. */
  pa.graph_saving_us[2][0] = 50;
  s = scenario("tp4", CPLAB_BENCH_DECODE, 4096, 1, CPLAB_GRAPH_NONE);
  double eager = predict(s, t, &link, &pa, 4, &r);
  assert_int_equal(r.graph, 0);
  cplab_scenario_free(s);
  s = scenario("tp4", CPLAB_BENCH_DECODE, 4096, 1, CPLAB_GRAPH_FULL_AND_PIECEWISE);
  double full = predict(s, t, &link, &pa, 4, &r);
  assert_int_equal(r.graph, 2);
  assert_near(eager - full, 4 * 0.050, 1e-9);
  cplab_scenario_free(s);
  /* PCP under piecewise graphs leaves the MoE fast path, under full it keeps it. */
  s = scenario("pcp4", CPLAB_BENCH_DECODE, 4096, 1, CPLAB_GRAPH_PIECEWISE);
  predict(s, t, &link, &pa, 1, &r);
  assert_int_equal(r.moe_fast_path, 0);
  cplab_scenario_free(s);
  s = scenario("pcp4", CPLAB_BENCH_DECODE, 4096, 1, CPLAB_GRAPH_FULL_AND_PIECEWISE);
  predict(s, t, &link, &pa, 1, &r);
  assert_int_equal(r.moe_fast_path, 1);
  cplab_scenario_free(s);
  /* A faster link never makes a step slower. */
  cplab_model_link fast = link;
  fast.intra.busbw_gbps *= 10, fast.intra.latency_us /= 10;
  s = scenario("pcp4dcp4", CPLAB_BENCH_PREFILL, 8192, 1, CPLAB_GRAPH_NONE);
  assert_true(predict(s, t, &fast, &pa, 1, &r) <= predict(s, t, &link, &pa, 1, &r2));
  /* Without --extrapolate a shape the table lacks is an error naming the kernel. */
  cplab_model_table *small = new_table();
  for (int k = 0; k < CPLAB_MK_COUNT; k++)
    for (double sr = 0; sr <= 256; sr = sr ? 2 * sr : 1)
      if (k != CPLAB_MK_ATTN_PREFILL) add(small, (cplab_model_kernel)k, sr, 1, 1), add(small, (cplab_model_kernel)k, sr, 1e12, 1e12);
  add(small, CPLAB_MK_ATTN_PREFILL, 64, 1, 1); /* prefill attention measured at one tiny shape only */
  small->copy_gbps = 4000;
  cplab_model_inputs in = {small, &link, 4000, &pa, 1, 0, 1, 1, 0, 0, 1, 1};
  assert_int_equal(cplab_model_predict(s, &in, &r, &d), CPLAB_ERANGE);
  assert_non_null(strstr(d.msg, "sparse_mla_prefill"));
  assert_non_null(strstr(d.msg, "rank 0"));
  cplab_scenario_free(s);
  cplab_model_table_free(small);
  cplab_model_table_free(t);
}

/* A table with the fused kernels prices the decode rows' conversion inside
 * the launch that writes the list (the engine's): under DCP the merge
 * (topk_merge_convert), without DCP the top-k (topk_decode_convert), and no
 * conversion launch; a table without them prices the unfused kernel and the
 * conversion, as the engine ran them before. */
static void test_merge_convert_pricing(void **state) {
  (void)state;
  cplab_model_table *fused = unit_table(), *split = new_table();
  for (int k = 0; k < CPLAB_MK_COUNT; k++)
    for (double s = 0; s <= 256 && k != CPLAB_MK_TOPK_MERGE_CONVERT && k != CPLAB_MK_TOPK_DECODE_CONVERT;
         s = s ? 2 * s : 1)
      add(split, (cplab_model_kernel)k, s, 1, 1), add(split, (cplab_model_kernel)k, s, 1e12, 1e12);
  split->copy_gbps = 4000;
  cplab_model_params pa = {0};
  cplab_model_link link;
  cplab_diag d = {0};
  assert_int_equal(cplab_model_link_preset("h200", &link, &d), 0);
  cplab_model_result r1, r2;
  /* at 1 us a unit of work the fused kernels cost what the unfused ones do
   * (the same work: the merge's 16 rows, the top-k's logits), so the gap is
   * the conversion launch's 16 rows x 2048 entries */
  static const char *const layouts[] = {"tp4dcp4", "tp4"};
  for (int i = 0; i < 2; i++) {
    cplab_scenario *s = scenario(layouts[i], CPLAB_BENCH_DECODE, 4096, 16, CPLAB_GRAPH_NONE);
    double with = predict(s, fused, &link, &pa, 1, &r1), without = predict(s, split, &link, &pa, 1, &r2);
    double gap = without - with, want = 16 * 2048 / 1e3; /* the conversion launch's, in ms */
    assert_true(gap > 0.9 * want && gap < 1.1 * want);
    cplab_scenario_free(s);
  }
  /* a table with only the merge's fused kernel changes nothing without DCP */
  cplab_model_table *merge_only = new_table();
  for (int k = 0; k < CPLAB_MK_COUNT; k++)
    for (double s = 0; s <= 256 && k != CPLAB_MK_TOPK_DECODE_CONVERT; s = s ? 2 * s : 1)
      add(merge_only, (cplab_model_kernel)k, s, 1, 1), add(merge_only, (cplab_model_kernel)k, s, 1e12, 1e12);
  merge_only->copy_gbps = 4000;
  cplab_scenario *s = scenario("tp4", CPLAB_BENCH_DECODE, 4096, 16, CPLAB_GRAPH_NONE);
  assert_near(predict(s, merge_only, &link, &pa, 1, &r1), predict(s, split, &link, &pa, 1, &r2), 0);
  cplab_scenario_free(s);
  cplab_model_table_free(fused), cplab_model_table_free(split), cplab_model_table_free(merge_only);
}

/* The plan-cost split the model reads adds up to the dry run's totals,
 * over random layouts and workloads. */
static void test_plancost_split(void **state) {
  (void)state;
  static const char *const layouts[] = {"tp1", "tp2", "pcp2", "tp4dcp4", "pcp4dcp4", "tp2pcp2", "pcp2dcp2", "tp2pcp2dcp4"};
  prop_run p;
  prop_begin(&p);
  for (long trial = 0; trial < 24; trial++) {
    if (!prop_trial(&p, trial)) continue;
    const char *l = layouts[prop_int(&p, 0, 7)];
    cplab_bench_kind kind = prop_int(&p, 0, 1) ? CPLAB_BENCH_DECODE : CPLAB_BENCH_PREFILL;
    cplab_scenario *s = scenario(l, kind, prop_int(&p, 1, 64) * 64, prop_int(&p, 1, 4), CPLAB_GRAPH_NONE);
    cplab_bench_plan_cost c;
    cplab_diag d = {0};
    assert_int_equal(cplab_bench_plan_cost_of(s, &c, &d), 0);
    for (int r = 0; r < c.world; r++) {
      const cplab_bench_work *w = &c.ranks[r];
      prop_check(&p, trial, fabs(w->attn_prefill_rows + w->attn_decode_rows - w->attn_rows) <= 1e-9 * (w->attn_rows + 1),
                 "%s rank %d: attended rows split", l, r);
      prop_check(&p, trial, fabs(w->prefill_pairs + w->decode_pairs - w->indexer_pairs) <= 1e-9 * (w->indexer_pairs + 1),
                 "%s rank %d: indexer pairs split", l, r);
    }
    cplab_bench_plan_cost_free(&c);
    cplab_scenario_free(s);
  }
  prop_end(&p);
}

/* A unit table (1 us a unit of work) but for one rule: ATTN_PER_HEAD,
 * the attention kernels cost 1 us a unit of work and head (the series);
 * FLAT_LOGITS, the prefill logits cost 1000 us a launch whatever its work;
 * LOGITS_ONLY, every other kernel costs 1e-9 us a unit. The scenario's
 * phases predicted with head padding `pad`. */
enum { UNIT, ATTN_PER_HEAD, FLAT_LOGITS, LOGITS_ONLY };
static cplab_model_result predict_on(const cplab_scenario *s, int rule, int pad) {
  cplab_model_table *t = new_table();
  for (int k = 0; k < CPLAB_MK_COUNT; k++)
    for (double sr = 0; sr <= 256; sr = sr ? 2 * sr : 1) {
      int attn = rule == ATTN_PER_HEAD && (k == CPLAB_MK_ATTN_PREFILL || k == CPLAB_MK_ATTN_DECODE);
      int flat = rule == FLAT_LOGITS && k == CPLAB_MK_LOGITS_PREFILL;
      double per = attn && sr > 0 ? sr : rule == LOGITS_ONLY && k != CPLAB_MK_LOGITS_PREFILL ? 1e-9 : 1; /* us a unit */
      add(t, (cplab_model_kernel)k, sr, 1, flat ? 1000 : per), add(t, (cplab_model_kernel)k, sr, 1e12, flat ? 1000 : 1e12 * per);
    }
  cplab_model_params pa = {0};
  cplab_model_link link;
  cplab_model_result r;
  cplab_diag d = {0};
  assert_int_equal(cplab_model_link_preset("h200", &link, &d), 0);
  cplab_model_inputs in = {t, &link, 4000, &pa, 1, 0, 1, 1, 0, 0, 1, pad};
  int rc = cplab_model_predict(s, &in, &r, &d);
  if (rc) print_error("%s\n", d.msg);
  assert_int_equal(rc, 0);
  cplab_model_table_free(t);
  return r;
}

/* Head padding: the attention kernels are looked up at the heads a rank
 * runs (its own rounded up to a multiple of head_pad), the rest at the real
 * ones. On a table whose attention costs 1 us a row and head, tp4's 16
 * heads a rank padded to 64 add 48 us a prefill row; tp4dcp4's decode runs
 * the DCP group's 64 heads, which 64 leaves as they are and 128 doubles. */
static double attention_ms(const char *layout, cplab_bench_kind kind, int pad, double *rows) {
  cplab_scenario *s = scenario(layout, kind, 4096, 1, CPLAB_GRAPH_NONE);
  cplab_model_result r = predict_on(s, ATTN_PER_HEAD, pad);
  cplab_bench_plan_cost c;
  cplab_diag d = {0};
  assert_int_equal(cplab_bench_plan_cost_of(s, &c, &d), 0);
  *rows = kind == CPLAB_BENCH_PREFILL ? c.ranks[0].attn_prefill_rows : c.ranks[0].attn_decode_rows;
  cplab_bench_plan_cost_free(&c);
  cplab_scenario_free(s);
  return r.phase_ms[2];
}

static void test_head_pad(void **state) {
  (void)state;
  /* The rounding itself: test_common's test_head_padding. */
  double rows, none = attention_ms("tp4", CPLAB_BENCH_PREFILL, 1, &rows);
  double pad = attention_ms("tp4", CPLAB_BENCH_PREFILL, 64, &rows);
  assert_true(rows > 0);
  assert_near(pad - none, 48 * rows / 1e3, 1e-9 * pad);
  none = attention_ms("tp4dcp4", CPLAB_BENCH_DECODE, 1, &rows);
  assert_near(attention_ms("tp4dcp4", CPLAB_BENCH_DECODE, 64, &rows), none, 0);
  pad = attention_ms("tp4dcp4", CPLAB_BENCH_DECODE, 128, &rows);
  assert_true(rows > 0);
  assert_near(pad - none, 64 * rows / 1e3, 1e-9 * pad);
}

/* The prefill indexer in the engine's launches: a 65536-token prefill on
 * one rank runs its logits in launches of 512 MiB / (4 B x 65536 keys) =
 * 2048 rows (32 launches), 1024 rows at a 256 MiB budget (64). At a
 * constant cost a launch the indexer phase counts them; at a cost
 * proportional to the pairs it does not change (the launches' pairs sum to
 * the plan's). */
static double indexer_ms(int64_t budget_mb, int rule) {
  cplab_scenario *s = scenario("tp1", CPLAB_BENCH_PREFILL, 65536, 1, CPLAB_GRAPH_NONE);
  s->par.indexer_max_logits_mb = budget_mb;
  cplab_model_result r = predict_on(s, rule, 1);
  cplab_scenario_free(s);
  return r.phase_ms[1];
}

static void test_prefill_indexer_launches(void **state) {
  (void)state;
  double launches32 = indexer_ms(512, FLAT_LOGITS), launches64 = indexer_ms(256, FLAT_LOGITS);
  assert_near(launches64 - launches32, 32 * 1000 / 1e3, 1e-9);
  assert_near(indexer_ms(512, UNIT), indexer_ms(256, UNIT), 1e-9 * indexer_ms(512, UNIT));
  /* The launches' pairs are the plan's, on the gathered path (pcp4) and on
   * the local shard (tp4dcp4: each rank its 1/D): at 1 us a pair the logits
   * are the busiest rank's prefill_pairs. */
  static const char *const layouts[] = {"tp1", "pcp4", "tp4dcp4", "pcp2dcp2"};
  for (int i = 0; i < 4; i++) {
    cplab_scenario *s = scenario(layouts[i], CPLAB_BENCH_PREFILL, 16384, 2, CPLAB_GRAPH_NONE);
    s->par.indexer_max_logits_mb = 16;
    cplab_model_result r = predict_on(s, LOGITS_ONLY, 1);
    cplab_bench_plan_cost c;
    cplab_diag d = {0};
    assert_int_equal(cplab_bench_plan_cost_of(s, &c, &d), 0);
    double most = 0;
    for (int k = 0; k < c.world; k++) most = fmax(most, c.ranks[k].prefill_pairs);
    assert_near(r.phase_ms[1], most / 1e3, 1e-6 * most / 1e3);
    cplab_bench_plan_cost_free(&c);
    cplab_scenario_free(s);
  }
}

/* Calibrated parameters: read from a validation document, a missing field named. */
static void test_params(void **state) {
  (void)state;
  cplab_model_params pa;
  cplab_diag d = {0};
  assert_int_equal(cplab_model_params_load(CPLAB_SRCDIR "/bench/results/2026-12-01-model-validation/validation.json", &pa, &d), 0);
  assert_true(pa.proj_us_per_gflop > 0 && pa.copy_latency_us > 0);
  const char *bad = write_tmp(0, "{\"params\": {\"proj_a_us\": 1, \"proj_us_per_gflop\": 2, \"moe_a_us\": 3, "
                                 "\"moe_us_per_gb\": 4, \"copy_latency_us\": 5, \"graph_saving_us\": {}}}");
  assert_int_equal(cplab_model_params_load(bad, &pa, &d), CPLAB_ESCHEMA);
  assert_non_null(strstr(d.msg, "moe_us_per_gflop"));
  unlink(bad);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_interpolation),   cmocka_unit_test(test_interpolation_properties),
      cmocka_unit_test(test_rules_against_kernels_json), cmocka_unit_test(test_bad_tables),
      cmocka_unit_test(test_link),            cmocka_unit_test(test_fit_line),
      cmocka_unit_test(test_step_structure),  cmocka_unit_test(test_plancost_split),
      cmocka_unit_test(test_merge_convert_pricing), cmocka_unit_test(test_head_pad),        cmocka_unit_test(test_prefill_indexer_launches),
      cmocka_unit_test(test_params)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
