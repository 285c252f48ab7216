/* cplab-kernel-bench: the MoE block's two PCP paths, a ranked kernel
 * (kernel_bench.h), what cplab-moe-bench measured before it was folded into
 * the driver (reference vllm-pcp-dcp.md §8). The job is one PCP group of P
 * ranks (tp 1), and rank q holds MoE shard q of P (kernels/cplab_moe.h:
 * routed expert e on shard e mod P, the shared MLP cut in P slices). Every
 * rank holds the same n rows x: decode rows, replicated on every PCP rank,
 * the fast path's condition. A case is a model preset's MoE sizes and n.
 *   general           ncclAllGather of x (P·n rows, rank-major), the shard's
 *                     partial over all P·n rows, ncclReduceScatter (sum) back
 *                     to the rank's n rows;
 *   fast              the shard's partial over its n rows, ncclAllReduce (sum);
 *   general_moe_only, fast_moe_only: each path's cplab_moe_run alone.
 * The four alternate inside every repetition, eagerly (mode "eager") and as
 * replays of CUDA graphs captured from the same calls (mode "graph": the
 * graph modes of §9, the fast path is what full decode graphs replay); the
 * driver reports fast's time over general's as its ratio to the first
 * operation. A shard's weights (GiB at the presets' sizes) dwarf the L2, so
 * inputs are not rotated.
 * The check, on every rank before anything is timed: both paths run on
 * poisoned outputs, and the rank's rows compared (bench/moe_compare.c): the
 * routing equal (a row whose experts differ only at a near-tie of the bf16
 * router logits is reported and excluded), the outputs within
 * test_gpu_moe's tolerance, bit-identical elements counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/model.h"
#include "cplab_kernels.h"
#include "cplab_moe.h"
#include "cplab_stream.h"
#include "kb_nccl.h"
#include "kernel_bench.h"
#include "moe_compare.h"

#define SEED 0x6d6f652d62656e01ULL /* weights and inputs: cplab-moe-bench's */
#define X_TENSOR 0x6d6f6578u        /* cplab_gen_bf16's tensor id of x */

enum { OP_GENERAL, OP_FAST, OP_GENERAL_MOE, OP_FAST_MOE, NOPS };
static const char *const op_names[NOPS] = {"general", "fast", "general_moe_only", "fast_moe_only"};
enum { MODE_EAGER, MODE_GRAPH, NMODES };
static const char *const mode_names[NMODES] = {"eager", "graph"};

/* A preset's MoE sizes (preset set), or explicit ones (the smoke cases). */
typedef struct moe_case_shape {
  const char *preset;
  cplab_moe_shape sizes; /* when preset is NULL */
  int64_t rows;          /* n: rows per rank */
} moe_case_shape;

#define GLM(nm, n) {nm, 1, &(const moe_case_shape){"glm-5", {0}, n}, "glm-5's MoE block, decode rows per rank"}
#define DSV(nm, n) \
  {nm, 1, &(const moe_case_shape){"deepseek-v3.2", {0}, n}, "deepseek-v3.2's MoE block, decode rows per rank"}
/* A small block (d 256, 16 experts, top-4, intermediate 128, 2 shared): 300 rows are more than one 256-row chunk of
 * the permutation's scan. */
#define SMALL(nm, n) \
  {nm, 0, &(const moe_case_shape){NULL, {256, 16, 4, 128, 2, 1, 0}, n}, "tiny: the GPU smoke test's block"}
static const cplab_kb_case moe_cases[] = {
    GLM("moe-glm-5-b1", 1),    GLM("moe-glm-5-b4", 4),    GLM("moe-glm-5-b16", 16),
    GLM("moe-glm-5-b64", 64),  GLM("moe-glm-5-b256", 256),
    DSV("moe-deepseek-v3.2-b1", 1),   DSV("moe-deepseek-v3.2-b4", 4),     DSV("moe-deepseek-v3.2-b16", 16),
    DSV("moe-deepseek-v3.2-b64", 64), DSV("moe-deepseek-v3.2-b256", 256),
    SMALL("smoke-moe-b1", 1),  SMALL("smoke-moe-b37", 37), SMALL("smoke-moe-b300", 300),
};

/* The block's global sizes (shards 1). A preset always resolves: its names are this file's. */
static cplab_moe_shape sizes_of(const moe_case_shape *s) {
  cplab_model m;
  if (!s->preset || cplab_model_preset(s->preset, &m) != 0) return s->sizes;
  return (cplab_moe_shape){(int)m.hidden_size, (int)m.n_routed_experts, (int)m.n_active_experts,
                           (int)m.moe_intermediate_size, (int)m.n_shared_experts, 1, 0};
}

static json_t *moe_json(const void *p) {
  const moe_case_shape *s = p;
  cplab_moe_shape z = sizes_of(s);
  return json_pack("{s:s?, s:i, s:i, s:i, s:i, s:i, s:I}", "preset", s->preset, "dim", z.dim, "experts", z.experts,
                   "top_k", z.top_k, "inter", z.inter, "shared", z.shared, "rows_per_rank", (json_int_t)s->rows);
}

static void moe_text(const void *p, char *buf, size_t cap) {
  const moe_case_shape *s = p;
  cplab_moe_shape z = sizes_of(s);
  snprintf(buf, cap, "%s d%d E%d k%d I%d s%d, %lld rows", s->preset ? s->preset : "small", z.dim, z.experts, z.top_k,
           z.inter, z.shared, (long long)s->rows);
}

typedef struct moe_inst {
  const cplab_kb_env *env;
  cplab_moe_shape shard; /* this rank's shard of the block */
  int rank, world;
  void *comm;            /* ncclComm_t */
  int64_t n, rows_all;   /* n rows per rank; P·n gathered */
  cplab_moe *moe;
  cplab_gemm *gemm;
  uint16_t *x, *x_all;   /* bf16 [n][d], [P·n][d] */
  float *part_all;       /* the general path's partial, [P·n][d] */
  float *out_general;    /* [n][d] */
  float *out_fast;       /* the fast path's partial, reduced in place: [n][d] */
  cplab_moe_plan *plan_all, *plan_n;
  cplab_graph *graph[NOPS];
  int op;                /* the operation a capture records (graph body's argument) */
  moe_verdict verdict;   /* this rank's check */
} moe_inst;

static void moe_teardown(void *p) {
  moe_inst *x = p;
  cplab_diag scratch = {0};
  for (int op = 0; op < NOPS; op++) cplab_graph_destroy(x->graph[op]);
  cplab_moe_plan_destroy(x->plan_all);
  cplab_moe_plan_destroy(x->plan_n);
  void *dev[] = {x->x, x->x_all, x->part_all, x->out_general, x->out_fast};
  for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) cplab_dev_free(dev[i], &scratch);
  if (x->gemm) cplab_gemm_destroy(x->gemm, &scratch);
  cplab_moe_destroy(x->moe);
  free(x);
}

static int moe_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  const moe_case_shape *s = c->shape;
  if (!env->job || !env->job->comm) CPLAB_FAIL(d, CPLAB_EINTERNAL, "moe_paths: no NCCL communicator");
  moe_inst *x = calloc(1, sizeof *x);
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  *inst = x;
  x->env = env, x->rank = env->job->rank, x->world = env->job->world, x->comm = env->job->comm;
  x->shard = sizes_of(s);
  x->shard.shards = x->world, x->shard.shard = x->rank;
  x->n = s->rows, x->rows_all = (int64_t)x->world * s->rows;
  int64_t dim = x->shard.dim;
  int rc = cplab_moe_shape_check(&x->shard, d); /* shared·I must split over the ranks: every rank sees the same */
  if (rc) {
    cplab_diag_prefix(d, "%d ranks: ", x->world);
    return rc;
  }
  rc = cplab_moe_create(&x->shard, SEED, &x->moe, d);
  if (!rc) rc = cplab_gemm_create(&x->gemm, d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->x, sizeof(uint16_t) * (size_t)(x->n * dim), d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->x_all, sizeof(uint16_t) * (size_t)(x->rows_all * dim), d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->part_all, sizeof(float) * (size_t)(x->rows_all * dim), d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->out_general, sizeof(float) * (size_t)(x->n * dim), d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->out_fast, sizeof(float) * (size_t)(x->n * dim), d);
  /* The same rows on every rank (same seed and tensor), as decode rows are. */
  if (!rc) rc = cplab_gen_bf16(SEED, X_TENSOR, x->x, x->n * dim, 1.0f, stream, d);
  if (!rc)
    rc = KB_NCCL(d, ncclAllGather(x->x, x->x_all, (size_t)(x->n * dim), ncclBfloat16, (ncclComm_t)x->comm,
                                  (cudaStream_t)stream));
  if (!rc) rc = cplab_dev_sync(stream, d);
  if (!rc) rc = cplab_moe_plan_create(x->moe, x->gemm, x->x_all, x->rows_all, &x->plan_all, d);
  if (!rc) rc = cplab_moe_plan_create(x->moe, x->gemm, x->x, x->n, &x->plan_n, d);
  return rc;
}

/* Enqueue operation op eagerly. */
static int moe_enqueue(moe_inst *x, int op, void *stream, cplab_diag *d) {
  size_t count = (size_t)(x->n * x->shard.dim);
  ncclComm_t comm = (ncclComm_t)x->comm;
  cudaStream_t s = (cudaStream_t)stream;
  int rc = 0;
  switch (op) {
    case OP_GENERAL:
    case OP_GENERAL_MOE:
      if (op == OP_GENERAL) rc = KB_NCCL(d, ncclAllGather(x->x, x->x_all, count, ncclBfloat16, comm, s));
      if (!rc) rc = cplab_moe_run(x->plan_all, x->x_all, x->part_all, stream, d);
      if (!rc && op == OP_GENERAL)
        rc = KB_NCCL(d, ncclReduceScatter(x->part_all, x->out_general, count, ncclFloat32, ncclSum, comm, s));
      return rc;
    default:
      rc = cplab_moe_run(x->plan_n, x->x, x->out_fast, stream, d);
      if (!rc && op == OP_FAST) rc = KB_NCCL(d, ncclAllReduce(x->out_fast, x->out_fast, count, ncclFloat32, ncclSum, comm, s));
      return rc;
  }
}

static int moe_body(void *p, void *stream, cplab_diag *d) {
  moe_inst *x = p;
  return moe_enqueue(x, x->op, stream, d);
}

/* A CUDA graph of each operation, captured from the same calls; every rank
 * captures the same collectives in the same order. */
static int moe_prepare(void *p, void *stream, cplab_diag *d) {
  moe_inst *x = p;
  int rc = 0;
  for (int op = 0; !rc && op < NOPS; op++) {
    x->op = op;
    rc = cplab_graph_capture(stream, moe_body, x, &x->graph[op], d);
  }
  return rc;
}

static int moe_run_op(void *p, int mode, int op, void *stream, cplab_diag *d) {
  moe_inst *x = p;
  if (mode == MODE_GRAPH) return cplab_graph_launch(x->graph[op], stream, d);
  return moe_enqueue(x, op, stream, d);
}

/* Both paths once on poisoned outputs, this rank's rows compared. */
static int moe_check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  moe_inst *x = p;
  int64_t n = x->n, dim = x->shard.dim, E = x->shard.experts;
  int k = x->shard.top_k;
  size_t count = (size_t)(n * dim);
  memset(res, 0, sizeof *res);
  int rc = cplab_poison_bytes(x->out_general, count * sizeof(float), 0xFF, stream, d);
  if (!rc) rc = cplab_poison_bytes(x->out_fast, count * sizeof(float), 0xFF, stream, d);
  if (!rc) rc = moe_enqueue(x, OP_GENERAL, stream, d);
  if (!rc) rc = moe_enqueue(x, OP_FAST, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  if (!rc) rc = cplab_moe_plan_check(x->plan_all, d);
  if (!rc) rc = cplab_moe_plan_check(x->plan_n, d);
  float *g = malloc(count * sizeof *g), *f = malloc(count * sizeof *f);
  int32_t *eg = malloc((size_t)(n * k) * sizeof *eg), *ef = malloc((size_t)(n * k) * sizeof *ef);
  uint16_t *lg = malloc((size_t)(n * E) * sizeof *lg), *lf = malloc((size_t)(n * E) * sizeof *lf);
  const int32_t *dev_e = NULL;
  const uint16_t *dev_l = NULL;
  if (!rc && !(g && f && eg && ef && lg && lf)) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory");
  if (!rc) rc = cplab_dev_download(g, x->out_general, count * sizeof *g, d);
  if (!rc) rc = cplab_dev_download(f, x->out_fast, count * sizeof *f, d);
  /* The general plan's rows of this rank are rows rank·n .. rank·n + n - 1. */
  if (!rc) rc = cplab_moe_plan_routing(x->plan_all, &dev_e, NULL, &dev_l, d);
  if (!rc) rc = cplab_dev_download(eg, dev_e + (size_t)x->rank * (size_t)(n * k), (size_t)(n * k) * sizeof *eg, d);
  if (!rc) rc = cplab_dev_download(lg, dev_l + (size_t)x->rank * (size_t)(n * E), (size_t)(n * E) * sizeof *lg, d);
  if (!rc) rc = cplab_moe_plan_routing(x->plan_n, &dev_e, NULL, &dev_l, d);
  if (!rc) rc = cplab_dev_download(ef, dev_e, (size_t)(n * k) * sizeof *ef, d);
  if (!rc) rc = cplab_dev_download(lf, dev_l, (size_t)(n * E) * sizeof *lf, d);
  if (!rc) {
    moe_side gen = {g, eg, lg}, fst = {f, ef, lf};
    moe_verdict v = moe_compare(&gen, &fst, n, dim, (int)E, k);
    x->verdict = v;
    res->ok = moe_verdict_ok(&v);
    res->rows = (int)n;
    res->compared = v.elems;
    res->mismatches = v.bad_rows;
    res->max_rel_err = v.worst;
    res->tol_rel_err = 1.0;
    /* max_rel_err: the worst error over the allowance, so its bound is 1. */
    snprintf(res->reference, sizeof res->reference,
             "general path: |general - fast| <= %g (|fast| + row rms), cos_diff <= %g, routing equal but near-ties",
             MOE_TOL_REL, MOE_TOL_COS);
    snprintf(res->detail, sizeof res->detail,
             "fast %s general within tolerance: %lld of %lld elements bit-identical, worst error %.3g of "
             "the allowance, cos_diff %.2e; routing equal on %lld of %lld rows (%lld near-ties excluded, %lld bad)",
             res->ok ? "==" : "!=", (long long)v.identical, (long long)v.elems, v.worst, v.cos_diff,
             (long long)(n - v.route_differs), (long long)n, (long long)v.near_ties, (long long)v.bad_rows);
  }
  free(g), free(f), free(eg), free(ef), free(lg), free(lf);
  return rc;
}

static void moe_work(const void *p, cplab_kb_work *w) {
  const moe_inst *x = p;
  w->sets = 1;
  w->set_bytes = 0;
  snprintf(w->launcher, sizeof w->launcher, "cplab_moe_run + NCCL (%d shards)", x->world);
}

/* The check's counts beside every operation (kernels.json: what cplab-moe-bench called check_rank0). */
static void moe_fields(const void *p, int op, double median_s, int world, json_t *e, char col[3][16]) {
  const moe_inst *x = p;
  (void)op, (void)median_s, (void)world, (void)col;
  json_object_set_new(e, "rows_gathered", json_integer((json_int_t)x->rows_all));
  json_object_set_new(e, "check_rank0",
                      json_pack("{s:I, s:I, s:f, s:f, s:I, s:I}", "elements", (json_int_t)x->verdict.elems,
                                "bit_identical", (json_int_t)x->verdict.identical, "worst_error_of_allowance",
                                x->verdict.worst, "cos_diff", x->verdict.cos_diff, "routing_differs",
                                (json_int_t)x->verdict.route_differs, "near_ties", (json_int_t)x->verdict.near_ties));
}

const cplab_kb_kernel cplab_kb_moe_paths = {
    .name = "moe_paths",
    .summary = "the MoE block's general and fast PCP paths, one MoE shard a rank, checked equal, then timed (ranked)",
    .cases = moe_cases,
    .ncases = (int)(sizeof moe_cases / sizeof moe_cases[0]),
    .shape_json = moe_json,
    .shape_text = moe_text,
    .setup = moe_setup,
    .check = moe_check,
    .work = moe_work,
    .teardown = moe_teardown,
    .check_kind = CPLAB_KB_CHECK_TOLERANCE,
    .rate = CPLAB_KB_RATE_BYTES,
    .work_note = "moe_paths: times only; ratio_to_first of fast = fast / general (cplab-moe-bench's fast_over_general)",
    .ranked = 1,
    .nops = NOPS,
    .op_names = op_names,
    .nmodes = NMODES,
    .mode_names = mode_names,
    .prepare = moe_prepare,
    .run_op = moe_run_op,
    .op_fields = moe_fields,
};
