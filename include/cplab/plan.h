/* cplab/plan.h: what one rank computes in one step under PCP + DCP, derived
 * from that rank's own view: the shared scheduler output (the step, the seed
 * that fixes block ids, the layout of the run) and the rank's ids. Nothing in
 * a rank plan is copied from another rank's derivation.
 *
 * Sections of shared/reference/vllm-pcp-dcp.md: rows and replication §3,
 * ownership and slots §2, gathered prefill plan §4.1–4.2, indexer plan §4.3,
 * MoE §8, graph modes §9, collectives §10.1 (14).
 */
#ifndef CPLAB_PLAN_H
#define CPLAB_PLAN_H

#include <stdint.h>

#include "cplab/error.h"
#include "cplab/layout.h"
#include "cplab/model.h"
#include "cplab/ranks.h"
#include "cplab/scenario.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One local row: a whole request (replicated or decode) or one DualChunkSwap
 * chunk of a split prefill. */
typedef struct cplab_row {
  int32_t req;         /* global request index g (position in the step) */
  uint8_t is_prefill;  /* 0: decode row */
  uint8_t replicated;  /* the whole request on every PCP rank */
  uint8_t dummy;       /* the placeholder of a rank without rows: request 0, no tokens, at its computed position */
  int64_t start;       /* offset in the request's new tokens */
  int64_t len;         /* query tokens */
  int64_t start_pos;   /* absolute position of the first token (num_computed + start) */
  int64_t seq_len;     /* start_pos + len */
  int64_t dcp_local_seq_len;
  int64_t token_offset; /* first local token of the row (query start location) */
} cplab_row;

/* The rows of one PCP rank, decodes first, then prefills by (request, start). */
typedef struct cplab_split {
  int num_rows, num_decode_rows;
  cplab_row *rows;
  int64_t num_tokens, num_decode_tokens;
} cplab_split;

/* What every rank must agree on (§3.6, §3.7, §8, §9). */
typedef struct cplab_schedule {
  int num_requests;
  int64_t *seq_len;     /* [R] num_computed + new_tokens */
  uint8_t *replicated;  /* [R] */
  int64_t *nominal_q;   /* [R] q if replicated, else ceil(q / 2P) */
  int64_t *token_offset; /* [R + 1] global token order: request g's new tokens */
  int all_rows_replicated;
  int64_t padded_num_tokens; /* max over PCP ranks of local tokens */
  int64_t padded_prefill_tokens; /* max over PCP ranks of local prefill tokens */
  int dispatch_rows, dispatch_tokens;
  int64_t dispatch_longest;  /* max over PCP ranks of (rows, tokens, longest row) */
  int uniform_decode;        /* every request is a 1-token decode */
  cplab_graph_mode runtime_mode; /* the graph mode this batch runs in: NONE, PIECEWISE or FULL (the configured
                                  * FULL_DECODE_ONLY and FULL_AND_PIECEWISE resolve per batch) */
  int moe_fast_path;             /* all rows replicated and runtime mode != PIECEWISE */
  int max_blocks;                /* block-table width: logical blocks of B·D tokens */
  int32_t *block_table;          /* [R × max_blocks] physical block ids (shared) */
} cplab_schedule;

/* One chunk of the gathered prefill plan (§4.1). */
typedef struct cplab_prefill_chunk {
  int first_region, num_regions;
  int64_t shard_rows;              /* rows each rank contributes to the all-gather */
  int64_t token_begin, token_end;  /* local query tokens of the chunk (rank-specific) */
} cplab_prefill_chunk;

typedef struct cplab_prefill_plan {
  int active;             /* 0: no gathered prefill this step (no PCP + DCP, or no prefill rows) */
  int W;                  /* dcp size */
  int64_t budget;         /* per-rank rows per chunk: max_gathered_rows / W */
  int num_regions;
  int32_t *region_req;        /* [K] global request of region k */
  int32_t *region_first_row;  /* [K] local row index (rank-specific) */
  int32_t *region_chunk;      /* [K] */
  int64_t *extent;            /* [K] seq_len of the request */
  int64_t *rows_per_rank;     /* [K] */
  int64_t *workspace_start;   /* [K] rebased to 0 in every chunk */
  int num_chunks;
  cplab_prefill_chunk *chunks;
} cplab_prefill_plan;

/* One chunk of the indexer plan (§4.3); a region too large for the logits
 * budget becomes several sub-chunks along the query dimension. */
typedef struct cplab_indexer_chunk {
  int first_region, num_regions;
  int64_t key_rows;      /* logical keys: sum of extents */
  int64_t padded_total;  /* rows per rank of the gathered key shard */
  int64_t q_begin, q_end; /* nominal query slice: of the region when query_split, else 0 .. sum of M */
  int query_split;        /* a sub-chunk of one region too big for the logits budget */
  int skip_kv_gather;     /* sub-chunks after the first reuse the gathered keys */
  int64_t token_begin, token_end; /* local query tokens (rank-specific) */
} cplab_indexer_chunk;

typedef struct cplab_indexer_plan {
  int active;
  int num_regions;
  int32_t *region_req;     /* [K] */
  int32_t *region_chunk;   /* [K] first chunk holding region k */
  int64_t *extent;         /* [K] N_i */
  int64_t *nominal_q;      /* [K] M_i: 2·cs if split, q if replicated */
  int64_t *padded;         /* [K] rank-0 local length: rows each rank holds */
  int64_t *padded_cu;      /* [K] offset in its chunk's per-rank shard */
  int64_t *region_start;   /* [K] logical offset in its chunk's deinterleaved keys */
  int num_chunks;
  cplab_indexer_chunk *chunks;
  int64_t *ks, *ke;        /* [local tokens] key bounds, -1 for decode tokens (token maps only) */
} cplab_indexer_plan;

typedef enum cplab_coll_kind { CPLAB_COLL_ALL_GATHER = 0, CPLAB_COLL_ALL_REDUCE, CPLAB_COLL_REDUCE_SCATTER } cplab_coll_kind;
typedef enum cplab_dtype { CPLAB_DT_BF16 = 0, CPLAB_DT_FP32, CPLAB_DT_U8 } cplab_dtype;

/* What a collective is for (stable codes: traces store them). */
typedef enum cplab_coll_what {
  CPLAB_CW_KV_INSERT_GATHER,
  CPLAB_CW_INDEX_K_INSERT_GATHER,
  CPLAB_CW_INDEXER_K_GATHER,
  CPLAB_CW_MLA_KV_GATHER,
  CPLAB_CW_DECODE_Q_GATHER,
  CPLAB_CW_DECODE_LSE_GATHER,
  CPLAB_CW_DECODE_OUT_COMBINE,
  CPLAB_CW_O_PROJ_ALLREDUCE,
  CPLAB_CW_MOE_FAST_ALLREDUCE,
  CPLAB_CW_MOE_HIDDEN_GATHER,
  CPLAB_CW_MOE_ROUTER_GATHER,
  CPLAB_CW_MOE_REDUCE_SCATTER,
  CPLAB_CW_OUTPUT_GATHER,
  CPLAB_CW_MOE_TP_ALLREDUCE, /* after the numbering of the first traces: codes are stored */
  CPLAB_CW_COUNT
} cplab_coll_what;

/* One collective a rank issues, in issue order. count = elements this rank
 * contributes. */
typedef struct cplab_collective {
  cplab_coll_kind kind;
  cplab_group_kind group;
  cplab_dtype dtype;
  int64_t count;
  cplab_coll_what what;
} cplab_collective;

const char *cplab_coll_kind_name(cplab_coll_kind k);
const char *cplab_dtype_name(cplab_dtype t);
/* Bytes of one element: bf16 2, fp32 4, u8 1. */
int cplab_dtype_bytes(cplab_dtype t);
const char *cplab_coll_what_name(cplab_coll_what w); /* "mla_kv_gather", ... */

typedef struct cplab_rank_plan {
  cplab_rank_ids ids;
  int flags;                  /* CPLAB_PLAN_* the plan was derived with */
  const cplab_layout *layout;
  cplab_layout_env env;
  cplab_schedule sched;
  cplab_split split;          /* this rank's rows */
  int64_t *local_len;         /* [R] this DCP rank's share of each request's context */
  /* Token maps (NULL unless CPLAB_PLAN_TOKEN_MAPS): */
  int64_t total_tokens;       /* new tokens of the step, global order */
  int64_t *slot_mapping;      /* [total_tokens] this rank's slot or -1 */
  int32_t *gather_idx;        /* [P · padded] global token of each gathered slot (0 for padding) */
  uint8_t *write_mask;        /* [P · padded] 1 where the gathered slot is written to the cache */
  int32_t *restore_idx;       /* [total_tokens] gathered slot holding each global token */
  cplab_prefill_plan prefill;
  cplab_indexer_plan indexer;
  int num_collectives;
  cplab_collective *collectives; /* one layer's worth, then the step's final gather */
} cplab_rank_plan;

enum { CPLAB_PLAN_TOKEN_MAPS = 1 };

/* The inputs every rank shares for one step. */
typedef struct cplab_step_input {
  const cplab_step *step;
  size_t step_index;
  uint64_t seed;
  const cplab_parallel *par;
  const cplab_model *model;
  const cplab_layout *layout;
} cplab_step_input;

/* Derive rank's plan for one step. Fails (with a message naming the rule)
 * where the layout rejects the step, e.g. an empty context. */
int cplab_rank_plan_derive(const cplab_step_input *in, int rank, int flags, cplab_rank_plan **out, cplab_diag *d);
void cplab_rank_plan_free(cplab_rank_plan *p);

/* Building blocks, exposed for tests. */
/* The rows of PCP rank pcp_rank (only shared data and the layout). */
int cplab_split_derive(const cplab_schedule *s, const cplab_step *step, const cplab_layout_env *env, int pcp_rank,
                       int dcp_rank, cplab_split *out, cplab_diag *d);
void cplab_split_free(cplab_split *s);
/* 1 when row attends over this rank's own DCP shard with the fp8 decode
 * kernel, its top-k filtered to the tokens this rank owns (the others -1) and
 * its partial result merged over DCP by LSE: decode rows always, and every
 * row under DCP without PCP (vLLM's mixed-batch path,
 * FlashMLASparseImpl._forward_fp8_kv_mixed_batch). 0 for a prefill row over
 * the gathered workspace (PCP + DCP) or over the whole context (DCP 1). */
int cplab_row_on_local_shard(const cplab_parallel *par, const cplab_row *row);
/* 1 when row's attention is the LSE combine of DCP partials: a row on the
 * local shard with dcp > 1 (its partials are what traces/SCHEMA.md's
 * attn_partial_out and attn_partial_lse store). */
int cplab_row_dcp_combined(const cplab_parallel *par, const cplab_row *row);
/* Local tokens of rows on the local shard: they lead (decodes first), so
 * they are tokens [0, this). */
int64_t cplab_split_shard_tokens(const cplab_split *s, const cplab_parallel *par);
/* The region of global request req in a prefill / indexer plan (-1: none). */
int cplab_prefill_region_of(const cplab_prefill_plan *pl, int req);
int cplab_indexer_region_of(const cplab_indexer_plan *pl, int req);
/* The row holding local token t (NULL if none: t out of range). */
const cplab_row *cplab_split_row_of(const cplab_split *s, int64_t t);
/* Schedule of a step: replication, dispatch shape, graph mode, block table. */
int cplab_schedule_derive(const cplab_step_input *in, const cplab_layout_env *env, cplab_schedule *out, cplab_diag *d);
void cplab_schedule_free(cplab_schedule *s);
int cplab_prefill_plan_derive(const cplab_rank_plan *rp, cplab_prefill_plan *out, cplab_diag *d);
void cplab_prefill_plan_free(cplab_prefill_plan *p);
int cplab_indexer_plan_derive(const cplab_rank_plan *rp, cplab_indexer_plan *out, cplab_diag *d);
void cplab_indexer_plan_free(cplab_indexer_plan *p);
int cplab_collectives_derive(cplab_rank_plan *rp, const cplab_model *model, cplab_diag *d);

/* 1 when a and b hold the same plan (every field, token maps included);
 * else 0 and the first differing part named in out. */
int cplab_rank_plan_equal(const cplab_rank_plan *a, const cplab_rank_plan *b, char *out, size_t cap);

/* Digests (XXH3-64) for cross-rank consensus without shipping plans:
 * shared = everything every rank must derive identically (schedule, the
 * shared parts of the prefill and indexer plans); collectives = the ordered
 * collectives this rank issues on one group kind. Equal digests across ranks
 * (resp. group members) are what agreement means. */
uint64_t cplab_rank_plan_shared_digest(const cplab_rank_plan *p);

/* The shared digest's parts, each digested alone, so that a disagreement can
 * be named (the shared digest feeds them in this order into one hash). */
typedef enum cplab_plan_part {
  CPLAB_PLAN_SCHEDULE = 0,
  CPLAB_PLAN_DISPATCH,
  CPLAB_PLAN_MODES,
  CPLAB_PLAN_BLOCK_TABLE,
  CPLAB_PLAN_PREFILL,
  CPLAB_PLAN_INDEXER,
  CPLAB_PLAN_PART_COUNT
} cplab_plan_part;
const char *cplab_plan_part_name(cplab_plan_part part);
void cplab_rank_plan_part_digests(const cplab_rank_plan *p, uint64_t out[CPLAB_PLAN_PART_COUNT]);
uint64_t cplab_rank_plan_collective_digest(const cplab_rank_plan *p, cplab_group_kind group);

#ifdef __cplusplus
}
#endif
#endif
