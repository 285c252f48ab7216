/* analysis/diff.h: cplab-diff's parts (diff_main.c drives them).
 *   diff_ranks.c  rank-invariance of one run: every §10.1 invariant over the
 *                 plans the ranks wrote, and the digests that must agree
 *   diff_numeric.c  rank-invariance of the numeric tensors (replicated rows,
 *                 conversion, decode combine)
 *   diff_partials.c  their partial-combine invariant: the LSE combine of the
 *                 DCP members' stored decode partials = each one's output
 *   diff_agree.c  agreement of two runs: plans and integer tensors exact,
 *                 floats by policy, top-k sets modulo ties
 *   policy.c      the tolerance policy (analysis/policy.json, overridable)
 *   report.c      the report: counts, first divergences, datasets, cases
 *   junit.c       the report as JUnit XML (--junit), for CI systems
 */
#ifndef CPLAB_DIFF_H
#define CPLAB_DIFF_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "cplab/error.h"
#include "cplab/trace.h"

#define DIFF_KEEP_MAX 1000

typedef struct diff_tolerance {
  /* row_rtol: a share of the row's largest |score| (A's topk_scores), for
   * the indexer's scores, whose error follows the row and not the value */
  double atol, rtol, cosine, tie_eps, row_rtol;
  int64_t ulp;
} diff_tolerance;

typedef struct diff_policy {
  diff_tolerance t[CPLAB_TT_COUNT]; /* per tensor; unused for exact ones */
  /* --ranks partial-combine (diff_partials.c): the host's LSE combine of the
   * stored decode partials against the stored attn_out / attn_lse; atol and
   * rtol as that file states */
  diff_tolerance combine;
} diff_policy;

/* Built-in defaults (analysis/policy.json), then an optional override file
 * whose keys replace single fields. */
int diff_policy_load(const char *override_path, diff_policy *out, cplab_diag *d);

/* One verdict a CI system shows as a test case (--junit): a dataset in
 * agreement mode, an invariant of one step in rank-invariance mode. It fails
 * when a divergence was counted against it; it is skipped when nothing was
 * evaluated (the trace lacked what it needs, or the layout decides it). */
typedef struct diff_case {
  char group[32];       /* "attention", "step3": the classname's last part */
  char name[48];        /* "attn_out", "ownership" */
  char criterion[160];  /* what passing means ("exact", the tolerance), or "" */
  const char *skip;     /* static text: why it may go unevaluated */
  int evaluated;
  int dataset;          /* its row in diff_report.datasets, or -1 */
  int64_t failures;     /* divergences counted against it */
  int kept;
  char **first;         /* [diff_report.keep] its first divergences */
} diff_case;

/* One row of the per-dataset summary. */
typedef struct diff_dataset {
  char name[48];
  int64_t compared, differences, tie_swaps;
  double max_abs, max_rel, min_cosine;
  int64_t max_ulp;
  diff_case *c; /* its case, in agreement mode; else NULL */
} diff_dataset;

typedef struct diff_report {
  int keep;          /* how many divergences to keep (-n) */
  int64_t differences;
  int64_t compared_bytes;
  int kept;
  char **first;      /* [keep] the first divergences, with their meaning */
  int num_datasets;
  diff_dataset datasets[64];
  int num_cases, cap_cases;
  diff_case **cases;  /* in the order first named */
  int cases_lost;     /* a case could not be allocated: the cases are incomplete */
  diff_case lost;     /* stands in for it, so that callers need no check */
} diff_report;

int diff_report_init(diff_report *r, int keep);
void diff_report_free(diff_report *r);
/* Record one divergence against case c (NULL: none), counted always and
 * kept, in the report and in c, while there is room (-n). */
void diff_report_add(diff_report *r, diff_case *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Count n more divergences whose text was not kept (a checker's overflow). */
void diff_report_count(diff_report *r, diff_case *c, int64_t n);
diff_dataset *diff_report_dataset(diff_report *r, const char *name);
/* The case (group, name), made on first use (unevaluated, no dataset). */
diff_case *diff_report_case(diff_report *r, const char *group, const char *name);
json_t *diff_report_json(const diff_report *r, const char *mode);

int diff_ranks(const char *run, const diff_policy *pol, diff_report *r, cplab_diag *d);
/* The cases of one step's numeric rank checks; marked evaluated when the
 * step has numeric tensors (partials: when a rank stored decode partials). */
typedef struct diff_numeric_cases {
  diff_case *replicated, *conversion, *combine, *partials;
} diff_numeric_cases;

/* One rank's numeric tensors of a layer as stored (diff_numeric.c reads
 * them); partial_out / partial_lse NULL where the layer has none. */
typedef struct diff_rank_layer {
  int present;
  int schema_minor; /* of the rank's file */
  int64_t rows;
  int k, heads;
  int64_t *tokens;
  int32_t *topk, *conv;
  float *out, *lse;
  int partial_heads; /* G·heads of the partials */
  float *partial_out, *partial_lse;
} diff_rank_layer;
/* Global token of local token t of row (cplab_rank_plan's schedule). Inline
 * here: both diff_numeric.c and diff_partials.c need it, and the partials'
 * check must not reach back into the file that calls it. */
static inline int64_t diff_global_token(const cplab_rank_plan *p, const cplab_row *row, int64_t t) {
  return p->sched.token_offset[row->req] + row->start + (t - row->token_offset);
}
/* The partial-combine invariant of one layer of a step over every rank's
 * stored tensors L[world] (diff_partials.c). */
int diff_partials_check(diff_report *r, const cplab_step_input *in, int layer, cplab_rank_plan *const *plans,
                        const diff_rank_layer *L, int world, const diff_tolerance *tol, diff_case *verdict,
                        cplab_diag *d);
/* The numeric tensors of one step of a run (diff_numeric.c): replicated rows,
 * conversion by the layout, decode combine = single-device attention.
 * plans[k]->layout must be the run's layout. */
int diff_ranks_numeric(diff_report *r, cplab_trace *const *ranks, cplab_rank_plan *const *plans,
                       const cplab_step_input *in, int world, const diff_policy *pol, const diff_numeric_cases *cases,
                       cplab_diag *d);
int diff_agree(const char *a, const char *b, const diff_policy *pol, diff_report *r, cplab_diag *d);

/* --junit FILE (junit.c): one <testsuite> of the report's cases. */
typedef struct diff_junit_run {
  const char *mode;        /* "agreement" or "rank-invariance" */
  const char *a, *b;       /* the files compared (b NULL in rank-invariance) */
  const char *policy;      /* --policy FILE, or NULL: the built-in one */
  double seconds;          /* how long the comparison took */
  const cplab_diag *error; /* the comparison failed: one <error> case, no others */
} diff_junit_run;
/* Text for XML: & < > " ' as entities; in attributes also tab, newline and
 * carriage return (which attribute-value normalisation would turn into
 * spaces); characters XML 1.0 cannot hold (other control characters, bytes
 * that are not UTF-8) as '?'. */
void diff_xml_escape(FILE *out, const char *s, int attribute);
/* Render the report as JUnit XML to out: CPLAB_EIO when out fails,
 * CPLAB_ENOMEM when the report lost cases (its counts would lie). */
int diff_junit_render(FILE *out, const diff_report *r, const diff_junit_run *run, cplab_diag *d);
/* Render it and write it to path atomically (nothing is left at path when
 * any step fails). */
int diff_junit_write(const char *path, const diff_report *r, const diff_junit_run *run, cplab_diag *d);

#endif
