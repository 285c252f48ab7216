// kernels/topk_bins.cuh: the per-row top-k's bin path (topk.cu): the floor,
// one linear histogram over [floor, max], the winners dropped into their
// bins' slots and ranked inside them by counting; its sources (a staged float
// row, compacted; a row or key list read where it lies); and the item that
// runs it or, where it declines, the radix path (topk_radix.cuh).
#ifndef CPLAB_KERNELS_TOPK_BINS_CUH
#define CPLAB_KERNELS_TOPK_BINS_CUH

#include <type_traits>

#include "topk_radix.cuh"

// ---- the bin path: one linear histogram, winners placed by bin -----------------
//
// Most rows take this path; the radix path (topk_radix.cuh) stays for the rows it
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
//     candidates. A staged row's keys above the floor are first compacted
//     into one list (column and bin, 4 bytes: topk_srow) so that the
//     histogram and the next pass run dense and shared out evenly.
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
#define TOPK_CAND_BATCH 4 // a staged row's list entries a thread loads at once (topk_srow's bins and placing)
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
// [0, groups), element j at word ph + j (< 65536: a staged row). Its keys at
// or above the floor go into one dense list (list, room entries: j | bin <<
// 16) in three steps:
//  - the compaction's pass keeps one bit a key in the thread's registers (the
//    mask, TOPK_MASK_WORDS words: a compare and an or a key, where writing
//    each key's column to a slot took eight instructions a key);
//  - a scan of the threads' counts gives each its run of the list, and each
//    writes its keys' columns there;
//  - the bins are made over the list shared out evenly (entries t, t + 512,
//    ...), as the placing pass reads it: a thread's own keys (~7, up to ~16 in
//    a warp's fullest lane) had kept its passes at 15-19 of 32 lanes busy
//    (ncu, bench/NOTES.md 2026-12-07).
// Where the keys do not fit the list, or the row's rounds the mask (spill),
// the histogram and the placing pass read the row again.
#define TOPK_MASK_WORDS 4 // a thread's mask: 128 keys (a staged row of 32768 keys: 64 to 80)
struct topk_srow {
  static constexpr unsigned U = TOPK_SROW_UNROLL, RB = 4 * U; // a round's groups and keys a thread
  static constexpr uint32_t ROUND = TOPK_THREADS * U;         // a round's groups
  const uint32_t *buf;
  uint32_t ph, len, rel0, groups;
  uint32_t *list;
  unsigned room, total; // the list's entries, and its keys (where !spill)
  bool spill;
  topk_bins bn;
  __device__ topk_srow(const uint32_t *rowbuf, uint32_t ph_, uint32_t len_, uint32_t rel0_, uint32_t *list_,
                       unsigned room_)
      : buf(rowbuf), ph(ph_), len(len_), rel0(rel0_), groups((ph_ + len_ + 3) / 4), list(list_), room(room_),
        total(0), spill(true), bn() {}
  // f(x, g0) on every round: x[u] the words of group g0 + u · threads + t
  // (g0 = round · U · threads); the same calls in every thread.
  // A word that is not the item's reads as 0xFFFFFFFF, a -NaN: below every
  // floor, and topk_ord_fast makes it 0, which changes no thread's top.
  // topk_stage wrote those words into the first and last groups, so the
  // passes test no bounds: the rounds in which every thread has all its
  // groups load without a test, and the last round fills a missing group
  // with such words.
  template <class F> __device__ __forceinline__ void each_round(F f) const {
    const uint4 *v = (const uint4 *)buf;
    uint32_t g0 = 0;
    for (; g0 + ROUND <= groups; g0 += ROUND) {
      uint4 x[U];
#pragma unroll
      for (unsigned u = 0; u < U; u++) x[u] = v[g0 + u * TOPK_THREADS + threadIdx.x];
      f(x, g0);
    }
    if (g0 < groups) {
      uint4 x[U];
#pragma unroll
      for (unsigned u = 0; u < U; u++) {
        uint32_t g = g0 + u * TOPK_THREADS + threadIdx.x;
        x[u] = g < groups ? v[g] : make_uint4(TOPK_FULL, TOPK_FULL, TOPK_FULL, TOPK_FULL);
      }
      f(x, g0);
    }
  }
  // f(x, j0) on every group, x its words, j0 the element of its first word
  // (it wraps below 0 in the first group)
  template <class F> __device__ __forceinline__ void each_group(F f) const {
    each_round([&](const uint4 (&x)[U], uint32_t g0) {
#pragma unroll
      for (unsigned u = 0; u < U; u++) f(x[u], 4 * (g0 + u * TOPK_THREADS + threadIdx.x) - ph);
    });
  }
  static __device__ __forceinline__ uint32_t word(const uint4 &x, unsigned q) {
    return q == 0 ? x.x : q == 1 ? x.y : q == 2 ? x.z : x.w;
  }
  __device__ __forceinline__ uint64_t key(uint32_t j) const { return key_of(j, buf[ph + j]); }
  __device__ __forceinline__ uint64_t key_of(uint32_t j, uint32_t b) const {
    return topk_key_bits(b, rel0 + j);
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
  // The histogram (the list made first where it fits). The mask's bits: each
  // round's RB enter at the top (bit 4u + q of the round: word q of its
  // group u), the earlier rounds' move down by RB; after R rounds round r's
  // key i is bit B = lo + RB · r + i, lo = 32 · TOPK_MASK_WORDS - RB · R, so
  // (B - lo) / 4 = U · r + u and the key's column is
  // 4 · ((B - lo) / 4 · threads + t) + B % 4 - ph.
  __device__ void hist(topk_ctl *c) {
    constexpr unsigned MW = TOPK_MASK_WORDS;
    unsigned t = threadIdx.x, lane = t & 31, rounds = (groups + ROUND - 1) / ROUND;
    bool fits = rounds * RB <= 32 * MW; // (the same in every thread)
    uint32_t m[MW];
#pragma unroll
    for (unsigned w = 0; w < MW; w++) m[w] = 0;
    if (fits) each_round([&](const uint4 (&x)[U], uint32_t) {
      uint32_t r = 0;
#pragma unroll
      for (unsigned u = 0; u < U; u++)
#pragma unroll
        for (unsigned q = 0; q < 4; q++) r |= (above(word(x[u], q)) ? 1u : 0u) << (4 * u + q);
#pragma unroll
      for (unsigned w = 0; w + 1 < MW; w++) m[w] = m[w] >> RB | m[w + 1] << (32 - RB);
      m[MW - 1] = m[MW - 1] >> RB | r << (32 - RB);
    });
    unsigned k = 0;
#pragma unroll
    for (unsigned w = 0; w < MW; w++) k += __popc(m[w]);
    unsigned incl = topk_warp_incl(k, lane);
    if (lane == 31) c->wcand[t >> 5] = incl;
    __syncthreads();
    unsigned wv = lane < TOPK_WARPS ? c->wcand[lane] : 0u, winc = topk_warp_incl(wv, lane);
    unsigned off = __shfl_sync(TOPK_FULL, winc - wv, t >> 5) + incl - k;
    total = __shfl_sync(TOPK_FULL, winc, TOPK_WARPS - 1);
    spill = !fits || total > room; // (the same in every thread)
    if (spill) {
      each_group([&](const uint4 &x, uint32_t) { // count them where they lie
        unsigned d[4];
        bool same = true;
#pragma unroll
        for (unsigned q = 0; q < 4; q++) d[q] = bin_of(x, q), same = same && d[q] == d[0];
        topk_hist_add<4>(c->hist, d, same, lane);
      });
      return;
    }
    // this thread's keys into list[off, off + k), word by word (the list's
    // order is free: the bins and the placing pass count, and the ranking
    // orders), each word's highest bit first; word w's bit 0 is B - lo =
    // RB · rounds - 32 · (MW - w) (the words below the rounds' are 0)
    uint32_t jt = 4 * t - ph, *dst = list + off;
#pragma unroll
    for (unsigned w = 0; w < MW; w++) {
      int bo = (int)(RB * rounds) - 32 * (int)(MW - w);
      for (uint32_t x = m[w]; x != 0;) {
        unsigned b = 31 - __clz((int)x), B = (unsigned)(bo + (int)b);
        x ^= 1u << b;
        *dst++ = (B >> 2) * (4 * TOPK_THREADS) + (B & 3) + jt;
      }
    }
    __syncthreads();
    each_entry([&](unsigned p, uint32_t j, uint32_t b) { // the bins, the list shared out evenly
      unsigned d = topk_bin(__uint_as_float(b), bn);
      list[p] = j | d << 16;
      atomicAdd(&c->hist[d], 1u);
    });
  }
  // f(p, e, b) for the list's entries p = t, t + threads, ... (< total), e
  // the entry (its column in the low 16 bits), b the column's word: in
  // batches of TOPK_CAND_BATCH, every load of a batch issued before f runs
  // on any
  template <class F> __device__ __forceinline__ void each_entry(F f) const {
    for (unsigned p0 = threadIdx.x; p0 < total; p0 += TOPK_CAND_BATCH * TOPK_THREADS) {
      uint32_t e[TOPK_CAND_BATCH], b[TOPK_CAND_BATCH];
#pragma unroll
      for (unsigned u = 0; u < TOPK_CAND_BATCH; u++) {
        unsigned p = p0 + u * TOPK_THREADS;
        e[u] = p < total ? list[p] : 0u;
      }
#pragma unroll
      for (unsigned u = 0; u < TOPK_CAND_BATCH; u++) b[u] = buf[ph + (e[u] & 0xFFFFu)];
#pragma unroll
      for (unsigned u = 0; u < TOPK_CAND_BATCH; u++)
        if (p0 + u * TOPK_THREADS < total) f(p0 + u * TOPK_THREADS, e[u], b[u]);
    }
  }
  __device__ void place(topk_ctl *c, unsigned bstar, uint64_t *dst, uint64_t *list) const {
    place_each(bstar, [&](unsigned d, uint64_t k) { topk_place_one(c, d, bstar, k, dst, list); });
  }
  // put(d, key) for every key of a bin d >= bstar
  template <class P> __device__ __forceinline__ void place_each(unsigned bstar, P put) const {
    if (!spill) { // the threads share the list out evenly
      each_entry([&](unsigned, uint32_t e, uint32_t b) {
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

// The ranking by counting reads whole 4-key steps: a key's count runs over
// its bin's entries widened to multiples of 4 (the entries before the bin's
// start are of higher bins: all above it, and counted; those past its end
// are of lower bins or the padding below: none above it). So no step is
// partial and a thread's four counts are independent (one count a key had
// been a chain of dependent adds, and a remainder loop a key). The padding:
// zero keys (below every key) from the end of b*'s keys in the list and of
// the winners above b* in win to the next multiple of 4. Written by one
// thread before the placing pass's barrier: the placing pass writes neither
// (list[0, cnt), win[0, above) only; cnt <= TOPK_RANK_MAX, where the staged
// list begins, and above < take <= win_cap, a multiple of 4).
static __device__ __forceinline__ void topk_rank_pad(const topk_cut &cut, uint64_t *win, uint64_t *list) {
  for (unsigned i = cut.cnt; i & 3u; i++) list[i] = 0;
  if (win)
    for (unsigned i = cut.above; i & 3u; i++) win[i] = 0;
}

// Key x's place among a[s, e), the run of its bin (a 16-byte aligned): s
// plus the keys of the run above x, counted over the run widened to whole
// 4-key steps (see topk_rank_pad).
static __device__ __forceinline__ unsigned topk_rank(const uint64_t *a, unsigned s, unsigned e, uint64_t x) {
  unsigned s4 = s & ~3u, r0 = 0, r1 = 0, r2 = 0, r3 = 0;
  for (unsigned i = s4; i < e; i += 4) {
    ulonglong2 u = *(const ulonglong2 *)(a + i), v = *(const ulonglong2 *)(a + i + 2);
    r0 += u.x > x ? 1u : 0u, r1 += u.y > x ? 1u : 0u, r2 += v.x > x ? 1u : 0u, r3 += v.y > x ? 1u : 0u;
  }
  return s4 + (r0 + r1) + (r2 + r3);
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
    if (t == 0) c->bstar = TOPK_BINS, c->maxb = 0;
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
  if (t == 0) topk_rank_pad(cut, MODE == TOPK_CHUNKS ? nullptr : win, list);
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
  topk_out o = MODE == TOPK_CHUNKS ? topk_out{} : topk_out_of(a, w); // rows, merge: the item is the row
  for (unsigned i = t; i < cut.cnt; i += TOPK_THREADS) { // b*'s winners: their place among its keys
    uint64_t x = list[i];
    unsigned r = topk_rank(list, 0, cut.cnt, x);
    if (r >= cut.need) continue;
    if (MODE == TOPK_CHUNKS) out[cut.above + r] = x;
    else if (rank_all) o.put(cut.above + r, x);
    else win[cut.above + r] = x;
  }
  if (MODE == TOPK_CHUNKS) return;
  if (!rank_all) {
    topk_sorted_out(a, topk_decode<MODE>(a, w), win);
    return;
  }
  for (unsigned p = t; p < cut.above; p += TOPK_THREADS) { // the bins above b*: a key's place in its bin
    uint64_t x = win[p];
    unsigned b = topk_bin_key(x, bn);
    o.put(topk_rank(win, c->beg[b], c->beg[b - 1], x), x);
  }
  for (unsigned j = take + t; j < (unsigned)a.k; j += TOPK_THREADS) o.none(j);
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

#endif
