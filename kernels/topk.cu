// Per-row top-k (reference §6.3): a linear-bin select with the winners
// placed in order (the bin path), or, for the rows it declines, an exact
// radix select and a bitonic sort of the k winners (the radix path).
// Contracts in cplab_kernels.h (cplab_topk, cplab_topk_scratch,
// cplab_topk_split, cplab_topk_split_route); the DCP owners' merge of these
// lists, cplab_topk_merge, is topk_merge.cu.
//
// Keys (topk_key.cuh). Each candidate is one 64-bit key: the high word is the logit's bits
// made order-preserving as an unsigned integer (-0 first made +0), the low
// word 0xFFFFFFFF - index. Keys are distinct (indices are), and "larger key"
// is exactly "higher logit, then lower index": sim_indexer_topk's order. The
// winners are therefore exactly the keys >= T, T the take-th largest key:
// ties at the threshold value need no handling of their own (the low word
// decides them, lowest indices first), and every path below selects the
// same set and sorts it into the same order.
//
// The bin path (its own section below): a pass for a floor under which no
// key can win (a higher one tried first, checked by the histogram's count)
// and the row's maximum, a histogram of the keys above the floor
// over 2048 equal slices of [floor, max] (compacted first where the row is
// staged), a pass dropping the winners into their bins' slots, the order
// inside a bin by counting. Real logits leave a few dozen candidates in the
// threshold's bin and no sort.
//
// The radix path (topk_select): MSB-first radix select over the 64-bit key
// with 11/11/10-bit digits over the value word, then, only where the
// take-th value is tied beyond what is needed, 11/11/10 over the index word.
// A pass is a histogram (2048 bins in shared memory) of the keys that match
// the digits chosen so far, then a block-wide scan for the bin holding the
// take-th largest; it stops once that bin holds exactly the keys still
// needed. As soon as that bin fits the shared candidate list, one pass
// splits the source: keys above the bin go straight to the winners, keys in
// it to the list, and every later pass reads the short list instead of the
// row. Then the bitonic sort (topk_sort).
//
// Sources. A row range (floats, the key computed on the fly) or a list of
// 64-bit keys (the split path's candidates), each either staged in shared
// memory or read where it lies in global memory (items too long to stage:
// the same passes, one global read each). Reads are 16-byte vectors where
// the data is 16-byte aligned (ks is arbitrary: a scalar head and tail).
//
// Blocks (512 threads, one per SM, up to 227 KiB of shared memory) are
// persistent: a block loops over work items (rows, or (row, chunk) pairs)
// and stages the next item's data into the row buffer as soon as the current
// item no longer reads it (after the placing or split pass), the aligned
// body by one bulk copy (cp.async.bulk on an mbarrier) and the scalar head
// and tail by cp.async, so the next row's global read overlaps this row's
// ranking or sort. The item after that is meanwhile brought into L2
// (cp.async.bulk.prefetch), so that the stage reads from L2, not DRAM:
// from DRAM it outlasted the ranking. (A stage issued before the placing
// pass, the keys' values then read back from global memory, was tried: the
// scattered 4-byte loads cost more than the overlap gained; bench/NOTES.md.)
// 512 threads, not 1024: at 64 registers a thread the passes spilled.
//
// Paths (the launchers):
//   - cplab_topk: one item per row (TOPK_ROWS). Rows whose range fits the
//     row buffer (about 43000 columns at k <= 2048, 39000 at k = 4096) are
//     staged; longer ones take the passes over global memory.
//   - cplab_topk_split, when few long rows would leave the GPU idle and the
//     rows do not fit: (1) TOPK_CHUNKS: one item per (row, chunk of C
//     columns), each writing its chunk's exact top-k keys (unsorted) to the
//     scratch; (2) TOPK_MERGE: one item per row selecting the row's top-k
//     from its chunks' candidates (a row's top-k is a subset of the union of
//     its chunks' top-k) and sorting it. Same keys, same set, same order.
//     Where one row or all rows' chunks fit the GPU at once (at most 8
//     chunks a row), topk_cluster_kernel instead (its own section): one
//     launch, a row a cluster of blocks sharing the bin path's steps.
//     Rows that fit but are few (m · 2 blocks <= the SMs, or one row) take
//     it too, over slices of at least 8192 columns (a decode row of 32768:
//     4 blocks); many rows that fit take cplab_topk's path.
//
// Measured on an H200 (bench/NOTES.md, per-phase clocks of a staged row of
// 32768 real logits, k = 2048, in SM cycles): floor pass ~8100, compaction
// and histogram ~12400, scan ~1700, placing ~7500, issuing the next row's
// stage ~4400 (then 512 threads' cp.async; one bulk copy since, 691 -> 641
// µs for 4096 rows), ranking ~5100: ~41000 a row (the radix path: ~75000 a
// row, the sort ~23500 of them). The passes are bound by instruction issue
// and latency, not by the 512 MiB read (~130 µs). Since then (3g-3n) the
// higher floor, the cheaper passes, the bins made once a candidate and the
// candidates loaded in batches: 377 µs for 4096 rows (3m: ~26000 cycles and
// 49,000 warp instructions a row); then (3s) the item after next prefetched
// into L2, so that a stage no longer outlasts the ranking it overlaps, and
// two-slope bins, so that the ranking is shorter: 350 µs.
#include <cuda_runtime.h>

#include <math.h>

#include <type_traits>

#include "check.cuh"
#include "cplab_kernels.h"
#include "cluster.cuh" // the cluster path's barriers and distributed shared memory
#include "mma.cuh" // cp_async_*: the only place of that inline PTX (modelled in the emulation)
#include "topk_key.cuh"

#define TOPK_THREADS 512 // 128 registers a thread (see Blocks above)
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

// Floats p[0, len): element j is the column of request-relative index rel0 + j.
struct topk_fsrc {
  static constexpr unsigned W = 4; // keys per group
  const float *p;
  uint32_t len, rel0, head, nbody;
  __device__ topk_fsrc(const float *p_, uint32_t len_, uint32_t rel0_) : p(p_), len(len_), rel0(rel0_) {
    uint32_t h = (uint32_t)((16u - ((uintptr_t)p_ & 15u)) & 15u) >> 2;
    head = h < len ? h : len;
    nbody = (len - head) >> 2;
  }
  __device__ uint32_t groups() const { return nbody + 2; }
  // Group g into raw: returns how many keys it holds; j0 = its first element.
  __device__ unsigned load(uint32_t g, uint4 &raw, uint32_t &j0) const {
    if (g - 1 < nbody) { // body (g >= 1)
      j0 = head + 4 * (g - 1);
      raw = *(const uint4 *)(p + j0);
      return 4;
    }
    uint32_t cnt;
    if (g == 0) {
      j0 = 0;
      cnt = head;
    } else if (g == nbody + 1) {
      j0 = head + 4 * nbody;
      cnt = len - j0;
    } else {
      return 0;
    }
    const uint32_t *s = (const uint32_t *)(p + j0);
    raw.x = cnt > 0 ? s[0] : 0u;
    raw.y = cnt > 1 ? s[1] : 0u;
    raw.z = cnt > 2 ? s[2] : 0u;
    raw.w = 0u;
    return cnt;
  }
  __device__ uint64_t key(const uint4 &raw, uint32_t j0, unsigned q) const {
    uint32_t b = q == 0 ? raw.x : q == 1 ? raw.y : q == 2 ? raw.z : raw.w;
    return ((uint64_t)topk_ord_bits(b) << 32) | (uint64_t)(0xFFFFFFFFu - (rel0 + j0 + q));
  }
};

// 64-bit keys p[0, len) (8-byte aligned).
struct topk_ksrc {
  static constexpr unsigned W = 2;
  const uint64_t *p;
  uint32_t len, head, nbody;
  __device__ topk_ksrc(const uint64_t *p_, uint32_t len_) : p(p_), len(len_) {
    head = ((uintptr_t)p_ & 15u) && len_ ? 1u : 0u;
    nbody = (len - head) >> 1;
  }
  __device__ uint32_t groups() const { return nbody + 2; }
  __device__ unsigned load(uint32_t g, uint4 &raw, uint32_t &j0) const {
    if (g - 1 < nbody) {
      j0 = head + 2 * (g - 1);
      raw = *(const uint4 *)(p + j0);
      return 2;
    }
    uint32_t cnt;
    if (g == 0) {
      j0 = 0;
      cnt = head;
    } else if (g == nbody + 1) {
      j0 = head + 2 * nbody;
      cnt = len - j0;
    } else {
      return 0;
    }
    const uint32_t *s = (const uint32_t *)(p + j0);
    raw.x = cnt ? s[0] : 0u;
    raw.y = cnt ? s[1] : 0u;
    raw.z = raw.w = 0u;
    return cnt;
  }
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
  uint32_t wfloor[TOPK_WARPS];
  unsigned ncand; // the bin path's compacted keys
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

// Histogram of the digit (bits at shift) of the keys matching prefix on mask.
// Bins are atomics in shared memory; a warp whose 128 (or 64) keys all fall
// in one bin (ties, runs of -inf) adds them with one atomic instead of
// serialising 32 same-address atomics 4 times.
// One group's bins d[W] (TOPK_NOBIN: not counted) into hist; same: all of
// them equal. Called by every lane of the warp.
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

template <class S>
static __device__ void topk_hist(const S &src, unsigned *hist, int shift, unsigned bmask, uint64_t prefix,
                                 uint64_t mask) {
  constexpr unsigned W = S::W;
  unsigned lane = threadIdx.x & 31;
  topk_visit(src, [&](const uint4 &raw, uint32_t j0, unsigned cnt) {
    unsigned d[W];
    bool same = true;
#pragma unroll
    for (unsigned q = 0; q < W; q++) {
      uint64_t key = src.key(raw, j0, q);
      d[q] = q < cnt && (key & mask) == prefix ? (unsigned)(key >> shift) & bmask : TOPK_NOBIN;
      same = same && d[q] == d[0];
    }
    topk_hist_add<W>(hist, d, same, lane);
  });
}

// Warp-aggregated appends: every lane adds (winners | list entries << 16)
// of its group; one atomic per warp on c->ctr gives the bases.
static __device__ __forceinline__ unsigned topk_append_base(topk_ctl *c, unsigned packed, unsigned lane) {
  unsigned incl = topk_warp_incl(packed, lane), base = 0;
  if (lane == 31) base = atomicAdd(&c->ctr, incl);
  base = __shfl_sync(TOPK_FULL, base, 31);
  return base + incl - packed;
}

// One pass: keys above prefix (on mask) to win, keys matching it to list.
template <class S>
static __device__ void topk_split(const S &src, topk_ctl *c, uint64_t *win, uint64_t *list, uint64_t prefix,
                                  uint64_t mask) {
  constexpr unsigned W = S::W;
  unsigned lane = threadIdx.x & 31;
  topk_visit(src, [&](const uint4 &raw, uint32_t j0, unsigned cnt) {
    uint64_t key[W];
    unsigned cls[W], packed = 0; // 1: winner, 2: candidate
#pragma unroll
    for (unsigned q = 0; q < W; q++) {
      key[q] = src.key(raw, j0, q);
      uint64_t h = key[q] & mask;
      cls[q] = q >= cnt ? 0u : h > prefix ? 1u : h == prefix ? 2u : 0u;
      packed += cls[q] == 1 ? 1u : cls[q] == 2 ? 0x10000u : 0u;
    }
    if (!__any_sync(TOPK_FULL, packed != 0)) return;
    unsigned pos = topk_append_base(c, packed, lane), pw = pos & 0xFFFFu, pl = pos >> 16;
#pragma unroll
    for (unsigned q = 0; q < W; q++) {
      if (cls[q] == 1) win[pw++] = key[q];
      else if (cls[q] == 2) list[pl++] = key[q];
    }
  });
}

// One pass: keys >= T to win.
template <class S> static __device__ void topk_collect(const S &src, topk_ctl *c, uint64_t *win, uint64_t T) {
  constexpr unsigned W = S::W;
  unsigned lane = threadIdx.x & 31;
  topk_visit(src, [&](const uint4 &raw, uint32_t j0, unsigned cnt) {
    uint64_t key[W];
    unsigned packed = 0;
#pragma unroll
    for (unsigned q = 0; q < W; q++) {
      key[q] = src.key(raw, j0, q);
      packed += q < cnt && key[q] >= T ? 1u : 0u;
    }
    if (!__any_sync(TOPK_FULL, packed != 0)) return;
    unsigned pw = topk_append_base(c, packed, lane) & 0xFFFFu;
#pragma unroll
    for (unsigned q = 0; q < W; q++)
      if (q < cnt && key[q] >= T) win[pw++] = key[q];
  });
}

// After a histogram pass (and a barrier): the bin holding the need-th
// largest matching key, scanning from the top. Thread t owns bins
// nb-1-BPT·t-i and clears them (the next pass starts from zero).
// Updates prefix, mask, need (keys still needed inside the bin) and cnt
// (the bin's keys), the same in every thread.
static __device__ void topk_find(topk_ctl *c, int shift, unsigned bits, uint64_t &prefix, uint64_t &mask,
                                 unsigned &need, unsigned &cnt) {
  unsigned t = threadIdx.x, nb = 1u << bits, h[TOPK_BPT], excl[TOPK_BPT];
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) {
    unsigned b = nb - 1 - TOPK_BPT * t - i; // wraps past 0: not a bin
    h[i] = b < nb ? c->hist[b] : 0u;
    if (b < nb) c->hist[b] = 0;
  }
  topk_scan_bins(c, h, excl);
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) {
    unsigned b = nb - 1 - TOPK_BPT * t - i;
    if (b < nb && excl[i] < need && need <= excl[i] + h[i]) { // exactly one bin: the matching keys number >= need
      c->prefix = prefix | (uint64_t)b << shift;
      c->mask = mask | (uint64_t)(nb - 1) << shift;
      c->need = need - excl[i];
      c->cnt = h[i];
    }
  }
  __syncthreads();
  prefix = c->prefix;
  mask = c->mask;
  need = c->need;
  cnt = c->cnt;
}

// The take largest keys of src into win[0, take) (unordered). list holds up
// to list_cap candidates. prefetch() is called once the row buffer is no
// longer read (staged: after the split pass), or not at all (the caller
// then prefetches after the barrier this ends with; an empty item reads
// nothing and ends without one).
template <class S, class PF>
static __device__ void topk_select(const S &src, unsigned take, bool staged, topk_ctl *c, uint64_t *win,
                                   uint64_t *list, unsigned list_cap, PF &prefetch) {
  if (take == 0) return;
  uint64_t prefix = 0, mask = 0;
  unsigned need = take, cnt = 0, listed = 0; // listed: keys in the list (0: not split)
  bool done = take == src.len;              // everything is a winner: T = 0
  for (int p = 0; p < 6 && !done; p++) {
    // 11/11/10 bits of the value word, then of the index word
    int shift = p == 0 ? 53 : p == 1 ? 42 : p == 2 ? 32 : p == 3 ? 21 : p == 4 ? 10 : 0;
    unsigned bits = p == 2 || p == 5 ? 10u : 11u;
    if (listed) topk_hist(topk_ksrc(list, listed), c->hist, shift, (1u << bits) - 1, prefix, mask);
    else topk_hist(src, c->hist, shift, (1u << bits) - 1, prefix, mask);
    __syncthreads();
    topk_find(c, shift, bits, prefix, mask, need, cnt);
    done = cnt == need; // every key of the bin is a winner
    if (!done && !listed && cnt <= list_cap) {
      topk_split(src, c, win, list, prefix, mask);
      listed = cnt;
      __syncthreads();
      if (staged) prefetch(); // the passes left read the list
    }
  }
  if (listed) topk_collect(topk_ksrc(list, listed), c, win, prefix);
  else topk_collect(src, c, win, prefix);
  __syncthreads();
}

// ---- the sort of the winners ------------------------------------------------

static __device__ __forceinline__ void topk_cx(uint64_t &x, uint64_t &y, bool desc) {
  uint64_t hi = x > y ? x : y, lo = x > y ? y : x;
  x = desc ? hi : lo;
  y = desc ? lo : hi;
}

// Bitonic steps (size, strides from..1) of the 128-key segment at base held
// by a warp, x[q] = a[base + 32q + lane]: strides 64 and 32 within the lane,
// 16..1 across lanes (shuffles).
static __device__ __forceinline__ void topk_sort_regs(uint64_t (&x)[4], unsigned base, unsigned lane, unsigned size,
                                                      unsigned from) {
  for (unsigned s = from; s >= 1; s >>= 1) {
    if (s >= 32) {
      unsigned d = s / 32; // 2: pairs (0, 2), (1, 3); 1: pairs (0, 1), (2, 3)
#pragma unroll
      for (unsigned q = 0; q < 4; q++)
        if ((q & d) == 0) topk_cx(x[q], x[q + d], ((base + 32 * q + lane) & size) == 0);
      continue;
    }
    bool lower = (lane & s) == 0;
#pragma unroll
    for (unsigned q = 0; q < 4; q++) {
      uint64_t y = __shfl_xor_sync(TOPK_FULL, x[q], (int)s);
      bool keep_max = lower == (((base + 32 * q + lane) & size) == 0);
      x[q] = keep_max ? (x[q] > y ? x[q] : y) : (x[q] > y ? y : x[q]);
    }
  }
}

// Descending bitonic sort of a[0, P), P a power of two in [128, 4096]. The
// keys move once per step that is not within a lane: strides below 128 run
// in registers (a warp's 128-key segment: 4 keys a lane, shuffles for
// strides 1..16), larger strides in shared memory, two levels a round (4 keys
// a thread: half the traffic of one level a round).
static __device__ void topk_sort(uint64_t *a, unsigned P) {
  unsigned t = threadIdx.x, lane = t & 31, warp = t >> 5, nseg = P / 128;
  for (unsigned sg = warp; sg < nseg; sg += TOPK_WARPS) {
    uint64_t x[4];
#pragma unroll
    for (unsigned q = 0; q < 4; q++) x[q] = a[sg * 128 + 32 * q + lane];
    for (unsigned size = 2; size <= 128; size <<= 1) topk_sort_regs(x, sg * 128, lane, size, size / 2);
#pragma unroll
    for (unsigned q = 0; q < 4; q++) a[sg * 128 + 32 * q + lane] = x[q];
  }
  __syncthreads();
  for (unsigned size = 256; size <= P; size <<= 1) {
    unsigned s = size / 2;
    while (s >= 128) {
      if (s >= 256) { // strides s and h = s/2 over quads i, i+h, i+2h, i+3h
        unsigned h = s / 2;
        for (unsigned q = t; q < P / 4; q += TOPK_THREADS) {
          unsigned i = (q / h) * 4 * h + q % h;
          bool desc = (i & size) == 0;
          uint64_t e0 = a[i], e1 = a[i + h], e2 = a[i + 2 * h], e3 = a[i + 3 * h];
          topk_cx(e0, e2, desc);
          topk_cx(e1, e3, desc);
          topk_cx(e0, e1, desc);
          topk_cx(e2, e3, desc);
          a[i] = e0, a[i + h] = e1, a[i + 2 * h] = e2, a[i + 3 * h] = e3;
        }
        s /= 4;
      } else {
        for (unsigned q = t; q < P / 2; q += TOPK_THREADS) {
          unsigned i = (q / s) * 2 * s + q % s;
          uint64_t e0 = a[i], e1 = a[i + s];
          topk_cx(e0, e1, (i & size) == 0);
          a[i] = e0, a[i + s] = e1;
        }
        s /= 2;
      }
      __syncthreads();
    }
    for (unsigned sg = warp; sg < nseg; sg += TOPK_WARPS) {
      uint64_t x[4];
#pragma unroll
      for (unsigned q = 0; q < 4; q++) x[q] = a[sg * 128 + 32 * q + lane];
      topk_sort_regs(x, sg * 128, lane, size, 64);
#pragma unroll
      for (unsigned q = 0; q < 4; q++) a[sg * 128 + 32 * q + lane] = x[q];
    }
    __syncthreads();
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

// ---- the kernel ------------------------------------------------------------------

struct topk_args {
  const float *logits;
  int64_t n;
  const int32_t *ks, *ke;
  int k;
  int32_t *idx;
  float *score;
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

// ---- the bin path: one linear histogram, winners placed by bin -----------------
//
// Most rows take this path; the radix path above stays for the rows it
// declines. The radix path's first digit is the top 11 bits of the ordered
// value: the logits of a row share a few exponents, so its 32768 keys fall
// into a dozen bins (same-address atomics) and the threshold's bin keeps
// thousands of candidates. Here:
//
//  1. A pass over the row: its largest value word and a floor below which
//     no key can win: thread t's g-th largest value word, g = ceil(take /
//     threads), has g keys of t's share at or above it, so the smallest of
//     those over the threads (0 where a thread has fewer than g keys) has at
//     least g · threads >= take keys at or above it. For a row of 32768
//     logits the floor is near the 75th percentile. The bins start from a
//     higher floor, the largest of the warps' smallest g-th largest, which
//     the histogram (2.) checks: where fewer than take keys lie above it,
//     the histogram runs again from the proven floor.
//  2. The keys at or above the floor, binned over 2048 slices of [floor,
//     max], the lower half of them over the range's first sixteenth (real
//     logits have a long upper tail, so the winners crowd into the range's
//     low end; with equal slices a winner's bin held ~40 keys and ranking
//     inside bins was a fifth of the instructions: bench/NOTES.md):
//       x = f - floor, r = max - floor,
//       bin(f) = min(round(min(x · 16384 / r,
//                              x · (16384/15) / r + 2048·7/15)), 2047),
//     every operation rounded to nearest as written (round: adding 2^23; the
//     second line one fused multiply-add). Each line is monotone, rounding
//     is monotone, and so is the least of them, so bin() never decreases
//     along the keys' order:
//     every key of a higher bin is above every key of a lower one, the
//     take-th largest key lies in one bin b*, the keys of the bins above it
//     all win and b*'s keys (a few dozen for real logits) are the only
//     candidates. A staged row's binned keys are first compacted (index and
//     bin, 4 bytes) so that the histogram and the next pass run dense.
//  3. A pass that drops each key of a bin above b* into its bin's slot
//     range of the winners (bins counted from the top: the slots follow the
//     order) and b*'s keys into the list. The row buffer is then free: the
//     next item's stage starts.
//  4. The order inside a bin by counting: a key's place is its bin's start
//     plus the keys of its bin above it; b*'s keys likewise among b*'s, the
//     first need of them winning. No sort of the k winners.
//
// The path declines, before anything is written, a row whose floor or
// maximum is not finite (infinities, NaNs, a row too short for a floor),
// whose range overflows, or whose b* is too full to rank by counting (ties
// far beyond the threshold, a constant row): the radix path takes it. A row
// whose bins above b* are too full ends with the bitonic sort. Same keys,
// same order either way.

#define TOPK_RANK_MAX 512   // b*'s keys ranked by counting (its keys each read all of them)
#define TOPK_BUCKET_MAX 256 // bins above b* ranked by counting, else the bitonic sort
#define TOPK_FLOOR_G (CPLAB_TOPK_MAX / TOPK_THREADS) // the floor's g at most
#define TOPK_CAND_NONE 0xFFFFFFFFu
#define TOPK_CAND_BATCH 4 // a staged row's compacted entries a thread loads at once (topk_srow::each_cand)
// Shared-memory groups a thread loads before using them in the bin path's
// staged passes (sm_100's code for 4 spills).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
#define TOPK_SROW_UNROLL 2
#else
#define TOPK_SROW_UNROLL 4
#endif

struct topk_bins {
  uint32_t floor; // keys whose value word is below it take no part
  float lo, scale, scale_top; // the slopes of the range's first sixteenth and of the rest
  bool ok;            // the path applies
  uint32_t proven;    // the floor that is sure to leave take keys (== floor: floor is that one)
  uint32_t hi;        // the row's largest value word
};

// The bins over [floor value word fl, hi]: lo, scale, scale_top, ok.
static __device__ __forceinline__ void topk_bins_span(topk_bins &bn, uint32_t fl, uint32_t hi) {
  float lo = topk_unord(fl), range = __fsub_rn(topk_unord(hi), lo);
  float s = __fdiv_rn(8.0f * TOPK_BINS, range), st = __fdiv_rn(8.0f * TOPK_BINS / 15.0f, range);
  bn.floor = fl, bn.lo = lo;
  bn.ok = isfinite(lo) && isfinite(topk_unord(hi)) && isfinite(range);
  bool finite = range > 0.0f && isfinite(s) && isfinite(st);
  bn.scale = finite ? s : 0.0f; // 0: every key in bin 0
  bn.scale_top = finite ? st : 0.0f;
}

// The bin of a value f >= lo (a key at or above the floor).
static __device__ __forceinline__ unsigned topk_bin(float f, const topk_bins &bn) {
  float x = __fsub_rn(f, bn.lo);
  float t = fminf(__fmul_rn(x, bn.scale), __fmaf_rn(x, bn.scale_top, TOPK_BINS * 7.0f / 15.0f));
  float r = __fadd_rn(t, 8388608.0f); // 2^23 + round(t)
  return min(__float_as_uint(r) - 0x4B000000u, (unsigned)TOPK_BINS - 1);
}

static __device__ __forceinline__ unsigned topk_bin_key(uint64_t key, const topk_bins &bn) {
  uint32_t o = (uint32_t)(key >> 32);
  return o < bn.floor ? TOPK_NOBIN : topk_bin(topk_unord(o), bn);
}

// A block's floors from every thread's G largest value words (top[0] the
// largest; 0, below everything, where it has fewer): one barrier. proven:
// the least of the threads' G-th largest (at least G · threads >= take keys
// at or above it; near the 75th percentile of a row of 32768 logits);
// high: the largest of the warps' least, not proven (a warp's 32 threads
// vouch for 128 keys only), but a histogram counts the keys above it
// anyway, and topk_bin_item goes back to the proven floor where fewer than
// take are (the path stays exact). On rows of 32768 logits it lets through
// about half the keys the proven floor does, and the histogram, the
// compaction and the placing pass work on those. hi: the largest word.
struct topk_floors {
  uint32_t proven, high, hi;
};

template <unsigned G>
static __device__ __forceinline__ topk_floors topk_floors_make(const uint32_t (&top)[G], topk_ctl *c) {
  unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t fl = top[G - 1], hi = top[0];
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) {
    fl = min(fl, __shfl_xor_sync(TOPK_FULL, fl, o));
    hi = max(hi, __shfl_xor_sync(TOPK_FULL, hi, o));
  }
  if (lane == 0) c->wfloor[warp] = fl, c->wsum[warp] = hi;
  __syncthreads();
  fl = lane < TOPK_WARPS ? c->wfloor[lane] : 0xFFFFFFFFu, hi = lane < TOPK_WARPS ? c->wsum[lane] : 0u;
  uint32_t hf = lane < TOPK_WARPS ? c->wfloor[lane] : 0u;
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) {
    fl = min(fl, __shfl_xor_sync(TOPK_FULL, fl, o));
    hf = max(hf, __shfl_xor_sync(TOPK_FULL, hf, o));
    hi = max(hi, __shfl_xor_sync(TOPK_FULL, hi, o));
  }
  topk_floors f; // (topk_ord_fast's -0 made topk_ord_bits')
  f.proven = topk_ord_nz(fl), f.high = topk_ord_nz(hf), f.hi = topk_ord_nz(hi);
  return f;
}

// The bins from the floors: the higher floor where asked and usable.
static __device__ __forceinline__ topk_bins topk_bins_make(const topk_floors &f, bool high) {
  topk_bins bn;
  bn.proven = f.proven, bn.hi = f.hi;
  topk_bins_span(bn, high ? f.high : f.proven, f.hi);
  if (!bn.ok) topk_bins_span(bn, f.proven, f.hi); // (the path's decline is the proven floor's to make)
  return bn;
}

struct topk_cut {
  unsigned bstar, above, cnt, need; // b*, the keys above it, its keys, how many of them win
};

// After the bins' scan has set c->bstar (TOPK_BINS, as the caller left it,
// where fewer than take keys lie above the floor), c->above and c->cnt, and
// a barrier: the cut, and c->maxb raised to the largest of this thread's
// bins above b* (h: their counts, from the top).
static __device__ __forceinline__ topk_cut topk_cut_read(topk_ctl *c, unsigned take, const unsigned (&h)[TOPK_BPT]) {
  unsigned t = threadIdx.x, lane = t & 31;
  topk_cut cut;
  cut.bstar = c->bstar, cut.above = c->above, cut.cnt = c->cnt, cut.need = take - cut.above;
  unsigned m = 0;
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++)
    if (TOPK_BINS - 1 - TOPK_BPT * t - i > cut.bstar) m = max(m, h[i]);
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) m = max(m, __shfl_xor_sync(TOPK_FULL, m, o));
  if (lane == 0 && m) atomicMax(&c->maxb, m);
  return cut;
}

// After the histogram (and a barrier): b*, the bin of the take-th largest
// key counting from the top. Every bin's count is replaced by the number of
// keys in the bins above it (where its winners go: the placing pass's
// cursor), and beg keeps a copy (its winners' start). c->maxb: the largest
// bin above b* (reset to 0 by the caller).
static __device__ topk_cut topk_bin_find(topk_ctl *c, unsigned take) {
  unsigned t = threadIdx.x, h[TOPK_BPT], excl[TOPK_BPT];
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) h[i] = c->hist[TOPK_BINS - 1 - TOPK_BPT * t - i];
  topk_scan_bins(c, h, excl);
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) {
    unsigned b = TOPK_BINS - 1 - TOPK_BPT * t - i;
    c->hist[b] = c->beg[b] = excl[i];
    if (excl[i] < take && take <= excl[i] + h[i]) c->bstar = b, c->above = excl[i], c->cnt = h[i];
  }
  __syncthreads();
  return topk_cut_read(c, take, h);
}

static __device__ __forceinline__ void topk_hist_clear(topk_ctl *c) {
  for (unsigned b = threadIdx.x; b < TOPK_BINS; b += TOPK_THREADS) c->hist[b] = 0;
}

// Pass 1 with G keys a thread: visit(f) calls f(o) on every key's value
// word (or on values each of which has a key of its own at or above it: a
// group's largest). G is a template parameter so that a thread's G largest
// stay in registers (a compare-exchange chain per key).
template <unsigned G, class V>
static __device__ __forceinline__ topk_floors topk_floor_pass(const V &visit, topk_ctl *c) {
  uint32_t top[G];
#pragma unroll
  for (unsigned i = 0; i < G; i++) top[i] = 0;
  visit([&](uint32_t o) {
#pragma unroll
    for (unsigned i = 0; i + 1 < G; i++) {
      uint32_t m = max(top[i], o);
      o = min(top[i], o), top[i] = m;
    }
    top[G - 1] = max(top[G - 1], o);
  });
  return topk_floors_make<G>(top, c);
}

// Pass 1: G the power of two at or above ceil(take / vouchers), vouchers
// the threads whose G-th largest words the floor is the least of (a block's
// 512; a cluster's blocks' together): a looser floor than the least such g
// gives, and still one, G · vouchers >= take.
// The higher floor is tried on rows of at least TOPK_HIGH_FLOOR_RATIO · take
// keys only: on shorter ones (a split's chunks of 16384 keys for 2048, the
// merge's candidates) it leaves fewer than take keys often enough that the
// second histogram costs more than it saves (1 x 131072: 37.4 -> 43.0 us
// when tried everywhere; bench/NOTES.md).
#define TOPK_HIGH_FLOOR_RATIO 14
static __device__ __forceinline__ bool topk_floor_high(unsigned take, uint64_t len) {
  return len >= (uint64_t)TOPK_HIGH_FLOOR_RATIO * take;
}
static __device__ __forceinline__ unsigned topk_floor_g(unsigned take, unsigned vouchers) {
  unsigned g = (take + vouchers - 1) / vouchers;
  static_assert(TOPK_FLOOR_G == 8, "the cases below");
  return g <= 1 ? 1u : g <= 2 ? 2u : g <= 4 ? 4u : 8u;
}
template <class V>
static __device__ __forceinline__ topk_floors topk_floor(unsigned g, const V &visit, topk_ctl *c) {
  if (g == 1) return topk_floor_pass<1>(visit, c);
  if (g == 2) return topk_floor_pass<2>(visit, c);
  if (g == 4) return topk_floor_pass<4>(visit, c);
  return topk_floor_pass<8>(visit, c);
}

// Every key of a bin above b* to dst at its bin's cursor, b*'s to list.
static __device__ __forceinline__ void topk_place_one(topk_ctl *c, unsigned d, unsigned bstar, uint64_t key,
                                                      uint64_t *dst, uint64_t *list) {
  if (d > bstar) dst[atomicAdd(&c->hist[d], 1u)] = key;
  else list[atomicAdd(&c->ctr, 1u)] = key;
}

// A source read where it lies (shared or global memory), in groups of
// S::W: the merge's keys, rows not staged.
template <class S> struct topk_brow {
  static constexpr unsigned W = S::W;
  S src;
  topk_bins bn;
  __device__ topk_brow(const S &s_) : src(s_), bn() {}
  __device__ void set_bins(unsigned take, topk_ctl *c) {
    topk_floors f = topk_floor(topk_floor_g(take, TOPK_THREADS), [&](auto f) {
      topk_visit(src, [&](const uint4 &raw, uint32_t j0, unsigned cnt) {
#pragma unroll
        for (unsigned q = 0; q < W; q++)
          if (q < cnt) f((uint32_t)(src.key(raw, j0, q) >> 32));
      });
    }, c);
    bn = topk_bins_make(f, topk_floor_high(take, src.len));
  }
  // f(key, d) for every key, d its bin (TOPK_NOBIN below the floor); the
  // same calls in every thread
  template <class F> __device__ __forceinline__ void each(F f) const {
    topk_visit(src, [&](const uint4 &raw, uint32_t j0, unsigned cnt) {
      uint64_t key[W];
      unsigned d[W];
#pragma unroll
      for (unsigned q = 0; q < W; q++) {
        key[q] = src.key(raw, j0, q);
        d[q] = q < cnt ? topk_bin_key(key[q], bn) : TOPK_NOBIN;
      }
      f(key, d);
    });
  }
  __device__ void hist(topk_ctl *c) {
    unsigned lane = threadIdx.x & 31;
    each([&](const uint64_t (&)[W], const unsigned (&d)[W]) {
      bool same = true;
#pragma unroll
      for (unsigned q = 0; q < W; q++) same = same && d[q] == d[0];
      topk_hist_add<W>(c->hist, d, same, lane);
    });
  }
  __device__ void place(topk_ctl *c, unsigned bstar, uint64_t *dst, uint64_t *list) const {
    each([&](const uint64_t (&key)[W], const unsigned (&d)[W]) {
#pragma unroll
      for (unsigned q = 0; q < W; q++)
        if (d[q] != TOPK_NOBIN && d[q] >= bstar) topk_place_one(c, d[q], bstar, key[q], dst, list);
    });
  }
};

// A staged float row, the common case: the row buffer's 16-byte groups
// [0, groups), element j at word ph + j (< 65536: a staged row). Its binned
// keys are compacted into per-thread columns of cand (entry i of thread t
// at cand[i · threads + t]: j | bin << 16, up to rows entries a thread), no
// atomics or collectives; the histogram and the placing pass then read
// those, dense (or the row again, where a thread had more).
struct topk_srow {
  const uint32_t *buf;
  uint32_t ph, len, rel0, groups;
  uint32_t *cand;
  unsigned rows, n; // cand's entries a thread; this thread's (> rows: every thread reads the row)
  bool spill;       // some thread had more than rows
  topk_bins bn;
  __device__ topk_srow(const uint32_t *rowbuf, uint32_t ph_, uint32_t len_, uint32_t rel0_, uint32_t *cand_,
                       unsigned cap)
      : buf(rowbuf), ph(ph_), len(len_), rel0(rel0_), groups((ph_ + len_ + 3) / 4), cand(cand_),
        rows(cap / TOPK_THREADS >= 2 ? cap / TOPK_THREADS - 1 : 0), n(0), spill(false), bn() {}
  // (row `rows` takes the surplus; rows 0: no room, the row is read again)
  // f(x, j0) on every group, x its words, j0 the element of its first word
  // (it wraps below 0 in the first group); the same calls in every thread.
  // A word that is not the item's reads as 0xFFFFFFFF, a -NaN: below every
  // floor, and topk_ord_fast makes it 0, which changes no thread's top.
  // topk_stage wrote those words into the first and last groups, so the
  // passes test no bounds: the rounds in which every thread has all its
  // groups load without a test, and the last round fills a missing group
  // with such words.
  template <class F> __device__ __forceinline__ void each_group(F f) const {
    const uint4 *v = (const uint4 *)buf;
    constexpr uint32_t round = TOPK_THREADS * TOPK_SROW_UNROLL;
    uint32_t g0 = 0;
    for (; g0 + round <= groups; g0 += round) {
      uint4 x[TOPK_SROW_UNROLL];
#pragma unroll
      for (unsigned u = 0; u < TOPK_SROW_UNROLL; u++) x[u] = v[g0 + u * TOPK_THREADS + threadIdx.x];
#pragma unroll
      for (unsigned u = 0; u < TOPK_SROW_UNROLL; u++) f(x[u], 4 * (g0 + u * TOPK_THREADS + threadIdx.x) - ph);
    }
    if (g0 < groups) {
      uint4 x[TOPK_SROW_UNROLL];
#pragma unroll
      for (unsigned u = 0; u < TOPK_SROW_UNROLL; u++) {
        uint32_t g = g0 + u * TOPK_THREADS + threadIdx.x;
        x[u] = g < groups ? v[g] : make_uint4(TOPK_FULL, TOPK_FULL, TOPK_FULL, TOPK_FULL);
      }
#pragma unroll
      for (unsigned u = 0; u < TOPK_SROW_UNROLL; u++) f(x[u], 4 * (g0 + u * TOPK_THREADS + threadIdx.x) - ph);
    }
  }
  static __device__ __forceinline__ uint32_t word(const uint4 &x, unsigned q) {
    return q == 0 ? x.x : q == 1 ? x.y : q == 2 ? x.z : x.w;
  }
  __device__ __forceinline__ uint64_t key(uint32_t j) const { return key_of(j, buf[ph + j]); }
  __device__ __forceinline__ uint64_t key_of(uint32_t j, uint32_t b) const {
    return (uint64_t)topk_ord_bits(b) << 32 | (uint64_t)(0xFFFFFFFFu - (rel0 + j));
  }
  // At or above the floor: a float compare, the same as topk_ord_bits(b) >=
  // bn.floor wherever the path applies (bn.lo finite, no +NaN in the row:
  // the maximum is finite; -NaNs fail both; -0 and +0 are equal in both).
  __device__ __forceinline__ bool above(uint32_t b) const { return __uint_as_float(b) >= bn.lo; }
  // word q's bin, TOPK_NOBIN below the floor
  __device__ __forceinline__ unsigned bin_of(const uint4 &x, unsigned q) const {
    uint32_t b = word(x, q);
    return above(b) ? topk_bin(__uint_as_float(b), bn) : TOPK_NOBIN;
  }
  // Pass 1. Where every thread has at least G groups, a group gives the
  // floor pass one word rather than its four: each group holds a key at or
  // above that word, so a thread's G-th largest of them has G keys at or
  // above it (the floor's proof, with keys replaced by disjoint groups). It
  // is at most the G-th largest key, a little looser, and costs two max and
  // one order transform a group where the chain costs 2G - 1 a key. The
  // word is the largest as a signed integer: the largest value where the
  // group holds a sign-clear word (+NaN first: the maximum then is not
  // finite and the path declines), else some negative word of the group,
  // still one of its keys (-NaN, such as the padding, vouches for nothing).
  // The row's maximum taken from these words is then exact where it is not
  // negative; where every key is negative it may be lower, and the keys
  // above it fall in the top bin (bin() stays monotone; a full bin goes to
  // the sort).
  __device__ void set_bins(unsigned take, topk_ctl *c) {
    bn = topk_bins_make(floors(topk_floor_g(take, TOPK_THREADS), c), topk_floor_high(take, len));
  }
  __device__ topk_floors floors(unsigned g, topk_ctl *c) const {
    auto by_key = [&](auto f) {
      each_group([&](const uint4 &x, uint32_t) {
#pragma unroll
        for (unsigned q = 0; q < 4; q++) f(topk_ord_fast(word(x, q)));
      });
    };
    auto by_group = [&](auto f) { // (see above: the signed maximum of the group's words)
      each_group([&](const uint4 &x, uint32_t) {
        int32_t m = max(max((int32_t)x.x, (int32_t)x.y), max((int32_t)x.z, (int32_t)x.w));
        f(topk_ord_fast((uint32_t)m));
      });
    };
    if (groups >= TOPK_THREADS * g) return topk_floor(g, by_group, c);
    return topk_floor(g, by_key, c);
  }
  // f(i, e, b) for this thread's compacted entries i < cnt, e the entry
  // (its column in the low 16 bits), b the column's word in the row: in
  // batches of TOPK_CAND_BATCH, every load of a batch (entries, then words)
  // issued before f runs on any, so that a thread's chain of dependent
  // shared loads is cnt / TOPK_CAND_BATCH long, not cnt.
  template <class F> __device__ __forceinline__ void each_cand(unsigned cnt, F f) const {
    for (unsigned i0 = 0; i0 < cnt; i0 += TOPK_CAND_BATCH) {
      uint32_t e[TOPK_CAND_BATCH], b[TOPK_CAND_BATCH];
#pragma unroll
      for (unsigned u = 0; u < TOPK_CAND_BATCH; u++)
        e[u] = i0 + u < cnt ? cand[(i0 + u) * TOPK_THREADS + threadIdx.x] : 0u;
#pragma unroll
      for (unsigned u = 0; u < TOPK_CAND_BATCH; u++) b[u] = buf[ph + (e[u] & 0xFFFFu)];
#pragma unroll
      for (unsigned u = 0; u < TOPK_CAND_BATCH; u++)
        if (i0 + u < cnt) f(i0 + u, e[u], b[u]);
    }
  }
  // The compaction keeps a key's column only; its bin is made afterwards,
  // once a candidate (about a tenth of a row's keys) rather than once a key.
  __device__ void hist(topk_ctl *c) {
    unsigned t = threadIdx.x, k = 0;
    if (rows) each_group([&](const uint4 &x, uint32_t j0) {
#pragma unroll
      for (unsigned q = 0; q < 4; q++) { // branch-free: every key is written at slot k, only one at or
        bool in = above(word(x, q));   // above the floor moves k on (the next key overwrites the rest)
        cand[min(k, rows) * TOPK_THREADS + t] = j0 + q; // (slot rows: past the room, never read)
        k += in ? 1u : 0u;
      }
    });
    n = k;
    if (k > rows || !rows) c->ncand = 1; // (any thread: the same value)
    __syncthreads();
    spill = c->ncand != 0;
    if (!spill) {
      each_cand(k, [&](unsigned i, uint32_t j, uint32_t b) {
        unsigned d = topk_bin(__uint_as_float(b), bn);
        cand[i * TOPK_THREADS + t] = j | d << 16;
        atomicAdd(&c->hist[d], 1u);
      });
      return;
    }
    unsigned lane = t & 31;
    each_group([&](const uint4 &x, uint32_t) { // a thread had too many for cand: count them where they lie
      unsigned d[4];
      bool same = true;
#pragma unroll
      for (unsigned q = 0; q < 4; q++) d[q] = bin_of(x, q), same = same && d[q] == d[0];
      topk_hist_add<4>(c->hist, d, same, lane);
    });
  }
  __device__ void place(topk_ctl *c, unsigned bstar, uint64_t *dst, uint64_t *list) const {
    place_each(bstar, [&](unsigned d, uint64_t k) { topk_place_one(c, d, bstar, k, dst, list); });
  }
  // put(d, key) for every key of a bin d >= bstar
  template <class P> __device__ __forceinline__ void place_each(unsigned bstar, P put) const {
    if (!spill) {
      each_cand(n, [&](unsigned i, uint32_t e, uint32_t b) {
        if (e >> 16 >= bstar) put(e >> 16, key_of(e & 0xFFFFu, b));
      });
      return;
    }
    each_group([&](const uint4 &x, uint32_t j0) {
#pragma unroll
      for (unsigned q = 0; q < 4; q++) {
        unsigned d = bin_of(x, q);
        if (d != TOPK_NOBIN && d >= bstar) put(d, key(j0 + q));
      }
    });
  }
};

// The keys of a[s, e) above x.
static __device__ __forceinline__ unsigned topk_rank(const uint64_t *a, unsigned s, unsigned e, uint64_t x) {
  unsigned r = 0;
  for (unsigned i = s; i < e; i++) r += a[i] > x ? 1u : 0u;
  return r;
}

static __device__ __forceinline__ void topk_put(int32_t *idx, float *score, unsigned p, uint64_t key) {
  idx[p] = (int32_t)(0xFFFFFFFFu - (uint32_t)key);
  if (score) score[p] = topk_unord((uint32_t)(key >> 32));
}

// A row's winners win[0, take) sorted and written, -1 after them.
static __device__ void topk_sorted_out(const topk_args &a, const topk_item &it, uint64_t *win) {
  unsigned P = TOPK_SORT_MIN;
  while (P < it.take) P <<= 1;
  for (unsigned j = it.take + threadIdx.x; j < P; j += TOPK_THREADS) win[j] = 0; // below every real key
  __syncthreads();
  if (it.take > 1) topk_sort(win, P);
  int32_t *idx = a.idx + it.r * a.k;
  float *score = a.score ? a.score + it.r * a.k : nullptr;
  for (int j = (int)threadIdx.x; j < a.k; j += TOPK_THREADS) {
    if ((unsigned)j < it.take) {
      topk_put(idx, score, (unsigned)j, win[j]);
    } else {
      idx[j] = -1;
      if (score) score[j] = -INFINITY;
    }
  }
}

// The radix path's item: the selection, then a chunk's keys out unsorted or
// a row's sorted and written.
template <int MODE, class S, class PF>
static __device__ void topk_radix_item(const S &src, const topk_item &it, const topk_args &a, bool staged,
                                       unsigned cap, topk_ctl *c, uint64_t *win, uint64_t *list, PF &prefetch) {
  topk_select(src, it.take, staged, c, win, list, cap, prefetch);
  prefetch(); // (select ended with a barrier, or read nothing)
  if (MODE == TOPK_CHUNKS) {
    for (unsigned j = threadIdx.x; j < it.take; j += TOPK_THREADS) it.out[j] = win[j];
  } else {
    topk_sorted_out(a, it, win);
  }
}

template <int MODE>
static __device__ void topk_bin_rank(const topk_ctl *c, const topk_cut &cut, const topk_bins &bn, unsigned take,
                                     int64_t w, const topk_args &a, uint64_t *win, const uint64_t *list);

// The bin path's item (take >= 1), its bins set (pass 1). Returns false,
// having written nothing and left the histogram clear, where the path
// declines: the caller then takes the radix path over the same source.
template <int MODE, class R, class PF>
static __device__ bool topk_bin_item(R &row, unsigned take, int64_t w, const topk_args &a, topk_ctl *c,
                                     uint64_t *win, uint64_t *list, PF &prefetch) {
  unsigned t = threadIdx.x;
  if (!row.bn.ok) return false;
  const topk_bins &bn = row.bn;
  row.hist(c);
  __syncthreads();
  topk_cut cut = topk_bin_find(c, take);
  if (cut.bstar == TOPK_BINS) { // the higher floor left fewer than take keys: the proven one, again
    __syncthreads();            // every thread has read c->bstar
    if (t == 0) c->bstar = TOPK_BINS, c->maxb = 0, c->ncand = 0;
    topk_hist_clear(c);
    topk_bins_span(row.bn, row.bn.proven, row.bn.hi);
    __syncthreads();
    if (!row.bn.ok) return false;
    row.hist(c);
    __syncthreads();
    cut = topk_bin_find(c, take);
  }
  if (cut.bstar == TOPK_BINS) { // (the proven floor always leaves take keys: not reached)
    topk_hist_clear(c);
    __syncthreads();
    return false;
  }
  if (cut.cnt > TOPK_RANK_MAX) {
    topk_hist_clear(c);
    __syncthreads();
    return false;
  }
  uint64_t *out = a.scratch + w * a.k, *dst = MODE == TOPK_CHUNKS ? out : win; // (topk_decode's out)
  row.place(c, cut.bstar, dst, list);
  __syncthreads();
  topk_hist_clear(c); // the next item's histogram starts from zero (after its first barrier)
  prefetch();                        // this item reads only the winners and the list from here on
  topk_bin_rank<MODE>(c, cut, bn, take, w, a, win, list);
  return true;
}

// The bin path's end, after the placing pass and a barrier: the winners of
// the bins above b* in win (each bin's from c->beg[b]), b*'s keys in
// list[0, cut.cnt); their order by counting (or the sort, where a bin is
// too full), written out (a chunk's keys unsorted to the scratch).
template <int MODE>
static __device__ void topk_bin_rank(const topk_ctl *c, const topk_cut &cut, const topk_bins &bn, unsigned take,
                                     int64_t w, const topk_args &a, uint64_t *win, const uint64_t *list) {
  unsigned t = threadIdx.x;
  uint64_t *out = a.scratch + w * a.k;
  bool rank_all = MODE != TOPK_CHUNKS && c->maxb <= TOPK_BUCKET_MAX;
  int32_t *idx = a.idx + w * a.k; // rows, merge: the item is the row
  float *score = a.score ? a.score + w * a.k : nullptr;
  for (unsigned i = t; i < cut.cnt; i += TOPK_THREADS) { // b*'s winners: their place among its keys
    uint64_t x = list[i];
    unsigned r = topk_rank(list, 0, cut.cnt, x);
    if (r >= cut.need) continue;
    if (MODE == TOPK_CHUNKS) out[cut.above + r] = x;
    else if (rank_all) topk_put(idx, score, cut.above + r, x);
    else win[cut.above + r] = x;
  }
  if (MODE == TOPK_CHUNKS) return;
  if (!rank_all) {
    topk_sorted_out(a, topk_decode<MODE>(a, w), win);
    return;
  }
  for (unsigned p = t; p < cut.above; p += TOPK_THREADS) { // the bins above b*: a key's place in its bin
    uint64_t x = win[p];
    unsigned b = topk_bin_key(x, bn), s0 = c->beg[b];
    topk_put(idx, score, s0 + topk_rank(win, s0, c->beg[b - 1], x), x);
  }
  for (unsigned j = take + t; j < (unsigned)a.k; j += TOPK_THREADS) {
    idx[j] = -1;
    if (score) score[j] = -INFINITY;
  }
}

// Item w (take >= 1) through the bin path on row, or the radix path on src
// where the bin path declines.
template <int MODE, class R, class S, class PF>
static __device__ void topk_bin_or_radix(R &row, const S &src, unsigned take, int64_t w, const topk_args &a,
                                         bool staged, unsigned cap, topk_ctl *c, uint64_t *win, uint64_t *list,
                                         PF &prefetch) {
  row.set_bins(take, c);
  if (!topk_bin_item<MODE>(row, take, w, a, c, win, list, prefetch))
    topk_radix_item<MODE>(src, topk_decode<MODE>(a, w), a, staged, cap, c, win, list, prefetch);
}

// Item w. (Its fields are decoded again where they are needed, so that few
// stay live across the passes.)
template <int MODE, class PF>
static __device__ void topk_run_item(int64_t w, const topk_args &a, const void *staged, unsigned cap, topk_ctl *c,
                                     uint64_t *win, uint64_t *list, const uint32_t *rowbuf, PF &prefetch) {
  topk_item it = topk_decode<MODE>(a, w);
  if (it.take == 0) {
    topk_radix_item<MODE>(topk_ksrc((const uint64_t *)it.src, 0), it, a, false, cap, c, win, list, prefetch);
    return;
  }
  if constexpr (MODE != TOPK_MERGE) {
    if (staged) { // the list's first TOPK_RANK_MAX entries are b*'s, the rest cand's
      // (rowbuf rather than staged: the compiler then knows that it is shared memory)
      unsigned room = a.list_cap > TOPK_RANK_MAX ? 2 * (a.list_cap - TOPK_RANK_MAX) : 0u; // (in 4-byte entries)
      topk_srow row(rowbuf, (uint32_t)((const uint32_t *)staged - rowbuf), it.len, it.rel0,
                    (uint32_t *)(list + TOPK_RANK_MAX), room);
      topk_bin_or_radix<MODE>(row, topk_fsrc((const float *)staged, it.len, it.rel0), it.take, w, a, true, cap, c,
                              win, list, prefetch);
    } else {
      topk_fsrc src((const float *)it.src, it.len, it.rel0);
      topk_brow<topk_fsrc> row(src);
      topk_bin_or_radix<MODE>(row, src, it.take, w, a, false, cap, c, win, list, prefetch);
    }
  } else {
    const void *from = staged ? (const void *)(rowbuf + ((const uint32_t *)staged - rowbuf)) : it.src; // (shared)
    topk_ksrc src((const uint64_t *)from, it.len);
    topk_brow<topk_ksrc> row(src);
    topk_bin_or_radix<MODE>(row, src, it.take, w, a, staged != nullptr, cap, c, win, list, prefetch);
  }
}

template <int MODE> __global__ void __launch_bounds__(TOPK_THREADS, 1) topk_kernel(topk_args a) {
  extern __shared__ uint4 topk_raw[];
  topk_ctl *c = (topk_ctl *)topk_raw;
  uint64_t *win = (uint64_t *)(c + 1), *list = win + a.win_cap;
  uint32_t *rowbuf = (uint32_t *)(list + a.list_cap);
  for (unsigned b = threadIdx.x; b < TOPK_BINS; b += TOPK_THREADS) c->hist[b] = 0;
  if (threadIdx.x == 0) mbar_init(&c->stage_bar, 1);
  __syncthreads();
  // an item is decoded again where it is used (two loads of ks, ke), so that
  // no second item's fields stay live in registers across the selection
  int64_t w = blockIdx.x;
  const void *staged = nullptr;
  bool bulk = false;       // the staged item's body came by a bulk copy
  unsigned bulk_phase = 0; // the stage barrier's phase that copy completes
  {
    topk_item first = topk_decode<MODE>(a, w);
    if (topk_stageable(a, first)) staged = topk_stage(rowbuf, first.src, first.words, c, &bulk);
  }
  if (threadIdx.x == TOPK_L2_THREAD) topk_prefetch_l2<MODE>(a, w + gridDim.x);
  for (; w < a.items; w += gridDim.x) {
    cp_async_wait<0>();
    if (threadIdx.x == 0) c->ctr = 0, c->maxb = 0, c->ncand = 0, c->bstar = TOPK_BINS;
    __syncthreads(); // the staged head and tail are visible; the previous item's reads of win and list are over
    if (bulk) { // (after the barrier: the copy has been issued)
      mbar_wait(&c->stage_bar, bulk_phase & 1u);
      bulk_phase++;
    }
    const void *nstaged = nullptr;
    bool fetched = false, nbulk = false;
    auto prefetch = [&]() { // block-wide: the next item's stage, once
      if (fetched) return;
      fetched = true;
      int64_t wn = w + gridDim.x;
      if (wn >= a.items) return;
      topk_item nx = topk_decode<MODE>(a, wn);
      if (topk_stageable(a, nx)) nstaged = topk_stage(rowbuf, nx.src, nx.words, c, &nbulk);
      if (threadIdx.x == TOPK_L2_THREAD) topk_prefetch_l2<MODE>(a, wn + gridDim.x); // the item after it
    };
    // an unstaged item's list may use the row buffer too (the radix path)
    unsigned cap = staged ? a.list_cap : a.list_cap + a.row_words / 2;
    topk_run_item<MODE>(w, a, staged, cap, c, win, list, rowbuf, prefetch);
    staged = nstaged, bulk = nbulk;
  }
}

// ---- the cluster path: one row a thread-block cluster ---------------------------
//
// For few long rows (the split's case: decode rows of 64k..128k columns), one
// row a cluster of C blocks (C = the split's chunks, at most 8). Each block
// stages its slice of the row (about L / C columns) and runs the bin path's
// passes on it; the steps that need the whole row go through distributed
// shared memory: the floors are reduced into block 0's (G from C · 512
// threads), every block bins with the same span, the blocks' histograms are
// summed (each block reads all C of them), b* is found identically in every
// block, and each block drops its winners straight into block 0's winners at
// its own offset inside every bin (the bin's start plus the keys its
// predecessors have in it) and b*'s keys into block 0's list. Block 0 then
// ranks and writes the row as the one-block path does. One launch, no
// merge, no scratch. Where the path declines (a floor or maximum not finite,
// b* too full, a block's slice too short for a floor), block 0 takes the row
// alone from global memory (the bin or radix path of an unstaged row).
#define TOPK_CLUSTER_MAX 8 // blocks a cluster: the portable size

// After every block's histogram and a cluster barrier: the cluster's
// histogram (the sum of its blocks'), b* and the cut, the same in every
// block. This block's c->hist becomes its placing cursors (the cluster's
// keys above each bin plus this block's predecessors' keys in it), c->beg
// the bins' starts, c->maxb the largest bin above b*. Two more cluster
// barriers: the histograms are overwritten only once every block has read
// them.
static __device__ topk_cut topk_cluster_find(topk_ctl *c, unsigned take, unsigned rank, unsigned C) {
  unsigned t = threadIdx.x, h[TOPK_BPT], pre[TOPK_BPT], excl[TOPK_BPT];
  static_assert(TOPK_BPT == 4, "a thread's bins are one 16-byte word");
  // Every block's counts of this thread's four bins (hist[2044 - 4t ..
  // 2047 - 4t]), all loads issued before any is used (the first version
  // summed each remote load before issuing the next: ~13% of the stall
  // samples).
  uint64_t w[TOPK_CLUSTER_MAX][2];
  const unsigned *mine = &c->hist[TOPK_BINS - TOPK_BPT * (t + 1)];
#pragma unroll
  for (unsigned r = 0; r < TOPK_CLUSTER_MAX; r++) {
    uint32_t at = cluster_map(mine, r < C ? r : 0);
    w[r][0] = r < C ? cluster_ld_u64(at) : 0u;
    w[r][1] = r < C ? cluster_ld_u64(at + 8u) : 0u;
  }
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) h[i] = 0, pre[i] = 0;
#pragma unroll
  for (unsigned r = 0; r < TOPK_CLUSTER_MAX; r++) {
#pragma unroll
    for (unsigned i = 0; i < TOPK_BPT; i++) { // bin 2047 - 4t - i is word 3 - i
      unsigned v = (unsigned)(w[r][(3 - i) >> 1] >> (32 * ((3 - i) & 1)));
      h[i] += v;
      pre[i] += r < rank ? v : 0u;
    }
  }
  cluster_sync(); // every block has read every histogram
  topk_scan_bins(c, h, excl);
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) {
    unsigned b = TOPK_BINS - 1 - TOPK_BPT * t - i;
    c->hist[b] = excl[i] + pre[i];
    c->beg[b] = excl[i];
    if (excl[i] < take && take <= excl[i] + h[i]) c->bstar = b, c->above = excl[i], c->cnt = h[i];
  }
  __syncthreads();
  return topk_cut_read(c, take, h);
}

// The cluster's floors: each block's reduced into block 0's (one cluster
// barrier; block 0 set its fields to the identities before the first).
static __device__ topk_floors topk_cluster_floors(const topk_floors &mine, topk_ctl *c) {
  if (threadIdx.x == 0) {
    cluster_atomic_min_u32(cluster_map(&c->cl_proven, 0), mine.proven);
    cluster_atomic_max_u32(cluster_map(&c->cl_high, 0), mine.high);
    cluster_atomic_max_u32(cluster_map(&c->cl_hi, 0), mine.hi);
  }
  cluster_sync();
  topk_floors f;
  f.proven = cluster_ld_u32(cluster_map(&c->cl_proven, 0));
  f.high = cluster_ld_u32(cluster_map(&c->cl_high, 0));
  f.hi = cluster_ld_u32(cluster_map(&c->cl_hi, 0));
  return f;
}

// This block's slice of row r: [*lo, *lo + return) of the logits' columns;
// slices of a multiple of 4 columns, the last one shorter or empty.
static __device__ unsigned topk_cluster_slice(const topk_args &a, int64_t r, unsigned rank, unsigned C, int64_t *lo,
                                              int64_t *row_lo, int64_t *row_hi) {
  int64_t base = a.ks[r];
  *row_lo = min(max(base, (int64_t)0), a.n), *row_hi = min(max((int64_t)a.ke[r], *row_lo), a.n);
  int64_t L = *row_hi - *row_lo, each = ((L + C - 1) / C + 3) & ~(int64_t)3;
  int64_t s = min(*row_lo + rank * each, *row_hi), e = min(s + each, *row_hi);
  *lo = s;
  return (unsigned)(e - s);
}

__global__ void __launch_bounds__(TOPK_THREADS, 1) topk_cluster_kernel(topk_args a) {
  extern __shared__ uint4 topk_raw[];
  topk_ctl *c = (topk_ctl *)topk_raw;
  uint64_t *win = (uint64_t *)(c + 1), *list = win + a.win_cap;
  uint32_t *rowbuf = (uint32_t *)(list + a.list_cap);
  unsigned C = cluster_blocks(), rank = cluster_rank(), t = threadIdx.x;
  int64_t r = blockIdx.x / C, lo, row_lo, row_hi;
  unsigned len = topk_cluster_slice(a, r, rank, C, &lo, &row_lo, &row_hi);
  unsigned L = (unsigned)(row_hi - row_lo), take = min(L, (unsigned)a.k);
  for (unsigned b = t; b < TOPK_BINS; b += TOPK_THREADS) c->hist[b] = 0;
  if (t == 0) {
    mbar_init(&c->stage_bar, 1);
    c->ctr = 0, c->maxb = 0, c->ncand = 0, c->bstar = TOPK_BINS;
    c->cl_proven = 0xFFFFFFFFu, c->cl_high = 0, c->cl_hi = 0;
  }
  __syncthreads();
  bool bulk = false;
  const void *staged = len ? topk_stage(rowbuf, a.logits + r * a.n + lo, len, c, &bulk) : nullptr;
  cluster_sync(); // every block runs, and block 0's floors are set
  cp_async_wait<0>();
  __syncthreads();
  if (bulk) mbar_wait(&c->stage_bar, 0);
  unsigned room = a.list_cap > TOPK_RANK_MAX ? 2 * (a.list_cap - TOPK_RANK_MAX) : 0u;
  topk_srow row(rowbuf, staged ? (uint32_t)((const uint32_t *)staged - rowbuf) : 0u, len,
                (uint32_t)(lo - a.ks[r]), (uint32_t *)(list + TOPK_RANK_MAX), room);
  unsigned g = topk_floor_g(take, C * TOPK_THREADS);
  topk_floors mine = {0u, 0u, 0u}; // an empty slice vouches for nothing: the floor 0, the path declines
  if (len && take) mine = row.floors(g, c);
  row.bn = topk_bins_make(topk_cluster_floors(mine, c), topk_floor_high(take, L));
  bool ok = take > 0 && row.bn.ok; // (the same in every block: the same floors)
  if (!ok) cluster_sync(); // every block has read block 0's floors before block 0 may end
  topk_cut cut = {TOPK_BINS, 0, 0, 0};
  if (ok) {
    row.hist(c);
    __syncthreads();
    cluster_sync(); // every block's histogram is complete
    cut = topk_cluster_find(c, take, rank, C);
    if (cut.bstar == TOPK_BINS) { // the higher floor left fewer than take keys: the proven one, again
      __syncthreads();
      if (t == 0) c->bstar = TOPK_BINS, c->maxb = 0, c->ncand = 0;
      topk_hist_clear(c);
      topk_bins_span(row.bn, row.bn.proven, row.bn.hi);
      __syncthreads();
      ok = row.bn.ok; // (the same in every block: the same floors)
      if (ok) {
        row.hist(c);
        __syncthreads();
        cluster_sync();
        cut = topk_cluster_find(c, take, rank, C);
      }
    }
    ok = ok && cut.bstar != TOPK_BINS && cut.cnt <= TOPK_RANK_MAX;
  }
  if (!ok) { // block 0 takes the row alone, from global memory; no block touches another's memory again
            // (the last remote reads were before the barrier above or in topk_cluster_find)
    if (rank != 0) return;
    __syncthreads();
    if (t == 0) c->ctr = 0, c->maxb = 0, c->ncand = 0, c->bstar = TOPK_BINS;
    topk_hist_clear(c);
    __syncthreads();
    if (take == 0) { // an empty row: -1 throughout
      for (int j = (int)t; j < a.k; j += TOPK_THREADS) {
        a.idx[r * a.k + j] = -1;
        if (a.score) a.score[r * a.k + j] = -INFINITY;
      }
      return;
    }
    auto none = [] {};
    topk_fsrc src(a.logits + r * a.n + row_lo, L, (uint32_t)(row_lo - a.ks[r]));
    topk_brow<topk_fsrc> whole(src);
    topk_bin_or_radix<TOPK_ROWS>(whole, src, take, r, a, false, a.list_cap + a.row_words / 2, c, win, list, none);
    return;
  }
  uint32_t win0 = cluster_map(win, 0), list0 = cluster_map(list, 0), ctr0 = cluster_map(&c->ctr, 0);
  row.place_each(cut.bstar, [&](unsigned d, uint64_t key) {
    if (d > cut.bstar) cluster_st_u64(win0 + 8u * atomicAdd(&c->hist[d], 1u), key);
    else cluster_st_u64(list0 + 8u * cluster_atomic_add_u32(ctr0, 1u), key);
  });
  __syncthreads();
  cluster_sync(); // block 0 holds the row's winners; no block's memory is read again but its own
  // (block 0 ranks alone: every block ranking a share of copies of block 0's
  // winners took 30.9 us at 1 x 131072 where this takes 28.2; bench/NOTES.md)
  if (rank == 0) topk_bin_rank<TOPK_ROWS>(c, cut, row.bn, take, r, a, win, list);
}

// ---- host side -------------------------------------------------------------------

struct topk_layout {
  unsigned win_cap, list_cap, row_words;
  size_t smem;
};

static int topk_device(int *sms, int *optin, cplab_diag *d) {
  cplab_device_facts f;
  int rc = cplab_device_facts_get(&f, d);
  if (!rc) *sms = f.sm_count, *optin = f.smem_optin;
  return rc;
}

static inline int64_t topk_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t topk_max64(int64_t a, int64_t b) { return a > b ? a : b; }

// Shared memory of a mode: the control block, the winners (a power of two
// >= TOPK_SORT_MIN for the sort; a chunk's are not sorted), the candidate
// list and the row buffer. The row buffer gets what an item needs (n
// columns, a chunk, a row's candidates) as long as the list keeps
// TOPK_LIST_MIN entries; the list gets the rest (up to what an item can
// have). Since one block runs per SM anyway, the layout takes
// all it can use. 0 when even the minimum does not fit.

static int topk_layout_make(int mode, int64_t n, int k, int64_t chunk, int64_t chunks, int optin, topk_layout *L) {
  int64_t items = mode == TOPK_ROWS ? n : mode == TOPK_CHUNKS ? topk_min64(n, chunk) : chunks * k;
  int64_t take = topk_min64((int64_t)k, items), win = TOPK_SORT_MIN;
  if (mode == TOPK_CHUNKS) win = (take + 1) & ~(int64_t)1;
  else
    while (win < take) win <<= 1;
  int64_t words = mode == TOPK_MERGE ? 2 * items : items, want = (words + 3 + 3) & ~(int64_t)3;
  int64_t even = (items + 1) & ~(int64_t)1, list_min = topk_min64((int64_t)TOPK_LIST_MIN, even);
  int64_t avail = (int64_t)optin - (int64_t)sizeof(topk_ctl) - 8 * win;
  if (avail < 8 * list_min + 64) return 0;
  int64_t row = topk_min64(want, ((avail - 8 * list_min) / 4) & ~(int64_t)3);
  int64_t list = topk_min64(((avail - 4 * row) / 8) & ~(int64_t)1, topk_max64(even, list_min));
  L->win_cap = (unsigned)win;
  L->list_cap = (unsigned)list;
  L->row_words = (unsigned)row;
  L->smem = sizeof(topk_ctl) + 8 * (size_t)win + 8 * (size_t)list + 4 * (size_t)row;
  return 1;
}

// The split path's geometry: chunks of 16384 columns (32768 for k > 2048,
// so that a chunk keeps at most a quarter of its columns and a row's
// candidates, (chunks) · k, still fit the merge's row buffer at 131072
// columns).
static int64_t topk_chunk_cols(int k) { return k <= 2048 ? 16384 : 32768; }

// Whether cplab_topk_split splits (m, n, k) on this device: when rows are too
// long to be staged (the one-block-per-row path would read them from global
// memory, pass after pass) and few enough that their chunks' candidates stay
// a modest scratch (at most TOPK_SPLIT_ROWS_PER_SM rows per SM).
static int topk_plan(int64_t m, int64_t n, int k, int sms, int optin, int64_t *chunk, int64_t *chunks) {
  topk_layout rows;
  *chunk = topk_chunk_cols(k);
  *chunks = (n + *chunk - 1) / *chunk;
  if (m < 1 || m > (int64_t)TOPK_SPLIT_ROWS_PER_SM * sms) return 0;
  if (topk_layout_make(TOPK_ROWS, n, k, 0, 0, optin, &rows) && n + 3 <= (int64_t)rows.row_words) return 0;
  return *chunks >= 2;
}

template <int MODE>
static int topk_launch(topk_args a, int sms, int optin, void *stream, cplab_diag *d, const char *name) {
  topk_layout L;
  if (!topk_layout_make(MODE, a.n, a.k, a.chunk, a.chunks, optin, &L))
    return cplab_diag_set(d, CPLAB_EUNSUPPORTED, "%s: k %d needs more shared memory per block than the device's %d",
                          name, a.k, optin);
  a.win_cap = L.win_cap;
  a.list_cap = L.list_cap;
  a.row_words = L.row_words;
  int rc = kset_smem(d, topk_kernel<MODE>, L.smem, "topk_kernel");
  if (rc) return rc;
  unsigned grid = (unsigned)topk_min64(a.items, (int64_t)(sms > 0 ? sms : 1)); // persistent: one block per SM
  topk_kernel<MODE><<<grid, TOPK_THREADS, L.smem, kstream(stream)>>>(a);
  return kcheck_launch(d, "topk_kernel");
}

// The checks cplab_topk and cplab_topk_split share; *run = 0 when there is
// nothing to do.
static int topk_check(const cplab_topk_params *p, int *run, cplab_diag *d, const char *name) {
  *run = 0;
  KCHECK_ARG(d, p, "%s: NULL parameters", name);
  KCHECK_ARG(d, p->m >= 0 && p->n >= 0, "%s: negative size (m %lld, n %lld)", name, (long long)p->m, (long long)p->n);
  KCHECK_ARG(d, p->k >= 1 && p->k <= CPLAB_TOPK_MAX, "%s: k must be 1..%d, got %d", name, CPLAB_TOPK_MAX, p->k);
  KCHECK_ARG(d, p->n <= INT32_MAX, "%s: %lld columns exceed int32 indices", name, (long long)p->n);
  if (p->m == 0) return 0;
  KCHECK_ARG(d, (p->logits || p->n == 0) && p->ks && p->ke && p->idx, "%s: NULL argument", name);
  KCHECK_ARG(d, p->m <= KGRID_MAX_X, "%s: %lld rows too many", name, (long long)p->m);
  *run = 1;
  return 0;
}

static topk_args topk_args_make(const cplab_topk_params *p) {
  topk_args a = {};
  a.logits = p->logits;
  a.n = p->n;
  a.ks = p->ks;
  a.ke = p->ke;
  a.k = p->k;
  a.idx = p->idx;
  a.score = p->score;
  a.items = p->m;
  a.chunk = 1;
  a.chunks = 1;
  return a;
}

extern "C" int cplab_topk(const cplab_topk_params *p, void *stream, cplab_diag *d) {
  int run = 0, rc = topk_check(p, &run, d, "cplab_topk");
  if (rc || !run) return rc;
  int sms = 0, optin = 0;
  rc = topk_device(&sms, &optin, d);
  if (rc) return rc;
  return topk_launch<TOPK_ROWS>(topk_args_make(p), sms, optin, stream, d, "cplab_topk");
}

// The cluster path for the split's rows (chunks of them a row, at most the
// portable cluster size) where all clusters run at once (m · chunks blocks
// at most one an SM: at batch 64 x 131072, 512 blocks in four waves took
// 133.9 us where the split's persistent blocks took 78.6), or for one row
// (one cluster against two launches; the emulation's one SM takes this
// path with one row, the split with more): *launched 0,
// and nothing run, where not, where its layout does not fit or where the
// device refuses the cluster (its blocks, one an SM, must fit one GPC at
// once); the caller then takes the split path.
static int topk_cluster_fits(int64_t m, int64_t n, int k, int64_t chunks, int sms, int optin, topk_layout *L) {
  if (chunks < 2 || chunks > TOPK_CLUSTER_MAX || (m > 1 && m * chunks > sms)) return 0; // (chunks 0: rows too short)
  int64_t slice = (((n + chunks - 1) / chunks) + 3) & ~(int64_t)3;
  return slice >= k && topk_layout_make(TOPK_ROWS, slice, k, 0, 0, optin, L) && slice + 3 <= (int64_t)L->row_words;
}

static int topk_cluster_launch(topk_args a, int64_t m, int64_t chunks, int sms, int optin, void *stream,
                               cplab_diag *d, int *launched) {
  *launched = 0;
  topk_layout L;
  if (!topk_cluster_fits(m, a.n, a.k, chunks, sms, optin, &L)) return 0;
  a.win_cap = L.win_cap;
  a.list_cap = L.list_cap;
  a.row_words = L.row_words;
  int rc = kset_smem(d, topk_cluster_kernel, L.smem, "topk_cluster_kernel");
  if (rc) return rc;
  cudaError_t e = cluster_launch(topk_cluster_kernel, dim3((unsigned)(m * chunks)), dim3(TOPK_THREADS), L.smem,
                                 kstream(stream), (unsigned)chunks, a);
  if (e != cudaSuccess) { // refused (before it ran): the split path instead
    (void)cudaGetLastError();
    return 0;
  }
  *launched = 1;
  return kcheck_launch(d, "topk_cluster_kernel");
}

// Rows that one block could stage (decode rows up to ~43k columns) but so
// few that one block a row leaves most SMs idle: the cluster path over
// slices of at least TOPK_CLUSTER_SLICE_MIN columns (and 2k), as many
// blocks a row as there are slices, up to the portable cluster size and,
// with several rows, the SMs shared out over them (a row's block does its
// passes' fixed work on a slice as on the whole row, so more blocks a row
// shorten them only while the slice is not too short: NOTES). 0 or 1: one
// block a row.
#define TOPK_CLUSTER_SLICE_MIN 8192
static int64_t topk_cluster_staged_chunks(int64_t m, int64_t n, int k, int sms) {
  int64_t c = topk_min64(TOPK_CLUSTER_MAX, n / topk_max64(TOPK_CLUSTER_SLICE_MIN, 2 * (int64_t)k));
  return m > 1 ? topk_min64(c, sms / m) : c;
}

extern "C" int cplab_topk_split_route(int64_t m, int64_t n, int k, int sms, int smem_optin, cplab_topk_route *r,
                                      cplab_diag *d) {
  KCHECK_ARG(d, r && m >= 0 && n >= 0 && n <= INT32_MAX && k >= 1 && k <= CPLAB_TOPK_MAX && sms >= 1 &&
                    smem_optin >= 0,
             "cplab_topk_split_route: bad arguments (m %lld, n %lld, k %d, %d SMs, %d bytes)", (long long)m,
             (long long)n, k, sms, smem_optin);
  r->path = r->refused = CPLAB_TOPK_PATH_ROWS;
  r->blocks = 1;
  r->chunk = r->chunks = 0;
  r->scratch_bytes = 0;
  if (m == 0 || n == 0) return 0;
  int64_t chunk, chunks, cl;
  if (topk_plan(m, n, k, sms, smem_optin, &chunk, &chunks)) {
    r->path = r->refused = CPLAB_TOPK_PATH_CHUNKS;
    r->blocks = (int)chunks;
    r->chunk = chunk, r->chunks = chunks;
    r->scratch_bytes = (size_t)m * (size_t)chunks * (size_t)k * 8;
    cl = chunks;
  } else {
    cl = topk_cluster_staged_chunks(m, n, k, sms);
  }
  topk_layout L;
  if (topk_cluster_fits(m, n, k, cl, sms, smem_optin, &L)) r->path = CPLAB_TOPK_PATH_CLUSTER, r->blocks = (int)cl;
  return 0;
}

extern "C" int cplab_topk_split(const cplab_topk_params *p, void *stream, cplab_diag *d) {
  const char *name = "cplab_topk_split";
  int run = 0, rc = topk_check(p, &run, d, name);
  if (rc || !run) return rc;
  int sms = 0, optin = 0;
  rc = topk_device(&sms, &optin, d);
  if (rc) return rc;
  cplab_topk_route route;
  rc = cplab_topk_split_route(p->m, p->n, p->k, sms, optin, &route, d);
  if (rc) return rc;
  topk_args a = topk_args_make(p);
  int launched = 0;
  if (route.refused == CPLAB_TOPK_PATH_CHUNKS)
    KCHECK_ARG(d, p->scratch_bytes >= route.scratch_bytes && p->scratch && kaligned(p->scratch, 16),
               "%s: %zu bytes of scratch given (16-byte aligned), %zu needed (cplab_topk_scratch)", name,
               p->scratch_bytes, route.scratch_bytes); // (asked even where the cluster path, which needs none, runs)
  if (route.path == CPLAB_TOPK_PATH_CLUSTER) {
    rc = topk_cluster_launch(a, p->m, route.blocks, sms, optin, stream, d, &launched);
    if (rc || launched) return rc;
  }
  if (route.refused == CPLAB_TOPK_PATH_ROWS) return topk_launch<TOPK_ROWS>(a, sms, optin, stream, d, name);
  a.scratch = (uint64_t *)p->scratch;
  a.chunk = route.chunk;
  a.chunks = route.chunks;
  a.items = p->m * route.chunks;
  rc = topk_launch<TOPK_CHUNKS>(a, sms, optin, stream, d, name);
  if (rc) return rc;
  a.items = p->m;
  return topk_launch<TOPK_MERGE>(a, sms, optin, stream, d, name);
}

extern "C" int cplab_topk_scratch(int64_t m, int64_t n, int k, size_t *bytes, cplab_diag *d) {
  KCHECK_ARG(d, bytes && m >= 0 && n >= 0 && n <= INT32_MAX && k >= 1 && k <= CPLAB_TOPK_MAX,
             "cplab_topk_scratch: bad arguments (m %lld, n %lld, k %d)", (long long)m, (long long)n, k);
  *bytes = 0;
  if (m == 0 || n == 0) return 0;
  int sms = 0, optin = 0;
  int rc = topk_device(&sms, &optin, d);
  if (rc) return rc;
  cplab_topk_route r;
  rc = cplab_topk_split_route(m, n, k, sms, optin, &r, d);
  if (!rc) *bytes = r.scratch_bytes;
  return rc;
}
