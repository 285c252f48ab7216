/* The link model of cplab-model: see link.h. */
#include "link.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"

double cplab_model_coll_factor(cplab_coll_kind kind, int n) {
  if (n <= 1) return 0;
  double f = (double)(n - 1) / n;
  return kind == CPLAB_COLL_ALL_REDUCE ? 2 * f : f;
}

double cplab_model_coll_bytes(cplab_coll_kind kind, int n, int64_t count, cplab_dtype dtype) {
  double b = (double)count * cplab_dtype_bytes(dtype);
  return kind == CPLAB_COLL_ALL_GATHER ? b * n : b; /* the gathered array; RS and AR: the buffer */
}

double cplab_model_tier_us(const cplab_model_tier *t, cplab_coll_kind kind, int n, double bytes) {
  if (n <= 1) return 0;
  return t->latency_us + bytes * cplab_model_coll_factor(kind, n) / (t->busbw_gbps * 1e3); /* GB/s = 1e3 B/us */
}

/* Values and their sources: shared/reference/perf-anchors.md. */
int cplab_model_link_preset(const char *name, cplab_model_link *out, cplab_diag *d) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "preset %s", name);
  const cplab_model_tier ib = {30.0, 45.0}; /* NDR 400 Gb/s per GPU = 50 GB/s, ~90% as ring busbw; latency: ESTIMATE */
  if (strcmp(name, "h200") == 0) {
    /* NVLink4 ring with NVLS off: ~360 GB/s busbw (nccl-tests#326, nccl#1455); eager latency 10-20 us. */
    out->gpus_per_node = 8, out->intra = (cplab_model_tier){20.0, 360.0}, out->inter = ib;
    return 0;
  }
  if (strcmp(name, "gb200") == 0) {
    /* NVLink5: 900 GB/s per direction, the same ~80% ring efficiency as NVLink4 (ESTIMATE), one
     * 72-GPU NVLink domain. */
    out->gpus_per_node = 72, out->intra = (cplab_model_tier){15.0, 720.0}, out->inter = ib;
    return 0;
  }
  CPLAB_FAIL(d, CPLAB_ENOTFOUND, "link preset '%s': unknown (h200, gb200, or a link file)", name);
}

static int read_tier(cplab_json_reader *r, const json_t *root, const char *key, cplab_model_tier *t) {
  const json_t *o = json_object_get(root, key);
  static const char *const keys[] = {"latency_us", "busbw_gbps", NULL};
  int rc = cplab_json_expect_object(r, o, key);
  if (!rc) rc = cplab_json_check_keys(r, o, key, keys);
  if (!rc) rc = cplab_json_get_real(r, o, key, "latency_us", 1, 0, 0, 1e6, &t->latency_us);
  if (!rc) rc = cplab_json_get_real(r, o, key, "busbw_gbps", 1, 0, 1e-3, 1e6, &t->busbw_gbps);
  return rc;
}

/* Parse path into *root with a reader r (fini and decref by the caller). */
static int open_json(const char *path, const char *kind, char **text, json_t **root, cplab_json_reader *r,
                     cplab_diag *d) {
  size_t len = 0;
  int rc = cplab_json_read_file(path, 16u << 20, kind, text, &len, d);
  cplab_json_reader_init(r, rc ? "" : *text, rc ? 0 : len, path, d);
  if (rc) return rc;
  json_error_t err;
  if (!(*root = json_loadb(*text, len, 0, &err)))
    CPLAB_FAIL(d, CPLAB_ESYNTAX, "%s:%d:%d: %s", path, err.line, err.column, err.text);
  return cplab_json_expect_object(r, *root, "(top level)");
}

int cplab_model_link_load(const char *path, cplab_model_link *out, cplab_diag *d) {
  char *text = NULL;
  json_t *root = NULL;
  cplab_json_reader r;
  memset(out, 0, sizeof *out);
  int rc = open_json(path, "link files", &text, &root, &r, d);
  static const char *const keys[] = {"cplab_model_link", "name", "gpus_per_node", "intra", "inter", NULL};
  char ver[32], name[96];
  int64_t g = 0;
  if (!rc) rc = cplab_json_check_keys(&r, root, "(top level)", keys);
  if (!rc) rc = cplab_json_get_string(&r, root, "(top level)", "cplab_model_link", 1, NULL, ver, sizeof ver);
  if (!rc && strncmp(ver, "1.", 2) != 0)
    rc = cplab_json_fail(&r, "cplab_model_link", 0, CPLAB_ESCHEMA, "version '%s': this reader takes 1.x.y", ver);
  if (!rc) rc = cplab_json_get_string(&r, root, "(top level)", "name", 0, "", name, sizeof name);
  if (!rc) rc = cplab_json_get_int(&r, root, "(top level)", "gpus_per_node", 1, 0, 1, 1 << 20, &g);
  if (!rc) rc = read_tier(&r, root, "intra", &out->intra);
  if (!rc) rc = read_tier(&r, root, "inter", &out->inter);
  if (!rc) out->gpus_per_node = (int)g, snprintf(out->name, sizeof out->name, "%s", name[0] ? name : path);
  cplab_json_reader_fini(&r);
  json_decref(root);
  free(text);
  return rc;
}

int cplab_model_fit_line(const double *x, const double *y, const double *w, int n, double *a, double *b, cplab_diag *d) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++) {
    double wi = w ? w[i] : 1.0;
    sw += wi, sx += wi * x[i], sy += wi * y[i], sxx += wi * x[i] * x[i], sxy += wi * x[i] * y[i];
  }
  double den = sw * sxx - sx * sx;
  if (n < 2 || !(fabs(den) > 1e-12 * (sxx * sw + 1e-300)))
    CPLAB_FAIL(d, CPLAB_EINVAL, "a line needs two points with different x (%d given)", n);
  *b = (sw * sxy - sx * sy) / den;
  *a = (sy - *b * sx) / sw;
  return 0;
}

/* The points of cplab-gather-bench's document: "results"[] with total_bytes and nccl_allgather.time_us.median. */
static int gather_bench_points(cplab_json_reader *r, const json_t *root, int ranks, double *x, double *y, int *n) {
  const json_t *res = json_object_get(root, "results");
  int rc = cplab_json_expect_array(r, res, "results", 2, 64);
  for (size_t i = 0; !rc && i < json_array_size(res); i++) {
    char p[CPLAB_PATH_MAX], q[CPLAB_PATH_MAX];
    const json_t *e = json_array_get(res, i), *ag = NULL, *tm = NULL;
    double bytes = 0, us = 0;
    cplab_json_index(p, "results", i);
    rc = cplab_json_expect_object(r, e, p);
    if (!rc) rc = cplab_json_get_real(r, e, p, "total_bytes", 1, 0, 1, 1e15, &bytes);
    cplab_json_child(q, p, "nccl_allgather");
    if (!rc) rc = cplab_json_expect_object(r, ag = json_object_get(e, "nccl_allgather"), q);
    cplab_json_child(q, q, "time_us");
    if (!rc) rc = cplab_json_expect_object(r, tm = json_object_get(ag, "time_us"), q);
    if (!rc) rc = cplab_json_get_real(r, tm, q, "median", 1, 0, 1e-6, 1e12, &us);
    if (!rc) x[*n] = bytes * cplab_model_coll_factor(CPLAB_COLL_ALL_GATHER, ranks), y[(*n)++] = us;
  }
  return rc;
}

/* The points of cplab-kernel-bench's kernels.json (--kernel gather_nccl): the "entries"[] of kernel gather_nccl and
 * op nccl_allgather, with total_bytes and median_us; other entries are skipped. */
static int kernel_bench_points(cplab_json_reader *r, const json_t *root, int ranks, double *x, double *y, int *n,
                               cplab_diag *d, const char *path) {
  const json_t *ent = json_object_get(root, "entries");
  int rc = cplab_json_expect_array(r, ent, "entries", 0, 4096);
  for (size_t i = 0; !rc && i < json_array_size(ent); i++) {
    char p[CPLAB_PATH_MAX], kernel[64], op[64];
    const json_t *e = json_array_get(ent, i);
    double bytes = 0, us = 0;
    cplab_json_index(p, "entries", i);
    rc = cplab_json_expect_object(r, e, p);
    if (!rc) rc = cplab_json_get_string(r, e, p, "kernel", 1, NULL, kernel, sizeof kernel);
    if (!rc) rc = cplab_json_get_string(r, e, p, "op", 0, "", op, sizeof op);
    if (rc || strcmp(kernel, "gather_nccl") || strcmp(op, "nccl_allgather") || json_object_get(e, "error") ||
        !json_object_get(e, "median_us"))
      continue; /* another kernel, another operation, or a case that failed (no time) */
    if (*n == 64) CPLAB_FAIL(d, CPLAB_ERANGE, "%s: more than 64 all-gather sizes", path);
    rc = cplab_json_get_real(r, e, p, "total_bytes", 1, 0, 1, 1e15, &bytes);
    if (!rc) rc = cplab_json_get_real(r, e, p, "median_us", 1, 0, 1e-6, 1e12, &us);
    if (!rc) x[*n] = bytes * cplab_model_coll_factor(CPLAB_COLL_ALL_GATHER, ranks), y[(*n)++] = us;
  }
  if (!rc && *n < 2)
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: %d timed gather_nccl nccl_allgather entries, the fit needs 2", path, *n);
  return rc;
}

int cplab_model_link_calibrate(const char *path, cplab_model_link *link, cplab_diag *d) {
  char *text = NULL;
  json_t *root = NULL;
  cplab_json_reader r;
  double x[64], y[64];
  int n = 0;
  int64_t ranks = 0;
  int rc = open_json(path, "gather-bench results", &text, &root, &r, d);
  if (!rc) rc = cplab_json_get_int(&r, root, "(top level)", "ranks", 1, 0, 2, 1 << 20, &ranks);
  /* Two formats: cplab-gather-bench's (the committed results before 2026-12-02) and cplab-kernel-bench's. */
  if (!rc && json_object_get(root, "entries"))
    rc = kernel_bench_points(&r, root, (int)ranks, x, y, &n, d, path);
  else if (!rc)
    rc = gather_bench_points(&r, root, (int)ranks, x, y, &n);
  double a = 0, b = 0;
  if (!rc) rc = cplab_model_fit_line(x, y, NULL, n, &a, &b, d);
  if (!rc && (a < 0 || b <= 0))
    rc = cplab_diag_set(d, CPLAB_ERANGE, "%s: the all-gather times give latency %g us and %g us/B: not a link", path, a, b);
  if (!rc) {
    link->intra.latency_us = a, link->intra.busbw_gbps = 1e-3 / b;
    snprintf(link->name, sizeof link->name, "calibrated from %s", path);
  }
  cplab_json_reader_fini(&r);
  json_decref(root);
  free(text);
  return rc;
}
