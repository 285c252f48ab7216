/* The validation of cplab-model: predictions of the held-out results,
 * their summary, and the comparison with a committed document (calib.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "results.h"

/* ---- predictions -------------------------------------------------------- */

static json_t *config_json(const model_meta *m, const model_point *p, const char *backend);

static int refused(int rc, cplab_diag *d, const model_meta *m, const model_point *p, const char *source, json_t *skipped) {
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

static json_t *config_json(const model_meta *m, const model_point *p, const char *backend) {
  return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s}", "preset", m->preset, "layout", p->parallel.label,
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

static int excluded(model_doc *man, const json_t *pe, const char *path, const model_point *p, const char **reason) {
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
    if (strcmp(json_string_value(l), p->parallel.label) == 0 && strcmp(json_string_value(w), p->workload) == 0)
      *reason = json_string_value(r);
  }
  return 0;
}

static int predict_entry(model_doc *man, const char *dir, size_t idx, const cplab_model_params *pa, sink *s,
                         json_t *skipped, cplab_diag *d) {
  const json_t *pe = json_array_get(json_object_get(man->root, "predict"), idx);
  char path[CPLAB_PATH_MAX], res_file[512], tables[MAX_FILES][512], layouts[MAX_FILES][512];
  int nt = 0, nl = 0;
  cplab_json_index(path, "predict", idx);
  int rc = cplab_json_expect_object(&man->r, pe, path);
  if (!rc) rc = cplab_json_get_string(&man->r, pe, path, "results", 1, NULL, res_file, sizeof res_file);
  if (!rc) rc = model_string_list(man, pe, path, "tables", 1, tables, &nt);
  if (!rc) rc = model_string_list(man, pe, path, "layouts", 0, layouts, &nl);
  cplab_model_table *t = NULL;
  if (!rc) rc = cplab_model_table_alloc(&t, d);
  json_t *tnames = json_array();
  for (int i = 0; i < nt && !rc; i++) {
    char full[2048];
    snprintf(full, sizeof full, "%.1023s/%.511s", dir, tables[i]);
    rc = cplab_model_table_load(t, full, d);
    json_array_append_new(tnames, json_string(tables[i]));
  }
  model_doc x = {0};
  model_meta m;
  if (!rc) rc = model_doc_open(&x, dir, res_file, d);
  if (!rc) rc = model_read_meta(&x, &m);
  cplab_model_inputs in = {t, NULL, t ? t->copy_gbps : 0, pa, (int)m.layers, 1, 1, 1, 0, 0, 1, CPLAB_HEAD_PAD_SM90};
  for (size_t i = 0; !rc && i < model_num_points(&x); i++) {
    model_point p;
    const char *why = NULL;
    cplab_model_result r;
    rc = model_read_point(&x, i, &p, d);
    if (!rc && nl && !model_in_list(layouts, nl, p.parallel.label)) continue;
    if (!rc) rc = excluded(man, pe, path, &p, &why);
    if (!rc && why) {
      json_t *c = config_json(&m, &p, m.backend);
      json_object_set_new(c, "source", json_string(res_file));
      json_object_set_new(c, "reason", json_string(why));
      json_array_append_new(skipped, c);
      continue;
    }
    if (!rc && (rc = model_predict_point(&m, &p, &in, &r, d)) == CPLAB_EUNSUPPORTED) {
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
  model_doc_close(&x);
  cplab_model_table_free(t);
  return rc;
}

/* The single-device twin of an NCCL point. */
static const model_point *twin(const model_point *pts, size_t n, const model_point *p) {
  for (size_t i = 0; i < n; i++)
    if (model_same_config(&pts[i], p) && pts[i].graph == p->graph) return &pts[i];
  return NULL;
}

static int nccl_entry(model_doc *man, const char *dir, size_t idx, const cplab_model_link *link, const cplab_model_params *pa,
                      sink *s, json_t *skipped, cplab_diag *d) {
  const json_t *pe = json_array_get(json_object_get(man->root, "nccl_from_single"), idx);
  char path[CPLAB_PATH_MAX], nf[512], sf[512];
  cplab_json_index(path, "nccl_from_single", idx);
  int rc = cplab_json_expect_object(&man->r, pe, path);
  if (!rc) rc = cplab_json_get_string(&man->r, pe, path, "nccl", 1, NULL, nf, sizeof nf);
  if (!rc) rc = cplab_json_get_string(&man->r, pe, path, "single", 1, NULL, sf, sizeof sf);
  model_doc xn = {0}, xs = {0};
  model_meta mn, ms;
  if (!rc) rc = model_doc_open(&xn, dir, nf, d);
  if (!rc) rc = model_doc_open(&xs, dir, sf, d);
  if (!rc) rc = model_read_meta(&xn, &mn);
  if (!rc) rc = model_read_meta(&xs, &ms);
  if (!rc && (strcmp(mn.backend, "nccl") != 0 || strcmp(ms.backend, "single") != 0))
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: %s must be an nccl run and %s a single-device one", path, nf, sf);
  size_t ns = rc ? 0 : model_num_points(&xs);
  model_point *sp = calloc(ns + 1, sizeof *sp);
  if (!sp) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (size_t i = 0; i < ns && !rc; i++) rc = model_read_point(&xs, i, &sp[i], d);
  cplab_model_inputs in = {NULL, link, 0, pa, (int)mn.layers, 1, 1, 1, 0, 0, 1, CPLAB_HEAD_PAD_SM90};
  for (size_t i = 0; !rc && i < model_num_points(&xn); i++) {
    model_point p;
    rc = model_read_point(&xn, i, &p, d);
    const model_point *q = rc ? NULL : twin(sp, ns, &p);
    if (rc || p.graph != CPLAB_GRAPH_NONE || !q || isnan(q->phase[4])) continue;
    cplab_model_result r;
    if ((rc = model_predict_point(&mn, &p, &in, &r, d)) == CPLAB_EUNSUPPORTED) {
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
  model_doc_close(&xn), model_doc_close(&xs);
  return rc;
}

/* graph-from-eager: a graph-mode point from its measured eager twin, plus
 * the model's difference between the two modes (the MoE path and the
 * collectives the graph's plan changes, less the calibrated saving). The
 * kernels' work is the same in both plans, so no table is needed. */
static int graph_entry(model_doc *man, const char *dir, size_t idx, double copy_gbps, const cplab_model_params *pa, sink *s,
                       json_t *skipped, cplab_diag *d) {
  const json_t *pe = json_array_get(json_object_get(man->root, "graph_from_eager"), idx);
  char path[CPLAB_PATH_MAX], rf[512], layouts[MAX_FILES][512];
  int nl = 0;
  cplab_json_index(path, "graph_from_eager", idx);
  int rc = cplab_json_expect_object(&man->r, pe, path);
  if (!rc) rc = cplab_json_get_string(&man->r, pe, path, "results", 1, NULL, rf, sizeof rf);
  if (!rc) rc = model_string_list(man, pe, path, "layouts", 1, layouts, &nl);
  model_doc x = {0};
  model_meta m;
  if (!rc) rc = model_doc_open(&x, dir, rf, d);
  if (!rc) rc = model_read_meta(&x, &m);
  size_t n = rc ? 0 : model_num_points(&x);
  model_point *pts = calloc(n + 1, sizeof *pts);
  if (!pts) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (size_t i = 0; i < n && !rc; i++) rc = model_read_point(&x, i, &pts[i], d);
  cplab_model_inputs in = {NULL, NULL, copy_gbps, pa, (int)m.layers, 1, 1, 1, 0, 0, 1, CPLAB_HEAD_PAD_SM90};
  for (size_t i = 0; i < n && !rc; i++) {
    const model_point *p = &pts[i], *e = NULL;
    const char *why = NULL;
    if (p->graph == CPLAB_GRAPH_NONE || !model_in_list(layouts, nl, p->parallel.label)) continue;
    for (size_t j = 0; j < n; j++)
      if (pts[j].graph == CPLAB_GRAPH_NONE && model_same_config(&pts[j], p)) e = &pts[j];
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
    if (!rc) rc = model_predict_point(&m, p, &in, &rg, d);
    if (!rc) rc = model_predict_point(&m, e, &in, &re, d);
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
  model_doc_close(&x);
  return rc;
}

/* Median and max of |error| over the entries of one category (NULL: all). */
static json_t *summary(const sink *s, const char *cat) {
  double *v = malloc((size_t)(s->n + 1) * sizeof *v), mx = 0;
  int n = 0;
  for (int i = 0; v && i < s->n; i++)
    if (!cat || strcmp(s->cat[i], cat) == 0) v[n++] = s->err[i], mx = fmax(mx, s->err[i]);
  double med = v ? model_median_of(v, n) : 0;
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
    double med = v ? model_median_of(v, (int)m) : 0;
    free(v);
    json_object_set_new(out, cplab_model_phase_name(k), json_pack("{s:i, s:f, s:f}", "predictions", (int)m,
                                                                  "median_abs_error", med, "max_abs_error", mx));
  }
  return out;
}

int cplab_model_validate(const char *manifest, json_t **out, cplab_diag *d) {
  *out = NULL;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", manifest);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  model_doc man;
  char ver[32], gather[512];
  int rc = model_doc_open(&man, ".", manifest, d);
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
    rc = model_string_list(&man, json_array_get(pred, 0), "predict[0]", "tables", 1, tl, &n);
    if (!rc) rc = cplab_model_table_alloc(&t, d);
    snprintf(full, sizeof full, "%.1023s/%.511s", dir, n ? tl[0] : "");
    if (!rc) rc = cplab_model_table_load(t, full, d);
    if (!rc && !(t->copy_gbps > 0)) rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: no ceilings.copy_gbps", full);
    if (!rc) copy_gbps = t->copy_gbps;
    cplab_model_table_free(t);
  }
  model_calib_out co;
  memset(&co, 0, sizeof co);
  json_t *sources = json_array(), *skipped = json_array();
  cplab_model_link link;
  if (!rc) rc = model_calibrate(&man, dir, copy_gbps, &co, sources, d);
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
    *out = json_pack("{s:s, s:s, s:i, s:O, s:O, s:O, s:{s:o, s:i, s:O, s:{s:s, s:f, s:f}}, s:{s:o, s:o, s:o}, s:o, s:O, s:O}",
                     "cplab_model_validation", "1.0.0", "manifest", "manifest.json", "head_pad", CPLAB_HEAD_PAD_SM90,
                     "predictions", json_object_get(all, "predictions"), "median_abs_error",
                     json_object_get(all, "median_abs_error"), "max_abs_error", json_object_get(all, "max_abs_error"),
                     "calibration", "params", model_params_json(&co), "points", co.points, "sources", sources, "link",
                     "name", link.name, "latency_us", link.intra.latency_us, "busbw_gbps", link.intra.busbw_gbps,
                     "by_category", "model", summary(&s, "model"), "nccl-from-single", summary(&s, "nccl-from-single"),
                     "graph-from-eager", summary(&s, "graph-from-eager"), "model_by_phase", phase_summary(s.entries),
                     "excluded", skipped, "entries", s.entries);
    json_decref(all);
    if (!*out) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  }
  json_decref(sources), json_decref(skipped), json_decref(s.entries);
  free(s.err), free(s.cat);
  model_doc_close(&man);
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
