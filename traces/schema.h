/* traces/schema.h (internal): names and table columns of schema 1.2 (the
 * normative description is traces/SCHEMA.md; keep both in step). */
#ifndef CPLAB_TRACE_SCHEMA_H
#define CPLAB_TRACE_SCHEMA_H

#define SCHEMA_ROW_COLS 10
#define SCHEMA_ROW_COLUMNS "req,is_prefill,replicated,dummy,start,len,start_pos,seq_len,dcp_local_seq_len,token_offset"
#define SCHEMA_PREFILL_CHUNK_COLS 5
#define SCHEMA_PREFILL_CHUNK_COLUMNS "first_region,num_regions,shard_rows,token_begin,token_end"
#define SCHEMA_INDEXER_CHUNK_COLS 10
#define SCHEMA_INDEXER_CHUNK_COLUMNS \
  "first_region,num_regions,key_rows,padded_total,q_begin,q_end,query_split,skip_kv_gather,token_begin,token_end"
#define SCHEMA_COLL_COLS 5
#define SCHEMA_COLL_COLUMNS "kind,group,dtype,count,what"

/* Layer tensors: element type, rank and the fixed size of the last dimension
 * (0 = free). Order = cplab_trace_tensor. */
#include "cplab/trace.h"
#include "h5util.h"
typedef struct schema_tensor {
  const char *name;
  h5u_type type;
  int rank;
  uint64_t last;
  int per_row; /* first dimension = the layer's rows: its sampled_tokens when present, else local tokens */
  int since_minor; /* the schema 1.x that introduced it */
} schema_tensor;

static const schema_tensor schema_tensors[] = {
    {"kv_cache", H5U_U8, 2, 656, 0, 0},     {"index_k_cache", H5U_U8, 2, 132, 0, 0}, {"workspace", H5U_U16, 2, 576, 0, 0},
    {"topk", H5U_I32, 2, 0, 1, 0},          {"topk_converted", H5U_I32, 2, 0, 1, 0}, {"topk_scores", H5U_F32, 2, 0, 1, 0},
    {"kth_score", H5U_F32, 1, 0, 1, 0},     {"sampled_tokens", H5U_I64, 1, 0, 0, 0}, {"attn_out", H5U_F32, 3, 512, 1, 0},
    {"attn_lse", H5U_F32, 2, 0, 1, 0},      {"digests", H5U_U64, 1, 0, 0, 0},        {"topk_valid", H5U_I32, 1, 0, 1, 1},
    {"attn_partial_out", H5U_F32, 3, 512, 1, 2}, {"attn_partial_lse", H5U_F32, 2, 0, 1, 2},
};
_Static_assert(sizeof schema_tensors / sizeof schema_tensors[0] == CPLAB_TT_COUNT,
               "one schema entry per cplab_trace_tensor, in its order");
/* /groups (schema 1.1): int32 attributes, in the order schema_group_values
 * gives them, and one member list per cplab_group_kind. */
#include "cplab/ranks.h"
#define SCHEMA_GROUP_ATTRS 7
static const char *const schema_group_attrs[SCHEMA_GROUP_ATTRS] = {"pp_rank",  "pcp_rank",  "tp_rank",  "dcp_rank",
                                                                   "tp_group", "pcp_group", "dcp_group"};
static const char *const schema_group_lists[3] = {"tp_members", "pcp_members", "dcp_members"};
static inline void schema_group_values(const cplab_rank_ids *ids, int v[SCHEMA_GROUP_ATTRS]) {
  v[0] = ids->pp, v[1] = ids->pcp, v[2] = ids->tp, v[3] = ids->dcp_rank;
  v[4] = ids->tp_group, v[5] = ids->pcp_group, v[6] = ids->dcp_group;
}

#define SCHEMA_EVENT_COLS 6
#define SCHEMA_EVENT_COLUMNS "step,layer,op,t_begin_ns,t_end_ns,bytes"

#endif
