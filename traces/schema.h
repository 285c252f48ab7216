/* traces/schema.h (internal): names and table columns of schema 1.0 (the
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
#include "h5util.h"
typedef struct schema_tensor {
  const char *name;
  h5u_type type;
  int rank;
  uint64_t last;
  int per_row; /* first dimension = the layer's rows: its sampled_tokens when present, else local tokens */
} schema_tensor;

static const schema_tensor schema_tensors[] = {
    {"kv_cache", H5U_U8, 2, 656, 0},        {"index_k_cache", H5U_U8, 2, 132, 0}, {"workspace", H5U_U16, 2, 576, 0},
    {"topk", H5U_I32, 2, 0, 1},             {"topk_converted", H5U_I32, 2, 0, 1}, {"topk_scores", H5U_F32, 2, 0, 1},
    {"kth_score", H5U_F32, 1, 0, 1},        {"sampled_tokens", H5U_I64, 1, 0, 0}, {"attn_out", H5U_F32, 3, 512, 1},
    {"attn_lse", H5U_F32, 2, 0, 1},         {"digests", H5U_U64, 1, 0, 0},
};
#define SCHEMA_EVENT_COLS 6
#define SCHEMA_EVENT_COLUMNS "step,layer,op,t_begin_ns,t_end_ns,bytes"

#endif
