/* Parallel layout rules: see include/cplab/parallel.h. */
#include "cplab/parallel.h"

#include <string.h>

static const char *const graph_mode_names[] = {"NONE", "PIECEWISE", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE",
                                               "FULL"};

void cplab_parallel_defaults(cplab_parallel *p) {
  *p = (cplab_parallel){.tp = 1,
                        .pcp = 1,
                        .dcp = 1,
                        .pp = 1,
                        .interleave = 1,
                        .block_size = 64,
                        .max_model_len = 0,
                        .graph_mode = CPLAB_GRAPH_FULL_AND_PIECEWISE,
                        .indexer_max_logits_mb = 512};
}

int cplab_parallel_world(const cplab_parallel *p) { return p->pp * p->pcp * p->tp; }

const char *cplab_graph_mode_name(cplab_graph_mode m) {
  return (m >= CPLAB_GRAPH_NONE && m <= CPLAB_GRAPH_FULL) ? graph_mode_names[m] : "?";
}

int cplab_graph_mode_parse(const char *name, cplab_graph_mode *out) {
  for (int i = 0; i <= (int)CPLAB_GRAPH_FULL; i++) {
    if (strcmp(name, graph_mode_names[i]) == 0) {
      *out = (cplab_graph_mode)i;
      return 0;
    }
  }
  return CPLAB_ENOTFOUND;
}

static const char *const graph_mode_labels[CPLAB_GRAPH_LABELED] = {"eager", "piecewise", "full_decode_only",
                                                                  "full"};

const char *cplab_graph_mode_label(cplab_graph_mode m) {
  return (m >= CPLAB_GRAPH_NONE && (int)m < CPLAB_GRAPH_LABELED) ? graph_mode_labels[m] : "?";
}

int cplab_graph_mode_parse_label(const char *label, cplab_graph_mode *out) {
  for (int i = 0; i < CPLAB_GRAPH_LABELED; i++) {
    if (strcmp(label, graph_mode_labels[i]) == 0) {
      *out = (cplab_graph_mode)i;
      return 0;
    }
  }
  return CPLAB_ENOTFOUND;
}

int cplab_graph_mode_admitted(const cplab_parallel *p, const char **why) {
  /* The PCP manager captures piecewise graphs for mixed batches and full graphs
   * only for uniform decode batches; a FULL graph over a mixed batch would bake
   * one rank-dependent prefill split into the graph. */
  if (p->pcp > 1 && p->graph_mode == CPLAB_GRAPH_FULL) {
    if (why) *why = "FULL captures CUDA graphs over mixed batches, which PCP rejects; use FULL_AND_PIECEWISE";
    return 0;
  }
  return 1;
}

int cplab_parallel_gathers_prefill(const cplab_parallel *p) { return p->pcp > 1 && p->dcp > 1; }

/* The fp8 sparse decode kernel runs 64 or 128 query heads
 * (FlashMLASparseImpl._compute_fp8_decode_padded_heads). */
static int64_t fp8_decode_padded_heads(int64_t heads) { return heads <= 64 ? 64 : 128; }

/* vLLM's FlashMLA-sparse prefill kernel is only used from this many heads
 * per rank (MIN_HEADS_FOR_BF16_PREFILL); below it every token, prefill rows
 * included, goes through the fp8 decode kernel (the mixed-batch path). */
#define VLLM_MIN_HEADS_FOR_BF16_PREFILL 32

int cplab_parallel_check_dcp_heads(const cplab_parallel *p, int64_t num_heads, cplab_diag *d) {
  if (p->dcp <= 1 || cplab_parallel_gathers_prefill(p) || num_heads <= 0) return 0;
  /* FlashMLASparseMetadataBuilder.__init__ lists these violations for DCP > 1
   * without the PCP gather: the separate prefill/decode path returns the LSE
   * of decode rows only, while the DCP merge needs it for every row, so only
   * the mixed-batch path may run; and the query heads, all-gathered over the
   * DCP group, must pad to the same fp8 kernel envelope as the local ones. */
  int64_t local = num_heads / p->tp, gathered = local * p->dcp;
  if (local >= VLLM_MIN_HEADS_FOR_BF16_PREFILL)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED,
               "dcp: with pcp = 1, vLLM runs DCP on FlashMLA-sparse only on the mixed-batch fp8 path, which needs "
               "fewer than %d attention heads per rank; the model's %lld heads over tp = %d give %lld "
               "(FlashMLASparseMetadataBuilder: mixed-batch rule)",
               VLLM_MIN_HEADS_FOR_BF16_PREFILL, (long long)num_heads, p->tp, (long long)local);
  if (fp8_decode_padded_heads(local) != fp8_decode_padded_heads(gathered))
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED,
               "dcp: %lld local heads pad to %lld for the fp8 decode kernel but the %lld heads gathered over dcp = %d "
               "pad to %lld; vLLM requires the same envelope (FlashMLASparseMetadataBuilder: padded-head rule)",
               (long long)local, (long long)fp8_decode_padded_heads(local), (long long)gathered, p->dcp,
               (long long)fp8_decode_padded_heads(gathered));
  return 0;
}

static int check_range(cplab_diag *d, const char *name, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    CPLAB_FAIL(d, CPLAB_ERANGE, "%s: must be in [%lld, %lld], got %lld", name, (long long)lo, (long long)hi,
               (long long)v);
  return 0;
}

int cplab_parallel_check(const cplab_parallel *p, int64_t num_heads, cplab_diag *d) {
  int rc;
  if ((rc = check_range(d, "tp", p->tp, 1, CPLAB_MAX_GROUP)) ||
      (rc = check_range(d, "pcp", p->pcp, 1, CPLAB_MAX_GROUP)) ||
      (rc = check_range(d, "pp", p->pp, 1, CPLAB_MAX_GROUP)) ||
      (rc = check_range(d, "dcp", p->dcp, 1, CPLAB_MAX_WORLD)) ||
      (rc = check_range(d, "block_size", p->block_size, 1, CPLAB_MAX_BLOCK_SIZE)) ||
      (rc = check_range(d, "interleave", p->interleave, 1, CPLAB_MAX_BLOCK_SIZE)) ||
      (rc = check_range(d, "max_model_len", p->max_model_len, 1, CPLAB_MAX_MODEL_LEN)) ||
      (rc = check_range(d, "indexer_max_logits_mb", p->indexer_max_logits_mb, 1, 1 << 20)))
    return rc;
  if ((int64_t)p->tp * p->pcp * p->pp > CPLAB_MAX_WORLD)
    CPLAB_FAIL(d, CPLAB_ERANGE, "tp: world size pp·pcp·tp = %lld exceeds %d",
               (long long)p->tp * p->pcp * p->pp, CPLAB_MAX_WORLD);
  /* vLLM's ParallelConfig._validate_parallel_config: without PCP, DCP reuses
   * the TP ranks (dcp divides tp); with PCP it is off, the PCP axis or the
   * whole TP x PCP block. */
  if (p->pcp > 1) {
    if (p->dcp != 1 && p->dcp != p->pcp && p->dcp != p->tp * p->pcp)
      CPLAB_FAIL(d, CPLAB_EUNSUPPORTED,
                 "dcp: with pcp > 1, dcp must be 1, pcp (%d) or tp·pcp (%d), got %d", p->pcp, p->tp * p->pcp,
                 p->dcp);
    if (p->pp != 1)
      CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "pp: pipeline parallelism is not supported with pcp > 1 (pp = %d)", p->pp);
  } else if (p->tp % p->dcp != 0) {
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "dcp: with pcp = 1, dcp must divide tp (%d), got %d", p->tp, p->dcp);
  }
  if (p->block_size % p->interleave != 0)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED,
               "interleave: block_size (%d) must be a multiple of interleave (%d), or the per-block slot "
               "mapping disagrees with the global ownership rule",
               p->block_size, p->interleave);
  if (num_heads > 0 && num_heads % p->tp != 0)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "tp: the model's %lld attention heads cannot be split over tp = %d",
               (long long)num_heads, p->tp);
  int rc_heads = cplab_parallel_check_dcp_heads(p, num_heads, d);
  if (rc_heads) return rc_heads;
  const char *why = NULL;
  if (!cplab_graph_mode_admitted(p, &why)) CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "cudagraph_mode: %s", why);
  return 0;
}
