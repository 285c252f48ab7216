/* exec/engine_internal.h: what the batched engine's files share (engine.c
 * drives a scenario; engine_rank.c holds one rank's buffers and launches
 * the pieces of its layer; engine_proj.c the projections; engine_nccl.c
 * the NCCL transport). Not an interface: engine.h is.
 *
 * A layer on one rank is a sequence of pieces, each of one phase:
 *   PRE_COMM   the collectives before attention (KV and indexer-key insert
 *              gathers, the decode query gather): device copies
 *   PROJ_PRE   the q_a/kv_a, q_b, W_UK absorption and indexer projections
 *   KEY_SHARD  this rank's blocks of the gathered indexer keys, from its own
 *              cache (prefill chunks)
 *   WS_SHARD   its blocks of the plan's prefill workspaces (or, without a
 *              gathered plan, each prefill row's context from its cache)
 *   SHARD_COMM the all-gathers of those blocks over DCP: real copies of the
 *              peers' blocks (ncclAllGather in place on several GPUs)
 *   INDEXER    the keys in logical order, indexer logits, top-k (decode
 *              rows: logits straight from the cache through the block
 *              table, under DCP over this rank's own keys, its candidates)
 *   TOPK_COMM  the all-gather of the decode rows' candidates over DCP
 *   TOPK_MERGE their exact merge into each decode row's top-k
 *   ATTN       conversion and sparse MLA (prefill rows; the decode rows'
 *              partial over this rank's DCP shard)
 *   PART_COMM  the decode partials' all-gather over DCP: real copies
 *   COMBINE    the LSE combine of the decode rows
 *   PROJ_POST  W_UV and o_proj
 *   MID_COMM   the o_proj all-reduce, the MoE dispatch gathers
 *   MOE        the MoE block on the plan's path (cplab_moe_run)
 *   MOE_COMM   the MoE combine (reduce-scatter or the fast all-reduce)
 * Ranks meet at the collectives: a layer is six segments,
 * PRE_COMM..WS_SHARD, SHARD_COMM..INDEXER, TOPK_COMM..ATTN,
 * PART_COMM..PROJ_POST, MID_COMM..MOE and MOE_COMM, and on one device a
 * segment lasts as long as its slowest rank. */
#ifndef CPLAB_EXEC_ENGINE_INTERNAL_H
#define CPLAB_EXEC_ENGINE_INTERNAL_H

#include <stdint.h>

#include "arena.h"
#include "cplab/plan.h"
#include "cplab_kernels.h"
#include "cplab_moe.h"
#include "cplab_stream.h"
#include "engine.h"
#include "exec.h"

enum {
  PIECE_PRE_COMM, PIECE_PROJ_PRE, PIECE_KEY_SHARD, PIECE_WS_SHARD, PIECE_SHARD_COMM, PIECE_INDEXER, PIECE_TOPK_COMM,
  PIECE_TOPK_MERGE, PIECE_ATTN, PIECE_PART_COMM, PIECE_COMBINE, PIECE_PROJ_POST, PIECE_MID_COMM, PIECE_MOE,
  PIECE_MOE_COMM, PIECE_COUNT
};
enum { ENGINE_SEGMENTS = EXEC_ENGINE_SEGMENTS };
/* First piece of each segment, and PIECE_COUNT as the end. */
extern const int engine_segment_first[ENGINE_SEGMENTS + 1];
/* The phase (engine.h's EXEC_PHASE_*) each piece counts to. */
extern const int engine_piece_phase[PIECE_COUNT];
/* 1 for pieces that piecewise graphs leave outside (attention). */
extern const int engine_piece_is_attention[PIECE_COUNT];

/* The projections' GEMMs: q_a/kv_a, q_b, W_UK absorption, the indexer's
 * wq_b, wk and weights (before attention), W_UV and o_proj (after). */
enum proj_gemm { PROJ_A, PROJ_QB, PROJ_UK, PROJ_IQ, PROJ_IK, PROJ_IW, PROJ_UV, PROJ_O, PROJ_GEMMS };

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
  int64_t *key_slots;     /* device [nkeys]: slots in this rank's caches (no gathered keys: DCP 1) */
  int ws;                 /* the plan's workspace chunk, or -1: its own workspace below */
  uint16_t *own_ws;       /* [nkeys][576]: the request's context in logical order (no gathered plan),
                           * gathered through key_slots (the same slots index both caches) */
  int64_t *ws_start, *shard_rows; /* device, one value each: the conversion's region */
} engine_prefill_row;

/* One of the plan's collectives that the engine does not carry out with
 * real data: on one device a copy of the bytes a rank would receive, on
 * several GPUs the NCCL call of the plan's kind, group and size. */
typedef struct engine_copy {
  int piece;
  size_t bytes;          /* single device: the ring's received bytes */
  cplab_collective coll; /* NCCL: what is called (count agreed over the ranks) */
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
  /* this rank's caches (num_slots entries each) */
  uint8_t *kv_own, *idx_own;
  int64_t num_slots;
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
  int32_t *ks, *ke;            /* [T]: key bounds, relative to the row's keys (decode: own keys under DCP) */
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
  /* head padding (exec_engine_opts.head_pad): the attention kernels run Hp
   * heads (Hgp for the decode rows' DCP group) on these, the real heads
   * copied in and out; NULL where the kernels' own head blocks already run
   * Hp (Hgp) heads (CPLAB_MLA_HEAD_BLOCK: Hp <= Hl rounded up to 64): they
   * then run the real heads, the same work without the copies or memory */
  int Hp, Hgp;
  uint16_t *q_pad;             /* [T][Hp][576], padding heads zero */
  float *out_pad, *lse_pad;    /* [T][Hp][512], [T][Hp] */
  uint16_t *qg_pad;            /* [Tdec][Hgp][576], padding heads zero */
  float *gout_pad, *glse_pad;  /* [Tdec][Hgp][512], [Tdec][Hgp]: this rank's partials before the slice */
  /* decode rows: their keys read from this rank's cache through the block
   * table (own keys under DCP); every DCP peer's local top-k candidates,
   * group queries and every peer's partials */
  int32_t *cand;               /* [D][Tdec][K]: peer o's local top-k at o, as local indices */
  float *cand_score;           /* [D][Tdec][K] */
  int32_t *dec_req, *block_table;
  int32_t *dec_zero, *dec_n;    /* [Tdec]: 0, and the keys (own keys under DCP) each decode token sees */
  int64_t dec_max_n;            /* the largest of dec_n: the decode logits' row length */
  void *topk_scratch;           /* the decode top-k's split (cplab_topk_scratch) */
  size_t topk_scratch_bytes;
  uint16_t *qg;                /* [Tdec][Hg][576] */
  float *gout, *glse, *fin;    /* [D][Tdec][Hg][512], [D][Tdec][Hg], [Tdec][Hg][512] */
  void *dec_scratch;           /* the split decode's partial results (cplab_sparse_mla_decode_scratch) */
  size_t dec_scratch_bytes;
  /* MoE */
  cplab_moe_plan *moe_plan;
  uint16_t *moe_x;
  float *moe_out;
  /* the plan's other collectives */
  int num_copies;
  engine_copy *copies;
  exec_arena mem;
} engine_rank;

/* What the ranks of a step share in this process. On one device (the
 * single-device backend) that is every rank of the layout, with every
 * rank's caches in one allocation; on several GPUs (NCCL) one rank, `me`. */
typedef struct engine_step {
  int world;
  int me;                       /* the rank this process holds, or -1: all of them (one device) */
  engine_rank *ranks;           /* [world]; under NCCL only ranks[me] is set up */
  exec_nccl *nccl;              /* NCCL: the executor's communicators; NULL on one device */
  uint8_t *kv, *idx;            /* caches: [world][num_slots] entries on one device, this rank's under NCCL */
  int64_t num_slots;
  const cplab_rank_table *t;
  cplab_gemm *gemm;
  void *stream;
  int fp8;                      /* projections as fp8 GEMMs */
  int head_pad;                 /* exec_engine_opts.head_pad */
  uint8_t *copy_src, *copy_dst; /* scratch of the collectives' stand-ins (copies or NCCL calls) */
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

/* The NCCL transport (engine_nccl.c; built with NCCL), each launched on
 * s->stream and capturable:
 *   engine_nccl_shards    SHARD_COMM: every gathered buffer of rank k,
 *                         all-gathered in place over DCP (block o is DCP
 *                         rank o's, so the buffers come out rank-major)
 *   engine_nccl_candidates TOPK_COMM: the decode rows' local top-k
 *                         candidates, likewise
 *   engine_nccl_partials  PART_COMM: the decode partials, likewise
 *   engine_nccl_calls     the plan's collectives of `piece` (engine_copy)
 * and what the ranks agree on over MPI (every rank calls them together,
 * after engine_nccl_status found every rank's setup done):
 *   engine_nccl_agree_counts  each collective's count: the largest rank's
 *                         (NCCL needs equal counts), and the scratch it needs
 *   engine_nccl_agree_shapes  that the DCP peers' gathered blocks match
 *   engine_nccl_max / _sum    a reduction of doubles / int64 over the ranks
 *   engine_nccl_status    0 when every rank's rc is 0; otherwise rc, or
 *                         CPLAB_EDISAGREE "another rank failed"
 *   engine_nccl_barrier   every rank's queued work done, then MPI_Barrier */
#if CPLAB_EXEC_NCCL
int engine_nccl_shards(engine_step *s, const engine_rank *k, cplab_diag *d);
int engine_nccl_partials(engine_step *s, const engine_rank *k, cplab_diag *d);
int engine_nccl_candidates(engine_step *s, const engine_rank *k, cplab_diag *d);
int engine_nccl_calls(engine_step *s, const engine_rank *k, int piece, cplab_diag *d);
int engine_nccl_agree_counts(engine_step *s, engine_rank *k, cplab_diag *d);
int engine_nccl_agree_shapes(engine_step *s, const engine_rank *k, cplab_diag *d);
int engine_nccl_max(double *v, size_t n, cplab_diag *d);
int engine_nccl_sum(int64_t *v, size_t n, cplab_diag *d);
int engine_nccl_status(int rc, cplab_diag *d);
int engine_nccl_barrier(engine_step *s, cplab_diag *d);
#else /* no NCCL in this build: s->nccl is always NULL, and these are never reached */
static inline int engine_no_nccl(cplab_diag *d) { return cplab_diag_set(d, CPLAB_EUNSUPPORTED, "this build has no NCCL"); }
#define engine_nccl_shards(s, k, d) engine_no_nccl(d)
#define engine_nccl_partials(s, k, d) engine_no_nccl(d)
#define engine_nccl_candidates(s, k, d) engine_no_nccl(d)
#define engine_nccl_calls(s, k, piece, d) engine_no_nccl(d)
#define engine_nccl_agree_counts(s, k, d) engine_no_nccl(d)
#define engine_nccl_agree_shapes(s, k, d) engine_no_nccl(d)
#define engine_nccl_max(v, n, d) engine_no_nccl(d)
#define engine_nccl_sum(v, n, d) engine_no_nccl(d)
#define engine_nccl_status(rc, d) (rc)
#define engine_nccl_barrier(s, d) engine_no_nccl(d)
#endif

#endif
