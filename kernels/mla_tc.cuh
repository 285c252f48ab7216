// kernels/mla_tc.cuh: the tensor-core core of the sparse MLA attention
// kernels (attention_prefill.cu over the bf16 workspace, attention_decode.cu
// over the fp8 cache): what one block does with a tile of 64 entries once
// the tile's rows are bf16 in shared memory. Included by those two files
// only; the instructions are mma.cuh's.
//
// A block takes one query row and 64 of its heads (a head past `heads` is a
// zero row of Q that is never stored: production pads heads to 64 the same
// way). Two warpgroups of four warps; warp q of group g holds heads
// 16q..16q+15:
//   S = Q · K^T   its heads x entries 32g..32g+31 of the tile, over the 576
//                 columns;
//   softmax       online, in the exp2 domain (scores · scale · log2 e): the
//                 two groups exchange row maxima and sums through shared
//                 memory; P (bf16) goes to shared memory;
//   O += P · V    its heads x value columns 256g..256g+255 (V = the
//                 entries' first 512 columns): 128 fp32 accumulators a
//                 thread.
// The products run on wgmma where the build has sm_90a (CPLAB_HAVE_WGMMA:
// one m64n32k16 per k-step for S, one m64n256k16 per 16 entries for P·V,
// operands read from shared memory), else on mma.sync m16n8k16 with
// ldmatrix (sm_100 and the CPU emulation): the same fragments in the same
// threads, so everything but the products is the code the emulation runs.
// Shared memory holds Q, the tile and P in wgmma's 128-byte-swizzled
// layout: column block j (64 bf16 = 128 bytes) of every row together, row r
// of a block at r · 128 bytes, its 16-byte chunk c at chunk c ^ (r % 8). The
// same tile is K-major for S (K's rows along N) and MN-major for P·V (value
// columns along N), and the 8 rows an ldmatrix reads fall in distinct banks.
// Each (row, head) result depends on that row's entries and that head's q
// only, whatever the batch.
#ifndef CPLAB_KERNELS_MLA_TC_CUH
#define CPLAB_KERNELS_MLA_TC_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab/kvformat.h"
#include "mma.cuh"

#define MT_HEADS 64                          // heads per block (m)
#define MT_TILE 64                           // entries per tile
#define MT_THREADS 256                       // two warpgroups
#define MT_DQK CPLAB_MLA_ROW_DIM             // 576
#define MT_DV CPLAB_MLA_NOPE_DIM             // 512
#define MT_CHUNKS (MT_DQK * 2 / 16)          // 72 16-byte chunks a row
#define MT_KSTEPS (MT_DQK / 16)              // 36 k-steps of S
#define MT_BLOCK (MT_TILE * 128)             // bytes of one column block of a 64-row array
#define MT_ENTRIES_G 32                      // S entries per warpgroup
#define MT_COLS_G 256                        // O columns per warpgroup
#define MT_TILE_BYTES (MT_TILE * MT_DQK * 2) // one tile (and Q) in shared memory
#define MT_LOG2E 1.4426950408889634f

static_assert(MT_HEADS == MT_TILE, "Q and the tiles share one layout");
static_assert(MT_HEADS * MT_CHUNKS % MT_THREADS == 0, "whole chunks per thread");
static_assert(MT_TILE_BYTES % 1024 == 0, "1024-byte aligned arrays");

// What both kernels keep in shared memory; it starts 1024-byte aligned
// (the swizzle's atoms), so q and p do.
struct mt_core {
  unsigned char q[MT_TILE_BYTES];
  unsigned char p[MT_HEADS * MT_TILE * 2]; // bf16 [head][entry]: one column block
  float row_max[2][MT_HEADS];              // per warpgroup: the maxima of its 32 entries
  float row_sum[2][MT_HEADS];
};
static_assert(sizeof(mt_core) % 1024 == 0, "what follows the core stays aligned");

// Byte offset of 16-byte chunk c of row r in a swizzled array of 64 rows.
static __device__ __forceinline__ int mt_off(int r, int c) {
  return (c >> 3) * MT_BLOCK + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

// Issue the copies of the block's 64 heads of q (zero rows past `heads`).
static __device__ void mt_load_q(mt_core *s, const uint16_t *q, int heads, int64_t row, int h0) {
  for (int c = threadIdx.x; c < MT_HEADS * MT_CHUNKS; c += MT_THREADS) {
    int r = c / MT_CHUNKS, ch = c % MT_CHUNKS;
    bool ok = h0 + r < heads;
    cp_async_16(s->q + mt_off(r, ch), ok ? q + (row * heads + h0 + r) * MT_DQK + ch * 8 : q, ok);
  }
}

// S for warp q of group g: acc[i] = heads 16q.. x entries 32g + 8i.
static __device__ __forceinline__ void mt_scores(const mt_core *s, const unsigned char *kv, int g, int q,
                                                 float acc[4][4]) {
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[i][e] = 0.0f;
#ifdef CPLAB_HAVE_WGMMA
  (void)q;
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < MT_KSTEPS; ks++) {
    int off = (ks / 4) * MT_BLOCK + (ks % 4) * 32;
    wgmma_m64n32k16_bf16<0>(acc, wgmma_desc(s->q + off, 16, 1024),
                            wgmma_desc(kv + off + MT_ENTRIES_G * g * 128, 16, 1024));
  }
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) wgmma_fence_operand(acc[i][e]);
#else
  int lane = threadIdx.x % 32;
  int krow = MT_ENTRIES_G * g + lane % 8 + 8 * (lane / 16), kpart = (lane / 8) % 2;
#pragma unroll 4
  for (int ks = 0; ks < MT_KSTEPS; ks++) {
    uint32_t af[4], bf[2][4];
    ldmatrix_x4(af, s->q + mt_off(16 * q + lane % 16, 2 * ks + lane / 16));
#pragma unroll
    for (int j = 0; j < 2; j++) ldmatrix_x4(bf[j], kv + mt_off(krow + 16 * j, 2 * ks + kpart));
#pragma unroll
    for (int j = 0; j < 2; j++) {
      mma_m16n8k16_bf16(acc[2 * j], af, bf[j]);
      mma_m16n8k16_bf16(acc[2 * j + 1], af, bf[j] + 2);
    }
  }
#endif
}

static __device__ __forceinline__ float mt_quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 2));
}
static __device__ __forceinline__ float mt_quad_sum(float v) {
  v += __shfl_xor_sync(0xFFFFFFFFu, v, 1);
  return v + __shfl_xor_sync(0xFFFFFFFFu, v, 2);
}

static __device__ __forceinline__ uint32_t mt_pack_bf16(float lo, float hi) {
  return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
         (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
}

// The thread's 2 rows: heads 16q + lane / 4 + 8y.
struct mt_rows {
  float m[2], l[2];
};

// Online softmax of one tile for warp q of group g: scores in place -> P in
// shared memory, the rows' maxima and sums updated, corr[] the factors that
// rescale O. Two block barriers.
static __device__ void mt_softmax(mt_core *s, unsigned long long tile_valid, int g, int q, float scale_log2,
                                  float acc[4][4], mt_rows *st, float corr[2]) {
  int lane = threadIdx.x % 32, gi = lane / 4, t = lane % 4;
  unsigned valid = (unsigned)(tile_valid >> (MT_ENTRIES_G * g));
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      int col = 8 * i + 2 * t + e % 2;
      acc[i][e] = (valid >> col & 1u) ? acc[i][e] * scale_log2 : -INFINITY;
    }
#pragma unroll
  for (int y = 0; y < 2; y++) {
    float v = -INFINITY;
#pragma unroll
    for (int i = 0; i < 4; i++) v = fmaxf(v, fmaxf(acc[i][2 * y], acc[i][2 * y + 1]));
    v = mt_quad_max(v);
    if (t == 0) s->row_max[g][16 * q + 8 * y + gi] = v;
  }
  __syncthreads();
  float base[2];
#pragma unroll
  for (int y = 0; y < 2; y++) {
    int row = 16 * q + 8 * y + gi;
    float m_new = fmaxf(st->m[y], fmaxf(s->row_max[0][row], s->row_max[1][row]));
    // Nothing valid yet: keep the zero state (corr 1, every p 0).
    corr[y] = m_new == -INFINITY ? 1.0f : exp2f(st->m[y] - m_new);
    base[y] = m_new == -INFINITY ? 0.0f : m_new;
    st->m[y] = m_new;
  }
#pragma unroll
  for (int y = 0; y < 2; y++) {
    int row = 16 * q + 8 * y + gi;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      float p0 = exp2f(acc[i][2 * y] - base[y]), p1 = exp2f(acc[i][2 * y + 1] - base[y]);
      sum += p0 + p1;
      *(uint32_t *)(s->p + mt_off(row, 4 * g + i) + 4 * t) = mt_pack_bf16(p0, p1);
    }
    sum = mt_quad_sum(sum);
    if (t == 0) s->row_sum[g][row] = sum;
  }
  mma_smem_ready(); // P (written by ordinary stores) before the products read it
#pragma unroll
  for (int y = 0; y < 2; y++) {
    int row = 16 * q + 8 * y + gi;
    st->l[y] = st->l[y] * corr[y] + (s->row_sum[0][row] + s->row_sum[1][row]);
  }
}

// O += P · V for warp q of group g: o[i] = heads 16q.. x columns 256g + 8i.
static __device__ __forceinline__ void mt_accumulate(const mt_core *s, const unsigned char *kv, int g, int q,
                                                     float o[32][4]) {
#ifdef CPLAB_HAVE_WGMMA
  (void)q;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < MT_TILE / 16; kk++)
    wgmma_m64n256k16_bf16<1>(o, wgmma_desc(s->p + kk * 32, 16, 1024),
                             wgmma_desc(kv + (MT_COLS_G / 64) * g * MT_BLOCK + kk * 16 * 128, MT_BLOCK, 1024));
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 32; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) wgmma_fence_operand(o[i][e]);
#else
  int lane = threadIdx.x % 32;
  int vrow = lane % 8 + 8 * ((lane / 8) % 2), vpart = lane / 16;
#pragma unroll
  for (int kk = 0; kk < MT_TILE / 16; kk++) {
    uint32_t pa[4];
    ldmatrix_x4(pa, s->p + mt_off(16 * q + lane % 16, 2 * kk + lane / 16));
#pragma unroll
    for (int np = 0; np < 16; np++) {
      uint32_t vb[4];
      ldmatrix_x4_trans(vb, kv + mt_off(16 * kk + vrow, (MT_COLS_G / 8) * g + 2 * np + vpart));
      mma_m16n8k16_bf16(o[2 * np], pa, vb);
      mma_m16n8k16_bf16(o[2 * np + 1], pa, vb + 2);
    }
  }
#endif
}

// A row's state before its first tile: no maximum yet, nothing summed.
static __device__ __forceinline__ void mt_start(mt_rows *st, float o[32][4]) {
#pragma unroll
  for (int y = 0; y < 2; y++) st->m[y] = -INFINITY, st->l[y] = 0.0f;
#pragma unroll
  for (int i = 0; i < 32; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[i][e] = 0.0f;
}

// O *= the rows' correction factors.
static __device__ __forceinline__ void mt_rescale(float o[32][4], const float corr[2]) {
#pragma unroll
  for (int i = 0; i < 32; i++) {
    o[i][0] *= corr[0];
    o[i][1] *= corr[0];
    o[i][2] *= corr[1];
    o[i][3] *= corr[1];
  }
}

// out = O / l, lse = (m + log2 l) · ln 2; a row that saw no valid entry
// (l == 0): out 0, lse -inf.
static __device__ void mt_store(float *out, float *lse, int heads, int64_t row, int h0, int g, int q, const mt_rows *st,
                                float o[32][4]) {
  int lane = threadIdx.x % 32, gi = lane / 4, t = lane % 4;
#pragma unroll
  for (int y = 0; y < 2; y++) {
    int head = h0 + 16 * q + 8 * y + gi;
    if (head >= heads) continue;
    float inv = st->l[y] > 0.0f ? 1.0f / st->l[y] : 0.0f;
    float *dst = out + (row * heads + head) * MT_DV + MT_COLS_G * g + 2 * t;
#pragma unroll
    for (int i = 0; i < 32; i++)
      *(float2 *)(dst + 8 * i) = make_float2(o[i][2 * y] * inv, o[i][2 * y + 1] * inv);
    if (g == 0 && t == 0)
      lse[row * heads + head] = st->l[y] > 0.0f ? (st->m[y] + log2f(st->l[y])) * 0.6931471805599453f : -INFINITY;
  }
}

// The launchers' shared argument checks: sizes, pointers, the 16-byte rows
// the loaders copy (q, and the rows' source src: the workspace or the
// cache, src_count rows of it) and the grid. Leaves *run 0 for empty work.
static inline int mt_check_args(const void *q, int64_t m, int heads, const void *src, int64_t src_count,
                                const int32_t *list, int k, const float *out, const float *lse, int *run, cplab_diag *d,
                                const char *name, const char *src_name) {
  *run = 0;
  KCHECK_ARG(d, m >= 0 && heads >= 0 && k >= 0, "%s: negative size (m %lld, heads %d, k %d)", name, (long long)m,
             heads, k);
  KCHECK_ARG(d, src_count >= 0 && (src || src_count == 0), "%s: bad %s (%lld rows)", name, src_name,
             (long long)src_count);
  if (m == 0 || heads == 0) return 0;
  KCHECK_ARG(d, q && out && lse && (list || k == 0), "%s: NULL argument", name);
  KCHECK_ARG(d, kaligned(q, 16) && kaligned(src, 16) && kaligned(out, 8),
             "%s: q and the %s must be 16-byte and out 8-byte aligned", name, src_name);
  KCHECK_ARG(d, m <= KGRID_MAX_X, "%s: %lld rows exceed the grid", name, (long long)m);
  KCHECK_ARG(d, (heads + MT_HEADS - 1) / MT_HEADS <= 65535, "%s: %d heads exceed the grid", name, heads);
  *run = 1;
  return 0;
}

#endif
