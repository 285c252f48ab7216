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

#endif
