// Decode indexer logits (reference §6.2) straight from the paged indexer
// cache: no gather, each row's keys read once through its block-table row.
// Contract in cplab_kernels.h; the tile's products and the head reduction
// are idx_tc.cuh's (mma.sync: one query's heads are at most 128 columns).
//
// A block is one warpgroup and takes one row and a chunk of its keys, in
// tiles of 64 through a ring of DL_STAGES buffers filled by cp.async while
// earlier tiles are multiplied. The kernel is bound by the key bytes (132 a
// key against 2·128·heads products): the ring keeps DL_STAGES · 8.4 KB of
// each block in flight, and the chunk shrinks with the work so that a small
// batch still spreads over every SM.
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "idx_tc.cuh"

#define DL_STAGES 4
#define DL_MAX_HEADS 128
#define DL_MAX_CHUNK_TILES 16 // at most 1024 keys a block
#define DL_TILE_BYTES (IT_TILE * IT_ROW)

struct dl_args {
  const uint8_t *q;
  const float *weight;
  int64_t m;
  int heads;
  const uint8_t *cache;
  int64_t num_slots;
  const int32_t *block_table;
  int num_req, max_blocks, block_size;
  const int32_t *row_req, *row_keys;
  int64_t n;
  int chunk_tiles;
  float *logits;
};

// Shared memory of a block; starts 1024-byte aligned (the swizzle's atoms).
template <int HP> struct dl_smem {
  unsigned char q[HP * IT_ROW];
  unsigned char k[DL_STAGES][DL_TILE_BYTES];
  float kscale[DL_STAGES][IT_TILE];
  float w[HP];
};

// The cache slot of the row's local key l, -1 where the block table or the
// slot is outside its range (a zero key: scale 0, logit 0, as
// cplab_gather_idx's padding). 32-bit arithmetic: keys a row, slots a block
// and blocks are below 2^31; slots below 2^31 too (checked by the launcher).
static __device__ __forceinline__ int32_t dl_slot(const dl_args &a, const int32_t *bt, uint32_t l) {
  uint32_t bs = (uint32_t)a.block_size, blk = l / bs;
  if (blk >= (uint32_t)a.max_blocks) return -1;
  int32_t b = bt[blk];
  int64_t slot = (int64_t)b * bs + (l - blk * bs);
  return b >= 0 && slot < a.num_slots ? (int32_t)slot : -1;
}

// Tile `tile` of the row's keys into ring buffer b. Warp w copies the rows
// it multiplies (16w .. 16w + 15): lane r < 16 finds row r's slot once,
// then each row goes out as 32 word copies, one a lane, its slot broadcast
// by a shuffle; lane r also copies row r's scale.
template <int HP>
static __device__ void dl_load_tile(dl_smem<HP> *s, int b, const dl_args &a, const int32_t *bt, int64_t keys,
                                    int64_t tile) {
  int lane = threadIdx.x % 32, r0 = 16 * (threadIdx.x / 32);
  int64_t l = tile * IT_TILE + r0 + (lane % 16);
  int32_t mine = l < keys ? dl_slot(a, bt, (uint32_t)l) : -1;
  unsigned char *dst = s->k[b] + 4 * (lane % 4);
  const uint8_t *src = a.cache + 4 * lane;
#pragma unroll
  for (int r = 0; r < 16; r++) {
    int32_t slot = __shfl_sync(0xFFFFFFFFu, mine, r);
    cp_async_4(dst + it_off(r0 + r, lane / 4), slot >= 0 ? src + (size_t)slot * CPLAB_IDX_ENTRY_BYTES : dst, slot >= 0);
  }
  if (lane < 16)
    cp_async_4(&s->kscale[b][r0 + lane],
               mine >= 0 ? a.cache + (size_t)mine * CPLAB_IDX_ENTRY_BYTES + CPLAB_IDX_SCALE_OFFSET : NULL, mine >= 0);
}

template <int HP> __global__ void __launch_bounds__(IT_THREADS) logits_decode_kernel(const dl_args a) {
  constexpr int NT = HP / 8;
  extern __shared__ uint4 dl_raw[];
  dl_smem<HP> *s = (dl_smem<HP> *)mma_align_smem(dl_raw, 1024);
  int64_t row = blockIdx.x;
  int64_t keys = min((int64_t)max(a.row_keys[row], 0), a.n);
  int req = a.row_req[row];
  int64_t t0 = (int64_t)blockIdx.y * a.chunk_tiles, t1 = min(t0 + a.chunk_tiles, (keys + IT_TILE - 1) / IT_TILE);
  int64_t c0 = t0 * IT_TILE, c1 = min(a.n, c0 + (int64_t)a.chunk_tiles * IT_TILE);
  float *out = a.logits + row * a.n;
  bool req_ok = req >= 0 && req < a.num_req && a.block_table != NULL;
  const int32_t *bt = req_ok ? a.block_table + (int64_t)req * a.max_blocks : NULL;
  if (!req_ok) t1 = t0; // a row outside the table: no keys (all -inf)
  // The tiles below write their columns; -inf after them.
  for (int64_t j = max(c0, t1 * IT_TILE) + threadIdx.x; j < c1; j += blockDim.x) out[j] = -INFINITY;
  if (t1 <= t0) return;

  it_copy_rows(s->q, HP, [&](int c) -> const unsigned char * {
    return c < a.heads ? a.q + (row * a.heads + c) * IT_ROW : NULL;
  });
  for (int c = threadIdx.x; c < HP; c += blockDim.x) s->w[c] = c < a.heads ? a.weight[row * a.heads + c] : 0.0f;
  for (int st = 0; st < DL_STAGES - 1; st++) {
    if (t0 + st < t1) dl_load_tile(s, st, a, bt, keys, t0 + st);
    cp_async_commit();
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  for (int64_t tile = t0; tile < t1; tile++) {
    int b = (int)((tile - t0) % DL_STAGES);
    cp_async_wait<DL_STAGES - 2>();
    mma_smem_ready();
    int64_t next = tile + DL_STAGES - 1;
    if (next < t1) dl_load_tile(s, (int)((next - t0) % DL_STAGES), a, bt, keys, next);
    cp_async_commit();

    float acc[NT][4];
    it_products_mma<NT>(acc, s->k[b], s->q);
    float sum[it_sums<NT, HP>::N];
    it_head_sums<NT, HP>(acc, s->w, sum);
    int kr = 16 * warp + g + 8 * it_value<1>(t, 0);
    int64_t col = tile * IT_TILE + kr;
    if (it_owner<1>(t) && col < c1) out[col] = col < keys ? sum[0] * s->kscale[b][kr] : -INFINITY;
  }
  cp_async_wait<0>();
}

template <int HP> static int decode_launch(const dl_args &a, cudaStream_t stream, cplab_diag *d) {
  size_t smem = sizeof(dl_smem<HP>) + 1024;
  int rc = kset_smem(d, logits_decode_kernel<HP>, smem, "logits_decode_kernel");
  if (rc) return rc;
  dim3 grid((unsigned)a.m, kblocks(a.n, (int64_t)a.chunk_tiles * IT_TILE));
  logits_decode_kernel<HP><<<grid, IT_THREADS, smem, stream>>>(a);
  return kcheck_launch(d, "logits_decode_kernel");
}

// Tiles a block: enough blocks for about two waves of the device's SMs,
// from 2 to DL_MAX_CHUNK_TILES tiles each.
static int decode_chunk_tiles(int64_t m, int64_t n, cplab_diag *d, int *out) {
  cplab_device_facts f;
  int rc = cplab_device_facts_get(&f, d);
  if (rc) return rc;
  int64_t tiles = (n + IT_TILE - 1) / IT_TILE, want = 2 * (int64_t)f.sm_count;
  int64_t per = (m * tiles + want - 1) / want;
  *out = (int)(per < 2 ? 2 : per > DL_MAX_CHUNK_TILES ? DL_MAX_CHUNK_TILES : per);
  return 0;
}

extern "C" int cplab_indexer_logits_decode(const uint8_t *q, const float *weight, int64_t m, int heads,
                                           const uint8_t *idx_cache, int64_t num_slots, const int32_t *block_table,
                                           int num_req, int max_blocks, int block_size, const int32_t *row_req,
                                           const int32_t *row_keys, int64_t n, float *logits, void *stream,
                                           cplab_diag *d) {
  KCHECK_ARG(d, m >= 0 && n >= 0 && num_slots >= 0,
             "cplab_indexer_logits_decode: negative size (m %lld, n %lld, slots %lld)", (long long)m, (long long)n,
             (long long)num_slots);
  KCHECK_ARG(d, heads >= 1 && heads <= DL_MAX_HEADS, "cplab_indexer_logits_decode: heads must be 1..%d, got %d",
             DL_MAX_HEADS, heads);
  KCHECK_ARG(d, block_size >= 1 && max_blocks >= 0 && num_req >= 0,
             "cplab_indexer_logits_decode: block size %d (>= 1), max blocks %d and requests %d (>= 0)", block_size,
             max_blocks, num_req);
  if (m == 0 || n == 0) return 0;
  KCHECK_ARG(d, q && weight && row_req && row_keys && logits && (idx_cache || num_slots == 0) &&
                    (block_table || max_blocks == 0 || num_req == 0),
             "cplab_indexer_logits_decode: NULL argument");
  KCHECK_ARG(d, kaligned(q, 4) && kaligned(idx_cache, 4), "cplab_indexer_logits_decode: q and the cache must be "
             "4-byte aligned");
  KCHECK_ARG(d, m <= KGRID_MAX_X && n <= INT32_MAX && num_slots <= INT32_MAX,
             "cplab_indexer_logits_decode: %lld rows x %lld keys over %lld slots exceed the kernel's limits (2^31 - 1)",
             (long long)m, (long long)n, (long long)num_slots);
  dl_args a = {q,         weight,   m, heads, idx_cache, num_slots, max_blocks && num_req ? block_table : NULL,
               num_req,   max_blocks, block_size, row_req, row_keys, n, 0, logits};
  int rc = decode_chunk_tiles(m, n, d, &a.chunk_tiles);
  if (rc) return rc;
  KCHECK_ARG(d, (n + (int64_t)a.chunk_tiles * IT_TILE - 1) / ((int64_t)a.chunk_tiles * IT_TILE) <= 65535,
             "cplab_indexer_logits_decode: %lld keys a row exceed the grid", (long long)n);
  cudaStream_t st = kstream(stream);
  if (heads <= 16) return decode_launch<16>(a, st, d);
  if (heads <= 32) return decode_launch<32>(a, st, d);
  if (heads <= 64) return decode_launch<64>(a, st, d);
  return decode_launch<128>(a, st, d);
}
