// Gathers by slot: fp8_ds_mla entries upconverted into bf16 workspace rows,
// and indexer entries copied into a contiguous key buffer. Contracts in
// cplab_kernels.h.
//
// gather_mla moves 656 + 8 bytes in (entry, slot) and 1152 out per row.
// Design of its fast path (kv_cache and out 16-byte aligned, as cudaMalloc
// gives; every entry is then 16-byte aligned too, 656 = 41·16, and every
// row, 1152 = 72·16):
//   - one warp takes one row: its slot (a broadcast
//     load), then every load of the entry before any store (the first
//     version had ~20 bytes a lane and the slot and entry latencies in
//     series: 64% of copy at 131072 rows, far less at 8192). ptxas (CUDA
//     13, sm_90a) gives it 31 registers: 8 blocks of 8 warps an SM, so 8192
//     rows are one wave of 62 warps an SM. Fewer, fuller warps lost on an
//     H200 (bench/NOTES.md; each pair in one call, three interleaved
//     rounds): 2 rows a warp against 1 took 66.7-67.0 us against 65.2-65.4
//     at 131072 rows, 20.3-20.4 against 20.1-20.3 at 32768; 4 rows (2.6 KiB
//     in flight a warp, 48 registers: 5 blocks an SM) against 2 took
//     67.2-67.4 against 65.8-66.4 and 20.8-20.9 against 20.3-20.4;
//   - latent part: lane l reads the 8-byte words l and l + 32 of the 512
//     fp8 bytes (tiles l / 16 and 2 + l / 16: one 4-byte scale load each,
//     the same address for 16 lanes) and writes their 8 + 8 bf16 as the
//     16-byte words l and l + 32 of the row: both accesses fully coalesced
//     (256 and 512 contiguous bytes per instruction). Reading 16-byte words
//     instead would give each lane two output words 32 bytes apart, i.e.
//     half-sector stores, or shuffles to fix that;
//   - RoPE part (128 bytes = 8 x 16): lanes 0..7, one 16-byte load and
//     store each (lanes 8-31 idle);
//   - padding rows (slot -1 or outside [0, num_slots)) load nothing and
//     store the poison; rows past `rows` (the grid's last warp) nothing.
// The conversion is kf_dequant8_bf16 (the same bits as kf_dequant4_bf16,
// in about a third of the instructions for what the format writes).
// Measured (H200, 1 row a warp): 131072 rows (238 MB) 65.2-65.4 us, 32768
// rows 20.1-20.3 us, 8192 rows 8.2-8.5 us (one DRAM trip for the slots
// before the entries' and the launch weigh most there).
// Any other alignment (the contract allows 4-byte caches and 8-byte rows)
// takes the general kernel: one warp per row, 4-byte entry words, 8-byte
// stores; lane l takes latent words l, l+32, l+64, l+96.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "kformat.cuh"

#define GATHER_THREADS 256
#define GATHER_ROWS_PER_BLOCK (GATHER_THREADS / 32)

// What the fast path's index arithmetic assumes of the format.
static_assert(CPLAB_MLA_ENTRY_BYTES % 16 == 0 && CPLAB_MLA_ROPE_OFFSET % 16 == 0, "entries of 16-byte words");
static_assert(CPLAB_MLA_NOPE_OFFSET == 0 && CPLAB_MLA_NOPE_DIM == 32 * 2 * 8 && CPLAB_KV_TILE == 16 * 8,
              "latent: 2 8-byte words per lane, 16 words per tile");
static_assert(CPLAB_MLA_ROPE_DIM * 2 == 8 * 16, "RoPE: one 16-byte word per lane of 8");
static_assert(CPLAB_MLA_ROW_DIM * 2 % 16 == 0, "rows of 16-byte words");

static __device__ __forceinline__ bool slot_valid(int64_t s, int64_t num_slots) { return s >= 0 && s < num_slots; }

// One row a warp: its slot, then every load of its entry, then the stores.
__global__ void __launch_bounds__(GATHER_THREADS)
    gather_mla_fast_kernel(const uint8_t *kv_cache, int64_t num_slots, const int64_t *slot, int64_t rows,
                           uint16_t *out) {
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t)blockIdx.x * GATHER_ROWS_PER_BLOCK + threadIdx.x / 32;
  if (row >= rows) return; // the whole warp
  const uint32_t nan2 = CPLAB_BF16_POISON | (CPLAB_BF16_POISON << 16);
  const uint4 poison = make_uint4(nan2, nan2, nan2, nan2);
  const int64_t s = slot[row];
  const uint8_t *entry = slot_valid(s, num_slots) ? kv_cache + s * CPLAB_MLA_ENTRY_BYTES : NULL;
  uint2 lo = make_uint2(0, 0), hi = make_uint2(0, 0);
  float scale_lo = 0.0f, scale_hi = 0.0f;
  if (entry) {
    const uint2 *nope = (const uint2 *)(entry + CPLAB_MLA_NOPE_OFFSET);
    const float *scale = (const float *)(entry + CPLAB_MLA_SCALE_OFFSET);
    lo = nope[lane];
    hi = nope[lane + 32];
    scale_lo = scale[lane / 16];
    scale_hi = scale[2 + lane / 16];
  }
  uint4 rope = poison; // lanes 0..7: the 8 16-byte words of the RoPE part
  if (entry && lane < 8) rope = ((const uint4 *)(entry + CPLAB_MLA_ROPE_OFFSET))[lane];
  uint4 *dst = (uint4 *)(out + row * CPLAB_MLA_ROW_DIM);
  dst[lane] = entry ? kf_dequant8_bf16(lo, scale_lo) : poison;
  dst[lane + 32] = entry ? kf_dequant8_bf16(hi, scale_hi) : poison;
  if (lane < 8) ((uint4 *)(out + row * CPLAB_MLA_ROW_DIM + CPLAB_MLA_NOPE_DIM))[lane] = rope;
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

extern "C" int cplab_gather_mla(const cplab_gather_mla_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_gather_mla: NULL parameters");
  KCHECK_ARG(d, p->rows >= 0 && p->num_slots >= 0, "cplab_gather_mla: negative size (rows %lld, slots %lld)",
             (long long)p->rows, (long long)p->num_slots);
  if (p->rows == 0) return 0;
  KCHECK_ARG(d, p->slot && p->out && (p->kv_cache || p->num_slots == 0), "cplab_gather_mla: NULL argument");
  KCHECK_ARG(d, kaligned(p->kv_cache, 4) && kaligned(p->out, 8),
             "cplab_gather_mla: kv_cache must be 4-byte and out 8-byte aligned");
  KCHECK_ARG(d, p->rows / GATHER_ROWS_PER_BLOCK < KGRID_MAX_X, "cplab_gather_mla: %lld rows too many",
             (long long)p->rows);
  if (kaligned(p->kv_cache, 16) && kaligned(p->out, 16)) {
    gather_mla_fast_kernel<<<kblocks(p->rows, GATHER_ROWS_PER_BLOCK), GATHER_THREADS, 0, kstream(stream)>>>(
        p->kv_cache, p->num_slots, p->slot, p->rows, p->out);
    return kcheck_launch(d, "gather_mla_fast_kernel");
  }
  gather_mla_kernel<<<kblocks(p->rows, GATHER_ROWS_PER_BLOCK), GATHER_THREADS, 0, kstream(stream)>>>(
      p->kv_cache, p->num_slots, p->slot, p->rows, p->out);
  return kcheck_launch(d, "gather_mla_kernel");
}

// 33 words per 132-byte entry, only 4-byte aligned. A warp takes
// GIDX_ROWS rows: lane i loads row i's slot (one latency), then the rows go
// in groups of four, all of a group's loads before any store:
//   - a group whose four slots are consecutive from a multiple of 4 (the
//     production case: a run of tokens in a 64-token block) is 528 bytes,
//     16-byte aligned in the cache and, with the rows from a multiple of 4,
//     in the output: 33 16-byte words, word l by lane l and word 32 of
//     group q by lane q (the fast path, taken where the cache and the
//     output are 16-byte aligned);
//   - the other groups (padding slots, a run's ragged edges, a warp's last
//     rows) move as 4-byte words, eight rows at a time, lane i word 32 of
//     row i (version 2's code).
// Version 1 moved one entry a warp (34% of copy at 131072 rows on an H200),
// version 2 eight rows a warp in 4-byte words (55%; bench/NOTES.md).
#define GIDX_ROWS 32
#define GIDX_GROUPS (GIDX_ROWS / 4)
#define GIDX_WORDS_ROWS 8 // rows a warp moves at once as 4-byte words
#define GIDX_ROWS_PER_BLOCK (GATHER_ROWS_PER_BLOCK * GIDX_ROWS)
static_assert(CPLAB_IDX_ENTRY_BYTES == 33 * 4 && 4 * CPLAB_IDX_ENTRY_BYTES == 33 * 16, "33 words, 33 16-byte words a group");
static_assert(GIDX_ROWS == 32, "a lane a row's slot, a bit a row in the masks");

// Rows [r0, r0 + GIDX_WORDS_ROWS) of the warp's rows whose bit in `rows`
// is set, as 4-byte words; s: this lane's row's slot (-1: padding).
static __device__ __forceinline__ void gidx_words(const uint32_t *src, int64_t s, unsigned rows, int r0, uint8_t *out,
                                                  int lane) {
  uint32_t w[GIDX_WORDS_ROWS], last = 0;
#pragma unroll
  for (int i = 0; i < GIDX_WORDS_ROWS; i++) {
    int64_t si = __shfl_sync(0xFFFFFFFFu, s, r0 + i);
    w[i] = (rows >> (r0 + i) & 1u) && si >= 0 ? src[si * 33 + lane] : 0u;
  }
  bool mine = lane >= r0 && lane < r0 + GIDX_WORDS_ROWS && (rows >> lane & 1u);
  if (mine && s >= 0) last = src[s * 33 + 32];
#pragma unroll
  for (int i = 0; i < GIDX_WORDS_ROWS; i++)
    if (rows >> (r0 + i) & 1u) ((uint32_t *)(out + (int64_t)(r0 + i) * CPLAB_IDX_ENTRY_BYTES))[lane] = w[i];
  if (mine) ((uint32_t *)(out + (int64_t)lane * CPLAB_IDX_ENTRY_BYTES))[32] = last;
}

template <bool WIDE>
__global__ void __launch_bounds__(GATHER_THREADS)
    gather_idx_kernel(const uint8_t *idx_cache, int64_t num_slots, const int64_t *slot, int64_t rows, uint8_t *out) {
  const int lane = threadIdx.x % 32;
  const int64_t row0 = ((int64_t)blockIdx.x * GATHER_ROWS_PER_BLOCK + threadIdx.x / 32) * GIDX_ROWS;
  if (row0 >= rows) return; // the whole warp
  const int nrows = (int)min((int64_t)GIDX_ROWS, rows - row0);
  int64_t s = lane < nrows ? slot[row0 + lane] : -1;
  if (!slot_valid(s, num_slots)) s = -1;
  uint8_t *dst = out + row0 * CPLAB_IDX_ENTRY_BYTES;
  const unsigned present = nrows == 32 ? 0xFFFFFFFFu : (1u << nrows) - 1u;
  unsigned wide = 0; // bit q: group q moves as 16-byte words
  if (WIDE) {
    int64_t lead = __shfl_sync(0xFFFFFFFFu, s, lane & ~3);
    bool ok = lane < nrows && s >= 0 && lead % 4 == 0 && s == lead + (lane & 3);
    unsigned b = __ballot_sync(0xFFFFFFFFu, ok);
#pragma unroll
    for (int q = 0; q < GIDX_GROUPS; q++)
      if ((b >> (4 * q) & 0xFu) == 0xFu) wide |= 1u << q;
    const uint4 *src = (const uint4 *)idx_cache;
    uint4 v[GIDX_GROUPS], extra = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int q = 0; q < GIDX_GROUPS; q++) {
      int64_t l = __shfl_sync(0xFFFFFFFFu, s, 4 * q); // (slot / 4) · 33 words of 16 bytes
      v[q] = wide >> q & 1u ? src[l / 4 * 33 + lane] : make_uint4(0, 0, 0, 0);
    }
    int64_t le = __shfl_sync(0xFFFFFFFFu, s, 4 * (lane % GIDX_GROUPS));
    if (lane < GIDX_GROUPS && (wide >> lane & 1u)) extra = src[le / 4 * 33 + 32];
    uint4 *d16 = (uint4 *)dst;
#pragma unroll
    for (int q = 0; q < GIDX_GROUPS; q++)
      if (wide >> q & 1u) d16[q * 33 + lane] = v[q];
    if (lane < GIDX_GROUPS && (wide >> lane & 1u)) d16[lane * 33 + 32] = extra;
  }
  unsigned narrow = present;
#pragma unroll
  for (int q = 0; q < GIDX_GROUPS; q++)
    if (wide >> q & 1u) narrow &= ~(0xFu << (4 * q));
  const uint32_t *src = (const uint32_t *)idx_cache;
#pragma unroll
  for (int r0 = 0; r0 < GIDX_ROWS; r0 += GIDX_WORDS_ROWS)
    if (narrow >> r0 & ((1u << GIDX_WORDS_ROWS) - 1u)) gidx_words(src, s, narrow, r0, dst, lane);
}

extern "C" int cplab_gather_idx(const cplab_gather_idx_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_gather_idx: NULL parameters");
  KCHECK_ARG(d, p->rows >= 0 && p->num_slots >= 0, "cplab_gather_idx: negative size (rows %lld, slots %lld)",
             (long long)p->rows, (long long)p->num_slots);
  if (p->rows == 0) return 0;
  KCHECK_ARG(d, p->slot && p->out && (p->idx_cache || p->num_slots == 0), "cplab_gather_idx: NULL argument");
  KCHECK_ARG(d, kaligned(p->idx_cache, 4) && kaligned(p->out, 4), "cplab_gather_idx: buffers must be 4-byte aligned");
  KCHECK_ARG(d, p->rows / GATHER_ROWS_PER_BLOCK < KGRID_MAX_X, "cplab_gather_idx: %lld rows too many",
             (long long)p->rows);
  dim3 grid = kblocks(p->rows, GIDX_ROWS_PER_BLOCK);
  if (kaligned(p->idx_cache, 16) && kaligned(p->out, 16))
    gather_idx_kernel<true>
        <<<grid, GATHER_THREADS, 0, kstream(stream)>>>(p->idx_cache, p->num_slots, p->slot, p->rows, p->out);
  else
    gather_idx_kernel<false>
        <<<grid, GATHER_THREADS, 0, kstream(stream)>>>(p->idx_cache, p->num_slots, p->slot, p->rows, p->out);
  return kcheck_launch(d, "gather_idx_kernel");
}
