/* The layer tensor table: see include/cplab/trace.h and traces/SCHEMA.md
 * ("Layer tensors"), which tests/unit/test_trace.c checks against it. */
#include <string.h>

#include "cplab/trace.h"

static const cplab_trace_tensor_info tensors[] = {
    [CPLAB_TT_KV_CACHE] = {"kv_cache", CPLAB_TRACE_U8, 2, 656, 0, 0, "caches"},
    [CPLAB_TT_INDEX_K_CACHE] = {"index_k_cache", CPLAB_TRACE_U8, 2, 132, 0, 0, "caches"},
    [CPLAB_TT_WORKSPACE] = {"workspace", CPLAB_TRACE_U16, 2, 576, 0, 0, "caches"},
    [CPLAB_TT_TOPK] = {"topk", CPLAB_TRACE_I32, 2, 0, 1, 0, "indexer"},
    [CPLAB_TT_TOPK_CONVERTED] = {"topk_converted", CPLAB_TRACE_I32, 2, 0, 1, 0, "indexer"},
    [CPLAB_TT_TOPK_SCORES] = {"topk_scores", CPLAB_TRACE_F32, 2, 0, 1, 0, "indexer"},
    [CPLAB_TT_KTH_SCORE] = {"kth_score", CPLAB_TRACE_F32, 1, 0, 1, 0, "indexer"},
    [CPLAB_TT_SAMPLED_TOKENS] = {"sampled_tokens", CPLAB_TRACE_I64, 1, 0, 0, 0, "rows"},
    [CPLAB_TT_ATTN_OUT] = {"attn_out", CPLAB_TRACE_F32, 3, 512, 1, 0, "attention"},
    [CPLAB_TT_ATTN_LSE] = {"attn_lse", CPLAB_TRACE_F32, 2, 0, 1, 0, "attention"},
    [CPLAB_TT_DIGESTS] = {"digests", CPLAB_TRACE_U64, 1, 0, 0, 0, "caches"},
    [CPLAB_TT_TOPK_VALID] = {"topk_valid", CPLAB_TRACE_I32, 1, 0, 1, 1, "indexer"},
    [CPLAB_TT_ATTN_PARTIAL_OUT] = {"attn_partial_out", CPLAB_TRACE_F32, 3, 512, 1, 2, "attention"},
    [CPLAB_TT_ATTN_PARTIAL_LSE] = {"attn_partial_lse", CPLAB_TRACE_F32, 2, 0, 1, 2, "attention"},
};
_Static_assert(sizeof tensors / sizeof tensors[0] == CPLAB_TT_COUNT, "one entry per cplab_trace_tensor");

static const struct {
  const char *name;
  size_t size;
  int is_float;
} dtypes[] = {
    [CPLAB_TRACE_U8] = {"uint8", 1, 0},   [CPLAB_TRACE_U16] = {"uint16", 2, 0}, [CPLAB_TRACE_I32] = {"int32", 4, 0},
    [CPLAB_TRACE_I64] = {"int64", 8, 0},  [CPLAB_TRACE_U64] = {"uint64", 8, 0}, [CPLAB_TRACE_F32] = {"float32", 4, 1},
};

static int dtype_ok(cplab_trace_dtype t) { return (int)t >= 0 && (size_t)t < sizeof dtypes / sizeof dtypes[0]; }

const char *cplab_trace_dtype_name(cplab_trace_dtype t) { return dtype_ok(t) ? dtypes[t].name : "?"; }
size_t cplab_trace_dtype_size(cplab_trace_dtype t) { return dtype_ok(t) ? dtypes[t].size : 0; }
int cplab_trace_dtype_is_float(cplab_trace_dtype t) { return dtype_ok(t) && dtypes[t].is_float; }

const cplab_trace_tensor_info *cplab_trace_tensor_info_of(cplab_trace_tensor t) {
  return (int)t >= 0 && t < CPLAB_TT_COUNT ? &tensors[t] : NULL;
}

int cplab_trace_tensor_find(const char *name) {
  for (int t = 0; t < CPLAB_TT_COUNT; t++)
    if (strcmp(tensors[t].name, name) == 0) return t;
  return -1;
}

const char *cplab_trace_tensor_name(cplab_trace_tensor t) {
  const cplab_trace_tensor_info *i = cplab_trace_tensor_info_of(t);
  return i ? i->name : "?";
}

int cplab_trace_tensor_since_minor(cplab_trace_tensor t) {
  const cplab_trace_tensor_info *i = cplab_trace_tensor_info_of(t);
  return i ? i->since_minor : CPLAB_TRACE_SCHEMA_MINOR;
}
