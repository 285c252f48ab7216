/* Plan-derived work of one rank in one layer: see plancost.h. */
#include "plancost.h"

#include <string.h>

#include "cplab/heads.h"
#include "cplab/kvformat.h"

/* 2·(576 + 512): the score and value products of one attended row and head. */
#define ATTN_FLOP_PER_ROW_HEAD (2.0 * (CPLAB_MLA_ROW_DIM + CPLAB_MLA_NOPE_DIM))

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Projection FLOP of one token on a rank with heads_local heads. */
static double proj_flop_per_token(const cplab_model *m, int64_t heads_local) {
  double d = (double)m->hidden_size, ql = (double)m->q_lora_rank, kvl = (double)m->kv_lora_rank;
  double rope = (double)m->qk_rope_head_dim, nope = (double)m->qk_nope_head_dim, v = (double)m->v_head_dim;
  double hi = (double)m->index_n_heads, di = (double)m->index_head_dim;
  double replicated = 2 * d * (ql + kvl + rope) + 2 * ql * hi * di + 2 * d * di + 2 * d * hi;
  double per_head = 2 * ql * (nope + rope) + 2 * nope * kvl + 2 * kvl * v + 2 * v * d;
  return replicated + (double)heads_local * per_head;
}

/* MoE FLOP of one row on one of S expert shards. */
static double moe_flop_per_row(const cplab_model *m, int S) {
  double d = (double)m->hidden_size, I = (double)m->moe_intermediate_size;
  double router = 2 * d * (double)m->n_routed_experts;
  double routed = (double)m->n_active_experts / S * 6 * d * I;
  double shared = 6 * d * I * (double)m->n_shared_experts / S;
  return router + routed + shared;
}

/* Indexer pairs and attended rows of a prefill row: tokens at positions
 * start_pos .. start_pos + len - 1, each over keys 0 .. p. */
static void prefill_row(const cplab_row *r, int64_t K, double *pairs, double *attn) {
  double len = (double)r->len, p0 = (double)r->start_pos;
  *pairs += len * p0 + len * (len + 1) / 2;
  int64_t below = r->start_pos >= K ? 0 : min64(r->len, K - r->start_pos); /* tokens with p + 1 <= K */
  double b = (double)below;
  *attn += b * p0 + b * (b + 1) / 2 + (len - b) * (double)K;
}

int cplab_bench_work_of(const cplab_step_input *in, const cplab_rank_plan *p, cplab_bench_work *out, cplab_diag *d) {
  memset(out, 0, sizeof *out);
  const cplab_model *m = in->model;
  const cplab_parallel *par = in->par;
  if (!p || p->split.num_rows < 0) CPLAB_FAIL(d, CPLAB_EINVAL, "plan cost: no plan");
  int T = par->tp, P = par->pcp, D = par->dcp;
  int64_t K = m->index_topk, heads_local = m->num_heads / T, heads_dcp = heads_local * (D < T ? D : T);
  double pairs = 0, decode_pairs = 0, attn_prefill = 0, attn_decode = 0;
  for (int i = 0; i < p->split.num_rows; i++) {
    const cplab_row *r = &p->split.rows[i];
    if (r->len <= 0) continue;
    if (r->is_prefill && !cplab_row_on_local_shard(par, r)) {
      out->prefill_tokens += r->len;
      out->prefill_keys += (double)r->seq_len;
      prefill_row(r, K, &pairs, &attn_prefill);
    } else if (r->is_prefill) { /* DCP without PCP: this rank's share of the causal context, the DCP group's heads */
      double own_pairs = 0, own_attn = 0;
      out->prefill_tokens += r->len;
      prefill_row(r, K, &own_pairs, &own_attn);
      pairs += own_pairs / D;
      attn_decode += own_attn / D;
    } else {
      out->decode_tokens += r->len;
      decode_pairs += (double)r->len * (double)r->dcp_local_seq_len;
      attn_decode += (double)r->len * (double)min64(K, r->seq_len) / D;
    }
  }
  out->tokens = out->prefill_tokens + out->decode_tokens;
  out->moe_rows = p->sched.moe_fast_path ? out->tokens : (int64_t)P * p->sched.padded_num_tokens;
  out->proj_flop = (double)out->tokens * proj_flop_per_token(m, heads_local);
  out->moe_flop = (double)out->moe_rows * moe_flop_per_row(m, T * P);
  out->prefill_pairs = pairs, out->decode_pairs = decode_pairs;
  pairs += decode_pairs;
  out->indexer_pairs = pairs;
  out->indexer_flop = pairs * 2.0 * (double)m->index_n_heads * (double)m->index_head_dim;
  out->logits_bytes = pairs * 8.0; /* fp32 logits written, then read by the top-k */
  out->attn_rows = attn_prefill + attn_decode;
  out->attn_prefill_rows = attn_prefill, out->attn_decode_rows = attn_decode;
  out->attn_flop = ATTN_FLOP_PER_ROW_HEAD * (attn_prefill * (double)heads_local + attn_decode * (double)heads_dcp);
  out->attn_flop_run = out->attn_flop;
  for (int c = 0; c < p->num_collectives; c++) {
    const cplab_collective *col = &p->collectives[c];
    if ((int)col->what < 0 || col->what >= CPLAB_CW_COUNT) CPLAB_FAIL(d, CPLAB_EINTERNAL, "plan cost: bad collective");
    out->comm_bytes[col->what] += (double)col->count * cplab_dtype_bytes(col->dtype);
  }
  return 0;
}

void cplab_bench_heads_of(const cplab_model *m, const cplab_parallel *par, int pad, cplab_bench_heads *out) {
  int T = par->tp, D = par->dcp;
  out->pad = pad;
  out->real = (int)(m->num_heads / T), out->group_real = out->real * (D < T ? D : T);
  out->run = cplab_heads_run(out->real, pad), out->group_run = cplab_heads_run(out->group_real, pad);
}

void cplab_bench_work_pad(cplab_bench_work *w, const cplab_model *m, const cplab_parallel *par, int pad) {
  cplab_bench_heads h;
  cplab_bench_heads_of(m, par, pad, &h);
  w->attn_flop_run =
      ATTN_FLOP_PER_ROW_HEAD * (w->attn_prefill_rows * (double)h.run + w->attn_decode_rows * (double)h.group_run);
}

double cplab_bench_work_comm_total(const cplab_bench_work *w) {
  double s = 0;
  for (int c = 0; c < CPLAB_CW_COUNT; c++) s += w->comm_bytes[c];
  return s;
}
