/* cplab-bench results as HDF5: the schema tables and the writer. See
 * report_h5.h and RESULTS.md. Like the trace writer (traces/write.c): a
 * temporary file beside the target, pinned format bounds and no timestamps
 * (the same results give the same bytes), flushed to disk, then renamed
 * (include/cplab/atomic.h). */
#include "report_h5.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cplab/atomic.h"
#include "report_internal.h"

_Static_assert(sizeof(int) == 4, "int fields are stored as int32");

#define POINT_FIELD(f) offsetof(cplab_bench_point, f)
const report_h5_column report_h5_columns[] = {
    {"tp", H5U_I32, POINT_FIELD(tp)},
    {"pcp", H5U_I32, POINT_FIELD(pcp)},
    {"dcp", H5U_I32, POINT_FIELD(dcp)},
    {"heads", H5U_I32, POINT_FIELD(heads)},
    {"heads_run", H5U_I32, POINT_FIELD(heads_run)},
    {"tokens", H5U_I64, POINT_FIELD(tokens)},
    {"batch", H5U_I64, POINT_FIELD(batch)},
    {"out_tokens", H5U_I64, POINT_FIELD(out_tokens)},
    {"median", H5U_F64, POINT_FIELD(stats.median)},
    {"p99", H5U_F64, POINT_FIELD(stats.p99)},
    {"mean", H5U_F64, POINT_FIELD(stats.mean)},
    {"stddev", H5U_F64, POINT_FIELD(stats.stddev)},
    {"min", H5U_F64, POINT_FIELD(stats.min)},
    {"max", H5U_F64, POINT_FIELD(stats.max)},
    {"ci_low", H5U_F64, POINT_FIELD(stats.ci_low)},
    {"ci_high", H5U_F64, POINT_FIELD(stats.ci_high)},
    {"ratio", H5U_F64, POINT_FIELD(ratio.ratio)},
    {"ratio_ci_low", H5U_F64, POINT_FIELD(ratio.ci_low)},
    {"ratio_ci_high", H5U_F64, POINT_FIELD(ratio.ci_high)},
};
const size_t report_h5_ncolumns = sizeof report_h5_columns / sizeof report_h5_columns[0];

const report_h5_text_column report_h5_text_columns[] = {
    {"parallel", POINT_FIELD(parallel), sizeof((cplab_bench_point *)0)->parallel},
    {"workload", POINT_FIELD(workload), sizeof((cplab_bench_point *)0)->workload},
    {"graph", POINT_FIELD(graph), sizeof((cplab_bench_point *)0)->graph},
};
const size_t report_h5_ntext_columns = sizeof report_h5_text_columns / sizeof report_h5_text_columns[0];

#define META_TEXT(f) \
  { #f, offsetof(cplab_bench_meta, f), sizeof((cplab_bench_meta *)0)->f }
const report_h5_meta_text report_h5_meta_texts[] = {META_TEXT(card),    META_TEXT(date),   META_TEXT(commit),
                                                    META_TEXT(command), META_TEXT(preset), META_TEXT(layout),
                                                    META_TEXT(backend), META_TEXT(note)};
const size_t report_h5_nmeta_texts = sizeof report_h5_meta_texts / sizeof report_h5_meta_texts[0];

static int write_meta(hid_t file, const cplab_bench_results *r, cplab_diag *d) {
  const cplab_bench_meta *m = &r->meta;
  int rc = h5u_attr_str(file, CPLAB_BENCH_FORMAT_NAME, CPLAB_BENCH_FORMAT_VERSION, d);
  for (size_t i = 0; !rc && i < report_h5_nmeta_texts; i++) {
    const char *field = (const char *)m + report_h5_meta_texts[i].offset;
    /* A string field filled to its last byte has no NUL: store what fits. */
    char text[2048];
    snprintf(text, sizeof text, "%.*s", (int)report_h5_meta_texts[i].width - 1, field);
    rc = h5u_attr_str(file, report_h5_meta_texts[i].name, text, d);
  }
  if (!rc) rc = h5u_attr_i32(file, "gpus", m->gpus, d);
  if (!rc) rc = h5u_attr_i32(file, "layers", m->layers, d);
  if (!rc) rc = h5u_attr_i32(file, "head_pad", m->head_pad, d);
  if (!rc) rc = h5u_attr_i32(file, "resamples", m->resamples, d);
  if (!rc) rc = h5u_attr_u64(file, "seed", m->seed, d);
  if (!rc) rc = h5u_attr_i64(file, "points", (int64_t)r->n, d);
  return rc;
}

/* A 1-D dataset of n fixed-length strings, width bytes each, NUL-padded. */
static int write_strings(hid_t loc, const char *name, size_t width, uint64_t n, const char *data, cplab_diag *d) {
  hsize_t dims[1] = {n};
  hid_t t = H5Tcopy(H5T_C_S1), space = H5Screate_simple(1, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hid_t ds = -1;
  int rc = 0;
  if (t < 0 || space < 0 || dcpl < 0 || H5Tset_size(t, width) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0 ||
      H5Pset_obj_track_times(dcpl, 0) < 0)
    rc = h5u_fail(d, "cannot prepare string dataset '%s'", name);
  if (!rc && (ds = H5Dcreate2(loc, name, t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0)
    rc = h5u_fail(d, "cannot create dataset '%s'", name);
  if (!rc && n > 0 && H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    rc = h5u_fail(d, "cannot write dataset '%s'", name);
  h5u_close(ds);
  h5u_close(dcpl);
  h5u_close(space);
  h5u_close(t);
  return rc;
}

/* Gather one field of every point into buf (n elements of its size). */
static void gather(const cplab_bench_results *r, size_t offset, size_t size, char *buf) {
  for (size_t i = 0; i < r->n; i++) memcpy(buf + i * size, (const char *)&r->points[i] + offset, size);
}

static int write_columns(hid_t g, const cplab_bench_results *r, char *buf, cplab_diag *d) {
  int rc = 0;
  for (size_t c = 0; !rc && c < report_h5_ncolumns; c++) {
    gather(r, report_h5_columns[c].offset, h5u_type_size(report_h5_columns[c].type), buf);
    rc = h5u_write1(g, report_h5_columns[c].name, report_h5_columns[c].type, r->n, buf, d);
  }
  for (size_t c = 0; !rc && c < report_h5_ntext_columns; c++) {
    const report_h5_text_column *t = &report_h5_text_columns[c];
    gather(r, t->offset, t->width, buf);
    rc = write_strings(g, t->name, t->width, r->n, buf, d);
  }
  memset(buf, 0, r->n * REPORT_H5_METRIC_WIDTH); /* padding bytes too: the same results, the same file */
  for (size_t i = 0; !rc && i < r->n; i++)
    snprintf(buf + i * REPORT_H5_METRIC_WIDTH, REPORT_H5_METRIC_WIDTH, "%s",
             cplab_bench_metric_name(r->points[i].metric));
  if (!rc) rc = write_strings(g, "metric", REPORT_H5_METRIC_WIDTH, r->n, buf, d);
  int64_t *baseline = (int64_t *)buf;
  for (size_t i = 0; i < r->n; i++) baseline[i] = r->points[i].baseline;
  if (!rc) rc = h5u_write1(g, "baseline", H5U_I64, r->n, baseline, d);
  double *phases = (double *)buf;
  for (size_t i = 0; i < r->n; i++)
    memcpy(phases + i * CPLAB_BENCH_PHASES, r->points[i].phase_ms, sizeof r->points[i].phase_ms);
  uint64_t dims[2] = {r->n, CPLAB_BENCH_PHASES};
  if (!rc) rc = h5u_write(g, "phase_ms", H5U_F64, 2, dims, phases, d);
  return rc;
}

static int write_samples(hid_t g, const cplab_bench_results *r, cplab_diag *d) {
  size_t total = 0;
  for (size_t i = 0; i < r->n; i++) total += r->points[i].n;
  int64_t *offsets = malloc((r->n + 1) * sizeof *offsets);
  double *samples = malloc((total ? total : 1) * sizeof *samples);
  int rc = offsets && samples ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory for %zu samples", total);
  if (!rc) {
    offsets[0] = 0;
    for (size_t i = 0; i < r->n; i++) {
      memcpy(samples + offsets[i], r->points[i].samples_ms, r->points[i].n * sizeof *samples);
      offsets[i + 1] = offsets[i] + (int64_t)r->points[i].n;
    }
    rc = h5u_write1(g, "offsets", H5U_I64, r->n + 1, offsets, d);
  }
  /* Uncompressed: timings are high-entropy doubles, deflate gains little. */
  uint64_t dims[1] = {total};
  if (!rc) rc = h5u_write_ex(g, "samples_ms", H5U_F64, 1, dims, samples, 0, d);
  free(offsets);
  free(samples);
  return rc;
}

static int write_points(hid_t file, const cplab_bench_results *r, cplab_diag *d) {
  hid_t g = h5u_group_create(file, REPORT_H5_GROUP, d);
  if (g < 0) return d ? d->code : CPLAB_EHDF5;
  /* One scratch row per point wide enough for any column (phases are widest). */
  size_t row = sizeof(double) * CPLAB_BENCH_PHASES;
  char *buf = malloc((r->n ? r->n : 1) * row);
  int rc = buf ? write_columns(g, r, buf, d) : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = h5u_attr_str(g, "phase_columns", REPORT_H5_PHASE_COLUMNS, d);
  if (!rc) rc = write_samples(g, r, d);
  free(buf);
  h5u_close(g);
  return rc;
}

static hid_t create_file(const char *tmp, cplab_diag *d) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE), file = -1;
  if (fapl < 0 || fcpl < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0 ||
      H5Pset_obj_track_times(fcpl, 0) < 0)
    h5u_fail(d, "cannot set up file properties for '%s'", tmp);
  else if ((file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl)) < 0)
    h5u_fail(d, "cannot create '%s'", tmp);
  h5u_close(fapl);
  h5u_close(fcpl);
  return file;
}

int cplab_bench_write_h5(const cplab_bench_results *r, const char *path, cplab_diag *d) {
  int rc = report_check_finished(r, path, d);
  if (rc) return rc;
  h5u_quiet();
  char *tmp;
  if ((rc = cplab_atomic_begin(path, &tmp, d))) return rc;
  hid_t file = create_file(tmp, d);
  if (file < 0) rc = d ? d->code : CPLAB_EHDF5;
  if (!rc && ((rc = write_meta(file, r, d)) || (rc = write_points(file, r, d)))) cplab_diag_prefix(d, "%s: ", path);
  if (!rc && H5Fclose(file) < 0) rc = h5u_fail(d, "cannot finish '%s'", tmp);
  else if (rc) h5u_close(file);
  if (!rc) rc = cplab_atomic_commit(tmp, path, d); /* removes tmp on failure */
  else unlink(tmp);
  free(tmp);
  return rc;
}
