// Gathers by slot: fp8_ds_mla entries upconverted into bf16 workspace rows,
// and indexer entries copied into a contiguous key buffer. Contracts in
// cplab_kernels.h.
//
// gather_mla moves 656 + 8 bytes in (entry, slot) and 1152 out per row.
// Design of its fast path (kv_cache and out 16-byte aligned, as cudaMalloc
// gives; every entry is then 16-byte aligned too, 656 = 41·16, and every
// row, 1152 = 72·16):
//   - one warp takes GATHER_FAST_ROWS = 4 rows; it loads their 4 slots
//     (broadcast loads), then every load of the 4 entries before any store,
//     so 4 · 656 = 2.6 KiB of reads are in flight per warp behind one slot
//     latency (the first version had one row, ~20 bytes a lane, and the slot
//     and entry latencies in series: 64% of copy at 131072 rows, far less at
//     8192). ptxas (CUDA 13, sm_90a) gives it 48 registers: 5 blocks of 8
//     warps per SM, 40 warps x 2.6 KiB = 105 KiB of reads in flight per SM,
//     more than the 40-64 KiB HBM3e needs;
//   - latent part: lane l reads the 8-byte words l and l + 32 of the 512
//     fp8 bytes (tiles l / 16 and 2 + l / 16: one 4-byte scale load each,
//     the same address for 16 lanes) and writes their 8 + 8 bf16 as the
//     16-byte words l and l + 32 of the row: both accesses fully coalesced
//     (256 and 512 contiguous bytes per instruction). Reading 16-byte words
//     instead would give each lane two output words 32 bytes apart, i.e.
//     half-sector stores, or shuffles to fix that;
//   - RoPE part (128 bytes = 8 x 16): lanes 8i .. 8i + 7 copy row i's, one
//     16-byte load and store per lane for all 4 rows;
//   - padding rows (slot -1 or outside [0, num_slots)) load nothing and
//     store the poison; rows past `rows` (the grid's last warp) nothing.
// The conversion is kf_dequant8_bf16 (the same bits as kf_dequant4_bf16,
// in about a third of the instructions for what the format writes).
// Expected (not measured: no GPU): 131072 rows (238 MB) ~66-70 us
// (3.4-3.6 TB/s, 80-85% of copy), 32768 rows ~18 us (3.3 TB/s), 8192
// rows latency- and launch-bound, ~5-6 us (~2.6 TB/s).
// Any other alignment (the contract allows 4-byte caches and 8-byte rows)
// takes the general kernel: one warp per row, 4-byte entry words, 8-byte
// stores; lane l takes latent words l, l+32, l+64, l+96.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "kformat.cuh"

#define GATHER_THREADS 256
#define GATHER_ROWS_PER_BLOCK (GATHER_THREADS / 32)
#define GATHER_FAST_ROWS 4 // rows per warp of the fast path (its RoPE copy uses 32 / 4 = 8 lanes a row)
#define GATHER_FAST_ROWS_PER_BLOCK (GATHER_ROWS_PER_BLOCK * GATHER_FAST_ROWS)

// What the fast path's index arithmetic assumes of the format.
static_assert(CPLAB_MLA_ENTRY_BYTES % 16 == 0 && CPLAB_MLA_ROPE_OFFSET % 16 == 0, "entries of 16-byte words");
static_assert(CPLAB_MLA_NOPE_OFFSET == 0 && CPLAB_MLA_NOPE_DIM == 32 * 2 * 8 && CPLAB_KV_TILE == 16 * 8,
              "latent: 2 8-byte words per lane, 16 words per tile");
static_assert(CPLAB_MLA_ROPE_DIM * 2 == (32 / GATHER_FAST_ROWS) * 16, "RoPE: one 16-byte word per lane of 8");
static_assert(CPLAB_MLA_ROW_DIM * 2 % 16 == 0, "rows of 16-byte words");

static __device__ __forceinline__ bool slot_valid(int64_t s, int64_t num_slots) { return s >= 0 && s < num_slots; }

__global__ void __launch_bounds__(GATHER_THREADS)
    gather_mla_fast_kernel(const uint8_t *kv_cache, int64_t num_slots, const int64_t *slot, int64_t rows,
                           uint16_t *out) {
  const int lane = threadIdx.x % 32;
  const int64_t row0 = ((int64_t)blockIdx.x * GATHER_ROWS_PER_BLOCK + threadIdx.x / 32) * GATHER_FAST_ROWS;
  if (row0 >= rows) return; // the whole warp
  const int nrows = (int)min((int64_t)GATHER_FAST_ROWS, rows - row0);
  const uint32_t nan2 = CPLAB_BF16_POISON | (CPLAB_BF16_POISON << 16);
  const uint4 poison = make_uint4(nan2, nan2, nan2, nan2);
  const uint8_t *entry[GATHER_FAST_ROWS];
#pragma unroll
  for (int i = 0; i < GATHER_FAST_ROWS; i++) {
    int64_t s = i < nrows ? slot[row0 + i] : -1;
    entry[i] = slot_valid(s, num_slots) ? kv_cache + s * CPLAB_MLA_ENTRY_BYTES : NULL;
  }
  // Every load of the 4 entries, then the stores.
  uint2 lo[GATHER_FAST_ROWS], hi[GATHER_FAST_ROWS];
  float scale_lo[GATHER_FAST_ROWS], scale_hi[GATHER_FAST_ROWS];
#pragma unroll
  for (int i = 0; i < GATHER_FAST_ROWS; i++) {
    lo[i] = hi[i] = make_uint2(0, 0);
    scale_lo[i] = scale_hi[i] = 0.0f;
    if (entry[i]) {
      const uint2 *nope = (const uint2 *)(entry[i] + CPLAB_MLA_NOPE_OFFSET);
      const float *scale = (const float *)(entry[i] + CPLAB_MLA_SCALE_OFFSET);
      lo[i] = nope[lane];
      hi[i] = nope[lane + 32];
      scale_lo[i] = scale[lane / 16];
      scale_hi[i] = scale[2 + lane / 16];
    }
  }
  const int rope_row = lane / 8, rope_word = lane % 8;
  const uint8_t *rope_entry = entry[0];
#pragma unroll
  for (int i = 1; i < GATHER_FAST_ROWS; i++)
    if (rope_row == i) rope_entry = entry[i];
  uint4 rope = poison;
  if (rope_entry) rope = ((const uint4 *)(rope_entry + CPLAB_MLA_ROPE_OFFSET))[rope_word];
#pragma unroll
  for (int i = 0; i < GATHER_FAST_ROWS; i++) {
    if (i >= nrows) break;
    uint4 *dst = (uint4 *)(out + (row0 + i) * CPLAB_MLA_ROW_DIM);
    dst[lane] = entry[i] ? kf_dequant8_bf16(lo[i], scale_lo[i]) : poison;
    dst[lane + 32] = entry[i] ? kf_dequant8_bf16(hi[i], scale_hi[i]) : poison;
  }
  if (rope_row < nrows)
    ((uint4 *)(out + (row0 + rope_row) * CPLAB_MLA_ROW_DIM + CPLAB_MLA_NOPE_DIM))[rope_word] = rope;
}

// The general path: latent words 0..127 (4 e4m3 each; word w is in tile
// w / 32): lane l takes words l, l+32, l+64, l+96, so tile i is read by
// iteration i. RoPE words (2 bf16 each) are copied as they are.
__global__ void __launch_bounds__(GATHER_THREADS)
    gather_mla_kernel(const uint8_t *kv_cache, int64_t num_slots, const int64_t *slot, int64_t rows, uint16_t *out) {
  int64_t row = (int64_t)blockIdx.x * GATHER_ROWS_PER_BLOCK + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  int64_t s = slot[row];
  uint2 *dst = (uint2 *)(out + row * CPLAB_MLA_ROW_DIM);          // 4 bf16 per uint2: 144 of them
  uint32_t *dst_rope = (uint32_t *)(out + row * CPLAB_MLA_ROW_DIM + CPLAB_MLA_NOPE_DIM);
  if (!slot_valid(s, num_slots)) {
    const uint32_t nan2 = CPLAB_BF16_POISON | (CPLAB_BF16_POISON << 16);
    for (int i = 0; i < CPLAB_MLA_TILES; i++) dst[i * 32 + lane] = make_uint2(nan2, nan2);
    dst_rope[lane] = nan2;
    return;
  }
  const uint8_t *entry = kv_cache + s * CPLAB_MLA_ENTRY_BYTES;
  const uint32_t *nope = (const uint32_t *)(entry + CPLAB_MLA_NOPE_OFFSET);
  const float *scale = (const float *)(entry + CPLAB_MLA_SCALE_OFFSET);
  for (int i = 0; i < CPLAB_MLA_TILES; i++) dst[i * 32 + lane] = kf_dequant4_bf16(nope[i * 32 + lane], scale[i]);
  dst_rope[lane] = ((const uint32_t *)(entry + CPLAB_MLA_ROPE_OFFSET))[lane];
}

extern "C" int cplab_gather_mla(const uint8_t *kv_cache, int64_t num_slots, const int64_t *slot, int64_t rows,
                                uint16_t *out, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, rows >= 0 && num_slots >= 0, "cplab_gather_mla: negative size (rows %lld, slots %lld)",
             (long long)rows, (long long)num_slots);
  if (rows == 0) return 0;
  KCHECK_ARG(d, slot && out && (kv_cache || num_slots == 0), "cplab_gather_mla: NULL argument");
  KCHECK_ARG(d, kaligned(kv_cache, 4) && kaligned(out, 8), "cplab_gather_mla: kv_cache must be 4-byte and out 8-byte aligned");
  KCHECK_ARG(d, rows / GATHER_ROWS_PER_BLOCK < KGRID_MAX_X, "cplab_gather_mla: %lld rows too many", (long long)rows);
  if (kaligned(kv_cache, 16) && kaligned(out, 16)) {
    gather_mla_fast_kernel<<<kblocks(rows, GATHER_FAST_ROWS_PER_BLOCK), GATHER_THREADS, 0, kstream(stream)>>>(
        kv_cache, num_slots, slot, rows, out);
    return kcheck_launch(d, "gather_mla_fast_kernel");
  }
  gather_mla_kernel<<<kblocks(rows, GATHER_ROWS_PER_BLOCK), GATHER_THREADS, 0, kstream(stream)>>>(kv_cache, num_slots,
                                                                                                   slot, rows, out);
  return kcheck_launch(d, "gather_mla_kernel");
}

// 33 words per 132-byte entry (4-byte aligned only: no wider words). A warp
// takes GIDX_ROWS rows: lane i < GIDX_ROWS loads row i's slot (one
// latency, broadcast by shuffles), then every lane loads word l of each of
// the rows and lane i word 32 of row i, all before any store, so a warp
// has GIDX_ROWS entries in flight (the first version had one: 132 bytes a
// warp, 34% of copy at 131072 rows on an H200, bench/NOTES.md).
#define GIDX_ROWS 8
#define GIDX_ROWS_PER_BLOCK (GATHER_ROWS_PER_BLOCK * GIDX_ROWS)
static_assert(CPLAB_IDX_ENTRY_BYTES == 33 * 4 && GIDX_ROWS <= 32, "32 words a lane row, the 33rd by lane i");

__global__ void __launch_bounds__(GATHER_THREADS)
    gather_idx_kernel(const uint8_t *idx_cache, int64_t num_slots, const int64_t *slot, int64_t rows, uint8_t *out) {
  const int lane = threadIdx.x % 32;
  const int64_t row0 = ((int64_t)blockIdx.x * GATHER_ROWS_PER_BLOCK + threadIdx.x / 32) * GIDX_ROWS;
  if (row0 >= rows) return; // the whole warp
  const int nrows = (int)min((int64_t)GIDX_ROWS, rows - row0);
  int64_t mine = lane < nrows ? slot[row0 + lane] : -1;
  if (!slot_valid(mine, num_slots)) mine = -1;
  const uint32_t *src = (const uint32_t *)idx_cache;
  uint32_t w[GIDX_ROWS], last = 0;
#pragma unroll
  for (int i = 0; i < GIDX_ROWS; i++) {
    int64_t s = __shfl_sync(0xFFFFFFFFu, mine, i);
    w[i] = i < nrows && s >= 0 ? src[s * 33 + lane] : 0u;
  }
  if (mine >= 0) last = src[mine * 33 + 32];
#pragma unroll
  for (int i = 0; i < GIDX_ROWS; i++)
    if (i < nrows) ((uint32_t *)(out + (row0 + i) * CPLAB_IDX_ENTRY_BYTES))[lane] = w[i];
  if (lane < nrows) ((uint32_t *)(out + (row0 + lane) * CPLAB_IDX_ENTRY_BYTES))[32] = last;
}

extern "C" int cplab_gather_idx(const uint8_t *idx_cache, int64_t num_slots, const int64_t *slot, int64_t rows,
                                uint8_t *out, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, rows >= 0 && num_slots >= 0, "cplab_gather_idx: negative size (rows %lld, slots %lld)",
             (long long)rows, (long long)num_slots);
  if (rows == 0) return 0;
  KCHECK_ARG(d, slot && out && (idx_cache || num_slots == 0), "cplab_gather_idx: NULL argument");
  KCHECK_ARG(d, kaligned(idx_cache, 4) && kaligned(out, 4), "cplab_gather_idx: buffers must be 4-byte aligned");
  KCHECK_ARG(d, rows / GATHER_ROWS_PER_BLOCK < KGRID_MAX_X, "cplab_gather_idx: %lld rows too many", (long long)rows);
  gather_idx_kernel<<<kblocks(rows, GIDX_ROWS_PER_BLOCK), GATHER_THREADS, 0, kstream(stream)>>>(idx_cache, num_slots,
                                                                                                 slot, rows, out);
  return kcheck_launch(d, "gather_idx_kernel");
}
