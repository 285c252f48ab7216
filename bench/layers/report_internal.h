/* bench/layers/report_internal.h (internal): what the report writers share:
 * the names of workloads and graph modes, the order of parallel sizes
 * (columns) and of workload lines (rows), number formatting, and the
 * in-memory text buffer every text writer renders into before anything
 * reaches a file. */
#ifndef CPLAB_BENCH_REPORT_INTERNAL_H
#define CPLAB_BENCH_REPORT_INTERNAL_H

#include <stdio.h>

#include "cplab/parallel.h"
#include "report.h"

/* Graph modes are cplab_graph_mode's labelled ones, by index (the report's
 * sections come in that order: eager, piecewise, full_decode_only, full). */
enum { REPORT_WORKLOADS = 3, REPORT_GRAPHS = CPLAB_GRAPH_LABELED };
extern const char *const report_workload_names[REPORT_WORKLOADS]; /* prefill, decode, mixed */

/* Index of s in names[count], or -1; s must end within cap bytes. */
int report_name_index(const char *const *names, int count, const char *s, size_t cap);

/* CPLAB_EINVAL unless r was finished (writers report only finished results). */
int report_check_finished(const cplab_bench_results *r, const char *what, cplab_diag *d);

/* Column order: GPUs (tp*pcp), then dcp, pcp, tp ascending, which gives the
 * reference table's tp4, pcp4, tp4dcp4, pcp4dcp4. 0 when the sizes match. */
int report_parallel_cmp(const cplab_bench_point *a, const cplab_bench_point *b);
/* Row order: workload (prefill, decode, mixed), metric, tokens, batch,
 * out_tokens. 0 when a and b belong to the same workload line. */
int report_row_cmp(const cplab_bench_point *a, const cplab_bench_point *b);

/* Series order for plots: parallel sizes, then workload line, tokens last. */
int report_series_cmp(const cplab_bench_point *a, const cplab_bench_point *b);

typedef int (*report_point_cmp)(const cplab_bench_point *a, const cplab_bench_point *b);
/* Stable sort of m point pointers by cmp (deterministic for equal keys). */
void report_sort(const cplab_bench_point **pts, size_t m, report_point_cmp cmp);
/* Keep the first of each run of points equal under cmp (pts sorted by a
 * compatible order); returns how many remain. */
size_t report_unique(const cplab_bench_point **pts, size_t m, report_point_cmp cmp);
/* Pointers to the points of r with graph mode g (-1: all), in r's order,
 * into out[r->n]; returns how many. */
size_t report_select_graph(const cplab_bench_results *r, int g, const cplab_bench_point **out);
/* Index (cplab_graph_mode) of p's graph mode, -1 for none (p validated by _add). */
int report_graph_of(const cplab_bench_point *p);

/* The workload line of p as the reports name it:
 *   "prefill 32768 in / 1 out, TTFT ms" (", batch B" after "out" when B > 1)
 *   "decode 1 in / 1024 out, ctx 32768, batch 1, TPOT ms"
 *   "mixed 4096 tokens / 1 out, batch 8, TTFT ms" */
void report_row_label(const cplab_bench_point *p, char *buf, size_t len);

/* Milliseconds for people: one decimal from 100, two from 1, three
 * significant digits below ("5512.1", "18.60", "0.123"); "—" for NAN. */
void report_format_ms(double v, char *buf, size_t len);

/* A text rendered in memory (open_memstream). */
typedef struct report_text {
  FILE *f;
  char *data;
  size_t len;
} report_text;
int report_text_open(report_text *t, cplab_diag *d);
/* Close the stream: data/len hold the text. CPLAB_ENOMEM on a failed write. */
int report_text_close(report_text *t, cplab_diag *d);
void report_text_free(report_text *t);
/* Close t (if still open) and write it to path atomically
 * (cplab_atomic_write); frees t either way. */
int report_text_commit(report_text *t, const char *path, cplab_diag *d);

#endif
