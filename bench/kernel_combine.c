/* cplab-kernel-bench: the DCP decode rows' LSE combine (kernel_bench.h):
 *   lse_combine  cplab_lse_combine: D DCP ranks' partial results of `batch`
 *                decode rows x `heads` heads, lse fp32 [D][batch][heads]
 *                and out fp32 [D][batch][heads][512], into the combined
 *                rows fp32 [batch][heads][512] (cplab-bench's COMBINE
 *                piece).
 * Inputs: generated on the host (cplab_gen_uniform_host: outputs in
 * (-1, 1), lse in 10 + (-4, 4), the spread of real partials of one row) and
 * uploaded, another tensor per set, enough sets to span 4x the L2.
 * The check: --check-rows rows spread over the batch, every head and column,
 * against sim_lse_combine in double over the same inputs: the kernel
 * computes the factors and the sum in double and rounds once, so the error
 * is the final rounding (a relative 2^-24 of the row's largest value) plus
 * the two exp()'s ulps; the bound is 1e-6 of the row's largest |value|.
 * Work (bytes, against the copy ceiling): the partials read (D · (512 + 1)
 * floats a (row, head)) and the result written (512 floats). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab_kernels.h"
#include "kernel_bench.h"
#include "kernel_indexer.h"
#include "reference.h"

#define COMB_DV 512       /* value columns (CPLAB_MLA_NOPE_DIM) */
#define COMB_TOL 1e-6     /* the check's bound, relative to the row's largest |value| */
#define COMB_LSE_MID 10.0f
#define N_SMOKE "tiny: the tests' smoke case (CPU emulation, GPU smoke test)"

typedef struct comb_shape {
  int dcp, heads;
  int64_t batch;
} comb_shape;

#define COMB(nm, def, D, h, b, note) {nm, def, &(const comb_shape){D, h, b}, note}
#define N_TP "decode rows of a DCP group: every member's partial of the rows' heads (pcp = dcp: all heads)"
static const cplab_kb_case comb_cases[] = {
    COMB("combine-dcp2-h64-b64", 1, 2, 64, 64, N_TP),
    COMB("combine-dcp4-h64-b1", 1, 4, 64, 1, N_TP),
    COMB("combine-dcp4-h64-b16", 1, 4, 64, 16, N_TP),
    COMB("combine-dcp4-h64-b64", 1, 4, 64, 64, N_TP),
    COMB("combine-dcp4-h64-b128", 1, 4, 64, 128, N_TP),
    COMB("combine-dcp8-h64-b64", 1, 8, 64, 64, N_TP),
    COMB("combine-dcp8-h64-b128", 1, 8, 64, 128, N_TP),
    COMB("combine-dcp4-h16-b64", 1, 4, 16, 64, "tp4 GLM-5's 16 heads a rank"),
    COMB("combine-dcp4-h128-b64", 0, 4, 128, 64, "DeepSeek-V3.2's 128 heads"),
    COMB("smoke-combine", 0, 2, 4, 3, N_SMOKE),
};

static json_t *comb_json(const void *p) {
  const comb_shape *s = p;
  return json_pack("{s:i, s:I, s:i}", "dcp", s->dcp, "batch", (json_int_t)s->batch, "heads", s->heads);
}

static void comb_text(const void *p, char *buf, size_t cap) {
  const comb_shape *s = p;
  snprintf(buf, cap, "dcp %d b%lld h%d", s->dcp, (long long)s->batch, s->heads);
}

typedef struct comb_inst {
  const comb_shape *s;
  uint64_t seed;
  int sets, turn, check_rows;
  float *lse[CPLAB_KBI_MAX_SETS], *out[CPLAB_KBI_MAX_SETS], *fin[CPLAB_KBI_MAX_SETS];
} comb_inst;

/* The generated tensors of set si: partial outputs, and their lse. */
static uint32_t comb_tensor(int si, int lse) { return 0xC0B0u + 2u * (uint32_t)si + (uint32_t)lse; }

static float comb_out_value(uint64_t seed, int si, int64_t i) { return cplab_gen_uniform_host(seed, comb_tensor(si, 0), i, 1.0f); }
static float comb_lse_value(uint64_t seed, int si, int64_t i) {
  return COMB_LSE_MID + cplab_gen_uniform_host(seed, comb_tensor(si, 1), i, 4.0f);
}

static void comb_teardown(void *p) {
  comb_inst *x = p;
  cplab_diag d = {0};
  if (!x) return;
  for (int i = 0; i < x->sets; i++)
    cplab_dev_free(x->lse[i], &d), cplab_dev_free(x->out[i], &d), cplab_dev_free(x->fin[i], &d);
  free(x);
}

static int comb_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  (void)stream;
  const comb_shape *s = c->shape;
  comb_inst *x = calloc(1, sizeof *x);
  *inst = x;
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  x->s = s, x->seed = env->seed, x->check_rows = cplab_kbi_check_rows(env, s->batch);
  int64_t mh = s->batch * s->heads, nl = (int64_t)s->dcp * mh, no = nl * COMB_DV;
  double set_bytes = 4.0 * ((double)no + (double)nl + (double)mh * COMB_DV);
  int sets = cplab_kbi_sets(env, set_bytes, set_bytes);
  float *lse = malloc((size_t)nl * 4), *out = malloc((size_t)no * 4);
  int rc = !lse || !out ? cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory") : 0;
  for (int si = 0; !rc && si < sets; si++) {
    x->sets = si + 1;
    for (int64_t i = 0; i < nl; i++) lse[i] = comb_lse_value(x->seed, si, i);
    for (int64_t i = 0; i < no; i++) out[i] = comb_out_value(x->seed, si, i);
    rc = cplab_kbi_upload((void **)&x->lse[si], lse, (size_t)nl * 4, d);
    if (!rc) rc = cplab_kbi_upload((void **)&x->out[si], out, (size_t)no * 4, d);
    if (!rc) rc = cplab_dev_alloc((void **)&x->fin[si], (size_t)mh * COMB_DV * 4, d);
  }
  free(lse), free(out);
  return rc;
}

static int comb_run_set(comb_inst *x, int si, void *stream, cplab_diag *d) {
  return cplab_lse_combine(&(cplab_lse_combine_params){.lse = x->lse[si], .out = x->out[si], .D = x->s->dcp,
                                                       .m = x->s->batch, .heads = x->s->heads, .final = x->fin[si]},
                           stream, d);
}

static int comb_run(void *p, void *stream, cplab_diag *d) {
  comb_inst *x = p;
  return comb_run_set(x, x->turn++ % x->sets, stream, d);
}

/* Row r of set 0: sim_lse_combine in double over the generated inputs, against the kernel's result. */
static void comb_check_row(const comb_inst *x, int64_t r, const float *got, double *lse, double *out, double *want,
                           cplab_kb_check *res) {
  const comb_shape *s = x->s;
  int H = s->heads;
  int64_t mh = s->batch * H;
  for (int dd = 0; dd < s->dcp; dd++)
    for (int h = 0; h < H; h++) {
      int64_t g = dd * mh + r * H + h;
      lse[dd * H + h] = comb_lse_value(x->seed, 0, g);
      for (int c = 0; c < COMB_DV; c++) out[((int64_t)dd * H + h) * COMB_DV + c] = comb_out_value(x->seed, 0, g * COMB_DV + c);
    }
  sim_lse_combine(s->dcp, H, lse, out, want);
  double big = 0, worst = 0;
  for (int64_t i = 0; i < (int64_t)H * COMB_DV; i++) big = fmax(big, fabs(want[i]));
  for (int64_t i = 0; i < (int64_t)H * COMB_DV; i++) {
    res->compared++;
    double e = fabs((double)got[i] - want[i]) / (big > 0 ? big : 1.0);
    if (!(e <= COMB_TOL) && res->mismatches++ == 0) /* NaN included */
      snprintf(res->detail, sizeof res->detail, "row %lld head %lld column %lld: got %.9g, want %.9g; ", (long long)r,
               (long long)(i / COMB_DV), (long long)(i % COMB_DV), (double)got[i], want[i]);
    if (e > worst || e != e) worst = e != e ? INFINITY : e;
  }
  if (worst > res->max_rel_err) res->max_rel_err = worst;
}

static int comb_check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  comb_inst *x = p;
  const comb_shape *s = x->s;
  int64_t per = (int64_t)s->heads * COMB_DV;
  memset(res, 0, sizeof *res);
  float *got = malloc((size_t)per * 4);
  double *lse = malloc((size_t)s->dcp * s->heads * 8), *out = malloc((size_t)s->dcp * per * 8), *want = malloc((size_t)per * 8);
  int rc = !got || !lse || !out || !want ? cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory") : 0;
  if (!rc) rc = cplab_poison_bytes(x->fin[0], (size_t)s->batch * per * 4, 0xFF, stream, d);
  if (!rc) rc = comb_run_set(x, 0, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  for (int i = 0; !rc && i < x->check_rows; i++) {
    int64_t r = cplab_kbi_check_row(i, x->check_rows, s->batch);
    rc = cplab_dev_download(got, x->fin[0] + r * per, (size_t)per * 4, d);
    if (!rc) comb_check_row(x, r, got, lse, out, want, res);
  }
  if (!rc) {
    size_t at = strlen(res->detail);
    res->rows = x->check_rows;
    res->tol_rel_err = COMB_TOL;
    res->ok = res->mismatches == 0;
    snprintf(res->reference, sizeof res->reference,
             "sim_lse_combine in double over the same partials; error over the row's largest |value|");
    snprintf(res->detail + at, sizeof res->detail - at, "%d rows x %d heads x %d: worst %.2g (bound %.0e), %lld beyond",
             res->rows, s->heads, COMB_DV, res->max_rel_err, COMB_TOL, (long long)res->mismatches);
  }
  free(got), free(lse), free(out), free(want);
  return rc;
}

static void comb_work(const void *p, cplab_kb_work *w) {
  const comb_inst *x = p;
  const comb_shape *s = x->s;
  double mh = (double)s->batch * s->heads;
  w->flop = w->flop_valid = 0;
  w->bytes = w->set_bytes = 4.0 * (mh * s->dcp * (COMB_DV + 1) + mh * COMB_DV);
  w->sets = x->sets;
  snprintf(w->launcher, sizeof w->launcher, "cplab_lse_combine");
}

const cplab_kb_kernel cplab_kb_lse_combine = {
    .name = "lse_combine",
    .summary = "cplab_lse_combine: D DCP ranks' partial decode rows (lse, out fp32 [D][batch][heads][512]) combined",
    .cases = comb_cases,
    .ncases = (int)(sizeof comb_cases / sizeof comb_cases[0]),
    .shape_json = comb_json,
    .shape_text = comb_text,
    .setup = comb_setup,
    .check = comb_check,
    .run = comb_run,
    .work = comb_work,
    .teardown = comb_teardown,
    .check_kind = CPLAB_KB_CHECK_TOLERANCE,
    .rate = CPLAB_KB_RATE_BYTES,
    .work_note = "gbps: the D partials read (lse and 512 fp32 a (row, head)) and the combined row written, against the "
                 "copy",
};
