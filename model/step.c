/* A step's predicted time from the plans' per-rank work: see step.h. */
#include "step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kvformat.h"
#include "cplab/layout.h"
#include "cplab/parallel.h"
#include "cplab/ranks.h"
#include "plancost.h"
#include "steptime.h"

enum { SEG_PRE, SEG_SHARD, SEG_TOPK, SEG_PART, SEG_MID, SEG_MOE_COMM };
enum { PH_PROJ, PH_INDEXER, PH_ATTN, PH_MOE, PH_COMM };
enum { ROW = CPLAB_BENCH_PHASES + 1 };

const char *cplab_model_phase_name(int p) {
  static const char *const n[CPLAB_MODEL_PHASES] = {"proj", "indexer", "attention", "moe", "comm"};
  return p >= 0 && p < CPLAB_MODEL_PHASES ? n[p] : "?";
}

/* The segment each collective of the plan is issued in (engine_internal.h). */
static int segment_of(cplab_coll_what w) {
  switch (w) {
  case CPLAB_CW_KV_INSERT_GATHER:
  case CPLAB_CW_INDEX_K_INSERT_GATHER:
  case CPLAB_CW_DECODE_Q_GATHER: return SEG_PRE;
  case CPLAB_CW_INDEXER_K_GATHER:
  case CPLAB_CW_MLA_KV_GATHER: return SEG_SHARD;
  case CPLAB_CW_DECODE_LSE_GATHER:
  case CPLAB_CW_DECODE_OUT_COMBINE: return SEG_PART;
  case CPLAB_CW_O_PROJ_ALLREDUCE:
  case CPLAB_CW_MOE_HIDDEN_GATHER:
  case CPLAB_CW_MOE_ROUTER_GATHER: return SEG_MID;
  case CPLAB_CW_OUTPUT_GATHER: return -1; /* after the last layer */
  default: return SEG_MOE_COMM;
  }
}

typedef struct rank_ctx {
  const cplab_model_inputs *in;
  const cplab_parallel *par;
  double copy_rate; /* single-device backend: bytes per us of a device copy */
  double compute, memory; /* the card's ratios (inputs' scales, 1 when 0) */
  cplab_model_result *res;
  double weights, kv_tokens, contexts; /* the busiest rank's, at the last step */
} rank_ctx;

/* One collective's time in ms; features counted on the single-device backend. */
static int coll_ms(rank_ctx *c, cplab_coll_kind kind, cplab_group_kind g, int rank, double count_bytes, double *ms,
                   cplab_model_features *f, cplab_diag *d) {
  int n = cplab_group_size(c->par, g);
  *ms = 0;
  if (n <= 1) return 0;
  double S = kind == CPLAB_COLL_ALL_GATHER ? count_bytes * n : count_bytes;
  if (!c->in->link) { /* device copies of the bytes a ring would move */
    double us = S * cplab_model_coll_factor(kind, n) / c->copy_rate;
    f->copy_colls += 1, f->copy_us += us;
    *ms = (c->in->params->copy_latency_us + us) / 1e3;
    return 0;
  }
  int members[1024], nodes_span = 0;
  if (n > 1024) CPLAB_FAIL(d, CPLAB_ERANGE, "link model: a group of %d ranks (at most 1024)", n);
  int rc = cplab_group_members(c->par, g, rank, members, d);
  if (rc) return rc;
  int gpn = c->in->link->gpus_per_node > 0 ? c->in->link->gpus_per_node : 1;
  for (int i = 1; i < n; i++) nodes_span |= members[i] / gpn != members[0] / gpn;
  *ms = cplab_model_tier_us(nodes_span ? &c->in->link->inter : &c->in->link->intra, kind, n, S) / 1e3;
  return 0;
}

/* Table lookup in ms, counting extrapolations. */
static int kernel_ms(rank_ctx *c, cplab_model_kernel k, double series, double work, double *acc, cplab_diag *d) {
  cplab_model_lookup l;
  if (!c->in->table) return 0; /* features only */
  int rc = cplab_model_table_time(c->in->table, k, series, work, c->in->extrapolate, &l, d);
  if (rc) return rc;
  c->res->extrapolated += l.extrapolated;
  int compute = k == CPLAB_MK_ATTN_PREFILL || k == CPLAB_MK_LOGITS_PREFILL; /* tensor-core bound */
  *acc += l.time_us / 1e3 / (compute ? c->compute : c->memory);
  return 0;
}

/* The prefill rows' indexer as the engine launches it (exec/engine_rank.c,
 * topk_rows and decode_topk): a row's tokens in launches of `rows` query
 * rows, the plan's logits budget (vLLM's VLLM_SPARSE_INDEXER_MAX_LOGITS_MB,
 * 512 MiB when unset) over the longest key row of the rank, at most its
 * longest row; each launch's logits and top-k looked up at its own pairs:
 * causal (a token at p scores keys 0 .. p), or for a prefill row on the
 * local shard (DCP without PCP, run with the decode tokens) the rank's own
 * 1/D of them, as plancost counts them. */
static int prefill_indexer_ms(rank_ctx *c, const cplab_rank_plan *p, double ih, double *acc, cplab_diag *d) {
  const cplab_split *sp = &p->split;
  int64_t max_keys = 0, max_len = 0, shard = 0;
  for (int i = 0; i < sp->num_rows; i++) {
    const cplab_row *r = &sp->rows[i];
    if (r->len <= 0) continue;
    int gathered = r->is_prefill && !cplab_row_on_local_shard(c->par, r);
    int64_t keys = gathered ? r->seq_len : r->dcp_local_seq_len;
    max_keys = keys > max_keys ? keys : max_keys;
    if (gathered) max_len = r->len > max_len ? r->len : max_len;
    else shard += r->len;
  }
  max_len = shard > max_len ? shard : max_len;
  int64_t budget = (c->par->indexer_max_logits_mb > 0 ? c->par->indexer_max_logits_mb : 512) << 20;
  int64_t rows = max_keys > 0 ? budget / (4 * max_keys) : 1;
  rows = rows < 1 ? 1 : rows > max_len && max_len > 0 ? max_len : rows;
  int rc = 0;
  for (int i = 0; i < sp->num_rows && !rc; i++) {
    const cplab_row *r = &sp->rows[i];
    if (r->len <= 0 || !r->is_prefill) continue;
    double share = cplab_row_on_local_shard(c->par, r) ? 1.0 / c->par->dcp : 1.0;
    for (int64_t q0 = 0; q0 < r->len && !rc; q0 += rows) {
      double q = (double)(r->len - q0 < rows ? r->len - q0 : rows);
      double w = share * (q * (double)(r->start_pos + q0) + q * (q + 1) / 2);
      rc = kernel_ms(c, CPLAB_MK_LOGITS_PREFILL, ih, w, acc, d);
      if (!rc) rc = kernel_ms(c, CPLAB_MK_TOPK_PREFILL, 0, w, acc, d);
    }
  }
  return rc;
}

/* Weights (bytes) of rank plan p's share of the model over `layers` layers. */
static double weight_bytes(const cplab_model *m, const cplab_parallel *par, const cplab_bench_work *w, int layers,
                           double per_param) {
  double d = (double)m->hidden_size, I = (double)m->moe_intermediate_size, S = (double)par->tp * par->pcp;
  int moe_layers = layers > m->first_dense_layers ? layers - (int)m->first_dense_layers : layers;
  double attn = w->tokens > 0 ? w->proj_flop / (2.0 * (double)w->tokens) : 0; /* 2 FLOP a weight a token */
  double moe = ((double)m->n_routed_experts + (double)m->n_shared_experts) / S * 3 * d * I + d * (double)m->n_routed_experts;
  double dense = 3 * d * (double)m->dense_intermediate_size / par->tp;
  double embed = 2 * (double)m->vocab_size * d / par->tp;
  return per_param * (attn * layers + moe * moe_layers + dense * (layers - moe_layers) + embed);
}

/* Expected GB of expert weights one shard reads for `rows` rows. */
static double moe_weight_gb(const cplab_model *m, int shards, double rows) {
  double E = (double)m->n_routed_experts, k = (double)m->n_active_experts;
  double touched = rows > 0 ? (E / shards) * (1 - pow(1 - k / E, rows)) : 0;
  double experts = touched + (double)m->n_shared_experts / shards;
  return experts * 3.0 * (double)m->hidden_size * (double)m->moe_intermediate_size * 2.0 / 1e9;
}

/* The segments [CPLAB_BENCH_SEGMENTS][ROW] of rank r's layer and its output gather. */
static int rank_layer(rank_ctx *c, const cplab_step_input *si, const cplab_rank_plan *p, int r, double *seg,
                      double *out, cplab_model_features *f, cplab_diag *d) {
  const cplab_model *m = si->model;
  const cplab_model_params *pa = c->in->params;
  cplab_bench_work w;
  int rc = cplab_bench_work_of(si, p, &w, d);
  if (rc) return rc;
  int T = c->par->tp, D = c->par->dcp, P = c->par->pcp;
  double heads = (double)(m->num_heads / T), heads_dcp = heads * (D < T ? D : T), K = (double)m->index_topk;
  double ih = (double)m->index_n_heads, t;
#define ADD(sg, ph, v) (seg[(sg) * ROW + (ph)] += (v), seg[(sg) * ROW + CPLAB_BENCH_PHASES] += (v))
  /* Collectives, in the plan's order, into their segments. */
  *out = 0;
  for (int i = 0; i < p->num_collectives && !rc; i++) {
    const cplab_collective *col = &p->collectives[i];
    double ms = 0, bytes = (double)col->count * cplab_dtype_bytes(col->dtype);
    rc = coll_ms(c, col->kind, col->group, r, bytes, &ms, f, d);
    int sg = segment_of(col->what);
    if (sg < 0) *out += ms;
    else ADD(sg, PH_COMM, ms);
  }
  /* The decode candidates' all-gather over DCP (the engine's, not a plan collective): score and id. */
  if (!rc && D > 1 && w.decode_tokens > 0) {
    double ms = 0;
    rc = coll_ms(c, CPLAB_COLL_ALL_GATHER, CPLAB_GROUP_DCP, r, (double)w.decode_tokens * K * 8, &ms, f, d);
    ADD(SEG_TOPK, PH_COMM, ms);
  }
  if (rc) return rc;
  /* Projections and MoE: the fitted lines (calib.h). */
  double proj = w.tokens > 0 ? (pa->proj_a_us + pa->proj_us_per_gflop * w.proj_flop / 1e9 / c->compute) / 1e3 : 0;
  double gb = moe_weight_gb(m, T * P, (double)w.moe_rows);
  double moe = w.moe_rows > 0 ? (pa->moe_a_us + pa->moe_us_per_gb * gb / c->memory +
                                 pa->moe_us_per_gflop * w.moe_flop / 1e9 / c->compute) / 1e3
                              : 0;
  /* Memory: this rank's weights and KV shard (every request's local length). */
  double kv = 0, ctx = 0;
  for (size_t q = 0; q < si->step->num_requests; q++) kv += (double)p->local_len[q], ctx += (double)p->sched.seq_len[q];
  double wb = weight_bytes(m, c->par, &w, c->in->layers, c->in->weight_bytes);
  if (wb + kv * c->in->layers * 788.0 > c->weights + c->kv_tokens * c->in->layers * 788.0)
    c->weights = wb, c->kv_tokens = kv, c->contexts = ctx;
  ADD(SEG_PRE, PH_PROJ, proj);
  ADD(SEG_MID, PH_MOE, moe);
  f->proj_gflop = w.proj_flop / 1e9, f->moe_gb = gb, f->moe_gflop = w.moe_flop / 1e9;
  /* The rank's workspace shard: its gathered rows, or its prefill rows' context. */
  double ws = w.comm_bytes[CPLAB_CW_MLA_KV_GATHER] / (CPLAB_MLA_ROW_DIM * 2.0);
  if (ws <= 0) ws = (double)w.prefill_tokens;
  t = 0;
  if (ws > 0) rc = kernel_ms(c, CPLAB_MK_GATHER, 0, ws, &t, d);
  ADD(SEG_PRE, PH_ATTN, t);
  /* The rank's shard of the gathered indexer keys (the engine's KEY_SHARD piece). */
  double kb = w.comm_bytes[CPLAB_CW_INDEXER_K_GATHER] / (double)CPLAB_IDX_ENTRY_BYTES;
  t = 0;
  if (!rc && kb > 0) rc = kernel_ms(c, CPLAB_MK_GATHER_IDX, 0, kb, &t, d);
  ADD(SEG_PRE, PH_INDEXER, t);
  /* Indexer: the prefill rows' keys in logical order, logits, top-k. */
  t = 0;
  if (!rc && w.prefill_keys > 0) rc = kernel_ms(c, CPLAB_MK_GATHER_IDX, 0, w.prefill_keys, &t, d);
  if (!rc && w.prefill_pairs > 0) rc = prefill_indexer_ms(c, p, ih, &t, d);
  if (!rc && w.decode_pairs > 0) rc = kernel_ms(c, CPLAB_MK_LOGITS_DECODE, ih, w.decode_pairs, &t, d);
  /* The engine converts the decode rows' top-k in the launch that writes
   * it: without DCP the top-k's (topk_decode_convert), under DCP the
   * merge's (topk_merge_convert). Tables measured before a fused kernel
   * existed price the unfused one and a conversion launch, as the engine
   * then ran them. */
  const cplab_model_table *tab = c->in->table;
  int fused = tab && tab->count[D > 1 ? CPLAB_MK_TOPK_MERGE_CONVERT : CPLAB_MK_TOPK_DECODE_CONVERT] > 0;
  if (!rc && w.decode_pairs > 0)
    rc = kernel_ms(c, fused && D == 1 ? CPLAB_MK_TOPK_DECODE_CONVERT : CPLAB_MK_TOPK_DECODE, 0, w.decode_pairs, &t, d);
  ADD(SEG_SHARD, PH_INDEXER, t);
  t = 0;
  if (!rc && D > 1 && w.decode_tokens > 0)
    rc = kernel_ms(c, fused ? CPLAB_MK_TOPK_MERGE_CONVERT : CPLAB_MK_TOPK_MERGE, D, (double)w.decode_tokens, &t, d);
  ADD(SEG_TOPK, PH_INDEXER, t);
  /* Conversion and attention (at the heads the kernels run: head_pad). */
  t = 0;
  if (!rc && w.prefill_tokens > 0) rc = kernel_ms(c, CPLAB_MK_CONVERT, 0, (double)w.prefill_tokens * K, &t, d);
  if (!rc && w.decode_tokens > 0 && !fused) rc = kernel_ms(c, CPLAB_MK_CONVERT, 1, (double)w.decode_tokens * K, &t, d);
  double run = cplab_heads_run((int)heads, c->in->head_pad), run_dcp = cplab_heads_run((int)heads_dcp, c->in->head_pad);
  if (!rc && w.attn_prefill_rows > 0) rc = kernel_ms(c, CPLAB_MK_ATTN_PREFILL, run, w.attn_prefill_rows, &t, d);
  if (!rc && w.attn_decode_rows > 0) rc = kernel_ms(c, CPLAB_MK_ATTN_DECODE, run_dcp, w.attn_decode_rows, &t, d);
  ADD(SEG_TOPK, PH_ATTN, t);
  /* The decode rows' LSE combine over DCP (the DCP group's heads). */
  t = 0;
  if (!rc && D > 1 && w.decode_tokens > 0)
    rc = kernel_ms(c, CPLAB_MK_COMBINE, D, (double)w.decode_tokens * heads_dcp, &t, d);
  ADD(SEG_PART, PH_ATTN, t);
#undef ADD
  return rc;
}

static int step_has_prefill(const cplab_step *st) {
  for (size_t i = 0; i < st->num_requests; i++)
    if (st->requests[i].new_tokens > 1) return 1;
  return 0;
}

static int graph_of(cplab_graph_mode m) {
  return m == CPLAB_GRAPH_NONE ? 0 : m == CPLAB_GRAPH_PIECEWISE ? 1 : 2;
}

/* Keep, per field, the larger of the ranks' features. */
static void feature_max(cplab_model_features *a, const cplab_model_features *b) {
  a->proj_gflop = fmax(a->proj_gflop, b->proj_gflop), a->moe_gb = fmax(a->moe_gb, b->moe_gb);
  a->moe_gflop = fmax(a->moe_gflop, b->moe_gflop), a->copy_colls = fmax(a->copy_colls, b->copy_colls);
  a->copy_us = fmax(a->copy_us, b->copy_us);
}

int cplab_model_predict(const cplab_scenario *s, const cplab_model_inputs *in, cplab_model_result *out,
                        cplab_diag *d) {
  memset(out, 0, sizeof *out);
  const cplab_layout *layout = cplab_layout_find(s->layout);
  if (!layout) CPLAB_FAIL(d, CPLAB_ENOTFOUND, "unknown layout '%s'", s->layout);
  if (!in->link && !(in->copy_gbps > 0))
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "the single-device backend's copies need a copy ceiling (a kernels.json's "
               "ceilings.copy_gbps)");
  if (s->num_steps == 0) CPLAB_FAIL(d, CPLAB_EINVAL, "the scenario has no step");
  int world = cplab_parallel_world(&s->par);
  rank_ctx c = {in, &s->par, in->copy_gbps / 2 * 1e3, in->compute_scale > 0 ? in->compute_scale : 1,
                in->memory_scale > 0 ? in->memory_scale : 1, out, 0, 0, 0};
  double *seg = calloc((size_t)world * CPLAB_BENCH_SEGMENTS * ROW, sizeof *seg), *outs = calloc((size_t)world, sizeof *outs);
  double *zero = calloc((size_t)world, sizeof *zero);
  if (!seg || !outs || !zero) {
    free(seg), free(outs), free(zero);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  }
  int rc = 0;
  for (size_t st = 0; st < s->num_steps && !rc; st++) {
    cplab_step_input si = {&s->steps[st], st, s->seed, &s->par, &s->model, layout};
    memset(seg, 0, (size_t)world * CPLAB_BENCH_SEGMENTS * ROW * sizeof *seg);
    cplab_model_features step_f = {0};
    int graph = 0;
    c.weights = c.kv_tokens = c.contexts = 0;
    for (int r = 0; r < world && !rc; r++) {
      cplab_rank_plan *p = NULL;
      cplab_model_features f = {0};
      rc = cplab_rank_plan_derive(&si, r, 0, &p, d);
      if (!rc) rc = rank_layer(&c, &si, p, r, seg + (size_t)r * CPLAB_BENCH_SEGMENTS * ROW, &outs[r], &f, d);
      if (!rc && r == 0) graph = graph_of(p->sched.runtime_mode), out->moe_fast_path = p->sched.moe_fast_path;
      feature_max(&step_f, &f);
      cplab_rank_plan_free(p);
      if (rc) cplab_diag_prefix(d, "step %zu, rank %d: ", st, r);
    }
    if (rc) break;
    int mixed[CPLAB_BENCH_PHASES] = {0};
    double layer = 0, phase[CPLAB_BENCH_PHASES], out_max = 0;
    cplab_bench_step_time(seg, 1, world, zero, mixed, &layer, phase);
    for (int r = 0; r < world; r++) out_max = fmax(out_max, outs[r]);
    int prefill = s->steps[st].num_requests > 0 && step_has_prefill(&s->steps[st]);
    double saving = in->params->graph_saving_us[graph][prefill] / 1e3;
    double n = (double)s->num_steps, L = (double)in->layers;
    out->step_ms += (L * (layer - saving) + out_max) / n;
    for (int ph = 0; ph < CPLAB_MODEL_PHASES; ph++) out->phase_ms[ph] += L * phase[ph] / n;
    out->phase_ms[PH_COMM] += out_max / n;
    out->graph = graph;
    out->features.proj_gflop += step_f.proj_gflop / n, out->features.moe_gb += step_f.moe_gb / n;
    out->features.moe_gflop += step_f.moe_gflop / n, out->features.copy_colls += step_f.copy_colls / n;
    out->features.copy_us += step_f.copy_us / n;
  }
  free(seg), free(outs), free(zero);
  if (!rc) { /* memory at the last step */
    double per_token = c.contexts > 0 ? c.kv_tokens / c.contexts * in->layers * 788.0 : 0; /* B a context token */
    out->weights_gb = c.weights / 1e9, out->kv_gb = c.kv_tokens * in->layers * 788.0 / 1e9;
    double free_b = in->card_gb * 1e9 * (in->mem_util > 0 ? in->mem_util : 1) - c.weights;
    size_t R = s->steps[s->num_steps - 1].num_requests;
    out->max_context = in->card_gb > 0 && free_b > 0 && per_token > 0 && R > 0 ? free_b / per_token / (double)R : 0;
  }
  return rc;
}
