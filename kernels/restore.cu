// Restore to global token order: the rows of the PCP output all-gather
// (rank-major, each rank's padded local tokens) put back in the order of the
// step's global tokens through the plan's restore map. Contract in
// cplab_kernels.h. One warp per row, 4-byte words.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"

#define RESTORE_THREADS 256
#define RESTORE_ROWS_PER_BLOCK (RESTORE_THREADS / 32)

__global__ void __launch_bounds__(RESTORE_THREADS)
    restore_rows_kernel(const uint32_t *gathered, int64_t gathered_rows, const int32_t *restore_idx, int64_t n,
                        int words, uint32_t *out) {
  int64_t row = (int64_t)blockIdx.x * RESTORE_ROWS_PER_BLOCK + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  int64_t src = restore_idx[row];
  const uint32_t nan2 = CPLAB_BF16_POISON | (CPLAB_BF16_POISON << 16);
  uint32_t *dst = out + row * words;
  if (src < 0 || src >= gathered_rows) { // a map that points nowhere: poison, so the check shows it
    for (int w = lane; w < words; w += 32) dst[w] = nan2;
    return;
  }
  const uint32_t *s = gathered + src * words;
  for (int w = lane; w < words; w += 32) dst[w] = s[w];
}

extern "C" int cplab_restore_rows(const uint16_t *gathered, int64_t gathered_rows, const int32_t *restore_idx,
                                  int64_t n, int row_elems, uint16_t *out, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, n >= 0 && gathered_rows >= 0 && row_elems > 0 && row_elems % 2 == 0,
             "cplab_restore_rows: bad size (rows %lld, gathered %lld, row of %d bf16)", (long long)n,
             (long long)gathered_rows, row_elems);
  if (n == 0) return 0;
  KCHECK_ARG(d, restore_idx && out && (gathered || gathered_rows == 0), "cplab_restore_rows: NULL argument");
  KCHECK_ARG(d, kaligned(gathered, 4) && kaligned(out, 4), "cplab_restore_rows: buffers must be 4-byte aligned");
  KCHECK_ARG(d, n / RESTORE_ROWS_PER_BLOCK < KGRID_MAX_X, "cplab_restore_rows: %lld rows too many", (long long)n);
  restore_rows_kernel<<<kblocks(n, RESTORE_ROWS_PER_BLOCK), RESTORE_THREADS, 0, kstream(stream)>>>(
      (const uint32_t *)gathered, gathered_rows, restore_idx, n, row_elems / 2, (uint32_t *)out);
  return kcheck_launch(d, "restore_rows_kernel");
}
