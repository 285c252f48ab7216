/* bench/layers/engine_internal.h: what the measurement engine's files share
 * (engine.c drives a configuration; engine_rank.c holds one rank's buffers
 * and launches the pieces of its layer). Not a public interface.
 *
 * A layer on one rank is a sequence of pieces, each of one phase:
 *   PRE_COMM   the collectives before attention (KV and indexer-key insert
 *              gathers, the decode query gather): device copies
 *   PROJ_PRE   the q_a/kv_a, q_b, W_UK absorption and indexer projections
 *   KEY_SHARD  this rank's blocks of the gathered indexer keys, from its own
 *              cache (prefill chunks; decode rows' local keys under DCP)
 *   WS_SHARD   its blocks of the plan's prefill workspaces (or, without a
 *              gathered plan, each prefill row's context from its cache)
 *   SHARD_COMM the all-gathers of those blocks over DCP: real copies of the
 *              peers' blocks (ncclAllGather in place on several GPUs)
 *   INDEXER    the keys in logical order, indexer logits, top-k
 *   ATTN       conversion and sparse MLA (prefill rows; the decode rows'
 *              partial over this rank's DCP shard)
 *   PART_COMM  the decode partials' all-gather over DCP: real copies
 *   COMBINE    the LSE combine of the decode rows
 *   PROJ_POST  W_UV and o_proj
 *   MID_COMM   the o_proj all-reduce, the MoE dispatch gathers
 *   MOE        the MoE block on the plan's path (cplab_moe_run)
 *   MOE_COMM   the MoE combine (reduce-scatter or the fast all-reduce)
 * Ranks meet at the collectives: a layer is five segments,
 * PRE_COMM..WS_SHARD, SHARD_COMM..ATTN, PART_COMM..PROJ_POST,
 * MID_COMM..MOE and MOE_COMM, and on one device a
 * segment lasts as long as its slowest rank. */
#ifndef CPLAB_BENCH_ENGINE_INTERNAL_H
#define CPLAB_BENCH_ENGINE_INTERNAL_H

#include <stdint.h>

#include "cplab/plan.h"
#include "cplab_kernels.h"
#include "cplab_moe.h"
#include "cplab_stream.h"
#include "exec.h"

enum {
  PIECE_PRE_COMM, PIECE_PROJ_PRE, PIECE_KEY_SHARD, PIECE_WS_SHARD, PIECE_SHARD_COMM, PIECE_INDEXER, PIECE_ATTN,
  PIECE_PART_COMM, PIECE_COMBINE, PIECE_PROJ_POST, PIECE_MID_COMM, PIECE_MOE, PIECE_MOE_COMM, PIECE_COUNT
};
enum { ENGINE_SEGMENTS = 5 };
/* First piece of each segment, and PIECE_COUNT as the end. */
extern const int engine_segment_first[ENGINE_SEGMENTS + 1];
/* The phase of report.h each piece counts to (0 proj, 1 indexer, 2 attention, 3 moe, 4 comm). */
extern const int engine_piece_phase[PIECE_COUNT];
/* 1 for pieces that piecewise graphs leave outside (attention). */
extern const int engine_piece_is_attention[PIECE_COUNT];

/* The projections' GEMMs: q_a/kv_a, q_b, W_UK absorption, the indexer's
 * wq_b, wk and weights (before attention), W_UV and o_proj (after). */
enum proj_gemm { PROJ_A, PROJ_QB, PROJ_UK, PROJ_IQ, PROJ_IK, PROJ_IW, PROJ_UV, PROJ_O, PROJ_GEMMS };

/* Device allocations freed together (any number). */
typedef struct engine_mem {
  void **p;
  int n, cap;
} engine_mem;
int engine_mem_alloc(engine_mem *m, void *out, size_t bytes, cplab_diag *d);
int engine_mem_put(engine_mem *m, void *out, const void *host, size_t bytes, cplab_diag *d);
void engine_mem_free(engine_mem *m);

/* A buffer gathered rank-major over the DCP group: block o (rows
 * [o·block, (o+1)·block)) is DCP rank o's, gathered from its own cache
 * through own_slots (-1: padding). */
typedef struct engine_gathered {
  void *buf;
  int64_t block;
  int64_t *own_slots; /* device [block] */
} engine_gathered;

/* One prefill row (a contiguous run of one request's tokens on this rank). */
typedef struct engine_prefill_row {
  int64_t tok0, len;      /* local tokens */
  int64_t nkeys;          /* keys 0 .. seq_len - 1 */
  int key_chunk;          /* its indexer chunk's gathered keys (key_rows index them), or -1: */
  int64_t *key_rows;      /* device [nkeys] */
  int64_t *key_slots;     /* device [nkeys]: slots in the all-ranks indexer cache (no gathered keys: DCP 1) */
  int ws;                 /* the plan's workspace chunk, or -1: its own workspace below */
  uint16_t *own_ws;       /* [nkeys][576]: the request's context in logical order (no gathered plan) */
  int64_t *own_ws_slots;  /* device [nkeys] */
  int64_t *ws_start, *shard_rows; /* device, one value each: the conversion's region */
} engine_prefill_row;

/* A copy standing in for a collective on one device. */
typedef struct engine_copy {
  int piece;
  size_t bytes;
} engine_copy;

typedef struct engine_rank {
  /* plan and shapes */
  int r;
  const cplab_rank_plan *rp;
  const cplab_step_input *in;
  int64_t T, Tdec;             /* local tokens, of them decode tokens (first) */
  int K, Hl, Hg, head_off, D, o;
  int64_t moe_rows;
  float scale;
  /* caches (exec_single's, all ranks) */
  uint8_t *kv_all, *idx_all, *kv_own, *idx_own;
  int64_t slots_all, num_slots;
  /* projections (engine_proj.c): weights and GEMM inputs bf16, or e4m3
   * with per-tensor scales; outputs bf16 */
  void *w[PROJ_GEMMS];          /* by enum proj_gemm */
  float *w_scale;               /* fp8: device per-tensor scales, weight g's at g·64, the inputs' (1) after them */
  void *x, *q_lat, *uk_in, *attn_q, *uv_q; /* inputs; attn_q / uv_q: quantised (fp8) */
  uint16_t *a_out, *qb_out, *uk_out, *iq_out, *ik_out, *iw_out, *attn_bf16, *uv_out, *o_out;
  int64_t proj_rows;            /* T, rounded up to 16 for fp8 GEMMs */
  int64_t proj_mnk[PROJ_GEMMS][3]; /* each GEMM's m, n, k */
  /* indexer */
  uint8_t *iq;                 /* e4m3 [T][IH][128] */
  float *iscale, *iw;          /* [T][IH] */
  int32_t *ks, *ke;            /* [T]: prefill rows relative to their row's keys, decode rows to the joint keys */
  uint8_t *keys;               /* gathered keys, the largest row's */
  float *logits;               /* [logit_rows][largest keys] */
  int64_t logit_rows;          /* query rows per logits launch (the plan's logits budget) */
  int32_t *topk, *conv;        /* [T][K] */
  float *score;                /* [T][K] */
  int num_prefill;
  engine_prefill_row *prefill;
  /* the plan's gathered workspaces (rows: 576 bf16) and indexer keys
   * (132-byte entries, by indexer chunk; buf NULL for chunks no region starts in) */
  int nws, nkb;
  engine_gathered *ws, *kb;
  /* attention */
  uint16_t *mla_q;             /* [T][Hl][576] */
  float *attn_out, *attn_lse;  /* [T][Hl][512], [T][Hl] */
  /* decode rows: joint keys (DCP 1: slots in the all-ranks cache; DCP > 1:
   * rows of dec_local, the gathered local keys), group queries, partials of
   * every DCP peer */
  int64_t dec_keys;
  int64_t *dec_key_slots;
  engine_gathered dec_local;
  int32_t *dec_req, *block_table;
  uint16_t *qg;                /* [Tdec][Hg][576] */
  float *gout, *glse, *fin;    /* [D][Tdec][Hg][512], [D][Tdec][Hg], [Tdec][Hg][512] */
  /* MoE */
  cplab_moe_plan *moe_plan;
  uint16_t *moe_x;
  float *moe_out;
  /* collectives as copies */
  int num_copies;
  engine_copy *copies;
  engine_mem mem;
} engine_rank;

/* What every rank of a step shares on the device. */
typedef struct engine_step {
  int world;
  engine_rank *ranks;
  exec_single *xs;
  const cplab_rank_table *t;
  cplab_gemm *gemm;
  void *stream;
  int fp8;                      /* projections as fp8 GEMMs */
  uint8_t *copy_src, *copy_dst; /* scratch of the stand-in copies */
  size_t copy_bytes;
} engine_step;

/* Rank r's buffers, index lists (host maps uploaded once) and generated
 * inputs for plan rp; moe is its expert shard. Synchronous. */
int engine_rank_setup(engine_step *s, int r, const cplab_step_input *in, const cplab_rank_plan *rp, cplab_moe *moe,
                      cplab_diag *d);
void engine_rank_free(engine_rank *k);
/* The projections (engine_proj.c): weights, inputs and outputs of rank k,
 * and the GEMMs before and after attention. */
int engine_proj_setup(engine_step *s, engine_rank *k, cplab_diag *d);
int engine_proj_pre(engine_step *s, const engine_rank *k, cplab_diag *d);
int engine_proj_post(engine_step *s, const engine_rank *k, cplab_diag *d);

/* Launch piece p of rank r on s->stream (no synchronisation, no allocation:
 * capturable). */
int engine_rank_piece(engine_step *s, int r, int piece, cplab_diag *d);

#endif
