/* cplab-diff: what cplab proves, with h5diff's exit codes
 * (0 same / holds, 1 different / violated, 2 error).
 *   cplab-diff A.h5 B.h5        agreement of two runs of one scenario
 *   cplab-diff --ranks RUN.h5   rank-invariance inside one run
 * Text on stdout (or --json), the JSON report to -o FILE, JUnit XML to
 * --junit FILE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "diff.h"

#define PROG "cplab-diff"

enum { OPT_RANKS = CPLAB_OPT_PROGRAM, OPT_POLICY, OPT_COUNT, OPT_JUNIT };
typedef struct opts {
  int ranks;
  const char *policy;
  int count;
  const char *junit;
} opts;

static int diff_option(void *ctx, int opt, const char *arg, cplab_diag *d) {
  opts *o = ctx;
  uint64_t v;
  switch (opt) {
    case OPT_RANKS: o->ranks = 1; return 0;
    case OPT_POLICY: o->policy = arg; return 0;
    case OPT_JUNIT:
      if (!*arg) CPLAB_FAIL(d, CPLAB_EUSAGE, "--junit: expected a file name");
      o->junit = arg;
      return 0;
    case 'n':
    case OPT_COUNT:
      if (cplab_parse_u64(arg, &v) != 0 || v > DIFF_KEEP_MAX)
        CPLAB_FAIL(d, CPLAB_EUSAGE, "-n/--count: expected 0..%d, got '%s'", DIFF_KEEP_MAX, arg);
      o->count = (int)v;
      return 0;
  }
  CPLAB_FAIL(d, CPLAB_EINTERNAL, "option code %d has no handler", opt);
}

static void usage(FILE *out) {
  fputs("Usage: " PROG " [OPTIONS] A.h5 B.h5     agreement of two runs of the same scenario\n"
        "       " PROG " --ranks [OPTIONS] RUN.h5  rank-invariance inside one run\n\n"
        "Agreement: plans, integer tensors and quantised bytes exact; floats within the policy\n"
        "(abs/rel/ULP/cosine, NaN and Inf positions exact); top-k sets equal modulo ties (A is the\n"
        "reference). Rank-invariance: the ranks' shared plans and collectives agree, and every\n"
        "invariant of the reference design holds over their plans (when token maps were written).\n\n"
        "Options:\n"
        "  --ranks               rank-invariance mode\n"
        "  --policy FILE         tolerances overriding analysis/policy.json\n"
        "  -n, --count N         report the first N divergences (default 10)\n"
        "  --junit FILE          also write the verdicts as JUnit XML for CI (beside -o's JSON):\n"
        "                        one test case per dataset (per invariant of each step with\n"
        "                        --ranks), a failure carrying the first N divergences; when the\n"
        "                        comparison fails (exit 2), one error case saying why\n\n",
        out);
  cplab_cli_help_common(out);
}

static void print_text(const diff_report *r, int quiet) {
  if (quiet) return;
  for (int i = 0; i < r->kept; i++) printf("%s\n", r->first[i]);
  if (r->differences > r->kept) printf("... and %lld more\n", (long long)(r->differences - r->kept));
  printf("%-16s %12s %11s %9s %11s %11s %9s %10s\n", "dataset", "compared", "differences", "tie-swaps", "max-abs",
         "max-rel", "max-ulp", "min-cosine");
  for (int i = 0; i < r->num_datasets; i++) {
    const diff_dataset *s = &r->datasets[i];
    printf("%-16s %12lld %11lld %9lld %11.3g %11.3g %9lld %10.6f\n", s->name, (long long)s->compared,
           (long long)s->differences, (long long)s->tie_swaps, s->max_abs, s->max_rel, (long long)s->max_ulp,
           s->min_cosine);
  }
  printf("%lld differences found\n", (long long)r->differences);
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

/* Text or JSON on stdout, then the files asked for (-o JSON, --junit XML). */
static int write_outputs(const diff_report *r, const cplab_cli *cli, const opts *o, const diff_junit_run *jr,
                         cplab_diag *d) {
  json_t *j = (cli->json || cli->out) ? diff_report_json(r, jr->mode) : NULL;
  char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
  int rc = j && !text ? cplab_diag_set(d, CPLAB_ENOMEM, "out of memory") : 0;
  if (cli->json && text) printf("%s\n", text);
  else print_text(r, cli->quiet);
  if (!rc && cli->out) rc = cplab_atomic_write(cli->out, text, strlen(text), d);
  if (!rc && o->junit) rc = diff_junit_write(o->junit, r, jr, d);
  free(text);
  json_decref(j);
  return rc;
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {CPLAB_CLI_COMMON_LONGOPTS,
                                           {"ranks", no_argument, NULL, OPT_RANKS},
                                           {"policy", required_argument, NULL, OPT_POLICY},
                                           {"count", required_argument, NULL, OPT_COUNT},
                                           {"junit", required_argument, NULL, OPT_JUNIT},
                                           {NULL, 0, NULL, 0}};
  cplab_cli cli;
  cplab_diag d = {0};
  opts o = {0, NULL, 10, NULL};
  int first;
  cplab_cli_init(&cli, NULL);
  int rc = cplab_cli_parse(argc, argv, CPLAB_CLI_COMMON_SHORTOPTS "n:", longopts, &cli, diff_option, &o, &first, &d);
  if (!rc && !cli.help && !cli.version && argc - first != (o.ranks ? 1 : 2))
    rc = cplab_diag_set(&d, CPLAB_EUSAGE, o.ranks ? "--ranks takes one run file" : "expected two run files");
  if (rc) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  if (cplab_cli_answer_info(&cli, PROG, usage)) return CPLAB_EXIT_OK;
  diff_report r;
  diff_policy pol;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  rc = diff_report_init(&r, o.count) ? cplab_diag_set(&d, CPLAB_ENOMEM, "out of memory") : 0;
  if (!rc) rc = diff_policy_load(o.policy, &pol, &d);
  if (!rc) rc = o.ranks ? diff_ranks(argv[first], &pol, &r, &d) : diff_agree(argv[first], argv[first + 1], &pol, &r, &d);
  diff_junit_run jr = {o.ranks ? "rank-invariance" : "agreement", argv[first], o.ranks ? NULL : argv[first + 1],
                       o.policy, seconds_since(&t0), NULL};
  cplab_diag jd = {0};
  if (!rc) rc = write_outputs(&r, &cli, &o, &jr, &d);
  else if (o.junit) { /* the comparison failed: the CI report says why */
    jr.error = &d;
    diff_junit_write(o.junit, &r, &jr, &jd);
  }
  int64_t differences = r.differences;
  diff_report_free(&r);
  if (rc) {
    cplab_diag_report(stderr, PROG, &d);
    if (jd.code) cplab_diag_report(stderr, PROG, &jd);
    return CPLAB_EXIT_ERROR;
  }
  return differences ? CPLAB_EXIT_DIFFERENT : CPLAB_EXIT_OK;
}
