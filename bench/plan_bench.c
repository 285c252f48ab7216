/* cplab-plan-bench: how fast plans are derived and checked on the CPU.
 *
 *  1. derivation: every rank of a 64-rank world derives its own plan for one
 *     step of about 1M new tokens (8 prefills of 131072 tokens + 64 decodes,
 *     GLM-5), for several layouts of the world; with and without the
 *     per-token maps (slot mapping, PCP gather/restore indices);
 *  2. sweep: 10,000 generated steps over P in {1,2,3,4,8}, D in {1, P, TP·P},
 *     I in {1,2,4,64}, every rank derived with token maps and every §10.1
 *     invariant checked (what tests/unit/test_invariants does).
 * Prints a table; --json / -o write the same as JSON (see bench/README.md).
 * Timings: CLOCK_MONOTONIC wall time, median of --reps repetitions. */
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "cplab/stats.h"
#include "cplab/plan.h"

#define PROG "cplab-plan-bench"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct world_case {
  int tp, pcp, dcp;
} world_case;

/* One repetition: every rank derives its plan alone; plans freed as we go. */
static int derive_world(const cplab_step_input *in, int flags, double *seconds, cplab_diag *d) {
  int world = cplab_parallel_world(in->par);
  double t0 = now();
  for (int r = 0; r < world; r++) {
    cplab_rank_plan *p = NULL;
    int rc = cplab_rank_plan_derive(in, r, flags, &p, d);
    if (rc) return rc;
    cplab_rank_plan_free(p);
  }
  *seconds = now() - t0;
  return 0;
}

static double median(double *v, int n) { return cplab_stats_median(v, (size_t)n); }

static int bench_derivation(int reps, json_t *results, cplab_diag *d) {
  static const world_case worlds[] = {{1, 64, 64}, {8, 8, 8}, {8, 8, 64}, {4, 16, 16}, {64, 1, 64}};
  cplab_model model;
  cplab_model_preset("glm-5", &model);
  cplab_request reqs[72];
  int n = 0;
  /* Request ids are their indices (n is read, then incremented, in separate statements). */
  for (int i = 0; i < 64; i++, n++) reqs[n] = (cplab_request){n, 1000 + 37 * i, 1, CPLAB_PHASE_DECODE};
  for (int i = 0; i < 8; i++, n++) reqs[n] = (cplab_request){n, 0, 131072, CPLAB_PHASE_PREFILL};
  cplab_step step = {(size_t)n, reqs};
  printf("# derivation: 64 ranks, one step of %d requests, 1048640 new tokens (GLM-5), median of %d\n", n, reps);
  printf("# %-16s %14s %18s\n", "world", "plans (s)", "plans+maps (s)");
  for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
    cplab_parallel par;
    cplab_parallel_defaults(&par);
    par.tp = worlds[w].tp, par.pcp = worlds[w].pcp, par.dcp = worlds[w].dcp, par.max_model_len = 131072;
    cplab_step_input in = {&step, 0, 1, &par, &model, cplab_layout_find("vllm")};
    double plain[64], maps[64];
    for (int i = 0; i < reps; i++) {
      int rc = derive_world(&in, 0, &plain[i], d);
      if (!rc) rc = derive_world(&in, CPLAB_PLAN_TOKEN_MAPS, &maps[i], d);
      if (rc) return rc;
    }
    double a = median(plain, reps), b = median(maps, reps);
    char name[48];
    snprintf(name, sizeof name, "tp%d/pcp%d/dcp%d", par.tp, par.pcp, par.dcp);
    printf("  %-16s %14.4f %18.4f\n", name, a, b);
    json_array_append_new(results, json_pack("{s:s, s:s, s:i, s:I, s:f, s:f, s:f, s:f}", "bench", "derivation",
                                             "world", name, "ranks", 64, "new_tokens", (json_int_t)1048640,
                                             "plans_s", a, "plans_and_maps_s", b, "plans_s_min", plain[0],
                                             "plans_and_maps_s_min", maps[0]));
  }
  return 0;
}

/* The sweep of the property test, as a timed run. */
static int bench_sweep(long steps, json_t *results, cplab_diag *d) {
  static const int pcps[] = {1, 2, 3, 4, 8}, ils[] = {1, 2, 4, 64}, mmls[] = {256, 1024, 2048};
  cplab_model model;
  cplab_model_preset("glm-5", &model);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  cplab_check chk = {0};
  double t0 = now();
  int rc = 0;
  for (long s = 0; s < steps && !rc; s++) {
    cplab_parallel p;
    cplab_parallel_defaults(&p);
    p.pcp = pcps[gsl_rng_uniform_int(rng, 5)];
    p.tp = 1 + (int)gsl_rng_uniform_int(rng, 2);
    unsigned long pick = gsl_rng_uniform_int(rng, 3);
    p.dcp = pick == 0 ? 1 : pick == 1 ? p.pcp : p.tp * p.pcp;
    if (p.pcp == 1 && p.tp % p.dcp) p.dcp = 1;
    p.interleave = ils[gsl_rng_uniform_int(rng, 4)];
    p.max_model_len = mmls[gsl_rng_uniform_int(rng, 3)];
    p.indexer_max_logits_mb = gsl_rng_uniform_int(rng, 2) ? 1 : 512;
    cplab_request reqs[8];
    size_t n = 1 + gsl_rng_uniform_int(rng, 8);
    for (size_t g = 0; g < n; g++) {
      double u = gsl_rng_uniform(rng);
      int64_t mml = p.max_model_len, q = u < 0.3 ? 1 : u < 0.6 ? 1 + (int64_t)gsl_rng_uniform_int(rng, 4 * (unsigned long)p.pcp)
                                                              : 1 + (int64_t)gsl_rng_uniform_int(rng, (unsigned long)mml);
      int64_t done = u < 0.3 ? 1 + (int64_t)gsl_rng_uniform_int(rng, (unsigned long)mml - 1)
                             : (gsl_rng_uniform_int(rng, 4) ? 0 : (int64_t)gsl_rng_uniform_int(rng, (unsigned long)(mml - q + 1)));
      reqs[g] = (cplab_request){(int64_t)g, done, q, u < 0.3 ? CPLAB_PHASE_DECODE : CPLAB_PHASE_PREFILL};
    }
    cplab_step step = {n, reqs};
    cplab_step_input in = {&step, 0, (uint64_t)s, &p, &model, cplab_layout_find("vllm")};
    int world = cplab_parallel_world(&p);
    cplab_rank_plan *plans[16] = {0};
    for (int r = 0; r < world && !rc; r++) rc = cplab_rank_plan_derive(&in, r, CPLAB_PLAN_TOKEN_MAPS, &plans[r], d);
    if (!rc) rc = cplab_check_step(&in, plans, world, (uint64_t)s, &chk, d);
    for (int r = 0; r < world; r++) cplab_rank_plan_free(plans[r]);
  }
  double secs = now() - t0;
  gsl_rng_free(rng);
  if (rc) return rc;
  printf("# sweep: %ld generated steps, every rank derived with token maps, every invariant checked\n", steps);
  printf("  %ld steps, %lld checks, %lld violations, %.2f s\n", steps, (long long)chk.checks,
         (long long)chk.violations, secs);
  json_array_append_new(results, json_pack("{s:s, s:I, s:I, s:I, s:f}", "bench", "sweep", "steps", (json_int_t)steps,
                                           "checks", (json_int_t)chk.checks, "violations",
                                           (json_int_t)chk.violations, "seconds", secs));
  return chk.violations ? CPLAB_EINTERNAL : 0;
}

enum { OPT_REPS = CPLAB_OPT_PROGRAM, OPT_STEPS };
typedef struct opts {
  int reps;
  long steps;
} opts;

static int bench_option(void *ctx, int opt, const char *arg, cplab_diag *d) {
  opts *o = ctx;
  uint64_t v;
  if (cplab_parse_u64(arg, &v) != 0 || v == 0 || v > 1000000)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: expected a positive integer, got '%s'", opt == OPT_REPS ? "--reps" : "--steps",
               arg);
  if (opt == OPT_REPS) o->reps = v > 64 ? 64 : (int)v;
  else o->steps = (long)v;
  return 0;
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {CPLAB_CLI_COMMON_LONGOPTS,
                                           {"reps", required_argument, NULL, OPT_REPS},
                                           {"steps", required_argument, NULL, OPT_STEPS},
                                           {NULL, 0, NULL, 0}};
  cplab_cli cli;
  cplab_diag d = {0};
  opts o = {5, 10000};
  cplab_cli_init(&cli, NULL);
  if (cplab_cli_parse(argc, argv, CPLAB_CLI_COMMON_SHORTOPTS, longopts, &cli, bench_option, &o, NULL, &d) != 0) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  if (cli.help) {
    printf("Usage: " PROG " [--reps N] [--steps N] [--json] [-o FILE]\n"
           "Times plan derivation (64 ranks, ~1M tokens) and the invariant sweep (--steps, default 10000).\n"
           "  --reps N   repetitions of each derivation timing (default 5, median reported)\n");
    cplab_cli_help_common(stdout);
    return CPLAB_EXIT_OK;
  }
  if (cli.version) {
    cplab_cli_version(stdout, PROG);
    return CPLAB_EXIT_OK;
  }
  json_t *results = json_array();
  int rc = bench_derivation(o.reps, results, &d);
  if (!rc) rc = bench_sweep(o.steps, results, &d);
  if (!rc && (cli.json || cli.out)) {
    char *text = json_dumps(results, JSON_INDENT(2));
    if (!text) rc = cplab_diag_set(&d, CPLAB_ENOMEM, "out of memory");
    if (!rc && cli.out) {
      size_t n = strlen(text);
      text[n] = '\n';
      rc = cplab_atomic_write(cli.out, text, n + 1, &d);
      text[n] = '\0';
    }
    if (!rc && cli.json) printf("%s\n", text);
    free(text);
  }
  json_decref(results);
  if (rc) {
    cplab_diag_report(stderr, PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  return CPLAB_EXIT_OK;
}
