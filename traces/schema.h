/* traces/schema.h (internal): names and table columns of schema 1.2 (the
 * normative description is traces/SCHEMA.md; keep both in step; the layer
 * tensors' table is public, traces/tensors.c, and a test checks SCHEMA.md
 * against it). */
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

/* Layer tensors: the table is public (cplab_trace_tensor_info_of,
 * traces/tensors.c); here only the HDF5 type each element type is stored as. */
#include "cplab/trace.h"
#include "h5util.h"
static inline h5u_type schema_h5_type(cplab_trace_dtype t) {
  switch (t) {
    case CPLAB_TRACE_U8: return H5U_U8;
    case CPLAB_TRACE_U16: return H5U_U16;
    case CPLAB_TRACE_I32: return H5U_I32;
    case CPLAB_TRACE_I64: return H5U_I64;
    case CPLAB_TRACE_U64: return H5U_U64;
    case CPLAB_TRACE_F32: return H5U_F32;
  }
  return H5U_U8; /* not reached: every dtype is listed */
}
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
