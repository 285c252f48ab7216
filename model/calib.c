/* Calibration and validation of cplab-model: see calib.h. */
#include "calib.h"

#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "matrix.h"

#define MAX_FILES 32

/* A parsed JSON file with its reader (for located messages). */
typedef struct doc {
  char path[2048];
  char *text;
  json_t *root;
  cplab_json_reader r;
} doc;

static int doc_open(doc *x, const char *dir, const char *rel, cplab_diag *d) {
  memset(x, 0, sizeof *x);
  if (rel[0] == '/') snprintf(x->path, sizeof x->path, "%s", rel);
  else snprintf(x->path, sizeof x->path, "%s/%s", dir, rel);
  size_t len = 0;
  int rc = cplab_json_read_file(x->path, 64u << 20, "validation inputs", &x->text, &len, d);
  cplab_json_reader_init(&x->r, rc ? "" : x->text, rc ? 0 : len, x->path, d);
  if (rc) return rc;
  json_error_t err;
  if (!(x->root = json_loadb(x->text, len, 0, &err)))
    CPLAB_FAIL(d, CPLAB_ESYNTAX, "%s:%d:%d: %s", x->path, err.line, err.column, err.text);
  return cplab_json_expect_object(&x->r, x->root, "(top level)");
}

static void doc_close(doc *x) {
  cplab_json_reader_fini(&x->r);
  json_decref(x->root);
  free(x->text);
  memset(x, 0, sizeof *x);
}

/* One measured point of a cplab-bench results file. */
typedef struct point {
  cplab_bench_layout layout;
  cplab_bench_workload w;
  cplab_bench_graph graph;
  char workload[16], graph_name[16];
  double median, phase[CPLAB_MODEL_PHASES]; /* NAN: not measured */
  char path[CPLAB_PATH_MAX];
} point;

/* The results file's meta: preset, layers, and whether its projections are bf16. */
typedef struct meta {
  char preset[32], backend[16];
  int64_t layers;
  int fp8;
} meta;

static int read_meta(doc *x, meta *m) {
  char fmt[48], note[1024];
  const json_t *mt = json_object_get(x->root, "meta");
  int rc = cplab_json_get_string(&x->r, x->root, "(top level)", "format", 1, NULL, fmt, sizeof fmt);
  if (!rc && strcmp(fmt, "cplab_bench_results") != 0)
    rc = cplab_json_fail(&x->r, "format", 0, CPLAB_ESCHEMA, "'%s': expected cplab_bench_results", fmt);
  if (!rc) rc = cplab_json_expect_object(&x->r, mt, "meta");
  if (!rc) rc = cplab_json_get_string(&x->r, mt, "meta", "preset", 1, NULL, m->preset, sizeof m->preset);
  if (!rc) rc = cplab_json_get_string(&x->r, mt, "meta", "backend", 1, NULL, m->backend, sizeof m->backend);
  if (!rc) rc = cplab_json_get_int(&x->r, mt, "meta", "layers", 1, 0, 1, 100000, &m->layers);
  if (!rc) rc = cplab_json_get_string(&x->r, mt, "meta", "note", 0, "", note, sizeof note);
  m->fp8 = strstr(note, "fp8") != NULL;
  return rc;
}

static int read_point(doc *x, size_t i, point *p, cplab_diag *d) {
  const json_t *pts = json_object_get(x->root, "points"), *e = json_array_get(pts, i), *st, *ph;
  char label[32];
  int64_t tokens = 0, batch = 0, out = 0;
  memset(p, 0, sizeof *p);
  cplab_json_index(p->path, "points", i);
  int rc = cplab_json_expect_object(&x->r, e, p->path);
  if (!rc) rc = cplab_json_get_string(&x->r, e, p->path, "layout", 1, NULL, label, sizeof label);
  if (!rc && cplab_bench_layout_parse(label, &p->layout, d) != 0) {
    cplab_diag local = *d;
    cplab_diag_clear(d);
    rc = cplab_json_fail(&x->r, p->path, 0, CPLAB_ESCHEMA, "layout: %s", local.msg);
  }
  if (!rc) rc = cplab_json_get_string(&x->r, e, p->path, "workload", 1, NULL, p->workload, sizeof p->workload);
  if (!rc) rc = cplab_json_get_string(&x->r, e, p->path, "graph", 1, NULL, p->graph_name, sizeof p->graph_name);
  if (!rc) rc = cplab_json_get_int(&x->r, e, p->path, "tokens", 1, 0, 1, 1 << 20, &tokens);
  if (!rc) rc = cplab_json_get_int(&x->r, e, p->path, "batch", 1, 0, 1, 4096, &batch);
  if (!rc) rc = cplab_json_get_int(&x->r, e, p->path, "out_tokens", 1, 0, 1, 4096, &out);
  if (rc) return rc;
  if (strcmp(p->workload, "prefill") == 0) p->w.kind = CPLAB_BENCH_PREFILL;
  else if (strcmp(p->workload, "decode") == 0) p->w.kind = CPLAB_BENCH_DECODE;
  else return cplab_json_fail(&x->r, p->path, 0, CPLAB_EUNSUPPORTED, "workload '%s': the model predicts prefill and decode", p->workload);
  p->w.tokens = tokens, p->w.batch = batch, p->w.out_tokens = out, p->w.context = 0;
  int g;
  for (g = 0; g < 3 && strcmp(p->graph_name, cplab_bench_graph_name((cplab_bench_graph)g)) != 0; g++) {}
  if (g == 3) return cplab_json_fail(&x->r, p->path, 0, CPLAB_ESCHEMA, "graph '%s': expected eager, piecewise or full", p->graph_name);
  p->graph = (cplab_bench_graph)g;
  char sp[CPLAB_PATH_MAX], pp[CPLAB_PATH_MAX];
  cplab_json_child(sp, p->path, "stats");
  cplab_json_child(pp, p->path, "phases_ms");
  if ((rc = cplab_json_expect_object(&x->r, st = json_object_get(e, "stats"), sp)) ||
      (rc = cplab_json_get_real(&x->r, st, sp, "median", 1, 0, 1e-9, 1e12, &p->median)) ||
      (rc = cplab_json_expect_object(&x->r, ph = json_object_get(e, "phases_ms"), pp)))
    return rc;
  for (int k = 0; k < CPLAB_MODEL_PHASES; k++) {
    const json_t *v = json_object_get(ph, cplab_model_phase_name(k));
    p->phase[k] = NAN;
    if (v && !json_is_null(v) && (rc = cplab_json_get_real(&x->r, ph, pp, cplab_model_phase_name(k), 1, 0, 0, 1e12, &p->phase[k])))
      return rc;
  }
  return 0;
}

static size_t num_points(doc *x) { return json_array_size(json_object_get(x->root, "points")); }

/* The scenario cplab-bench ran for a point. */
static int scenario_of(const meta *m, const point *p, cplab_scenario **s, cplab_diag *d) {
  cplab_bench_matrix mx;
  memset(&mx, 0, sizeof mx);
  snprintf(mx.preset, sizeof mx.preset, "%s", m->preset);
  mx.seed = 20261129, mx.interleave = 1, mx.block_size = 64; /* cplab-bench's defaults */
  return cplab_bench_scenario(&mx, &p->layout, &p->w, p->graph, s, d);
}

static int predict_point(const meta *m, const point *p, const cplab_model_inputs *in, cplab_model_result *res,
                         cplab_diag *d) {
  cplab_scenario *s = NULL;
  int rc = scenario_of(m, p, &s, d);
  if (!rc) rc = cplab_model_predict(s, in, res, d);
  cplab_scenario_free(s);
  return rc;
}

/* A point today's layout rules refuse (a rule added after the run): it is
 * listed as excluded with the rule's message instead of failing the run. */
static int refused(int rc, cplab_diag *d, const meta *m, const point *p, const char *source, json_t *skipped);

/* ---- manifest helpers --------------------------------------------------- */

/* A string array member (1..MAX_FILES items) into out[]. */
static int string_list(doc *x, const json_t *obj, const char *path, const char *key, int required, char out[][512], int *n) {
  const json_t *a = json_object_get(obj, key);
  char p[CPLAB_PATH_MAX];
  cplab_json_child(p, path, key);
  *n = 0;
  if (!a && !required) return 0;
  int rc = cplab_json_expect_array(&x->r, a, p, 1, MAX_FILES);
  for (size_t i = 0; !rc && i < json_array_size(a); i++) {
    const json_t *v = json_array_get(a, i);
    char q[CPLAB_PATH_MAX];
    cplab_json_index(q, p, i);
    if (!json_is_string(v)) return cplab_json_fail(&x->r, q, 0, CPLAB_ESCHEMA, "expected a string");
    snprintf(out[(*n)++], 512, "%s", json_string_value(v));
  }
  return rc;
}

static int in_list(char list[][512], int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (strcmp(list[i], s) == 0) return 1;
  return 0;
}

/* ---- calibration -------------------------------------------------------- */

typedef struct calib_set {
  int n, cap;
  double *proj_x, *proj_y, *moe_gb, *moe_gf, *moe_y, *colls, *copy_us, *comm_y;
} calib_set;

static int calib_push(calib_set *c, const cplab_model_features *f, const point *p, cplab_diag *d) {
  if (c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 64;
    double **arrs[] = {&c->proj_x, &c->proj_y, &c->moe_gb, &c->moe_gf, &c->moe_y, &c->colls, &c->copy_us, &c->comm_y};
    for (size_t i = 0; i < sizeof arrs / sizeof *arrs; i++) {
      double *q = realloc(*arrs[i], (size_t)cap * sizeof *q);
      if (!q) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
      *arrs[i] = q;
    }
    c->cap = cap;
  }
  int i = c->n++;
  c->proj_x[i] = f->proj_gflop, c->proj_y[i] = p->phase[0] * 1e3;
  c->moe_gb[i] = f->moe_gb, c->moe_gf[i] = f->moe_gflop, c->moe_y[i] = p->phase[3] * 1e3;
  c->colls[i] = f->copy_colls, c->copy_us[i] = f->copy_us, c->comm_y[i] = p->phase[4] * 1e3;
  return 0;
}

static void calib_free(calib_set *c) {
  free(c->proj_x), free(c->proj_y), free(c->moe_gb), free(c->moe_gf), free(c->moe_y), free(c->colls), free(c->copy_us);
  free(c->comm_y);
}

/* y = a + b1 x1 + b2 x2 by weighted least squares (GSL). */
static int fit_plane(const double *x1, const double *x2, const double *y, const double *wt, int n, double c[3],
                     cplab_diag *d) {
  if (n < 4) CPLAB_FAIL(d, CPLAB_EINVAL, "calibration: the MoE fit needs 4 points, %d given", n);
  gsl_matrix *X = gsl_matrix_alloc((size_t)n, 3), *cov = gsl_matrix_alloc(3, 3);
  gsl_vector *Y = gsl_vector_alloc((size_t)n), *C = gsl_vector_alloc(3), *W = gsl_vector_alloc((size_t)n);
  gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc((size_t)n, 3);
  int rc = 0;
  double chi2;
  if (!X || !cov || !Y || !C || !w || !W) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < n; i++) {
    gsl_matrix_set(X, (size_t)i, 0, 1.0), gsl_matrix_set(X, (size_t)i, 1, x1[i]), gsl_matrix_set(X, (size_t)i, 2, x2[i]);
    gsl_vector_set(Y, (size_t)i, y[i]), gsl_vector_set(W, (size_t)i, wt[i]);
  }
  if (!rc && gsl_multifit_wlinear(X, W, Y, C, cov, &chi2, w) != 0) rc = cplab_diag_set(d, CPLAB_EINVAL, "calibration: the MoE fit failed");
  for (int k = 0; !rc && k < 3; k++) c[k] = gsl_vector_get(C, (size_t)k);
  gsl_multifit_linear_free(w), gsl_matrix_free(X), gsl_matrix_free(cov), gsl_vector_free(Y), gsl_vector_free(C), gsl_vector_free(W);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(double *v, int n) {
  if (n == 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Same configuration but for the graph mode. */
static int same_config(const point *a, const point *b) {
  return strcmp(a->layout.label, b->layout.label) == 0 && a->w.kind == b->w.kind && a->w.tokens == b->w.tokens &&
         a->w.batch == b->w.batch && a->w.out_tokens == b->w.out_tokens;
}

typedef struct calib_out {
  cplab_model_params params;
  int points, graph_pairs[3][2];
} calib_out;

static int calibrate(doc *man, const char *dir, double copy_gbps, calib_out *co, json_t *sources, cplab_diag *d) {
  const json_t *cal = json_object_get(man->root, "calibration");
  char files[MAX_FILES][512], layouts[MAX_FILES][512];
  int nf = 0, nl = 0;
  int rc = cplab_json_expect_object(&man->r, cal, "calibration");
  if (!rc) rc = string_list(man, cal, "calibration", "results", 1, files, &nf);
  if (!rc) rc = string_list(man, cal, "calibration", "layouts", 1, layouts, &nl);
  calib_set cs = {0};
  double *sav[3][2] = {{0}};
  int nsav[3][2] = {{0}};
  for (int g = 0; g < 3 && !rc; g++)
    for (int k = 0; k < 2; k++)
      if (!(sav[g][k] = calloc(4096, sizeof(double)))) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  cplab_model_params zero = {0};
  cplab_model_inputs in = {NULL, NULL, copy_gbps, &zero, 1, 1, 1, 1, 0, 0, 1};
  for (int f = 0; f < nf && !rc; f++) {
    doc x;
    meta m;
    rc = doc_open(&x, dir, files[f], d);
    if (!rc) rc = read_meta(&x, &m);
    if (!rc && (m.fp8 || strcmp(m.backend, "single") != 0 || m.layers != 1))
      rc = cplab_json_fail(&x.r, "meta", 0, CPLAB_EUNSUPPORTED,
                           "calibration takes single-device runs of one layer with bf16 projections");
    size_t n = rc ? 0 : num_points(&x);
    point *pts = calloc(n + 1, sizeof *pts);
    cplab_model_result *res = calloc(n + 1, sizeof *res);
    if (!pts || !res) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
      rc = read_point(&x, i, &pts[i], d);
      if (!rc && in_list(layouts, nl, pts[i].layout.label)) rc = predict_point(&m, &pts[i], &in, &res[i], d);
      if (rc) cplab_diag_prefix(d, "%s: %s: ", x.path, pts[i].path);
    }
    for (size_t i = 0; i < n && !rc; i++) {
      if (!in_list(layouts, nl, pts[i].layout.label)) continue;
      int full = 1;
      for (int k = 0; k < CPLAB_MODEL_PHASES; k++) full &= !isnan(pts[i].phase[k]);
      if (pts[i].graph == CPLAB_BENCH_EAGER && full) rc = calib_push(&cs, &res[i].features, &pts[i], d), co->points++;
      if (pts[i].graph == CPLAB_BENCH_EAGER) continue;
      for (size_t j = 0; j < n; j++) /* the eager twin, when the MoE path is the same */
        if (pts[j].graph == CPLAB_BENCH_EAGER && same_config(&pts[i], &pts[j]) &&
            res[j].moe_fast_path == res[i].moe_fast_path && res[i].graph > 0) {
          int g = res[i].graph, k = pts[i].w.kind == CPLAB_BENCH_PREFILL;
          if (nsav[g][k] < 4096) sav[g][k][nsav[g][k]++] = (pts[j].median - pts[i].median) * 1e3;
        }
    }
    if (!rc) json_array_append_new(sources, json_string(files[f]));
    free(pts), free(res);
    doc_close(&x);
  }
  cplab_model_params *pa = &co->params;
  /* Relative least squares (weights 1 / y^2): the validation scores relative errors, and a
   * prefill's milliseconds would otherwise drown a decode step's tenths. */
  double *wt = calloc((size_t)cs.n + 1, sizeof *wt);
  if (!wt && !rc) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < cs.n; i++) wt[i] = 1 / (cs.proj_y[i] * cs.proj_y[i] + 1e-30);
  if (!rc) rc = cplab_model_fit_line(cs.proj_x, cs.proj_y, wt, cs.n, &pa->proj_a_us, &pa->proj_us_per_gflop, d);
  for (int i = 0; !rc && i < cs.n; i++) wt[i] = 1 / (cs.moe_y[i] * cs.moe_y[i] + 1e-30);
  double c[3] = {0};
  if (!rc) rc = fit_plane(cs.moe_gb, cs.moe_gf, cs.moe_y, wt, cs.n, c, d);
  free(wt);
  pa->moe_a_us = c[0], pa->moe_us_per_gb = c[1], pa->moe_us_per_gflop = c[2];
  double num = 0, den = 0; /* comm = colls * latency + bytes at the copy rate: latency by relative least squares */
  for (int i = 0; i < cs.n; i++) {
    double w2 = 1 / (cs.comm_y[i] * cs.comm_y[i] + 1e-30);
    num += w2 * cs.colls[i] * (cs.comm_y[i] - cs.copy_us[i]), den += w2 * cs.colls[i] * cs.colls[i];
  }
  pa->copy_latency_us = den > 0 ? num / den : 0;
  for (int g = 0; g < 3; g++)
    for (int k = 0; k < 2; k++) pa->graph_saving_us[g][k] = median_of(sav[g][k], nsav[g][k]), co->graph_pairs[g][k] = nsav[g][k];
  for (int g = 0; g < 3; g++)
    for (int k = 0; k < 2; k++) free(sav[g][k]);
  calib_free(&cs);
  if (rc) cplab_diag_prefix(d, "calibration: ");
  return rc;
}

/* ---- predictions -------------------------------------------------------- */

static json_t *config_json(const meta *m, const point *p, const char *backend);

static int refused(int rc, cplab_diag *d, const meta *m, const point *p, const char *source, json_t *skipped) {
  if (rc != CPLAB_EUNSUPPORTED) return rc;
  json_t *c = config_json(m, p, m->backend);
  json_object_set_new(c, "source", json_string(source));
  json_object_set_new(c, "reason", json_string(d->msg));
  json_array_append_new(skipped, c);
  cplab_diag_clear(d);
  return 0;
}

typedef struct sink {
  json_t *entries;
  double *err; /* |error| per entry */
  char (*cat)[24];
  int n, cap;
} sink;

static json_t *config_json(const meta *m, const point *p, const char *backend) {
  return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s}", "preset", m->preset, "layout", p->layout.label,
                   "workload", p->workload, "tokens", (json_int_t)p->w.tokens, "batch", (json_int_t)p->w.batch,
                   "out_tokens", (json_int_t)p->w.out_tokens, "graph", p->graph_name, "backend", backend);
}

static int sink_add(sink *s, const char *category, json_t *entry, double predicted, double measured, cplab_diag *d) {
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    double *e = realloc(s->err, (size_t)cap * sizeof *e);
    char(*c)[24] = realloc(s->cat, (size_t)cap * sizeof *c);
    if (e) s->err = e;
    if (c) s->cat = c;
    if (!e || !c) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
    s->cap = cap;
  }
  double err = (predicted - measured) / measured;
  s->err[s->n] = fabs(err);
  snprintf(s->cat[s->n++], 24, "%s", category);
  json_object_set_new(entry, "category", json_string(category));
  json_object_set_new(entry, "predicted_ms", json_real(predicted));
  json_object_set_new(entry, "measured_ms", json_real(measured));
  json_object_set_new(entry, "error", json_real(err));
  return json_array_append_new(s->entries, entry) ? cplab_diag_set(d, CPLAB_ENOMEM, "out of memory") : 0;
}

static int excluded(doc *man, const json_t *pe, const char *path, const point *p, const char **reason) {
  const json_t *ex = json_object_get(pe, "exclude");
  *reason = NULL;
  for (size_t i = 0; ex && i < json_array_size(ex); i++) {
    const json_t *e = json_array_get(ex, i), *l = json_object_get(e, "layout"), *w = json_object_get(e, "workload");
    const json_t *r = json_object_get(e, "reason");
    if (!json_is_string(l) || !json_is_string(w) || !json_is_string(r)) {
      char q[CPLAB_PATH_MAX];
      cplab_json_index(q, path, i);
      return cplab_json_fail(&man->r, q, 0, CPLAB_ESCHEMA, "an exclusion needs layout, workload and reason strings");
    }
    if (strcmp(json_string_value(l), p->layout.label) == 0 && strcmp(json_string_value(w), p->workload) == 0)
      *reason = json_string_value(r);
  }
  return 0;
}

static int predict_entry(doc *man, const char *dir, size_t idx, const cplab_model_params *pa, sink *s,
                         json_t *skipped, cplab_diag *d) {
  const json_t *pe = json_array_get(json_object_get(man->root, "predict"), idx);
  char path[CPLAB_PATH_MAX], res_file[512], tables[MAX_FILES][512], layouts[MAX_FILES][512];
  int nt = 0, nl = 0;
  cplab_json_index(path, "predict", idx);
  int rc = cplab_json_expect_object(&man->r, pe, path);
  if (!rc) rc = cplab_json_get_string(&man->r, pe, path, "results", 1, NULL, res_file, sizeof res_file);
  if (!rc) rc = string_list(man, pe, path, "tables", 1, tables, &nt);
  if (!rc) rc = string_list(man, pe, path, "layouts", 0, layouts, &nl);
  cplab_model_table *t = NULL;
  if (!rc) rc = cplab_model_table_alloc(&t, d);
  json_t *tnames = json_array();
  for (int i = 0; i < nt && !rc; i++) {
    char full[2048];
    snprintf(full, sizeof full, "%.1023s/%.511s", dir, tables[i]);
    rc = cplab_model_table_load(t, full, d);
    json_array_append_new(tnames, json_string(tables[i]));
  }
  doc x = {0};
  meta m;
  if (!rc) rc = doc_open(&x, dir, res_file, d);
  if (!rc) rc = read_meta(&x, &m);
  cplab_model_inputs in = {t, NULL, t ? t->copy_gbps : 0, pa, (int)m.layers, 1, 1, 1, 0, 0, 1};
  for (size_t i = 0; !rc && i < num_points(&x); i++) {
    point p;
    const char *why = NULL;
    cplab_model_result r;
    rc = read_point(&x, i, &p, d);
    if (!rc && nl && !in_list(layouts, nl, p.layout.label)) continue;
    if (!rc) rc = excluded(man, pe, path, &p, &why);
    if (!rc && why) {
      json_t *c = config_json(&m, &p, m.backend);
      json_object_set_new(c, "source", json_string(res_file));
      json_object_set_new(c, "reason", json_string(why));
      json_array_append_new(skipped, c);
      continue;
    }
    if (!rc && (rc = predict_point(&m, &p, &in, &r, d)) == CPLAB_EUNSUPPORTED) {
      rc = refused(rc, d, &m, &p, res_file, skipped);
      continue;
    }
    if (rc) {
      cplab_diag_prefix(d, "%s: %s: ", x.path, p.path);
      break;
    }
    json_t *ph = json_object();
    for (int k = 0; k < CPLAB_MODEL_PHASES; k++)
      if (!isnan(p.phase[k]))
        json_object_set_new(ph, cplab_model_phase_name(k),
                            json_pack("{s:f, s:f}", "predicted", r.phase_ms[k], "measured", p.phase[k]));
    json_t *e = json_pack("{s:o, s:s, s:O, s:i, s:o}", "configuration", config_json(&m, &p, m.backend), "source",
                          res_file, "tables", tnames, "extrapolated", r.extrapolated, "phases_ms", ph);
    rc = sink_add(s, "model", e, r.step_ms, p.median, d);
  }
  json_decref(tnames);
  doc_close(&x);
  cplab_model_table_free(t);
  return rc;
}

/* The single-device twin of an NCCL point. */
static const point *twin(const point *pts, size_t n, const point *p) {
  for (size_t i = 0; i < n; i++)
    if (same_config(&pts[i], p) && pts[i].graph == p->graph) return &pts[i];
  return NULL;
}

static int nccl_entry(doc *man, const char *dir, size_t idx, const cplab_model_link *link, const cplab_model_params *pa,
                      sink *s, json_t *skipped, cplab_diag *d) {
  const json_t *pe = json_array_get(json_object_get(man->root, "nccl_from_single"), idx);
  char path[CPLAB_PATH_MAX], nf[512], sf[512];
  cplab_json_index(path, "nccl_from_single", idx);
  int rc = cplab_json_expect_object(&man->r, pe, path);
  if (!rc) rc = cplab_json_get_string(&man->r, pe, path, "nccl", 1, NULL, nf, sizeof nf);
  if (!rc) rc = cplab_json_get_string(&man->r, pe, path, "single", 1, NULL, sf, sizeof sf);
  doc xn = {0}, xs = {0};
  meta mn, ms;
  if (!rc) rc = doc_open(&xn, dir, nf, d);
  if (!rc) rc = doc_open(&xs, dir, sf, d);
  if (!rc) rc = read_meta(&xn, &mn);
  if (!rc) rc = read_meta(&xs, &ms);
  if (!rc && (strcmp(mn.backend, "nccl") != 0 || strcmp(ms.backend, "single") != 0))
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: %s must be an nccl run and %s a single-device one", path, nf, sf);
  size_t ns = rc ? 0 : num_points(&xs);
  point *sp = calloc(ns + 1, sizeof *sp);
  if (!sp) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (size_t i = 0; i < ns && !rc; i++) rc = read_point(&xs, i, &sp[i], d);
  cplab_model_inputs in = {NULL, link, 0, pa, (int)mn.layers, 1, 1, 1, 0, 0, 1};
  for (size_t i = 0; !rc && i < num_points(&xn); i++) {
    point p;
    rc = read_point(&xn, i, &p, d);
    const point *q = rc ? NULL : twin(sp, ns, &p);
    if (rc || p.graph != CPLAB_BENCH_EAGER || !q || isnan(q->phase[4])) continue;
    cplab_model_result r;
    if ((rc = predict_point(&mn, &p, &in, &r, d)) == CPLAB_EUNSUPPORTED) {
      rc = refused(rc, d, &mn, &p, nf, skipped);
      continue;
    }
    if (rc) {
      cplab_diag_prefix(d, "%s: %s: ", xn.path, p.path);
      break;
    }
    double pred = q->median - q->phase[4] + r.phase_ms[4];
    json_t *ph = json_object();
    if (!isnan(p.phase[4]))
      json_object_set_new(ph, "comm", json_pack("{s:f, s:f}", "predicted", r.phase_ms[4], "measured", p.phase[4]));
    json_t *e = json_pack("{s:o, s:s, s:s, s:o}", "configuration", config_json(&mn, &p, "nccl"), "source", nf,
                          "single_source", sf, "phases_ms", ph);
    rc = sink_add(s, "nccl-from-single", e, pred, p.median, d);
  }
  free(sp);
  doc_close(&xn), doc_close(&xs);
  return rc;
}

/* graph-from-eager: a graph-mode point from its measured eager twin, plus
 * the model's difference between the two modes (the MoE path and the
 * collectives the graph's plan changes, less the calibrated saving). The
 * kernels' work is the same in both plans, so no table is needed. */
static int graph_entry(doc *man, const char *dir, size_t idx, double copy_gbps, const cplab_model_params *pa, sink *s,
                       json_t *skipped, cplab_diag *d) {
  const json_t *pe = json_array_get(json_object_get(man->root, "graph_from_eager"), idx);
  char path[CPLAB_PATH_MAX], rf[512], layouts[MAX_FILES][512];
  int nl = 0;
  cplab_json_index(path, "graph_from_eager", idx);
  int rc = cplab_json_expect_object(&man->r, pe, path);
  if (!rc) rc = cplab_json_get_string(&man->r, pe, path, "results", 1, NULL, rf, sizeof rf);
  if (!rc) rc = string_list(man, pe, path, "layouts", 1, layouts, &nl);
  doc x = {0};
  meta m;
  if (!rc) rc = doc_open(&x, dir, rf, d);
  if (!rc) rc = read_meta(&x, &m);
  size_t n = rc ? 0 : num_points(&x);
  point *pts = calloc(n + 1, sizeof *pts);
  if (!pts) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (size_t i = 0; i < n && !rc; i++) rc = read_point(&x, i, &pts[i], d);
  cplab_model_inputs in = {NULL, NULL, copy_gbps, pa, (int)m.layers, 1, 1, 1, 0, 0, 1};
  for (size_t i = 0; i < n && !rc; i++) {
    const point *p = &pts[i], *e = NULL;
    const char *why = NULL;
    if (p->graph == CPLAB_BENCH_EAGER || !in_list(layouts, nl, p->layout.label)) continue;
    for (size_t j = 0; j < n; j++)
      if (pts[j].graph == CPLAB_BENCH_EAGER && same_config(&pts[j], p)) e = &pts[j];
    if (!e) continue;
    rc = excluded(man, pe, path, p, &why);
    if (!rc && why) {
      json_t *c = config_json(&m, p, m.backend);
      json_object_set_new(c, "source", json_string(rf));
      json_object_set_new(c, "reason", json_string(why));
      json_array_append_new(skipped, c);
      continue;
    }
    cplab_model_result rg, re;
    if (!rc) rc = predict_point(&m, p, &in, &rg, d);
    if (!rc) rc = predict_point(&m, e, &in, &re, d);
    if (rc) {
      cplab_diag_prefix(d, "%s: %s: ", x.path, p->path);
      break;
    }
    json_t *c = json_pack("{s:o, s:s, s:f, s:f, s:b, s:b}", "configuration", config_json(&m, p, m.backend), "source", rf,
                          "eager_measured_ms", e->median, "model_graph_minus_eager_ms", rg.step_ms - re.step_ms,
                          "moe_fast_path_graph", rg.moe_fast_path, "moe_fast_path_eager", re.moe_fast_path);
    rc = sink_add(s, "graph-from-eager", c, e->median + rg.step_ms - re.step_ms, p->median, d);
  }
  free(pts);
  doc_close(&x);
  return rc;
}

/* Median and max of |error| over the entries of one category (NULL: all). */
static json_t *summary(const sink *s, const char *cat) {
  double *v = malloc((size_t)(s->n + 1) * sizeof *v), mx = 0;
  int n = 0;
  for (int i = 0; v && i < s->n; i++)
    if (!cat || strcmp(s->cat[i], cat) == 0) v[n++] = s->err[i], mx = fmax(mx, s->err[i]);
  double med = v ? median_of(v, n) : 0;
  free(v);
  return json_pack("{s:i, s:f, s:f}", "predictions", n, "median_abs_error", med, "max_abs_error", mx);
}

/* Median and max of each phase's |error| over the model category's entries
 * (where the run measured the phase and it is not zero). */
static json_t *phase_summary(const json_t *entries) {
  json_t *out = json_object();
  for (int k = 0; k < CPLAB_MODEL_PHASES; k++) {
    size_t n = json_array_size(entries), m = 0;
    double *v = malloc((n + 1) * sizeof *v), mx = 0;
    for (size_t i = 0; v && i < n; i++) {
      const json_t *e = json_array_get(entries, i), *ph = json_object_get(json_object_get(e, "phases_ms"), cplab_model_phase_name(k));
      const json_t *cat = json_object_get(e, "category");
      if (!ph || strcmp(json_string_value(cat), "model") != 0) continue;
      double pr = json_real_value(json_object_get(ph, "predicted")), me = json_real_value(json_object_get(ph, "measured"));
      if (me > 0) v[m] = fabs(pr - me) / me, mx = fmax(mx, v[m]), m++;
    }
    double med = v ? median_of(v, (int)m) : 0;
    free(v);
    json_object_set_new(out, cplab_model_phase_name(k), json_pack("{s:i, s:f, s:f}", "predictions", (int)m,
                                                                  "median_abs_error", med, "max_abs_error", mx));
  }
  return out;
}

static json_t *params_json(const calib_out *co) {
  const cplab_model_params *p = &co->params;
  return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:{s:[f, f], s:[f, f]}, s:{s:[i, i], s:[i, i]}}", "proj_a_us",
                   p->proj_a_us, "proj_us_per_gflop", p->proj_us_per_gflop, "moe_a_us", p->moe_a_us, "moe_us_per_gb",
                   p->moe_us_per_gb, "moe_us_per_gflop", p->moe_us_per_gflop, "copy_latency_us", p->copy_latency_us,
                   "graph_saving_us", "piecewise", p->graph_saving_us[1][0], p->graph_saving_us[1][1], "full",
                   p->graph_saving_us[2][0], p->graph_saving_us[2][1], "graph_pairs", "piecewise",
                   co->graph_pairs[1][0], co->graph_pairs[1][1], "full", co->graph_pairs[2][0], co->graph_pairs[2][1]);
}

int cplab_model_validate(const char *manifest, json_t **out, cplab_diag *d) {
  *out = NULL;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", manifest);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  doc man;
  char ver[32], gather[512];
  int rc = doc_open(&man, ".", manifest, d);
  static const char *const keys[] = {"cplab_model_validation", "calibration", "link_calibration", "predict",
                                     "nccl_from_single", "graph_from_eager", NULL};
  if (!rc) rc = cplab_json_check_keys(&man.r, man.root, "(top level)", keys);
  if (!rc) rc = cplab_json_get_string(&man.r, man.root, "(top level)", "cplab_model_validation", 1, NULL, ver, sizeof ver);
  if (!rc && strncmp(ver, "1.", 2) != 0)
    rc = cplab_json_fail(&man.r, "cplab_model_validation", 0, CPLAB_ESCHEMA, "version '%s': this reader takes 1.x.y", ver);
  if (!rc) rc = cplab_json_get_string(&man.r, man.root, "(top level)", "link_calibration", 1, NULL, gather, sizeof gather);
  const json_t *pred = man.root ? json_object_get(man.root, "predict") : NULL;
  const json_t *nccl = man.root ? json_object_get(man.root, "nccl_from_single") : NULL;
  const json_t *graphs = man.root ? json_object_get(man.root, "graph_from_eager") : NULL;
  if (!rc) rc = cplab_json_expect_array(&man.r, pred, "predict", 1, MAX_FILES);
  if (!rc && nccl) rc = cplab_json_expect_array(&man.r, nccl, "nccl_from_single", 1, MAX_FILES);
  if (!rc && graphs) rc = cplab_json_expect_array(&man.r, graphs, "graph_from_eager", 1, MAX_FILES);
  /* The copy ceiling of the single-device backend: the first predict entry's first table. */
  double copy_gbps = 0;
  if (!rc) {
    char tl[MAX_FILES][512], full[2048];
    int n = 0;
    cplab_model_table *t = NULL;
    rc = string_list(&man, json_array_get(pred, 0), "predict[0]", "tables", 1, tl, &n);
    if (!rc) rc = cplab_model_table_alloc(&t, d);
    snprintf(full, sizeof full, "%.1023s/%.511s", dir, n ? tl[0] : "");
    if (!rc) rc = cplab_model_table_load(t, full, d);
    if (!rc && !(t->copy_gbps > 0)) rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: no ceilings.copy_gbps", full);
    if (!rc) copy_gbps = t->copy_gbps;
    cplab_model_table_free(t);
  }
  calib_out co;
  memset(&co, 0, sizeof co);
  json_t *sources = json_array(), *skipped = json_array();
  cplab_model_link link;
  if (!rc) rc = calibrate(&man, dir, copy_gbps, &co, sources, d);
  if (!rc) rc = cplab_model_link_preset("h200", &link, d);
  char gpath[2048];
  snprintf(gpath, sizeof gpath, "%.1023s/%.511s", dir, gather);
  if (!rc) rc = cplab_model_link_calibrate(gpath, &link, d);
  snprintf(link.name, sizeof link.name, "h200 preset, intra-node tier calibrated from %.80s", gather);
  sink s = {json_array(), NULL, NULL, 0, 0};
  for (size_t i = 0; !rc && i < json_array_size(pred); i++) rc = predict_entry(&man, dir, i, &co.params, &s, skipped, d);
  for (size_t i = 0; !rc && nccl && i < json_array_size(nccl); i++) rc = nccl_entry(&man, dir, i, &link, &co.params, &s, skipped, d);
  for (size_t i = 0; !rc && graphs && i < json_array_size(graphs); i++)
    rc = graph_entry(&man, dir, i, copy_gbps, &co.params, &s, skipped, d);
  if (!rc && s.n == 0) rc = cplab_diag_set(d, CPLAB_EINVAL, "%s: no prediction", manifest);
  if (!rc) {
    json_t *all = summary(&s, NULL);
    *out = json_pack("{s:s, s:s, s:O, s:O, s:O, s:{s:o, s:i, s:O, s:{s:s, s:f, s:f}}, s:{s:o, s:o, s:o}, s:o, s:O, s:O}",
                     "cplab_model_validation", "1.0.0", "manifest", "manifest.json",
                     "predictions", json_object_get(all, "predictions"), "median_abs_error",
                     json_object_get(all, "median_abs_error"), "max_abs_error", json_object_get(all, "max_abs_error"),
                     "calibration", "params", params_json(&co), "points", co.points, "sources", sources, "link",
                     "name", link.name, "latency_us", link.intra.latency_us, "busbw_gbps", link.intra.busbw_gbps,
                     "by_category", "model", summary(&s, "model"), "nccl-from-single", summary(&s, "nccl-from-single"),
                     "graph-from-eager", summary(&s, "graph-from-eager"), "model_by_phase", phase_summary(s.entries),
                     "excluded", skipped, "entries", s.entries);
    json_decref(all);
    if (!*out) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  }
  json_decref(sources), json_decref(skipped), json_decref(s.entries);
  free(s.err), free(s.cat);
  doc_close(&man);
  return rc;
}

/* ---- comparison ---------------------------------------------------------- */

static int compare_value(const json_t *a, const json_t *b, const char *path, const char *file, cplab_diag *d) {
  if (json_is_number(a) && json_is_number(b)) {
    double x = json_number_value(a), y = json_number_value(b);
    if (fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y)) + 1e-12) return 0;
    CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: %s drifted: recomputed %.17g, committed %.17g", file, path, x, y);
  }
  if (json_typeof(a) != json_typeof(b))
    CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: %s: recomputed a %s, committed a %s", file, path, cplab_json_type_name(a),
               cplab_json_type_name(b));
  if (json_is_object(a)) {
    const char *k;
    const json_t *v;
    if (json_object_size(a) != json_object_size(b))
      CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: %s: %zu fields recomputed, %zu committed", file, path, json_object_size(a),
                 json_object_size(b));
    json_object_foreach((json_t *)a, k, v) {
      char p[CPLAB_PATH_MAX];
      cplab_json_child(p, path, k);
      const json_t *w = json_object_get(b, k);
      if (!w) CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: %s: missing from the committed file", file, p);
      int rc = compare_value(v, w, p, file, d);
      if (rc) return rc;
    }
    return 0;
  }
  if (json_is_array(a)) {
    if (json_array_size(a) != json_array_size(b))
      CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: %s: %zu items recomputed, %zu committed", file, path, json_array_size(a),
                 json_array_size(b));
    for (size_t i = 0; i < json_array_size(a); i++) {
      char p[CPLAB_PATH_MAX];
      cplab_json_index(p, path, i);
      int rc = compare_value(json_array_get(a, i), json_array_get(b, i), p, file, d);
      if (rc) return rc;
    }
    return 0;
  }
  if (!json_equal((json_t *)a, (json_t *)b))
    CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: %s drifted", file, path);
  return 0;
}

int cplab_model_validation_compare(const json_t *now, const json_t *committed, const char *path, cplab_diag *d) {
  return compare_value(now, committed, "(top level)", path, d);
}

int cplab_model_params_load(const char *path, cplab_model_params *out, cplab_diag *d) {
  doc x;
  memset(out, 0, sizeof *out);
  int rc = doc_open(&x, ".", path, d);
  const json_t *cal = rc ? NULL : json_object_get(x.root, "calibration");
  const json_t *p = json_object_get(cal ? cal : x.root, "params");
  const char *base = cal ? "calibration.params" : "params";
  if (!rc) rc = cplab_json_expect_object(&x.r, p, base);
  if (!rc) rc = cplab_json_get_real(&x.r, p, base, "proj_a_us", 1, 0, -1e9, 1e9, &out->proj_a_us);
  if (!rc) rc = cplab_json_get_real(&x.r, p, base, "proj_us_per_gflop", 1, 0, -1e9, 1e9, &out->proj_us_per_gflop);
  if (!rc) rc = cplab_json_get_real(&x.r, p, base, "moe_a_us", 1, 0, -1e9, 1e9, &out->moe_a_us);
  if (!rc) rc = cplab_json_get_real(&x.r, p, base, "moe_us_per_gb", 1, 0, -1e9, 1e9, &out->moe_us_per_gb);
  if (!rc) rc = cplab_json_get_real(&x.r, p, base, "moe_us_per_gflop", 1, 0, -1e9, 1e9, &out->moe_us_per_gflop);
  if (!rc) rc = cplab_json_get_real(&x.r, p, base, "copy_latency_us", 1, 0, -1e9, 1e9, &out->copy_latency_us);
  const json_t *g = p ? json_object_get(p, "graph_saving_us") : NULL;
  char gp[CPLAB_PATH_MAX];
  cplab_json_child(gp, base, "graph_saving_us");
  if (!rc) rc = cplab_json_expect_object(&x.r, g, gp);
  for (int m = 1; m < 3 && !rc; m++) {
    const char *name = m == 1 ? "piecewise" : "full";
    const json_t *a = json_object_get(g, name);
    char ap[CPLAB_PATH_MAX];
    cplab_json_child(ap, gp, name);
    rc = cplab_json_expect_array(&x.r, a, ap, 2, 2);
    for (int k = 0; k < 2 && !rc; k++) {
      const json_t *v = json_array_get(a, (size_t)k);
      if (!json_is_number(v)) rc = cplab_json_fail(&x.r, ap, 0, CPLAB_ESCHEMA, "expected two numbers");
      else out->graph_saving_us[m][k] = json_number_value(v);
    }
  }
  doc_close(&x);
  return rc;
}
