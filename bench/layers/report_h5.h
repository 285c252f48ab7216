/* bench/layers/report_h5.h (internal): the HDF5 schema of cplab-bench
 * results (RESULTS.md), shared by the writer (report_h5.c) and the reader
 * (report_h5_read.c) so the two cannot drift apart: every per-point column
 * is one row of a table naming the dataset, its element type and the field
 * of cplab_bench_point it holds. */
#ifndef CPLAB_BENCH_REPORT_H5_H
#define CPLAB_BENCH_REPORT_H5_H

#include <stddef.h>

#include "h5util.h"
#include "report.h"

#define REPORT_H5_GROUP "points"

/* A numeric column /points/<name>[n]: type H5U_I32 (an int field), H5U_I64
 * (int64_t) or H5U_F64 (double). */
typedef struct report_h5_column {
  const char *name;
  h5u_type type;
  size_t offset; /* of the field in cplab_bench_point */
} report_h5_column;
extern const report_h5_column report_h5_columns[];
extern const size_t report_h5_ncolumns;

/* A fixed-length string column /points/<name>[n] of the char array field
 * at offset (width bytes, NUL-padded). */
typedef struct report_h5_text_column {
  const char *name;
  size_t offset, width;
} report_h5_text_column;
extern const report_h5_text_column report_h5_text_columns[];
extern const size_t report_h5_ntext_columns;

/* The other datasets under /points: baseline int64[n] (-1: none),
 * metric string[n] ("TTFT"/"TPOT"), phase_ms float64[n][CPLAB_BENCH_PHASES]
 * (attribute "columns": the phase names), offsets int64[n + 1] and
 * samples_ms float64[offsets[n]] (point i's samples are
 * samples_ms[offsets[i] .. offsets[i + 1])). */
#define REPORT_H5_METRIC_WIDTH 8
#define REPORT_H5_PHASE_COLUMNS "proj,indexer,attention,moe,comm"

/* The root attributes holding meta's strings (fixed-length strings). */
typedef struct report_h5_meta_text {
  const char *name;
  size_t offset, width; /* in cplab_bench_meta */
} report_h5_meta_text;
extern const report_h5_meta_text report_h5_meta_texts[];
extern const size_t report_h5_nmeta_texts;

#endif
