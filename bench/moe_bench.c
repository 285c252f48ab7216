/* cplab-moe-bench: the MoE block's two PCP paths on real GPUs, checked
 * against each other, then timed (reference vllm-pcp-dcp.md §8).
 *
 * One MPI rank per GPU; the world is one PCP group of P ranks (tp 1), and
 * rank q holds MoE shard q of P (cplab_moe.h: routed expert e on shard
 * e mod P, the shared MLP cut in P slices). Every rank holds the same n rows
 * x: decode rows, replicated on every PCP rank, the fast path's condition.
 *   general: ncclAllGather of x (P·n rows, rank-major), the shard's partial
 *            over all P·n rows, ncclReduceScatter (sum) back to the rank's n
 *            rows;
 *   fast:    the shard's partial over its n rows, ncclAllReduce (sum).
 * Both give every rank its n rows summed over the P shards. Before timing,
 * each batch is checked on every rank (check_batch): the routing of the
 * rank's rows equal between the paths (a row may differ only at a near-tie of
 * the bf16 router logits, reported and excluded), and the outputs equal
 * within test_gpu_moe's tolerance, bit-identical elements counted.
 *
 * Timing (perf-anchors.md §5): CUDA events around each operation on the
 * rank's stream, the stream drained and all ranks at a barrier before each;
 * a repetition's time is the maximum over ranks. The operations (each path,
 * and each path's MoE kernels alone, without its collectives) alternate
 * inside a repetition, eagerly and as replays of a CUDA graph captured from
 * the same calls (the graph modes of §9: the fast path is what full decode
 * graphs replay). The weights of a shard (GiB at the presets' sizes) dwarf
 * the L2, so no input rotation is needed. Exit 0 ok, 2 on any error or a
 * failed check.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/cli.h"
#include "cplab/model.h"
#include "cplab_kernels.h"
#include "cplab_moe.h"
#include "moe_compare.h"
#include "mpibench.h"

#define PROG "cplab-moe-bench"
const char mpibench_prog[] = PROG;
#define SEED 0x6d6f652d62656e01ULL /* weights and inputs; any fixed value */
#define X_TENSOR 0x6d6f6578u        /* cplab_gen_bf16's tensor id of x */
#define MAX_BATCHES 16
#define MAX_ROWS (1 << 16)

enum { OP_GENERAL, OP_FAST, OP_GENERAL_MOE, OP_FAST_MOE, NOPS };
static const char *const op_key[NOPS] = {"general", "fast", "general_moe_only", "fast_moe_only"};
enum { MODE_EAGER, MODE_GRAPH, NMODES };
static const char *const mode_key[NMODES] = {"eager", "graph"};

typedef struct opts {
  int64_t batch[MAX_BATCHES];
  int nbatch, reps, warmup, help;
  const char *preset, *out;
  cplab_moe_shape shape; /* dim .. shared; shards and shard set per rank */
} opts;

typedef struct bufs { /* one batch's buffers and plans on this rank */
  int64_t n, rows_all;  /* n rows per rank; P·n gathered */
  uint16_t *x, *x_all;  /* bf16 [n][d], [P·n][d] */
  float *part_all;      /* the general path's partial, [P·n][d] */
  float *out_general;   /* [n][d] */
  float *out_fast;      /* the fast path's partial, reduced in place: [n][d] */
  cplab_moe_plan *plan_all, *plan_n;
  cudaGraphExec_t graph[NOPS];
} bufs;

/* ---- options ---------------------------------------------------------------- */

/* --shape d,E,k,I,shared: the MoE block's sizes instead of the preset's. */
static int parse_shape(const char *arg, cplab_moe_shape *s, cplab_diag *d) {
  int64_t v[5];
  int n = 0;
  if (mpibench_parse_list(arg, "--shape", 1 << 20, 5, v, &n, d)) return CPLAB_EUSAGE;
  if (n != 5) CPLAB_FAIL(d, CPLAB_EUSAGE, "--shape: want 5 values d,experts,top_k,inter,shared, got %d", n);
  *s = (cplab_moe_shape){(int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4], 1, 0};
  return 0;
}

static int shape_of_preset(const char *name, cplab_moe_shape *s, cplab_diag *d) {
  cplab_model m;
  if (cplab_model_preset(name, &m) != 0)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--preset: unknown model '%s' (deepseek-v3.2 or glm-5)", name);
  *s = (cplab_moe_shape){(int)m.hidden_size, (int)m.n_routed_experts, (int)m.n_active_experts,
                         (int)m.moe_intermediate_size, (int)m.n_shared_experts, 1, 0};
  return 0;
}

static int parse_opts(int argc, char **argv, opts *o, cplab_diag *d) {
  enum { OPT_BATCH = CPLAB_OPT_PROGRAM, OPT_REPS, OPT_WARMUP, OPT_PRESET, OPT_SHAPE };
  static const struct option longopts[] = {
      {"batch", required_argument, NULL, OPT_BATCH},   {"reps", required_argument, NULL, OPT_REPS},
      {"warmup", required_argument, NULL, OPT_WARMUP}, {"preset", required_argument, NULL, OPT_PRESET},
      {"shape", required_argument, NULL, OPT_SHAPE},   {"out", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},                {NULL, 0, NULL, 0}};
  static const int64_t default_batch[] = {1, 4, 16, 64, 256};
  const char *shape = NULL;
  *o = (opts){.nbatch = 5, .reps = 30, .warmup = 5, .preset = "glm-5"};
  memcpy(o->batch, default_batch, sizeof default_batch);
  opterr = 0; /* getopt must not print: rank 0 reports, once */
  int opt, rc = 0;
  while (!rc && (opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
    switch (opt) {
      case OPT_BATCH: rc = mpibench_parse_list(optarg, "--batch", MAX_ROWS, MAX_BATCHES, o->batch, &o->nbatch, d); break;
      case OPT_REPS: rc = mpibench_parse_count(optarg, "--reps", 1, 100000, &o->reps, d); break;
      case OPT_WARMUP: rc = mpibench_parse_count(optarg, "--warmup", 0, 10000, &o->warmup, d); break;
      case OPT_PRESET: o->preset = optarg; break;
      case OPT_SHAPE: shape = optarg; break;
      case 'o': o->out = optarg; break;
      case 'h': o->help = 1; break;
      default: rc = cplab_cli_getopt_error(argv, "o:h", d);
    }
  }
  if (!rc && optind < argc) rc = cplab_diag_set(d, CPLAB_EUSAGE, "unexpected argument '%s'", argv[optind]);
  if (!rc) rc = shape ? parse_shape(shape, &o->shape, d) : shape_of_preset(o->preset, &o->shape, d);
  if (!rc && shape) o->preset = NULL;
  if (!rc && (rc = cplab_moe_shape_check(&o->shape, d)) != 0) {
    cplab_diag_prefix(d, "%s: ", shape ? "--shape" : "--preset");
    rc = d->code = CPLAB_EUSAGE;
  }
  return rc;
}

static void usage(FILE *f) {
  fputs("Usage: mpirun -np P " PROG " [--preset NAME | --shape d,E,k,I,shared] [--batch LIST] [--reps N]\n"
        "                          [--warmup N] [-o FILE.json]\n"
        "The MoE block's two PCP paths, one MPI rank per GPU, rank q holding MoE shard q of P, every rank the\n"
        "same n decode rows: general = all-gather, the shard over P·n rows, reduce-scatter; fast = the shard\n"
        "over its n rows, all-reduce. Checks that both give the same output, then times both, eagerly and as\n"
        "CUDA graph replays, with and without their collectives.\n"
        "  --preset NAME   the MoE sizes of a model: glm-5 (default) or deepseek-v3.2\n"
        "  --shape LIST    or explicit sizes: hidden d, experts E, top_k, intermediate I, shared experts\n"
        "  --batch LIST    rows per rank, comma-separated (default 1,4,16,64,256)\n"
        "  --reps N        timed repetitions per batch and mode (default 30)\n"
        "  --warmup N      untimed repetitions before them (default 5)\n"
        "  -o, --out FILE  also write the results as JSON to FILE\n"
        "  -h, --help      this help\n"
        "Exit status: 0 ok, 2 an error (bad usage, no GPU, a failed call, paths that disagree).\n",
        f);
}

/* ---- buffers, plans and the paths ----------------------------------------------- */

static void setup_batch(const mpibench_ctx *c, cplab_moe *moe, cplab_gemm *gemm, int64_t n, bufs *b) {
  cplab_diag d = {0};
  int64_t dim = cplab_moe_shape_of(moe)->dim;
  *b = (bufs){.n = n, .rows_all = (int64_t)c->world * n};
  mpibench_ck_lab(cplab_dev_alloc((void **)&b->x, sizeof(uint16_t) * (size_t)(n * dim), &d), &d);
  mpibench_ck_lab(cplab_dev_alloc((void **)&b->x_all, sizeof(uint16_t) * (size_t)(b->rows_all * dim), &d), &d);
  mpibench_ck_lab(cplab_dev_alloc((void **)&b->part_all, sizeof(float) * (size_t)(b->rows_all * dim), &d), &d);
  mpibench_ck_lab(cplab_dev_alloc((void **)&b->out_general, sizeof(float) * (size_t)(n * dim), &d), &d);
  mpibench_ck_lab(cplab_dev_alloc((void **)&b->out_fast, sizeof(float) * (size_t)(n * dim), &d), &d);
  /* The same rows on every rank (same seed and tensor), as decode rows are. */
  mpibench_ck_lab(cplab_gen_bf16(SEED, X_TENSOR, b->x, n * dim, 1.0f, c->stream, &d), &d);
  CK_NCCL(ncclAllGather(b->x, b->x_all, (size_t)(n * dim), ncclBfloat16, c->comm, c->stream));
  mpibench_ck_lab(cplab_dev_sync(c->stream, &d), &d);
  mpibench_ck_lab(cplab_moe_plan_create(moe, gemm, b->x_all, b->rows_all, &b->plan_all, &d), &d);
  mpibench_ck_lab(cplab_moe_plan_create(moe, gemm, b->x, n, &b->plan_n, &d), &d);
}

static void free_batch(bufs *b) {
  cplab_diag d = {0};
  for (int op = 0; op < NOPS; op++)
    if (b->graph[op]) CK_CUDA(cudaGraphExecDestroy(b->graph[op]));
  cplab_moe_plan_destroy(b->plan_all);
  cplab_moe_plan_destroy(b->plan_n);
  void *dev[] = {b->x, b->x_all, b->part_all, b->out_general, b->out_fast};
  for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) mpibench_ck_lab(cplab_dev_free(dev[i], &d), &d);
}

/* Enqueue operation op on the rank's stream. */
static void run_op(const mpibench_ctx *c, int64_t dim, bufs *b, int op) {
  cplab_diag d = {0};
  size_t count = (size_t)(b->n * dim);
  switch (op) {
    case OP_GENERAL:
    case OP_GENERAL_MOE:
      if (op == OP_GENERAL) CK_NCCL(ncclAllGather(b->x, b->x_all, count, ncclBfloat16, c->comm, c->stream));
      mpibench_ck_lab(cplab_moe_run(b->plan_all, b->x_all, b->part_all, c->stream, &d), &d);
      if (op == OP_GENERAL)
        CK_NCCL(ncclReduceScatter(b->part_all, b->out_general, count, ncclFloat32, ncclSum, c->comm, c->stream));
      break;
    default:
      mpibench_ck_lab(cplab_moe_run(b->plan_n, b->x, b->out_fast, c->stream, &d), &d);
      if (op == OP_FAST) CK_NCCL(ncclAllReduce(b->out_fast, b->out_fast, count, ncclFloat32, ncclSum, c->comm, c->stream));
  }
}

/* A CUDA graph of each operation, captured from the same calls. Every rank
 * captures the same collectives in the same order. */
static void capture(const mpibench_ctx *c, int64_t dim, bufs *b) {
  for (int op = 0; op < NOPS; op++) {
    cudaGraph_t g;
    CK_CUDA(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    run_op(c, dim, b, op);
    CK_CUDA(cudaStreamEndCapture(c->stream, &g));
    CK_CUDA(cudaGraphInstantiate(&b->graph[op], g, 0));
    CK_CUDA(cudaGraphDestroy(g));
  }
}

/* ---- the check ---------------------------------------------------------------------- */

/* Run both paths once on poisoned outputs and compare on this rank. */
static moe_verdict check_batch(const mpibench_ctx *c, const cplab_moe_shape *sh, bufs *b) {
  cplab_diag d = {0};
  int64_t n = b->n, dim = sh->dim, E = sh->experts;
  int k = sh->top_k;
  size_t count = (size_t)(n * dim);
  mpibench_ck_lab(cplab_poison_bytes(b->out_general, count * sizeof(float), 0xFF, c->stream, &d), &d);
  mpibench_ck_lab(cplab_poison_bytes(b->out_fast, count * sizeof(float), 0xFF, c->stream, &d), &d);
  run_op(c, dim, b, OP_GENERAL);
  run_op(c, dim, b, OP_FAST);
  mpibench_ck_lab(cplab_dev_sync(c->stream, &d), &d);
  mpibench_ck_lab(cplab_moe_plan_check(b->plan_all, &d), &d);
  mpibench_ck_lab(cplab_moe_plan_check(b->plan_n, &d), &d);
  float *g = mpibench_host_alloc(count * sizeof *g), *f = mpibench_host_alloc(count * sizeof *f);
  int32_t *eg = mpibench_host_alloc((size_t)(n * k) * sizeof *eg), *ef = mpibench_host_alloc((size_t)(n * k) * sizeof *ef);
  uint16_t *lg = mpibench_host_alloc((size_t)(n * E) * sizeof *lg), *lf = mpibench_host_alloc((size_t)(n * E) * sizeof *lf);
  const int32_t *dev_e;
  const uint16_t *dev_l;
  mpibench_ck_lab(cplab_dev_download(g, b->out_general, count * sizeof *g, &d), &d);
  mpibench_ck_lab(cplab_dev_download(f, b->out_fast, count * sizeof *f, &d), &d);
  /* The general plan's rows of this rank are rows rank·n .. rank·n + n - 1. */
  mpibench_ck_lab(cplab_moe_plan_routing(b->plan_all, &dev_e, NULL, &dev_l, &d), &d);
  mpibench_ck_lab(cplab_dev_download(eg, dev_e + (size_t)c->rank * (size_t)(n * k), (size_t)(n * k) * sizeof *eg, &d), &d);
  mpibench_ck_lab(cplab_dev_download(lg, dev_l + (size_t)c->rank * (size_t)(n * E), (size_t)(n * E) * sizeof *lg, &d), &d);
  mpibench_ck_lab(cplab_moe_plan_routing(b->plan_n, &dev_e, NULL, &dev_l, &d), &d);
  mpibench_ck_lab(cplab_dev_download(ef, dev_e, (size_t)(n * k) * sizeof *ef, &d), &d);
  mpibench_ck_lab(cplab_dev_download(lf, dev_l, (size_t)(n * E) * sizeof *lf, &d), &d);
  moe_side gen = {g, eg, lg}, fst = {f, ef, lf};
  moe_verdict v = moe_compare(&gen, &fst, n, dim, (int)E, k);
  free(g), free(f), free(eg), free(ef), free(lg), free(lf);
  return v;
}

/* ---- timing ---------------------------------------------------------------------------- */

typedef struct op_call { /* one mode's operations, for mpibench_time_ops */
  const mpibench_ctx *c;
  int64_t dim;
  bufs *b;
  int mode;
} op_call;

static void run_call(void *arg, int op) {
  const op_call *x = arg;
  if (x->mode == MODE_GRAPH) CK_CUDA(cudaGraphLaunch(x->b->graph[op], x->c->stream));
  else run_op(x->c, x->dim, x->b, op);
}

/* st[mode·NOPS + op]: the operations alternate inside a repetition, eager first, then as graph replays. */
static void time_ops(const mpibench_ctx *c, int64_t dim, bufs *b, int reps, int warmup, cplab_spread *st) {
  for (int mode = 0; mode < NMODES; mode++) {
    op_call x = {c, dim, b, mode};
    mpibench_time_ops(c, NOPS, reps, warmup, run_call, &x, st + mode * NOPS);
  }
}

/* ---- report ------------------------------------------------------------------------------ */

static void print_header(const mpibench_ctx *c, const opts *o) {
  const cplab_moe_shape *s = &o->shape;
  int nccl = c->nccl_version;
  const char *nvls = getenv("NCCL_NVLS_ENABLE");
  printf("# " PROG ": %d rank(s) = MoE shards, %s, NCCL %d.%d.%d, NCCL_NVLS_ENABLE=%s\n"
         "# MoE %s: d %d, %d experts, top-%d, intermediate %d, %d shared; bf16 GEMMs\n"
         "# times: median over %d repetitions (after %d warm-up) of the slowest rank, in us\n"
         "#%5s %6s %11s %9s %9s %12s %9s\n",
         c->world, c->gpu.name, nccl / 10000, nccl % 10000 / 100, nccl % 100, nvls ? nvls : "(unset)",
         o->preset ? o->preset : "(--shape)", s->dim, s->experts, s->top_k, s->inter, s->shared, o->reps, o->warmup,
         "rows", "mode", "general_us", "fast_us", "fast/gen", "gen_moe_us", "fast_moe");
  fflush(stdout);
}

static void print_verdict(const mpibench_ctx *c, int64_t n, const moe_verdict *v) {
  printf("# rows %lld, rank %d: fast == general within tolerance: %lld of %lld elements bit-identical, worst error "
         "%.3g of the allowance, cos_diff %.2e; routing equal on %lld of %lld rows (%lld near-ties excluded)\n",
         (long long)n, c->rank, (long long)v->identical, (long long)v->elems, v->worst, v->cos_diff,
         (long long)(n - v->route_differs), (long long)n, (long long)v->near_ties);
}

static json_t *report_batch(const bufs *b, const moe_verdict *v, const cplab_spread *st) {
  json_t *r = json_pack("{s:I, s:I, s:{s:I, s:I, s:f, s:f, s:I, s:I}}", "rows_per_rank", (json_int_t)b->n,
                        "rows_gathered", (json_int_t)b->rows_all, "check_rank0", "elements", (json_int_t)v->elems,
                        "bit_identical", (json_int_t)v->identical, "worst_error_of_allowance", v->worst, "cos_diff",
                        v->cos_diff, "routing_differs", (json_int_t)v->route_differs, "near_ties",
                        (json_int_t)v->near_ties);
  for (int mode = 0; mode < NMODES; mode++) {
    const cplab_spread *m = st + mode * NOPS;
    json_t *jm = json_object();
    for (int op = 0; op < NOPS; op++) json_object_set_new(jm, op_key[op], json_pack("{s:o}", "time_us", cplab_bench_spread_json(&m[op])));
    json_object_set_new(jm, "fast_over_general", json_real(m[OP_FAST].median / m[OP_GENERAL].median));
    json_object_set_new(r, mode_key[mode], jm);
    printf("%6lld %6s %11.2f %9.2f %9.3f %12.2f %9.2f\n", (long long)b->n, mode_key[mode], 1e6 * m[OP_GENERAL].median,
           1e6 * m[OP_FAST].median, m[OP_FAST].median / m[OP_GENERAL].median, 1e6 * m[OP_GENERAL_MOE].median,
           1e6 * m[OP_FAST_MOE].median);
  }
  fflush(stdout);
  return r;
}

/* ---- main -------------------------------------------------------------------------------- */

/* One batch: set up, check (every rank), capture, time; its lines and JSON
 * entry on rank 0. Returns 0, or CPLAB_EXIT_ERROR when the paths disagree on any rank. */
static int bench_batch(const mpibench_ctx *c, const opts *o, cplab_moe *moe, cplab_gemm *gemm, int64_t n,
                       json_t *results) {
  bufs b;
  setup_batch(c, moe, gemm, n, &b);
  moe_verdict v = check_batch(c, &o->shape, &b);
  int bad = !moe_verdict_ok(&v), total = mpibench_sum_over_ranks(bad);
  if (bad) {
    fprintf(stderr, PROG ": error: rank %d, %lld rows: the fast path's output differs from the general path's "
            "[CPLAB_EMISMATCH]\n", c->rank, (long long)n);
    print_verdict(c, n, &v);
  } else if (c->rank == 0) {
    print_verdict(c, n, &v);
  }
  if (!total) {
    cplab_spread st[NMODES * NOPS];
    capture(c, o->shape.dim, &b);
    time_ops(c, o->shape.dim, &b, o->reps, o->warmup, st);
    if (c->rank == 0) json_array_append_new(results, report_batch(&b, &v, st));
  }
  free_batch(&b);
  return total ? CPLAB_EXIT_ERROR : 0;
}

int main(int argc, char **argv) {
  mpibench_ctx c;
  cplab_diag d = {0};
  opts o;
  int rc;
  mpibench_start(&argc, &argv, &c);
  rc = parse_opts(argc, argv, &o, &d);
  if ((rc = mpibench_after_options(&c, rc, o.help, &d, usage)) >= 0) return rc;
  rc = 0;
  cplab_moe_shape shard = o.shape;
  shard.shards = c.world, shard.shard = c.rank;
  cplab_moe *moe = NULL;
  cplab_gemm *gemm = NULL;
  if (cplab_moe_shape_check(&shard, &d) != 0) { /* shared·I must split over the ranks: every rank sees the same */
    cplab_diag_prefix(&d, "%d ranks: ", c.world);
    if (c.rank == 0) cplab_cli_usage_error(PROG, &d);
    return mpibench_finish(&c, CPLAB_EXIT_ERROR);
  }
  mpibench_ck_lab(cplab_moe_create(&shard, SEED, &moe, &d), &d);
  mpibench_ck_lab(cplab_gemm_create(&gemm, &d), &d);
  json_t *doc = c.rank == 0 ? mpibench_doc_header(&c, "moe_paths", o.reps, o.warmup, argc, argv) : NULL;
  json_t *results = json_array();
  if (c.rank == 0) {
    json_object_set_new(doc, "moe", json_pack("{s:s?, s:i, s:i, s:i, s:i, s:i, s:i}", "preset", o.preset, "dim",
                                              o.shape.dim, "experts", o.shape.experts, "top_k", o.shape.top_k,
                                              "inter", o.shape.inter, "shared", o.shape.shared, "shards", c.world));
    print_header(&c, &o);
  }
  for (int i = 0; !rc && i < o.nbatch; i++) rc = bench_batch(&c, &o, moe, gemm, o.batch[i], results);
  rc = mpibench_close_doc(&c, doc, results, o.out, rc);
  mpibench_ck_lab(cplab_gemm_destroy(gemm, &d), &d);
  cplab_moe_destroy(moe);
  return mpibench_finish(&c, rc ? CPLAB_EXIT_ERROR : CPLAB_EXIT_OK);
}
