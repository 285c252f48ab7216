// The exact merge of DCP owners' top-k lists (cplab_topk_merge; contract in
// cplab_kernels.h). Keys as the top-k's (topk_key.cuh).
#include <cuda_runtime.h>

#include "cache_slot.cuh"
#include "check.cuh"
#include "cplab_kernels.h"
#include "topk_key.cuh"

// ---- the exact merge of DCP owners' top-k lists --------------------------
//
// Every owner's list is its cplab_topk over its own keys: best first, so in
// descending topk_key order once its local indices are turned into the row's
// positions (local order is position order on one owner), the -1 entries
// after the valid ones. Positions are distinct across owners, so the keys
// form one strict order, and a candidate's place in the merged list is its
// place in its own list plus, in each other list, the number of valid keys
// above its own: a binary search. The candidates whose place is below k are
// the row's top-k, written straight to their places; places from the number
// of valid candidates on are -1.
//
// One block per (row, owner) ranks that owner's candidates. Where the row's
// D lists fit the block's shared memory (D · k · 8 bytes: D <= 13 at k =
// 2048 on sm_90) and the whole grid's staging reads at most
// MERGE_STAGE_MAX bytes, the block first stages them there as keys, the
// positions' divisions done once a key; the searches then run on shared
// memory. Otherwise they read the lists in
// global memory (L1 hits after the first touch), 32-bit positions keeping
// the divisions by the interleave cheap. (Staging is every block reading
// all D lists: on an H200 it made batch 1 at D = 2 and 8 (64 KiB, 1 MiB
// read) and batch 64 at D = 2 (4 MiB) faster, and batch 64 at D = 8 (64 MiB)
// slower: 111 -> 149 µs.) Either way the count of valid candidates (from
// which places are -1; the row's block of owner 0 needs it) is shared out
// over the threads: the first version had one thread binary-search each
// list in series, every step a dependent load from DRAM (11 · D of them).

//
// With a conversion (cplab_topk_convert) the block of the converting
// rank's own list also turns each of its entries into a slot through the
// rank's block table, loading the table entry before the searches so that
// its trip overlaps them, and writes it at the entry's place; every other
// block writes -1 at its places, and owner 0's block pads. A DCP rank's
// decode rows so need no conversion launch after the merge (whose two
// dependent trips, the list then the table, kept cplab_convert_decode_topk
// at ~70% of a same-size copy on an H200: bench/NOTES.md).

#define MERGE_THREADS 256
#define MERGE_STAGE_MAX (16 << 20) // bytes all blocks' staging may read (m · D · D · k · 8)

// The position of owner o's local index l (kv.h's cplab_kv_position).
static __device__ __forceinline__ uint32_t merge_position(uint32_t l, uint32_t o, uint32_t interleave, uint32_t D) {
  return (l / interleave) * interleave * D + o * interleave + l % interleave;
}

struct merge_args {
  const int32_t *cand_idx;
  const float *cand_score;
  uint32_t D, I; // owners, interleave
  int64_t m;
  int k;
  int32_t *idx;
  float *score;
  // The conversion (slot != NULL): cplab_topk_convert's fields.
  const int32_t *row_req, *block_table;
  int num_req, max_blocks;
  uint32_t B, rank;
  int32_t *slot;
};

// The conversion's table row for row r in the block of owner o: the rank's
// own keys only (another owner's entries convert to -1), NULL where the row's
// request is outside the table (cplab_convert_decode_topk: all -1).
static __device__ const int32_t *merge_table_row(const merge_args &a, int64_t r, uint32_t o) {
  if (!a.slot || o != a.rank || !a.block_table) return NULL;
  return cache_table_row(a.row_req, r, a.block_table, a.num_req, a.max_blocks);
}

// Owner o's local index l as a slot of the rank's cache: owner(t) == o and
// local_idx(t) == l for t = merge_position(l, o, I, D), so this is
// cplab_convert_decode_topk's slot for the merged entry t.
static __device__ __forceinline__ int32_t merge_slot(const merge_args &a, const int32_t *table, uint32_t l) {
  return cache_slot(table, l, l / a.B, a.B, a.max_blocks);
}

// Entry j of owner p's list for row r as a key; 0 for a -1 entry (a valid
// key is above 0: positions are below 2^31, the outputs being int32).
static __device__ __forceinline__ uint64_t merge_key_at(const merge_args &a, int64_t r, uint32_t p, int j) {
  int64_t e = ((int64_t)p * a.m + r) * a.k + j;
  int32_t l = a.cand_idx[e];
  return l >= 0 ? topk_key(a.cand_score[e], merge_position((uint32_t)l, p, a.I, a.D)) : 0;
}

// Entries of owner p's list above `key` (keys descend, the -1 entries'
// zeros last): from the staged keys, or from global memory.
template <bool STAGED>
static __device__ int merge_above(const merge_args &a, const uint64_t *keys, int64_t r, uint32_t p, uint64_t key) {
  int lo = 0, hi = a.k; // entries [0, lo) are above key, [hi, k) are not
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    uint64_t x = STAGED ? keys[(int64_t)p * a.k + mid] : merge_key_at(a, r, p, mid);
    if (x > key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

template <bool STAGED> __global__ void __launch_bounds__(MERGE_THREADS) topk_merge_kernel(const merge_args a) {
  extern __shared__ uint64_t merge_keys[]; // STAGED: [D][k]
  __shared__ int total;
  int64_t r = blockIdx.x;
  uint32_t o = blockIdx.y;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  int mine = 0; // this thread's share of the valid count
  if (STAGED) {
    for (uint32_t p = 0; p < a.D; p++)
#pragma unroll 4
      for (int j = threadIdx.x; j < a.k; j += MERGE_THREADS) {
        uint64_t x = merge_key_at(a, r, p, j);
        merge_keys[(int64_t)p * a.k + j] = x;
        mine += x != 0;
      }
  } else if (o == 0) { // (staged, the count comes free; unstaged, only the padding block needs it)
    for (uint32_t p = threadIdx.x; p < a.D; p += MERGE_THREADS) mine += merge_above<false>(a, NULL, r, p, 0);
  }
  if (mine) atomicAdd(&total, mine);
  __syncthreads();
  if (o == 0) // one block of the row pads: places from the valid total on are never ranked
    for (int j = total + threadIdx.x; j < a.k; j += blockDim.x) {
      a.idx[r * a.k + j] = -1;
      if (a.score) a.score[r * a.k + j] = -INFINITY;
      if (a.slot) a.slot[r * a.k + j] = -1;
    }
  const int32_t *table = merge_table_row(a, r, o);
  for (int j = threadIdx.x; j < a.k; j += blockDim.x) {
    uint64_t key = STAGED ? merge_keys[(int64_t)o * a.k + j] : merge_key_at(a, r, o, j);
    if (key == 0) break; // the rest of this thread's entries are -1 too
    int64_t e = ((int64_t)o * a.m + r) * a.k + j;
    // The slot's table load is issued here, so that it overlaps the searches.
    int32_t slot = table ? merge_slot(a, table, (uint32_t)a.cand_idx[e]) : -1;
    int place = j;
    for (uint32_t p = 0; p < a.D && place < a.k; p++)
      if (p != o) place += merge_above<STAGED>(a, merge_keys, r, p, key);
    if (place < a.k) {
      a.idx[r * a.k + place] = (int32_t)(0xFFFFFFFFu - (uint32_t)key); // the position, back from the key
      if (a.score) a.score[r * a.k + place] = a.cand_score[e];
      if (a.slot) a.slot[r * a.k + place] = slot;
    }
  }
}

extern "C" int cplab_topk_merge(const cplab_topk_merge_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_topk_merge: NULL parameters");
  KCHECK_ARG(d, p->m >= 0, "cplab_topk_merge: negative rows (%lld)", (long long)p->m);
  KCHECK_ARG(d, p->D >= 1 && p->D <= 65535 && p->interleave >= 1,
             "cplab_topk_merge: owners %d (1..65535) and interleave %d (>= 1)", p->D, p->interleave);
  KCHECK_ARG(d, p->k >= 1 && p->k <= CPLAB_TOPK_MAX, "cplab_topk_merge: k must be 1..%d, got %d", CPLAB_TOPK_MAX, p->k);
  if (p->m == 0) return 0;
  KCHECK_ARG(d, p->cand_idx && p->cand_score && p->idx, "cplab_topk_merge: NULL argument");
  KCHECK_ARG(d, p->m <= KGRID_MAX_X, "cplab_topk_merge: %lld rows too many", (long long)p->m);
  const cplab_topk_convert *c = p->convert;
  if (c) {
    KCHECK_ARG(d, c->num_req >= 0 && c->max_blocks >= 0 && c->block_size >= 1 && c->dcp_rank >= 0 && c->dcp_rank < p->D,
               "cplab_topk_merge: bad conversion (requests %d, blocks %d, block size %d, rank %d of %d)", c->num_req,
               c->max_blocks, c->block_size, c->dcp_rank, p->D);
    KCHECK_ARG(d, c->row_req && c->out && (c->block_table || (int64_t)c->num_req * c->max_blocks == 0),
               "cplab_topk_merge: NULL conversion argument");
  }
  merge_args a = {p->cand_idx, p->cand_score, (uint32_t)p->D, (uint32_t)p->interleave, p->m, p->k, p->idx, p->score,
                  c ? c->row_req : NULL, c ? c->block_table : NULL, c ? c->num_req : 0, c ? c->max_blocks : 0,
                  c ? (uint32_t)c->block_size : 1u, c ? (uint32_t)c->dcp_rank : 0u, c ? c->out : NULL};
  cplab_device_facts f;
  int rc = cplab_device_facts_get(&f, d);
  if (rc) return rc;
  size_t staged = (size_t)p->D * (size_t)p->k * sizeof(uint64_t);
  dim3 grid((unsigned)p->m, (unsigned)p->D);
  if (staged + 1024 <= (size_t)f.smem_optin && (double)p->m * p->D * (double)staged <= MERGE_STAGE_MAX) {
    rc = kset_smem(d, topk_merge_kernel<true>, staged, "topk_merge_kernel");
    if (rc) return rc;
    topk_merge_kernel<true><<<grid, MERGE_THREADS, staged, kstream(stream)>>>(a);
  } else {
    topk_merge_kernel<false><<<grid, MERGE_THREADS, 0, kstream(stream)>>>(a);
  }
  return kcheck_launch(d, "topk_merge_kernel");
}
