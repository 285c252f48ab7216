/* The kernel cost table of cplab-model: see table.h. */
#include "table.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"

static const char *const kernel_names[CPLAB_MK_COUNT] = {
    "sparse_mla_prefill", "sparse_mla_decode_fp8", "indexer_logits_prefill", "indexer_logits_decode", "topk_prefill",
    "topk_decode",        "topk_merge",            "convert",                "gather_upconvert",      "restore",
    "gather_idx",         "lse_combine",           "topk_merge_convert",     "topk_decode_convert"};

const char *cplab_model_kernel_name(cplab_model_kernel k) {
  return (int)k >= 0 && k < CPLAB_MK_COUNT ? kernel_names[k] : NULL;
}

int cplab_model_kernel_find(const char *name) {
  for (int k = 0; k < CPLAB_MK_COUNT; k++)
    if (strcmp(name, kernel_names[k]) == 0) return k;
  return -1;
}

int cplab_model_table_alloc(cplab_model_table **out, cplab_diag *d) {
  if (!(*out = calloc(1, sizeof **out))) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  return 0;
}

void cplab_model_table_free(cplab_model_table *t) {
  if (!t) return;
  for (int k = 0; k < CPLAB_MK_COUNT; k++) free(t->points[k]);
  for (size_t i = 0; i < t->num_sources; i++) free(t->sources[i]);
  free(t->sources);
  free(t);
}

static int point_cmp(const void *a, const void *b) {
  const cplab_model_point *x = a, *y = b;
  if (x->series != y->series) return x->series < y->series ? -1 : 1;
  if (x->work != y->work) return x->work < y->work ? -1 : 1;
  return 0;
}

int cplab_model_table_add(cplab_model_table *t, cplab_model_kernel k, double series, double work, double time_us,
                          int source, cplab_diag *d) {
  if ((int)k < 0 || k >= CPLAB_MK_COUNT) CPLAB_FAIL(d, CPLAB_EINVAL, "cost table: kernel %d unknown", (int)k);
  if (!isfinite(series) || !isfinite(work) || work <= 0 || !isfinite(time_us) || time_us <= 0)
    CPLAB_FAIL(d, CPLAB_ERANGE, "cost table: %s: series %g, work %g, time %g us: work and time must be positive "
               "and finite", kernel_names[k], series, work, time_us);
  cplab_model_point *p = realloc(t->points[k], (t->count[k] + 1) * sizeof *p);
  if (!p) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  t->points[k] = p;
  p[t->count[k]++] = (cplab_model_point){series, work, time_us, source};
  qsort(p, t->count[k], sizeof *p, point_cmp);
  return 0;
}

/* ---- loading ---------------------------------------------------------- */

/* A shape field: an integer, or a boolean (kernels.json writes causal as
 * either). */
static int get_num(cplab_json_reader *r, const json_t *e, const char *path, const char *key, double *out) {
  const json_t *v = json_object_get(e, key);
  char p[CPLAB_PATH_MAX];
  cplab_json_child(p, path, key);
  if (!v) return cplab_json_fail(r, path, 0, CPLAB_ESCHEMA, "missing required field '%s'", key);
  if (json_is_boolean(v)) return *out = json_is_true(v), 0;
  if (!json_is_number(v)) return cplab_json_fail(r, p, 0, CPLAB_ESCHEMA, "expected a number, got %s", cplab_json_type_name(v));
  *out = json_number_value(v);
  if (!isfinite(*out) || *out < 0) return cplab_json_fail(r, p, 0, CPLAB_ERANGE, "must be finite and not negative");
  return 0;
}

/* Sum over q rows of min(cap, base + i + 1) (causal rows at the end of a
 * context), or q * min(cap, base + q) when not causal. */
static double rows_sum(double q, double base, double cap, int causal) {
  if (!causal) return q * fmin(cap, base + q);
  double s = 0;
  for (double i = 0; i < q; i++) s += fmin(cap, base + i + 1);
  return s;
}

/* The series and work of one kernels.json entry (table.h's rules). */
static int entry_shape(cplab_json_reader *r, const json_t *e, const char *path, cplab_model_kernel k, double *series,
                       double *work) {
  double a = 0, b = 0, c = 0, x = 0, y = 0, z = 0;
  int rc = 0;
  *series = 0;
  switch (k) {
  case CPLAB_MK_ATTN_PREFILL: /* heads, s_q, s_kv, topk, causal, batch */
    if (!(rc = get_num(r, e, path, "heads", series)) && !(rc = get_num(r, e, path, "s_q", &a)) &&
        !(rc = get_num(r, e, path, "s_kv", &b)) && !(rc = get_num(r, e, path, "topk", &c)) &&
        !(rc = get_num(r, e, path, "causal", &x)) && !(rc = get_num(r, e, path, "batch", &y)))
      *work = y * (x != 0 ? rows_sum(a, b - a, c, 1) : a * fmin(c, b));
    return rc;
  case CPLAB_MK_ATTN_DECODE: /* a rank's valid entries: topk / dcp of each row */
    if (!(rc = get_num(r, e, path, "heads", series)) && !(rc = get_num(r, e, path, "s_q", &a)) &&
        !(rc = get_num(r, e, path, "s_kv", &b)) && !(rc = get_num(r, e, path, "topk", &c)) &&
        !(rc = get_num(r, e, path, "batch", &y)) && !(rc = get_num(r, e, path, "dcp", &z)))
      *work = z >= 1 ? y * a * fmin(c, b) / z : 0;
    return rc;
  case CPLAB_MK_LOGITS_PREFILL:
  case CPLAB_MK_TOPK_PREFILL: /* queries at the end of keys: pairs in range */
    if (k == CPLAB_MK_LOGITS_PREFILL && (rc = get_num(r, e, path, "heads", series))) return rc;
    if (!(rc = get_num(r, e, path, "queries", &a)) && !(rc = get_num(r, e, path, "keys", &b)) &&
        !(rc = get_num(r, e, path, "causal", &x)))
      *work = x != 0 ? rows_sum(a, b - a, INFINITY, 1) : a * b;
    return rc;
  case CPLAB_MK_LOGITS_DECODE:
    if (!(rc = get_num(r, e, path, "heads", series)) && !(rc = get_num(r, e, path, "batch", &a)) &&
        !(rc = get_num(r, e, path, "context", &b)) && !(rc = get_num(r, e, path, "dcp", &z)))
      *work = z >= 1 ? a * ceil(b / z) : 0;
    return rc;
  case CPLAB_MK_TOPK_DECODE:
  case CPLAB_MK_TOPK_DECODE_CONVERT:
    if (!(rc = get_num(r, e, path, "batch", &a)) && !(rc = get_num(r, e, path, "context", &b))) *work = a * b;
    return rc;
  case CPLAB_MK_TOPK_MERGE:
  case CPLAB_MK_TOPK_MERGE_CONVERT:
    if (!(rc = get_num(r, e, path, "dcp", series))) rc = get_num(r, e, path, "batch", work);
    return rc;
  case CPLAB_MK_CONVERT: {
    const json_t *p = json_object_get(e, "path");
    if (!json_is_string(p) || (strcmp(json_string_value(p), "prefill") && strcmp(json_string_value(p), "decode")))
      return cplab_json_fail(r, path, 0, CPLAB_ESCHEMA, "field 'path': expected \"prefill\" or \"decode\"");
    *series = strcmp(json_string_value(p), "decode") == 0;
    if (!(rc = get_num(r, e, path, "rows", &a)) && !(rc = get_num(r, e, path, "k", &b))) *work = a * b;
    return rc;
  }
  case CPLAB_MK_GATHER: return get_num(r, e, path, "keys", work);
  case CPLAB_MK_RESTORE: return get_num(r, e, path, "tokens", work);
  case CPLAB_MK_GATHER_IDX: return get_num(r, e, path, "keys", work);
  case CPLAB_MK_COMBINE:
    if (!(rc = get_num(r, e, path, "dcp", series)) && !(rc = get_num(r, e, path, "batch", &a)) &&
        !(rc = get_num(r, e, path, "heads", &b)))
      *work = a * b;
    return rc;
  default: return cplab_json_fail(r, path, 0, CPLAB_EINTERNAL, "kernel %d has no shape rule", (int)k);
  }
}

/* One pending point, kept until the whole file has read cleanly. */
typedef struct pending {
  int kernel;
  double series, work, time_us;
} pending;

/* The entries of a kernels.json (bench = 1) or of a table file (bench = 0). */
static int read_entries(cplab_json_reader *r, const json_t *root, int bench, pending **out, size_t *n) {
  const json_t *entries = json_object_get(root, "entries");
  int rc = cplab_json_expect_array(r, entries, "entries", 1, 1u << 20);
  if (rc) return rc;
  if (!(*out = calloc(json_array_size(entries), sizeof **out)))
    return cplab_json_fail(r, "entries", 0, CPLAB_ENOMEM, "out of memory");
  *n = 0;
  for (size_t i = 0; i < json_array_size(entries); i++) {
    const json_t *e = json_array_get(entries, i);
    char path[CPLAB_PATH_MAX], name[64];
    cplab_json_index(path, "entries", i);
    if ((rc = cplab_json_expect_object(r, e, path)) || (rc = cplab_json_get_string(r, e, path, "kernel", 1, NULL, name, sizeof name)))
      return rc;
    int k = cplab_model_kernel_find(name);
    if (k < 0) {
      if (!bench) return cplab_json_fail(r, path, 0, CPLAB_ESCHEMA, "kernel '%s' is not one the model uses", name);
      continue; /* a kernel the model does not look up */
    }
    pending *p = &(*out)[*n];
    p->kernel = k;
    if (bench) {
      const json_t *check = json_object_get(e, "check"), *ok = check ? json_object_get(check, "ok") : NULL;
      if (json_is_false(ok) || json_object_get(e, "error")) continue; /* a failed case's time is no kernel's cost */
      if ((rc = entry_shape(r, e, path, (cplab_model_kernel)k, &p->series, &p->work)) ||
          (rc = cplab_json_get_real(r, e, path, "median_us", 1, 0, 1e-9, 1e12, &p->time_us)))
        return rc;
      if (p->work <= 0) return cplab_json_fail(r, path, 0, CPLAB_ERANGE, "its shape gives no work");
    } else {
      static const char *const keys[] = {"kernel", "series", "work", "time_us", NULL};
      if ((rc = cplab_json_check_keys(r, e, path, keys)) ||
          (rc = cplab_json_get_real(r, e, path, "series", 0, 0, 0, 1e18, &p->series)) ||
          (rc = cplab_json_get_real(r, e, path, "work", 1, 0, 1e-30, 1e30, &p->work)) ||
          (rc = cplab_json_get_real(r, e, path, "time_us", 1, 0, 1e-9, 1e12, &p->time_us)))
        return rc;
    }
    ++*n;
  }
  return 0;
}

int cplab_model_table_load(cplab_model_table *t, const char *path, cplab_diag *d) {
  char *text = NULL;
  size_t len = 0;
  int rc = cplab_json_read_file(path, 64u << 20, "cost tables", &text, &len, d);
  if (rc) return rc;
  json_error_t err;
  json_t *root = json_loadb(text, len, 0, &err);
  cplab_json_reader r;
  cplab_json_reader_init(&r, text, len, path, d);
  pending *pts = NULL;
  size_t n = 0;
  int bench = 0;
  if (!root) {
    rc = cplab_diag_set(d, CPLAB_ESYNTAX, "%s:%d:%d: %s", path, err.line, err.column, err.text);
  } else if (!(rc = cplab_json_expect_object(&r, root, "(top level)"))) {
    const json_t *prog = json_object_get(root, "program"), *ver = json_object_get(root, "cplab_model_table");
    bench = json_is_string(prog) && strcmp(json_string_value(prog), "cplab-kernel-bench") == 0;
    if (!bench && !json_is_string(ver))
      rc = cplab_json_fail(&r, "(top level)", 0, CPLAB_ESCHEMA,
                           "neither a cplab-kernel-bench kernels.json (\"program\") nor a cost table "
                           "(\"cplab_model_table\": \"1.x.y\")");
    else if (!bench && strncmp(json_string_value(ver), "1.", 2) != 0)
      rc = cplab_json_fail(&r, "cplab_model_table", 0, CPLAB_ESCHEMA, "version '%s': this reader takes 1.x.y",
                           json_string_value(ver));
    if (!rc) rc = read_entries(&r, root, bench, &pts, &n);
    if (!rc && t->num_sources == 0) { /* the card and copy ceiling of the first file */
      const json_t *card = json_object_get(root, "card"), *ceil = json_object_get(root, "ceilings");
      const json_t *name = json_is_object(card) ? json_object_get(card, "name") : card;
      const json_t *copy = json_is_object(ceil) ? json_object_get(ceil, "copy_gbps") : json_object_get(root, "copy_gbps");
      if (json_is_string(name)) snprintf(t->card, sizeof t->card, "%s", json_string_value(name));
      if (json_is_number(copy) && json_number_value(copy) > 0) t->copy_gbps = json_number_value(copy);
    }
  }
  if (!rc && n == 0) rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: no entry of a kernel the model uses", path);
  char **src = rc ? NULL : realloc(t->sources, (t->num_sources + 1) * sizeof *src);
  if (!rc && !src) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) {
    t->sources = src;
    if (!(src[t->num_sources] = strdup(path))) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  }
  if (!rc) {
    int source = (int)t->num_sources++;
    int present[CPLAB_MK_COUNT] = {0};
    for (size_t i = 0; i < n; i++) present[pts[i].kernel] = 1;
    for (int k = 0; k < CPLAB_MK_COUNT; k++) /* a newer run of a kernel replaces its points */
      if (present[k]) free(t->points[k]), t->points[k] = NULL, t->count[k] = 0;
    for (size_t i = 0; i < n && !rc; i++)
      rc = cplab_model_table_add(t, (cplab_model_kernel)pts[i].kernel, pts[i].series, pts[i].work, pts[i].time_us,
                                 source, d);
    if (rc) cplab_diag_prefix(d, "%s: ", path);
  }
  free(pts);
  cplab_json_reader_fini(&r);
  json_decref(root);
  free(text);
  return rc;
}

/* ---- lookup ----------------------------------------------------------- */

/* Time at work w within the points [p, p + n) of one series (sorted by
 * work; equal works averaged). *ext set when w is outside; below the range
 * the smallest point's rate, but never less than floor_us (the kernel's
 * fastest measured launch). */
static double series_time(const cplab_model_point *p, size_t n, double w, double floor_us, int *ext, int *source) {
  /* Distinct works with averaged times, walked in order. */
  double lo_w = 0, lo_t = 0;
  int have_lo = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    double sum = 0;
    while (j < n && p[j].work == p[i].work) sum += p[j].time_us, j++;
    double cw = p[i].work, ct = sum / (double)(j - i);
    *source = p[i].source;
    if (w == cw) return ct;
    if (w < cw) {
      if (!have_lo) return *ext = 1, fmax(floor_us, ct * w / cw); /* below the range */
      return lo_t + (ct - lo_t) * (w - lo_w) / (cw - lo_w); /* between two measured shapes */
    }
    lo_w = cw, lo_t = ct, have_lo = 1;
    i = j;
  }
  *ext = 1;
  return lo_t * w / lo_w; /* above the range: the largest shape's rate */
}

int cplab_model_table_time(const cplab_model_table *t, cplab_model_kernel k, double series, double work,
                           int extrapolate, cplab_model_lookup *out, cplab_diag *d) {
  memset(out, 0, sizeof *out);
  out->source = -1;
  const char *name = cplab_model_kernel_name(k);
  if (!name) CPLAB_FAIL(d, CPLAB_EINVAL, "cost table: kernel %d unknown", (int)k);
  if (!(work >= 0) || !isfinite(work)) CPLAB_FAIL(d, CPLAB_EINVAL, "cost table: %s: work %g", name, work);
  if (work == 0) return 0;
  const cplab_model_point *p = t->points[k];
  size_t n = t->count[k];
  if (n == 0) CPLAB_FAIL(d, CPLAB_ENOTFOUND, "cost table: no measured point of kernel %s (load a table that has it)", name);
  /* The series just below (or at) and just above the query. */
  size_t lo = n, hi = n;
  for (size_t i = 0; i < n; i++) {
    if (p[i].series <= series) lo = i;
    if (p[i].series >= series && hi == n) hi = i;
  }
  int ext = 0;
  double floor_us = INFINITY;
  for (size_t i = 0; i < n; i++) floor_us = fmin(floor_us, p[i].time_us);
  double t_lo = 0, t_hi = 0, s_lo = 0, s_hi = 0;
  if (lo == n || hi == n) { /* outside the measured series: the nearest one */
    ext = 1;
    lo = hi = lo == n ? 0 : lo;
  }
  s_lo = p[lo].series, s_hi = p[hi].series;
  size_t a = lo, b = lo; /* the points of series s_lo */
  while (a > 0 && p[a - 1].series == s_lo) a--;
  while (b < n && p[b].series == s_lo) b++;
  t_lo = series_time(p + a, b - a, work, floor_us, &ext, &out->source);
  if (s_hi != s_lo) {
    a = hi, b = hi;
    while (b < n && p[b].series == s_hi) b++;
    t_hi = series_time(p + a, b - a, work, floor_us, &ext, &out->source);
    t_lo += (t_hi - t_lo) * (series - s_lo) / (s_hi - s_lo);
  }
  if (ext && !extrapolate) {
    double w0 = INFINITY, w1 = 0; /* the measured works of the nearest series below */
    for (size_t i = 0; i < n; i++)
      if (p[i].series == s_lo) w0 = fmin(w0, p[i].work), w1 = fmax(w1, p[i].work);
    CPLAB_FAIL(d, CPLAB_ERANGE,
               "cost table: %s at series %g, work %.6g is outside the measured shapes (series %g..%g; series %g "
               "measured at work %.6g..%.6g); give --extrapolate to extend the table",
               name, series, work, p[0].series, p[n - 1].series, s_lo, w0, w1);
  }
  out->time_us = t_lo, out->extrapolated = ext;
  return 0;
}
