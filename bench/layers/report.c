/* The results model of cplab-bench: see report.h. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "cplab/parallel.h"
#include "cplab/scenario.h"
#include "cplab/seed.h"
#include "report_internal.h"

const char *const report_workload_names[REPORT_WORKLOADS] = {"prefill", "decode", "mixed"};

const char *cplab_bench_metric_name(cplab_bench_metric m) {
  return m == CPLAB_BENCH_TTFT ? "TTFT" : m == CPLAB_BENCH_TPOT ? "TPOT" : "?";
}

const char *cplab_bench_phase_name(int phase) {
  static const char *const names[CPLAB_BENCH_PHASES] = {"proj", "indexer", "attention", "moe", "comm"};
  return phase >= 0 && phase < CPLAB_BENCH_PHASES ? names[phase] : "?";
}

int report_name_index(const char *const *names, int count, const char *s, size_t cap) {
  if (!memchr(s, '\0', cap)) return -1;
  for (int i = 0; i < count; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

void cplab_bench_results_init(cplab_bench_results *r) {
  *r = (cplab_bench_results){.meta = {.resamples = 2000, .gpus = 1, .layers = 1, .layout = "vllm", .head_pad = 0}};
}

int cplab_bench_parallel_label(int tp, int pcp, int dcp, char *buf, size_t len) {
  if (tp < 1 || pcp < 1 || dcp < 1) return CPLAB_EINVAL;
  const struct {
    const char *name;
    int size;
  } parts[] = {{"tp", tp}, {"pcp", pcp}, {"dcp", dcp}};
  char text[64]; /* three ints and their names always fit */
  int at = 0;
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (parts[i].size > 1) at += snprintf(text + at, sizeof text - (size_t)at, "%s%d", parts[i].name, parts[i].size);
  if (at == 0) at = snprintf(text, sizeof text, "tp1");
  if (!buf || (size_t)at >= len) return CPLAB_ERANGE;
  memcpy(buf, text, (size_t)at + 1);
  return 0;
}

int cplab_bench_parallel_world(int tp, int pcp, int dcp) {
  (void)dcp; /* DCP shards the KV cache inside the TP x PCP world: no GPUs of its own */
  return tp * pcp;
}

uint64_t cplab_bench_point_seed(uint64_t seed, size_t index) {
  return cplab_splitmix64(seed ^ cplab_splitmix64((uint64_t)index));
}

/* "tp=4 pcp=1 dcp=1, prefill, tokens 32768, batch 1, out 1, eager, TTFT":
 * from raw fields, which may still be invalid (strings bounded). */
static void describe(const cplab_bench_point *p, char *buf, size_t len) {
  snprintf(buf, len, "point tp=%d pcp=%d dcp=%d, %.*s, tokens %lld, batch %lld, out %lld, %.*s, %s", p->tp, p->pcp,
           p->dcp, (int)sizeof p->workload, p->workload, (long long)p->tokens, (long long)p->batch,
           (long long)p->out_tokens, (int)sizeof p->graph, p->graph, cplab_bench_metric_name(p->metric));
}

static int check_names(const cplab_bench_point *p, const char *what, cplab_diag *d) {
  int w = report_name_index(report_workload_names, REPORT_WORKLOADS, p->workload, sizeof p->workload);
  if (w < 0)
    CPLAB_FAIL(d, CPLAB_EINVAL, "%s: unknown workload '%.*s' (prefill, decode or mixed)", what, (int)sizeof p->workload,
               p->workload);
  if (report_graph_of(p) < 0)
    CPLAB_FAIL(d, CPLAB_EINVAL, "%s: unknown graph mode '%.*s' (eager, piecewise, full_decode_only or full)", what,
               (int)sizeof p->graph, p->graph);
  if (p->metric != CPLAB_BENCH_TTFT && p->metric != CPLAB_BENCH_TPOT)
    CPLAB_FAIL(d, CPLAB_EINVAL, "%s: unknown metric %d (TTFT or TPOT)", what, (int)p->metric);
  /* A prefill step yields the first token (TTFT); a decode step one more (TPOT). */
  cplab_bench_metric want = w == 0 ? CPLAB_BENCH_TTFT : CPLAB_BENCH_TPOT;
  if (w != 2 && p->metric != want)
    CPLAB_FAIL(d, CPLAB_EINVAL, "%s: a %s point measures %s, not %s", what, report_workload_names[w],
               cplab_bench_metric_name(want), cplab_bench_metric_name(p->metric));
  return 0;
}

/* The project's rules for the parallel sizes (common/parallel.c), the
 * label, and the heads. */
static int check_parallel(const cplab_bench_point *p, const char *what, char *label, cplab_diag *d) {
  cplab_parallel par;
  cplab_parallel_defaults(&par);
  par.tp = p->tp, par.pcp = p->pcp, par.dcp = p->dcp, par.max_model_len = 1;
  cplab_diag why = {0};
  if (cplab_parallel_check(&par, 0, &why) != 0)
    CPLAB_FAIL(d, CPLAB_EINVAL, "%s: bad parallel sizes: %s", what, why.msg);
  if (cplab_bench_parallel_label(p->tp, p->pcp, p->dcp, label, sizeof p->parallel) != 0)
    CPLAB_FAIL(d, CPLAB_EINTERNAL, "%s: no parallel label", what);
  if (!memchr(p->parallel, '\0', sizeof p->parallel) || (p->parallel[0] && strcmp(p->parallel, label) != 0))
    CPLAB_FAIL(d, CPLAB_EINVAL, "%s: parallel label '%.*s' does not match the sizes (%s)", what,
               (int)sizeof p->parallel, p->parallel, label);
  if (p->heads < 0 || p->heads_run < p->heads || (p->heads == 0) != (p->heads_run == 0))
    CPLAB_FAIL(d, CPLAB_EINVAL, "%s: heads %d, run %d: expected 0 < heads <= run (or both 0: not recorded)", what,
               p->heads, p->heads_run);
  return 0;
}

static int check_values(const cplab_bench_point *p, const char *what, cplab_diag *d) {
  const struct {
    const char *name;
    int64_t v;
  } counts[] = {{"tokens", p->tokens}, {"batch", p->batch}, {"out_tokens", p->out_tokens}};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
    if (counts[i].v < 1)
      CPLAB_FAIL(d, CPLAB_EINVAL, "%s: %s must be >= 1, got %lld", what, counts[i].name, (long long)counts[i].v);
  if (p->n == 0 || !p->samples_ms) CPLAB_FAIL(d, CPLAB_EINVAL, "%s: has no samples", what);
  if (p->n > CPLAB_BENCH_MAX_SAMPLES)
    CPLAB_FAIL(d, CPLAB_EINVAL, "%s: %zu samples, more than %zu", what, p->n, CPLAB_BENCH_MAX_SAMPLES);
  for (size_t i = 0; i < p->n; i++)
    if (!isfinite(p->samples_ms[i]) || p->samples_ms[i] < 0)
      CPLAB_FAIL(d, CPLAB_EINVAL, "%s: sample %zu is %g ms: samples must be finite and >= 0", what, i,
                 p->samples_ms[i]);
  for (int k = 0; k < CPLAB_BENCH_PHASES; k++)
    if (!isnan(p->phase_ms[k]) && (!isfinite(p->phase_ms[k]) || p->phase_ms[k] < 0))
      CPLAB_FAIL(d, CPLAB_EINVAL, "%s: phase '%s' is %g ms: phase times must be finite and >= 0, or NAN", what,
                 cplab_bench_phase_name(k), p->phase_ms[k]);
  return 0;
}

/* Same configuration: what a report row and column identify. */
static int same_config(const cplab_bench_point *a, const cplab_bench_point *b) {
  return a->tp == b->tp && a->pcp == b->pcp && a->dcp == b->dcp && report_row_cmp(a, b) == 0 &&
         strcmp(a->graph, b->graph) == 0;
}

/* Zero the bytes after the string's NUL: stored points are then equal byte
 * for byte whatever the caller's buffer held, and so are the files. */
static void zero_tail(char *s, size_t size) {
  size_t n = strnlen(s, size);
  memset(s + n, 0, size - n);
}

int cplab_bench_results_add(cplab_bench_results *r, const cplab_bench_point *p, cplab_diag *d) {
  char what[256], label[sizeof p->parallel] = {0};
  describe(p, what, sizeof what);
  int rc;
  if ((rc = check_names(p, what, d)) || (rc = check_parallel(p, what, label, d)) || (rc = check_values(p, what, d)))
    return rc;
  for (size_t i = 0; i < r->n; i++)
    if (same_config(&r->points[i], p)) CPLAB_FAIL(d, CPLAB_EINVAL, "%s: duplicates point %zu", what, i);
  if (r->n == CPLAB_BENCH_MAX_POINTS) CPLAB_FAIL(d, CPLAB_EINVAL, "%s: more than %zu points", what, r->n);
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 16;
    cplab_bench_point *grown = realloc(r->points, cap * sizeof *grown);
    if (!grown) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %zu points", cap);
    r->points = grown, r->cap = cap;
  }
  double *copy = malloc(p->n * sizeof *copy);
  if (!copy) CPLAB_FAIL(d, CPLAB_ENOMEM, "%s: out of memory for %zu samples", what, p->n);
  memcpy(copy, p->samples_ms, p->n * sizeof *copy);
  cplab_bench_point *q = &r->points[r->n++];
  *q = *p;
  memcpy(q->parallel, label, sizeof q->parallel);
  zero_tail(q->workload, sizeof q->workload);
  zero_tail(q->graph, sizeof q->graph);
  q->samples_ms = copy;
  q->stats = (cplab_stats){0};
  q->baseline = -1;
  q->ratio = (cplab_ratio){NAN, NAN, NAN};
  r->finished = 0;
  return 0;
}

long cplab_bench_results_baseline_of(const cplab_bench_results *r, size_t i) {
  const cplab_bench_point *p = &r->points[i];
  int world = cplab_bench_parallel_world(p->tp, p->pcp, p->dcp);
  for (size_t j = 0; j < r->n; j++) {
    const cplab_bench_point *b = &r->points[j];
    if (b->pcp == 1 && b->dcp == 1 && b->tp == world && report_row_cmp(p, b) == 0 && strcmp(p->graph, b->graph) == 0)
      return (long)j;
  }
  return -1;
}

static int compare_with_baseline(cplab_bench_results *r, size_t i, cplab_diag *d) {
  cplab_bench_point *p = &r->points[i];
  p->baseline = cplab_bench_results_baseline_of(r, i);
  p->ratio = (cplab_ratio){NAN, NAN, NAN};
  if (p->baseline == (long)i) p->ratio = (cplab_ratio){1, 1, 1};
  if (p->baseline < 0 || p->baseline == (long)i) return 0;
  const cplab_bench_point *b = &r->points[p->baseline];
  if (!(b->stats.median > 0)) return 0; /* no ratio against a zero time */
  return cplab_stats_ratio(p->samples_ms, p->n, b->samples_ms, b->n, cplab_bench_point_seed(r->meta.seed, i),
                           r->meta.resamples, &p->ratio, d);
}

int cplab_bench_results_finish(cplab_bench_results *r, cplab_diag *d) {
  r->finished = 0;
  if (r->meta.resamples < 100)
    CPLAB_FAIL(d, CPLAB_EINVAL, "meta.resamples: a bootstrap needs at least 100 resamples, got %d", r->meta.resamples);
  if (r->meta.seed > CPLAB_MAX_SEED)
    CPLAB_FAIL(d, CPLAB_EINVAL, "meta.seed: must be at most %llu (exact in JSON), got %llu",
               (unsigned long long)CPLAB_MAX_SEED, (unsigned long long)r->meta.seed);
  const struct {
    const char *name, *text;
    size_t size;
  } texts[] = {{"card", r->meta.card, sizeof r->meta.card},       {"date", r->meta.date, sizeof r->meta.date},
               {"commit", r->meta.commit, sizeof r->meta.commit}, {"command", r->meta.command, sizeof r->meta.command},
               {"preset", r->meta.preset, sizeof r->meta.preset}, {"backend", r->meta.backend, sizeof r->meta.backend},
               {"note", r->meta.note, sizeof r->meta.note}};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    if (!memchr(texts[i].text, '\0', texts[i].size))
      CPLAB_FAIL(d, CPLAB_EINVAL, "meta.%s: not a NUL-terminated string", texts[i].name);
  for (size_t i = 0; i < r->n; i++) {
    cplab_bench_point *p = &r->points[i];
    int rc = cplab_stats_summarize(p->samples_ms, p->n, cplab_bench_point_seed(r->meta.seed, i), r->meta.resamples,
                                   &p->stats, d);
    if (rc) {
      cplab_diag_prefix(d, "point %zu (%s): ", i, p->parallel);
      return rc;
    }
  }
  for (size_t i = 0; i < r->n; i++) {
    int rc = compare_with_baseline(r, i, d);
    if (rc) {
      cplab_diag_prefix(d, "point %zu (%s) against its baseline: ", i, r->points[i].parallel);
      return rc;
    }
  }
  r->finished = 1;
  return 0;
}

void cplab_bench_results_free(cplab_bench_results *r) {
  for (size_t i = 0; i < r->n; i++) free(r->points[i].samples_ms);
  free(r->points);
  r->points = NULL;
  r->n = r->cap = 0;
  r->finished = 0;
}

int report_check_finished(const cplab_bench_results *r, const char *what, cplab_diag *d) {
  if (!r->finished)
    CPLAB_FAIL(d, CPLAB_EINVAL, "%s: the results are not finished (call cplab_bench_results_finish first)", what);
  return 0;
}

static int cmp_int64(int64_t a, int64_t b) { return (a > b) - (a < b); }

int report_parallel_cmp(const cplab_bench_point *a, const cplab_bench_point *b) {
  int c = cmp_int64(cplab_bench_parallel_world(a->tp, a->pcp, a->dcp),
                    cplab_bench_parallel_world(b->tp, b->pcp, b->dcp));
  if (!c) c = cmp_int64(a->dcp, b->dcp);
  if (!c) c = cmp_int64(a->pcp, b->pcp);
  if (!c) c = cmp_int64(a->tp, b->tp);
  return c;
}

int report_row_cmp(const cplab_bench_point *a, const cplab_bench_point *b) {
  int c = cmp_int64(report_name_index(report_workload_names, REPORT_WORKLOADS, a->workload, sizeof a->workload),
                    report_name_index(report_workload_names, REPORT_WORKLOADS, b->workload, sizeof b->workload));
  if (!c) c = cmp_int64(a->metric, b->metric);
  if (!c) c = cmp_int64(a->tokens, b->tokens);
  if (!c) c = cmp_int64(a->batch, b->batch);
  if (!c) c = cmp_int64(a->out_tokens, b->out_tokens);
  return c;
}

int report_series_cmp(const cplab_bench_point *a, const cplab_bench_point *b) {
  int c = report_parallel_cmp(a, b);
  if (!c)
    c = cmp_int64(report_name_index(report_workload_names, REPORT_WORKLOADS, a->workload, sizeof a->workload),
                  report_name_index(report_workload_names, REPORT_WORKLOADS, b->workload, sizeof b->workload));
  if (!c) c = cmp_int64(a->metric, b->metric);
  if (!c) c = cmp_int64(a->batch, b->batch);
  if (!c) c = cmp_int64(a->out_tokens, b->out_tokens);
  if (!c) c = cmp_int64(a->tokens, b->tokens);
  return c;
}

/* Insertion sort: stable without a context argument qsort lacks, and fast
 * enough for CPLAB_BENCH_MAX_POINTS. */
void report_sort(const cplab_bench_point **pts, size_t m, report_point_cmp cmp) {
  for (size_t i = 1; i < m; i++) {
    const cplab_bench_point *p = pts[i];
    size_t j = i;
    for (; j > 0 && cmp(pts[j - 1], p) > 0; j--) pts[j] = pts[j - 1];
    pts[j] = p;
  }
}

size_t report_unique(const cplab_bench_point **pts, size_t m, report_point_cmp cmp) {
  size_t k = 0;
  for (size_t i = 0; i < m; i++)
    if (k == 0 || cmp(pts[k - 1], pts[i]) != 0) pts[k++] = pts[i];
  return k;
}

int report_graph_of(const cplab_bench_point *p) {
  cplab_graph_mode g;
  if (!memchr(p->graph, '\0', sizeof p->graph) || cplab_graph_mode_parse_label(p->graph, &g) != 0) return -1;
  return (int)g;
}

size_t report_select_graph(const cplab_bench_results *r, int g, const cplab_bench_point **out) {
  size_t m = 0;
  for (size_t i = 0; i < r->n; i++)
    if (g < 0 || report_graph_of(&r->points[i]) == g) out[m++] = &r->points[i];
  return m;
}

void report_row_label(const cplab_bench_point *p, char *buf, size_t len) {
  const char *metric = cplab_bench_metric_name(p->metric);
  long long tokens = p->tokens, batch = p->batch, out = p->out_tokens;
  switch (report_name_index(report_workload_names, REPORT_WORKLOADS, p->workload, sizeof p->workload)) {
    case 0:
      if (batch == 1)
        snprintf(buf, len, "prefill %lld in / %lld out, %s ms", tokens, out, metric);
      else
        snprintf(buf, len, "prefill %lld in / %lld out, batch %lld, %s ms", tokens, out, batch, metric);
      break;
    case 1:
      snprintf(buf, len, "decode 1 in / %lld out, ctx %lld, batch %lld, %s ms", out, tokens, batch, metric);
      break;
    default: snprintf(buf, len, "mixed %lld tokens / %lld out, batch %lld, %s ms", tokens, out, batch, metric); break;
  }
}

void report_format_ms(double v, char *buf, size_t len) {
  if (isnan(v))
    snprintf(buf, len, "—");
  else if (fabs(v) >= 100)
    snprintf(buf, len, "%.1f", v);
  else if (fabs(v) >= 1)
    snprintf(buf, len, "%.2f", v);
  else
    snprintf(buf, len, "%.3g", v);
}

int report_text_open(report_text *t, cplab_diag *d) {
  *t = (report_text){0};
  t->f = open_memstream(&t->data, &t->len);
  if (!t->f) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for a report");
  return 0;
}

int report_text_close(report_text *t, cplab_diag *d) {
  int bad = ferror(t->f);
  if (fclose(t->f) != 0) bad = 1;
  t->f = NULL;
  if (bad) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory while rendering a report");
  return 0;
}

void report_text_free(report_text *t) {
  if (t->f) fclose(t->f);
  free(t->data);
  *t = (report_text){0};
}

int report_text_commit(report_text *t, const char *path, cplab_diag *d) {
  int rc = t->f ? report_text_close(t, d) : 0;
  if (!rc) rc = cplab_atomic_write(path, t->data, t->len, d);
  report_text_free(t);
  return rc;
}
