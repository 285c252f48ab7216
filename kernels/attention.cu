// Sparse MLA decode attention over the fp8 cache, on CUDA cores. Contract in
// cplab_kernels.h (cplab_sparse_mla_decode). Prefill runs on tensor cores
// (attention_prefill.cu); this kernel awaits its tensor-core successor.
//
// A block takes one query row and a group of HG heads, and walks the row's
// valid indices in tiles of ATT_TK = 32 (one per lane) with an online
// softmax in fp32:
//   1. the tile's indices -> shared: the next 32 valid entries of the row's
//      list, in list order (the last tile padded with -1). The block scans
//      the list 256 entries at a time into a queue in shared memory, so a
//      row whose entries are mostly -1 (a DCP rank's decode rows: other
//      ranks' tokens) costs tiles for its own entries only;
//   2. the 32 rows -> shared as bf16 (invalid rows zero, so 0 · v stays 0);
//   3. scores: the 576 columns are cut in 8 chunks of 36 words, warp w owns
//      chunk w, lane j row j: the lane's partial dot products of its row
//      with every head's q over the chunk (rows padded to 289 words: lanes
//      hit distinct banks; q is one address: broadcast) -> shared; then the
//      warp of head h sums the 8 partials in chunk order, and a warp max
//      and sum update (m, l) and leave p and the correction factor in
//      shared memory;
//   4. output: thread t owns columns 2t, 2t+1 of all the group's heads and
//      accumulates p · v over the tile's rows.
// Every head's arithmetic is the same whatever the group size HG (its
// partials, their sum, its softmax and its accumulation do not depend on
// the other heads), so the launch picks HG from the grid: 16 heads a block
// when there are rows enough to fill the GPU, down to 2 for a decode step of
// one row, where 16 would leave all but a few SMs idle. A row gives the same
// bits batched or alone, on any GPU.
// Rows are dequantised by the loader with the gather's own function
// (kf_dequant4_bf16), so the rows this kernel sees are bit for bit the rows
// cplab_gather_mla writes into a prefill workspace.
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "kformat.cuh"

#define ATT_HG 16                            // most heads per block
#define ATT_TK 32                            // indices per tile: one per lane
#define ATT_WARPS 8                          // one column chunk each; a warp keeps heads w and w + 8
#define ATT_THREADS (32 * ATT_WARPS)         // 2 output columns per thread
#define ATT_QW (CPLAB_MLA_ROW_DIM / 2)       // 288 words (bf16 pairs) per row
#define ATT_CW (ATT_QW / ATT_WARPS)          // 36 words per column chunk
#define ATT_KW (ATT_QW + 1)                  // padded row stride in shared memory
#define ATT_VW (CPLAB_MLA_NOPE_DIM / 2)      // 256 value words: one per thread
#define ATT_MIN_BLOCKS 256                   // a grid this large keeps an H200's 132 SMs busy

struct att_smem {
  uint32_t q[ATT_HG * ATT_QW];
  uint32_t kv[ATT_TK * ATT_KW];
  float part[ATT_WARPS * ATT_HG * ATT_TK]; // [chunk][head][row] partial dot products
  float p[ATT_HG * ATT_TK];
  float corr[ATT_HG];
  float m[ATT_HG], l[ATT_HG];
  int64_t idx[ATT_TK];
  int64_t queue[ATT_THREADS + ATT_TK]; // valid entries not yet in a tile: < 32 before a scan adds <= 256
  int warp_valid[ATT_WARPS];            // a scan's valid entries per warp
  int queued;                           // entries in the queue
};

// The loaders move a tile's 32 rows into shared memory in 16-byte chunks,
// a fixed number per thread, F at a time: a thread issues F global loads
// before it stores any. With few blocks (decode), the tile loop is
// latency-bound and F is all of a thread's chunks, so a tile waits for one
// memory latency, not one per chunk; with many blocks (large batches), other
// blocks hide the latency and F = 1 keeps the registers for the head
// group's accumulators.
struct att_chunk {
  uint4 v;
  float scale; // the chunk's dequantisation scale (decode latent chunks)
};

template <typename Loader, int F>
static __device__ void att_load_tile(const Loader &loader, att_smem *s) {
  static_assert(Loader::per_thread % F == 0, "whole groups of loads per thread");
#pragma unroll 1
  for (int u0 = 0; u0 < Loader::per_thread; u0 += F) {
    att_chunk v[F];
#pragma unroll
    for (int u = 0; u < F; u++) v[u] = loader.fetch(s, threadIdx.x + (u0 + u) * ATT_THREADS);
#pragma unroll
    for (int u = 0; u < F; u++) loader.put(s, threadIdx.x + (u0 + u) * ATT_THREADS, v[u]);
  }
}

// Decode rows: 656-byte entries, 32 chunks of 16 e4m3 latent values
// (dequantised with their tile's scale, 8 words each) and 8 chunks of RoPE
// bf16 (copied) per row.
struct cache_loader {
  static constexpr int nope_chunks = CPLAB_MLA_NOPE_DIM / 16, items = nope_chunks + CPLAB_MLA_ROPE_DIM * 2 / 16;
  static constexpr int per_thread = ATT_TK * items / ATT_THREADS, chunks_per_scale = nope_chunks / CPLAB_MLA_TILES;
  static_assert(ATT_TK * items % ATT_THREADS == 0, "whole chunks per thread");
  const uint8_t *cache;
  int64_t slots;
  __device__ bool valid(int64_t i) const { return i >= 0 && i < slots; }
  // Chunk c of the tile: item c % items of row c / items.
  __device__ att_chunk fetch(const att_smem *s, int c) const {
    int64_t i = s->idx[c / items];
    int w = c % items;
    att_chunk x = {make_uint4(0, 0, 0, 0), 0.0f};
    if (i >= 0) {
      const uint8_t *entry = cache + i * CPLAB_MLA_ENTRY_BYTES;
      if (w < nope_chunks) {
        x.v = ((const uint4 *)(entry + CPLAB_MLA_NOPE_OFFSET))[w];
        x.scale = ((const float *)(entry + CPLAB_MLA_SCALE_OFFSET))[w / chunks_per_scale];
      } else {
        x.v = ((const uint4 *)(entry + CPLAB_MLA_ROPE_OFFSET))[w - nope_chunks];
      }
    }
    return x;
  }
  __device__ void put(att_smem *s, int c, att_chunk x) const {
    int j = c / items, w = c % items;
    uint32_t *row = s->kv + j * ATT_KW;
    if (w < nope_chunks) { // invalid rows get zeros, whatever a scale would make of them
      uint32_t word[4] = {x.v.x, x.v.y, x.v.z, x.v.w};
      bool live = s->idx[j] >= 0;
#pragma unroll
      for (int q = 0; q < 4; q++) {
        uint2 b = live ? kf_dequant4_bf16(word[q], x.scale) : make_uint2(0, 0);
        row[8 * w + 2 * q] = b.x;
        row[8 * w + 2 * q + 1] = b.y;
      }
    } else {
      uint32_t *dst = row + ATT_VW + 4 * (w - nope_chunks);
      dst[0] = x.v.x;
      dst[1] = x.v.y;
      dst[2] = x.v.z;
      dst[3] = x.v.w;
    }
  }
};

static __device__ __forceinline__ float att_lo(uint32_t w) { return kf_bf16_to_f32(w & 0xFFFFu); }
static __device__ __forceinline__ float att_hi(uint32_t w) { return kf_bf16_to_f32(w >> 16); }

static __device__ __forceinline__ float att_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}

static __device__ __forceinline__ float att_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

// Running softmax state of one head, replicated in the lanes of its warp.
struct att_head {
  float m, l;
};

// Fold the tile's scores s (lane = row; -inf for invalid rows) into head h's
// state; leave p and the correction factor in shared memory.
static __device__ void att_softmax(att_smem *s, int h, float score, att_head *st) {
  int lane = threadIdx.x % 32;
  float m_new = fmaxf(st->m, att_warp_max(score));
  float corr = 1.0f, p = 0.0f;
  if (m_new != -INFINITY) { // else nothing valid yet: keep the zero state
    corr = expf(st->m - m_new); // 0 when st->m is -inf
    p = expf(score - m_new);    // 0 for invalid rows
  }
  st->l = st->l * corr + att_warp_sum(p);
  st->m = m_new;
  s->p[h * ATT_TK + lane] = p;
  if (lane == 0) s->corr[h] = corr;
}

// Step 3a for warp w, lane j: row j's partial dot products with each head's
// q over column chunk w.
template <int HG>
static __device__ void att_partials(att_smem *s) {
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const uint32_t *k = s->kv + lane * ATT_KW + w * ATT_CW, *q = s->q + w * ATT_CW;
  float acc[HG];
#pragma unroll
  for (int h = 0; h < HG; h++) acc[h] = 0.0f;
#pragma unroll 4
  for (int c = 0; c < ATT_CW; c++) {
    uint32_t kw = k[c];
    float k0 = att_lo(kw), k1 = att_hi(kw);
#pragma unroll
    for (int h = 0; h < HG; h++) {
      uint32_t qw = q[h * ATT_QW + c];
      acc[h] = fmaf(att_lo(qw), k0, acc[h]);
      acc[h] = fmaf(att_hi(qw), k1, acc[h]);
    }
  }
#pragma unroll
  for (int h = 0; h < HG; h++) s->part[(w * ATT_HG + h) * ATT_TK + lane] = acc[h];
}

// Step 3b for head h (its warp): row `lane`'s score, the chunks summed in order.
static __device__ void att_score(att_smem *s, int h, float scale, att_head *st) {
  int lane = threadIdx.x % 32;
  float dot = s->part[h * ATT_TK + lane];
#pragma unroll
  for (int w = 1; w < ATT_WARPS; w++) dot += s->part[(w * ATT_HG + h) * ATT_TK + lane];
  att_softmax(s, h, s->idx[lane] >= 0 ? scale * dot : -INFINITY, st);
}

// Step 4 for thread t: columns 2t, 2t+1 of every head of the group.
template <int HG>
static __device__ void att_accumulate(const att_smem *s, float acc[HG][2]) {
  int t = threadIdx.x;
#pragma unroll
  for (int h = 0; h < HG; h++) {
    acc[h][0] *= s->corr[h];
    acc[h][1] *= s->corr[h];
  }
  for (int j = 0; j < ATT_TK; j++) {
    uint32_t vw = s->kv[j * ATT_KW + t];
    float v0 = att_lo(vw), v1 = att_hi(vw);
#pragma unroll
    for (int h = 0; h < HG; h++) {
      float p = s->p[h * ATT_TK + j];
      acc[h][0] = fmaf(p, v0, acc[h][0]);
      acc[h][1] = fmaf(p, v1, acc[h][1]);
    }
  }
}

static __device__ void att_load_q(att_smem *s, const uint16_t *q, int64_t row, int heads, int h0, int nh, int hg) {
  const uint32_t *src = (const uint32_t *)(q + (row * heads + h0) * CPLAB_MLA_ROW_DIM);
  for (int i = threadIdx.x; i < hg * ATT_QW; i += blockDim.x) s->q[i] = i / ATT_QW < nh ? src[i] : 0u;
}

// Final normalisation: out = acc / l, lse = m + log(l); l == 0 (no valid
// index): out 0, lse -inf.
template <int HG>
static __device__ void att_store(const att_smem *s, float acc[HG][2], int64_t row, int heads, int h0, int nh,
                                 float *out, float *lse) {
  int t = threadIdx.x;
#pragma unroll
  for (int h = 0; h < HG; h++) {
    if (h >= nh) break;
    float l = s->l[h];
    float2 o = l > 0.0f ? make_float2(acc[h][0] / l, acc[h][1] / l) : make_float2(0.0f, 0.0f);
    ((float2 *)(out + (row * heads + h0 + h) * CPLAB_MLA_NOPE_DIM))[t] = o;
  }
  if (t < nh) lse[row * heads + h0 + t] = s->l[t] > 0.0f ? s->m[t] + logf(s->l[t]) : -INFINITY;
}

// Step 1's scan: append the valid entries among list[pos .. pos + 256) to
// the queue, in list order (a ballot and a prefix over the warps).
template <typename Loader>
static __device__ void att_scan(att_smem *s, const Loader &loader, const int32_t *list, int k, int pos) {
  int e = pos + (int)threadIdx.x, lane = threadIdx.x % 32, w = threadIdx.x / 32;
  int64_t i = e < k ? (int64_t)list[e] : -1;
  bool valid = loader.valid(i);
  unsigned ballot = __ballot_sync(0xFFFFFFFFu, valid);
  if (lane == 0) s->warp_valid[w] = __popc(ballot);
  int base = s->queued;
  __syncthreads();
  int at = base + __popc(ballot & ((1u << lane) - 1u)), total = 0;
  for (int v = 0; v < ATT_WARPS; v++) {
    if (v < w) at += s->warp_valid[v];
    total += s->warp_valid[v];
  }
  if (valid) s->queue[at] = i;
  __syncthreads(); // every thread has read the counts and the old length
  if (threadIdx.x == 0) s->queued = base + total;
  __syncthreads();
}

// After a tile of n entries: the queue's remaining entries move to its front.
static __device__ void att_dequeue(att_smem *s, int n) {
  int rest = s->queued - n;
  int64_t v = (int)threadIdx.x < rest ? s->queue[n + threadIdx.x] : 0;
  __syncthreads();
  if ((int)threadIdx.x < rest) s->queue[threadIdx.x] = v;
  if (threadIdx.x == 0) s->queued = rest;
  __syncthreads();
}

template <typename Loader, int HG>
__global__ void __launch_bounds__(ATT_THREADS)
    att_kernel(const uint16_t *q, int heads, Loader loader, const int32_t *idx, int k, float scale, float *out,
               float *lse) {
  extern __shared__ uint4 att_raw[];
  att_smem *s = (att_smem *)att_raw;
  int64_t row = blockIdx.x;
  int h0 = blockIdx.y * HG, nh = min(HG, heads - h0), w = threadIdx.x / 32;
  att_load_q(s, q, row, heads, h0, nh, HG);
  att_head a = {-INFINITY, 0.0f}, b = {-INFINITY, 0.0f}; // heads w and w + ATT_WARPS
  float acc[HG][2];
#pragma unroll
  for (int h = 0; h < HG; h++) acc[h][0] = acc[h][1] = 0.0f;
  const int32_t *list = idx + row * k;
  int pos = 0; // the next entry of the list to scan (the same in every thread)
  if (threadIdx.x == 0) s->queued = 0;
  __syncthreads(); // q is loaded, the queue empty
  for (;;) {
    for (; s->queued < ATT_TK && pos < k; pos += ATT_THREADS) att_scan(s, loader, list, k, pos);
    int n = min(s->queued, ATT_TK);
    if (n == 0) break;
    if (threadIdx.x < ATT_TK) s->idx[threadIdx.x] = (int)threadIdx.x < n ? s->queue[threadIdx.x] : -1;
    __syncthreads();
    att_load_tile<Loader, HG == ATT_HG ? 1 : Loader::per_thread>(loader, s);
    __syncthreads();
    att_partials<HG>(s);
    __syncthreads();
    if (w < HG) att_score(s, w, scale, &a);
    if (w + ATT_WARPS < HG) att_score(s, w + ATT_WARPS, scale, &b);
    __syncthreads();
    att_accumulate<HG>(s, acc);
    att_dequeue(s, n);
  }
  if (threadIdx.x % 32 == 0) {
    if (w < HG) s->m[w] = a.m, s->l[w] = a.l;
    if (w + ATT_WARPS < HG) s->m[w + ATT_WARPS] = b.m, s->l[w + ATT_WARPS] = b.l;
  }
  __syncthreads();
  att_store<HG>(s, acc, row, heads, h0, nh, out, lse);
}

template <typename Loader, int HG>
static int att_launch_hg(const uint16_t *q, int64_t m, int heads, Loader loader, const int32_t *idx, int k,
                         float scale, float *out, float *lse, void *stream, cplab_diag *d, const char *name) {
  KCHECK_ARG(d, (heads + HG - 1) / HG <= 65535, "%s: %d heads exceed the grid", name, heads);
  size_t smem = sizeof(att_smem);
  int rc = kset_smem(d, att_kernel<Loader, HG>, smem, name);
  if (rc) return rc;
  dim3 grid((unsigned)m, (unsigned)((heads + HG - 1) / HG));
  att_kernel<Loader, HG><<<grid, ATT_THREADS, smem, kstream(stream)>>>(q, heads, loader, idx, k, scale, out, lse);
  return kcheck_launch(d, name);
}

// The largest head group that still gives ATT_MIN_BLOCKS blocks (2 when
// none does): the group size changes no bit of the result (see the top).
static int att_group(int64_t m, int heads) {
  int hg = ATT_HG;
  while (hg > 2 && m * ((heads + hg - 1) / hg) < ATT_MIN_BLOCKS) hg /= 2;
  return hg;
}

template <typename Loader>
static int att_launch(const uint16_t *q, int64_t m, int heads, Loader loader, const int32_t *idx, int k, float scale,
                      float *out, float *lse, void *stream, cplab_diag *d, const char *name) {
  KCHECK_ARG(d, m >= 0 && heads >= 0 && k >= 0, "%s: negative size (m %lld, heads %d, k %d)", name, (long long)m,
             heads, k);
  if (m == 0 || heads == 0) return 0;
  KCHECK_ARG(d, q && out && lse && (idx || k == 0), "%s: NULL argument", name);
  KCHECK_ARG(d, kaligned(q, 4) && kaligned(out, 8), "%s: q must be 4-byte and out 8-byte aligned", name);
  KCHECK_ARG(d, m <= KGRID_MAX_X, "%s: %lld rows exceed the grid", name, (long long)m);
  switch (att_group(m, heads)) {
    case 16: return att_launch_hg<Loader, 16>(q, m, heads, loader, idx, k, scale, out, lse, stream, d, name);
    case 8: return att_launch_hg<Loader, 8>(q, m, heads, loader, idx, k, scale, out, lse, stream, d, name);
    case 4: return att_launch_hg<Loader, 4>(q, m, heads, loader, idx, k, scale, out, lse, stream, d, name);
    default: return att_launch_hg<Loader, 2>(q, m, heads, loader, idx, k, scale, out, lse, stream, d, name);
  }
}

extern "C" int cplab_sparse_mla_decode(const uint16_t *q, int64_t m, int heads, const uint8_t *kv_cache,
                                       int64_t num_slots, const int32_t *slot, int k, float scale, float *out,
                                       float *lse, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, num_slots >= 0 && (kv_cache || num_slots == 0), "cplab_sparse_mla_decode: bad cache (%lld slots)",
             (long long)num_slots);
  KCHECK_ARG(d, kaligned(kv_cache, 16), "cplab_sparse_mla_decode: kv_cache must be 16-byte aligned");
  cache_loader loader = {kv_cache, num_slots};
  return att_launch(q, m, heads, loader, slot, k, scale, out, lse, stream, d, "cplab_sparse_mla_decode");
}
