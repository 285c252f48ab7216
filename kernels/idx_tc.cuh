// kernels/idx_tc.cuh: the tensor-core core of the indexer logits kernels
// (indexer.cu over gathered keys; indexer_decode.cu over the paged cache
// takes the head reduction and the swizzle from here, its products are its
// own): what a warpgroup does with a tile of 64 keys once the tile and the
// query heads are e4m3 in shared memory. Included by those files only; the
// instructions are mma.cuh's.
//
// The product is S = K · Q^T with the keys as the M side (64 a tile: warp w
// of the group holds keys 16w..16w+15) and the query heads as the N side
// (column c = query q's head h at c = q·HP + h, HP a power of two >= 8 (16
// for the decode kernel's mma.sync pairs of n8 tiles), the
// heads past `heads` zero rows): a thread then holds, for its two keys, a
// few heads of every query (the n8 tiles' columns 2t, 2t+1), so the head
// reduction sum_h w[h]·ReLU(S) is done in its registers and finished across
// the four threads of a quad by two rounds of shuffles (it_head_sums);
// nothing per head leaves the registers. K = 128 = one 128-byte row per key or head: both operands are
// K-major in wgmma's 128-byte swizzle (row r at r·128, 16-byte chunk c at
// chunk c ^ (r % 8), 1024-byte atoms of 8 rows), which also puts the 8 rows
// an ldmatrix reads in distinct banks.
//
// On sm_90a (CPLAB_HAVE_WGMMA) a tile of 256 columns is four wgmma
// m64n256k32 e4m3; elsewhere (sm_100, the CPU emulation) mma.sync m16n8k32
// over ldmatrix fragments fills the same registers, so all but the wgmma
// products runs in the emulation (on sm_90 mma.sync e4m3 is not hardware:
// mma.cuh). fp8 products are exact; the tensor cores add them in an
// order and with an internal precision of their own (Hopper's fp8 path
// keeps fewer bits than fp32: an H200 showed errors up to 5e-4 of the row's
// max |logit|, the emulation's double model 1e-7; tests/gpu/
// test_gpu_indexer.c states the bound, 2e-3). A key's logit is the same instruction sequence
// wherever the key sits, so identical keys still give identical logits.
#ifndef CPLAB_KERNELS_IDX_TC_CUH
#define CPLAB_KERNELS_IDX_TC_CUH

#include <cuda_runtime.h>

#include <math.h>

#include "cplab/kvformat.h"
#include "mma.cuh"

#define IT_TILE 64    // keys per tile (wgmma M)
#define IT_ROW 128    // bytes of a key's or a head's values (CPLAB_IDX_DIM e4m3)
#define IT_KSTEPS 4   // k32 steps over the 128 values
#define IT_WORDS 32   // 4-byte words of a row
#define IT_THREADS 128 // one warpgroup

static_assert(IT_ROW == CPLAB_IDX_DIM, "one 128-byte swizzle row per key");

// Byte offset of 16-byte chunk c of row r in a swizzled array.
static __device__ __forceinline__ int it_off(int r, int c) { return r * IT_ROW + ((c ^ (r & 7)) << 4); }

// Copy `rows` 128-byte rows into a swizzled array, 4 bytes a copy (the
// sources are 4-byte aligned only: indexer entries are 132 bytes apart).
// src(r) gives row r's source, NULL for a zero row; word(w) the source word
// that goes to word w of the row (the same word by default; the decode
// kernel reorders the k columns). Consecutive threads copy consecutive words
// of one row: a warp reads one row's 128 bytes.
static __device__ __forceinline__ int it_same_word(int w) { return w; }
template <class Src, class Word = int (*)(int)>
static __device__ __forceinline__ void it_copy_rows(unsigned char *dst, int rows, Src src, Word word = it_same_word) {
  for (int i = threadIdx.x; i < rows * IT_WORDS; i += blockDim.x) {
    int r = i / IT_WORDS, w = i % IT_WORDS;
    const unsigned char *s = src(r);
    cp_async_4(dst + it_off(r, w / 4) + 4 * (w % 4), s ? s + 4 * word(w) : dst, s != NULL);
  }
}

// acc[NT][4] = S for this warp's 16 keys of the tile and the 8·NT head
// columns: warp w's rows 16w.., tile j's columns 8j.. (mma_m16n8k16's D
// layout), on mma.sync m16n8k32 over ldmatrix fragments: every target.
template <int NT>
static __device__ __forceinline__ void it_products_mma(float (&acc)[NT][4], const unsigned char *keys,
                                                       const unsigned char *heads) {
  static_assert(NT % 2 == 0, "ldmatrix_x4 loads two n8 tiles of B");
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[j][e] = 0.0f;
  int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, i = lane / 8, r = lane % 8;
#pragma unroll
  for (int kk = 0; kk < IT_KSTEPS; kk++) {
    uint32_t a[4];
    int ar = 16 * w + r + 8 * (i % 2); // matrices: keys 0-7 / 8-15 of the warp x the step's two 16-byte halves
    ldmatrix_x4(a, keys + it_off(ar, 2 * kk + i / 2));
#pragma unroll
    for (int j = 0; j < NT; j += 2) {
      uint32_t b[4];
      int br = 8 * (j + i / 2) + r; // matrices: heads of tile j / j + 1 x the step's halves
      ldmatrix_x4(b, heads + it_off(br, 2 * kk + i % 2));
      mma_m16n8k32_e4m3(acc[j], a, b);
      mma_m16n8k32_e4m3(acc[j + 1], a, b + 2);
    }
  }
}

// The same for N = 256 columns, on wgmma m64n256k32 where the build has
// sm_90a (a warpgroup's accumulator is, warp by warp, the layout above).
static __device__ __forceinline__ void it_products_256(float (&acc)[32][4], const unsigned char *keys,
                                                       const unsigned char *heads) {
#ifdef CPLAB_HAVE_WGMMA
#pragma unroll
  for (int j = 0; j < 32; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[j][e] = 0.0f;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < IT_KSTEPS; kk++)
    wgmma_m64n256k32_e4m3(acc, wgmma_desc(keys + 32 * kk, 16, 1024), wgmma_desc(heads + 32 * kk, 16, 1024));
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int j = 0; j < 32; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) wgmma_fence_operand(acc[j][e]);
#else
  it_products_mma<32>(acc, keys, heads);
#endif
}

// The head reduction of one tile. A thread's partial sums first: v[2q + e]
// = sum over its columns of query q of w[c]·ReLU(S[key e][c]), key e = 0 / 1
// its keys 16w + g and 16w + g + 8, columns ascending (w: the HP-padded
// weights, shared memory). Then the quad's four partials of each value are
// added by a transposing exchange: at xor 1 a thread keeps half of its
// values and sends the other half, at xor 2 half of that, so every value is
// complete in exactly one thread after 1.5·Q shuffles (not 4·Q): out[i] is
// value it_value(t, i) of the Q·2 (Q = 1: see it_owner). Each value's sum is the same additions
// in the same roles whichever key it is, so identical keys stay identical.
// One query (Q = 1): both values are complete in the two threads t and
// t ^ 2 after the second exchange; the thread with t < 2 owns value t.
template <int Q> static __device__ __forceinline__ int it_value(int t, int i) {
  return Q == 1 ? (t & 1) : (t & 1) * Q + ((t >> 1) & 1) * (Q / 2) + i;
}
template <int Q> static __device__ __forceinline__ bool it_owner(int t) { return Q > 1 || t < 2; }

// Values a thread owns after the exchange.
template <int NT, int HP> struct it_sums {
  static constexpr int Q = NT * 8 / HP, N = Q > 1 ? Q / 2 : 1;
};

// The weights of this thread's head columns, w[8j + 2t], w[8j + 2t + 1] (t = lane % 4) as wv[j]: what
// it_head_sums reads; a loop over tiles may load them once.
template <int NT> static __device__ __forceinline__ void it_head_weights(const float *w, float2 (&wv)[NT]) {
#pragma unroll
  for (int j = 0; j < NT; j++) wv[j] = *(const float2 *)(w + 8 * j + 2 * (threadIdx.x % 4));
}

template <int NT, int HP>
static __device__ __forceinline__ void it_head_sums_w(const float (&acc)[NT][4], const float2 (&wvs)[NT],
                                                      float (&out)[it_sums<NT, HP>::N]) {
  constexpr int Q = NT * 8 / HP, TPQ = HP / 8; // queries, n8 tiles a query
  static_assert(Q >= 1 && NT * 8 % HP == 0, "whole queries");
  int t = threadIdx.x % 4;
  float v[2 * Q];
#pragma unroll
  for (int q = 0; q < Q; q++) {
    float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
    for (int jj = 0; jj < TPQ; jj++) {
      int j = q * TPQ + jj;
      float2 wv = wvs[j];
      s0 = fmaf(wv.x, fmaxf(acc[j][0], 0.0f), s0);
      s0 = fmaf(wv.y, fmaxf(acc[j][1], 0.0f), s0);
      s1 = fmaf(wv.x, fmaxf(acc[j][2], 0.0f), s1);
      s1 = fmaf(wv.y, fmaxf(acc[j][3], 0.0f), s1);
    }
    v[2 * q] = s0, v[2 * q + 1] = s1;
  }
  float u[Q];
  bool hi1 = t & 1, hi2 = t & 2;
#pragma unroll
  for (int i = 0; i < Q; i++) {
    float keep = hi1 ? v[Q + i] : v[i], send = hi1 ? v[i] : v[Q + i];
    u[i] = keep + __shfl_xor_sync(0xFFFFFFFFu, send, 1);
  }
  if constexpr (Q == 1) {
    out[0] = u[0] + __shfl_xor_sync(0xFFFFFFFFu, u[0], 2);
  } else {
#pragma unroll
    for (int i = 0; i < Q / 2; i++) {
      float keep = hi2 ? u[Q / 2 + i] : u[i], send = hi2 ? u[i] : u[Q / 2 + i];
      out[i] = keep + __shfl_xor_sync(0xFFFFFFFFu, send, 2);
    }
  }
}

template <int NT, int HP>
static __device__ __forceinline__ void it_head_sums(const float (&acc)[NT][4], const float *w,
                                                    float (&out)[it_sums<NT, HP>::N]) {
  float2 wv[NT];
  it_head_weights<NT>(w, wv);
  it_head_sums_w<NT, HP>(acc, wv, out);
}

#endif
