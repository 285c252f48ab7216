/* cplab-exec: the executor. Runs the scenario's plans with real kernels and
 * writes the same traces as cplab-sim --numeric, so that cplab-diff can prove
 * agreement. Before each step the ranks agree on their plans (consensus.h);
 * a disagreement stops every rank (exit 1) before any collective. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consensus.h"
#include "cplab/cli.h"
#include "cplab/log.h"
#include "exec.h"

#define PROG "cplab-exec"

static void usage(FILE *out) {
  fputs("Usage: " PROG " [OPTIONS]\n"
        "Run what every rank of a PCP/DCP sparse-MLA layout computes, with CUDA kernels, and\n"
        "write the trace cplab-diff compares with cplab-sim --numeric.\n\n",
        out);
  fputs("Options:\n"
        "  --backend single      every logical rank in this process on one GPU, collectives as\n"
        "                        device copies in rank order (the default; one process)\n"
        "  --backend nccl        one MPI rank per GPU (mpirun -np WORLD; world 1 runs without\n"
        "                        mpirun), NCCL collectives over communicators split per group\n"
        "  --plans-only          derive the plans and check consensus only: no GPU needed; under\n"
        "                        mpirun each process derives its own ranks (r mod processes)\n"
        "  --layers LIST         layers to run, e.g. 0,3 (default 0)\n"
        "  -o NAME.h5            write the trace (NAME.h5 and NAME.rNNNN.h5)\n\n",
        out);
  cplab_cli_help_common(out);
  fputs("\nExit status: 0 done, 1 the ranks disagree on a plan (stopped before any collective) or\n"
        "the step's output does not come back in global token order, 2 error (no GPU: CPLAB_ENODEV).\n\n"
        "Examples:\n"
        "  " PROG " --scenario smoke -o exec.h5 && cplab-diff sim.h5 exec.h5\n"
        "  mpirun -np 2 " PROG " --plans-only --layout mutant-rank-local-plan\n",
        out);
}

enum { OPT_BACKEND = CPLAB_OPT_PROGRAM, OPT_PLANS_ONLY, OPT_LAYERS };

typedef struct exec_args {
  int plans_only, nccl;
  const char *layers;
  cplab_layer_list layers_list;
} exec_args;

static int exec_option(void *ctx, int opt, const char *arg, cplab_diag *d) {
  exec_args *a = ctx;
  switch (opt) {
  case OPT_BACKEND: {
    int rc = cplab_cli_parse_choice("--backend", arg, cplab_cli_backends, &a->nccl, d);
    if (rc) return rc;
#ifndef CPLAB_EXEC_NCCL
    if (a->nccl) CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "--backend nccl: this build has no NCCL (configure --with-nccl)");
#endif
    return 0;
  }
  case OPT_PLANS_ONLY: a->plans_only = 1; return 0;
  case OPT_LAYERS: a->layers = arg; return 0;
  default: CPLAB_FAIL(d, CPLAB_EINTERNAL, "option code %d has no handler", opt);
  }
}

static int parse_args(int argc, char **argv, cplab_cli *cli, exec_args *a, cplab_diag *d) {
  static const struct option longopts[] = {CPLAB_CLI_COMMON_LONGOPTS,
                                           {"backend", required_argument, NULL, OPT_BACKEND},
                                           {"plans-only", no_argument, NULL, OPT_PLANS_ONLY},
                                           {"layers", required_argument, NULL, OPT_LAYERS},
                                           {NULL, 0, NULL, 0}};
  int rc = cplab_cli_parse(argc, argv, CPLAB_CLI_COMMON_SHORTOPTS, longopts, cli, exec_option, a, NULL, d);
  if (rc) return rc;
  size_t n = cli->out ? strlen(cli->out) : 0;
  if (cli->out && (n < 4 || strcmp(cli->out + n - 3, ".h5") != 0))
    CPLAB_FAIL(d, CPLAB_EUSAGE, "-o %s: the trace must be named NAME.h5", cli->out);
  if (a->plans_only && cli->out) CPLAB_FAIL(d, CPLAB_EUSAGE, "--plans-only writes no trace; drop -o");
  return cplab_cli_parse_layers(a->layers, INT32_MAX, &a->layers_list, d);
}

/* --plans-only: each process derives its ranks and the processes agree. */
static int plans_only(const cplab_scenario *s, const cplab_layout *layout, const cplab_rank_table *t, int mpi, int me,
                      int size, cplab_diag *d) {
  int per = (t->world + size - 1) / size, rc = 0;
  uint64_t *words = calloc((size_t)per * EXEC_CONSENSUS_WORDS, sizeof *words);
  if (!words) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (size_t step = 0; step < s->num_steps && !rc; step++) {
    cplab_step_input in = {&s->steps[step], step, s->seed, &s->par, &s->model, layout};
    int n = 0;
    for (int r = me; r < t->world && !rc; r += size, n++) {
      cplab_rank_plan *p = NULL;
      rc = cplab_rank_plan_derive(&in, r, 0, &p, d);
      if (!rc) exec_consensus_words(p, words + (size_t)n * EXEC_CONSENSUS_WORDS);
      cplab_rank_plan_free(p);
    }
    if (!rc) rc = mpi ? exec_consensus_mpi(words, n, t, step, d) : exec_consensus_check(words, t, step, d);
  }
  free(words);
  return rc;
}

typedef struct run_traces {
  int world;
  cplab_trace_writer **w;
} run_traces;

static int traces_open(const char *path, const cplab_scenario *s, const cplab_trace_provenance *prov, int world,
                       run_traces *tr, cplab_diag *d) {
  tr->world = world;
  tr->w = calloc((size_t)world, sizeof *tr->w);
  if (!tr->w) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = 0;
  for (int r = 0; r < world && !rc; r++) {
    char rp[4096];
    rc = cplab_trace_rank_path(path, r, rp, sizeof rp, d);
    if (!rc) rc = cplab_trace_create(rp, s, r, prov, &tr->w[r], d);
  }
  return rc;
}

/* Commit every rank file, then the run file (a complete run file means
 * complete rank files); on failure remove what was started. */
static int traces_close(const char *path, const cplab_scenario *s, const cplab_trace_provenance *prov, run_traces *tr,
                        int ok, cplab_diag *d) {
  int rc = 0;
  for (int r = 0; r < tr->world && tr->w; r++) {
    if (!tr->w[r]) continue;
    if (ok && !rc) rc = cplab_trace_commit(tr->w[r], d);
    else cplab_trace_abort(tr->w[r]);
  }
  free(tr->w);
  tr->w = NULL;
  if (!ok || rc) return rc;
  cplab_trace_writer *run = NULL;
  rc = cplab_trace_create(path, s, -1, prov, &run, d);
  if (!rc) rc = cplab_trace_link_ranks(run, tr->world, d);
  if (!rc) rc = cplab_trace_commit(run, d);
  else if (run) cplab_trace_abort(run);
  return rc;
}

/* What a rank computed for a layer, as the trace stores it. */
static cplab_trace_rows layer_view(const exec_layer *l) {
  return (cplab_trace_rows){.layer = l->layer, .rows = l->rows, .k = l->k, .heads = l->heads, .tokens = l->tokens,
                            .topk = l->topk, .converted = l->converted, .scores = l->scores, .kth = l->kth,
                            .out = l->out, .lse = l->lse, .num_digests = l->num_digests, .digests = l->digests,
                            .valid = l->valid, .partial_blocks = l->blocks, .partial_out = l->partial_out,
                            .partial_lse = l->partial_lse};
}

/* One step on the single-device backend: plans, consensus, the layers. */
static int run_step(exec_single *x, const cplab_scenario *s, const cplab_layout *layout, const cplab_rank_table *t,
                    size_t step, const cplab_layer_list *num, run_traces *tr, int64_t *rows, cplab_diag *d) {
  cplab_step_input in = {&s->steps[step], step, s->seed, &s->par, &s->model, layout};
  int world = t->world, rc = 0;
  cplab_rank_plan **plans = calloc((size_t)world, sizeof *plans);
  uint64_t *words = calloc((size_t)world * EXEC_CONSENSUS_WORDS, sizeof *words);
  exec_layer *out = calloc((size_t)world, sizeof *out);
  if (!plans || !words || !out) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int r = 0; r < world && !rc; r++) {
    rc = cplab_rank_plan_derive(&in, r, CPLAB_PLAN_TOKEN_MAPS, &plans[r], d);
    if (!rc) exec_consensus_words(plans[r], words + (size_t)r * EXEC_CONSENSUS_WORDS);
  }
  if (!rc) rc = exec_consensus_check(words, t, step, d);
  for (int r = 0; r < world && !rc && tr->w; r++) rc = cplab_trace_write_plan(tr->w[r], step, plans[r], d);
  for (int i = 0; i < num->count && !rc; i++) {
    rc = exec_single_layer(x, &in, plans, num->layers[i], s->sampled_rows, out, d);
    for (int r = 0; r < world && !rc; r++) {
      *rows += out[r].rows;
      cplab_trace_rows view = layer_view(&out[r]);
      if (tr->w) rc = cplab_trace_write_rows(tr->w[r], step, &view, d);
    }
    for (int r = 0; r < world && out; r++) exec_layer_free(&out[r]);
  }
  if (!rc) rc = exec_single_output(x, &in, plans, d);
  if (rc) cplab_diag_prefix(d, "step %zu: ", step);
  for (int r = 0; r < world && plans; r++) cplab_rank_plan_free(plans[r]);
  free(plans), free(words), free(out);
  return rc;
}

static int run_single(const cplab_cli *cli, const cplab_scenario *s, const cplab_layout *layout,
                      const cplab_rank_table *t, const cplab_layer_list *num, const char *command, cplab_log *log,
                      cplab_diag *d) {
  char device[256] = "", cuda[128] = "";
  int rc = exec_device_describe(device, sizeof device, cuda, sizeof cuda, d);
  exec_single *x = NULL;
  run_traces tr = {0};
  cplab_trace_provenance prov = {"exec", command, NULL, device, NULL, cuda, NULL};
  if (!rc) rc = exec_single_alloc(s, layout, t, &x, d);
  if (!rc && cli->out) rc = traces_open(cli->out, s, &prov, t->world, &tr, d);
  int64_t rows = 0;
  for (size_t step = 0; step < s->num_steps && !rc; step++) rc = run_step(x, s, layout, t, step, num, &tr, &rows, d);
  if (cli->out && tr.w) {
    int trc = traces_close(cli->out, s, &prov, &tr, rc == 0, d);
    if (!rc) rc = trc;
  }
  if (!rc && !cli->quiet)
    printf("%s: %zu steps of %s on %s (single-device backend, %d logical ranks): consensus held; %lld sampled rows "
           "over %d layer(s)%s%s\n",
           PROG, s->num_steps, s->name, device, t->world, (long long)rows, num->count, cli->out ? "; trace " : "",
           cli->out ? cli->out : "");
  cplab_log_info(log, "%s", cuda);
  exec_single_free(x);
  return rc;
}

#ifdef CPLAB_EXEC_NCCL
/* The NCCL backend: this process is global rank `me`; it writes its own rank
 * file, and rank 0 the run file once every rank committed. */
static int run_nccl(const cplab_cli *cli, const cplab_scenario *s, const cplab_layout *layout,
                    const cplab_rank_table *t, const cplab_layer_list *num, const char *command, int mpi, int me,
                    int size, cplab_diag *d) {
  if (mpi ? size != t->world : t->world != 1)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--backend nccl runs one process per rank: mpirun -np %d (%d process(es) here)",
               t->world, size);
  exec_nccl *x = NULL;
  char device[256] = "", cuda[128] = "", rpath[4096];
  cplab_trace_provenance prov = {"exec", command, NULL, device, NULL, cuda, NULL};
  cplab_trace_writer *w = NULL;
  int rc = exec_nccl_alloc(s, layout, me, mpi, &x, d);
  if (!rc) rc = exec_device_describe(device, sizeof device, cuda, sizeof cuda, d);
  if (!rc && cli->out) rc = cplab_trace_rank_path(cli->out, me, rpath, sizeof rpath, d);
  if (!rc && cli->out) rc = cplab_trace_create(rpath, s, me, &prov, &w, d);
  int64_t rows = 0;
  for (size_t step = 0; step < s->num_steps && !rc; step++) {
    cplab_step_input in = {&s->steps[step], step, s->seed, &s->par, &s->model, layout};
    cplab_rank_plan *p = NULL;
    uint64_t words[EXEC_CONSENSUS_WORDS];
    rc = cplab_rank_plan_derive(&in, me, CPLAB_PLAN_TOKEN_MAPS, &p, d);
    if (!rc) exec_consensus_words(p, words);
    if (!rc) rc = mpi ? exec_consensus_mpi(words, 1, t, step, d) : exec_consensus_check(words, t, step, d);
    if (!rc && w) rc = cplab_trace_write_plan(w, step, p, d);
    for (int i = 0; i < num->count && !rc; i++) {
      exec_layer l;
      rc = exec_nccl_layer(x, &in, p, num->layers[i], s->sampled_rows, &l, d);
      if (rc) break;
      rows += l.rows;
      cplab_trace_rows view = layer_view(&l);
      if (w) rc = cplab_trace_write_rows(w, step, &view, d);
      exec_layer_free(&l);
    }
    if (!rc) rc = exec_nccl_output(x, &in, p, d);
    if (rc) cplab_diag_prefix(d, "step %zu, rank %d: ", step, me);
    cplab_rank_plan_free(p);
  }
  if (w) {
    int crc = rc ? (cplab_trace_abort(w), rc) : cplab_trace_commit(w, d);
    if (!rc) rc = crc;
  }
  int all = rc; /* a failed rank returns at once (main stops every rank); the others agree here */
  if (!rc && mpi && MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
    rc = cplab_diag_set(d, CPLAB_EMPI, "MPI_Allreduce failed");
  if (!rc && all) rc = cplab_diag_set(d, all, "another rank failed (see its message)");
  if (!rc && me == 0 && cli->out) {
    cplab_trace_writer *run = NULL;
    rc = cplab_trace_create(cli->out, s, -1, &prov, &run, d);
    if (!rc) rc = cplab_trace_link_ranks(run, t->world, d);
    if (!rc) rc = cplab_trace_commit(run, d);
    else if (run) cplab_trace_abort(run);
  }
  int64_t total = rows;
  if (!rc && mpi) MPI_Reduce(&rows, &total, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (!rc && me == 0 && !cli->quiet)
    printf("%s: %zu steps of %s, NCCL backend, %d rank(s) on %s: consensus held; %lld sampled rows over %d "
           "layer(s)%s%s\n",
           PROG, s->num_steps, s->name, t->world, device, (long long)total, num->count, cli->out ? "; trace " : "",
           cli->out ? cli->out : "");
  exec_nccl_free(x);
  return rc;
}
#endif

int main(int argc, char **argv) {
  cplab_cli cli;
  cplab_diag d = {0};
  cplab_log log;
  cplab_log_init(&log, PROG);
  cplab_cli_init(&cli, "smoke");
  exec_args args = {0};
  if (parse_args(argc, argv, &cli, &args, &d) != 0) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  log.level = cli.quiet ? CPLAB_LOG_ERROR : cli.log_level;
  if (cplab_cli_answer_info(&cli, PROG, usage)) return CPLAB_EXIT_OK;
  if (cli.list_layouts) {
    cplab_cli_list_layouts(stdout);
    return CPLAB_EXIT_OK;
  }
  if (cli.list_scenarios) {
    if (cplab_cli_list_scenarios(stdout, &d) == 0) return CPLAB_EXIT_OK;
    cplab_diag_report(stderr, PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  int mpi = cplab_cli_under_mpirun(), me = 0, size = 1, rc = 0;
  if (mpi && (MPI_Init(&argc, &argv) != MPI_SUCCESS || MPI_Comm_rank(MPI_COMM_WORLD, &me) != MPI_SUCCESS ||
              MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS))
    rc = cplab_diag_set(&d, CPLAB_EMPI, "MPI start-up failed");
  log.rank = size > 1 ? me : -1;
  cplab_scenario *s = NULL;
  cplab_rank_table *t = NULL;
  cplab_scenario_overrides ov = {cli.has_seed, cli.seed, cli.layout};
  if (!rc) rc = cplab_scenario_load(cli.scenario, &ov, &s, &d);
  if (!rc) rc = cplab_cli_parse_layers(args.layers, s->model.num_layers, &args.layers_list, &d);
  if (!rc) t = cplab_rank_table_alloc(&s->par, &d);
  if (!rc && !t) rc = d.code ? d.code : CPLAB_ENOMEM;
  const cplab_layout *layout = rc ? NULL : cplab_layout_find(s->layout);
  if (!rc && layout->mutant && me == 0) cplab_log_warn(&log, "layout %s is a mutant: %s", layout->name, layout->reproduces);
  if (!rc && args.plans_only) {
    rc = plans_only(s, layout, t, mpi, me, size, &d);
    if (!rc && me == 0 && !cli.quiet)
      printf("%s: %zu steps of %s, %d ranks over %d process(es): every rank derived the same plan and collectives\n",
             PROG, s->num_steps, s->name, t->world, size);
  } else if (!rc && size > 1 && !args.nccl) {
    rc = cplab_diag_set(&d, CPLAB_EUSAGE, "the single-device backend runs every rank in one process: run it without "
                                          "mpirun (or use --backend nccl, or --plans-only)");
  } else if (!rc) {
    char command[1024] = "";
    for (int i = 0, used = 0; i < argc && used < (int)sizeof command - 2; i++)
      used += snprintf(command + used, sizeof command - (size_t)used, "%s%s", i ? " " : "", argv[i]);
#ifdef CPLAB_EXEC_NCCL
    if (args.nccl) {
      rc = run_nccl(&cli, s, layout, t, &args.layers_list, command, mpi, me, size, &d);
      /* A failure on one rank leaves the others inside a collective: stop them
       * all (consensus failures are seen by every rank together and end normally). */
      if (rc && rc != CPLAB_EDISAGREE && size > 1) {
        fprintf(stderr, "[process %d] ", me);
        cplab_diag_report(stderr, PROG, &d);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, rc == CPLAB_EMISMATCH ? CPLAB_EXIT_DIFFERENT : CPLAB_EXIT_ERROR);
      }
    } else
#endif
      rc = run_single(&cli, s, layout, t, &args.layers_list, command, &log, &d);
  }
  if (rc && (me == 0 || rc != CPLAB_EDISAGREE)) {
    if (size > 1) fprintf(stderr, "[process %d] ", me);
    cplab_diag_report(stderr, PROG, &d);
  }
  cplab_rank_table_free(t);
  cplab_scenario_free(s);
  if (mpi) MPI_Finalize();
  return rc == CPLAB_EDISAGREE || rc == CPLAB_EMISMATCH ? CPLAB_EXIT_DIFFERENT : rc ? CPLAB_EXIT_ERROR : CPLAB_EXIT_OK;
}
