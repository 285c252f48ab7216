/* Reading cplab-bench results back from HDF5 (report_h5.h, RESULTS.md), to
 * re-render reports. A results file is input like any other: every
 * attribute, size and value is checked before it is used, every point goes
 * through the rules of cplab_bench_results_add, and a damaged or foreign
 * file ends in a message naming the file and the problem, never a crash. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/scenario.h"
#include "report_h5.h"
#include "report_internal.h"

typedef struct reader {
  const char *path;
  char where[1100]; /* "PATH:/points", for messages */
  hid_t file, group;
  int major;              /* format version: 1 (no layout, head padding or heads: read as vllm, not recorded;
                           * the parallel sizes' column was named "layout") or 2 */
  size_t n, total;        /* points, samples */
  cplab_bench_point *raw; /* the columns, scattered into points */
  int64_t *offsets;       /* [n + 1] */
  double *samples;        /* [total] */
} reader;

static int open_file(reader *rd, cplab_diag *d) {
  FILE *probe = fopen(rd->path, "rb");
  if (!probe) CPLAB_FAIL(d, CPLAB_EIO, "cannot open '%s': %s", rd->path, strerror(errno));
  fclose(probe);
  if (H5Fis_hdf5(rd->path) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: not an HDF5 file (truncated or damaged?)", rd->path);
  }
  rd->file = H5Fopen(rd->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (rd->file < 0) return h5u_fail(d, "%s: cannot open as HDF5 (truncated or damaged?)", rd->path);
  return 0;
}

static int check_format(reader *rd, cplab_diag *d) {
  if (!h5u_has_attr(rd->file, CPLAB_BENCH_FORMAT_NAME)) {
    H5Eclear2(H5E_DEFAULT);
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: not a cplab-bench results file (no '%s' attribute)", rd->path,
               CPLAB_BENCH_FORMAT_NAME);
  }
  char version[32];
  int rc = h5u_read_attr_str(rd->file, rd->path, CPLAB_BENCH_FORMAT_NAME, version, sizeof version, d);
  if (rc) return rc;
  int major, minor, patch;
  char extra;
  if (sscanf(version, "%d.%d.%d%c", &major, &minor, &patch, &extra) != 3)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: format version '%s' is not MAJOR.MINOR.PATCH", rd->path, version);
  /* A major this reader knows (a newer minor only adds). */
  if (major != 1 && major != 2)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: format version %s is not supported (this reader reads %s 1.x.y and 2.x.y)",
               rd->path, version, CPLAB_BENCH_FORMAT_NAME);
  rd->major = major;
  return 0;
}

static int read_int_attr(const reader *rd, const char *name, int64_t lo, int64_t hi, int64_t *v, cplab_diag *d) {
  int rc = h5u_read_attr_i64(rd->file, rd->path, name, v, d);
  if (!rc && (*v < lo || *v > hi))
    rc = cplab_diag_set(d, CPLAB_ERANGE, "%s: attribute '%s' = %lld is outside [%lld, %lld]", rd->path, name,
                        (long long)*v, (long long)lo, (long long)hi);
  return rc;
}

static int read_meta(reader *rd, cplab_bench_meta *m, cplab_diag *d) {
  int rc = 0;
  for (size_t i = 0; !rc && i < report_h5_nmeta_texts; i++) {
    const report_h5_meta_text *t = &report_h5_meta_texts[i];
    if (rd->major == 1 && strcmp(t->name, "layout") == 0) continue; /* version 1 measured vllm only */
    rc = h5u_read_attr_str(rd->file, rd->path, t->name, (char *)m + t->offset, t->width, d);
  }
  int64_t gpus = 0, layers = 0, resamples = 0, points = 0, pad = -1;
  if (!rc && rd->major > 1) rc = read_int_attr(rd, "head_pad", 0, 1 << 20, &pad, d);
  m->head_pad = (int)pad;
  if (!rc) rc = read_int_attr(rd, "gpus", 0, INT32_MAX, &gpus, d);
  if (!rc) rc = read_int_attr(rd, "layers", 0, INT32_MAX, &layers, d);
  if (!rc) rc = read_int_attr(rd, "resamples", 100, INT32_MAX, &resamples, d);
  if (!rc) rc = read_int_attr(rd, "points", 0, (int64_t)CPLAB_BENCH_MAX_POINTS, &points, d);
  if (!rc) rc = h5u_read_attr_u64(rd->file, rd->path, "seed", &m->seed, d);
  if (!rc && m->seed > CPLAB_MAX_SEED)
    rc = cplab_diag_set(d, CPLAB_ERANGE, "%s: attribute 'seed' is above %llu", rd->path,
                        (unsigned long long)CPLAB_MAX_SEED);
  m->gpus = (int)gpus, m->layers = (int)layers, m->resamples = (int)resamples;
  rd->n = (size_t)points;
  return rc;
}

/* Check that /points/<name> is a rank-`rank` dataset of type with first
 * dimension want (and second want2 for rank 2). */
static int expect(reader *rd, const char *name, h5u_type type, int rank, uint64_t want, uint64_t want2, cplab_diag *d) {
  uint64_t dims[2] = {0, 0};
  int rc = h5u_expect(rd->group, rd->where, name, type, rank, dims, d);
  if (!rc && (dims[0] != want || (rank == 2 && dims[1] != want2)))
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: dataset '%s' has %llu rows, expected %llu", rd->where, name,
                        (unsigned long long)dims[0], (unsigned long long)want);
  return rc;
}

static void scatter(reader *rd, size_t offset, size_t size, const char *buf) {
  for (size_t i = 0; i < rd->n; i++) memcpy((char *)&rd->raw[i] + offset, buf + i * size, size);
}

static int read_numeric_columns(reader *rd, char *buf, cplab_diag *d) {
  int rc = 0;
  for (size_t c = 0; !rc && c < report_h5_ncolumns; c++) {
    const report_h5_column *col = &report_h5_columns[c];
    if (rd->major == 1 && strncmp(col->name, "heads", 5) == 0) continue; /* not recorded: 0 */
    rc = expect(rd, col->name, col->type, 1, rd->n, 0, d);
    if (!rc) rc = h5u_read(rd->group, rd->where, col->name, col->type, buf, rd->n, d);
    if (!rc) scatter(rd, col->offset, h5u_type_size(col->type), buf);
  }
  if (!rc) rc = expect(rd, "phase_ms", H5U_F64, 2, rd->n, CPLAB_BENCH_PHASES, d);
  if (!rc) rc = h5u_read(rd->group, rd->where, "phase_ms", H5U_F64, buf, (uint64_t)rd->n * CPLAB_BENCH_PHASES, d);
  if (!rc) scatter(rd, offsetof(cplab_bench_point, phase_ms), sizeof rd->raw->phase_ms, buf);
  int64_t *baseline = (int64_t *)buf;
  if (!rc) rc = expect(rd, "baseline", H5U_I64, 1, rd->n, 0, d);
  if (!rc) rc = h5u_read(rd->group, rd->where, "baseline", H5U_I64, baseline, rd->n, d);
  for (size_t i = 0; !rc && i < rd->n; i++) rd->raw[i].baseline = (long)baseline[i];
  return rc;
}

/* n fixed-length strings of at most width bytes each (NUL included) into
 * fields at offset of rd->raw; metric (offset SIZE_MAX) is parsed instead. */
static int read_strings(reader *rd, const char *name, size_t offset, size_t width, cplab_diag *d) {
  if (!h5u_has(rd->group, name)) CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: missing dataset '%s'", rd->where, name);
  hid_t ds = H5Dopen2(rd->group, name, H5P_DEFAULT);
  hid_t t = ds < 0 ? -1 : H5Dget_type(ds), s = ds < 0 ? -1 : H5Dget_space(ds);
  hsize_t dims[1] = {0};
  size_t size = t < 0 ? 0 : H5Tget_size(t);
  int rc = 0;
  if (ds < 0 || t < 0 || s < 0)
    rc = h5u_fail(d, "%s: cannot open dataset '%s'", rd->where, name);
  else if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0 || size == 0 || size > width ||
           H5Sget_simple_extent_ndims(s) != 1)
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: dataset '%s' must hold fixed-length strings of at most %zu bytes",
                        rd->where, name, width);
  else if (H5Sget_simple_extent_dims(s, dims, NULL) != 1 || dims[0] != rd->n)
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: dataset '%s' has %llu rows, expected %zu", rd->where, name,
                        (unsigned long long)dims[0], rd->n);
  char *buf = rc ? NULL : calloc(rd->n ? rd->n : 1, size);
  if (!rc && !buf) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc && rd->n > 0 && H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
    rc = h5u_fail(d, "%s: cannot read dataset '%s' (damaged?)", rd->where, name);
  for (size_t i = 0; !rc && i < rd->n; i++) {
    const char *e = buf + i * size;
    size_t len = strnlen(e, size);
    if (len >= width)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: %s of point %zu is too long", rd->where, name, i);
    else if (offset != SIZE_MAX)
      memcpy((char *)&rd->raw[i] + offset, e, len);
    else if (len == 4 && memcmp(e, "TTFT", 4) == 0)
      rd->raw[i].metric = CPLAB_BENCH_TTFT;
    else if (len == 4 && memcmp(e, "TPOT", 4) == 0)
      rd->raw[i].metric = CPLAB_BENCH_TPOT;
    else
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: point %zu: unknown metric '%.*s'", rd->where, i, (int)len, e);
  }
  free(buf);
  h5u_close(s);
  h5u_close(t);
  h5u_close(ds);
  return rc;
}

static int read_text_columns(reader *rd, cplab_diag *d) {
  int rc = 0;
  for (size_t c = 0; !rc && c < report_h5_ntext_columns; c++) {
    const char *name = report_h5_text_columns[c].name;
    if (rd->major == 1 && strcmp(name, "parallel") == 0) name = "layout"; /* its name in version 1 */
    rc = read_strings(rd, name, report_h5_text_columns[c].offset, report_h5_text_columns[c].width, d);
  }
  if (!rc) rc = read_strings(rd, "metric", SIZE_MAX, REPORT_H5_METRIC_WIDTH, d);
  return rc;
}

/* offsets: 0, strictly increasing (every point has a sample), ending at the
 * length of samples_ms. */
static int read_samples(reader *rd, cplab_diag *d) {
  uint64_t total = 0;
  int rc = expect(rd, "offsets", H5U_I64, 1, (uint64_t)rd->n + 1, 0, d);
  if (!rc) rc = h5u_expect(rd->group, rd->where, "samples_ms", H5U_F64, 1, &total, d);
  if (!rc && total > CPLAB_BENCH_MAX_TOTAL_SAMPLES)
    rc = cplab_diag_set(d, CPLAB_ERANGE, "%s: %llu samples, more than a reader accepts (%zu)", rd->where,
                        (unsigned long long)total, CPLAB_BENCH_MAX_TOTAL_SAMPLES);
  if (rc) return rc;
  rd->total = (size_t)total;
  rd->offsets = malloc((rd->n + 1) * sizeof *rd->offsets);
  rd->samples = malloc((rd->total ? rd->total : 1) * sizeof *rd->samples);
  if (!rd->offsets || !rd->samples)
    CPLAB_FAIL(d, CPLAB_ENOMEM, "%s: out of memory for %zu samples", rd->path, rd->total);
  rc = h5u_read(rd->group, rd->where, "offsets", H5U_I64, rd->offsets, rd->n + 1, d);
  if (!rc) rc = h5u_read(rd->group, rd->where, "samples_ms", H5U_F64, rd->samples, rd->total, d);
  if (!rc && rd->offsets[0] != 0)
    rc =
        cplab_diag_set(d, CPLAB_ESCHEMA, "%s: offsets must start at 0, got %lld", rd->where, (long long)rd->offsets[0]);
  for (size_t i = 0; !rc && i < rd->n; i++)
    if (rd->offsets[i + 1] <= rd->offsets[i] || rd->offsets[i + 1] > (int64_t)rd->total)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA,
                          "%s: offsets[%zu] = %lld after %lld: offsets must increase (every point has samples) and "
                          "stay within the %zu samples",
                          rd->where, i + 1, (long long)rd->offsets[i + 1], (long long)rd->offsets[i], rd->total);
  if (!rc && rd->offsets[rd->n] != (int64_t)rd->total)
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: offsets end at %lld, but samples_ms holds %zu samples", rd->where,
                        (long long)rd->offsets[rd->n], rd->total);
  return rc;
}

/* The stored statistics must describe the stored samples, the baseline follow
 * the rule, and the ratio fit the baseline (see cplab_bench_results_finish). */
static int check_point(const cplab_bench_results *r, size_t i, cplab_diag *d) {
  const cplab_bench_point *p = &r->points[i];
  const cplab_stats *s = &p->stats;
  double lo = p->samples_ms[0], hi = p->samples_ms[0];
  for (size_t k = 1; k < p->n; k++) lo = fmin(lo, p->samples_ms[k]), hi = fmax(hi, p->samples_ms[k]);
  if (s->min != lo || s->max != hi || !(s->min <= s->median && s->median <= s->max) || !(s->p99 <= s->max) ||
      !(s->ci_low <= s->ci_high) || !isfinite(s->mean) || !(s->stddev >= 0))
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "statistics do not describe the samples (damaged?)");
  long rule = cplab_bench_results_baseline_of(r, i);
  if (p->baseline != rule) CPLAB_FAIL(d, CPLAB_ESCHEMA, "baseline %ld, but the rule gives %ld", p->baseline, rule);
  const cplab_ratio *q = &p->ratio;
  int want_nan = p->baseline < 0 || !(r->points[p->baseline].stats.median > 0);
  if (p->baseline == (long)i ? (q->ratio != 1 || q->ci_low != 1 || q->ci_high != 1)
      : want_nan             ? !(isnan(q->ratio) && isnan(q->ci_low) && isnan(q->ci_high))
                             : !(q->ratio >= 0 && isfinite(q->ratio) && q->ci_low <= q->ci_high))
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "ratio %g [%g, %g] does not fit baseline %ld", q->ratio, q->ci_low, q->ci_high,
               p->baseline);
  return 0;
}

/* Points through the rules of _add, then their stored results. */
static int build(reader *rd, cplab_bench_results *r, cplab_diag *d) {
  int rc = 0;
  for (size_t i = 0; !rc && i < rd->n; i++) {
    rd->raw[i].samples_ms = rd->samples + rd->offsets[i];
    rd->raw[i].n = (size_t)(rd->offsets[i + 1] - rd->offsets[i]);
    rd->raw[i].stats.n = rd->raw[i].n;
    rc = cplab_bench_results_add(r, &rd->raw[i], d);
    if (rc) cplab_diag_prefix(d, "%s: point %zu: ", rd->where, i);
  }
  for (size_t i = 0; !rc && i < rd->n; i++) {
    cplab_bench_point *p = &r->points[i];
    p->stats = rd->raw[i].stats, p->baseline = rd->raw[i].baseline, p->ratio = rd->raw[i].ratio;
    if (p->baseline < -1 || p->baseline >= (long)rd->n)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: point %zu: baseline %ld is not a point", rd->where, i, p->baseline);
  }
  for (size_t i = 0; !rc && i < rd->n; i++)
    if ((rc = check_point(r, i, d))) cplab_diag_prefix(d, "%s: point %zu: ", rd->where, i);
  return rc;
}

static int read_all(reader *rd, cplab_bench_results *r, cplab_diag *d) {
  int rc;
  if ((rc = open_file(rd, d)) || (rc = check_format(rd, d)) || (rc = read_meta(rd, &r->meta, d))) return rc;
  if (!h5u_has(rd->file, REPORT_H5_GROUP))
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: missing group '/%s'", rd->path, REPORT_H5_GROUP);
  if ((rd->group = H5Gopen2(rd->file, REPORT_H5_GROUP, H5P_DEFAULT)) < 0)
    return h5u_fail(d, "%s: cannot open group '/%s'", rd->path, REPORT_H5_GROUP);
  rd->raw = calloc(rd->n ? rd->n : 1, sizeof *rd->raw);
  char *buf = malloc((rd->n ? rd->n : 1) * sizeof(double) * CPLAB_BENCH_PHASES);
  rc = rd->raw && buf ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "%s: out of memory for %zu points", rd->path, rd->n);
  if (!rc) rc = read_numeric_columns(rd, buf, d);
  free(buf);
  if (!rc) rc = read_text_columns(rd, d);
  if (!rc) rc = read_samples(rd, d);
  if (!rc) rc = build(rd, r, d);
  return rc;
}

int cplab_bench_read_h5(const char *path, cplab_bench_results *r, cplab_diag *d) {
  cplab_bench_results_init(r);
  h5u_quiet();
  reader rd = {.path = path, .file = -1, .group = -1};
  snprintf(rd.where, sizeof rd.where, "%s:/%s", path, REPORT_H5_GROUP);
  int rc = read_all(&rd, r, d);
  h5u_close(rd.group);
  h5u_close(rd.file);
  H5Eclear2(H5E_DEFAULT);
  free(rd.raw);
  free(rd.offsets);
  free(rd.samples);
  if (rc)
    cplab_bench_results_free(r);
  else
    r->finished = 1;
  return rc;
}
