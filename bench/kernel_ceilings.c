/* cplab-kernel-bench: the card's ceilings as cases (kernel_bench.h), what
 * cplab-ceilings-bench measured before it was folded into the driver
 * (reference perf-anchors.md §6):
 *   ceiling_copy       a device-to-device copy (cudaMemcpyAsync through
 *                      cplab_dev_copy_async) of `bytes`, rotating over n >= 3
 *                      buffers spanning 4x the L2; GB/s = 2 · bytes / t / 1e9
 *                      (read and write counted, perf-anchors' convention);
 *   ceiling_gemm_bf16  cplab_gemm_bf16 (cuBLASLt, fp32 accumulation, bf16
 *                      out), C[M][N] = A[M][K] · B[N][K]^T, random inputs in
 *                      [-1, 1);
 *   ceiling_gemm_fp8   cplab_gemm_fp8 (e4m3 in [-4, 4), per-tensor scales
 *                      0.5 and 0.25, bf16 out); TFLOPS = 2·M·N·K / t / 1e12.
 * The family "ceilings" (--kernel ceilings) selects all three; none is in
 * the default set (the driver measures its own ceilings for the ratios,
 * --copy-mib and --gemm). The operations, their input rotation (at most
 * CPLAB_CEIL_MAX_SETS sets, not --max-sets) and their checks are
 * bench/ceilings.c's: the copy's bytes at three probes (exact), a GEMM's
 * whole output written (no NaN left of the poison) and 256 sampled elements
 * within 2^-8·|ref| + 2^-10·sum|terms| of a double-precision host reference,
 * relative Frobenius error < 1e-2 (tests/gpu/test_gpu_gemm.c's rule).
 * Timing is the driver's: each case alone, its runs back to back (the old
 * program interleaved the operations inside a repetition). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceilings.h"
#include "cplab_kernels.h"
#include "kernel_bench.h"

#define CEIL_SEED_MIX 0x6365696c696e6773ULL /* "ceilings": the GEMMs' inputs, from --seed */
#define N_SMOKE "tiny: the tests' smoke case (CPU emulation, GPU smoke test)"
#define N_ANCHOR "perf-anchors.md §6's shape"
#define N_MOE "tokens x hidden x MoE intermediate: a DeepSeek-V3.2 down projection"

typedef struct ceil_shape {
  int64_t m, n, k; /* a GEMM's; the copy: bytes in k */
} ceil_shape;

#define COPY(nm, def, mib, note) {nm, def, &(const ceil_shape){0, 0, (int64_t)(mib) << 20}, note}
#define GEMM(nm, def, m, n, k, note) {nm, def, &(const ceil_shape){m, n, k}, note}
static const cplab_kb_case copy_cases[] = {
    COPY("ceil-copy-2g", 0, 2048, "2 GiB a copy, three buffers far beyond the L2 (cplab-ceilings-bench's default)"),
    COPY("ceil-copy-1g", 0, 1024, "1 GiB: the size of the driver's own copy ceiling (--copy-mib)"),
    {"smoke-ceil-copy", 0, &(const ceil_shape){0, 0, 4096}, N_SMOKE},
};
static const cplab_kb_case bf16_cases[] = {
    GEMM("ceil-bf16-8192", 0, 8192, 8192, 8192, N_ANCHOR),
    GEMM("ceil-bf16-4096x7168x2048", 0, 4096, 7168, 2048, N_MOE),
    GEMM("smoke-ceil-bf16", 0, 64, 64, 64, N_SMOKE),
};
static const cplab_kb_case fp8_cases[] = {
    GEMM("ceil-fp8-8192", 0, 8192, 8192, 8192, N_ANCHOR),
    GEMM("ceil-fp8-4096x7168x2048", 0, 4096, 7168, 2048, N_MOE),
    GEMM("smoke-ceil-fp8", 0, 64, 64, 64, N_SMOKE),
};

static json_t *copy_json(const void *p) {
  const ceil_shape *s = p;
  return json_pack("{s:I}", "bytes_per_copy", (json_int_t)s->k);
}
static void copy_text(const void *p, char *buf, size_t cap) {
  const ceil_shape *s = p;
  if (s->k >= ((int64_t)1 << 20)) snprintf(buf, cap, "copy %lld MiB", (long long)(s->k >> 20));
  else snprintf(buf, cap, "copy %lld bytes", (long long)s->k);
}
static json_t *gemm_json(const void *p) {
  const ceil_shape *s = p;
  return json_pack("{s:I, s:I, s:I}", "m", (json_int_t)s->m, "n", (json_int_t)s->n, "k", (json_int_t)s->k);
}
static void gemm_text(const void *p, char *buf, size_t cap) {
  const ceil_shape *s = p;
  snprintf(buf, cap, "M %lld N %lld K %lld", (long long)s->m, (long long)s->n, (long long)s->k);
}

typedef struct ceil_inst {
  cplab_ceil_op op;
  cplab_gemm *g;
  uint64_t rng;
} ceil_inst;

static void ceil_teardown(void *p) {
  ceil_inst *x = p;
  if (!x) return;
  cplab_diag d = {0}; /* freeing cannot fail in a way worth reporting */
  cplab_ceil_free(&x->op);
  if (x->g) cplab_gemm_destroy(x->g, &d);
  free(x);
}

/* fp8: -1 for the copy, else 0 (bf16) or 1 (fp8). */
static int ceil_setup(const cplab_kb_case *c, const cplab_kb_env *env, int fp8, void **inst, cplab_diag *d) {
  const ceil_shape *s = c->shape;
  ceil_inst *x = calloc(1, sizeof *x);
  *inst = x;
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  x->rng = env->seed ^ CEIL_SEED_MIX;
  if (fp8 < 0) return cplab_ceil_setup_copy(&x->op, (size_t)s->k, 4 * env->l2_bytes, d);
  int rc = cplab_gemm_create(&x->g, d);
  if (!rc) rc = cplab_ceil_setup_gemm(&x->op, (cplab_ceil_shape){s->m, s->n, s->k}, fp8, x->g, env->l2_bytes, &x->rng, d);
  return rc;
}
static int copy_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  (void)stream;
  return ceil_setup(c, env, -1, inst, d);
}
static int bf16_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  (void)stream;
  return ceil_setup(c, env, 0, inst, d);
}
static int fp8_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  (void)stream;
  return ceil_setup(c, env, 1, inst, d);
}

static int ceil_check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  ceil_inst *x = p;
  cplab_ceil_verdict v;
  int rc = cplab_ceil_check(&x->op, stream, &x->rng, &v, d);
  if (rc) return rc;
  res->ok = v.ok;
  res->compared = v.compared;
  res->mismatches = v.beyond + v.nan;
  snprintf(res->detail, sizeof res->detail, "%s", v.detail);
  if (!x->op.gemm) {
    res->rows = 3;
    snprintf(res->reference, sizeof res->reference,
             "the source buffer's fill byte, at three probes of up to 4096 bytes (start, middle, end)");
    return 0;
  }
  res->rows = v.samples;
  res->max_rel_err = v.rel_frob;
  res->tol_rel_err = CPLAB_CEIL_TOL_FROB;
  snprintf(res->reference, sizeof res->reference,
           "double host dot products at %d sampled elements, each within 2^-8|ref| + 2^-10 sum|terms|; relative "
           "Frobenius error of the samples; no NaN left in C",
           v.samples);
  return 0;
}

static int ceil_run(void *p, void *stream, cplab_diag *d) { return cplab_ceil_run(&((ceil_inst *)p)->op, stream, d); }

static void ceil_work(const void *p, cplab_kb_work *w) {
  const cplab_ceil_op *o = &((const ceil_inst *)p)->op;
  double unit;
  w->sets = o->sets;
  if (o->gemm) {
    size_t es = o->fp8 ? 1 : 2;
    cplab_ceil_work(o, &w->flop, &unit);
    w->flop_valid = w->flop;
    w->bytes = 0;
    w->set_bytes = (double)((size_t)((o->s.m + o->s.n) * o->s.k) * es + (size_t)(o->s.m * o->s.n) * 2);
    snprintf(w->launcher, sizeof w->launcher, "%s (cuBLASLt)", o->fp8 ? "cplab_gemm_fp8" : "cplab_gemm_bf16");
  } else {
    cplab_ceil_work(o, &w->bytes, &unit);
    w->flop = w->flop_valid = 0;
    w->set_bytes = w->bytes;
    snprintf(w->launcher, sizeof w->launcher, "cplab_dev_copy_async (cudaMemcpyAsync device to device)");
  }
}

#define CEIL_KERNEL(nm, sum, cs, json, text, setup_fn, kind, rt, note)                                                 \
  {.name = nm, .summary = sum, .cases = cs, .ncases = (int)(sizeof cs / sizeof cs[0]), .shape_json = json,             \
   .shape_text = text, .setup = setup_fn, .check = ceil_check, .run = ceil_run, .work = ceil_work,                     \
   .teardown = ceil_teardown, .check_kind = kind, .rate = rt, .work_note = note, .family = "ceilings",                 \
   .no_copy_same_size = 1}

const cplab_kb_kernel cplab_kb_ceiling_copy =
    CEIL_KERNEL("ceiling_copy", "the card's device-to-device copy bandwidth (read + write counted)", copy_cases,
                copy_json, copy_text, copy_setup, CPLAB_KB_CHECK_EXACT, CPLAB_KB_RATE_BYTES,
                "gbps: 2 x bytes_per_copy (read + write, perf-anchors' convention)");
const cplab_kb_kernel cplab_kb_ceiling_gemm_bf16 =
    CEIL_KERNEL("ceiling_gemm_bf16", "cuBLASLt bf16 GEMM, C[M][N] = A[M][K] B[N][K]^T, fp32 accumulation", bf16_cases,
                gemm_json, gemm_text, bf16_setup, CPLAB_KB_CHECK_TOLERANCE, CPLAB_KB_RATE_BF16_FLOPS,
                "tflops: 2 M N K; check.max_rel_err is the samples' relative Frobenius error");
const cplab_kb_kernel cplab_kb_ceiling_gemm_fp8 =
    CEIL_KERNEL("ceiling_gemm_fp8", "cuBLASLt fp8 (e4m3) GEMM, per-tensor scales, bf16 out", fp8_cases, gemm_json,
                gemm_text, fp8_setup, CPLAB_KB_CHECK_TOLERANCE, CPLAB_KB_RATE_FP8_FLOPS,
                "tflops: 2 M N K; check.max_rel_err is the samples' relative Frobenius error");
