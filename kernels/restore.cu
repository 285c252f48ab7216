// Restore to global token order: the rows of the PCP output all-gather
// (rank-major, each rank's padded local tokens) put back in the order of the
// step's global tokens through the plan's restore map. Contract in
// cplab_kernels.h.
//
// Design. A pure row copy through an index: per row 4 bytes of map, then
// row_elems · 2 bytes read and written (1152 for the MLA rows). The first
// version (a warp per row, 4-byte words, one load then its store per
// iteration) had 4 bytes per lane in flight, behind the map's latency:
// 56% of copy at 32768 rows. Now:
//   - rows move as 16-byte words (T = uint4) when both buffers are 16-byte
//     aligned and row_elems % 8 == 0 (1152-byte rows: 72 words); otherwise as
//     the contract's 4-byte words (T = uint32), the same code;
//   - a warp takes one row: it loads the map entry, then
//     every word of the row (lane l: words l, l+32, l+64, per pass of 96
//     words: one pass for a 576-bf16 row), and only then stores. ptxas
//     (CUDA 13, sm_90a) gives the uint4 kernel 31 registers: 8 blocks of 8
//     warps an SM, 64 x 1152 B = 72 KiB in flight per SM (HBM3e needs
//     ~40-64 KiB), and 8192 rows one wave. 2 rows a warp (45 registers, 5
//     blocks an SM) was 1-2% slower on an H200 (bench/NOTES.md): 8192 tokens
//     9.1-9.2 us against 9.0-9.1, 32768 tokens 23.5-23.8 against 23.1-23.3;
//   - index math: one 64-bit row offset per row, 32-bit word indices.
// Measured (H200, 1 row a warp): 32768 tokens (75.6 MB) 23.1-23.3 us,
// 8192 tokens 9.0-9.1 us (latency- and launch-bound: two dependent DRAM
// round trips, the map's and the row's, and the launch).
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"

#define RESTORE_THREADS 256
#define RESTORE_ROWS_PER_BLOCK (RESTORE_THREADS / 32) // a row a warp
#define RESTORE_UNROLL 3                              // words per lane in one pass

template <typename T> static __device__ __forceinline__ T restore_poison();
template <> __device__ __forceinline__ uint32_t restore_poison<uint32_t>() {
  return CPLAB_BF16_POISON | (CPLAB_BF16_POISON << 16);
}
template <> __device__ __forceinline__ uint4 restore_poison<uint4>() {
  const uint32_t nan2 = CPLAB_BF16_POISON | (CPLAB_BF16_POISON << 16);
  return make_uint4(nan2, nan2, nan2, nan2);
}

// Rows of `words` T words (words >= 1), one a warp.
template <typename T>
__global__ void __launch_bounds__(RESTORE_THREADS)
    restore_rows_kernel(const T *gathered, int64_t gathered_rows, const int32_t *restore_idx, int64_t n, int words,
                        T *out) {
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t)blockIdx.x * RESTORE_ROWS_PER_BLOCK + threadIdx.x / 32;
  if (row >= n) return; // the whole warp
  const int64_t s = restore_idx[row];
  // A map that points nowhere: poison, so the check shows it.
  const T *src = s >= 0 && s < gathered_rows ? gathered + s * words : NULL;
  T *dst = out + row * words;
  for (int w0 = 0; w0 < words; w0 += 32 * RESTORE_UNROLL) {
    T x[RESTORE_UNROLL];
#pragma unroll
    for (int u = 0; u < RESTORE_UNROLL; u++) {
      int w = w0 + u * 32 + lane;
      x[u] = restore_poison<T>();
      if (src && w < words) x[u] = src[w];
    }
#pragma unroll
    for (int u = 0; u < RESTORE_UNROLL; u++) {
      int w = w0 + u * 32 + lane;
      if (w < words) dst[w] = x[u];
    }
  }
}

extern "C" int cplab_restore_rows(const cplab_restore_rows_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_restore_rows: NULL parameters");
  KCHECK_ARG(d, p->n >= 0 && p->gathered_rows >= 0 && p->row_elems > 0 && p->row_elems % 2 == 0,
             "cplab_restore_rows: bad size (rows %lld, gathered %lld, row of %d bf16)", (long long)p->n,
             (long long)p->gathered_rows, p->row_elems);
  if (p->n == 0) return 0;
  KCHECK_ARG(d, p->restore_idx && p->out && (p->gathered || p->gathered_rows == 0),
             "cplab_restore_rows: NULL argument");
  KCHECK_ARG(d, kaligned(p->gathered, 4) && kaligned(p->out, 4), "cplab_restore_rows: buffers must be 4-byte aligned");
  KCHECK_ARG(d, p->n / RESTORE_ROWS_PER_BLOCK < KGRID_MAX_X, "cplab_restore_rows: %lld rows too many", (long long)p->n);
  if (p->row_elems % 8 == 0 && kaligned(p->gathered, 16) && kaligned(p->out, 16)) {
    restore_rows_kernel<uint4><<<kblocks(p->n, RESTORE_ROWS_PER_BLOCK), RESTORE_THREADS, 0, kstream(stream)>>>(
        (const uint4 *)p->gathered, p->gathered_rows, p->restore_idx, p->n, p->row_elems / 8, (uint4 *)p->out);
    return kcheck_launch(d, "restore_rows_kernel<uint4>");
  }
  restore_rows_kernel<uint32_t><<<kblocks(p->n, RESTORE_ROWS_PER_BLOCK), RESTORE_THREADS, 0, kstream(stream)>>>(
      (const uint32_t *)p->gathered, p->gathered_rows, p->restore_idx, p->n, p->row_elems / 2, (uint32_t *)p->out);
  return kcheck_launch(d, "restore_rows_kernel<uint32_t>");
}
