// Decode indexer logits (reference §6.2) straight from the paged indexer
// cache: no gather, each row's keys read once through its block-table row.
// Contract in cplab_kernels.h; the head reduction is idx_tc.cuh's.
//
// A block is one warpgroup and takes one row and a chunk of its keys, in
// tiles of 64 through a ring of DL_STAGES buffers filled by cp.async while
// earlier tiles are multiplied. The kernel is bound by the key bytes (132 a
// key against 2·128·heads products), so a tile lands in shared memory as
// the cache holds it, 64 entries of 132 bytes: where the tile is one run of
// a cache block (block size a power of two >= 64, every key valid) that is 528
// copies of 16 bytes, about four a thread; elsewhere each row is copied a
// word a lane through its own slot. The products read that image directly,
// as A fragments in registers: a product only needs A's and B's k columns in
// the same order, so thread t of a quad takes words 8t + 2kk and 8t + 2kk + 1
// of its rows at k-step kk (lds.32, conflict-free at the 33-word row stride:
// row + 8t covers the banks), and the query heads are laid out once, at the
// block's start, with their words in that order (B: K-major, the 128-byte
// swizzle). On sm_90a the products are wgmma m64nHPk32 with A from
// registers: Hopper has no fp8 mma.sync (ptxas turns mma.sync e4m3 into an
// f16 HMMA pair behind byte conversions: 2,800 warp instructions a tile,
// the kernel's limit, seen by ncu), elsewhere mma.sync over the same
// fragments (B by ldmatrix). The chunk shrinks with the work so that a
// small batch still spreads over every SM. What a tile costs beyond that is
// kept out of the loop: each thread's 2·HP/8 head weights live in
// registers, the heads' wgmma descriptor is made once, the tile loop counts
// in 32 bits (version 7: 0.7-1.2% off the batch-16 and batch-64 rows on an
// H200, bench/NOTES.md). Two tiles in flight a block (a ring of 3), not
// three: 2.5% off batch 16 on an H100 (four in flight had cost 5.7% on an
// H200); the first tiles of every block are asked for at once, and fewer
// of them arrive sooner.
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "idx_tc.cuh"

#define DL_STAGES 3
#define DL_MAX_HEADS 128
#define DL_MAX_CHUNK_TILES 16 // at most 1024 keys a block
#define DL_WORDS (CPLAB_IDX_ENTRY_BYTES / 4) // 33 words a cache entry
#define DL_TILE_BYTES (IT_TILE * CPLAB_IDX_ENTRY_BYTES)
#define DL_TILE_CHUNKS (DL_TILE_BYTES / 16)

static_assert(DL_TILE_BYTES % 16 == 0, "a whole tile is 16-byte chunks");
static_assert(CPLAB_IDX_SCALE_OFFSET == 4 * IT_WORDS, "the scale is word 32 of an entry");

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
  int run_shift; // log2 of the block size where whole tiles may be copied as runs (a power of two >= 64, the
                 // cache 16-byte aligned), else -1
  float *logits;
};

// Shared memory of a block; starts 1024-byte aligned: the heads first, in
// whole swizzle atoms (1024 bytes: 8 heads of 128), then the ring (16-byte
// copies need 16-byte alignment only, DL_TILE_BYTES % 16 above).
template <int HP> struct dl_smem {
  static_assert(HP * IT_ROW % 1024 == 0, "the heads fill whole swizzle atoms, so the ring starts 16-byte aligned");
  unsigned char q[HP * IT_ROW];
  unsigned char k[DL_STAGES][DL_TILE_BYTES];
};

// Where logical word L of a head's row (k-step L / 8, word L % 8 of its 32
// bytes) comes from: the word a thread's A fragment holds there
// (dl_products).
static __device__ __forceinline__ int dl_word_src(int L) {
  int kk = L / 8, j = L % 8;
  return j < 4 ? 8 * j + 2 * kk : 8 * (j - 4) + 2 * kk + 1;
}

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

// Tile `tile` of the row's keys into ring buffer b, entry r at r·132. A run
// where the launcher allows runs (block sizes of 2^s >= 64: the block and
// slot by shifts) and the tile's block holds all 64 keys in range; else
// warp w copies its own rows (16w .. 16w + 15): lane r < 16 finds row r's
// slot once, then each row goes out as 32 word copies, one a lane, its slot
// broadcast by a shuffle, and lane r copies row r's scale. Zero rows where
// a key has no slot or is past the row's keys.
template <int HP>
static __device__ void dl_load_tile(dl_smem<HP> *s, int b, const dl_args &a, const int32_t *bt, int64_t keys,
                                    int64_t tile) {
  unsigned char *dst = s->k[b];
  uint32_t l0 = (uint32_t)(tile * IT_TILE);
  if (a.run_shift >= 0 && l0 + IT_TILE <= keys) {
    uint32_t blk = l0 >> a.run_shift;
    int32_t e = blk < (uint32_t)a.max_blocks ? bt[blk] : -1;
    int64_t first = ((int64_t)e << a.run_shift) + (l0 & ((1u << a.run_shift) - 1));
    if (e >= 0 && first + IT_TILE <= a.num_slots) {
      const uint8_t *src = a.cache + (size_t)first * CPLAB_IDX_ENTRY_BYTES;
      constexpr int whole = DL_TILE_CHUNKS / IT_THREADS; // 4 chunks every thread, then 16 threads one more
#pragma unroll
      for (int u = 0; u <= whole; u++) {
        int i = (int)threadIdx.x + u * IT_THREADS;
        if (u < whole || i < DL_TILE_CHUNKS) cp_async_16(dst + 16 * i, src + 16 * i, true);
      }
      return;
    }
  }
  int lane = threadIdx.x % 32, r0 = 16 * (threadIdx.x / 32);
  uint32_t l = l0 + r0 + (lane % 16);
  int32_t mine = l < keys ? dl_slot(a, bt, l) : -1;
  const uint8_t *src = a.cache + 4 * lane;
#pragma unroll
  for (int r = 0; r < 16; r++) {
    int32_t slot = __shfl_sync(0xFFFFFFFFu, mine, r);
    unsigned char *row = dst + (r0 + r) * CPLAB_IDX_ENTRY_BYTES;
    cp_async_4(row + 4 * lane, slot >= 0 ? src + (size_t)slot * CPLAB_IDX_ENTRY_BYTES : row, slot >= 0);
  }
  if (lane < 16) {
    unsigned char *sc = dst + (r0 + lane) * CPLAB_IDX_ENTRY_BYTES + CPLAB_IDX_SCALE_OFFSET;
    cp_async_4(sc, mine >= 0 ? a.cache + (size_t)mine * CPLAB_IDX_ENTRY_BYTES + CPLAB_IDX_SCALE_OFFSET : sc,
               mine >= 0);
  }
}

// acc[NT][4] = S for this warp's 16 keys of the tile (rows 16w + g, + 8)
// and the 8·NT head columns, in mma_m16n8k16's D layout. A fragment of
// k-step kk: words 8t + 2kk (a0, a1) and 8t + 2kk + 1 (a2, a3) of the rows.
// desc: wgmma's descriptor of the heads (k-step kk's is desc + 2kk: 32 bytes
// further, the address field in 16-byte units), made once a block.
template <int NT>
static __device__ __forceinline__ void dl_products(float (&acc)[NT][4], const unsigned char *tile,
                                                   const unsigned char *heads, uint64_t desc) {
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[j][e] = 0.0f;
  int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
  const uint32_t *r0 = (const uint32_t *)(tile + (16 * w + g) * CPLAB_IDX_ENTRY_BYTES) + 8 * t;
  const uint32_t *r1 = r0 + 8 * DL_WORDS;
  uint32_t a[IT_KSTEPS][4];
#pragma unroll
  for (int kk = 0; kk < IT_KSTEPS; kk++) {
    a[kk][0] = r0[2 * kk], a[kk][1] = r1[2 * kk], a[kk][2] = r0[2 * kk + 1], a[kk][3] = r1[2 * kk + 1];
  }
#ifdef CPLAB_HAVE_WGMMA
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < IT_KSTEPS; kk++) wgmma_e4m3_ra<NT>(acc, a[kk], desc + 2 * kk);
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) wgmma_fence_operand(acc[j][e]);
#else
  int i = lane / 8, r = lane % 8;
#pragma unroll
  for (int kk = 0; kk < IT_KSTEPS; kk++)
#pragma unroll
    for (int j = 0; j < NT; j += 2) {
      uint32_t b[4];
      ldmatrix_x4(b, heads + it_off(8 * (j + i / 2) + r, 2 * kk + i % 2)); // heads of tiles j, j + 1 x both halves
      mma_m16n8k32_e4m3(acc[j], a[kk], b);
      mma_m16n8k32_e4m3(acc[j + 1], a[kk], b + 2);
    }
#endif
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

  it_copy_rows(
      s->q, HP, [&](int c) -> const unsigned char * { return c < a.heads ? a.q + (row * a.heads + c) * IT_ROW : NULL; },
      dl_word_src);
  const unsigned nt = (unsigned)(t1 - t0); // at most DL_MAX_CHUNK_TILES
  for (unsigned st = 0; st < DL_STAGES - 1; st++) {
    if (st < nt) dl_load_tile(s, (int)st, a, bt, keys, t0 + st);
    cp_async_commit();
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // This thread's head weights, in registers for every tile (columns 8j + 2t, + 1; 0 past the heads).
  float2 wv[NT];
#pragma unroll
  for (int j = 0; j < NT; j++) {
    int c = 8 * j + 2 * t;
    wv[j].x = c < a.heads ? a.weight[row * a.heads + c] : 0.0f;
    wv[j].y = c + 1 < a.heads ? a.weight[row * a.heads + c + 1] : 0.0f;
  }
#ifdef CPLAB_HAVE_WGMMA
  const uint64_t desc = wgmma_desc(s->q, 16, 1024);
#else
  const uint64_t desc = 0; // mma.sync reads the heads by ldmatrix
#endif
  // Columns in 32 bits (n < 2^31 - 64: the launcher checks): this thread's key of tile i is col0 + 64i.
  const int kr = 16 * warp + g + 8 * it_value<1>(t, 0);
  const int col0 = (int)c0 + kr, keys_end = (int)keys, cols_end = (int)c1;
  for (unsigned i = 0; i < nt; i++) {
    const int b = (int)(i % DL_STAGES);
    cp_async_wait<DL_STAGES - 2>();
    mma_smem_ready();
    const unsigned next = i + DL_STAGES - 1;
    if (next < nt) dl_load_tile(s, (int)(next % DL_STAGES), a, bt, keys, t0 + next);
    cp_async_commit();

    float acc[NT][4];
    dl_products<NT>(acc, s->k[b], s->q, desc);
    float sum[it_sums<NT, HP>::N];
    it_head_sums_w<NT, HP>(acc, wv, sum);
    const int col = col0 + (int)i * IT_TILE;
    float scale = *(const float *)(s->k[b] + kr * CPLAB_IDX_ENTRY_BYTES + CPLAB_IDX_SCALE_OFFSET);
    if (it_owner<1>(t) && col < cols_end) out[col] = col < keys_end ? sum[0] * scale : -INFINITY;
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

extern "C" int cplab_indexer_logits_decode(const cplab_indexer_logits_decode_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_indexer_logits_decode: NULL parameters");
  KCHECK_ARG(d, p->m >= 0 && p->n >= 0 && p->num_slots >= 0,
             "cplab_indexer_logits_decode: negative size (m %lld, n %lld, slots %lld)", (long long)p->m,
             (long long)p->n, (long long)p->num_slots);
  KCHECK_ARG(d, p->heads >= 1 && p->heads <= DL_MAX_HEADS, "cplab_indexer_logits_decode: heads must be 1..%d, got %d",
             DL_MAX_HEADS, p->heads);
  KCHECK_ARG(d, p->block_size >= 1 && p->max_blocks >= 0 && p->num_req >= 0,
             "cplab_indexer_logits_decode: block size %d (>= 1), max blocks %d and requests %d (>= 0)", p->block_size,
             p->max_blocks, p->num_req);
  if (p->m == 0 || p->n == 0) return 0;
  KCHECK_ARG(d,
             p->q && p->weight && p->row_req && p->row_keys && p->logits && (p->idx_cache || p->num_slots == 0) &&
                 (p->block_table || p->max_blocks == 0 || p->num_req == 0),
             "cplab_indexer_logits_decode: NULL argument");
  KCHECK_ARG(d, kaligned(p->q, 4) && kaligned(p->idx_cache, 4),
             "cplab_indexer_logits_decode: q and the cache must be "
             "4-byte aligned");
  // The tile loop's columns are 32-bit: up to the last tile's end, n rounded up to 64.
  KCHECK_ARG(d, p->m <= KGRID_MAX_X && p->n <= INT32_MAX - IT_TILE && p->num_slots <= INT32_MAX,
             "cplab_indexer_logits_decode: %lld rows x %lld keys over %lld slots exceed the kernel's limits (keys "
             "below 2^31 - 64, slots below 2^31)",
             (long long)p->m, (long long)p->n, (long long)p->num_slots);
  dl_args a = {p->q,          p->weight,  p->m,        p->heads, p->idx_cache, p->num_slots,
               p->max_blocks && p->num_req ? p->block_table : NULL,  p->num_req,   p->max_blocks,
               p->block_size, p->row_req, p->row_keys, p->n,     0,            -1,
               p->logits};
  if (kaligned(p->idx_cache, 16) && p->block_size >= IT_TILE && (p->block_size & (p->block_size - 1)) == 0)
    for (a.run_shift = 0; (1 << a.run_shift) < p->block_size;) a.run_shift++;
  int rc = decode_chunk_tiles(p->m, p->n, d, &a.chunk_tiles);
  if (rc) return rc;
  KCHECK_ARG(d, (p->n + (int64_t)a.chunk_tiles * IT_TILE - 1) / ((int64_t)a.chunk_tiles * IT_TILE) <= 65535,
             "cplab_indexer_logits_decode: %lld keys a row exceed the grid", (long long)p->n);
  cudaStream_t st = kstream(stream);
  if (p->heads <= 16) return decode_launch<16>(a, st, d);
  if (p->heads <= 32) return decode_launch<32>(a, st, d);
  if (p->heads <= 64) return decode_launch<64>(a, st, d);
  return decode_launch<128>(a, st, d);
}
