// kernels/topk_radix.cuh: the per-row top-k's radix path (topk.cu): an
// exact MSB-first radix select over the 64-bit keys, the bitonic sort of the
// winners, and the item that runs them (the rows the bin path declines, and
// empty ones). The design is in topk.cu's header.
#ifndef CPLAB_KERNELS_TOPK_RADIX_CUH
#define CPLAB_KERNELS_TOPK_RADIX_CUH

#include "topk_block.cuh"

// ---- the radix select ---------------------------------------------------------------

// Histogram of the digit (bits at shift) of the keys matching prefix on mask
// (topk_hist_add: shared-memory atomics, a warp's equal bins at once).
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

// A row's winners win[0, take) sorted and written, -1 after them.
static __device__ void topk_sorted_out(const topk_args &a, const topk_item &it, uint64_t *win) {
  unsigned P = TOPK_SORT_MIN;
  while (P < it.take) P <<= 1;
  for (unsigned j = it.take + threadIdx.x; j < P; j += TOPK_THREADS) win[j] = 0; // below every real key
  __syncthreads();
  if (it.take > 1) topk_sort(win, P);
  topk_out o = topk_out_of(a, it.r);
  for (unsigned j = threadIdx.x; j < (unsigned)a.k; j += TOPK_THREADS) {
    if (j < it.take) o.put(j, win[j]);
    else o.none(j);
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

#endif
