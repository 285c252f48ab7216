// Top-k conversion (reference §5.2): request-relative tokens into rank-major
// workspace rows (prefill) or this rank's cache slots (decode). One thread
// per entry; contracts in cplab_kernels.h. Written from the rules, not from
// the C layout code: the two must agree independently.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"

#define CONVERT_THREADS 256

// DCP ownership (reference §2.1) of request-relative position t >= 0.
static __device__ __forceinline__ int64_t conv_owner(int64_t t, int I, int D) { return (t / I) % D; }
static __device__ __forceinline__ int64_t conv_local_idx(int64_t t, int I, int D) {
  return (t / ((int64_t)I * D)) * I + t % I;
}

__global__ void convert_prefill_kernel(const int32_t *topk, int64_t total, int k, const int32_t *row_region,
                                       const int64_t *ws_start, const int64_t *shard_rows, const int64_t *extent,
                                       int num_regions, int D, int I, int32_t *out) {
  int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= total) return;
  int32_t r = row_region[e / k];
  int64_t t = topk[e];
  int32_t v = -1;
  // Only -1 input (and the optional extent guard) invalidates a prefill
  // entry: no block-table bound, no ownership test (the bug the fix removed).
  if (r >= 0 && r < num_regions && t >= 0 && (!extent || t < extent[r]))
    v = (int32_t)(conv_owner(t, I, D) * shard_rows[r] + ws_start[r] + conv_local_idx(t, I, D));
  out[e] = v;
}

extern "C" int cplab_convert_prefill_topk(const int32_t *topk, int64_t m, int k, const int32_t *row_region,
                                          const int64_t *ws_start, const int64_t *shard_rows, const int64_t *extent,
                                          int num_regions, int dcp, int interleave, int32_t *out, void *stream,
                                          cplab_diag *d) {
  KCHECK_ARG(d, m >= 0 && k >= 0 && num_regions >= 0, "cplab_convert_prefill_topk: negative size (m %lld, k %d, regions %d)",
             (long long)m, k, num_regions);
  KCHECK_ARG(d, dcp >= 1 && interleave >= 1, "cplab_convert_prefill_topk: dcp %d and interleave %d must be >= 1", dcp,
             interleave);
  int64_t total = m * k;
  if (total == 0) return 0;
  KCHECK_ARG(d, topk && row_region && out && (num_regions == 0 || (ws_start && shard_rows)),
             "cplab_convert_prefill_topk: NULL argument");
  KCHECK_ARG(d, total / CONVERT_THREADS < KGRID_MAX_X, "cplab_convert_prefill_topk: %lld entries too many",
             (long long)total);
  convert_prefill_kernel<<<kblocks(total, CONVERT_THREADS), CONVERT_THREADS, 0, kstream(stream)>>>(
      topk, total, k, row_region, ws_start, shard_rows, extent, num_regions, dcp, interleave, out);
  return kcheck_launch(d, "convert_prefill_kernel");
}

__global__ void convert_decode_kernel(const int32_t *topk, int64_t total, int k, const int32_t *row_req,
                                      const int32_t *block_table, int num_req, int max_blocks, int B, int D,
                                      int dcp_rank, int I, int32_t *out) {
  int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= total) return;
  int32_t q = row_req[e / k];
  int64_t t = topk[e];
  int32_t v = -1;
  if (q >= 0 && q < num_req && t >= 0 && conv_owner(t, I, D) == dcp_rank) {
    int64_t lidx = conv_local_idx(t, I, D), blk = lidx / B;
    if (blk < max_blocks) v = (int32_t)((int64_t)block_table[(int64_t)q * max_blocks + blk] * B + lidx % B);
  }
  out[e] = v;
}

extern "C" int cplab_convert_decode_topk(const int32_t *topk, int64_t m, int k, const int32_t *row_req,
                                         const int32_t *block_table, int num_req, int max_blocks, int block_size,
                                         int dcp, int dcp_rank, int interleave, int32_t *out, void *stream,
                                         cplab_diag *d) {
  KCHECK_ARG(d, m >= 0 && k >= 0 && num_req >= 0 && max_blocks >= 0,
             "cplab_convert_decode_topk: negative size (m %lld, k %d, requests %d, blocks %d)", (long long)m, k,
             num_req, max_blocks);
  KCHECK_ARG(d, dcp >= 1 && interleave >= 1 && block_size >= 1 && dcp_rank >= 0 && dcp_rank < dcp,
             "cplab_convert_decode_topk: bad layout (dcp %d, rank %d, interleave %d, block %d)", dcp, dcp_rank,
             interleave, block_size);
  int64_t total = m * k;
  if (total == 0) return 0;
  KCHECK_ARG(d, topk && row_req && out && (block_table || (int64_t)num_req * max_blocks == 0),
             "cplab_convert_decode_topk: NULL argument");
  KCHECK_ARG(d, total / CONVERT_THREADS < KGRID_MAX_X, "cplab_convert_decode_topk: %lld entries too many",
             (long long)total);
  convert_decode_kernel<<<kblocks(total, CONVERT_THREADS), CONVERT_THREADS, 0, kstream(stream)>>>(
      topk, total, k, row_req, block_table, num_req, max_blocks, block_size, dcp, dcp_rank, interleave, out);
  return kcheck_launch(d, "convert_decode_kernel");
}
