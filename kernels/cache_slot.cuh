// The paged cache's slot rule on the device (cplab_convert_decode_topk's
// contract in cplab_kernels.h; the reference's block_table[l / B] · B +
// l mod B for a rank's local key index l), in one place for the kernels
// that write slots: the decode conversion (convert.cu), the DCP merge's
// (topk_merge.cu) and the top-k's (topk.cu). Each computes the block l / B
// its own way (a magic-number division in convert.cu) and issues the table
// load where it overlaps its other work; what a slot is stays here.
#ifndef CPLAB_KERNELS_CACHE_SLOT_CUH
#define CPLAB_KERNELS_CACHE_SLOT_CUH

#include <cuda_runtime.h>

#include <stdint.h>

// Row r's block-table row: request row_req[r]'s, or NULL where that request
// is outside [0, num_req) (the row's entries are then all -1).
static __device__ __forceinline__ const int32_t *cache_table_row(const int32_t *row_req, int64_t r,
                                                                 const int32_t *block_table, int num_req,
                                                                 int max_blocks) {
  int q = row_req[r];
  return q >= 0 && q < num_req ? block_table + (int64_t)q * max_blocks : NULL;
}

// Local index l, in block b = l / B of the row's table, as a slot: -1 past
// the table's max_blocks columns. The result keeps the low 32 bits of the
// int64 formula, as the int32 output does.
static __device__ __forceinline__ int32_t cache_slot(const int32_t *table, uint32_t l, uint32_t b, uint32_t B,
                                                     int max_blocks) {
  return b < (uint32_t)max_blocks ? (int32_t)((uint32_t)table[b] * B + (l - b * B)) : -1;
}

#endif
