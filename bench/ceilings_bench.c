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
 * Exit 0 ok, 2 on any error (no GPU, a failed call, a wrong result). */
#include <getopt.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "config.h"
#include "cplab/cli.h"
#include "cplab/fp8.h"
#include "cplab_kernels.h"

#define PROG "cplab-ceilings-bench"
#define MAX_SHAPES 8
#define MAX_SETS 16
#define COPY_BUFS 3 /* copy t: buffer t mod 3 -> buffer (t + 1) mod 3 */
#define SAMPLES 256 /* checked elements per GEMM */
#define SEED 0x6365696c696e6773ULL

typedef struct shape {
  int64_t m, n, k;
} shape;

typedef struct opts {
  shape shapes[MAX_SHAPES];
  int nshapes, reps, warmup, help;
  size_t copy_bytes;
  const char *out, *commit;
} opts;

/* One operation: the copy (gemm == 0) or one GEMM of one dtype and shape,
 * with its rotation sets of inputs and outputs. */
typedef struct op {
  char name[48];
  int gemm, fp8, sets, turn;
  shape s;
  void *a[MAX_SETS], *b[MAX_SETS], *c[MAX_SETS]; /* copy: a = buffers */
  float *scales;                                 /* fp8: device a_scale, b_scale */
  void *host_a, *host_b;                         /* set 0's inputs, for the check */
  double *t;                                     /* reps times, seconds */
} op;

static const float fp8_scale[5] = {0.5f, 0, 0, 0, 0.25f}; /* powers of two (the reference stays exact); a_scale at
                                                            [0], b_scale at [4]: 16-byte aligned, as cplab_gemm_fp8 asks */

/* ---- errors: every failure ends the program with status 2 ------------------ */

static _Noreturn void die(const cplab_diag *d) {
  cplab_diag_report(stderr, PROG, d);
  exit(CPLAB_EXIT_ERROR);
}
static void ck_lab(int rc, const cplab_diag *d) {
  if (rc) die(d);
}
static void ck_cuda_at(cudaError_t e, const char *call, int line) {
  cplab_diag d = {0};
  if (e == cudaSuccess) return;
  cplab_diag_set(&d, CPLAB_ECUDA, "%s:%d: %s: %s", __FILE__, line, call, cudaGetErrorString(e));
  die(&d);
}
#define CK_CUDA(call) ck_cuda_at((call), #call, __LINE__)

static void *host_alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  cplab_diag d = {0};
  if (!p) {
    cplab_diag_set(&d, CPLAB_ENOMEM, "out of host memory (%zu bytes)", bytes);
    die(&d);
  }
  return p;
}
static void *dev_alloc(size_t bytes) {
  void *p = NULL;
  cplab_diag d = {0};
  ck_lab(cplab_dev_alloc(&p, bytes, &d), &d);
  return p;
}

/* ---- options ------------------------------------------------------------------ */

/* --shapes MxNxK,...: each dimension a multiple of 16 (fp8 needs it) in [16, 65536]. */
static int parse_shapes(const char *arg, opts *o, cplab_diag *d) {
  o->nshapes = 0;
  for (const char *p = arg; *p;) {
    unsigned long long v[3];
    int used = 0;
    if (sscanf(p, "%llux%llux%llu%n", &v[0], &v[1], &v[2], &used) != 3 || (p[used] != ',' && p[used] != '\0'))
      CPLAB_FAIL(d, CPLAB_EUSAGE, "--shapes: expected MxNxK[,MxNxK...], got '%s'", arg);
    for (int i = 0; i < 3; i++)
      if (v[i] < 16 || v[i] > 65536 || v[i] % 16)
        CPLAB_FAIL(d, CPLAB_EUSAGE, "--shapes: %llu is not a multiple of 16 in [16, 65536] (fp8 GEMMs need it)",
                   v[i]);
    if (o->nshapes == MAX_SHAPES) CPLAB_FAIL(d, CPLAB_EUSAGE, "--shapes: more than %d shapes", MAX_SHAPES);
    o->shapes[o->nshapes++] = (shape){(int64_t)v[0], (int64_t)v[1], (int64_t)v[2]};
    p += used + (p[used] == ',');
  }
  if (o->nshapes == 0) CPLAB_FAIL(d, CPLAB_EUSAGE, "--shapes: empty list");
  return 0;
}

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
      case OPT_SHAPES: rc = parse_shapes(optarg, o, d); break;
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

/* ---- set-up -------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
/* Uniform in [-r, r). */
static float uniform(uint64_t *s, float r) { return (float)((double)(splitmix(s) >> 11) * 0x1p-52 - 1.0) * r; }

/* n random bf16 in [-1, 1) or e4m3 in [-4, 4) (all binades, both signs). */
static void *random_matrix(size_t n, int fp8, uint64_t *rng) {
  if (fp8) {
    uint8_t *p = host_alloc(n);
    for (size_t i = 0; i < n; i++) p[i] = cplab_e4m3_from_f32(uniform(rng, 4.0f));
    return p;
  }
  uint16_t *p = host_alloc(2 * n);
  for (size_t i = 0; i < n; i++) p[i] = cplab_bf16_from_f32(uniform(rng, 1.0f));
  return p;
}

/* A GEMM operation: random inputs uploaded to set 0 and copied to the other
 * sets; enough sets that their inputs and outputs span 4x the L2. */
static void setup_gemm(op *o, shape s, int fp8, size_t l2, uint64_t *rng) {
  cplab_diag d = {0};
  size_t es = fp8 ? 1 : 2, ab = (size_t)(s.m * s.k) * es, bb = (size_t)(s.n * s.k) * es, cb = (size_t)(s.m * s.n) * 2;
  size_t sets = (4 * l2 + ab + bb + cb - 1) / (ab + bb + cb);
  *o = (op){.gemm = 1, .fp8 = fp8, .s = s, .sets = sets < 2 ? 2 : sets > MAX_SETS ? MAX_SETS : (int)sets};
  snprintf(o->name, sizeof o->name, "%s %lldx%lldx%lld", fp8 ? "fp8" : "bf16", (long long)s.m, (long long)s.n,
           (long long)s.k);
  o->host_a = random_matrix((size_t)(s.m * s.k), fp8, rng);
  o->host_b = random_matrix((size_t)(s.n * s.k), fp8, rng);
  for (int i = 0; i < o->sets; i++) {
    o->a[i] = dev_alloc(ab), o->b[i] = dev_alloc(bb), o->c[i] = dev_alloc(cb);
    ck_lab(i ? cplab_dev_copy(o->a[i], o->a[0], ab, &d) : cplab_dev_upload(o->a[0], o->host_a, ab, &d), &d);
    ck_lab(i ? cplab_dev_copy(o->b[i], o->b[0], bb, &d) : cplab_dev_upload(o->b[0], o->host_b, bb, &d), &d);
  }
  if (fp8) {
    o->scales = dev_alloc(sizeof fp8_scale);
    ck_lab(cplab_dev_upload(o->scales, fp8_scale, sizeof fp8_scale, &d), &d);
  }
}

static void setup_copy(op *o, size_t bytes) {
  *o = (op){.sets = COPY_BUFS};
  snprintf(o->name, sizeof o->name, "copy %zu MiB", bytes >> 20);
  o->s.k = (int64_t)bytes;
  for (int i = 0; i < COPY_BUFS; i++) o->a[i] = dev_alloc(bytes);
}

static void free_op(op *o) {
  cplab_diag d = {0};
  for (int i = 0; i < o->sets; i++) {
    ck_lab(cplab_dev_free(o->a[i], &d), &d);
    ck_lab(cplab_dev_free(o->b[i], &d), &d);
    ck_lab(cplab_dev_free(o->c[i], &d), &d);
  }
  ck_lab(cplab_dev_free(o->scales, &d), &d);
  free(o->host_a), free(o->host_b), free(o->t);
}

/* Enqueue one run of the operation on its next rotation set. */
static void run_op(op *o, cplab_gemm *g, cudaStream_t stream) {
  cplab_diag d = {0};
  int s = o->turn++ % o->sets;
  if (!o->gemm) {
    CK_CUDA(cudaMemcpyAsync(o->a[(s + 1) % COPY_BUFS], o->a[s], (size_t)o->s.k, cudaMemcpyDeviceToDevice, stream));
  } else if (o->fp8) {
    ck_lab(cplab_gemm_fp8(g, o->s.m, o->s.n, o->s.k, o->a[s], o->b[s], o->scales, o->scales + 4, o->c[s], stream, &d),
           &d);
  } else {
    ck_lab(cplab_gemm_bf16(g, o->s.m, o->s.n, o->s.k, o->a[s], o->b[s], o->c[s], stream, &d), &d);
  }
}

/* ---- correctness before timing --------------------------------------------------- */

static double elem(const op *o, const void *m, size_t i) {
  return o->fp8 ? cplab_e4m3_to_f32(((const uint8_t *)m)[i]) : cplab_bf16_to_f32(((const uint16_t *)m)[i]);
}

/* Run o once on set 0 and check it; 0 ok, else CPLAB_EMISMATCH with the why. */
static int check_op(op *o, cplab_gemm *g, cudaStream_t stream, uint64_t *rng, cplab_diag *d) {
  if (!o->gemm) { /* buffer i holds bytes i + 1; after the copy, buffer 1 holds 1s */
    uint8_t probe[3][4096];
    size_t at[3] = {0, (size_t)o->s.k / 2, (size_t)o->s.k - sizeof probe[0]};
    for (int i = 0; i < COPY_BUFS; i++) ck_lab(cplab_poison_bytes(o->a[i], (size_t)o->s.k, (uint8_t)(i + 1), stream, d), d);
    run_op(o, g, stream);
    ck_lab(cplab_dev_sync(stream, d), d);
    for (int p = 0; p < 3; p++) {
      ck_lab(cplab_dev_download(probe[p], (uint8_t *)o->a[1] + at[p], sizeof probe[p], d), d);
      for (size_t i = 0; i < sizeof probe[p]; i++)
        if (probe[p][i] != 1) CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: byte %zu not copied", o->name, at[p] + i);
    }
    return 0;
  }
  int64_t m = o->s.m, n = o->s.n, k = o->s.k, count = m * n, nan_at = -1;
  uint16_t *c = host_alloc((size_t)count * 2);
  double scale = o->fp8 ? (double)fp8_scale[0] * fp8_scale[4] : 1.0, num = 0, den = 0, worst = 0;
  ck_lab(cplab_poison_bf16(o->c[0], (size_t)count, stream, d), d);
  run_op(o, g, stream);
  ck_lab(cplab_dev_sync(stream, d), d);
  ck_lab(cplab_dev_download(c, o->c[0], (size_t)count * 2, d), d);
  for (int64_t e = 0; e < count && nan_at < 0; e++)
    if ((c[e] & 0x7FFF) > 0x7F80) nan_at = e;
  for (int t = 0; t < SAMPLES && nan_at < 0; t++) { /* the four corners, then random elements */
    int64_t i = t < 4 ? (t & 1) * (m - 1) : (int64_t)(splitmix(rng) % (uint64_t)m);
    int64_t j = t < 4 ? (t >> 1) * (n - 1) : (int64_t)(splitmix(rng) % (uint64_t)n);
    double ref = 0, abs_sum = 0;
    for (int64_t l = 0; l < k; l++) {
      double x = elem(o, o->host_a, (size_t)(i * k + l)) * elem(o, o->host_b, (size_t)(j * k + l));
      ref += x, abs_sum += fabs(x);
    }
    ref *= scale, abs_sum *= scale;
    double got = cplab_bf16_to_f32(c[i * n + j]), err = fabs(got - ref), allow = 0x1p-8 * fabs(ref) + 0x1p-10 * abs_sum;
    num += err * err, den += ref * ref;
    if (err / allow > worst) worst = err / allow;
    if (!(err <= allow)) {
      free(c);
      CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: C[%lld][%lld] = %.9g, reference %.9g (allowed error %.3g)", o->name,
                 (long long)i, (long long)j, got, ref, allow);
    }
  }
  free(c);
  if (nan_at >= 0)
    CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: C[%lld][%lld] is NaN: not written", o->name, (long long)(nan_at / n),
               (long long)(nan_at % n));
  if (!(sqrt(num / den) < 1e-2))
    CPLAB_FAIL(d, CPLAB_EMISMATCH, "%s: relative Frobenius error %.3g over %d samples", o->name, sqrt(num / den),
               SAMPLES);
  printf("# check %-24s: %d sampled elements, rel. Frobenius error %.2e, worst error/allowance %.3f\n", o->name,
         SAMPLES, sqrt(num / den), worst);
  return 0;
}

/* ---- timing ------------------------------------------------------------------------- */

/* Enqueue warmup + reps rounds of every operation back to back, one event pair
 * per run, then wait; o[i].t receives the timed runs. Returns the fraction of
 * the timed span during which an operation ran (near 1: the host kept ahead). */
static double time_ops(op *o, int nops, int reps, int warmup, cplab_gemm *g, cudaStream_t stream) {
  int runs = (warmup + reps) * nops;
  cudaEvent_t *ev = host_alloc(2 * (size_t)runs * sizeof *ev);
  for (int i = 0; i < 2 * runs; i++) CK_CUDA(cudaEventCreate(&ev[i]));
  for (int r = 0, e = 0; r < warmup + reps; r++)
    for (int i = 0; i < nops; i++, e += 2) {
      CK_CUDA(cudaEventRecord(ev[e], stream));
      run_op(&o[i], g, stream);
      CK_CUDA(cudaEventRecord(ev[e + 1], stream));
    }
  CK_CUDA(cudaStreamSynchronize(stream));
  CK_CUDA(cudaGetLastError());
  double busy = 0;
  float ms = 0;
  for (int i = 0; i < nops; i++) o[i].t = host_alloc((size_t)reps * sizeof(double));
  for (int r = warmup, e = 2 * warmup * nops; r < warmup + reps; r++)
    for (int i = 0; i < nops; i++, e += 2) {
      CK_CUDA(cudaEventElapsedTime(&ms, ev[e], ev[e + 1]));
      o[i].t[r - warmup] = 1e-3 * ms, busy += 1e-3 * ms;
    }
  CK_CUDA(cudaEventElapsedTime(&ms, ev[2 * warmup * nops], ev[2 * runs - 1]));
  for (int i = 0; i < 2 * runs; i++) CK_CUDA(cudaEventDestroy(ev[i]));
  free(ev);
  return busy / (1e-3 * ms);
}

/* ---- report ------------------------------------------------------------------------- */

/* time_us statistics and the rate at the median, p10 and p90 times: TFLOPS
 * for a GEMM, GB/s (read + write) for the copy. Prints the table line. */
static json_t *report_op(op *o, int reps) {
  double *v = o->t, work, unit;
  gsl_sort(v, 1, (size_t)reps);
  double med = gsl_stats_median_from_sorted_data(v, 1, (size_t)reps);
  double p10 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)reps, 0.1);
  double p90 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)reps, 0.9);
  if (o->gemm) work = 2.0 * (double)o->s.m * (double)o->s.n * (double)o->s.k, unit = 1e12;
  else work = 2.0 * (double)o->s.k, unit = 1e9;
  json_t *r = json_pack("{s:s, s:{s:f, s:f, s:f, s:f, s:f}}", "op", o->name, "time_us", "median", 1e6 * med, "min",
                        1e6 * v[0], "max", 1e6 * v[reps - 1], "p10", 1e6 * p10, "p90", 1e6 * p90);
  json_t *rate = json_pack("{s:f, s:f, s:f}", "at_median", work / med / unit, "at_p10_time", work / p10 / unit,
                           "at_p90_time", work / p90 / unit);
  if (o->gemm) {
    json_object_set_new(r, "dtype", json_string(o->fp8 ? "e4m3 x e4m3 -> bf16, per-tensor scales, fp32 accumulation"
                                                       : "bf16 x bf16 -> bf16, fp32 accumulation"));
    json_object_set_new(r, "shape", json_pack("{s:I, s:I, s:I}", "m", (json_int_t)o->s.m, "n", (json_int_t)o->s.n,
                                              "k", (json_int_t)o->s.k));
    json_object_set_new(r, "flop", json_real(work));
    json_object_set_new(r, "tflops", rate);
  } else {
    json_object_set_new(r, "bytes_per_copy", json_integer((json_int_t)o->s.k));
    json_object_set_new(r, "bytes_counted", json_integer((json_int_t)(2 * o->s.k)));
    json_object_set_new(r, "gbps", rate);
  }
  json_object_set_new(r, "rotation_sets", json_integer(o->sets));
  printf("%-26s %10.1f %10.1f %10.1f %10.1f %s\n", o->name, 1e6 * med, 1e6 * p10, 1e6 * p90, work / med / unit,
         o->gemm ? "TFLOPS" : "GB/s (read+write)");
  return r;
}

/* The document's context: card, versions, date (UTC), commit, command line. */
static json_t *doc_header(const cplab_gpu_info *g, size_t l2, const opts *o, int argc, char **argv) {
  char date[32], rt[16], drv[16], lt[32], cc[16];
  time_t now = time(NULL);
  size_t ltv = cplab_gemm_lib_version(), len = 1;
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  snprintf(rt, sizeof rt, "%d.%d", g->runtime_version / 1000, g->runtime_version % 1000 / 10);
  snprintf(drv, sizeof drv, "%d.%d", g->driver_version / 1000, g->driver_version % 1000 / 10);
  snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
  snprintf(lt, sizeof lt, "%zu.%zu.%zu", ltv / 10000, ltv % 10000 / 100, ltv % 100);
  for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
  char *cmd = host_alloc(len), *p = cmd;
  *cmd = '\0';
  for (int i = 0; i < argc; i++) p += sprintf(p, i ? " %s" : "%s", argv[i]);
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
  int rc = parse_opts(argc, argv, &o, &d), l2 = 0;
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
  CK_CUDA(cudaSetDevice(0)); /* the device cplab_gpu_query describes */
  CK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  cudaStream_t stream;
  cplab_gemm *gemm = NULL;
  CK_CUDA(cudaStreamCreate(&stream));
  ck_lab(cplab_gemm_create(&gemm, &d), &d);

  int nops = 1 + 2 * o.nshapes;
  op *ops = calloc((size_t)nops, sizeof *ops);
  uint64_t rng = SEED;
  if (!ops) {
    cplab_diag_set(&d, CPLAB_ENOMEM, "out of host memory");
    die(&d);
  }
  setup_copy(&ops[0], o.copy_bytes);
  for (int s = 0; s < o.nshapes; s++) {
    setup_gemm(&ops[1 + 2 * s], o.shapes[s], 0, (size_t)l2, &rng);
    setup_gemm(&ops[2 + 2 * s], o.shapes[s], 1, (size_t)l2, &rng);
  }
  printf("# " PROG ": %s, %d SMs, L2 %d MiB, CUDA runtime %d, cuBLASLt %zu, commit %s\n", g.name, g.sm_count,
         l2 >> 20, g.runtime_version, cplab_gemm_lib_version(), o.commit);
  for (int i = 0; i < nops; i++)
    if (check_op(&ops[i], gemm, stream, &rng, &d)) die(&d);
  fflush(stdout);

  double busy = time_ops(ops, nops, o.reps, o.warmup, gemm, stream);
  printf("# times in us over %d repetitions (after %d warm-up), operations interleaved; rate at the median time\n"
         "#%-25s %10s %10s %10s %10s\n",
         o.reps, o.warmup, "op", "median", "p10", "p90", "rate");
  json_t *doc = doc_header(&g, (size_t)l2, &o, argc, argv), *results = json_array();
  for (int i = 0; i < nops; i++) json_array_append_new(results, report_op(&ops[i], o.reps));
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
    ck_lab(cplab_write_file_atomic(o.out, text, strlen(text), &d), &d);
    free(text);
  }
  json_decref(doc);
  for (int i = 0; i < nops; i++) free_op(&ops[i]);
  free(ops);
  ck_lab(cplab_gemm_destroy(gemm, &d), &d);
  CK_CUDA(cudaStreamDestroy(stream));
  return CPLAB_EXIT_OK;
}
