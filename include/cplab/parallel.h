/* cplab/parallel.h: the parallel layout (TP, PCP, DCP, PP, interleave, block
 * size, max_model_len, CUDA-graph mode) and the rules that admit it.
 * Rules: shared/reference/vllm-pcp-dcp.md §1.2, §2.1, §9.
 */
#ifndef CPLAB_PARALLEL_H
#define CPLAB_PARALLEL_H

#include <stdint.h>

#include "cplab/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cplab_graph_mode {
  CPLAB_GRAPH_NONE = 0,
  CPLAB_GRAPH_PIECEWISE,
  CPLAB_GRAPH_FULL_DECODE_ONLY,
  CPLAB_GRAPH_FULL_AND_PIECEWISE,
  CPLAB_GRAPH_FULL,
} cplab_graph_mode;

/* cplab-bench's words for the modes it measures (its --graphs and the
 * results' "graph"): eager (NONE), piecewise, full_decode_only and full
 * (FULL_AND_PIECEWISE, vLLM's default); FULL, which PCP rejects, has none
 * ("?"). The one table of graph-mode strings beside the vLLM names. */
#define CPLAB_GRAPH_LABELED 4 /* the modes with a label: NONE .. FULL_AND_PIECEWISE */
const char *cplab_graph_mode_label(cplab_graph_mode m);
/* The mode labelled `label`; CPLAB_ENOTFOUND for none. */
int cplab_graph_mode_parse_label(const char *label, cplab_graph_mode *out);

typedef struct cplab_parallel {
  int tp, pcp, dcp, pp;
  int interleave;        /* I: tokens per ownership stripe (cp_kv_cache_interleave_size) */
  int block_size;        /* B: tokens per physical KV block on one rank */
  int64_t max_model_len; /* longest context a request may reach */
  cplab_graph_mode graph_mode;
  int64_t indexer_max_logits_mb; /* indexer logits budget per chunk (vLLM's VLLM_SPARSE_INDEXER_MAX_LOGITS_MB) */
  int num_spec_tokens;   /* MTP: speculative tokens per decode row, which then holds 1 + this many (scenario key
                            speculative.num_spec_tokens; 0 = no speculative decoding) */
} cplab_parallel;

/* Upper bounds. max_model_len keeps the indexer workspace (40·max_model_len
 * key rows) addressable with the int32 indices the kernels use. */
#define CPLAB_MAX_GROUP 1024
#define CPLAB_MAX_WORLD 65536
#define CPLAB_MAX_BLOCK_SIZE 4096
#define CPLAB_MAX_MODEL_LEN (INT32_MAX / 40)

/* tp = pcp = dcp = pp = 1, interleave 1, block 64, max_model_len 0 (unset),
 * FULL_AND_PIECEWISE graphs, 512 MiB indexer logits. */
void cplab_parallel_defaults(cplab_parallel *p);

/* world = pp · pcp · tp (DCP adds no ranks). */
int cplab_parallel_world(const cplab_parallel *p);

/* Check every rule. On failure the diag message starts with the offending
 * field ("dcp: ...", "interleave: ..."). num_heads (0 = unknown) is checked
 * for divisibility by tp and, for DCP without PCP, against the head rules of
 * vLLM's sparse-MLA backend (cplab_parallel_check_dcp_heads). */
int cplab_parallel_check(const cplab_parallel *p, int64_t num_heads, cplab_diag *d);

/* DCP without PCP on vLLM's FlashMLA-sparse backend: the rules of
 * FlashMLASparseMetadataBuilder.__init__ for a DCP group that does not
 * gather prefill KV (num_heads = the model's attention heads, > 0). 0 or
 * CPLAB_EUNSUPPORTED with a "dcp: ..." message naming the rule. */
int cplab_parallel_check_dcp_heads(const cplab_parallel *p, int64_t num_heads, cplab_diag *d);

/* 1 when prefill rows attend over a DCP-gathered workspace: vLLM gathers a
 * prefill's KV shards only under PCP + DCP (FlashMLASparseMetadataBuilder:
 * pcp_dcp_kv_gather = use_pcp and dcp_world_size > 1; the indexer builder
 * plans its PCP chunks on the same condition). With PCP = 1 and DCP > 1
 * every row takes the classic DCP path: this rank's own shard, then the LSE
 * combine. */
int cplab_parallel_gathers_prefill(const cplab_parallel *p);

const char *cplab_graph_mode_name(cplab_graph_mode m);
int cplab_graph_mode_parse(const char *name, cplab_graph_mode *out); /* 0 or CPLAB_ENOTFOUND */

/* Graph-mode admission (§9): 1 if mode may run with this layout, else 0 and
 * *why (may be NULL) says why. */
int cplab_graph_mode_admitted(const cplab_parallel *p, const char **why);

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_PARALLEL_H */
