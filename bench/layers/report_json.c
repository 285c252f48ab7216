/* cplab-bench's JSON results: see report.h and RESULTS.md. Keys in a fixed
 * order (insertion order, JSON_PRESERVE_ORDER), reals with 17 significant
 * digits so every double reads back bit for bit, NAN as null (JSON has no
 * NaN). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_internal.h"

/* jansson's setters take ownership of the value even when they fail, and a
 * NULL value makes them fail: one flag per object collects every failure. */
static void put(json_t *obj, const char *key, json_t *v, int *bad) {
  if (!v || json_object_set_new(obj, key, v) != 0) *bad = 1;
}

static json_t *real_or_null(double v) { return isnan(v) ? json_null() : json_real(v); }

static json_t *meta_json(const cplab_bench_meta *m) {
  json_t *o = json_object();
  int bad = !o;
  if (bad) return NULL;
  put(o, "card", json_string(m->card), &bad);
  put(o, "date", json_string(m->date), &bad);
  put(o, "commit", json_string(m->commit), &bad);
  put(o, "command", json_string(m->command), &bad);
  put(o, "preset", json_string(m->preset), &bad);
  put(o, "layout", json_string(m->layout), &bad);
  put(o, "head_pad", m->head_pad >= 0 ? json_integer(m->head_pad) : json_null(), &bad);
  put(o, "backend", json_string(m->backend), &bad);
  put(o, "gpus", json_integer(m->gpus), &bad);
  put(o, "layers", json_integer(m->layers), &bad);
  put(o, "note", json_string(m->note), &bad);
  put(o, "seed", json_integer((json_int_t)m->seed), &bad);
  put(o, "resamples", json_integer(m->resamples), &bad);
  if (bad) json_decref(o), o = NULL;
  return o;
}

static json_t *stats_json(const cplab_stats *s) {
  json_t *o = json_object();
  int bad = !o;
  if (bad) return NULL;
  put(o, "n", json_integer((json_int_t)s->n), &bad);
  put(o, "median", json_real(s->median), &bad);
  put(o, "p99", json_real(s->p99), &bad);
  put(o, "mean", json_real(s->mean), &bad);
  put(o, "stddev", json_real(s->stddev), &bad);
  put(o, "min", json_real(s->min), &bad);
  put(o, "max", json_real(s->max), &bad);
  put(o, "ci_low", json_real(s->ci_low), &bad);
  put(o, "ci_high", json_real(s->ci_high), &bad);
  if (bad) json_decref(o), o = NULL;
  return o;
}

/* {"ratio", "ci_low", "ci_high"}, or null without a ratio. */
static json_t *ratio_json(const cplab_ratio *q) {
  if (isnan(q->ratio)) return json_null();
  json_t *o = json_object();
  int bad = !o;
  if (bad) return NULL;
  put(o, "ratio", real_or_null(q->ratio), &bad);
  put(o, "ci_low", real_or_null(q->ci_low), &bad);
  put(o, "ci_high", real_or_null(q->ci_high), &bad);
  if (bad) json_decref(o), o = NULL;
  return o;
}

static json_t *phases_json(const double *phase_ms) {
  json_t *o = json_object();
  int bad = !o;
  for (int k = 0; !bad && k < CPLAB_BENCH_PHASES; k++)
    put(o, cplab_bench_phase_name(k), real_or_null(phase_ms[k]), &bad);
  if (bad) json_decref(o), o = NULL;
  return o;
}

static json_t *samples_json(const double *x, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_real(x[i])) != 0) json_decref(a), a = NULL;
  return a;
}

static json_t *point_json(const cplab_bench_results *r, size_t i) {
  const cplab_bench_point *p = &r->points[i];
  json_t *o = json_object();
  int bad = !o;
  if (bad) return NULL;
  put(o, "index", json_integer((json_int_t)i), &bad);
  put(o, "parallel", json_string(p->parallel), &bad);
  put(o, "tp", json_integer(p->tp), &bad);
  put(o, "pcp", json_integer(p->pcp), &bad);
  put(o, "dcp", json_integer(p->dcp), &bad);
  put(o, "gpus", json_integer(cplab_bench_parallel_world(p->tp, p->pcp, p->dcp)), &bad);
  put(o, "heads", p->heads ? json_integer(p->heads) : json_null(), &bad);
  put(o, "heads_run", p->heads ? json_integer(p->heads_run) : json_null(), &bad);
  put(o, "workload", json_string(p->workload), &bad);
  put(o, "tokens", json_integer(p->tokens), &bad);
  put(o, "batch", json_integer(p->batch), &bad);
  put(o, "out_tokens", json_integer(p->out_tokens), &bad);
  put(o, "graph", json_string(p->graph), &bad);
  put(o, "metric", json_string(cplab_bench_metric_name(p->metric)), &bad);
  put(o, "stats", stats_json(&p->stats), &bad);
  put(o, "baseline", p->baseline >= 0 ? json_integer(p->baseline) : json_null(), &bad);
  put(o, "ratio", ratio_json(&p->ratio), &bad);
  put(o, "phases_ms", phases_json(p->phase_ms), &bad);
  put(o, "samples_ms", samples_json(p->samples_ms, p->n), &bad);
  if (bad) json_decref(o), o = NULL;
  return o;
}

static json_t *results_json(const cplab_bench_results *r) {
  json_t *o = json_object(), *points = json_array();
  int bad = !o || !points;
  if (o) {
    put(o, "format", json_string(CPLAB_BENCH_FORMAT_NAME), &bad);
    put(o, "version", json_string(CPLAB_BENCH_FORMAT_VERSION), &bad);
    put(o, "meta", meta_json(&r->meta), &bad);
  }
  for (size_t i = 0; !bad && i < r->n; i++)
    if (json_array_append_new(points, point_json(r, i)) != 0) bad = 1;
  if (o)
    put(o, "points", points, &bad);
  else
    json_decref(points);
  if (bad) json_decref(o), o = NULL;
  return o;
}

int cplab_bench_write_json(const cplab_bench_results *r, const char *path, cplab_diag *d) {
  int rc = report_check_finished(r, path, d);
  if (rc) return rc;
  /* json_string() refuses invalid UTF-8: name the field that has it. */
  const struct {
    const char *name, *v;
  } texts[] = {{"card", r->meta.card},       {"date", r->meta.date},     {"commit", r->meta.commit},
               {"command", r->meta.command}, {"preset", r->meta.preset}, {"layout", r->meta.layout},
               {"backend", r->meta.backend}, {"note", r->meta.note}};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    json_t *probe = json_string(texts[i].v);
    if (!probe) CPLAB_FAIL(d, CPLAB_EINVAL, "%s: meta.%s is not valid UTF-8", path, texts[i].name);
    json_decref(probe);
  }
  json_t *root = results_json(r);
  char *text = root ? json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) : NULL;
  json_decref(root);
  if (!text) CPLAB_FAIL(d, CPLAB_ENOMEM, "%s: out of memory for the JSON results", path);
  size_t len = strlen(text);
  char *line = realloc(text, len + 2); /* end with a newline, as text files do */
  if (!line) {
    free(text);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "%s: out of memory for the JSON results", path);
  }
  line[len] = '\n', line[len + 1] = '\0';
  report_text t = {.data = line, .len = len + 1};
  return report_text_commit(&t, path, d);
}
