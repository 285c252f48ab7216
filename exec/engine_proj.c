/* The synthetic layer's projections on one rank (engine_internal.h): the
 * GEMMs of an absorbed sparse-MLA layer at the model's shapes, on generated
 * weights and inputs, in bf16 or as fp8 GEMMs (e4m3 with per-tensor scales,
 * bf16 out). Before attention: q_a/kv_a, q_b, the W_UK absorption and the
 * indexer's wq_b, wk and weights; after: W_UV on the attention output and
 * o_proj. Their FLOP are plancost.h's; their outputs do not feed the
 * attention (engine_rank.c says why).
 *
 * fp8: cuBLASLt's fp8 GEMMs need m, n and k in multiples of 16, so the rows
 * are the rank's tokens rounded up to 16 (the extra rows are generated too);
 * a model dimension that is not a multiple of 16 is an error naming the
 * GEMM. Weights are generated uniform in (-1, 1) with the per-tensor scale
 * 1/sqrt(fan_in) as their b_scale (e4m3 keeps the values normal); the
 * attention output and W_UV's output are quantised (scale 1) before the
 * next GEMM, as a serving engine's fp8 linear layers do. */
#include <math.h>
#include <string.h>

#include "cplab/kvformat.h"
#include "engine_internal.h"

/* Tensor ids of the generated values (cplab_gen_bf16 / cplab_gen_e4m3):
 * weights 1 + enum proj_gemm, inputs after them. */
enum { GEN_W = 1, GEN_X = 1 + PROJ_GEMMS, GEN_Q_LAT, GEN_UK_IN };
/* Floats between two per-tensor scales in device memory (256 bytes). */
enum { SCALE_STRIDE = 64 };

/* The shape of each GEMM: C[m][n] = A[m][k] · W[n][k]^T, m in units of rows
 * (the rank's tokens) times m_per_row. */
typedef struct proj_shape {
  int64_t m_per_row, n, k;
} proj_shape;

static void shapes(const engine_rank *r, proj_shape sh[PROJ_GEMMS]) {
  const cplab_model *m = r->in->model;
  int64_t Hl = r->Hl, dm = m->hidden_size, ql = m->q_lora_rank, kvl = m->kv_lora_rank, v = m->v_head_dim;
  int64_t rope = m->qk_rope_head_dim, nope = m->qk_nope_head_dim, hi = m->index_n_heads, di = m->index_head_dim;
  sh[PROJ_A] = (proj_shape){1, ql + kvl + rope, dm};
  sh[PROJ_QB] = (proj_shape){1, Hl * (nope + rope), ql};
  sh[PROJ_UK] = (proj_shape){Hl, kvl, nope};
  sh[PROJ_IQ] = (proj_shape){1, hi * di, ql};
  sh[PROJ_IK] = (proj_shape){1, di, dm};
  sh[PROJ_IW] = (proj_shape){1, hi, dm};
  sh[PROJ_UV] = (proj_shape){Hl, v, kvl};
  sh[PROJ_O] = (proj_shape){1, dm, Hl * v};
}

static const char *const proj_names[PROJ_GEMMS] = {"q_a/kv_a", "q_b", "W_UK", "indexer wq_b", "indexer wk",
                                                   "indexer weights", "W_UV", "o_proj"};

/* count generated values, bf16 (scaled) or e4m3 (unit range; the scale goes to the GEMM). */
static int gen(engine_step *s, engine_rank *k, void **out, uint32_t tensor, int64_t count, float scale, cplab_diag *d) {
  int rc = exec_arena_alloc(&k->mem, out, (s->fp8 ? 1 : 2) * (size_t)count, d);
  uint64_t seed = k->in->seed ^ ((uint64_t)k->r << 40);
  if (!rc && s->fp8) rc = cplab_gen_e4m3(seed, tensor, *out, count, 1.0f, s->stream, d);
  else if (!rc) rc = cplab_gen_bf16(seed, tensor, *out, count, scale, s->stream, d);
  return rc;
}

int engine_proj_setup(engine_step *s, engine_rank *k, cplab_diag *d) {
  proj_shape sh[PROJ_GEMMS];
  shapes(k, sh);
  k->proj_rows = s->fp8 ? (k->T + 15) / 16 * 16 : k->T;
  /* The scales 256 bytes apart: cplab_gemm_fp8 wants each 16-byte aligned. */
  float scales[(PROJ_GEMMS + 1) * SCALE_STRIDE];
  memset(scales, 0, sizeof scales);
  int rc = 0;
  for (int g = 0; g < PROJ_GEMMS && !rc; g++) {
    if (s->fp8 && (sh[g].n % 16 || sh[g].k % 16))
      rc = cplab_diag_set(d, CPLAB_EUNSUPPORTED, "fp8 projections: the %s GEMM is %lld x %lld (n x k); cuBLASLt's fp8 "
                          "GEMMs need multiples of 16", proj_names[g], (long long)sh[g].n, (long long)sh[g].k);
    scales[g * SCALE_STRIDE] = (float)(1.0 / sqrt((double)sh[g].k));
    if (!rc) rc = gen(s, k, &k->w[g], GEN_W + (uint32_t)g, sh[g].n * sh[g].k, scales[g * SCALE_STRIDE], d);
  }
  scales[PROJ_GEMMS * SCALE_STRIDE] = 1.0f; /* the inputs' a_scale */
  int64_t R = k->proj_rows;
  for (int g = 0; g < PROJ_GEMMS; g++) /* fixed for the step: the launches only read them */
    k->proj_mnk[g][0] = R * sh[g].m_per_row, k->proj_mnk[g][1] = sh[g].n, k->proj_mnk[g][2] = sh[g].k;
  const cplab_model *m = k->in->model;
  if (!rc) rc = gen(s, k, &k->x, GEN_X, R * m->hidden_size, 1.0f, d);
  if (!rc) rc = gen(s, k, &k->q_lat, GEN_Q_LAT, R * m->q_lora_rank, 1.0f, d);
  if (!rc) rc = gen(s, k, &k->uk_in, GEN_UK_IN, R * sh[PROJ_UK].m_per_row * sh[PROJ_UK].k, 1.0f, d);
  if (!rc && s->fp8) rc = exec_arena_put(&k->mem, &k->w_scale, scales, sizeof scales, d);
  uint16_t **outs[PROJ_GEMMS] = {&k->a_out, &k->qb_out, &k->uk_out, &k->iq_out, &k->ik_out, &k->iw_out, &k->uv_out,
                                 &k->o_out};
  for (int g = 0; g < PROJ_GEMMS && !rc; g++)
    rc = exec_arena_alloc(&k->mem, outs[g], sizeof(uint16_t) * (size_t)(R * sh[g].m_per_row * sh[g].n), d);
  size_t attn = (size_t)(R * k->Hl) * CPLAB_MLA_NOPE_DIM;
  if (!rc && !s->fp8) rc = exec_arena_alloc(&k->mem, &k->attn_bf16, sizeof(uint16_t) * attn, d);
  if (!rc && s->fp8) rc = exec_arena_alloc(&k->mem, &k->attn_q, attn, d);
  if (!rc && s->fp8) rc = exec_arena_alloc(&k->mem, &k->uv_q, (size_t)(R * sh[PROJ_O].k), d);
  return rc;
}

static int gemm(engine_step *s, const engine_rank *k, int g, const void *A, uint16_t *C, cplab_diag *d) {
  const int64_t *mnk = k->proj_mnk[g];
  if (!s->fp8) return cplab_gemm_bf16(s->gemm, mnk[0], mnk[1], mnk[2], A, k->w[g], C, s->stream, d);
  return cplab_gemm_fp8(s->gemm, mnk[0], mnk[1], mnk[2], A, k->w[g], k->w_scale + PROJ_GEMMS * SCALE_STRIDE,
                        k->w_scale + g * SCALE_STRIDE, C, s->stream, d);
}

int engine_proj_pre(engine_step *s, const engine_rank *k, cplab_diag *d) {
  int rc = gemm(s, k, PROJ_A, k->x, k->a_out, d);
  if (!rc) rc = gemm(s, k, PROJ_QB, k->q_lat, k->qb_out, d);
  if (!rc) rc = gemm(s, k, PROJ_UK, k->uk_in, k->uk_out, d);
  if (!rc) rc = gemm(s, k, PROJ_IQ, k->q_lat, k->iq_out, d);
  if (!rc) rc = gemm(s, k, PROJ_IK, k->x, k->ik_out, d);
  if (!rc) rc = gemm(s, k, PROJ_IW, k->x, k->iw_out, d);
  return rc;
}

int engine_proj_post(engine_step *s, const engine_rank *k, cplab_diag *d) {
  int64_t n = k->T * k->Hl * CPLAB_MLA_NOPE_DIM; /* the real tokens' attention output */
  if (!s->fp8) {
    int rc = cplab_f32_to_bf16(k->attn_out, n, k->attn_bf16, s->stream, d);
    if (!rc) rc = gemm(s, k, PROJ_UV, k->attn_bf16, k->uv_out, d);
    if (!rc) rc = gemm(s, k, PROJ_O, k->uv_out, k->o_out, d);
    return rc;
  }
  int rc = cplab_f32_to_e4m3(k->attn_out, n, 1.0f, k->attn_q, s->stream, d);
  if (!rc) rc = gemm(s, k, PROJ_UV, k->attn_q, k->uv_out, d);
  if (!rc) rc = cplab_bf16_to_e4m3(k->uv_out, k->proj_mnk[PROJ_O][0] * k->proj_mnk[PROJ_O][2], 1.0f, k->uv_q, s->stream, d);
  if (!rc) rc = gemm(s, k, PROJ_O, k->uv_q, k->o_out, d);
  return rc;
}
