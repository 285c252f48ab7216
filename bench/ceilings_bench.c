/* cplab-ceilings-bench: the ceilings of the GPU, measured in one run
 * (reference perf-anchors.md §6), against which the kernels are judged:
 *   copy   a large device-to-device cudaMemcpyAsync (default 2 GiB), rotating
 *          over three buffers, each far larger than the L2; bandwidth counts
 *          read + write: GB/s = 2 · bytes / t / 1e9 (perf-anchors' convention,
 *          "D2D copy 4.28 TB/s (4 GiB, read+write counted)");
 *   bf16   cplab_gemm_bf16 (cuBLASLt, fp32 accumulation) per shape M x N x K;
 *   fp8    cplab_gemm_fp8 (e4m3, per-tensor scales, bf16 out) per shape;
 *          TFLOPS = 2·M·N·K / t / 1e12.
 * Method: CUDA events around every operation on one stream. All operations
 * of a repetition run in turn (copy, then bf16 and fp8 per shape), so that
 * clock and heat drift hit them alike, and the host enqueues every
 * repetition ahead without waiting, so that the GPU never idles between
 * operations and no event pair includes host time (the busy fraction printed
 * at the end checks this). Each operation's inputs rotate over enough sets to
 * span 4x the L2 (at least 2). `--warmup` untimed repetitions (default 5),
 * then `--reps` timed ones (default 30); median, min, max, p10, p90.
 * Before any timing every operation runs once and is checked: the copy's
 * bytes, and for each GEMM the whole output is written (no NaN left of the
 * poison) and 256 sampled elements match a double-precision host reference
 * (relative Frobenius error < 1e-2, per element within 2^-8·|ref| + 2^-10·
 * sum|terms|, the rule of tests/gpu/test_gpu_gemm.c).
 * The operations, their checks and the timing loop are bench/ceilings.c,
 * shared with cplab-kernel-bench (which measures the same ceilings in its run).
 * Exit 0 ok, 2 on any error (no GPU, a failed call, a wrong result). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceilings.h"
#include "config.h"
#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "cplab_kernels.h"
#include "cplab_stream.h"

#define PROG "cplab-ceilings-bench"
#define MAX_SHAPES 8
#define SEED 0x6365696c696e6773ULL

typedef cplab_ceil_shape shape;

typedef struct opts {
  shape shapes[MAX_SHAPES];
  int nshapes, reps, warmup, help;
  size_t copy_bytes;
  const char *out, *commit;
} opts;

/* ---- errors: every failure ends the program with status 2 ------------------ */

static _Noreturn void die(const cplab_diag *d) {
  cplab_diag_report(stderr, PROG, d);
  exit(CPLAB_EXIT_ERROR);
}
static void ck_lab(int rc, const cplab_diag *d) {
  if (rc) die(d);
}

/* ---- options ------------------------------------------------------------------ */

static int parse_count(const char *arg, const char *name, int lo, int hi, int *out, cplab_diag *d) {
  int64_t v;
  int rc = cplab_cli_parse_int(name, arg, lo, hi, &v, d);
  if (!rc) *out = (int)v;
  return rc;
}

static int parse_opts(int argc, char **argv, opts *o, cplab_diag *d) {
  enum { OPT_SHAPES = CPLAB_OPT_PROGRAM, OPT_REPS, OPT_WARMUP, OPT_COPY_MIB, OPT_COMMIT };
  static const struct option longopts[] = {
      {"shapes", required_argument, NULL, OPT_SHAPES}, {"reps", required_argument, NULL, OPT_REPS},
      {"warmup", required_argument, NULL, OPT_WARMUP}, {"copy-mib", required_argument, NULL, OPT_COPY_MIB},
      {"commit", required_argument, NULL, OPT_COMMIT}, {"out", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  *o = (opts){.nshapes = 2, .reps = 30, .warmup = 5, .copy_bytes = (size_t)2048 << 20, .commit = CPLAB_GIT_COMMIT};
  o->shapes[0] = (shape){8192, 8192, 8192};
  o->shapes[1] = (shape){4096, 7168, 2048}; /* tokens x hidden x MoE intermediate: a down projection */
  opterr = 0;
  int opt, rc = 0, mib = 0;
  while (!rc && (opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
    switch (opt) {
      case OPT_SHAPES: rc = cplab_ceil_parse_shapes("--shapes", optarg, o->shapes, MAX_SHAPES, &o->nshapes, d); break;
      case OPT_REPS: rc = parse_count(optarg, "--reps", 1, 1000, &o->reps, d); break;
      case OPT_WARMUP: rc = parse_count(optarg, "--warmup", 0, 100, &o->warmup, d); break;
      case OPT_COPY_MIB:
        if (!(rc = parse_count(optarg, "--copy-mib", 1, 16384, &mib, d))) o->copy_bytes = (size_t)mib << 20;
        break;
      case OPT_COMMIT: o->commit = optarg; break;
      case 'o': o->out = optarg; break;
      case 'h': o->help = 1; break;
      default:
        rc = cplab_cli_getopt_error(argv, "o:h", d);
    }
  }
  if (!rc && optind < argc) rc = cplab_diag_set(d, CPLAB_EUSAGE, "unexpected argument '%s'", argv[optind]);
  return rc;
}

static void usage(FILE *f) {
  fputs("Usage: " PROG " [--shapes MxNxK,...] [--reps N] [--warmup N] [--copy-mib N] [--commit ID] [-o FILE.json]\n"
        "Measures the GPU's ceilings in one run: device-to-device copy bandwidth (read + write counted) and\n"
        "cuBLASLt bf16 and fp8 (e4m3, per-tensor scales) GEMM throughput, C[M][N] = A[M][K] B[N][K]^T.\n"
        "  --shapes LIST   GEMM shapes, multiples of 16 (default 8192x8192x8192,4096x7168x2048)\n"
        "  --reps N        timed repetitions (default 30)\n"
        "  --warmup N      untimed repetitions before them (default 5)\n"
        "  --copy-mib N    bytes per copy in MiB (default 2048)\n"
        "  --commit ID     the commit to record (default: the one configure saw)\n"
        "  -o, --out FILE  also write the results as JSON to FILE\n"
        "  -h, --help      this help\n"
        "Exit status: 0 ok, 2 an error (no GPU, a failed call, a wrong result).\n",
        f);
}

/* ---- report ------------------------------------------------------------------------- */

/* Statistics, the table line and the JSON object of one operation. */
static json_t *report_op(const cplab_ceil_op *o, double *t, int reps) {
  cplab_spread st = cplab_stats_spread(t, (size_t)reps);
  double work, unit;
  cplab_ceil_work(o, &work, &unit);
  printf("%-26s %10.1f %10.1f %10.1f %10.1f %s\n", o->name, 1e6 * st.median, 1e6 * st.p10, 1e6 * st.p90,
         work / st.median / unit, o->gemm ? "TFLOPS" : "GB/s (read+write)");
  return cplab_ceil_json(o, &st);
}

/* The document's context: card, versions, date (UTC), commit, command line. */
static json_t *doc_header(const cplab_gpu_info *g, size_t l2, const opts *o, int argc, char **argv) {
  char date[32], rt[16], drv[16], lt[32], cc[16];
  size_t ltv = cplab_gemm_lib_version();
  cplab_bench_date(date, sizeof date);
  snprintf(rt, sizeof rt, "%d.%d", g->runtime_version / 1000, g->runtime_version % 1000 / 10);
  snprintf(drv, sizeof drv, "%d.%d", g->driver_version / 1000, g->driver_version % 1000 / 10);
  snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
  snprintf(lt, sizeof lt, "%zu.%zu.%zu", ltv / 10000, ltv % 10000 / 100, ltv % 100);
  char *cmd = cplab_bench_command(argc, argv);
  if (!cmd) {
    cplab_diag d = {0};
    cplab_diag_set(&d, CPLAB_ENOMEM, "out of host memory");
    die(&d);
  }
  json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:i, s:i, s:I, s:I, s:s}, s:s, s:s, s:s, s:i, s:i, s:s, s:s}",
                          "bench", "ceilings", "date", date, "commit", o->commit, "command", cmd, "card", "name",
                          g->name, "count", g->device_count, "sm_count", g->sm_count, "l2_bytes", (json_int_t)l2,
                          "memory_bytes", (json_int_t)g->global_mem_bytes, "compute_capability", cc,
                          "cuda_runtime_version", rt, "cuda_driver_version", drv, "cublaslt_version", lt, "reps",
                          o->reps, "warmup", o->warmup, "bandwidth_convention",
                          "copy: GB/s = 2 x bytes copied (read + write) / time / 1e9", "flop_convention",
                          "GEMM: 2 x M x N x K per GEMM, TFLOPS = 1e12 FLOP/s");
  free(cmd);
  return doc;
}

/* ---- main ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  cplab_diag d = {0};
  opts o;
  cplab_gpu_info g;
  size_t l2 = 0;
  int rc = parse_opts(argc, argv, &o, &d);
  if (rc) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  if (o.help) {
    usage(stdout);
    return CPLAB_EXIT_OK;
  }
  if ((rc = cplab_gpu_query(&g, &d)) != 0) {
    if (rc == CPLAB_ENODEV) cplab_diag_prefix(&d, "this benchmark needs a GPU: ");
    die(&d);
  }
  ck_lab(cplab_bench_l2_bytes(&l2, &d), &d);
  void *stream = NULL;
  cplab_gemm *gemm = NULL;
  ck_lab(cplab_stream_create(&stream, &d), &d);
  ck_lab(cplab_gemm_create(&gemm, &d), &d);

  int nops = 1 + 2 * o.nshapes;
  cplab_ceil_op *ops = calloc((size_t)nops, sizeof *ops);
  double **t = calloc((size_t)nops, sizeof *t);
  void **ctx = calloc((size_t)nops, sizeof *ctx);
  uint64_t rng = SEED;
  if (!ops || !t || !ctx) {
    cplab_diag_set(&d, CPLAB_ENOMEM, "out of host memory");
    die(&d);
  }
  ck_lab(cplab_ceil_setup_copy(&ops[0], o.copy_bytes, 4 * l2, &d), &d);
  for (int s = 0; s < o.nshapes; s++) {
    ck_lab(cplab_ceil_setup_gemm(&ops[1 + 2 * s], o.shapes[s], 0, gemm, l2, &rng, &d), &d);
    ck_lab(cplab_ceil_setup_gemm(&ops[2 + 2 * s], o.shapes[s], 1, gemm, l2, &rng, &d), &d);
  }
  printf("# " PROG ": %s, %d SMs, L2 %zu MiB, CUDA runtime %d, cuBLASLt %zu, commit %s\n", g.name, g.sm_count,
         l2 >> 20, g.runtime_version, cplab_gemm_lib_version(), o.commit);
  for (int i = 0; i < nops; i++) {
    ck_lab(cplab_ceil_check(&ops[i], stream, &rng, stdout, &d), &d);
    ctx[i] = &ops[i];
    if (!(t[i] = malloc((size_t)o.reps * sizeof **t))) {
      cplab_diag_set(&d, CPLAB_ENOMEM, "out of host memory");
      die(&d);
    }
  }
  fflush(stdout);

  double busy = 0;
  ck_lab(cplab_bench_time(nops, cplab_ceil_run, ctx, o.reps, o.warmup, stream, t, &busy, &d), &d);
  printf("# times in us over %d repetitions (after %d warm-up), operations interleaved; rate at the median time\n"
         "#%-25s %10s %10s %10s %10s\n",
         o.reps, o.warmup, "op", "median", "p10", "p90", "rate");
  json_t *doc = doc_header(&g, l2, &o, argc, argv), *results = json_array();
  for (int i = 0; i < nops; i++) json_array_append_new(results, report_op(&ops[i], t[i], o.reps));
  printf("# GPU busy %.1f%% of the timed span%s\n", 100 * busy,
         busy < 0.95 ? ": WARNING, the host fell behind; some times may include host overhead" : "");
  json_object_set_new(doc, "gpu_busy_fraction", json_real(busy));
  json_object_set_new(doc, "results", results);
  if (o.out) {
    char *text = json_dumps(doc, JSON_INDENT(2));
    if (!text) {
      cplab_diag_set(&d, CPLAB_ENOMEM, "cannot serialise the JSON document");
      die(&d);
    }
    ck_lab(cplab_atomic_write(o.out, text, strlen(text), &d), &d);
    free(text);
  }
  json_decref(doc);
  for (int i = 0; i < nops; i++) cplab_ceil_free(&ops[i]), free(t[i]);
  free(ops), free(t), free(ctx);
  ck_lab(cplab_gemm_destroy(gemm, &d), &d);
  ck_lab(cplab_stream_destroy(stream, &d), &d);
  return CPLAB_EXIT_OK;
}
