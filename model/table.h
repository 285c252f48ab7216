/* model/table.h: the kernel cost table of cplab-model: a kernel's time as a
 * function of its shape, from measured points.
 *
 * Every kernel the step model looks up (cplab_model_kernel) has a *series*
 * (a shape field that changes the kernel's speed class, e.g. the heads of an
 * attention launch) and a *work* (the amount the time grows with, e.g. the
 * attended (query, row) pairs). Both are computed from a kernels.json
 * entry's shape fields by the rules of table.c (model/README.md lists them),
 * or given directly in a table file of the documented format:
 *
 *   {"cplab_model_table": "1.0.0", "card": "...", "source": "...",
 *    "entries": [{"kernel": "sparse_mla_prefill", "series": 64,
 *                 "work": 65011712, "time_us": 26365.5}, ...]}
 *
 * Lookup (cplab_model_table_time), for a kernel, series s and work w:
 *   - within one series: piecewise-linear in w between the measured points
 *     (points of equal work are averaged first);
 *   - between two measured series s0 < s < s1: linear in s between the two
 *     series' values at w;
 *   - outside the measured range (w below the smallest or above the largest
 *     point, s outside the series, or a kernel without points): CPLAB_ERANGE
 *     naming the kernel, series and work, unless extrapolation is allowed;
 *     then s clamps to the nearest series, w below the range takes the
 *     smallest point's rate but no less than the kernel's fastest measured
 *     launch (a launch does not get faster than any shape measured), w
 *     above it the largest point's rate (time grows in proportion to work),
 *     and the result says it extrapolated.
 * Several files may be loaded: a kernel present in a later file replaces
 * that kernel's points of the earlier ones (a newer kernel version's run).
 */
#ifndef CPLAB_MODEL_TABLE_H
#define CPLAB_MODEL_TABLE_H

#include <stddef.h>

#include "cplab/error.h"

typedef enum cplab_model_kernel {
  CPLAB_MK_ATTN_PREFILL = 0, /* sparse_mla_prefill: series heads, work attended pairs */
  CPLAB_MK_ATTN_DECODE,      /* sparse_mla_decode_fp8: series heads, work attended (valid) pairs */
  CPLAB_MK_LOGITS_PREFILL,   /* indexer_logits_prefill: series heads, work (query, key) pairs */
  CPLAB_MK_LOGITS_DECODE,    /* indexer_logits_decode: series heads, work keys read */
  CPLAB_MK_TOPK_PREFILL,     /* topk_prefill: work logits in range */
  CPLAB_MK_TOPK_DECODE,      /* topk_decode: work logits (batch x context) */
  CPLAB_MK_TOPK_MERGE,       /* topk_merge: series dcp, work rows */
  CPLAB_MK_CONVERT,          /* convert: series 0 prefill / 1 decode, work rows x k */
  CPLAB_MK_GATHER,           /* gather_upconvert: work keys */
  CPLAB_MK_RESTORE,          /* restore: work tokens */
  CPLAB_MK_GATHER_IDX,       /* gather_idx: work keys (132-byte indexer entries) */
  CPLAB_MK_COMBINE,          /* lse_combine: series dcp, work (row, head) pairs */
  CPLAB_MK_TOPK_MERGE_CONVERT, /* topk_merge_convert (the merge converting its list): series dcp, work rows */
  CPLAB_MK_TOPK_DECODE_CONVERT, /* topk_decode_convert (the top-k converting its lists): work logits */
  CPLAB_MK_COUNT
} cplab_model_kernel;

/* "sparse_mla_prefill", ...; NULL out of range. */
const char *cplab_model_kernel_name(cplab_model_kernel k);
/* The kernel of a name, or -1. */
int cplab_model_kernel_find(const char *name);

typedef struct cplab_model_point {
  double series, work, time_us;
  int source; /* index into the table's sources */
} cplab_model_point;

typedef struct cplab_model_table {
  cplab_model_point *points[CPLAB_MK_COUNT]; /* sorted by series, then work; equal work averaged */
  size_t count[CPLAB_MK_COUNT];
  char **sources; /* the files loaded, in order */
  size_t num_sources;
  double copy_gbps; /* the first file's measured copy ceiling (read + write counted), 0 if none */
  char card[128];   /* the first file's card name */
} cplab_model_table;

int cplab_model_table_alloc(cplab_model_table **out, cplab_diag *d);
void cplab_model_table_free(cplab_model_table *t);

/* Load one file: a cplab-kernel-bench kernels.json (program
 * "cplab-kernel-bench") or a table of the format above. Entries of kernels
 * the model does not use are skipped; a malformed file or entry (a missing
 * or mistyped field, a time that is not positive and finite) is
 * CPLAB_ESCHEMA / CPLAB_ESYNTAX naming the file, line, column and field. */
int cplab_model_table_load(cplab_model_table *t, const char *path, cplab_diag *d);

/* Add one point (tests, and the loader's last step); keeps the order. */
int cplab_model_table_add(cplab_model_table *t, cplab_model_kernel k, double series, double work, double time_us,
                          int source, cplab_diag *d);

typedef struct cplab_model_lookup {
  double time_us;
  int extrapolated; /* 1 when the shape was outside the measured range */
  int source;       /* the source of the nearest point used */
} cplab_model_lookup;

/* Time of kernel k at (series, work) by the rules above; work 0 costs 0. */
int cplab_model_table_time(const cplab_model_table *t, cplab_model_kernel k, double series, double work,
                           int extrapolate, cplab_model_lookup *out, cplab_diag *d);

#endif
