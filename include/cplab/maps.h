/* cplab/maps.h: the index maps of a rank's step that both the simulator's
 * numeric pass and the executor apply (DESIGN.md principle 2: the maps are
 * shared host-side plan data; the per-element work that follows them is
 * written twice, in sim/ as plain C and in kernels/ as CUDA):
 *   - which tokens a run samples for numeric results;
 *   - where every row of a gathered buffer (prefill workspace, indexer keys)
 *     comes from: a DCP peer's cache slot, or nothing (padding);
 *   - which cache slots a rank writes, and the digest that stands for a cache.
 * All are functions of the plan and the shared step only. */
#ifndef CPLAB_MAPS_H
#define CPLAB_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"
#include "cplab/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The sampled local tokens of rank plan rp (ascending; *tokens malloc'd,
 * NULL when *n == 0): sampled_rows global tokens of the step, half of them
 * (rounded up) decode tokens where there are enough, the rest prefill tokens,
 * drawn without replacement by GSL's mt19937 on seed stream
 * CPLAB_SEED_STREAM_SAMPLE + step; each rank keeps those it holds. Every
 * layout samples the same global tokens. */
int cplab_maps_sample(const cplab_step_input *in, const cplab_rank_plan *rp, int64_t sampled_rows, int64_t **tokens,
                      int64_t *n, cplab_diag *d);
/* The rank's decode partials of a layer's n sampled local tokens
 * (traces/SCHEMA.md "Decode partials"): where any of them sits on a row whose
 * attention is the DCP LSE combine (cplab_row_dcp_combined), *out [n][G·heads]
 * [512] and *lse [n][G·heads] (malloc'd), every element NaN, the value of
 * rows the combine does not see, until a combined row writes its own; else
 * both NULL. *blocks = G (cplab_dcp_partial_blocks). */
int cplab_maps_partials_alloc(const cplab_rank_plan *rp, const int64_t *tokens, int64_t n, int heads, int *blocks,
                              float **out, float **lse, cplab_diag *d);

/* Where each row of a gathered buffer comes from: DCP peer peer[i]'s cache
 * slot slot[i], or peer[i] = -1 for a row no shard writes (padding). Each
 * peer copies local indices [0, local_len) of each region of the chunk into
 * its shard at the region's start (rows past the shard are dropped; a later
 * region overwrites an earlier one); shards are concatenated rank-major. */
typedef struct cplab_maps_sources {
  int64_t rows;
  int32_t *peer;
  int64_t *slot;
} cplab_maps_sources;
void cplab_maps_sources_free(cplab_maps_sources *s);
/* Prefill chunk c's gathered workspace (W·shard_rows rows at workspace_start). */
int cplab_maps_workspace_sources(const cplab_rank_plan *rp, int c, cplab_maps_sources *out, cplab_diag *d);
/* Indexer chunk c's gathered keys (W·padded_total rows at padded_cu). */
int cplab_maps_key_sources(const cplab_rank_plan *rp, int c, cplab_maps_sources *out, cplab_diag *d);

/* The slots rank plan rp writes (every context token its DCP rank owns below
 * each request's seq_len, at the slot-mapping kernel's slot), ascending, with
 * the global request and position each holds (all malloc'd). */
int cplab_maps_written(const cplab_rank_plan *rp, int64_t **slots, int32_t **req, int64_t **pos, int64_t *n,
                       cplab_diag *d);

/* The cache digest of traces/SCHEMA.md: XXH3-64 over n written slots
 * ascending, each as int64 little-endian then its entry (entries: n × bytes,
 * in the same order). */
uint64_t cplab_maps_cache_digest(const int64_t *slots, const uint8_t *entries, int64_t n, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
