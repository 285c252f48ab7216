/* The validation's inputs and the prediction of a measured point: see results.h. */
#include "results.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int model_doc_open(model_doc *x, const char *dir, const char *rel, cplab_diag *d) {
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

void model_doc_close(model_doc *x) {
  cplab_json_reader_fini(&x->r);
  json_decref(x->root);
  free(x->text);
  memset(x, 0, sizeof *x);
}



int model_read_meta(model_doc *x, model_meta *m) {
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

int model_read_point(model_doc *x, size_t i, model_point *p, cplab_diag *d) {
  const json_t *pts = json_object_get(x->root, "points"), *e = json_array_get(pts, i), *st, *ph;
  char label[32];
  int64_t tokens = 0, batch = 0, out = 0;
  memset(p, 0, sizeof *p);
  cplab_json_index(p->path, "points", i);
  int rc = cplab_json_expect_object(&x->r, e, p->path);
  /* The parallel sizes: "parallel" (results format 2), "layout" before. */
  const char *key = json_object_get(e, "parallel") ? "parallel" : "layout";
  if (!rc) rc = cplab_json_get_string(&x->r, e, p->path, key, 1, NULL, label, sizeof label);
  if (!rc && cplab_bench_parallel_parse(label, &p->parallel, d) != 0) {
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
  if (cplab_graph_mode_parse_label(p->graph_name, &p->graph) || p->graph == CPLAB_GRAPH_FULL_DECODE_ONLY)
    return cplab_json_fail(&x->r, p->path, 0, CPLAB_ESCHEMA, "graph '%s': expected eager, piecewise or full", p->graph_name);
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

size_t model_num_points(model_doc *x) { return json_array_size(json_object_get(x->root, "points")); }

/* The scenario cplab-bench ran for a point. */
int model_scenario_of(const model_meta *m, const model_point *p, cplab_scenario **s, cplab_diag *d) {
  cplab_bench_matrix mx;
  memset(&mx, 0, sizeof mx);
  snprintf(mx.preset, sizeof mx.preset, "%s", m->preset);
  mx.seed = 20261129, mx.interleave = 1, mx.block_size = 64; /* cplab-bench's defaults */
  return cplab_bench_scenario(&mx, &p->parallel, &p->w, p->graph, s, d);
}

int model_predict_point(const model_meta *m, const model_point *p, const cplab_model_inputs *in, cplab_model_result *res,
                         cplab_diag *d) {
  cplab_scenario *s = NULL;
  int rc = model_scenario_of(m, p, &s, d);
  if (!rc) rc = cplab_model_predict(s, in, res, d);
  cplab_scenario_free(s);
  return rc;
}

/* ---- manifest helpers --------------------------------------------------- */

/* A string array member (1..MAX_FILES items) into out[]. */
int model_string_list(model_doc *x, const json_t *obj, const char *path, const char *key, int required, char out[][512], int *n) {
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

int model_in_list(char list[][512], int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (strcmp(list[i], s) == 0) return 1;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double model_median_of(double *v, int n) {
  if (n == 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Same configuration but for the graph mode. */
int model_same_config(const model_point *a, const model_point *b) {
  return strcmp(a->parallel.label, b->parallel.label) == 0 && a->w.kind == b->w.kind && a->w.tokens == b->w.tokens &&
         a->w.batch == b->w.batch && a->w.out_tokens == b->w.out_tokens;
}
