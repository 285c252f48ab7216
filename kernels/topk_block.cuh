// kernels/topk_block.cuh: what every path of the per-row top-k (topk.cu)
// shares: its constants, the sources a pass reads (float rows, 64-bit key
// lists) in 16-byte groups, the block's control block and scans, the staging
// of an item into shared memory (and the L2 prefetch of the one after), and
// the work items (rows, chunks, merges) as the kernels decode them. Included
// by topk_radix.cuh and topk_bins.cuh; the design is in topk.cu's header.
#ifndef CPLAB_KERNELS_TOPK_BLOCK_CUH
#define CPLAB_KERNELS_TOPK_BLOCK_CUH

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>

#include "cache_slot.cuh"
#include "cplab_kernels.h"
#include "mma.cuh" // cp_async_*, bulk copies, mbarriers: the only place of that inline PTX (modelled in the emulation)
#include "topk_key.cuh"

#define TOPK_THREADS 512 // 128 registers a thread (topk.cu: Blocks)
#define TOPK_WARPS (TOPK_THREADS / 32)
#define TOPK_BINS 2048
#define TOPK_BPT (TOPK_BINS / TOPK_THREADS) // bins a thread owns in the scans, from the top
// Groups of 16 bytes a thread loads before using them (loads in flight for
// the passes over global memory). sm_100's code for 4 spills; sm_90's does
// not. (sm_100's kernels still spill some 500 bytes a thread in the modes
// with a staged float row: not measured, no sm_100 card at hand.)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
#define TOPK_UNROLL 2
#else
#define TOPK_UNROLL 4
#endif
#define TOPK_LIST_MIN 4096     // candidate list entries kept beside the row buffer
#define TOPK_SORT_MIN 128      // the sort works on whole 128-key warp segments
#define TOPK_SPLIT_ROWS_PER_SM 4 // the split path's row limit, per SM (bounds its scratch)
#define TOPK_L2_THREAD (TOPK_THREADS - 32) // issues the L2 prefetch of the item after next (not warp 0: it stages)
#define TOPK_FULL 0xFFFFFFFFu
#define TOPK_NOBIN 0xFFFFFFFFu

enum { TOPK_ROWS = 0, TOPK_CHUNKS = 1, TOPK_MERGE = 2 };

// topk_ord_bits without the -0 rule, two instructions a key where that one
// takes five: -0 maps to 0x7FFFFFFF, just below +0's 0x80000000, and every
// other value as topk_ord_bits. The staged row's floor pass takes it;
// topk_ord_nz then makes its results topk_ord_bits words (the keys at or
// above a floor -0 are those at or above +0: -0 and +0 compare equal as
// floats, the bin path's test).
static __device__ __forceinline__ uint32_t topk_ord_fast(uint32_t b) {
  return b ^ ((uint32_t)((int32_t)b >> 31) | 0x80000000u);
}

static __device__ __forceinline__ uint32_t topk_ord_nz(uint32_t o) { return o == 0x7FFFFFFFu ? 0x80000000u : o; }

// ---- sources: what a pass reads, in groups of 16 bytes -------------------
//
// Group 0 is the scalar head up to the first 16-byte boundary, groups
// 1..nbody the aligned vectors, group nbody + 1 the scalar tail. A visitor
// runs every thread through the same number of groups (invalid ones empty),
// so that it may use full-warp collectives.

// What both sources share: elements p[0, len) of T (W of them to a 16-byte
// group), their head up to the first 16-byte boundary and their groups.
template <class T, unsigned W_> struct topk_vsrc {
  static constexpr unsigned W = W_; // keys per group
  const T *p;
  uint32_t len, head, nbody;
  __device__ topk_vsrc(const T *p_, uint32_t len_, uint32_t head_) : p(p_), len(len_), head(head_) {
    nbody = (len - head) / W;
  }
  __device__ uint32_t groups() const { return nbody + 2; }
  // Group g into raw: returns how many keys it holds; j0 = its first element.
  __device__ unsigned load(uint32_t g, uint4 &raw, uint32_t &j0) const {
    if (g - 1 < nbody) { // body (g >= 1)
      j0 = head + W * (g - 1);
      raw = *(const uint4 *)(p + j0);
      return W;
    }
    uint32_t cnt;
    if (g == 0) {
      j0 = 0;
      cnt = head;
    } else if (g == nbody + 1) {
      j0 = head + W * nbody;
      cnt = len - j0;
    } else {
      return 0;
    }
    // (a head or tail is shorter than a group: at most 3 words, of
    // 3 floats or of one 64-bit key)
    const uint32_t *s = (const uint32_t *)(p + j0);
    if (W == 4) {
      raw.x = cnt > 0 ? s[0] : 0u;
      raw.y = cnt > 1 ? s[1] : 0u;
      raw.z = cnt > 2 ? s[2] : 0u;
    } else {
      raw.x = cnt ? s[0] : 0u;
      raw.y = cnt ? s[1] : 0u;
      raw.z = 0u;
    }
    raw.w = 0u;
    return cnt;
  }
};

// Floats p[0, len): element j is the column of request-relative index rel0 + j.
struct topk_fsrc : topk_vsrc<float, 4> {
  uint32_t rel0;
  __device__ topk_fsrc(const float *p_, uint32_t len_, uint32_t rel0_)
      : topk_vsrc(p_, len_, min((uint32_t)((16u - ((uintptr_t)p_ & 15u)) & 15u) >> 2, len_)), rel0(rel0_) {}
  __device__ uint64_t key(const uint4 &raw, uint32_t j0, unsigned q) const {
    uint32_t b = q == 0 ? raw.x : q == 1 ? raw.y : q == 2 ? raw.z : raw.w;
    return topk_key_bits(b, rel0 + j0 + q);
  }
};

// 64-bit keys p[0, len) (8-byte aligned).
struct topk_ksrc : topk_vsrc<uint64_t, 2> {
  __device__ topk_ksrc(const uint64_t *p_, uint32_t len_)
      : topk_vsrc(p_, len_, ((uintptr_t)p_ & 15u) && len_ ? 1u : 0u) {}
  __device__ uint64_t key(const uint4 &raw, uint32_t, unsigned q) const {
    return q == 0 ? ((uint64_t)raw.y << 32 | raw.x) : ((uint64_t)raw.w << 32 | raw.z);
  }
};

// f(raw, j0, cnt) on every group of src; TOPK_UNROLL loads are issued before
// they are used. Every thread makes the same number of calls.
template <class S, class F> static __device__ __forceinline__ void topk_visit(const S &src, F f) {
  uint32_t G = src.groups();
  for (uint32_t g0 = 0; g0 < G; g0 += TOPK_THREADS * TOPK_UNROLL) {
    uint4 raw[TOPK_UNROLL];
    uint32_t j0[TOPK_UNROLL];
    unsigned cnt[TOPK_UNROLL];
#pragma unroll
    for (int u = 0; u < TOPK_UNROLL; u++) cnt[u] = src.load(g0 + u * TOPK_THREADS + threadIdx.x, raw[u], j0[u]);
#pragma unroll
    for (int u = 0; u < TOPK_UNROLL; u++) f(raw[u], j0[u], cnt[u]);
  }
}

// ---- block-wide pieces ----------------------------------------------------

struct topk_item {
  int64_t r;
  const void *src;  // global memory
  uint64_t *out;    // TOPK_CHUNKS: where the chunk's keys go
  unsigned len, rel0, take, words;
};

struct __align__(16) topk_ctl {
  unsigned hist[TOPK_BINS];
  unsigned beg[TOPK_BINS]; // the bin path: where each bin's winners start
  unsigned wsum[TOPK_WARPS];
  unsigned wcand[TOPK_WARPS]; // the compaction's keys a warp (where topk_srow's list runs start)
  uint32_t wfloor[TOPK_WARPS];
  unsigned long long prefix, mask; // the digits chosen so far, and where they are
  unsigned need, cnt;              // keys still to take among those matching; keys in the chosen bin
  unsigned ctr;                    // appends: winners in the low half, list entries in the high half
  unsigned bstar, above, maxb;     // the bin path's threshold bin, the keys above it, its largest bin above
  uint64_t stage_bar;              // the row buffer's bulk copies complete on it (topk_stage)
  uint32_t cl_proven, cl_high, cl_hi; // the cluster path: its blocks' floors, reduced into block 0's
};

static __device__ __forceinline__ unsigned topk_warp_incl(unsigned v, unsigned lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    unsigned t = __shfl_up_sync(TOPK_FULL, v, o);
    if (lane >= (unsigned)o) v += t;
  }
  return v;
}

// The keys in the bins above each of thread t's bins nb-1-BPT·t-i (i <
// TOPK_BPT, counting from the top; h: their counts, 0 for bins >= nb):
// one barrier.
static __device__ __forceinline__ void topk_scan_bins(topk_ctl *c, const unsigned (&h)[TOPK_BPT],
                                                      unsigned (&excl)[TOPK_BPT]) {
  unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, s = 0;
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) s += h[i];
  unsigned incl = topk_warp_incl(s, lane);
  if (lane == 31) c->wsum[warp] = incl;
  __syncthreads();
  unsigned wv = lane < TOPK_WARPS ? c->wsum[lane] : 0u, winc = topk_warp_incl(wv, lane);
  unsigned e = __shfl_sync(TOPK_FULL, winc - wv, warp) + incl - s;
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) excl[i] = e, e += h[i];
}

// One group's bins d[W] (TOPK_NOBIN: not counted) into hist, by atomics in
// shared memory; same: all of them equal. A warp whose 128 (or 64) keys all
// fall in one bin (ties, runs of -inf) adds them with one atomic instead of
// serialising 32 same-address atomics 4 times. Called by every lane of the
// warp.
template <unsigned W>
static __device__ __forceinline__ void topk_hist_add(unsigned *hist, const unsigned (&d)[W], bool same, unsigned lane) {
  unsigned lead = __shfl_sync(TOPK_FULL, d[0], 0);
  if (__all_sync(TOPK_FULL, same && d[0] == lead)) {
    if (lane == 0 && lead != TOPK_NOBIN) atomicAdd(&hist[lead], 32u * W);
  } else if (same) {
    if (d[0] != TOPK_NOBIN) atomicAdd(&hist[d[0]], W);
  } else {
#pragma unroll
    for (unsigned q = 0; q < W; q++)
      if (d[q] != TOPK_NOBIN) atomicAdd(&hist[d[q]], 1u);
  }
}

// ---- staging ------------------------------------------------------------------

// A source of `words` 4-byte words split as topk_stage copies it: head
// words up to the first 16-byte boundary, nb 16-byte groups (one bulk copy),
// the rest a tail. ph: the source's word offset in its 16-byte group.
struct topk_span {
  uint32_t ph, head, nb, tail;
};
static __device__ __forceinline__ topk_span topk_span_of(const void *src, uint32_t words) {
  topk_span sp;
  sp.ph = (uint32_t)((uintptr_t)src >> 2) & 3u;
  sp.head = min((4u - sp.ph) & 3u, words);
  sp.nb = (words - sp.head) / 4, sp.tail = words - sp.head - 4 * sp.nb;
  return sp;
}

// Block-wide: stage words 32-bit words at src into dst (16-byte aligned)
// with src's 16-byte phase kept, so that the vector groups of the staged copy
// are those of the source; returns where the copy starts (dst + 0..3 words)
// and sets *bulk where the aligned body went by one bulk copy that completes
// on c->stage_bar (the caller waits for it after a barrier: topk_kernel).
// The scalar head and tail go by cp.async. dst must hold words + 3. (Version
// 3e's 512 threads issued 16 cp.async each, about 4,400 cycles a row of
// 32768 words: bench/NOTES.md.)
static __device__ const void *topk_stage(uint32_t *dst, const void *src, uint32_t words, topk_ctl *c, bool *bulk) {
  const uint32_t *s = (const uint32_t *)src;
  topk_span sp = topk_span_of(src, words);
  uint32_t ph = sp.ph, head = sp.head, nb = sp.nb, tail = sp.tail;
  uint32_t *d = dst + ph;
  if (threadIdx.x < head) cp_async_4(d + threadIdx.x, s + threadIdx.x, true);
  *bulk = nb > 0;
  if (nb > 0 && threadIdx.x == 0) {
    fence_proxy_async(); // the buffer's last generic reads (ordered by the caller's barrier) before the async write
    mbar_arrive_expect_tx(&c->stage_bar, 16 * nb);
    bulk_copy_g2s(d + head, s + head, 16 * nb, &c->stage_bar);
  }
  if (threadIdx.x < tail) cp_async_4(d + head + 4 * nb + threadIdx.x, s + head + 4 * nb + threadIdx.x, true);
  cp_async_commit();
  // the first and last 16-byte groups' words outside the item: 0xFFFFFFFF
  // (topk_srow's passes read whole groups; the caller's barrier orders these)
  uint32_t end = ph + words, pad = (4u - (end & 3u)) & 3u;
  if (threadIdx.x < ph) dst[threadIdx.x] = 0xFFFFFFFFu;
  if (threadIdx.x < pad) dst[end + threadIdx.x] = 0xFFFFFFFFu;
  return d;
}

// ---- work items ------------------------------------------------------------------

struct topk_args {
  const float *logits;
  int64_t n;
  const int32_t *ks, *ke;
  int k;
  int32_t *idx;
  float *score;
  // The conversion (slot != NULL): cplab_topk_convert's fields (dcp 1).
  const int32_t *row_req, *block_table;
  int num_req, max_blocks;
  uint32_t B;
  int32_t *slot;
  uint64_t *scratch;                   // TOPK_CHUNKS writes, TOPK_MERGE reads: [m][chunks][k] keys
  int64_t items;                       // rows, or rows × chunks
  int64_t chunk, chunks;               // the split: columns per chunk, chunks per row
  unsigned win_cap, list_cap, row_words; // the shared-memory layout (topk_layout_make)
};


template <int MODE> static __device__ topk_item topk_decode(const topk_args &a, int64_t w) {
  topk_item it;
  int64_t c = 0;
  it.r = w;
  if (MODE == TOPK_CHUNKS) it.r = w / a.chunks, c = w % a.chunks;
  int64_t base = a.ks[it.r];
  int64_t lo = min(max(base, (int64_t)0), a.n), hi = min(max((int64_t)a.ke[it.r], lo), a.n), L = hi - lo;
  it.out = nullptr;
  if (MODE == TOPK_ROWS) {
    it.src = a.logits + it.r * a.n + lo;
    it.len = (unsigned)L;
    it.rel0 = (uint32_t)(lo - base);
    it.take = (unsigned)min(L, (int64_t)a.k);
    it.words = it.len;
  } else if (MODE == TOPK_CHUNKS) {
    int64_t clo = lo + c * a.chunk, len = clo < hi ? min(hi - clo, a.chunk) : 0;
    it.src = a.logits + it.r * a.n + (len ? clo : 0);
    it.len = (unsigned)len;
    it.rel0 = (uint32_t)(clo - base);
    it.take = (unsigned)min(len, (int64_t)a.k);
    it.words = it.len;
    it.out = a.scratch + (it.r * a.chunks + c) * a.k;
  } else {
    // chunks before the last hold k keys each (chunk >= k), the last min(k, its columns)
    int64_t nch = (L + a.chunk - 1) / a.chunk;
    it.src = a.scratch + it.r * a.chunks * a.k;
    it.len = L ? (unsigned)((nch - 1) * a.k + min((int64_t)a.k, L - (nch - 1) * a.chunk)) : 0u;
    it.rel0 = 0;
    it.take = (unsigned)min(L, (int64_t)a.k);
    it.words = 2 * it.len;
  }
  return it;
}

static __device__ bool topk_stageable(const topk_args &a, const topk_item &it) {
  return it.len > 0 && it.words + 3 <= a.row_words;
}

// Item w's body, the part topk_stage's bulk copy reads, brought into L2 (a
// hint, nothing to wait for), so that the stage issued an item later reads
// from L2 rather than DRAM. One thread calls it.
template <int MODE> static __device__ void topk_prefetch_l2(const topk_args &a, int64_t w) {
  if (w >= a.items) return;
  topk_item it = topk_decode<MODE>(a, w);
  if (!topk_stageable(a, it)) return;
  topk_span sp = topk_span_of(it.src, it.words);
  if (sp.nb) bulk_prefetch_l2((const uint32_t *)it.src + sp.head, 16 * sp.nb);
}

// A row's outputs: its indices, its scores where asked and, with a
// conversion, its slots (the index is the request's local key index at
// dcp 1). The row's request is read once a row; a slot's table word where
// its entry is written, so that the word's trip overlaps the other
// entries' stores rather than following the list through memory.
struct topk_out {
  int32_t *idx;
  float *score;
  int32_t *slot;
  const int32_t *table; // NULL: the row's request is outside the table (its slots all -1)
  uint32_t B;
  int max_blocks;

  // Key `key` as entry p.
  __device__ __forceinline__ void put(unsigned p, uint64_t key) const {
    uint32_t t = 0xFFFFFFFFu - (uint32_t)key;
    idx[p] = (int32_t)t;
    if (score) score[p] = topk_unord((uint32_t)(key >> 32));
    if (slot) slot[p] = table ? cache_slot(table, t, t / B, B, max_blocks) : -1;
  }
  // Entry p empty: fewer than k columns in range.
  __device__ __forceinline__ void none(unsigned p) const {
    idx[p] = -1;
    if (score) score[p] = -INFINITY;
    if (slot) slot[p] = -1;
  }
};

// Row r's outputs (a row item, not a chunk: chunks write keys to the scratch).
static __device__ topk_out topk_out_of(const topk_args &a, int64_t r) {
  topk_out o;
  o.idx = a.idx + r * a.k;
  o.score = a.score ? a.score + r * a.k : nullptr;
  o.slot = a.slot ? a.slot + r * a.k : nullptr;
  o.table = a.slot && a.block_table ? cache_table_row(a.row_req, r, a.block_table, a.num_req, a.max_blocks) : nullptr;
  o.B = a.B;
  o.max_blocks = a.max_blocks;
  return o;
}

#endif
