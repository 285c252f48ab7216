/* cplab-bench: TTFT and TPOT per layout and graph mode of a synthetic
 * sparse-MLA decoder layer, with statistics, tables and plots (issue: layout
 * benchmarks). The configuration matrix is matrix.h's, the plan-derived
 * work dryrun.h's, the measuring mode measure.h's (built with CUDA: the executor's
 * batched engine, exec/engine.h, in the cplab_exec library), the
 * reports report.h's. Three modes: measure (the default), --dry-run (the
 * plans' work, no GPU) and --report (render a results file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/cli.h"
#include "cplab/layout.h"
#include "cplab/log.h"
#include "cplab/model.h"
#include "config.h"
#include "dryrun.h"
#if CPLAB_BENCH_ENGINE
#include "measure.h"
#endif
#include "matrix.h"
#include "report.h"
#if CPLAB_BENCH_NCCL
#include <mpi.h>
#endif

#define PROG "cplab-bench"

static void usage(FILE *out) {
  fputs("Usage: " PROG " [OPTIONS] [-o PREFIX]     measure on the GPU\n"
        "       " PROG " --dry-run [OPTIONS]\n"
        "       " PROG " --report FILE.h5 [-o PREFIX]\n"
        "TTFT (prefill N in / 1 out) and TPOT (decode 1 in / M out) of a synthetic sparse-MLA decoder\n"
        "layer per layout (--layout NAME, a plan/layouts/ plugin), set of parallel sizes (--parallel) and\n"
        "CUDA-graph mode. Measuring runs every rank of a configuration on this\n"
        "GPU (the single-device backend: communication is device copies), or with --backend nccl one\n"
        "MPI rank per GPU, and prints the markdown table, or writes PREFIX.h5, .json, .md and plots;\n"
        "--dry-run derives every configuration's\n"
        "per-rank work from the plans (no GPU); --report renders a results file (median, p99,\n"
        "bootstrap 95% intervals, ratios against the TP layout with the same GPUs, plots).\n\n",
        out);
  fputs("Configurations:\n"
        "  --preset NAME         model shapes: glm-5 (default) or deepseek-v3.2\n"
        "  --layout NAME         the layout measured (default vllm; --list-layouts lists them): any\n"
        "                        whose plans the executor's kernels run; one whose own conversion map\n"
        "                        they cannot express is refused by name when measuring (--dry-run\n"
        "                        derives any layout's plans); a mutant runs with a note, and plans that\n"
        "                        differ between ranks stop it (the executor's plan consensus)\n"
        "  --parallel LIST       parallel sizes, e.g. tp4,pcp4,tp4dcp4,pcp4dcp4 (the default, the change's\n"
        "                        columns): sizes above 1 in the order tp, pcp, dcp; GPUs = tp*pcp, DCP\n"
        "                        shards inside them (--layouts LIST: its deprecated name)\n"
        "  --head-pad auto|none|N  query heads the attention kernels run per rank: auto (default) is\n"
        "                        production's, FlashMLA's padding by the device (sm90: 64, sm100 and\n"
        "                        later: 128; 64 for --dry-run, which has no device); none, the real heads\n"
        "                        (num_heads/tp: 16 for GLM-5 on tp4); N, rounded up to a multiple of N.\n"
        "                        Padding heads are zero-filled and their outputs discarded. Our kernels\n"
        "                        run tiles of 64 heads, so none on 16 heads costs about what 64 do\n"
        "  --prefill LIST        TTFT workloads: new tokens per request, e.g. 8192,32768\n"
        "  --decode LIST         TPOT workloads: context lengths, e.g. 32768\n"
        "  --mixed LIST          mixed batches PREFILL+ROWS@CONTEXT, e.g. 8192+16@32768\n"
        "                        (no workload option: --prefill 32768 --decode 32768)\n"
        "  --batch N             requests of a prefill, decode rows of a decode step (default 1)\n"
        "  --out-tokens M        decode steps of a TPOT workload (default 16)\n"
        "  --graphs LIST         eager, piecewise, full_decode_only, full (default eager,full)\n"
        "  --interleave I, --block-size B   KV layout (default 1 and 64)\n"
        "  --model-set F=V,...   model fields over the preset, e.g. n_routed_experts=16\n\n"
        "Measuring:\n"
        "  --backend single|nccl single (default): every rank of a layout on this GPU; nccl: one\n"
        "                        process per rank and GPU, NCCL collectives (mpirun -np RANKS, every\n"
        "                        layout with that many ranks; one rank runs without mpirun)\n"
        "  --reps N              timed repetitions per configuration (default 10)\n"
        "  --warmup N            untimed repetitions before them (default 2)\n"
        "  --layers L            decoder layers per step (default 1)\n"
        "  --gemm bf16|fp8       the projections' GEMMs: bf16 (default) or fp8 (e4m3, per-tensor scales)\n"
        "  --check ROWS          after timing, compare ROWS sampled rows per step with cplab-exec's\n"
        "                        pass on the same plans (top-k bit for bit, attention within\n"
        "                        twice the kernels' bounds of the reference)\n\n"
        "Modes and output:\n"
        "  --dry-run             per configuration and rank: tokens, GEMM FLOP, indexer pairs,\n"
        "                        attention FLOP, collective bytes; --json for one JSON document\n"
        "  --report FILE.h5      re-render a results file: markdown to stdout, or with -o PREFIX\n"
        "                        PREFIX.h5, PREFIX.json, PREFIX.md and the plots PREFIX-*.png/svg\n"
        "                        (gnuplot; without it PREFIX.gp renders them later)\n"
        "  --no-plots            no plots\n\n",
        out);
  cplab_cli_help_common(out);
  fputs("\nExit status: 0 done, 2 error.\n\n"
        "Examples:\n"
        "  " PROG " --dry-run --parallel tp4,pcp4 --prefill 32768\n"
        "  " PROG " --dry-run --layout block-aligned --parallel pcp4dcp4 --head-pad none\n"
        "  " PROG " --dry-run --json --decode 32768 --batch 8 > plan-work.json\n"
        "  mpirun -np 2 " PROG " --backend nccl --parallel tp2,pcp2,tp2dcp2 --prefill 16384 -o two-gpus\n",
        out);
}

enum {
  OPT_PRESET = CPLAB_OPT_PROGRAM, OPT_PARALLEL, OPT_LAYOUTS, OPT_HEAD_PAD, OPT_PREFILL, OPT_DECODE, OPT_MIXED,
  OPT_BATCH, OPT_OUT_TOKENS, OPT_GRAPHS, OPT_INTERLEAVE, OPT_BLOCK_SIZE, OPT_DRY_RUN, OPT_REPORT, OPT_NO_PLOTS,
  OPT_MODEL_SET, OPT_REPS, OPT_WARMUP, OPT_LAYERS, OPT_CHECK, OPT_GEMM, OPT_BACKEND
};

typedef struct bench_args {
  const char *preset, *parallel, *prefill, *decode, *mixed, *graphs, *report, *model_set, *gemm, *backend;
  int64_t batch, out_tokens, interleave, block_size, reps, warmup, layers, check;
  int dry_run, no_plots, head_pad;
  int old_layouts; /* --layouts, --parallel's deprecated name, was given */
} bench_args;

static int bench_option(void *ctx, int opt, const char *arg, cplab_diag *d) {
  bench_args *a = ctx;
  switch (opt) {
  case OPT_PRESET: a->preset = arg; return 0;
  case OPT_PARALLEL: a->parallel = arg; return 0;
  case OPT_LAYOUTS: /* the sizes' older name: it collided with the layout (--layout); main says so */
    a->parallel = arg, a->old_layouts = 1;
    return 0;
  case OPT_HEAD_PAD: return cplab_head_pad_parse(arg, 2, &a->head_pad, d);
  case OPT_PREFILL: a->prefill = arg; return 0;
  case OPT_DECODE: a->decode = arg; return 0;
  case OPT_MIXED: a->mixed = arg; return 0;
  case OPT_GRAPHS: a->graphs = arg; return 0;
  case OPT_REPORT: a->report = arg; return 0;
  case OPT_DRY_RUN: a->dry_run = 1; return 0;
  case OPT_NO_PLOTS: a->no_plots = 1; return 0;
  case OPT_MODEL_SET: a->model_set = arg; return 0;
  case OPT_GEMM: {
    static const char *const gemms[] = {"bf16", "fp8", NULL};
    a->gemm = arg;
    return cplab_cli_parse_choice("--gemm", arg, gemms, NULL, d);
  }
  case OPT_BACKEND: a->backend = arg; return cplab_cli_parse_choice("--backend", arg, cplab_cli_backends, NULL, d);
  case OPT_REPS: return cplab_cli_parse_int("--reps", arg, 1, 100000, &a->reps, d);
  case OPT_WARMUP: return cplab_cli_parse_int("--warmup", arg, 0, 1000, &a->warmup, d);
  case OPT_LAYERS: return cplab_cli_parse_int("--layers", arg, 1, 1000, &a->layers, d);
  case OPT_CHECK: return cplab_cli_parse_int("--check", arg, 1, 1000000, &a->check, d);
  case OPT_BATCH: return cplab_cli_parse_int("--batch", arg, 1, 4096, &a->batch, d);
  case OPT_OUT_TOKENS: return cplab_cli_parse_int("--out-tokens", arg, 1, 4096, &a->out_tokens, d);
  case OPT_INTERLEAVE: return cplab_cli_parse_int("--interleave", arg, 1, 4096, &a->interleave, d);
  case OPT_BLOCK_SIZE: return cplab_cli_parse_int("--block-size", arg, 1, 4096, &a->block_size, d);
  default: CPLAB_FAIL(d, CPLAB_EINTERNAL, "option code %d has no handler", opt);
  }
}

static int parse_args(int argc, char **argv, cplab_cli *cli, bench_args *a, cplab_diag *d) {
  static const struct option longopts[] = {
      CPLAB_CLI_COMMON_LONGOPTS,
      {"preset", required_argument, NULL, OPT_PRESET},         {"parallel", required_argument, NULL, OPT_PARALLEL},
      {"layouts", required_argument, NULL, OPT_LAYOUTS},       {"head-pad", required_argument, NULL, OPT_HEAD_PAD},
      {"prefill", required_argument, NULL, OPT_PREFILL},       {"decode", required_argument, NULL, OPT_DECODE},
      {"mixed", required_argument, NULL, OPT_MIXED},           {"batch", required_argument, NULL, OPT_BATCH},
      {"out-tokens", required_argument, NULL, OPT_OUT_TOKENS}, {"graphs", required_argument, NULL, OPT_GRAPHS},
      {"interleave", required_argument, NULL, OPT_INTERLEAVE}, {"block-size", required_argument, NULL, OPT_BLOCK_SIZE},
      {"dry-run", no_argument, NULL, OPT_DRY_RUN},             {"report", required_argument, NULL, OPT_REPORT},
      {"no-plots", no_argument, NULL, OPT_NO_PLOTS},           {"model-set", required_argument, NULL, OPT_MODEL_SET},
      {"reps", required_argument, NULL, OPT_REPS},             {"warmup", required_argument, NULL, OPT_WARMUP},
      {"layers", required_argument, NULL, OPT_LAYERS},         {"check", required_argument, NULL, OPT_CHECK},
      {"gemm", required_argument, NULL, OPT_GEMM},             {"backend", required_argument, NULL, OPT_BACKEND},
      {NULL, 0, NULL, 0}};
  int rc = cplab_cli_parse(argc, argv, CPLAB_CLI_COMMON_SHORTOPTS, longopts, cli, bench_option, a, NULL, d);
  if (rc) return rc;
  if (cli->help || cli->version) return 0;
  if (cli->scenario)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--scenario: cplab-bench builds its scenarios from --preset, --layout, --parallel and "
               "the workload options");
  if (cli->list_scenarios)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--list-scenarios: cplab-bench takes no scenario (--list-layouts lists the layouts)");
  if (cli->list_layouts && (a->dry_run || a->report))
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--list-layouts lists the layouts and does nothing else");
  if (a->dry_run && a->report)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "choose --dry-run (the plans' work), --report FILE.h5 (render results) or neither "
               "(measure)");
  if (a->report && (cli->layout || a->parallel || a->head_pad != CPLAB_HEAD_PAD_AUTO))
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--layout, --parallel and --head-pad choose what to measure; --report renders what "
               "the results file holds");
  if ((a->dry_run || a->report) && (a->reps || a->warmup >= 0 || a->layers || a->check || a->gemm || a->backend))
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--reps, --warmup, --layers, --check, --gemm and --backend go with measuring, not "
               "with %s", a->dry_run ? "--dry-run" : "--report");
  if (a->dry_run && cli->out) CPLAB_FAIL(d, CPLAB_EUSAGE, "--dry-run writes to standard output; drop -o");
  if (cli->json && !a->dry_run) CPLAB_FAIL(d, CPLAB_EUSAGE, "--json goes with --dry-run (-o writes PREFIX.json)");
  cplab_model m;
  if (cplab_model_preset(a->preset, &m) != 0) CPLAB_FAIL(d, CPLAB_EUSAGE, "--preset %s: unknown preset", a->preset);
  return 0;
}

/* The matrix from the arguments (defaults filled in). */
static int build_matrix(const bench_args *a, const cplab_cli *cli, cplab_bench_matrix *m, cplab_diag *d) {
  memset(m, 0, sizeof *m);
  snprintf(m->preset, sizeof m->preset, "%s", a->preset);
  m->seed = cli->has_seed ? cli->seed : 20261129;
  m->interleave = (int)a->interleave, m->block_size = (int)a->block_size;
  snprintf(m->layout, sizeof m->layout, "%s", cli->layout ? cli->layout : "vllm");
  m->head_pad = a->head_pad;
  int rc = cplab_bench_parse_parallel(m, a->parallel ? a->parallel : "tp4,pcp4,tp4dcp4,pcp4dcp4", d);
  if (!rc) rc = cplab_bench_parse_graphs(m, a->graphs, d);
  if (!rc && a->model_set) rc = cplab_bench_parse_model_set(m, a->model_set, d);
  int none = !a->prefill && !a->decode && !a->mixed;
  const char *prefill = none ? "32768" : a->prefill, *decode = none ? "32768" : a->decode;
  if (!rc && prefill) rc = cplab_bench_add_workloads(m, CPLAB_BENCH_PREFILL, prefill, a->batch, a->out_tokens, d);
  if (!rc && decode) rc = cplab_bench_add_workloads(m, CPLAB_BENCH_DECODE, decode, a->batch, a->out_tokens, d);
  if (!rc && a->mixed) rc = cplab_bench_add_workloads(m, CPLAB_BENCH_MIXED, a->mixed, a->batch, a->out_tokens, d);
  return rc;
}

/* PREFIX.h5, PREFIX.json, PREFIX.md and the plots, each written atomically. */
static int write_outputs(const cplab_bench_results *r, const char *prefix, int plots, cplab_diag *d) {
  size_t n = strlen(prefix) + 16;
  char *path = malloc(n);
  if (!path) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  snprintf(path, n, "%s.h5", prefix);
  int rc = cplab_bench_write_h5(r, path, d);
  if (!rc) snprintf(path, n, "%s.json", prefix), rc = cplab_bench_write_json(r, path, d);
  if (!rc) snprintf(path, n, "%s.md", prefix), rc = cplab_bench_write_markdown_file(r, path, d);
  free(path);
  if (!rc && plots) {
    rc = cplab_bench_write_plots(r, prefix, 1, d);
    if (rc == CPLAB_ENOTFOUND) { /* no gnuplot: the script is there to render later */
      fprintf(stderr, PROG ": note: %s\n", d->msg);
      cplab_diag_clear(d);
      rc = 0;
    }
  }
  return rc;
}

static int re_render(const bench_args *a, const cplab_cli *cli, cplab_diag *d) {
  cplab_bench_results r;
  cplab_bench_results_init(&r);
  int rc = cplab_bench_read_h5(a->report, &r, d); /* checked, statistics included */
  if (!rc) rc = cli->out ? write_outputs(&r, cli->out, !a->no_plots, d) : cplab_bench_write_markdown(&r, stdout, d);
  cplab_bench_results_free(&r);
  return rc;
}

#if CPLAB_BENCH_ENGINE
/* The command line as one string, for the results' provenance. */
static void command_of(int argc, char **argv, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < argc && at < len; i++) {
    int n = snprintf(buf + at, len - at, "%s%s", i ? " " : "", argv[i]);
    if (n < 0) break;
    at += (size_t)n;
  }
}
#endif

/* What rank 0 says before the work: --layouts' deprecation, and that a
 * mutant (a real bug, run where the executor can run it) gives a bug's
 * numbers. */
static void notes(const bench_args *a, const char *layout, const cplab_bench_backend *be) {
  const cplab_layout *l = cplab_layout_find(layout);
  if (be->rank != 0) return;
  if (a->old_layouts)
    fputs(PROG ": note: --layouts is deprecated: it is --parallel now (--layout NAME names the layout)\n", stderr);
  if (l && l->mutant)
    fprintf(stderr, PROG ": note: layout %s is a mutant, its numbers a bug's: %s\n", l->name, l->reproduces);
}

/* Under NCCL every process measures its rank and rank 0 writes the results. */
static int measure(const bench_args *a, const cplab_cli *cli, const cplab_bench_matrix *m, const cplab_bench_backend *be,
                   int argc, char **argv, cplab_diag *d) {
#if CPLAB_BENCH_ENGINE
  exec_engine_opts o = {a->reps ? (int)a->reps : 10, a->warmup >= 0 ? (int)a->warmup : 2, a->layers ? (int)a->layers : 1,
                        a->check, NULL, a->gemm && strcmp(a->gemm, "fp8") == 0,
                        0 /* head_pad: the matrix's, resolved by cplab_bench_measure_matrix */};
  cplab_bench_results r;
  char command[2048];
  cplab_bench_results_init(&r);
  command_of(argc, argv, command, sizeof command);
  int rc = cplab_bench_measure_matrix(m, &o, be, command, &r, be->rank == 0 ? stderr : NULL, d);
  if (!rc && be->rank == 0)
    rc = cli->out ? write_outputs(&r, cli->out, !a->no_plots, d) : cplab_bench_write_markdown(&r, stdout, d);
  cplab_bench_results_free(&r);
  return rc;
#else
  (void)a, (void)cli, (void)m, (void)be, (void)argc, (void)argv;
  CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "this cplab-bench was built without CUDA, and measuring needs a GPU build "
             "(--dry-run and --report work)");
#endif
}

/* Under mpirun (Open MPI's or a PMI launcher's variables): MPI started and
 * this process's rank known; only --backend nccl runs on several. */
static int start_mpi(int *argc, char ***argv, cplab_bench_backend *be, cplab_diag *d) {
  be->mpi = cplab_cli_under_mpirun();
#if CPLAB_BENCH_NCCL
  if (!be->mpi) return 0;
  if (MPI_Init(argc, argv) != MPI_SUCCESS || MPI_Comm_rank(MPI_COMM_WORLD, &be->rank) != MPI_SUCCESS ||
      MPI_Comm_size(MPI_COMM_WORLD, &be->size) != MPI_SUCCESS)
    CPLAB_FAIL(d, CPLAB_EMPI, "MPI start-up failed");
  setvbuf(stderr, NULL, _IOLBF, 0); /* each process's message in one write, not interleaved */
  if (!be->nccl && be->size > 1)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "the single-device backend measures every rank in one process: run it without "
               "mpirun, or use --backend nccl");
  return 0;
#else
  (void)argc, (void)argv;
  be->mpi = 0; /* this build has no MPI */
  const char *n = getenv("OMPI_COMM_WORLD_SIZE"), *r = getenv("OMPI_COMM_WORLD_RANK");
  be->rank = r ? atoi(r) : 0; /* so that one process says the errors below */
  if (be->nccl) CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "--backend nccl: this cplab-bench was built without NCCL");
  if (n && atoi(n) > 1) CPLAB_FAIL(d, CPLAB_EUSAGE, "this cplab-bench was built without MPI: run it without mpirun");
  return 0;
#endif
}

/* MPI stopped; a failed rank under NCCL stops every rank, as the others may
 * be waiting in a collective for it (not for usage errors, which every
 * process finds alike before any collective). */
static void stop_mpi(const cplab_bench_backend *be, int rc) {
#if CPLAB_BENCH_NCCL
  if (!be->mpi) return;
  if (rc && rc != CPLAB_EUSAGE && be->size > 1) {
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, CPLAB_EXIT_ERROR);
  }
  MPI_Finalize();
#else
  (void)be, (void)rc;
#endif
}

int main(int argc, char **argv) {
  cplab_cli cli;
  cplab_diag d = {0};
  bench_args a = {.preset = "glm-5", .graphs = "eager,full", .batch = 1, .out_tokens = 16, .interleave = 1,
                  .block_size = 64, .warmup = -1, .head_pad = CPLAB_HEAD_PAD_AUTO};
  cplab_cli_init(&cli, NULL);
  int rc = parse_args(argc, argv, &cli, &a, &d);
  if (rc) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  if (cplab_cli_answer_info(&cli, PROG, usage)) return CPLAB_EXIT_OK;
  if (cli.list_layouts) {
    cplab_cli_list_layouts(stdout);
    return CPLAB_EXIT_OK;
  }
  cplab_bench_matrix m;
  cplab_bench_backend be = {a.backend && strcmp(a.backend, "nccl") == 0, 0, 1, 0};
  rc = start_mpi(&argc, &argv, &be, &d);
  if (!rc) notes(&a, cli.layout ? cli.layout : "vllm", &be);
  if (!rc && a.report) rc = re_render(&a, &cli, &d);
  else if (!rc && !(rc = build_matrix(&a, &cli, &m, &d)))
    rc = a.dry_run ? cplab_bench_dry_run(&m, stdout, cli.json, &d) : measure(&a, &cli, &m, &be, argc, argv, &d);
  if (rc && (rc != CPLAB_EUSAGE || be.rank == 0)) { /* a usage error is every process's: rank 0 says it */
    if (be.size > 1) fprintf(stderr, "[process %d] ", be.rank);
    cplab_diag_report(stderr, PROG, &d);
  }
  stop_mpi(&be, rc);
  return rc ? CPLAB_EXIT_ERROR : CPLAB_EXIT_OK;
}
