// Indexer logits (reference §6.2) over gathered keys, on tensor cores:
// fp8 queries against fp8 keys, ReLU per head, folded head weights, key
// scale. Contract in cplab_kernels.h; the tile's products and the head
// reduction are idx_tc.cuh's.
//
// A block is one warpgroup and takes Q = 256 / HP consecutive query rows
// (their HP-padded heads are the 256 columns of the product) and a chunk of
// LG_CHUNK keys, in tiles of 64 through a ring of LG_STAGES buffers filled
// by cp.async while earlier tiles are multiplied. Tiles outside every row's
// [ks, ke) are not multiplied: their logits are -inf, stored directly.
// Several blocks share an SM (three from 32 heads on, two below, where the
// longer head sums need more registers), so one block's epilogue (ReLU,
// weights, shuffles, stores) overlaps the others' products.
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "idx_tc.cuh"

#define LG_N 256                       // query heads a block (the product's N)
#define LG_NT (LG_N / 8)               // n8 tiles
static_assert(LG_NT == 32, "it_products_256");
#define LG_STAGES 3                    // key tiles in flight
#define LG_CHUNK_TILES 64              // tiles a block takes along the keys
#define LG_CHUNK (LG_CHUNK_TILES * IT_TILE)
#define LG_MAX_HEADS 128
#define LG_TILE_BYTES (IT_TILE * IT_ROW)

// Shared memory of a block; starts 1024-byte aligned (the swizzle's atoms).
struct lg_smem {
  unsigned char q[LG_N * IT_ROW];                 // the block's query heads, swizzled
  unsigned char k[LG_STAGES][LG_TILE_BYTES];      // key tiles, swizzled
  float kscale[LG_STAGES][IT_TILE];               // their scales
  float w[LG_N];                                  // the heads' weights (0 for padding)
  int lo[LG_N / 8], hi[LG_N / 8];                 // each row's [ks, ke) within [0, n)
};
static_assert(sizeof(((lg_smem *)0)->q) % 1024 == 0 && LG_TILE_BYTES % 1024 == 0, "aligned arrays");

static size_t lg_smem_bytes(void) { return sizeof(lg_smem) + 1024; }

// Tile `tile` of the keys (keys tile·64 ..) into ring buffer b; keys past n
// are zero rows. Thread x copies word x % 32 of rows x / 32 + 4i (a warp: one
// row's 128 contiguous bytes a copy), so its addresses step by constants.
static __device__ void lg_load_tile(lg_smem *s, int b, const uint8_t *keys, int64_t n, int64_t tile) {
  static_assert(IT_THREADS == 128, "4 rows a pass");
  int64_t n0 = tile * IT_TILE;
  int w = threadIdx.x % 32, r0 = threadIdx.x / 32;
  const uint8_t *src = keys + (n0 + r0) * CPLAB_IDX_ENTRY_BYTES + 4 * w;
  unsigned char *dst = s->k[b] + 4 * (w % 4);
  if (n0 + IT_TILE <= n) { // a whole tile: no bounds
#pragma unroll
    for (int i = 0; i < IT_TILE / 4; i++)
      cp_async_4(dst + it_off(r0 + 4 * i, w / 4), src + i * 4 * CPLAB_IDX_ENTRY_BYTES, true);
  } else {
#pragma unroll
    for (int i = 0; i < IT_TILE / 4; i++) {
      bool in = n0 + r0 + 4 * i < n;
      cp_async_4(dst + it_off(r0 + 4 * i, w / 4), in ? src + i * 4 * CPLAB_IDX_ENTRY_BYTES : dst, in);
    }
  }
  if (threadIdx.x < IT_TILE) {
    int r = threadIdx.x;
    bool in = n0 + r < n;
    cp_async_4(&s->kscale[b][r], in ? keys + (n0 + r) * CPLAB_IDX_ENTRY_BYTES + CPLAB_IDX_SCALE_OFFSET : NULL, in);
  }
}

// -inf into rows [row0, row0 + q) x keys [c0, c1) of logits.
static __device__ void lg_fill_ninf(float *logits, int64_t n, int64_t row0, int q, int64_t c0, int64_t c1) {
  int64_t len = c1 - c0;
  for (int r = 0; r < q; r++)
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) logits[(row0 + r) * n + c0 + j] = -INFINITY;
}

template <int HP>
__global__ void __launch_bounds__(IT_THREADS, HP >= 32 ? 3 : 2)
    logits_kernel(const uint8_t *q, const float *weight, int64_t m, int heads, const uint8_t *keys, int64_t n,
                  const int32_t *ks, const int32_t *ke, float *logits) {
  constexpr int Q = LG_N / HP;
  extern __shared__ uint4 lg_raw[];
  lg_smem *s = (lg_smem *)mma_align_smem(lg_raw, 1024);
  int64_t row0 = (int64_t)blockIdx.x * Q;
  int rows = (int)min((int64_t)Q, m - row0);
  int64_t c0 = (int64_t)blockIdx.y * LG_CHUNK, c1 = min(n, c0 + LG_CHUNK);

  // The rows' ranges within the chunk, and their hull.
  if (threadIdx.x < Q) {
    int r = threadIdx.x;
    int64_t lo = 0, hi = 0;
    if (r < rows) {
      lo = max((int64_t)ks[row0 + r], (int64_t)0);
      hi = min((int64_t)ke[row0 + r], n);
    }
    s->lo[r] = (int)lo, s->hi[r] = (int)(hi > lo ? hi : lo);
  }
  __syncthreads();
  int64_t lo = c1, hi = c0;
  for (int r = 0; r < rows; r++)
    if (s->hi[r] > s->lo[r]) lo = min(lo, (int64_t)s->lo[r]), hi = max(hi, (int64_t)s->hi[r]);
  lo = max(lo, c0), hi = min(hi, c1);
  if (hi <= lo) { // nothing to multiply: uniform exit
    lg_fill_ninf(logits, n, row0, rows, c0, c1);
    return;
  }
  int64_t t0 = lo / IT_TILE, t1 = (hi + IT_TILE - 1) / IT_TILE; // the tiles that hold a key in range
  lg_fill_ninf(logits, n, row0, rows, c0, t0 * IT_TILE);
  lg_fill_ninf(logits, n, row0, rows, min(c1, t1 * IT_TILE), c1);

  // Queries and weights, then the first tiles.
  it_copy_rows(s->q, LG_N, [&](int c) -> const unsigned char * {
    int r = c / HP, h = c % HP;
    return r < rows && h < heads ? q + ((row0 + r) * heads + h) * IT_ROW : NULL;
  });
  for (int c = threadIdx.x; c < LG_N; c += blockDim.x) {
    int r = c / HP, h = c % HP;
    s->w[c] = r < rows && h < heads ? weight[(row0 + r) * heads + h] : 0.0f;
  }
  for (int st = 0; st < LG_STAGES - 1; st++) {
    if (t0 + st < t1) lg_load_tile(s, st, keys, n, t0 + st);
    cp_async_commit();
  }

  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  for (int64_t tile = t0; tile < t1; tile++) {
    int b = (int)((tile - t0) % LG_STAGES);
    cp_async_wait<LG_STAGES - 2>(); // this thread's copies of `tile` (and the queries) landed
    mma_smem_ready();                // everyone's; and everyone is done with the buffer refilled next
    int64_t next = tile + LG_STAGES - 1;
    if (next < t1) lg_load_tile(s, (int)((next - t0) % LG_STAGES), keys, n, next);
    cp_async_commit();

    float acc[LG_NT][4];
    it_products_256(acc, s->k[b], s->q);
    float sum[it_sums<LG_NT, HP>::N];
    it_head_sums<LG_NT, HP>(acc, s->w, sum);

    // This thread's values: row p / 2 of the block, its key (p % 2)·8 + g.
#pragma unroll
    for (int i = 0; i < Q / 2; i++) {
      int p = it_value<Q>(t, i), r = p / 2, kr = 16 * warp + g + 8 * (p % 2);
      int64_t col = tile * IT_TILE + kr;
      if (r < rows && col < c1)
        logits[(row0 + r) * n + col] = col >= s->lo[r] && col < s->hi[r] ? sum[i] * s->kscale[b][kr] : -INFINITY;
    }
  }
  cp_async_wait<0>(); // nothing in flight at exit
}

template <int HP> static int logits_launch(const uint8_t *q, const float *weight, int64_t m, int heads,
                                           const uint8_t *keys, int64_t n, const int32_t *ks, const int32_t *ke,
                                           float *logits, cudaStream_t stream, cplab_diag *d) {
  constexpr int Q = LG_N / HP;
  size_t smem = lg_smem_bytes();
  int rc = kset_smem(d, logits_kernel<HP>, smem, "logits_kernel");
  if (rc) return rc;
  dim3 grid(kblocks(m, Q), kblocks(n, LG_CHUNK));
  logits_kernel<HP><<<grid, IT_THREADS, smem, stream>>>(q, weight, m, heads, keys, n, ks, ke, logits);
  return kcheck_launch(d, "logits_kernel");
}

extern "C" int cplab_indexer_logits(const cplab_indexer_logits_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_indexer_logits: NULL parameters");
  KCHECK_ARG(d, p->m >= 0 && p->n >= 0, "cplab_indexer_logits: negative size (m %lld, n %lld)", (long long)p->m,
             (long long)p->n);
  KCHECK_ARG(d, p->heads >= 1 && p->heads <= LG_MAX_HEADS, "cplab_indexer_logits: heads must be 1..%d, got %d",
             LG_MAX_HEADS, p->heads);
  if (p->m == 0 || p->n == 0) return 0;
  KCHECK_ARG(d, p->q && p->weight && p->keys && p->ks && p->ke && p->logits, "cplab_indexer_logits: NULL argument");
  KCHECK_ARG(d, kaligned(p->q, 4) && kaligned(p->keys, 4), "cplab_indexer_logits: q and keys must be 4-byte aligned");
  KCHECK_ARG(d, p->n <= INT32_MAX && (p->n + LG_CHUNK - 1) / LG_CHUNK <= 65535,
             "cplab_indexer_logits: %lld keys exceed the kernel's limit (2^31 - 1)", (long long)p->n);
  cudaStream_t st = kstream(stream);
  if (p->heads <= 8)
    return logits_launch<8>(p->q, p->weight, p->m, p->heads, p->keys, p->n, p->ks, p->ke, p->logits, st, d);
  if (p->heads <= 16)
    return logits_launch<16>(p->q, p->weight, p->m, p->heads, p->keys, p->n, p->ks, p->ke, p->logits, st, d);
  if (p->heads <= 32)
    return logits_launch<32>(p->q, p->weight, p->m, p->heads, p->keys, p->n, p->ks, p->ke, p->logits, st, d);
  if (p->heads <= 64)
    return logits_launch<64>(p->q, p->weight, p->m, p->heads, p->keys, p->n, p->ks, p->ke, p->logits, st, d);
  return logits_launch<128>(p->q, p->weight, p->m, p->heads, p->keys, p->n, p->ks, p->ke, p->logits, st, d);
}
