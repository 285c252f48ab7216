/* cplab-diff-bench: throughput of cplab-diff's agreement mode on exact
 * datasets. Two identical one-rank runs of the smoke scenario's first step,
 * each with LAYERS kv_cache tensors of 64 MiB (quantised bytes, compared
 * exactly), are written to --dir and compared; the rate is the compared bytes
 * (both sides) over the wall time of the whole comparison (open, read,
 * compare), the median of --reps. Page cache is not dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "cplab/stats.h"
#include "diff.h"

#define PROG "cplab-diff-bench"
#define LAYERS 8
#define ROWS 102261

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int write_run(const char *path, cplab_scenario *s, const uint8_t *kv, cplab_diag *d) {
  static const cplab_trace_provenance prov = {"sim", PROG, NULL, NULL, NULL, NULL, NULL};
  char rpath[600];
  cplab_trace_writer *w = NULL, *run = NULL;
  cplab_rank_plan *p = NULL;
  cplab_step_input in = {&s->steps[0], 0, s->seed, &s->par, &s->model, cplab_layout_find("vllm")};
  uint64_t dims[2] = {ROWS, 656};
  int rc = cplab_trace_rank_path(path, 0, rpath, sizeof rpath, d);
  if (!rc) rc = cplab_trace_create(rpath, s, 0, &prov, &w, d);
  if (!rc) rc = cplab_rank_plan_derive(&in, 0, 0, &p, d);
  if (!rc) rc = cplab_trace_write_plan(w, 0, p, d);
  for (int l = 0; !rc && l < LAYERS; l++) rc = cplab_trace_write_tensor(w, 0, l, CPLAB_TT_KV_CACHE, dims, kv, 0, d);
  cplab_rank_plan_free(p);
  if (w) rc = rc ? (cplab_trace_abort(w), rc) : cplab_trace_commit(w, d);
  if (!rc) rc = cplab_trace_create(path, s, -1, &prov, &run, d);
  if (!rc) rc = cplab_trace_link_ranks(run, 1, d);
  if (run) rc = rc ? (cplab_trace_abort(run), rc) : cplab_trace_commit(run, d);
  return rc;
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {CPLAB_CLI_COMMON_LONGOPTS, {NULL, 0, NULL, 0}};
  cplab_cli cli;
  cplab_diag d = {0};
  cplab_cli_init(&cli, "smoke");
  if (cplab_cli_parse(argc, argv, CPLAB_CLI_COMMON_SHORTOPTS, longopts, &cli, NULL, NULL, NULL, &d) != 0) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  if (cli.help) {
    printf("Usage: " PROG " [--json] [-o FILE]\nThroughput of cplab-diff on exact datasets (two 512 MiB runs).\n");
    return CPLAB_EXIT_OK;
  }
  size_t bytes = (size_t)ROWS * 656;
  uint8_t *kv = malloc(bytes);
  for (size_t i = 0; kv && i < bytes; i++) kv[i] = (uint8_t)(i * 2654435761u >> 24);
  cplab_scenario *s = NULL;
  int rc = kv ? cplab_scenario_load("smoke", NULL, &s, &d) : cplab_diag_set(&d, CPLAB_ENOMEM, "out of memory");
  size_t all_steps = s ? s->num_steps : 0;
  if (!rc) s->par.pcp = s->par.dcp = 1, s->num_steps = 1; /* restored before the scenario is freed */
  char a[256], b[256];
  snprintf(a, sizeof a, "/tmp/cplab-diff-bench-a.%d.h5", (int)getpid());
  snprintf(b, sizeof b, "/tmp/cplab-diff-bench-b.%d.h5", (int)getpid());
  if (!rc) rc = write_run(a, s, kv, &d);
  if (!rc) rc = write_run(b, s, kv, &d);
  diff_policy pol;
  if (!rc) rc = diff_policy_load(NULL, &pol, &d);
  double secs[5];
  int64_t compared = 0, differences = 0;
  for (int i = 0; !rc && i < 5; i++) {
    diff_report r;
    diff_report_init(&r, 10);
    double t0 = now();
    rc = diff_agree(a, b, &pol, &r, &d);
    secs[i] = now() - t0;
    compared = r.compared_bytes, differences = r.differences;
    diff_report_free(&r);
  }
  for (int k = 0; k <= 1; k++) {
    char rp[600];
    const char *run = k ? b : a;
    unlink(run);
    if (cplab_trace_rank_path(run, 0, rp, sizeof rp, NULL) == 0) unlink(rp);
  }
  free(kv);
  if (s) s->num_steps = all_steps;
  cplab_scenario_free(s);
  if (rc) {
    cplab_diag_report(stderr, PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  double med = cplab_stats_median(secs, 5), rate = (double)compared / med / 1e9;
  printf("# cplab-diff agreement on exact datasets: %.0f MB compared (both sides), %lld differences\n",
         (double)compared / 1e6, (long long)differences);
  printf("  median of 5: %.3f s, %.2f GB/s\n", med, rate);
  if (cli.json || cli.out) {
    json_t *j = json_pack("{s:s, s:I, s:f, s:f}", "bench", "diff_exact", "compared_bytes", (json_int_t)compared,
                          "seconds", med, "gb_per_s", rate);
    char *text = json_dumps(j, JSON_INDENT(2));
    if (cli.out) rc = cplab_atomic_write(cli.out, text, strlen(text), &d);
    if (cli.json) printf("%s\n", text);
    free(text);
    json_decref(j);
  }
  return rc ? CPLAB_EXIT_ERROR : CPLAB_EXIT_OK;
}
