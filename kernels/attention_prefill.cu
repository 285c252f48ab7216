// Sparse MLA prefill attention on tensor cores (mma.sync bf16, fp32
// accumulation) over the bf16 gathered workspace. Contract in
// cplab_kernels.h (cplab_sparse_mla_prefill); the instructions are the
// device functions of mma.cuh, so the CPU emulation runs this file as is.
//
// A block takes one query row and 64 of its heads (a head past `heads` is a
// zero row of Q that is never stored: production pads heads to 64 the same
// way), and walks the row's index list in tiles of 64 consecutive entries;
// a tile without a valid entry is skipped (a prepass marks the non-empty
// tiles), the invalid entries of a tile are zero rows whose scores are -inf.
// Per tile, with the next tile's rows already on their way (cp.async into
// the other of two buffers):
//   S = Q · K^T   64 heads x 64 entries over the 576 columns; warp w holds
//                 heads 32·(w/4).. (two m16 tiles) x entries 16·(w%4).. (two
//                 n8 tiles);
//   softmax       online, in the exp2 domain (scores · scale · log2 e): the
//                 four warps sharing heads exchange row maxima and sums
//                 through shared memory; P (bf16) goes to shared memory;
//   O += P · V    V = the entries' first 512 columns; warp w holds heads
//                 32·(w/4).. x columns 128·(w%4).. (two m16 x sixteen n8
//                 tiles: 128 fp32 accumulators a thread).
// Shared memory rows are 16-byte chunks swizzled by chunk ^ (row % 8), so
// the 8 rows an ldmatrix reads, and the rows cp.async writes, fall in
// distinct banks (rows are 1152 bytes, a multiple of the 128-byte line).
// Each (row, head) result depends on that row's list and that head's q only:
// a row gives the same bits alone or in any batch, with any head count.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab/kvformat.h"
#include "cplab_kernels.h"
#include "mma.cuh"

#define PF_HEADS 64                          // heads per block (m)
#define PF_TILE 64                           // index entries per tile (n of S, k of P·V)
#define PF_WARPS 8
#define PF_THREADS (32 * PF_WARPS)
#define PF_DQK CPLAB_MLA_ROW_DIM             // 576
#define PF_DV CPLAB_MLA_NOPE_DIM             // 512
#define PF_ROW_BYTES (PF_DQK * 2)            // 1152
#define PF_CHUNKS (PF_ROW_BYTES / 16)        // 72 16-byte chunks a row
#define PF_KSTEPS (PF_DQK / 16)              // 36 k-steps of S
#define PF_MASK_TILES 256                    // tiles the prepass can mark (k up to 16384); later ones always run
#define PF_LOG2E 1.4426950408889634f

static_assert(PF_HEADS * PF_CHUNKS % PF_THREADS == 0 && PF_TILE * PF_CHUNKS % PF_THREADS == 0,
              "whole chunks per thread");

struct pf_smem {
  unsigned char q[PF_HEADS * PF_ROW_BYTES];
  unsigned char kv[2][PF_TILE * PF_ROW_BYTES];
  unsigned char p[PF_HEADS * PF_TILE * 2]; // bf16 [head][entry], 8 swizzled chunks a row
  float row_max[4][PF_HEADS];              // per warp column (w % 4): its 16 entries' maxima
  float row_sum[4][PF_HEADS];
  unsigned long long valid[2];             // bit j: entry j of the buffer's tile is valid
  unsigned nonempty[PF_MASK_TILES / 32];   // bit t: tile t has a valid entry
};

// Byte offset of chunk c of row r in a swizzled array of 72-chunk rows.
static __device__ __forceinline__ int pf_off(int r, int c) { return r * PF_ROW_BYTES + ((c ^ (r & 7)) << 4); }
// The same in P (8 chunks a row).
static __device__ __forceinline__ int pf_poff(int r, int c) { return r * (PF_TILE * 2) + ((c ^ (r & 7)) << 4); }

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

// Issue the copies of tile t's rows into buffer b, and its validity bits.
static __device__ void pf_load_tile(const pf_args &a, const int32_t *list, pf_smem *s, int t, int b) {
  for (int c = threadIdx.x; c < PF_TILE * PF_CHUNKS; c += PF_THREADS) {
    int r = c / PF_CHUNKS, ch = c % PF_CHUNKS, e = t * PF_TILE + r;
    int64_t i = e < a.k ? (int64_t)list[e] : -1;
    bool ok = pf_valid(a, i);
    cp_async_16(s->kv[b] + pf_off(r, ch), ok ? a.ws + i * PF_DQK + ch * 8 : a.ws, ok);
  }
  if (threadIdx.x < PF_TILE) {
    int e = t * PF_TILE + (int)threadIdx.x;
    unsigned bits = __ballot_sync(0xFFFFFFFFu, e < a.k && pf_valid(a, list[e]));
    if (threadIdx.x % 32 == 0) ((unsigned *)&s->valid[b])[threadIdx.x / 32] = bits;
  }
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

// S for warp (mi, ni): s[a][n] = the m16 x n8 tile of heads 32mi + 16a,
// entries 16ni + 8n.
static __device__ __forceinline__ void pf_scores(const pf_smem *s, int b, int mi, int ni, float acc[2][2][4]) {
  int lane = threadIdx.x % 32;
#pragma unroll
  for (int x = 0; x < 2; x++)
#pragma unroll
    for (int n = 0; n < 2; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[x][n][e] = 0.0f;
  const unsigned char *kv = s->kv[b];
  int krow = 16 * ni + lane % 8 + 8 * (lane / 16), kpart = (lane / 8) % 2;
#pragma unroll 4
  for (int ks = 0; ks < PF_KSTEPS; ks++) {
    uint32_t af[2][4], bf[4];
#pragma unroll
    for (int x = 0; x < 2; x++) ldmatrix_x4(af[x], s->q + pf_off(32 * mi + 16 * x + lane % 16, 2 * ks + lane / 16));
    ldmatrix_x4(bf, kv + pf_off(krow, 2 * ks + kpart));
#pragma unroll
    for (int x = 0; x < 2; x++) {
      mma_m16n8k16_bf16(acc[x][0], af[x], bf);
      mma_m16n8k16_bf16(acc[x][1], af[x], bf + 2);
    }
  }
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

// The thread's 4 rows: heads 32mi + 16x + g + 8y, as index 2x + y.
struct pf_rows {
  float m[4], l[4];
};

// Online softmax of one tile for warp (mi, ni): scores in place -> P in
// shared memory, the rows' maxima and sums updated, corr[] the factors
// that rescale O. Two block barriers.
static __device__ void pf_softmax(pf_smem *s, int b, int mi, int ni, float scale_log2, float acc[2][2][4],
                                  pf_rows *st, float corr[4]) {
  int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  unsigned long long valid = s->valid[b];
#pragma unroll
  for (int x = 0; x < 2; x++)
#pragma unroll
    for (int n = 0; n < 2; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int col = 16 * ni + 8 * n + 2 * t + e % 2;
        acc[x][n][e] = (valid >> col & 1ull) ? acc[x][n][e] * scale_log2 : -INFINITY;
      }
#pragma unroll
  for (int x = 0; x < 2; x++)
#pragma unroll
    for (int y = 0; y < 2; y++) {
      float v = fmaxf(fmaxf(acc[x][0][2 * y], acc[x][0][2 * y + 1]), fmaxf(acc[x][1][2 * y], acc[x][1][2 * y + 1]));
      v = pf_quad_max(v);
      if (t == 0) s->row_max[ni][32 * mi + 16 * x + 8 * y + g] = v;
    }
  __syncthreads();
  float base[4];
#pragma unroll
  for (int r = 0; r < 4; r++) {
    int row = 32 * mi + 16 * (r / 2) + 8 * (r % 2) + g;
    float mx = fmaxf(fmaxf(s->row_max[0][row], s->row_max[1][row]), fmaxf(s->row_max[2][row], s->row_max[3][row]));
    float m_new = fmaxf(st->m[r], mx);
    // Nothing valid yet: keep the zero state (corr 1, every p 0).
    corr[r] = m_new == -INFINITY ? 1.0f : exp2f(st->m[r] - m_new);
    base[r] = m_new == -INFINITY ? 0.0f : m_new;
    st->m[r] = m_new;
  }
#pragma unroll
  for (int x = 0; x < 2; x++)
#pragma unroll
    for (int y = 0; y < 2; y++) {
      int r = 2 * x + y, row = 32 * mi + 16 * x + 8 * y + g;
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < 2; n++) {
        float p0 = exp2f(acc[x][n][2 * y] - base[r]), p1 = exp2f(acc[x][n][2 * y + 1] - base[r]);
        sum += p0 + p1;
        *(uint32_t *)(s->p + pf_poff(row, 2 * ni + n) + 4 * t) = pf_pack_bf16(p0, p1);
      }
      sum = pf_quad_sum(sum);
      if (t == 0) s->row_sum[ni][row] = sum;
    }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < 4; r++) {
    int row = 32 * mi + 16 * (r / 2) + 8 * (r % 2) + g;
    st->l[r] = st->l[r] * corr[r] + ((s->row_sum[0][row] + s->row_sum[1][row]) + (s->row_sum[2][row] + s->row_sum[3][row]));
  }
}

// O += P · V for warp (mi, ni): o[x][n] = heads 32mi + 16x, columns 128ni + 8n.
static __device__ __forceinline__ void pf_accumulate(const pf_smem *s, int b, int mi, int ni, float o[2][16][4]) {
  int lane = threadIdx.x % 32;
  const unsigned char *kv = s->kv[b];
  int vrow = lane % 8 + 8 * ((lane / 8) % 2), vpart = lane / 16;
#pragma unroll
  for (int ks = 0; ks < PF_TILE / 16; ks++) {
    uint32_t pa[2][4];
#pragma unroll
    for (int x = 0; x < 2; x++) ldmatrix_x4(pa[x], s->p + pf_poff(32 * mi + 16 * x + lane % 16, 2 * ks + lane / 16));
#pragma unroll
    for (int np = 0; np < 8; np++) {
      uint32_t vb[4];
      ldmatrix_x4_trans(vb, kv + pf_off(16 * ks + vrow, 16 * ni + 2 * np + vpart));
#pragma unroll
      for (int x = 0; x < 2; x++) {
        mma_m16n8k16_bf16(o[x][2 * np], pa[x], vb);
        mma_m16n8k16_bf16(o[x][2 * np + 1], pa[x], vb + 2);
      }
    }
  }
}

// out = O / l, lse = (m + log2 l) · ln 2; a row that saw no valid entry
// (l == 0): out 0, lse -inf.
static __device__ void pf_store(const pf_args &a, int64_t row, int h0, int mi, int ni, const pf_rows *st,
                                float o[2][16][4]) {
  int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < 4; r++) {
    int x = r / 2, y = r % 2, head = h0 + 32 * mi + 16 * x + 8 * y + g;
    if (head >= a.heads) continue;
    float inv = st->l[r] > 0.0f ? 1.0f / st->l[r] : 0.0f;
    float *dst = a.out + (row * a.heads + head) * PF_DV + 128 * ni + 2 * t;
#pragma unroll
    for (int n = 0; n < 16; n++)
      *(float2 *)(dst + 8 * n) = make_float2(o[x][n][2 * y] * inv, o[x][n][2 * y + 1] * inv);
    if (ni == 0 && t == 0)
      a.lse[row * a.heads + head] = st->l[r] > 0.0f ? (st->m[r] + log2f(st->l[r])) * 0.6931471805599453f : -INFINITY;
  }
}

__global__ void __launch_bounds__(PF_THREADS, 1) pf_kernel(pf_args a) {
  extern __shared__ uint4 pf_raw[];
  pf_smem *s = (pf_smem *)pf_raw;
  int64_t row = blockIdx.x;
  int h0 = blockIdx.y * PF_HEADS, w = threadIdx.x / 32, mi = w / 4, ni = w % 4;
  const int32_t *list = a.idx + row * a.k;
  int tiles = (a.k + PF_TILE - 1) / PF_TILE;
  pf_mark_tiles(a, list, s);
  pf_rows st;
#pragma unroll
  for (int r = 0; r < 4; r++) st.m[r] = -INFINITY, st.l[r] = 0.0f;
  float o[2][16][4];
#pragma unroll
  for (int x = 0; x < 2; x++)
#pragma unroll
    for (int n = 0; n < 16; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) o[x][n][e] = 0.0f;
  int cur = pf_next_tile(s, 0, tiles);
  if (cur >= 0) {
    pf_load_q(a, row, h0, s);
    pf_load_tile(a, list, s, cur, 0);
  }
  cp_async_commit();
  for (int it = 0; cur >= 0; it++) {
    int b = it & 1, next = pf_next_tile(s, cur + 1, tiles);
    if (next >= 0) pf_load_tile(a, list, s, next, b ^ 1);
    cp_async_commit();
    cp_async_wait<1>(); // this tile's copies (and q's) have landed
    __syncthreads();
    float acc[2][2][4], corr[4];
    pf_scores(s, b, mi, ni, acc);
    pf_softmax(s, b, mi, ni, a.scale_log2, acc, &st, corr);
#pragma unroll
    for (int x = 0; x < 2; x++)
#pragma unroll
      for (int n = 0; n < 16; n++) {
        o[x][n][0] *= corr[2 * x];
        o[x][n][1] *= corr[2 * x];
        o[x][n][2] *= corr[2 * x + 1];
        o[x][n][3] *= corr[2 * x + 1];
      }
    pf_accumulate(s, b, mi, ni, o);
    __syncthreads(); // buffer b, P and the row exchange are free again
    cur = next;
  }
  pf_store(a, row, h0, mi, ni, &st, o);
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
  size_t smem = sizeof(pf_smem);
  int rc = kset_smem(d, pf_kernel, smem, name);
  if (rc) return rc;
  pf_args a = {q, heads, workspace, rows, idx, k, scale * PF_LOG2E, out, lse};
  dim3 grid((unsigned)m, (unsigned)((heads + PF_HEADS - 1) / PF_HEADS));
  pf_kernel<<<grid, PF_THREADS, smem, kstream(stream)>>>(a);
  return kcheck_launch(d, name);
}
