/* Calibration of cplab-model on committed cplab-bench results, and the
 * calibrated parameters read back: see calib.h. */
#include "calib.h"

#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

/* ---- calibration -------------------------------------------------------- */

typedef struct calib_set {
  int n, cap;
  double *proj_x, *proj_y, *moe_gb, *moe_gf, *moe_y, *colls, *copy_us, *comm_y;
} calib_set;

static int calib_push(calib_set *c, const cplab_model_features *f, const model_point *p, cplab_diag *d) {
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

int model_calibrate(model_doc *man, const char *dir, double copy_gbps, model_calib_out *co, json_t *sources, cplab_diag *d) {
  const json_t *cal = json_object_get(man->root, "calibration");
  char files[MAX_FILES][512], layouts[MAX_FILES][512];
  int nf = 0, nl = 0;
  int rc = cplab_json_expect_object(&man->r, cal, "calibration");
  if (!rc) rc = model_string_list(man, cal, "calibration", "results", 1, files, &nf);
  if (!rc) rc = model_string_list(man, cal, "calibration", "layouts", 1, layouts, &nl);
  calib_set cs = {0};
  double *sav[3][2] = {{0}};
  int nsav[3][2] = {{0}};
  for (int g = 0; g < 3 && !rc; g++)
    for (int k = 0; k < 2; k++)
      if (!(sav[g][k] = calloc(4096, sizeof(double)))) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  cplab_model_params zero = {0};
  cplab_model_inputs in = {NULL, NULL, copy_gbps, &zero, 1, 1, 1, 1, 0, 0, 1, CPLAB_HEAD_PAD_SM90};
  for (int f = 0; f < nf && !rc; f++) {
    model_doc x;
    model_meta m;
    rc = model_doc_open(&x, dir, files[f], d);
    if (!rc) rc = model_read_meta(&x, &m);
    if (!rc && (m.fp8 || strcmp(m.backend, "single") != 0 || m.layers != 1))
      rc = cplab_json_fail(&x.r, "meta", 0, CPLAB_EUNSUPPORTED,
                           "calibration takes single-device runs of one layer with bf16 projections");
    size_t n = rc ? 0 : model_num_points(&x);
    model_point *pts = calloc(n + 1, sizeof *pts);
    cplab_model_result *res = calloc(n + 1, sizeof *res);
    if (!pts || !res) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
      rc = model_read_point(&x, i, &pts[i], d);
      if (!rc && model_in_list(layouts, nl, pts[i].parallel.label))
        rc = model_predict_point(&m, &pts[i], &in, &res[i], d);
      if (rc) cplab_diag_prefix(d, "%s: %s: ", x.path, pts[i].path);
    }
    for (size_t i = 0; i < n && !rc; i++) {
      if (!model_in_list(layouts, nl, pts[i].parallel.label)) continue;
      int full = 1;
      for (int k = 0; k < CPLAB_MODEL_PHASES; k++) full &= !isnan(pts[i].phase[k]);
      if (pts[i].graph == CPLAB_GRAPH_NONE && full) rc = calib_push(&cs, &res[i].features, &pts[i], d), co->points++;
      if (pts[i].graph == CPLAB_GRAPH_NONE) continue;
      for (size_t j = 0; j < n; j++) /* the eager twin, when the MoE path is the same */
        if (pts[j].graph == CPLAB_GRAPH_NONE && model_same_config(&pts[i], &pts[j]) &&
            res[j].moe_fast_path == res[i].moe_fast_path && res[i].graph > 0) {
          int g = res[i].graph, k = pts[i].w.kind == CPLAB_BENCH_PREFILL;
          if (nsav[g][k] < 4096) sav[g][k][nsav[g][k]++] = (pts[j].median - pts[i].median) * 1e3;
        }
    }
    if (!rc) json_array_append_new(sources, json_string(files[f]));
    free(pts), free(res);
    model_doc_close(&x);
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
    for (int k = 0; k < 2; k++) pa->graph_saving_us[g][k] = model_median_of(sav[g][k], nsav[g][k]), co->graph_pairs[g][k] = nsav[g][k];
  for (int g = 0; g < 3; g++)
    for (int k = 0; k < 2; k++) free(sav[g][k]);
  calib_free(&cs);
  if (rc) cplab_diag_prefix(d, "calibration: ");
  return rc;
}

json_t *model_params_json(const model_calib_out *co) {
  const cplab_model_params *p = &co->params;
  return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:{s:[f, f], s:[f, f]}, s:{s:[i, i], s:[i, i]}}", "proj_a_us",
                   p->proj_a_us, "proj_us_per_gflop", p->proj_us_per_gflop, "moe_a_us", p->moe_a_us, "moe_us_per_gb",
                   p->moe_us_per_gb, "moe_us_per_gflop", p->moe_us_per_gflop, "copy_latency_us", p->copy_latency_us,
                   "graph_saving_us", "piecewise", p->graph_saving_us[1][0], p->graph_saving_us[1][1], "full",
                   p->graph_saving_us[2][0], p->graph_saving_us[2][1], "graph_pairs", "piecewise",
                   co->graph_pairs[1][0], co->graph_pairs[1][1], "full", co->graph_pairs[2][0], co->graph_pairs[2][1]);
}

int cplab_model_params_load(const char *path, cplab_model_params *out, cplab_diag *d) {
  model_doc x;
  memset(out, 0, sizeof *out);
  int rc = model_doc_open(&x, ".", path, d);
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
  model_doc_close(&x);
  return rc;
}
