/* cplab-bench's results model and report writers (bench/layers/report*.c):
 * parallel labels, what _add rejects, statistics and baselines, the Markdown
 * table against hand-computed cells (the reference table of vLLM PR 56157),
 * JSON and HDF5 round trips bit for bit, damaged HDF5 files, the gnuplot
 * data and script (rendered when gnuplot is on PATH, the not-found and
 * failing-gnuplot paths always), and atomic writes. */
#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <jansson.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------- */

/* A call that must succeed, with its message when it does not. */
#define expect_ok(call, diag)                             \
  do {                                                    \
    if ((call) != 0) {                                    \
      print_error("%s failed: %s\n", #call, (diag)->msg); \
      fail();                                             \
    }                                                     \
  } while (0)

static cplab_bench_point make_point(int tp, int pcp, int dcp, const char *workload, int64_t tokens, const char *graph,
                                    const double *x, size_t n) {
  cplab_bench_point p = {.tp = tp, .pcp = pcp, .dcp = dcp, .tokens = tokens, .batch = 1, .out_tokens = 1, .n = n};
  p.samples_ms = (double *)x;
  snprintf(p.workload, sizeof p.workload, "%s", workload);
  snprintf(p.graph, sizeof p.graph, "%s", graph);
  p.metric = strcmp(workload, "prefill") == 0 ? CPLAB_BENCH_TTFT : CPLAB_BENCH_TPOT;
  p.heads = 64 / tp, p.heads_run = 64; /* GLM-5's heads, padded to 64 */
  if (strcmp(workload, "decode") == 0) p.out_tokens = 1024;
  for (int k = 0; k < CPLAB_BENCH_PHASES; k++) p.phase_ms[k] = NAN;
  return p;
}

static void fill_meta(cplab_bench_results *r) {
  cplab_bench_results_init(r);
  cplab_bench_meta *m = &r->meta;
  snprintf(m->card, sizeof m->card, "NVIDIA H200 (test)");
  snprintf(m->date, sizeof m->date, "2026-11-30T12:00:00Z");
  snprintf(m->commit, sizeof m->commit, "abc1234");
  snprintf(m->command, sizeof m->command, "cplab-bench --preset glm-5 --layouts 'tp4|pcp4'");
  snprintf(m->preset, sizeof m->preset, "glm-5");
  snprintf(m->backend, sizeof m->backend, "single");
  snprintf(m->note, sizeof m->note, "single-device backend: communication was device copies");
  m->gpus = 1, m->layers = 2, m->seed = 7, m->resamples = 200, m->head_pad = 64;
}

static void add_ok(cplab_bench_results *r, cplab_bench_point p) {
  cplab_diag d = {0};
  int rc = cplab_bench_results_add(r, &p, &d);
  if (rc) print_error("unexpected: %s\n", d.msg);
  assert_int_equal(rc, 0);
}

static const double TP4_PREFILL[3] = {5530.0, 5500.0, 5512.1}, PCP4_PREFILL[3] = {3270.0, 3290.0, 3278.1},
                    PCP4DCP4_PREFILL[3] = {3326.8, 3320.0, 3340.0}, TP4_DECODE[3] = {18.5, 18.7, 18.6},
                    TP4DCP4_DECODE[3] = {28.3, 28.4, 28.5}, PCP4DCP4_PIECEWISE[3] = {86.6, 86.7, 86.9},
                    PCP4DCP4_FULL[3] = {32.5, 32.6, 32.8};

/* The shape of the reference table of vLLM PR 56157 (perf-anchors.md §7). */
static void reference_results(cplab_bench_results *r) {
  fill_meta(r);
  cplab_bench_point p = make_point(4, 1, 1, "prefill", 32768, "eager", TP4_PREFILL, 3);
  const double phases[CPLAB_BENCH_PHASES] = {800, 1200, 2500, 900, 100};
  memcpy(p.phase_ms, phases, sizeof phases);
  add_ok(r, p);                                                                        /* 0 */
  add_ok(r, make_point(1, 4, 1, "prefill", 32768, "eager", PCP4_PREFILL, 3));          /* 1 */
  add_ok(r, make_point(1, 4, 4, "prefill", 32768, "eager", PCP4DCP4_PREFILL, 3));      /* 2 */
  add_ok(r, make_point(4, 1, 1, "decode", 32768, "eager", TP4_DECODE, 3));             /* 3 */
  add_ok(r, make_point(4, 1, 4, "decode", 32768, "eager", TP4DCP4_DECODE, 3));         /* 4 */
  add_ok(r, make_point(4, 1, 1, "decode", 32768, "piecewise", TP4_DECODE, 3));         /* 5 */
  add_ok(r, make_point(1, 4, 4, "decode", 32768, "piecewise", PCP4DCP4_PIECEWISE, 3)); /* 6 */
  add_ok(r, make_point(4, 1, 1, "decode", 32768, "full", TP4_DECODE, 3));              /* 7 */
  add_ok(r, make_point(1, 4, 4, "decode", 32768, "full", PCP4DCP4_FULL, 3));           /* 8 */
  cplab_diag d = {0};
  expect_ok(cplab_bench_results_finish(r, &d), &d);
}

static char *make_tempdir(void) {
  const char *base = getenv("TMPDIR");
  char tmpl[512];
  snprintf(tmpl, sizeof tmpl, "%s/cplab-bench-report-XXXXXX", base && *base ? base : "/tmp");
  char *dir = mkdtemp(tmpl);
  assert_non_null(dir);
  return strdup(dir);
}

static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *dir = opendir(path);
    for (struct dirent *e; dir && (e = readdir(dir));) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char child[1024];
      snprintf(child, sizeof child, "%s/%s", path, e->d_name);
      remove_tree(child);
    }
    if (dir) closedir(dir);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* Entries of dir whose name contains s. */
static int count_entries(const char *dir, const char *s) {
  DIR *dp = opendir(dir);
  int n = 0;
  for (struct dirent *e; dp && (e = readdir(dp));) n += strstr(e->d_name, s) != NULL;
  if (dp) closedir(dp);
  return n;
}

static char *read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n + 4096 + 1 > cap) buf = realloc(buf, cap = 2 * cap + 8192);
    assert_non_null(buf);
    size_t got = fread(buf + n, 1, 4096, f);
    n += got;
    if (got == 0) break;
  }
  fclose(f);
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

static void write_bytes(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

static void expect_contains(const char *text, const char *fragment) {
  if (!strstr(text, fragment)) {
    print_error("missing: %s\n--- in:\n%s\n", fragment, text);
    fail();
  }
}

static int same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- labels and names ---------------------------------------------------- */

static void test_layout_labels(void **state) {
  (void)state;
  const struct {
    int tp, pcp, dcp;
    const char *label;
    int world;
  } cases[] = {{4, 1, 1, "tp4", 4},     {1, 4, 1, "pcp4", 4}, {4, 1, 4, "tp4dcp4", 4}, {1, 4, 4, "pcp4dcp4", 4},
               {2, 2, 1, "tp2pcp2", 4}, {1, 1, 1, "tp1", 1},  {1, 1, 4, "dcp4", 1},    {2, 4, 8, "tp2pcp4dcp8", 8}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[32];
    assert_int_equal(cplab_bench_parallel_label(cases[i].tp, cases[i].pcp, cases[i].dcp, buf, sizeof buf), 0);
    assert_string_equal(buf, cases[i].label);
    assert_int_equal(cplab_bench_parallel_world(cases[i].tp, cases[i].pcp, cases[i].dcp), cases[i].world);
  }
  char small[5];
  assert_int_equal(cplab_bench_parallel_label(1, 4, 1, small, 5), 0); /* "pcp4" and its NUL */
  assert_int_equal(cplab_bench_parallel_label(1, 4, 4, small, 5), CPLAB_ERANGE);
  assert_int_equal(cplab_bench_parallel_label(0, 1, 1, small, 5), CPLAB_EINVAL);
  assert_int_equal(cplab_bench_parallel_label(1, 1, -2, small, 5), CPLAB_EINVAL);
  const char *phases[] = {"proj", "indexer", "attention", "moe", "comm"};
  for (int k = 0; k < CPLAB_BENCH_PHASES; k++) assert_string_equal(cplab_bench_phase_name(k), phases[k]);
  assert_string_equal(cplab_bench_phase_name(CPLAB_BENCH_PHASES), "?");
  assert_string_equal(cplab_bench_metric_name(CPLAB_BENCH_TTFT), "TTFT");
  assert_string_equal(cplab_bench_metric_name(CPLAB_BENCH_TPOT), "TPOT");
}

/* ---- _add ---------------------------------------------------------------- */

static void test_add_rejections(void **state) {
  (void)state;
  static const double good[3] = {1, 2, 3}, with_nan[3] = {1, NAN, 2}, negative[2] = {-1, 2},
                      with_inf[3] = {1, 2, INFINITY};
  cplab_bench_results r;
  fill_meta(&r);
  add_ok(&r, make_point(4, 1, 1, "prefill", 1024, "eager", good, 3));
  const cplab_bench_point base = make_point(1, 4, 1, "prefill", 1024, "eager", good, 3);
  struct {
    const char *what, *fragment;
    cplab_bench_point p;
  } cases[] = {
      {"no samples", "has no samples", base},
      {"NaN", "sample 1 is nan ms: samples must be finite and >= 0", base},
      {"negative", "sample 0 is -1 ms", base},
      {"infinite", "sample 2 is inf ms", base},
      {"workload", "unknown workload 'chat' (prefill, decode or mixed)", base},
      {"graph", "unknown graph mode 'cudagraph' (eager, piecewise, full_decode_only or full)", base},
      {"metric", "unknown metric 7 (TTFT or TPOT)", base},
      {"prefill TPOT", "a prefill point measures TTFT, not TPOT", base},
      {"decode TTFT", "a decode point measures TPOT, not TTFT", base},
      {"tp 0", "bad parallel sizes: tp: must be in [1, 1024], got 0", base},
      {"dcp without tp", "bad parallel sizes: dcp: with pcp = 1, dcp must divide tp (1), got 4", base},
      {"dcp under pcp", "bad parallel sizes: dcp: with pcp > 1, dcp must be 1, pcp (4) or tp·pcp (4), got 2", base},
      {"tokens", "tokens must be >= 1, got 0", base},
      {"batch", "batch must be >= 1, got -1", base},
      {"out_tokens", "out_tokens must be >= 1, got 0", base},
      {"label", "parallel label 'tp4' does not match the sizes (pcp4)", base},
      {"phase", "phase 'comm' is -1 ms: phase times must be finite and >= 0, or NAN", base},
      {"too many", "samples, more than 16777216", base},
      {"duplicate", "duplicates point 0", make_point(4, 1, 1, "prefill", 1024, "eager", good, 3)},
      {"heads", "heads 32, run 16: expected 0 < heads <= run", base},
      {"heads half-recorded", "heads 0, run 64", base},
  };
  cases[0].p.n = 0;
  cases[1].p.samples_ms = (double *)with_nan;
  cases[2].p.samples_ms = (double *)negative, cases[2].p.n = 2;
  cases[3].p.samples_ms = (double *)with_inf;
  snprintf(cases[4].p.workload, sizeof cases[4].p.workload, "chat");
  snprintf(cases[5].p.graph, sizeof cases[5].p.graph, "cudagraph");
  cases[6].p.metric = (cplab_bench_metric)7;
  cases[7].p.metric = CPLAB_BENCH_TPOT;
  snprintf(cases[8].p.workload, sizeof cases[8].p.workload, "decode"), cases[8].p.metric = CPLAB_BENCH_TTFT;
  cases[9].p.tp = 0;
  cases[10].p.pcp = 1, cases[10].p.dcp = 4;
  cases[11].p.dcp = 2;
  cases[12].p.tokens = 0;
  cases[13].p.batch = -1;
  cases[14].p.out_tokens = 0;
  snprintf(cases[15].p.parallel, sizeof cases[15].p.parallel, "tp4");
  cases[16].p.phase_ms[4] = -1;
  cases[17].p.n = CPLAB_BENCH_MAX_SAMPLES + 1;
  cases[19].p.heads = 32, cases[19].p.heads_run = 16;
  cases[20].p.heads = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cplab_diag d = {0};
    int rc = cplab_bench_results_add(&r, &cases[i].p, &d);
    if (rc != CPLAB_EINVAL || !strstr(d.msg, cases[i].fragment) || strncmp(d.msg, "point tp=", 9) != 0) {
      print_error("case '%s': rc %d, message '%s'\n", cases[i].what, rc, d.msg);
      fail();
    }
    assert_int_equal(r.n, 1);
  }
  /* Accepted: mixed with either metric; the label filled in; samples copied. */
  double mine[2] = {5, 6};
  cplab_bench_point mixed = make_point(1, 4, 1, "mixed", 4096, "eager", mine, 2);
  mixed.metric = CPLAB_BENCH_TTFT;
  memcpy(mixed.graph, "eager\0junk-junk", sizeof mixed.graph); /* bytes after the NUL are not kept */
  add_ok(&r, mixed);
  assert_memory_equal(r.points[1].graph, "eager\0\0\0\0\0\0\0\0\0\0\0", sizeof mixed.graph);
  mixed.metric = CPLAB_BENCH_TPOT;
  add_ok(&r, mixed);
  mine[0] = 99;
  assert_string_equal(r.points[1].parallel, "pcp4");
  assert_true(r.points[1].samples_ms != mine && r.points[1].samples_ms[0] == 5 && r.points[2].baseline == -1);
  cplab_bench_results_free(&r);
  assert_true(r.n == 0 && r.points == NULL);
}

/* ---- finish ---------------------------------------------------------------- */

static void test_finish_stats_and_baselines(void **state) {
  (void)state;
  static const double a[5] = {10, 11, 12, 13, 40}, b[4] = {6, 7, 6.5, 8}, c[3] = {30, 31, 29}, e[2] = {3, 4};
  cplab_bench_results r;
  fill_meta(&r);
  add_ok(&r, make_point(1, 4, 1, "prefill", 8192, "eager", b, 4));  /* 0: baseline 1 */
  add_ok(&r, make_point(4, 1, 1, "prefill", 8192, "eager", a, 5));  /* 1: itself */
  add_ok(&r, make_point(2, 2, 1, "prefill", 8192, "eager", c, 3));  /* 2: baseline 1 */
  add_ok(&r, make_point(1, 4, 1, "prefill", 16384, "eager", b, 4)); /* 3: no tp4 at 16384 */
  add_ok(&r, make_point(1, 4, 1, "prefill", 8192, "full", b, 4));   /* 4: no tp4 in full */
  add_ok(&r, make_point(2, 4, 1, "prefill", 8192, "eager", e, 2));  /* 5: world 8, no tp8 */
  add_ok(&r, make_point(1, 2, 1, "prefill", 8192, "eager", e, 2));  /* 6: world 2, tp2 */
  add_ok(&r, make_point(2, 1, 1, "prefill", 8192, "eager", c, 3));  /* 7: itself */
  add_ok(&r, make_point(4, 1, 4, "decode", 8192, "eager", c, 3));   /* 8: tp4 decode */
  add_ok(&r, make_point(4, 1, 1, "decode", 8192, "eager", a, 5));   /* 9: itself */
  cplab_bench_point other_batch = make_point(1, 4, 4, "decode", 8192, "eager", b, 4);
  other_batch.batch = 8;
  add_ok(&r, other_batch); /* 10: no tp4 at batch 8 */
  cplab_diag d = {0};
  expect_ok(cplab_bench_results_finish(&r, &d), &d);
  assert_true(r.finished);
  const long want[] = {1, 1, 1, -1, -1, -1, 7, 7, 9, 9, -1};
  for (size_t i = 0; i < r.n; i++) {
    const cplab_bench_point *p = &r.points[i];
    assert_int_equal(p->baseline, want[i]);
    assert_int_equal(cplab_bench_results_baseline_of(&r, i), want[i]);
    cplab_stats s;
    assert_int_equal(cplab_stats_summarize(p->samples_ms, p->n, cplab_bench_point_seed(7, i), 200, &s, NULL), 0);
    assert_true(s.n == p->stats.n && same_double(s.median, p->stats.median) && same_double(s.p99, p->stats.p99) &&
                same_double(s.mean, p->stats.mean) && same_double(s.stddev, p->stats.stddev) &&
                same_double(s.min, p->stats.min) && same_double(s.max, p->stats.max) &&
                same_double(s.ci_low, p->stats.ci_low) && same_double(s.ci_high, p->stats.ci_high));
    if (want[i] == (long)i) {
      assert_true(p->ratio.ratio == 1 && p->ratio.ci_low == 1 && p->ratio.ci_high == 1);
    } else if (want[i] < 0) {
      assert_true(isnan(p->ratio.ratio) && isnan(p->ratio.ci_low) && isnan(p->ratio.ci_high));
    } else {
      const cplab_bench_point *q = &r.points[want[i]];
      cplab_ratio x;
      assert_int_equal(
          cplab_stats_ratio(p->samples_ms, p->n, q->samples_ms, q->n, cplab_bench_point_seed(7, i), 200, &x, NULL), 0);
      assert_true(same_double(x.ratio, p->ratio.ratio) && same_double(x.ci_low, p->ratio.ci_low) &&
                  same_double(x.ci_high, p->ratio.ci_high));
      assert_true(same_double(p->ratio.ratio, p->stats.median / q->stats.median));
    }
  }
  assert_true(r.points[0].stats.median == 6.75 && r.points[1].stats.median == 12);
  /* Each point draws its own stream; finishing again gives the same numbers. */
  assert_true(cplab_bench_point_seed(7, 0) != cplab_bench_point_seed(7, 3));
  cplab_stats before = r.points[0].stats;
  expect_ok(cplab_bench_results_finish(&r, &d), &d);
  assert_true(same_double(before.ci_low, r.points[0].stats.ci_low) &&
              same_double(before.ci_high, r.points[0].stats.ci_high));
  /* _add clears finished; writers refuse unfinished results. */
  add_ok(&r, make_point(8, 1, 1, "prefill", 8192, "eager", e, 2));
  assert_false(r.finished);
  cplab_diag w = {0};
  assert_int_equal(cplab_bench_write_json(&r, "/nonexistent/x.json", &w), CPLAB_EINVAL);
  expect_contains(w.msg, "the results are not finished");
  /* Bad meta. */
  cplab_diag m1 = {0}, m2 = {0};
  r.meta.resamples = 99;
  assert_int_equal(cplab_bench_results_finish(&r, &m1), CPLAB_EINVAL);
  expect_contains(m1.msg, "meta.resamples: a bootstrap needs at least 100 resamples, got 99");
  r.meta.resamples = 200, r.meta.seed = UINT64_C(1) << 53;
  assert_int_equal(cplab_bench_results_finish(&r, &m2), CPLAB_EINVAL);
  expect_contains(m2.msg, "meta.seed: must be at most 9007199254740991");
  cplab_bench_results_free(&r);
}

static void test_zero_baseline(void **state) {
  (void)state;
  static const double zeros[2] = {0, 0}, some[2] = {1, 2};
  cplab_bench_results r;
  fill_meta(&r);
  add_ok(&r, make_point(4, 1, 1, "prefill", 64, "eager", zeros, 2));
  add_ok(&r, make_point(1, 4, 1, "prefill", 64, "eager", some, 2));
  assert_int_equal(cplab_bench_results_finish(&r, NULL), 0);
  assert_int_equal(r.points[1].baseline, 0);
  assert_true(isnan(r.points[1].ratio.ratio));
  assert_true(r.points[0].ratio.ratio == 1);
  cplab_bench_results_free(&r);
}

/* ---- Markdown ------------------------------------------------------------ */

static char *markdown_of(const cplab_bench_results *r) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  cplab_diag d = {0};
  expect_ok(cplab_bench_write_markdown(r, f, &d), &d);
  fclose(f);
  return text;
}

static void test_markdown(void **state) {
  (void)state;
  cplab_bench_results r;
  reference_results(&r);
  char *md = markdown_of(&r);
  const char *expected[] = {
      "# cplab-bench: TTFT and TPOT per layout\n",
      "| card | NVIDIA H200 (test) |\n",
      "| date | 2026-11-30T12:00:00Z |\n",
      "| commit | abc1234 |\n",
      "| command | `cplab-bench --preset glm-5 --layouts 'tp4\\|pcp4'` |\n",
      "| preset | glm-5 |\n",
      "| layout | vllm |\n",
      "| query heads | padded to a multiple of 64 (`--head-pad`; zero-filled heads, outputs discarded), per rank real "
      "→ run: tp4 16 → 64, pcp4 64 → 64, pcp4dcp4 64 → 64, tp4dcp4 16 → 64 |\n",
      "| backend | single |\n",
      "| GPUs | 1 |\n",
      "| layers | 2 decoder layers timed per step |\n",
      "(200 resamples, seed 7)",
      "| note | single-device backend: communication was device copies |\n",
      "> **Communication was device copies.**",
      "## Graph mode: eager\n\n| workload | tp4 | pcp4 | tp4dcp4 | pcp4dcp4 |\n|---|---|---|---|---|\n",
      "| prefill 32768 in / 1 out, TTFT ms | 5512.1 | 3278.1 (0.595×) | — | 3326.8 (0.604×) |\n",
      "| decode 1 in / 1024 out, ctx 32768, batch 1, TPOT ms | 18.60 | — | 28.40 (1.53×) | — |\n",
      "## Graph mode: piecewise\n\n| workload | tp4 | pcp4dcp4 |\n|---|---|---|\n"
      "| decode 1 in / 1024 out, ctx 32768, batch 1, TPOT ms | 18.60 | 86.70 (4.66×) |\n",
      "## Graph mode: full\n\n| workload | tp4 | pcp4dcp4 |\n|---|---|---|\n"
      "| decode 1 in / 1024 out, ctx 32768, batch 1, TPOT ms | 18.60 | 32.60 (1.75×) |\n",
      "| # | graph | workload | parallel | GPUs | heads per rank (real → run) | n | median | p99 | mean ± stddev | min | "
      "max | median 95% CI | ratio [95% CI] | proj | indexer | attention | moe | comm |\n",
      /* p99 of {3270, 3278.1, 3290}: 3278.1 + 0.98 · 11.9 = 3289.762 */
      "| 1 | eager | prefill 32768 in / 1 out, TTFT ms | pcp4 | 4 | 64 → 64 | 3 | 3278.1 | 3289.8 | 3279.4 ± 10.06 | 3270.0 | "
      "3290.0 | [",
      "| 0 | eager | prefill 32768 in / 1 out, TTFT ms | tp4 | 4 | 16 → 64 | 3 | 5512.1 |",
      " | 1 (baseline) | 800.0 | 1200.0 | 2500.0 | 900.0 | 100.0 |\n",
      "] vs tp4 | — | — | — | — | — |\n",
  };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) expect_contains(md, expected[i]);
  /* The file variant writes the same text. */
  char *dir = make_tempdir(), path[600];
  snprintf(path, sizeof path, "%s/report.md", dir);
  cplab_diag d = {0};
  expect_ok(cplab_bench_write_markdown_file(&r, path, &d), &d);
  char *file_text = read_text(path, NULL);
  assert_string_equal(file_text, md);
  free(file_text);
  remove_tree(dir);
  free(dir);
  /* Tables in graph order; the pcp4 ratio with its interval. */
  assert_true(strstr(md, "Graph mode: eager") < strstr(md, "Graph mode: piecewise"));
  assert_true(strstr(md, "Graph mode: piecewise") < strstr(md, "Graph mode: full"));
  char ratio[96];
  snprintf(ratio, sizeof ratio, "| %.3f [%.3f, %.3f] vs tp4 |", r.points[1].ratio.ratio, r.points[1].ratio.ci_low,
           r.points[1].ratio.ci_high);
  expect_contains(md, ratio);
  free(md);
  /* nccl backend: no device-copies warning; an unmeasured baseline says so. */
  snprintf(r.meta.backend, sizeof r.meta.backend, "nccl");
  md = markdown_of(&r);
  assert_null(strstr(md, "Communication was device copies"));
  free(md);
  cplab_bench_results_free(&r);
  cplab_bench_results e;
  fill_meta(&e);
  assert_int_equal(cplab_bench_results_finish(&e, NULL), 0);
  md = markdown_of(&e);
  expect_contains(md, "No points were measured.");
  free(md);
}

/* ---- JSON ---------------------------------------------------------------- */

static void expect_json_real(json_t *o, const char *key, double want) {
  json_t *v = json_object_get(o, key);
  if (isnan(want)) {
    assert_true(json_is_null(v));
    return;
  }
  assert_true(json_is_real(v));
  if (!same_double(json_real_value(v), want)) {
    print_error("%s: %.17g read back, %.17g written\n", key, json_real_value(v), want);
    fail();
  }
}

static void test_json(void **state) {
  (void)state;
  /* Values %.17g must carry exactly: thirds, tiny, subnormal, huge. */
  static const double awkward[6] = {1.0 / 3.0, 0.1, 1e-300, 4.9406564584124654e-324, 123456789.12345679, 0};
  cplab_bench_results r;
  reference_results(&r);
  add_ok(&r, make_point(2, 1, 1, "prefill", 100, "eager", awkward, 6));
  assert_int_equal(cplab_bench_results_finish(&r, NULL), 0);
  char *dir = make_tempdir(), path[600], path2[600];
  snprintf(path, sizeof path, "%s/results.json", dir);
  snprintf(path2, sizeof path2, "%s/again.json", dir);
  cplab_diag d = {0};
  expect_ok(cplab_bench_write_json(&r, path, &d), &d);
  expect_ok(cplab_bench_write_json(&r, path2, &d), &d);
  size_t n1, n2;
  char *t1 = read_text(path, &n1), *t2 = read_text(path2, &n2);
  assert_true(n1 == n2 && memcmp(t1, t2, n1) == 0); /* deterministic */
  const char *head = "{\n \"format\": \"cplab_bench_results\",\n \"version\": \"2.0.0\",\n \"meta\": {\n  \"card\"";
  assert_int_equal(strncmp(t1, head, strlen(head)), 0); /* keys in a fixed order */
  assert_true(t1[n1 - 1] == '\n');
  json_error_t err;
  json_t *root = json_loads(t1, 0, &err);
  assert_non_null(root);
  json_t *meta = json_object_get(root, "meta"), *points = json_object_get(root, "points");
  assert_string_equal(json_string_value(json_object_get(meta, "command")), r.meta.command);
  assert_string_equal(json_string_value(json_object_get(meta, "backend")), "single");
  assert_int_equal(json_integer_value(json_object_get(meta, "seed")), 7);
  assert_int_equal(json_integer_value(json_object_get(meta, "resamples")), 200);
  assert_int_equal(json_integer_value(json_object_get(meta, "layers")), 2);
  assert_int_equal(json_integer_value(json_object_get(meta, "head_pad")), 64);
  assert_string_equal(json_string_value(json_object_get(meta, "layout")), "vllm");
  assert_int_equal(json_array_size(points), r.n);
  for (size_t i = 0; i < r.n; i++) {
    const cplab_bench_point *p = &r.points[i];
    json_t *o = json_array_get(points, i), *s = json_object_get(o, "stats"), *q = json_object_get(o, "ratio");
    assert_int_equal(json_integer_value(json_object_get(o, "index")), i);
    assert_string_equal(json_string_value(json_object_get(o, "parallel")), p->parallel);
    assert_int_equal(json_integer_value(json_object_get(o, "heads")), p->heads);
    assert_int_equal(json_integer_value(json_object_get(o, "heads_run")), p->heads_run);
    assert_string_equal(json_string_value(json_object_get(o, "workload")), p->workload);
    assert_string_equal(json_string_value(json_object_get(o, "graph")), p->graph);
    assert_string_equal(json_string_value(json_object_get(o, "metric")), cplab_bench_metric_name(p->metric));
    assert_int_equal(json_integer_value(json_object_get(o, "tokens")), p->tokens);
    assert_int_equal(json_integer_value(json_object_get(o, "out_tokens")), p->out_tokens);
    assert_int_equal(json_integer_value(json_object_get(o, "gpus")), p->tp * p->pcp);
    assert_int_equal(json_integer_value(json_object_get(s, "n")), p->n);
    expect_json_real(s, "median", p->stats.median);
    expect_json_real(s, "p99", p->stats.p99);
    expect_json_real(s, "mean", p->stats.mean);
    expect_json_real(s, "stddev", p->stats.stddev);
    expect_json_real(s, "min", p->stats.min);
    expect_json_real(s, "max", p->stats.max);
    expect_json_real(s, "ci_low", p->stats.ci_low);
    expect_json_real(s, "ci_high", p->stats.ci_high);
    if (p->baseline < 0) {
      assert_true(json_is_null(json_object_get(o, "baseline")) && json_is_null(q));
    } else {
      assert_int_equal(json_integer_value(json_object_get(o, "baseline")), p->baseline);
      expect_json_real(q, "ratio", p->ratio.ratio);
      expect_json_real(q, "ci_low", p->ratio.ci_low);
      expect_json_real(q, "ci_high", p->ratio.ci_high);
    }
    json_t *ph = json_object_get(o, "phases_ms");
    for (int k = 0; k < CPLAB_BENCH_PHASES; k++) expect_json_real(ph, cplab_bench_phase_name(k), p->phase_ms[k]);
    json_t *x = json_object_get(o, "samples_ms");
    assert_int_equal(json_array_size(x), p->n);
    for (size_t k = 0; k < p->n; k++) {
      json_t *v = json_array_get(x, k);
      assert_true(json_is_number(v) && same_double(json_number_value(v), p->samples_ms[k]));
    }
  }
  /* The last point, tp2, is pure TP: its own baseline. */
  assert_int_equal(json_integer_value(json_object_get(json_array_get(points, r.n - 1), "baseline")), r.n - 1);
  json_decref(root);
  free(t1), free(t2);
  remove_tree(dir);
  free(dir);
  cplab_bench_results_free(&r);
}

/* ---- HDF5 ---------------------------------------------------------------- */

static void expect_same_results(const cplab_bench_results *a, const cplab_bench_results *b) {
  const cplab_bench_meta *x = &a->meta, *y = &b->meta;
  assert_string_equal(x->card, y->card);
  assert_string_equal(x->date, y->date);
  assert_string_equal(x->commit, y->commit);
  assert_string_equal(x->command, y->command);
  assert_string_equal(x->preset, y->preset);
  assert_string_equal(x->backend, y->backend);
  assert_string_equal(x->layout, y->layout);
  assert_int_equal(x->head_pad, y->head_pad);
  assert_string_equal(x->note, y->note);
  assert_true(x->gpus == y->gpus && x->seed == y->seed && x->resamples == y->resamples && x->layers == y->layers);
  assert_int_equal(a->n, b->n);
  assert_true(b->finished);
  for (size_t i = 0; i < a->n; i++) {
    const cplab_bench_point *p = &a->points[i], *q = &b->points[i];
    assert_string_equal(p->parallel, q->parallel);
    assert_true(p->heads == q->heads && p->heads_run == q->heads_run);
    assert_string_equal(p->workload, q->workload);
    assert_string_equal(p->graph, q->graph);
    assert_true(p->tp == q->tp && p->pcp == q->pcp && p->dcp == q->dcp && p->metric == q->metric);
    assert_true(p->tokens == q->tokens && p->batch == q->batch && p->out_tokens == q->out_tokens);
    assert_int_equal(p->n, q->n);
    assert_memory_equal(p->samples_ms, q->samples_ms, p->n * sizeof *p->samples_ms); /* bit for bit */
    assert_memory_equal(p->phase_ms, q->phase_ms, sizeof p->phase_ms);
    const double s1[8] = {p->stats.median, p->stats.p99, p->stats.mean,   p->stats.stddev,
                          p->stats.min,    p->stats.max, p->stats.ci_low, p->stats.ci_high};
    const double s2[8] = {q->stats.median, q->stats.p99, q->stats.mean,   q->stats.stddev,
                          q->stats.min,    q->stats.max, q->stats.ci_low, q->stats.ci_high};
    assert_memory_equal(s1, s2, sizeof s1);
    assert_int_equal(p->stats.n, q->stats.n);
    assert_int_equal(p->baseline, q->baseline);
    const double r1[3] = {p->ratio.ratio, p->ratio.ci_low, p->ratio.ci_high};
    const double r2[3] = {q->ratio.ratio, q->ratio.ci_low, q->ratio.ci_high};
    assert_memory_equal(r1, r2, sizeof r1);
  }
}

static void test_h5_round_trip(void **state) {
  (void)state;
  static const double awkward[4] = {1.0 / 3.0, 4.9406564584124654e-324, 0, 1e15 + 0.125};
  cplab_bench_results r, back;
  reference_results(&r);
  add_ok(&r, make_point(8, 1, 1, "decode", 131072, "eager", awkward, 4));
  cplab_bench_point no_baseline = make_point(2, 4, 8, "mixed", 4096, "piecewise", awkward, 3);
  no_baseline.batch = 16, no_baseline.out_tokens = 7, no_baseline.phase_ms[2] = 0.25;
  add_ok(&r, no_baseline);
  assert_int_equal(cplab_bench_results_finish(&r, NULL), 0);
  char *dir = make_tempdir(), path[600];
  snprintf(path, sizeof path, "%s/results.h5", dir);
  cplab_diag d = {0};
  expect_ok(cplab_bench_write_h5(&r, path, &d), &d);
  expect_ok(cplab_bench_read_h5(path, &back, &d), &d);
  expect_same_results(&r, &back);
  /* What is read back renders the same report. */
  char *m1 = markdown_of(&r), *m2 = markdown_of(&back);
  assert_string_equal(m1, m2);
  free(m1), free(m2);
  cplab_bench_results_free(&back);
  /* Deterministic: the same results give the same bytes. */
  char again[700];
  snprintf(again, sizeof again, "%s/again.h5", dir);
  expect_ok(cplab_bench_write_h5(&r, again, &d), &d);
  size_t n1, n2;
  char *b1 = read_text(path, &n1), *b2 = read_text(again, &n2);
  assert_true(n1 == n2 && memcmp(b1, b2, n1) == 0);
  free(b1), free(b2);
  /* Empty results round-trip too. */
  cplab_bench_results e;
  fill_meta(&e);
  assert_int_equal(cplab_bench_results_finish(&e, NULL), 0);
  expect_ok(cplab_bench_write_h5(&e, path, &d), &d);
  expect_ok(cplab_bench_read_h5(path, &back, &d), &d);
  expect_same_results(&e, &back);
  cplab_bench_results_free(&back);
  assert_int_equal(count_entries(dir, ".tmp."), 0);
  remove_tree(dir);
  free(dir);
  cplab_bench_results_free(&r);
}

/* Edits a copy of a good file gets before it is read. */
static void set_format(hid_t f, const char *version) {
  assert_true(H5Adelete(f, "cplab_bench_results") >= 0);
  hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
  assert_true(H5Tset_size(t, strlen(version)) >= 0);
  hid_t a = H5Acreate2(f, "cplab_bench_results", t, s, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(a >= 0 && H5Awrite(a, t, version) >= 0);
  H5Aclose(a), H5Sclose(s), H5Tclose(t);
}

/* Read /points/<name> (n elements of type), let edit change element k, write it back. */
static void poke(hid_t f, const char *name, hid_t type, size_t size, size_t k, const void *value) {
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT), s = H5Dget_space(ds);
  assert_true(ds >= 0 && s >= 0);
  size_t n = (size_t)H5Sget_simple_extent_npoints(s);
  char *buf = malloc(n * size);
  assert_non_null(buf);
  assert_true(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
  memcpy(buf + (k == SIZE_MAX ? n - 1 : k) * size, value, size);
  assert_true(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
  free(buf);
  H5Sclose(s), H5Dclose(ds);
}

static void edit_drop_median(hid_t f) { assert_true(H5Ldelete(f, "points/median", H5P_DEFAULT) >= 0); }
static void edit_version_3(hid_t f) { set_format(f, "3.0.0"); }
static void edit_version_garbage(hid_t f) { set_format(f, "one"); }
static void edit_no_format(hid_t f) { assert_true(H5Adelete(f, "cplab_bench_results") >= 0); }
static void edit_offsets_end(hid_t f) {
  int64_t v = 26; /* the file holds 27 samples */
  poke(f, "points/offsets", H5T_NATIVE_INT64, 8, SIZE_MAX, &v);
}
static void edit_offsets_order(hid_t f) {
  int64_t v = 3; /* offsets[2] = offsets[1]: point 1 without samples */
  poke(f, "points/offsets", H5T_NATIVE_INT64, 8, 2, &v);
}
static void edit_baseline(hid_t f) {
  int64_t v = 2;
  poke(f, "points/baseline", H5T_NATIVE_INT64, 8, 1, &v);
}
static void edit_sample(hid_t f) {
  double v = -1;
  poke(f, "points/samples_ms", H5T_NATIVE_DOUBLE, 8, 0, &v);
}
static void edit_median(hid_t f) {
  double v = 1e9;
  poke(f, "points/median", H5T_NATIVE_DOUBLE, 8, 0, &v);
}
static void edit_tp(hid_t f) {
  int32_t v = 2; /* the stored label says tp4 */
  poke(f, "points/tp", H5T_NATIVE_INT32, 4, 0, &v);
}
static void edit_point_count(hid_t f) {
  assert_true(H5Adelete(f, "points") >= 0);
  hid_t s = H5Screate(H5S_SCALAR), a = H5Acreate2(f, "points", H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
  int64_t v = 10;
  assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
  H5Aclose(a), H5Sclose(s);
}

static void expect_rejected(const char *path, int code, const char *fragment) {
  cplab_bench_results r;
  cplab_diag d = {0};
  int rc = cplab_bench_read_h5(path, &r, &d);
  if (rc == 0 || (code && rc != code) || !strstr(d.msg, fragment) || !strstr(d.msg, path)) {
    print_error("%s: rc %d (%s), message '%s', expected '%s'\n", path, rc, cplab_err_name(rc), d.msg, fragment);
    fail();
  }
  print_message("# rejected: %s\n", d.msg);
  assert_true(r.n == 0 && r.points == NULL && !r.finished);
  cplab_bench_results_free(&r); /* harmless after a failure */
}

static void test_h5_damaged(void **state) {
  (void)state;
  cplab_bench_results r;
  reference_results(&r); /* 9 points, 27 samples */
  char *dir = make_tempdir(), good[600], bad[700];
  snprintf(good, sizeof good, "%s/good.h5", dir);
  assert_int_equal(cplab_bench_write_h5(&r, good, NULL), 0);
  size_t len;
  char *bytes = read_text(good, &len);
  const struct {
    const char *name;
    void (*edit)(hid_t);
    int code;
    const char *fragment;
  } edits[] = {
      {"no-median", edit_drop_median, CPLAB_ESCHEMA, ":/points: missing dataset 'median'"},
      {"version-3", edit_version_3, CPLAB_ESCHEMA, "format version 3.0.0 is not supported"},
      {"version-garbage", edit_version_garbage, CPLAB_ESCHEMA, "format version 'one' is not MAJOR.MINOR.PATCH"},
      {"no-format", edit_no_format, CPLAB_ESCHEMA, "not a cplab-bench results file (no 'cplab_bench_results'"},
      {"offsets-end", edit_offsets_end, CPLAB_ESCHEMA, "offsets end at 26, but samples_ms holds 27 samples"},
      {"offsets-order", edit_offsets_order, CPLAB_ESCHEMA, "offsets[2] = 3 after 3: offsets must increase"},
      {"baseline", edit_baseline, CPLAB_ESCHEMA, "point 1: baseline 2, but the rule gives 0"},
      {"sample", edit_sample, CPLAB_EINVAL,
       "point 0: point tp=4 pcp=1 dcp=1, prefill, tokens 32768, batch 1, out 1, "
       "eager, TTFT: sample 0 is -1 ms"},
      {"median", edit_median, CPLAB_ESCHEMA, "point 0: statistics do not describe the samples"},
      {"tp", edit_tp, CPLAB_EINVAL, "parallel label 'tp4' does not match the sizes (tp2)"},
      {"count", edit_point_count, CPLAB_ESCHEMA, "dataset 'tp' has 9 rows, expected 10"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    snprintf(bad, sizeof bad, "%s/%s.h5", dir, edits[i].name);
    write_bytes(bad, bytes, len);
    hid_t f = H5Fopen(bad, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    edits[i].edit(f);
    assert_true(H5Fclose(f) >= 0);
    expect_rejected(bad, edits[i].code, edits[i].fragment);
  }
  /* Truncated at several places: before, inside and after the superblock. */
  const size_t cuts[] = {0, 7, 100, len / 2, len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    snprintf(bad, sizeof bad, "%s/cut-%zu.h5", dir, cuts[i]);
    write_bytes(bad, bytes, cuts[i]);
    expect_rejected(bad, 0, "(truncated or damaged?)");
  }
  snprintf(bad, sizeof bad, "%s/text.h5", dir);
  write_bytes(bad, "not HDF5 at all\n", 16);
  expect_rejected(bad, CPLAB_ESCHEMA, "not an HDF5 file");
  /* A foreign HDF5 file. */
  snprintf(bad, sizeof bad, "%s/foreign.h5", dir);
  hid_t f = H5Fcreate(bad, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(f >= 0 && H5Gclose(H5Gcreate2(f, "points", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) >= 0);
  H5Fclose(f);
  expect_rejected(bad, CPLAB_ESCHEMA, "not a cplab-bench results file");
  snprintf(bad, sizeof bad, "%s/absent.h5", dir);
  expect_rejected(bad, CPLAB_EIO, "cannot open");
  free(bytes);
  remove_tree(dir);
  free(dir);
  cplab_bench_results_free(&r);
}

/* ---- plots --------------------------------------------------------------- */

/* The .dat block a series must have: one line per tokens value, ascending. */
static void expect_block(const char *dat, const char *heading, const cplab_bench_results *r, int tp, int pcp,
                         cplab_bench_metric metric, const int64_t *tokens, int count) {
  char block[2048];
  int at = snprintf(block, sizeof block, "%s\n# tokens median ci_low ci_high\n", heading);
  for (int k = 0; k < count; k++) {
    const cplab_bench_point *p = NULL;
    for (size_t i = 0; i < r->n; i++)
      if (r->points[i].tp == tp && r->points[i].pcp == pcp && r->points[i].metric == metric &&
          r->points[i].tokens == tokens[k])
        p = &r->points[i];
    assert_non_null(p);
    at += snprintf(block + at, sizeof block - (size_t)at, "%lld %.17g %.17g %.17g\n", (long long)tokens[k],
                   p->stats.median, p->stats.ci_low, p->stats.ci_high);
  }
  snprintf(block + at, sizeof block - (size_t)at, "\n\n");
  expect_contains(dat, block);
}

static void make_fake_gnuplot(const char *bindir, const char *body) {
  char path[700];
  assert_int_equal(mkdir(bindir, 0755), 0);
  snprintf(path, sizeof path, "%s/gnuplot", bindir);
  write_bytes(path, body, strlen(body));
  assert_int_equal(chmod(path, 0755), 0);
}

static int has_prefix_file(const char *path, const void *magic, size_t n) {
  size_t len;
  char *text = read_text(path, &len);
  int ok = len >= n && memcmp(text, magic, n) == 0;
  free(text);
  return ok;
}

/* A results file of format 1 (before the layout name and the heads were
 * recorded, the parallel sizes' column named "layout") still reads: the
 * layout vllm, the heads not recorded. */
static void test_h5_version1(void **state) {
  (void)state;
  cplab_bench_results r, back;
  reference_results(&r);
  char *dir = make_tempdir(), path[600];
  snprintf(path, sizeof path, "%s/v1.h5", dir);
  cplab_diag d = {0};
  expect_ok(cplab_bench_write_h5(&r, path, &d), &d);
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  assert_true(f >= 0);
  set_format(f, "1.0.0");
  assert_true(H5Adelete(f, "layout") >= 0 && H5Adelete(f, "head_pad") >= 0);
  assert_true(H5Ldelete(f, "points/heads", H5P_DEFAULT) >= 0 && H5Ldelete(f, "points/heads_run", H5P_DEFAULT) >= 0);
  assert_true(H5Lmove(f, "points/parallel", f, "points/layout", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  assert_true(H5Fclose(f) >= 0);
  expect_ok(cplab_bench_read_h5(path, &back, &d), &d);
  assert_string_equal(back.meta.layout, "vllm");
  assert_int_equal(back.meta.head_pad, -1);
  assert_int_equal(back.n, r.n);
  for (size_t i = 0; i < r.n; i++) {
    assert_string_equal(back.points[i].parallel, r.points[i].parallel);
    assert_true(back.points[i].heads == 0 && back.points[i].heads_run == 0);
  }
  char *md = markdown_of(&back);
  expect_contains(md, "| query heads | not recorded (results before format 2.0.0 ran each rank's real heads) |\n");
  expect_contains(md, "| 0 | eager | prefill 32768 in / 1 out, TTFT ms | tp4 | 4 | — | 3 |");
  free(md);
  cplab_bench_results_free(&back);
  cplab_bench_results_free(&r);
  remove_tree(dir);
  free(dir);
}

static void test_plots(void **state) {
  (void)state;
  static const double x1[3] = {10, 11, 12}, x2[3] = {20, 21, 22}, x3[3] = {40, 41, 43}, y1[3] = {5, 6, 7},
                      y2[3] = {2, 3, 4}, y3[3] = {1, 2, 3}, z1[2] = {1, 1.5}, z2[2] = {2, 2.5};
  cplab_bench_results r;
  fill_meta(&r);
  /* Inserted out of order: the plot data must sort the tokens. */
  add_ok(&r, make_point(4, 1, 1, "prefill", 32768, "eager", x3, 3));
  add_ok(&r, make_point(1, 4, 1, "prefill", 32768, "eager", y1, 3));
  add_ok(&r, make_point(4, 1, 1, "prefill", 8192, "eager", x1, 3));
  add_ok(&r, make_point(1, 4, 1, "prefill", 16384, "eager", y2, 3));
  add_ok(&r, make_point(4, 1, 1, "decode", 65536, "eager", z2, 2));
  add_ok(&r, make_point(1, 4, 1, "prefill", 8192, "eager", y3, 3));
  add_ok(&r, make_point(4, 1, 1, "prefill", 16384, "eager", x2, 3));
  add_ok(&r, make_point(4, 1, 1, "decode", 32768, "eager", z1, 2));
  assert_int_equal(cplab_bench_results_finish(&r, NULL), 0);
  char *dir = make_tempdir(), prefix[600], path[700];
  snprintf(prefix, sizeof prefix, "%s/bench", dir);
  cplab_diag d = {0};
  expect_ok(cplab_bench_write_plots(&r, prefix, 0, &d), &d);
  snprintf(path, sizeof path, "%s.dat", prefix);
  char *dat = read_text(path, NULL);
  snprintf(path, sizeof path, "%s.gp", prefix);
  char *gp = read_text(path, NULL);
  const int64_t prefill[3] = {8192, 16384, 32768}, decode[2] = {32768, 65536};
  expect_block(dat, "# index 0: bench-ttft-eager, tp4", &r, 4, 1, CPLAB_BENCH_TTFT, prefill, 3);
  expect_block(dat, "# index 1: bench-ttft-eager, pcp4", &r, 1, 4, CPLAB_BENCH_TTFT, prefill, 3);
  expect_block(dat, "# index 2: bench-tpot-eager, tp4", &r, 4, 1, CPLAB_BENCH_TPOT, decode, 2);
  assert_null(strstr(dat, "# index 3"));
  const char *expected[] = {
      "if (!exists('out_suffix')) out_suffix = ''\n",
      "png_terminal = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'pngcairo' : 'png'\n",
      "set logscale x 2\n",
      "set title 'TTFT against prefill tokens, graph mode eager (glm-5, NVIDIA H200 (test))'\n",
      "set xlabel 'prefill tokens per request'\nset ylabel 'TTFT (ms)'\n",
      ("eval('set terminal ' . png_terminal . ' size 1000,600')\nset termoption noenhanced\n"
       "set output 'bench-ttft-eager.png' . out_suffix\n"
       "plot 'bench.dat' index 0 using 1:2:3:4 with yerrorlines title 'tp4', \\\n"
       "     'bench.dat' index 1 using 1:2:3:4 with yerrorlines title 'pcp4'\nunset output\n"),
      "set terminal svg size 1000,600\nset termoption noenhanced\nset output 'bench-ttft-eager.svg' . out_suffix\n",
      "set xlabel 'context length (tokens)'\nset ylabel 'TPOT (ms)'\n",
      ("set output 'bench-tpot-eager.png' . out_suffix\n"
       "plot 'bench.dat' index 2 using 1:2:3:4 with yerrorlines title 'tp4'\n"),
      "set output 'bench-tpot-eager.svg' . out_suffix\n",
  };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) expect_contains(gp, expected[i]);
  assert_null(strstr(gp, dir)); /* names relative to the script's directory */
  free(dat), free(gp);

  /* Rendering with the gnuplot on PATH, where there is one. */
  char *saved = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
    cplab_diag g = {0};
    int rc = cplab_bench_write_plots(&r, prefix, 1, &g);
    if (rc) print_error("render: %s\n", g.msg);
    assert_int_equal(rc, 0);
    const char *kinds[] = {"ttft", "tpot"};
    for (int k = 0; k < 2; k++) {
      snprintf(path, sizeof path, "%s-%s-eager.png", prefix, kinds[k]);
      assert_true(has_prefix_file(path, "\x89PNG\r\n\x1a\n", 8));
      snprintf(path, sizeof path, "%s-%s-eager.svg", prefix, kinds[k]);
      char *svg = read_text(path, NULL);
      expect_contains(svg, "<svg");
      free(svg);
    }
    assert_int_equal(count_entries(dir, ".tmp."), 0);
  } else {
    print_message("# gnuplot is not on PATH: rendering not tested here (the not-found path is)\n");
  }
  /* No gnuplot: CPLAB_ENOTFOUND, the script stays to be rendered later. */
  char bin[700];
  snprintf(bin, sizeof bin, "%s/empty-bin", dir);
  assert_int_equal(mkdir(bin, 0755), 0);
  setenv("PATH", bin, 1);
  cplab_diag nf = {0};
  assert_int_equal(cplab_bench_write_plots(&r, prefix, 1, &nf), CPLAB_ENOTFOUND);
  expect_contains(nf.msg, "gnuplot is not on PATH");
  expect_contains(nf.msg, "bench.gp is there to render later");
  snprintf(path, sizeof path, "%s.gp", prefix);
  assert_int_equal(access(path, R_OK), 0);
  /* A failing gnuplot: its message, no images, no temporaries. */
  snprintf(bin, sizeof bin, "%s/failing-bin", dir);
  make_fake_gnuplot(bin, "#!/bin/sh\necho \"bench.gp line 3: boom\" >&2\nexit 1\n");
  setenv("PATH", bin, 1);
  snprintf(prefix, sizeof prefix, "%s/other", dir);
  cplab_diag fl = {0};
  assert_int_equal(cplab_bench_write_plots(&r, prefix, 1, &fl), CPLAB_EIO);
  expect_contains(fl.msg, "failed (exit 1): bench.gp line 3: boom");
  /* One that succeeds without making the images. */
  snprintf(bin, sizeof bin, "%s/lazy-bin", dir);
  make_fake_gnuplot(bin, "#!/bin/sh\nexit 0\n");
  setenv("PATH", bin, 1);
  cplab_diag lz = {0};
  assert_int_equal(cplab_bench_write_plots(&r, prefix, 1, &lz), CPLAB_EIO);
  expect_contains(lz.msg, "gnuplot did not make");
  assert_int_equal(count_entries(dir, "other-"), 0);
  assert_int_equal(count_entries(dir, ".tmp."), 0);
  setenv("PATH", saved, 1);
  free(saved);
  /* A prefix must end in a name. */
  snprintf(prefix, sizeof prefix, "%s/", dir);
  cplab_diag bp = {0};
  assert_int_equal(cplab_bench_write_plots(&r, prefix, 0, &bp), CPLAB_EINVAL);
  expect_contains(bp.msg, "must end in a file name");
  remove_tree(dir);
  free(dir);
  cplab_bench_results_free(&r);
}

/* ---- atomic writes ------------------------------------------------------- */

static int write_any(int kind, const cplab_bench_results *r, const char *path, cplab_diag *d) {
  switch (kind) {
    case 0: return cplab_bench_write_json(r, path, d);
    case 1: return cplab_bench_write_h5(r, path, d);
    case 2: return cplab_bench_write_markdown_file(r, path, d);
    default: return cplab_bench_write_plots(r, path, 0, d);
  }
}

static void test_atomic_writes(void **state) {
  (void)state;
  cplab_bench_results r;
  reference_results(&r);
  char *dir = make_tempdir(), path[1400], missing[700];
  snprintf(missing, sizeof missing, "%s/missing", dir);
  const char *names[4] = {"out.json", "out.h5", "out.md", "plots"};
  for (int kind = 0; kind < 4; kind++) {
    /* In a directory that does not exist: a clean error, nothing created. */
    snprintf(path, sizeof path, "%s/%s", missing, names[kind]);
    cplab_diag d = {0};
    assert_int_equal(write_any(kind, &r, path, &d), CPLAB_EIO);
    expect_contains(d.msg, "cannot create a temporary file beside");
    expect_contains(d.msg, missing);
    assert_int_equal(access(missing, F_OK), -1);
    /* Onto a directory: the rename fails, the temporary is removed. */
    snprintf(path, sizeof path, "%s/%s%s", dir, names[kind], kind == 3 ? ".dat" : "");
    assert_int_equal(mkdir(path, 0755), 0);
    if (kind == 3) snprintf(path, sizeof path, "%s/plots", dir);
    cplab_diag e = {0};
    assert_int_equal(write_any(kind, &r, path, &e), CPLAB_EIO);
    expect_contains(e.msg, "cannot rename");
    assert_int_equal(count_entries(dir, ".tmp."), 0);
  }
  assert_int_equal(count_entries(dir, ""), 2 + 4); /* ".", "..", and the four directories */
  /* A failed write leaves an existing target as it was. */
  snprintf(path, sizeof path, "%s/keep.json", dir);
  write_bytes(path, "old\n", 4);
  snprintf(r.meta.note, sizeof r.meta.note, "bad \xff byte");
  cplab_diag u = {0};
  assert_int_equal(cplab_bench_write_json(&r, path, &u), CPLAB_EINVAL);
  expect_contains(u.msg, "meta.note is not valid UTF-8");
  char *text = read_text(path, NULL);
  assert_string_equal(text, "old\n");
  free(text);
  remove_tree(dir);
  free(dir);
  cplab_bench_results_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_labels),
      cmocka_unit_test(test_add_rejections),
      cmocka_unit_test(test_finish_stats_and_baselines),
      cmocka_unit_test(test_zero_baseline),
      cmocka_unit_test(test_markdown),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_h5_round_trip),
      cmocka_unit_test(test_h5_damaged),
      cmocka_unit_test(test_h5_version1),
      cmocka_unit_test(test_plots),
      cmocka_unit_test(test_atomic_writes),
  };
  return cmocka_run_group_tests_name("bench_report", tests, NULL, NULL);
}
