/* Rank-invariance of the numeric tensors of one run (cplab-diff --ranks, for
 * layers the ranks stored; sim/numeric.h and the executor write the same):
 *   replicated-rows  a token several ranks hold with the same heads (decode
 *                    rows on every PCP rank, replicated prefills) has the same
 *                    top-k, conversion-independent results and attention on
 *                    every one of them, bit for bit;
 *   conversion       each stored converted index is the run's layout applied
 *                    to the stored top-k by that rank (§10.1 item 11);
 *   decode-combine   a decode row's combined attention equals single-device
 *                    attention over the union of its selected tokens, within
 *                    the policy's attn_out tolerance (§10.1 item 12);
 *   partial-combine  the LSE combine of the DCP members' stored decode
 *                    partials equals each member's attention (diff_partials.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/fp8.h"
#include "cplab/kvformat.h"
#include "diff.h"
#include "reference.h"

typedef diff_rank_layer rank_layer;

static void rank_layer_free(rank_layer *l) {
  free(l->tokens), free(l->topk), free(l->conv), free(l->out), free(l->lse);
  free(l->partial_out), free(l->partial_lse);
  memset(l, 0, sizeof *l);
}

/* The decode partials (schema 1.2), where the layer stores them. */
static int read_partials(cplab_trace *t, size_t step, int layer, rank_layer *l, cplab_diag *d) {
  uint64_t dims[3];
  int rc = cplab_trace_read_tensor(t, step, layer, CPLAB_TT_ATTN_PARTIAL_OUT, dims, (void **)&l->partial_out, d);
  if (rc == CPLAB_ENOTFOUND) return 0;
  if (!rc) l->partial_heads = (int)dims[1];
  if (!rc) rc = cplab_trace_read_tensor(t, step, layer, CPLAB_TT_ATTN_PARTIAL_LSE, dims, (void **)&l->partial_lse, d);
  return rc;
}

static int read_layer(cplab_trace *t, size_t step, int layer, rank_layer *l, cplab_diag *d) {
  uint64_t dims[3];
  memset(l, 0, sizeof *l);
  l->schema_minor = cplab_trace_schema_minor(t);
  int rc = cplab_trace_read_tensor(t, step, layer, CPLAB_TT_SAMPLED_TOKENS, dims, (void **)&l->tokens, d);
  if (rc == CPLAB_ENOTFOUND) return 0; /* no rows stored for this rank */
  if (!rc) l->rows = (int64_t)dims[0];
  if (!rc) rc = cplab_trace_read_tensor(t, step, layer, CPLAB_TT_TOPK, dims, (void **)&l->topk, d);
  if (!rc) l->k = (int)dims[1];
  if (!rc) rc = cplab_trace_read_tensor(t, step, layer, CPLAB_TT_TOPK_CONVERTED, dims, (void **)&l->conv, d);
  if (!rc) rc = cplab_trace_read_tensor(t, step, layer, CPLAB_TT_ATTN_OUT, dims, (void **)&l->out, d);
  if (!rc) l->heads = (int)dims[1];
  if (!rc) rc = cplab_trace_read_tensor(t, step, layer, CPLAB_TT_ATTN_LSE, dims, (void **)&l->lse, d);
  if (!rc) rc = read_partials(t, step, layer, l, d);
  l->present = rc == 0;
  if (rc) rank_layer_free(l);
  return rc;
}

/* Replicated rows: the first rank holding a global token with the same TP
 * rank is the reference for the others. */
static void replicated_rows(diff_report *r, size_t step, int layer, cplab_rank_plan *const *plans, const rank_layer *L,
                            int world, diff_dataset *ds, diff_case *verdict) {
  for (int a = 0; a < world; a++)
    for (int64_t i = 0; L[a].present && i < L[a].rows; i++) {
      const cplab_row *ra = cplab_split_row_of(&plans[a]->split, L[a].tokens[i]);
      if (!ra) continue;
      int64_t g = diff_global_token(plans[a], ra, L[a].tokens[i]);
      for (int b = a + 1; b < world; b++) {
        if (!L[b].present || plans[b]->ids.tp != plans[a]->ids.tp || L[b].k != L[a].k || L[b].heads != L[a].heads) continue;
        for (int64_t j = 0; j < L[b].rows; j++) {
          const cplab_row *rb = cplab_split_row_of(&plans[b]->split, L[b].tokens[j]);
          if (!rb || diff_global_token(plans[b], rb, L[b].tokens[j]) != g) continue;
          size_t ho = (size_t)L[a].heads * CPLAB_MLA_NOPE_DIM;
          int same = memcmp(L[a].topk + i * L[a].k, L[b].topk + j * L[b].k, sizeof(int32_t) * (size_t)L[a].k) == 0 &&
                     memcmp(L[a].out + (size_t)i * ho, L[b].out + (size_t)j * ho, sizeof(float) * ho) == 0 &&
                     memcmp(L[a].lse + i * L[a].heads, L[b].lse + j * L[b].heads, sizeof(float) * (size_t)L[a].heads) == 0;
          ds->compared++;
          if (!same) {
            ds->differences++;
            diff_report_add(r, verdict, "replicated-rows: step %zu layer %d: global token %lld differs between ranks %d and %d "
                               "(top-k or attention)", step, layer, (long long)g, a, b);
          }
        }
      }
    }
}

/* Stored conversion = the layout applied to the stored top-k by this rank. */
static void conversion(diff_report *r, size_t step, int layer, const cplab_rank_plan *p, const rank_layer *l, int rank,
                       diff_dataset *ds, diff_case *verdict) {
  const cplab_layout *lay = p->layout;
  for (int64_t i = 0; i < l->rows; i++) {
    const cplab_row *row = cplab_split_row_of(&p->split, l->tokens[i]);
    if (!row) continue;
    int shard = cplab_row_on_local_shard(&p->env.par, row); /* decodes; every row under DCP without PCP */
    int region = shard ? -1 : cplab_prefill_region_of(&p->prefill, row->req);
    const int32_t *brow = p->sched.block_table + (int64_t)row->req * p->sched.max_blocks;
    for (int j = 0; j < l->k; j++) {
      int32_t t = l->topk[i * l->k + j], want;
      if (shard) want = cplab_layout_convert_decode(lay, &p->env, brow, p->sched.max_blocks, t, p->ids.dcp_rank);
      else if (!p->prefill.active) want = t;
      else want = cplab_layout_convert_prefill(lay, &p->env, &p->prefill, region, t, p->ids.dcp_rank);
      ds->compared++;
      if (want != l->conv[i * l->k + j]) {
        ds->differences++;
        diff_report_add(r, verdict, "conversion: rank %d step %zu layer %d local token %lld: index %d converted to %d, the "
                           "layout says %d", rank, step, layer, (long long)l->tokens[i], t, l->conv[i * l->k + j], want);
        break;
      }
    }
  }
}

/* Decode rows against single-device attention over their selected tokens. */
static int decode_combine(diff_report *r, const cplab_step_input *in, int layer, const cplab_rank_plan *p,
                          const rank_layer *l, int rank, const diff_tolerance *tol, diff_dataset *ds, diff_case *verdict,
                          cplab_diag *d) {
  int H = l->heads, K = l->k;
  double *q = malloc(sizeof(double) * (size_t)H * SIM_MLA_QK), *rows = malloc(sizeof(double) * (size_t)K * SIM_MLA_QK);
  double *out = malloc(sizeof(double) * (size_t)H * SIM_MLA_V), *lse = malloc(sizeof(double) * (size_t)H);
  int rc = q && rows && out && lse ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int64_t i = 0; !rc && i < l->rows; i++) {
    const cplab_row *row = cplab_split_row_of(&p->split, l->tokens[i]);
    if (!row || !cplab_row_on_local_shard(&p->env.par, row)) continue;
    uint32_t id = (uint32_t)in->step->requests[row->req].id, pos = (uint32_t)(row->start_pos + l->tokens[i] - row->token_offset);
    size_t n = 0;
    for (int j = 0; j < K; j++) {
      int32_t t = l->topk[i * K + j];
      if (t < 0) continue;
      uint8_t e[CPLAB_MLA_ENTRY_BYTES];
      uint16_t bf[SIM_MLA_QK];
      cplab_kvformat_mla_generate(in->seed, (uint32_t)layer, id, (uint32_t)t, e);
      cplab_kvformat_mla_dequantize(e, bf);
      for (int c = 0; c < SIM_MLA_QK; c++) rows[n * SIM_MLA_QK + c] = cplab_bf16_to_f32(bf[c]);
      n++;
    }
    for (int h = 0; h < H; h++) {
      uint16_t bf[SIM_MLA_QK];
      cplab_kvformat_mla_query(in->seed, (uint32_t)layer, id, pos, (uint32_t)(p->ids.tp * H + h), bf);
      for (int c = 0; c < SIM_MLA_QK; c++) q[(size_t)h * SIM_MLA_QK + c] = cplab_bf16_to_f32(bf[c]);
    }
    sim_attention(q, H, rows, n, cplab_model_softmax_scale(in->model), out, lse);
    double worst = 0;
    int bad = 0;
    for (int x = 0; x < H * SIM_MLA_V; x++) {
      double a = out[x], b = l->out[(size_t)i * H * SIM_MLA_V + (size_t)x], e = fabs(a - b);
      if (!(e <= tol->atol + tol->rtol * fabs(a))) bad = 1;
      if (e > worst || e != e) worst = e;
    }
    ds->compared++;
    if (worst > ds->max_abs || worst != worst) ds->max_abs = worst;
    if (bad) {
      ds->differences++;
      diff_report_add(r, verdict, "decode-combine: rank %d step %zu layer %d local token %lld: combined attention is %.3g "
                         "away from single-device attention over its %zu selected tokens",
                      rank, in->step_index, layer, (long long)l->tokens[i], worst, n);
    }
  }
  free(q), free(rows), free(out), free(lse);
  return rc;
}

/* The step's numeric checks ran when any rank stored a layer of it. */
static void mark_evaluated(const diff_numeric_cases *cases, const rank_layer *L, int world) {
  for (int k = 0; k < world; k++)
    if (L[k].present) cases->replicated->evaluated = cases->conversion->evaluated = cases->combine->evaluated = 1;
}

int diff_ranks_numeric(diff_report *r, cplab_trace *const *ranks, cplab_rank_plan *const *plans,
                       const cplab_step_input *in, int world, const diff_policy *pol, const diff_numeric_cases *cases,
                       cplab_diag *d) {
  int *layers = NULL, nl = 0;
  int rc = cplab_trace_list_layers(ranks[0], in->step_index, &layers, &nl, d);
  rank_layer *L = calloc((size_t)world, sizeof *L);
  if (!rc && !L) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int li = 0; !rc && li < nl; li++) {
    for (int k = 0; !rc && k < world; k++) rc = read_layer(ranks[k], in->step_index, layers[li], &L[k], d);
    if (!rc) mark_evaluated(cases, L, world);
    if (!rc)
      replicated_rows(r, in->step_index, layers[li], plans, L, world, diff_report_dataset(r, "replicated rows"),
                      cases->replicated);
    if (!rc)
      rc = diff_partials_check(r, in, layers[li], plans, L, world, &pol->combine, cases->partials, d);
    for (int k = 0; !rc && k < world; k++)
      if (L[k].present) {
        conversion(r, in->step_index, layers[li], plans[k], &L[k], k, diff_report_dataset(r, "converted indices"),
                   cases->conversion);
        rc = decode_combine(r, in, layers[li], plans[k], &L[k], k, &pol->t[CPLAB_TT_ATTN_OUT],
                            diff_report_dataset(r, "decode combine"), cases->combine, d);
      }
    for (int k = 0; k < world; k++) rank_layer_free(&L[k]);
  }
  free(L);
  free(layers);
  return rc;
}
