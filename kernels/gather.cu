// Gathers by slot: fp8_ds_mla entries upconverted into bf16 workspace rows,
// and indexer entries copied into a contiguous key buffer. Contracts in
// cplab_kernels.h.
//
// One warp per row. The 656-byte entry is read as 32-bit words (entries are
// 4-byte aligned: 656 = 4·164), consecutive lanes on consecutive words.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "kformat.cuh"

#define GATHER_THREADS 256
#define GATHER_ROWS_PER_BLOCK (GATHER_THREADS / 32)

static __device__ __forceinline__ bool slot_valid(int64_t s, int64_t num_slots) { return s >= 0 && s < num_slots; }

// Latent words 0..127 (4 e4m3 each; word w is in tile w / 32): lane l takes
// words l, l+32, l+64, l+96, so tile i is read by iteration i. RoPE words
// (2 bf16 each) are copied as they are.
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
  gather_mla_kernel<<<kblocks(rows, GATHER_ROWS_PER_BLOCK), GATHER_THREADS, 0, kstream(stream)>>>(kv_cache, num_slots,
                                                                                                   slot, rows, out);
  return kcheck_launch(d, "gather_mla_kernel");
}

// 33 words per 132-byte entry: lane l copies word l, lane 0 also word 32.
__global__ void __launch_bounds__(GATHER_THREADS)
    gather_idx_kernel(const uint8_t *idx_cache, int64_t num_slots, const int64_t *slot, int64_t rows, uint8_t *out) {
  int64_t row = (int64_t)blockIdx.x * GATHER_ROWS_PER_BLOCK + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  int64_t s = slot[row];
  const int words = CPLAB_IDX_ENTRY_BYTES / 4;
  uint32_t *dst = (uint32_t *)(out + row * CPLAB_IDX_ENTRY_BYTES);
  const uint32_t *src = slot_valid(s, num_slots) ? (const uint32_t *)(idx_cache + s * CPLAB_IDX_ENTRY_BYTES) : NULL;
  for (int w = lane; w < words; w += 32) dst[w] = src ? src[w] : 0u;
}

extern "C" int cplab_gather_idx(const uint8_t *idx_cache, int64_t num_slots, const int64_t *slot, int64_t rows,
                                uint8_t *out, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, rows >= 0 && num_slots >= 0, "cplab_gather_idx: negative size (rows %lld, slots %lld)",
             (long long)rows, (long long)num_slots);
  if (rows == 0) return 0;
  KCHECK_ARG(d, slot && out && (idx_cache || num_slots == 0), "cplab_gather_idx: NULL argument");
  KCHECK_ARG(d, kaligned(idx_cache, 4) && kaligned(out, 4), "cplab_gather_idx: buffers must be 4-byte aligned");
  KCHECK_ARG(d, rows / GATHER_ROWS_PER_BLOCK < KGRID_MAX_X, "cplab_gather_idx: %lld rows too many", (long long)rows);
  gather_idx_kernel<<<kblocks(rows, GATHER_ROWS_PER_BLOCK), GATHER_THREADS, 0, kstream(stream)>>>(idx_cache, num_slots,
                                                                                                   slot, rows, out);
  return kcheck_launch(d, "gather_idx_kernel");
}
