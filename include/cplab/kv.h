/* cplab/kv.h: DCP ownership of KV tokens (shared/reference/vllm-pcp-dcp.md §2).
 *
 * D = dcp size, I = interleave, B = block size, p = position in the request.
 *   owner(p)     = (p / I) mod D
 *   local_idx(p) = (p / (I·D))·I + p mod I      index in the owner's token stream
 *   local_len(L, r) = base + clip(L − base·D − r·I, 0, I), base = (L / I / D)·I
 * The per-block form (what the slot-mapping kernel computes) must agree with
 * the global form when B mod I == 0; both are here so that checks can compare.
 */
#ifndef CPLAB_KV_H
#define CPLAB_KV_H

#include <stdint.h>

#include "cplab/parallel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The slot of a token this rank does not own. */
#define CPLAB_PAD_SLOT (-1)

static inline int cplab_kv_owner(int64_t p, int interleave, int dcp) { return (int)((p / interleave) % dcp); }

static inline int64_t cplab_kv_local_idx(int64_t p, int interleave, int dcp) {
  return (p / ((int64_t)interleave * dcp)) * interleave + p % interleave;
}

/* The position of the token DCP rank r holds at local index li (the inverse
 * of cplab_kv_owner and cplab_kv_local_idx). */
static inline int64_t cplab_kv_position(int64_t li, int r, int interleave, int dcp) {
  return (li / interleave) * (int64_t)interleave * dcp + (int64_t)r * interleave + li % interleave;
}

/* Tokens of a context of length len that rank r of the DCP group holds. */
static inline int64_t cplab_kv_local_len(int64_t len, int r, int interleave, int dcp) {
  int64_t base = (len / interleave / dcp) * interleave;
  int64_t rem = len - base * dcp - (int64_t)r * interleave;
  return base + (rem < 0 ? 0 : rem > interleave ? interleave : rem);
}

/* Global form: slot of position p on rank dcp_rank through its block-table row. */
int64_t cplab_kv_slot_global(const cplab_parallel *par, int dcp_rank, const int32_t *block_row, int max_blocks,
                             int64_t p);

/* Per-block form: logical block p / (B·D), then the offset inside it. */
int64_t cplab_kv_slot_per_block(const cplab_parallel *par, int dcp_rank, const int32_t *block_row, int max_blocks,
                                int64_t p);

/* Width of a block-table row: logical blocks of B·D tokens covering max_model_len. */
int cplab_kv_max_blocks(const cplab_parallel *par);

#ifdef __cplusplus
}
#endif
#endif
