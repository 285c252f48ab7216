/* analysis/diff.h: cplab-diff's parts (diff_main.c drives them).
 *   diff_ranks.c  rank-invariance of one run: every §10.1 invariant over the
 *                 plans the ranks wrote, and the digests that must agree
 *   diff_numeric.c  rank-invariance of the numeric tensors (replicated rows,
 *                 conversion, decode combine)
 *   diff_agree.c  agreement of two runs: plans and integer tensors exact,
 *                 floats by policy, top-k sets modulo ties
 *   policy.c      the tolerance policy (analysis/policy.json, overridable)
 */
#ifndef CPLAB_DIFF_H
#define CPLAB_DIFF_H

#include <jansson.h>
#include <stdint.h>

#include "cplab/error.h"
#include "cplab/trace.h"

#define DIFF_KEEP_MAX 1000

typedef struct diff_tolerance {
  double atol, rtol, cosine, tie_eps;
  int64_t ulp;
} diff_tolerance;

typedef struct diff_policy {
  diff_tolerance t[CPLAB_TT_COUNT]; /* per tensor; unused for exact ones */
} diff_policy;

/* Built-in defaults (analysis/policy.json), then an optional override file
 * whose keys replace single fields. */
int diff_policy_load(const char *override_path, diff_policy *out, cplab_diag *d);

/* One row of the per-dataset summary. */
typedef struct diff_dataset {
  char name[48];
  int64_t compared, differences, tie_swaps;
  double max_abs, max_rel, min_cosine;
  int64_t max_ulp;
} diff_dataset;

typedef struct diff_report {
  int keep;          /* how many divergences to keep (-n) */
  int64_t differences;
  int64_t compared_bytes;
  int kept;
  char **first;      /* [keep] the first divergences, with their meaning */
  int num_datasets;
  diff_dataset datasets[64];
} diff_report;

int diff_report_init(diff_report *r, int keep);
void diff_report_free(diff_report *r);
/* Record one divergence (counted always, kept while there is room). */
void diff_report_add(diff_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
diff_dataset *diff_report_dataset(diff_report *r, const char *name);
json_t *diff_report_json(const diff_report *r, const char *mode);

int diff_ranks(const char *run, const diff_policy *pol, diff_report *r, cplab_diag *d);
/* The numeric tensors of one step of a run (diff_numeric.c): replicated rows,
 * conversion by the layout, decode combine = single-device attention.
 * plans[k]->layout must be the run's layout. */
int diff_ranks_numeric(diff_report *r, cplab_trace *const *ranks, cplab_rank_plan *const *plans,
                       const cplab_step_input *in, int world, const diff_policy *pol, cplab_diag *d);
int diff_agree(const char *a, const char *b, const diff_policy *pol, diff_report *r, cplab_diag *d);

#endif
