// Sparse MLA prefill attention on tensor cores over the bf16 gathered
// workspace. Contract in cplab_kernels.h (cplab_sparse_mla_prefill); the
// instructions are the device functions of mma.cuh.
//
// A block takes one query row and 64 of its heads (a head past `heads` is a
// zero row of Q that is never stored: production pads heads to 64 the same
// way), and walks the row's index list in tiles of 64 consecutive entries;
// a tile without a valid entry is skipped (a prepass marks the non-empty
// tiles), the invalid entries of a tile are zero rows whose scores are -inf.
// Two warpgroups of four warps; warp q of group g holds heads 16q..16q+15:
//   S = Q · K^T   its heads x entries 32g..32g+31 of the tile, over the 576
//                 columns;
//   softmax       online, in the exp2 domain (scores · scale · log2 e): the
//                 two groups exchange row maxima and sums through shared
//                 memory; P (bf16) goes to shared memory;
//   O += P · V    its heads x value columns 256g..256g+255 (V = the
//                 entries' first 512 columns): 128 fp32 accumulators a
//                 thread.
// The next tile's rows are on their way meanwhile (cp.async into the other
// of two buffers). The products run on wgmma where the build has sm_90a
// (CPLAB_HAVE_WGMMA: one m64n32k16 per k-step for S, one m64n256k16 per 16
// entries for P·V, operands read from shared memory), else on mma.sync
// m16n8k16 with ldmatrix (sm_100 and the CPU emulation): the same fragments
// in the same threads, so everything but the products is the code the
// emulation runs.
// Shared memory holds Q, the tiles and P in wgmma's 128-byte-swizzled
// layout: column block j (64 bf16 = 128 bytes) of every row together, row r
// of a block at r · 128 bytes, its 16-byte chunk c at chunk c ^ (r % 8). The
// same tile is K-major for S (K's rows along N) and MN-major for P·V (value
// columns along N), and the 8 rows an ldmatrix reads fall in distinct banks.
// Each (row, head) result depends on that row's list and that head's q only:
// a row gives the same bits alone or in any batch.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab/kvformat.h"
#include "cplab_kernels.h"
#include "mma.cuh"

#define PF_HEADS 64                          // heads per block (m)
#define PF_TILE 64                           // index entries per tile
#define PF_THREADS 256                       // two warpgroups
#define PF_DQK CPLAB_MLA_ROW_DIM             // 576
#define PF_DV CPLAB_MLA_NOPE_DIM             // 512
#define PF_CHUNKS (PF_DQK * 2 / 16)          // 72 16-byte chunks a row
#define PF_KSTEPS (PF_DQK / 16)              // 36 k-steps of S
#define PF_BLOCK (PF_TILE * 128)             // bytes of one column block of a 64-row array
#define PF_ENTRIES_G 32                      // S entries per warpgroup
#define PF_COLS_G 256                        // O columns per warpgroup
#define PF_MASK_TILES 256                    // tiles the prepass can mark (k up to 16384); later ones always run
#define PF_LOG2E 1.4426950408889634f

static_assert(PF_HEADS == PF_TILE, "Q and the tiles share one layout");
static_assert(PF_HEADS * PF_CHUNKS % PF_THREADS == 0, "whole chunks per thread");

// The arrays wgmma reads start 1024-byte aligned (the swizzle's atoms);
// the launch aligns the dynamic shared memory's base.
struct pf_smem {
  unsigned char q[PF_HEADS * PF_DQK * 2];
  unsigned char kv[2][PF_TILE * PF_DQK * 2];
  unsigned char p[PF_HEADS * PF_TILE * 2]; // bf16 [head][entry]: one column block
  float row_max[2][PF_HEADS];              // per warpgroup: the maxima of its 32 entries
  float row_sum[2][PF_HEADS];
  unsigned long long valid[2];             // bit j: entry j of the buffer's tile is valid
  unsigned nonempty[PF_MASK_TILES / 32];   // bit t: tile t has a valid entry
};
static_assert(sizeof(((pf_smem *)0)->q) % 1024 == 0 && sizeof(((pf_smem *)0)->kv[0]) % 1024 == 0,
              "1024-byte aligned arrays");

// Byte offset of 16-byte chunk c of row r in a swizzled array of 64 rows.
static __device__ __forceinline__ int pf_off(int r, int c) {
  return (c >> 3) * PF_BLOCK + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

struct pf_args {
  const uint16_t *q;
  int heads;
  const uint16_t *ws;
  int64_t rows;
  const int32_t *idx;
  int k;
  float scale_log2; // scale · log2 e
  float *out, *lse;
};

static __device__ __forceinline__ bool pf_valid(const pf_args &a, int64_t i) { return i >= 0 && i < a.rows; }

// The first tile >= t with a valid entry, or -1.
static __device__ int pf_next_tile(const pf_smem *s, int t, int tiles) {
  for (; t < tiles; t++)
    if (t >= PF_MASK_TILES || (s->nonempty[t / 32] >> (t % 32) & 1u)) return t;
  return -1;
}

// Issue the copies of tile t's rows into buffer b, and its validity bits:
// four threads a row, one index load each, every fourth chunk.
static __device__ void pf_load_tile(const pf_args &a, const int32_t *list, pf_smem *s, int t, int b) {
  static_assert(PF_THREADS == 4 * PF_TILE && PF_CHUNKS % 4 == 0, "four threads a row");
  int r = threadIdx.x / 4, e = t * PF_TILE + r;
  int64_t i = e < a.k ? (int64_t)list[e] : -1;
  bool ok = pf_valid(a, i);
  const uint16_t *src = ok ? a.ws + i * PF_DQK : a.ws;
  unsigned char *dst = s->kv[b];
#pragma unroll
  for (int ch = threadIdx.x % 4; ch < PF_CHUNKS; ch += 4) cp_async_16(dst + pf_off(r, ch), src + ch * 8, ok);
  unsigned long long bits = __ballot_sync(0xFFFFFFFFu, ok && threadIdx.x % 4 == 0);
  // Lane 4j's bit is row 8w + j of warp w: keep every fourth bit.
  unsigned rows8 = 0;
#pragma unroll
  for (int j = 0; j < 8; j++) rows8 |= (unsigned)(bits >> (4 * j) & 1u) << j;
  if (threadIdx.x % 32 == 0) ((unsigned char *)&s->valid[b])[threadIdx.x / 32] = (unsigned char)rows8;
}

static __device__ void pf_load_q(const pf_args &a, int64_t row, int h0, pf_smem *s) {
  for (int c = threadIdx.x; c < PF_HEADS * PF_CHUNKS; c += PF_THREADS) {
    int r = c / PF_CHUNKS, ch = c % PF_CHUNKS;
    bool ok = h0 + r < a.heads;
    cp_async_16(s->q + pf_off(r, ch), ok ? a.q + (row * a.heads + h0 + r) * PF_DQK + ch * 8 : a.q, ok);
  }
}

// The prepass: mark the tiles that hold a valid entry.
static __device__ void pf_mark_tiles(const pf_args &a, const int32_t *list, pf_smem *s) {
  if (threadIdx.x < PF_MASK_TILES / 32) s->nonempty[threadIdx.x] = 0;
  __syncthreads();
  int marked = min(a.k, PF_MASK_TILES * PF_TILE);
  for (int e = threadIdx.x; e < marked; e += PF_THREADS)
    if (pf_valid(a, list[e])) atomicOr(&s->nonempty[e / PF_TILE / 32], 1u << (e / PF_TILE % 32));
  __syncthreads();
}

// What the threads wrote to shared memory (ordinary stores, or cp.async
// copies waited for) is visible to every thread and to the next products.
static __device__ __forceinline__ void pf_smem_ready(void) {
#ifdef CPLAB_HAVE_WGMMA
  fence_proxy_async();
#endif
  __syncthreads();
}

// S for warp q of group g: acc[i] = heads 16q.. x entries 32g + 8i.
static __device__ __forceinline__ void pf_scores(const pf_smem *s, int b, int g, int q, float acc[4][4]) {
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[i][e] = 0.0f;
  const unsigned char *kv = s->kv[b];
#ifdef CPLAB_HAVE_WGMMA
  (void)q;
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < PF_KSTEPS; ks++) {
    int off = (ks / 4) * PF_BLOCK + (ks % 4) * 32;
    wgmma_m64n32k16_bf16<0>(acc, wgmma_desc(s->q + off, 16, 1024),
                            wgmma_desc(kv + off + PF_ENTRIES_G * g * 128, 16, 1024));
  }
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) wgmma_fence_operand(acc[i][e]);
#else
  int lane = threadIdx.x % 32;
  int krow = PF_ENTRIES_G * g + lane % 8 + 8 * (lane / 16), kpart = (lane / 8) % 2;
#pragma unroll 4
  for (int ks = 0; ks < PF_KSTEPS; ks++) {
    uint32_t af[4], bf[2][4];
    ldmatrix_x4(af, s->q + pf_off(16 * q + lane % 16, 2 * ks + lane / 16));
#pragma unroll
    for (int j = 0; j < 2; j++) ldmatrix_x4(bf[j], kv + pf_off(krow + 16 * j, 2 * ks + kpart));
#pragma unroll
    for (int j = 0; j < 2; j++) {
      mma_m16n8k16_bf16(acc[2 * j], af, bf[j]);
      mma_m16n8k16_bf16(acc[2 * j + 1], af, bf[j] + 2);
    }
  }
#endif
}

static __device__ __forceinline__ float pf_quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 2));
}
static __device__ __forceinline__ float pf_quad_sum(float v) {
  v += __shfl_xor_sync(0xFFFFFFFFu, v, 1);
  return v + __shfl_xor_sync(0xFFFFFFFFu, v, 2);
}

static __device__ __forceinline__ uint32_t pf_pack_bf16(float lo, float hi) {
  return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
         (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
}

// The thread's 2 rows: heads 16q + lane / 4 + 8y.
struct pf_rows {
  float m[2], l[2];
};

// Online softmax of one tile for warp q of group g: scores in place -> P in
// shared memory, the rows' maxima and sums updated, corr[] the factors that
// rescale O. Two block barriers.
static __device__ void pf_softmax(pf_smem *s, int b, int g, int q, float scale_log2, float acc[4][4], pf_rows *st,
                                  float corr[2]) {
  int lane = threadIdx.x % 32, gi = lane / 4, t = lane % 4;
  unsigned valid = (unsigned)(s->valid[b] >> (PF_ENTRIES_G * g));
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
    v = pf_quad_max(v);
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
      *(uint32_t *)(s->p + pf_off(row, 4 * g + i) + 4 * t) = pf_pack_bf16(p0, p1);
    }
    sum = pf_quad_sum(sum);
    if (t == 0) s->row_sum[g][row] = sum;
  }
  pf_smem_ready(); // P (written by ordinary stores) before the products read it
#pragma unroll
  for (int y = 0; y < 2; y++) {
    int row = 16 * q + 8 * y + gi;
    st->l[y] = st->l[y] * corr[y] + (s->row_sum[0][row] + s->row_sum[1][row]);
  }
}

// O += P · V for warp q of group g: o[i] = heads 16q.. x columns 256g + 8i.
static __device__ __forceinline__ void pf_accumulate(const pf_smem *s, int b, int g, int q, float o[32][4]) {
  const unsigned char *kv = s->kv[b];
#ifdef CPLAB_HAVE_WGMMA
  (void)q;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < PF_TILE / 16; kk++)
    wgmma_m64n256k16_bf16<1>(o, wgmma_desc(s->p + kk * 32, 16, 1024),
                             wgmma_desc(kv + (PF_COLS_G / 64) * g * PF_BLOCK + kk * 16 * 128, PF_BLOCK, 1024));
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
  for (int kk = 0; kk < PF_TILE / 16; kk++) {
    uint32_t pa[4];
    ldmatrix_x4(pa, s->p + pf_off(16 * q + lane % 16, 2 * kk + lane / 16));
#pragma unroll
    for (int np = 0; np < 16; np++) {
      uint32_t vb[4];
      ldmatrix_x4_trans(vb, kv + pf_off(16 * kk + vrow, (PF_COLS_G / 8) * g + 2 * np + vpart));
      mma_m16n8k16_bf16(o[2 * np], pa, vb);
      mma_m16n8k16_bf16(o[2 * np + 1], pa, vb + 2);
    }
  }
#endif
}

// out = O / l, lse = (m + log2 l) · ln 2; a row that saw no valid entry
// (l == 0): out 0, lse -inf.
static __device__ void pf_store(const pf_args &a, int64_t row, int h0, int g, int q, const pf_rows *st,
                                float o[32][4]) {
  int lane = threadIdx.x % 32, gi = lane / 4, t = lane % 4;
#pragma unroll
  for (int y = 0; y < 2; y++) {
    int head = h0 + 16 * q + 8 * y + gi;
    if (head >= a.heads) continue;
    float inv = st->l[y] > 0.0f ? 1.0f / st->l[y] : 0.0f;
    float *dst = a.out + (row * a.heads + head) * PF_DV + PF_COLS_G * g + 2 * t;
#pragma unroll
    for (int i = 0; i < 32; i++)
      *(float2 *)(dst + 8 * i) = make_float2(o[i][2 * y] * inv, o[i][2 * y + 1] * inv);
    if (g == 0 && t == 0)
      a.lse[row * a.heads + head] = st->l[y] > 0.0f ? (st->m[y] + log2f(st->l[y])) * 0.6931471805599453f : -INFINITY;
  }
}

__global__ void __launch_bounds__(PF_THREADS, 1) pf_kernel(pf_args a) {
  extern __shared__ uint4 pf_raw[];
  pf_smem *s = (pf_smem *)mma_align_smem(pf_raw, 1024);
  int64_t row = blockIdx.x;
  int h0 = blockIdx.y * PF_HEADS, w = threadIdx.x / 32, g = w / 4, q = w % 4;
  const int32_t *list = a.idx + row * a.k;
  int tiles = (a.k + PF_TILE - 1) / PF_TILE;
  pf_mark_tiles(a, list, s);
  pf_rows st;
#pragma unroll
  for (int y = 0; y < 2; y++) st.m[y] = -INFINITY, st.l[y] = 0.0f;
  float o[32][4];
#pragma unroll
  for (int i = 0; i < 32; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[i][e] = 0.0f;
  int cur = pf_next_tile(s, 0, tiles);
  if (cur >= 0) {
    pf_load_q(a, row, h0, s);
    pf_load_tile(a, list, s, cur, 0);
  }
  cp_async_commit();
  for (int it = 0; cur >= 0; it++) {
    int b = it & 1, next = pf_next_tile(s, cur + 1, tiles);
    cp_async_wait<0>(); // this tile's copies (and q's) have landed
    pf_smem_ready();
    // The other buffer's last readers (the previous tile's products) are done.
    if (next >= 0) pf_load_tile(a, list, s, next, b ^ 1);
    cp_async_commit();
    float acc[4][4], corr[2];
    pf_scores(s, b, g, q, acc);
    pf_softmax(s, b, g, q, a.scale_log2, acc, &st, corr);
#pragma unroll
    for (int i = 0; i < 32; i++) {
      o[i][0] *= corr[0];
      o[i][1] *= corr[0];
      o[i][2] *= corr[1];
      o[i][3] *= corr[1];
    }
    pf_accumulate(s, b, g, q, o);
    cur = next;
  }
  pf_store(a, row, h0, g, q, &st, o);
}

extern "C" int cplab_sparse_mla_prefill(const uint16_t *q, int64_t m, int heads, const uint16_t *workspace,
                                        int64_t rows, const int32_t *idx, int k, float scale, float *out, float *lse,
                                        void *stream, cplab_diag *d) {
  const char *name = "cplab_sparse_mla_prefill";
  KCHECK_ARG(d, m >= 0 && heads >= 0 && k >= 0, "%s: negative size (m %lld, heads %d, k %d)", name, (long long)m,
             heads, k);
  KCHECK_ARG(d, rows >= 0 && (workspace || rows == 0), "%s: bad workspace (%lld rows)", name, (long long)rows);
  if (m == 0 || heads == 0) return 0;
  KCHECK_ARG(d, q && out && lse && (idx || k == 0), "%s: NULL argument", name);
  KCHECK_ARG(d, kaligned(q, 16) && kaligned(workspace, 16) && kaligned(out, 8),
             "%s: q and the workspace must be 16-byte and out 8-byte aligned", name);
  KCHECK_ARG(d, m <= KGRID_MAX_X, "%s: %lld rows exceed the grid", name, (long long)m);
  KCHECK_ARG(d, (heads + PF_HEADS - 1) / PF_HEADS <= 65535, "%s: %d heads exceed the grid", name, heads);
  size_t smem = sizeof(pf_smem) + 1008; // room to align the base to 1024 (it is 16-byte aligned)
  int rc = kset_smem(d, pf_kernel, smem, name);
  if (rc) return rc;
  pf_args a = {q, heads, workspace, rows, idx, k, scale * PF_LOG2E, out, lse};
  dim3 grid((unsigned)m, (unsigned)((heads + PF_HEADS - 1) / PF_HEADS));
  pf_kernel<<<grid, PF_THREADS, smem, kstream(stream)>>>(a);
  return kcheck_launch(d, name);
}
