/* cplab-sim: the simulator's main job. Loads a scenario (default: the built-in
 * pr56157), derives every rank's view and reports it. Later issues add the
 * plans, layouts and traces; the CLI contract stays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "cplab/log.h"
#include "sim.h"

#define PROG "cplab-sim"

static void usage(FILE *out) {
  fputs("Usage: " PROG " [OPTIONS]\n"
        "Derive what every rank of a PCP/DCP sparse-MLA layout computes, from each rank's\n"
        "own view, for the steps of a scenario. Run under mpirun to spread the ranks over\n"
        "processes; the output is the same either way.\n\n",
        out);
  fputs("Options:\n"
        "  --check               also check every invariant of the reference (§10.1) over all ranks'\n"
        "                        plans of every step (one process only); exit 1 on a violation\n"
        "  --numeric             run the numeric reference on every rank: for the scenario's\n"
        "                        sampled rows the indexer top-k, its conversion and sparse MLA\n"
        "                        attention (decode rows combined over DCP), read through each\n"
        "                        rank's plan; with -o the results go into the trace\n"
        "  --layers LIST         layers of the numeric pass, e.g. 0,3,5 (default 0)\n"
        "  --list-mutants        print the catalogue of mutants as their files declare it (what\n"
        "                        catches each: tab-separated, one line a mutant) and exit\n"
        "  -o NAME.h5            write the trace: NAME.h5 (the run) and NAME.rNNNN.h5 (each rank's\n"
        "                        plans, written by the process that derived them); schema in\n"
        "                        traces/SCHEMA.md.  -o NAME.json writes the JSON report instead\n\n",
        out);
  cplab_cli_help_common(out);
  fputs("\nExamples:\n"
        "  " PROG "                                  the built-in pr56157 scenario\n"
        "  " PROG " --scenario smoke --json          JSON report of the smoke scenario\n"
        "  mpirun -np 4 " PROG " --scenario mixed    ranks spread over 4 processes\n",
        out);
}

enum { OPT_CHECK = CPLAB_OPT_PROGRAM, OPT_NUMERIC, OPT_LAYERS, OPT_LIST_MUTANTS };

typedef struct sim_args {
  int check;
  sim_numeric_opts numeric;
  const char *layers; /* --layers as given, checked against the model once it is known */
  int list_mutants;
} sim_args;

static int sim_option(void *ctx, int opt, const char *arg, cplab_diag *d) {
  sim_args *a = ctx;
  switch (opt) {
  case OPT_CHECK: a->check = 1; return 0;
  case OPT_NUMERIC: a->numeric.enabled = 1; return 0;
  case OPT_LAYERS: a->layers = arg; return 0;
  case OPT_LIST_MUTANTS: a->list_mutants = 1; return 0;
  default: CPLAB_FAIL(d, CPLAB_EINTERNAL, "option code %d has no handler", opt);
  }
}

static int parse_args(int argc, char **argv, cplab_cli *cli, sim_args *a, cplab_diag *d) {
  static const struct option longopts[] = {CPLAB_CLI_COMMON_LONGOPTS,
                                           {"check", no_argument, NULL, OPT_CHECK},
                                           {"numeric", no_argument, NULL, OPT_NUMERIC},
                                           {"layers", required_argument, NULL, OPT_LAYERS},
                                           {"list-mutants", no_argument, NULL, OPT_LIST_MUTANTS},
                                           {NULL, 0, NULL, 0}};
  int rc = cplab_cli_parse(argc, argv, CPLAB_CLI_COMMON_SHORTOPTS, longopts, cli, sim_option, a, NULL, d);
  if (rc) return rc;
  if (a->layers && !a->numeric.enabled) CPLAB_FAIL(d, CPLAB_EUSAGE, "--layers needs --numeric");
  /* Syntax now (usage errors come before any work); range once the model is known. */
  return cplab_cli_parse_layers(a->layers, INT32_MAX, &a->numeric.layers, d);
}

/* -o PATH: a trace for .h5, the JSON report for .json. */
static int out_is_trace(const char *out) {
  size_t n = out ? strlen(out) : 0;
  return n > 3 && strcmp(out + n - 3, ".h5") == 0;
}

static int check_out_path(const char *out, cplab_diag *d) {
  size_t n = out ? strlen(out) : 0;
  if (!out || out_is_trace(out) || (n > 5 && strcmp(out + n - 5, ".json") == 0)) return 0;
  CPLAB_FAIL(d, CPLAB_EUSAGE, "-o %s: use NAME.h5 for a trace or NAME.json for the JSON report", out);
}

static int write_report(const cplab_cli *cli, const cplab_scenario *s, const cplab_rank_table *t,
                        const sim_plans *plans, cplab_diag *d) {
  int rc = 0;
  json_t *report = NULL;
  char *text = NULL;
  const char *json_out = cli->out && !out_is_trace(cli->out) ? cli->out : NULL;
  if (cli->json || json_out) {
    report = sim_report_json(s, t, plans);
    text = report ? json_dumps(report, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    if (!text) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory formatting the JSON report");
  }
  if (!rc && json_out) {
    size_t n = strlen(text);
    text[n] = '\n'; /* replace the terminator: the file ends with a newline */
    rc = cplab_atomic_write(json_out, text, n + 1, d);
    text[n] = '\0';
  }
  if (!rc && !cli->quiet) {
    if (cli->json) printf("%s\n", text);
    else sim_report_text(stdout, s, t, plans);
    if (fflush(stdout) != 0) rc = cplab_diag_set(d, CPLAB_EIO, "cannot write the report to standard output");
  }
  free(text);
  json_decref(report);
  return rc;
}

int main(int argc, char **argv) {
  cplab_cli cli;
  cplab_diag d = {0};
  cplab_log log;
  cplab_log_init(&log, PROG);
  cplab_cli_init(&cli, "pr56157");
  sim_args args = {0};
  if (parse_args(argc, argv, &cli, &args, &d) != 0 || check_out_path(cli.out, &d) != 0) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  log.level = cli.quiet ? CPLAB_LOG_ERROR : cli.log_level;
  if (cplab_cli_answer_info(&cli, PROG, usage)) return CPLAB_EXIT_OK;
  if (cli.list_layouts) {
    cplab_cli_list_layouts(stdout);
    return CPLAB_EXIT_OK;
  }
  if (args.list_mutants) return cplab_layout_catalogue_write(stdout) ? CPLAB_EXIT_ERROR : CPLAB_EXIT_OK;
  if (cli.list_scenarios) {
    if (cplab_cli_list_scenarios(stdout, &d) == 0) return CPLAB_EXIT_OK;
    cplab_diag_report(stderr, PROG, &d);
    return CPLAB_EXIT_ERROR;
  }

  sim_procs procs;
  cplab_scenario *s = NULL;
  cplab_rank_table *table = NULL;
  sim_plans plans = {0};
  int rc = sim_procs_init(&procs, &argc, &argv, &d);
  if (!rc) {
    log.rank = procs.size > 1 ? procs.rank : -1;
    cplab_scenario_overrides ov = {cli.has_seed, cli.seed, cli.layout};
    rc = cplab_scenario_load(cli.scenario, &ov, &s, &d);
    if (!rc && args.numeric.enabled) rc = cplab_cli_parse_layers(args.layers, s->model.num_layers, &args.numeric.layers, &d);
    if (!rc) cplab_log_info(&log, "scenario %s: %zu steps, world %d, %d process(es)", s->name, s->num_steps,
                            cplab_parallel_world(&s->par), procs.size);
  }
  /* Every process loads the scenario itself; enter the collectives only if
   * all could. A process that failed reports its own error; of the others,
   * only process 0 says that someone failed. */
  int any = sim_procs_agree(&procs, rc), remote = 0;
  if (!rc && any) {
    rc = cplab_diag_set(&d, any, "another process failed (see its message)");
    remote = 1;
  }
  if (!rc) rc = sim_rank_views(&procs, &s->par, &table, &d);
  if (!rc) {
    const cplab_layout *layout = cplab_layout_find(s->layout);
    if (layout->mutant && procs.rank == 0)
      cplab_log_warn(&log, "layout %s is a mutant: %s", layout->name, layout->reproduces);
    char command[1024] = "";
    for (int i = 0, used = 0; i < argc && used < (int)sizeof command - 2; i++)
      used += snprintf(command + used, sizeof command - (size_t)used, "%s%s", i ? " " : "", argv[i]);
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int mlen = 0;
    if (procs.mpi) MPI_Get_library_version(mpi, &mlen);
    mpi[strcspn(mpi, "\n,")] = '\0';
    sim_trace_target trace = {out_is_trace(cli.out) ? cli.out : NULL, {"sim", command, NULL, NULL, mpi, NULL, NULL}};
    rc = sim_plans_run(&procs, s, layout, table, args.check, &args.numeric, &trace, &plans, &d);
    if (!rc && procs.rank == 0 && args.numeric.enabled)
      cplab_log_info(&log, "numeric pass: %lld sampled rows in %.3f s (slowest process)", (long long)plans.numeric_rows,
                     plans.numeric_seconds);
  }
  if (!rc && procs.rank == 0) rc = write_report(&cli, s, table, &plans, &d);
  int differs = !rc && procs.rank == 0 && (plans.disagreements > 0 || plans.check.violations > 0);
  if (rc && (!remote || procs.rank == 0)) {
    if (procs.size > 1) fprintf(stderr, "[process %d] ", procs.rank);
    cplab_diag_report(stderr, PROG, &d);
  }
  sim_plans_free(&plans);
  cplab_rank_table_free(table);
  cplab_scenario_free(s);
  sim_procs_fini(&procs);
  return rc ? CPLAB_EXIT_ERROR : differs ? CPLAB_EXIT_DIFFERENT : CPLAB_EXIT_OK;
}
