// Per-row top-k (reference §6.3) by exact radix select, then a bitonic sort
// of the k winners. Contract in cplab_kernels.h.
//
// Each candidate is one 64-bit key: the high word is the logit's bits made
// order-preserving as an unsigned integer, the low word 0xFFFFFFFF - index.
// Keys are distinct (indices are), and "larger key" is exactly "higher logit,
// then lower index": sim_indexer_topk's order. Selecting the k largest keys
// therefore needs no tie handling: an MSB-first radix select (8 bits per
// pass, one shared histogram) finds the k-th largest key T, and the winners
// are exactly the keys >= T. It stops early when the digit's bin holds
// exactly the keys still needed.
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab_kernels.h"

#define TOPK_THREADS 1024
#define TOPK_BINS 256

// Order-preserving map of float bits to unsigned (-0 is first made +0, so
// that equal logits compare equal and fall to the index rule).
static __device__ __forceinline__ uint32_t topk_ord(float f) {
  uint32_t b = f == 0.0f ? 0u : __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

static __device__ __forceinline__ float topk_unord(uint32_t o) {
  return __uint_as_float((o & 0x80000000u) ? (o & 0x7FFFFFFFu) : ~o);
}

static __device__ __forceinline__ uint64_t topk_key(float f, uint32_t rel) {
  return ((uint64_t)topk_ord(f) << 32) | (uint64_t)(0xFFFFFFFFu - rel);
}

struct topk_state {
  unsigned hist[TOPK_BINS];
  uint64_t prefix, mask; // the digits chosen so far, and where they are
  unsigned need;         // keys still to take among those matching prefix
  int done;
  unsigned count;
};

// One radix pass over the digit at `shift`: histogram of the keys that match
// the prefix, then (thread 0) the bin holding the need-th largest.
static __device__ void topk_pass(const float *row, int64_t lo, int64_t hi, int64_t base, int shift, topk_state *st) {
  for (int b = threadIdx.x; b < TOPK_BINS; b += blockDim.x) st->hist[b] = 0;
  __syncthreads();
  uint64_t prefix = st->prefix, mask = st->mask;
  for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    uint64_t key = topk_key(row[i], (uint32_t)(i - base));
    if ((key & mask) == prefix) atomicAdd(&st->hist[(key >> shift) & (TOPK_BINS - 1)], 1u);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned above = 0;
    int b = TOPK_BINS - 1;
    while (above + st->hist[b] < st->need) above += st->hist[b--]; // need <= keys matching: b stays >= 0
    st->need -= above;
    st->prefix |= (uint64_t)b << shift;
    st->mask |= (uint64_t)(TOPK_BINS - 1) << shift;
    st->done = st->hist[b] == st->need; // every key in this bin is a winner
  }
  __syncthreads();
}

// In-place bitonic sort of buf[0 .. P), P a power of two, descending.
static __device__ void topk_sort_desc(uint64_t *buf, int P) {
  for (int size = 2; size <= P; size <<= 1)
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < P / 2; t += blockDim.x) {
        int i = 2 * stride * (t / stride) + t % stride, j = i + stride;
        bool desc = (i & size) == 0;
        uint64_t a = buf[i], b = buf[j];
        if (desc ? a < b : a > b) {
          buf[i] = b;
          buf[j] = a;
        }
      }
      __syncthreads();
    }
}

__global__ void __launch_bounds__(TOPK_THREADS)
    topk_kernel(const float *logits, int64_t n, const int32_t *ks, const int32_t *ke, int k, int32_t *idx,
                float *score) {
  __shared__ uint64_t buf[CPLAB_TOPK_MAX];
  __shared__ topk_state st;
  int64_t r = blockIdx.x;
  const float *row = logits + r * n;
  int64_t base = ks[r];
  int64_t lo = min(max(base, (int64_t)0), n), hi = min(max((int64_t)ke[r], lo), n);
  int64_t avail = hi - lo;
  int take = (int)min(avail, (int64_t)k);
  if (threadIdx.x == 0) {
    st.prefix = 0;
    st.mask = 0;
    st.need = (unsigned)take;
    st.done = avail <= k; // everything in range is a winner: T = 0 (every key is > 0)
    st.count = 0;
  }
  __syncthreads();
  for (int shift = 56; shift >= 0 && !st.done; shift -= 8) topk_pass(row, lo, hi, base, shift, &st);
  uint64_t T = st.prefix; // the winners are the keys >= T: exactly `take` of them
  for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    uint64_t key = topk_key(row[i], (uint32_t)(i - base));
    if (key >= T) buf[atomicAdd(&st.count, 1u)] = key;
  }
  int P = 1;
  while (P < take) P <<= 1;
  __syncthreads();
  for (int i = take + threadIdx.x; i < P; i += blockDim.x) buf[i] = 0; // below every real key
  __syncthreads();
  topk_sort_desc(buf, P);
  for (int j = threadIdx.x; j < k; j += blockDim.x) {
    bool real = j < take;
    uint64_t key = real ? buf[j] : 0;
    idx[r * k + j] = real ? (int32_t)(0xFFFFFFFFu - (uint32_t)key) : -1;
    if (score) score[r * k + j] = real ? topk_unord((uint32_t)(key >> 32)) : -INFINITY;
  }
}

extern "C" int cplab_topk(const float *logits, int64_t m, int64_t n, const int32_t *ks, const int32_t *ke, int k,
                          int32_t *idx, float *score, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, m >= 0 && n >= 0, "cplab_topk: negative size (m %lld, n %lld)", (long long)m, (long long)n);
  KCHECK_ARG(d, k >= 1 && k <= CPLAB_TOPK_MAX, "cplab_topk: k must be 1..%d, got %d", CPLAB_TOPK_MAX, k);
  KCHECK_ARG(d, n <= INT32_MAX, "cplab_topk: %lld columns exceed int32 indices", (long long)n);
  if (m == 0) return 0;
  KCHECK_ARG(d, (logits || n == 0) && ks && ke && idx, "cplab_topk: NULL argument");
  KCHECK_ARG(d, m <= KGRID_MAX_X, "cplab_topk: %lld rows too many", (long long)m);
  topk_kernel<<<(unsigned)m, TOPK_THREADS, 0, kstream(stream)>>>(logits, n, ks, ke, k, idx, score);
  return kcheck_launch(d, "topk_kernel");
}

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
// One block per (row, owner) ranks that owner's candidates: the lists a
// block searches are a few KiB, so the searches hit L1, and positions fit
// 32 bits (the outputs are int32), which keeps the divisions by the
// interleave cheap. Both matter at decode sizes, where a row is one block's
// work and the step waits for it.

#define MERGE_THREADS 256

// The position of owner o's local index l (kv.h's cplab_kv_position).
static __device__ __forceinline__ uint32_t merge_position(uint32_t l, uint32_t o, uint32_t interleave, uint32_t D) {
  return (l / interleave) * interleave * D + o * interleave + l % interleave;
}

// Valid entries of owner o's list (idx, score: k each) that rank above `key`.
static __device__ int merge_above(const int32_t *idx, const float *score, uint32_t o, int k, uint32_t interleave,
                                  uint32_t D, uint64_t key) {
  int lo = 0, hi = k; // entries [0, lo) are above key, [hi, k) are not
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    int32_t l = idx[mid];
    bool above = l >= 0 && topk_key(score[mid], merge_position((uint32_t)l, o, interleave, D)) > key;
    if (above) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Valid entries of a list: the -1 entries trail.
static __device__ int merge_valid(const int32_t *idx, int k) {
  int lo = 0, hi = k;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (idx[mid] >= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

__global__ void __launch_bounds__(MERGE_THREADS)
    topk_merge_kernel(const int32_t *cand_idx, const float *cand_score, int D, int64_t m, int k, int interleave,
                      int32_t *idx, float *score) {
  int64_t r = blockIdx.x;
  uint32_t o = blockIdx.y, I = (uint32_t)interleave, DD = (uint32_t)D;
  const int32_t *li = cand_idx + ((int64_t)o * m + r) * k;
  const float *ls = cand_score + ((int64_t)o * m + r) * k;
  if (o == 0) { // one block of the row pads: places from the valid total on are never ranked
    __shared__ int total;
    if (threadIdx.x == 0) {
      int n = 0;
      for (int p = 0; p < D; p++) n += merge_valid(cand_idx + ((int64_t)p * m + r) * k, k);
      total = n;
    }
    __syncthreads();
    for (int j = total + threadIdx.x; j < k; j += blockDim.x) {
      idx[r * k + j] = -1;
      if (score) score[r * k + j] = -INFINITY;
    }
  }
  for (int j = threadIdx.x; j < k; j += blockDim.x) {
    int32_t l = li[j];
    if (l < 0) break; // the rest of this thread's entries are -1 too
    uint32_t pos = merge_position((uint32_t)l, o, I, DD);
    uint64_t key = topk_key(ls[j], pos);
    int place = j;
    for (int p = 0; p < D && place < k; p++)
      if ((uint32_t)p != o)
        place += merge_above(cand_idx + ((int64_t)p * m + r) * k, cand_score + ((int64_t)p * m + r) * k, (uint32_t)p, k,
                             I, DD, key);
    if (place < k) {
      idx[r * k + place] = (int32_t)pos;
      if (score) score[r * k + place] = ls[j];
    }
  }
}

extern "C" int cplab_topk_merge(const int32_t *cand_idx, const float *cand_score, int D, int64_t m, int k,
                                int interleave, int32_t *idx, float *score, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, m >= 0, "cplab_topk_merge: negative rows (%lld)", (long long)m);
  KCHECK_ARG(d, D >= 1 && D <= 65535 && interleave >= 1, "cplab_topk_merge: owners %d (1..65535) and interleave %d "
             "(>= 1)", D, interleave);
  KCHECK_ARG(d, k >= 1 && k <= CPLAB_TOPK_MAX, "cplab_topk_merge: k must be 1..%d, got %d", CPLAB_TOPK_MAX, k);
  if (m == 0) return 0;
  KCHECK_ARG(d, cand_idx && cand_score && idx, "cplab_topk_merge: NULL argument");
  KCHECK_ARG(d, m <= KGRID_MAX_X, "cplab_topk_merge: %lld rows too many", (long long)m);
  dim3 grid((unsigned)m, (unsigned)D);
  topk_merge_kernel<<<grid, MERGE_THREADS, 0, kstream(stream)>>>(cand_idx, cand_score, D, m, k, interleave, idx, score);
  return kcheck_launch(d, "topk_merge_kernel");
}
