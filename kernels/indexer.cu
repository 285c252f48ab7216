// Indexer logits (reference §6.2): fp8 queries against gathered fp8 keys,
// ReLU per head, folded head weights, key scale. Contract in cplab_kernels.h.
//
// A block takes one query row and a tile of 128 consecutive keys, a thread
// one key. The query (heads × 128) and the tile's keys are decoded to float
// into shared memory once; key rows are padded to 129 floats so that the 32
// lanes of a warp, each reading its own key at the same column, hit 32
// different banks, while the query is read by all lanes at one address
// (a broadcast). Every key is computed by the same instruction sequence, so
// identical entries give bit-identical logits wherever they sit.
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "kformat.cuh"

#define LOGITS_KEYS 128 // keys per block = threads per block
#define LOGITS_KSTRIDE (CPLAB_IDX_DIM + 1)
#define LOGITS_MAX_HEADS 128

static size_t logits_smem_bytes(int heads) {
  return sizeof(float) * ((size_t)heads * CPLAB_IDX_DIM + heads + (size_t)LOGITS_KEYS * LOGITS_KSTRIDE + LOGITS_KEYS);
}

// Query row: heads·128 e4m3 bytes as words, to floats; and the weights.
static __device__ void logits_load_query(const uint8_t *q, const float *weight, int heads, float *q_s, float *w_s) {
  const uint32_t *qw = (const uint32_t *)q;
  for (int i = threadIdx.x; i < heads * CPLAB_IDX_DIM / 4; i += blockDim.x) {
    uint32_t word = qw[i];
    for (int b = 0; b < 4; b++) q_s[4 * i + b] = kf_e4m3_to_f32((word >> (8 * b)) & 0xFFu);
  }
  for (int h = threadIdx.x; h < heads; h += blockDim.x) w_s[h] = weight[h];
}

// Keys n0 .. n0 + count - 1: 32 value words per key (consecutive threads on
// consecutive words of a key: coalesced) and the scale word.
static __device__ void logits_load_keys(const uint8_t *keys, int64_t n0, int count, float *k_s, float *ks_s) {
  const int words = CPLAB_IDX_DIM / 4;
  for (int i = threadIdx.x; i < count * words; i += blockDim.x) {
    int j = i / words, w = i % words;
    uint32_t word = ((const uint32_t *)(keys + (n0 + j) * CPLAB_IDX_ENTRY_BYTES))[w];
    for (int b = 0; b < 4; b++) k_s[j * LOGITS_KSTRIDE + 4 * w + b] = kf_e4m3_to_f32((word >> (8 * b)) & 0xFFu);
  }
  for (int j = threadIdx.x; j < count; j += blockDim.x)
    ks_s[j] = *(const float *)(keys + (n0 + j) * CPLAB_IDX_ENTRY_BYTES + CPLAB_IDX_SCALE_OFFSET);
}

// sum_h w[h] · ReLU(q[h] · k), then times the key scale; fixed order.
static __device__ float logits_one(const float *q_s, const float *w_s, int heads, const float *k, float kscale) {
  float acc = 0.0f;
  for (int h = 0; h < heads; h++) {
    const float *qh = q_s + h * CPLAB_IDX_DIM;
    float dot = 0.0f;
#pragma unroll 16
    for (int c = 0; c < CPLAB_IDX_DIM; c++) dot = fmaf(qh[c], k[c], dot);
    if (dot > 0.0f) acc = fmaf(w_s[h], dot, acc);
  }
  return acc * kscale;
}

__global__ void __launch_bounds__(LOGITS_KEYS)
    logits_kernel(const uint8_t *q, const float *weight, int heads, const uint8_t *keys, int64_t n,
                  const int32_t *ks, const int32_t *ke, float *logits) {
  extern __shared__ float smem[];
  int64_t row = blockIdx.x;
  int64_t n0 = (int64_t)blockIdx.y * LOGITS_KEYS;
  int count = (int)min((int64_t)LOGITS_KEYS, n - n0);
  int64_t lo = max((int64_t)ks[row], (int64_t)0), hi = min((int64_t)ke[row], n);
  float *out = logits + row * n + n0;
  if (hi <= n0 || lo >= n0 + count || hi <= lo) { // the tile is outside the row's keys: uniform exit
    if ((int)threadIdx.x < count) out[threadIdx.x] = -INFINITY;
    return;
  }
  float *q_s = smem, *w_s = q_s + heads * CPLAB_IDX_DIM, *k_s = w_s + heads, *ks_s = k_s + LOGITS_KEYS * LOGITS_KSTRIDE;
  logits_load_query(q + row * heads * CPLAB_IDX_DIM, weight + row * heads, heads, q_s, w_s);
  logits_load_keys(keys, n0, count, k_s, ks_s);
  __syncthreads();
  int j = threadIdx.x;
  if (j >= count) return;
  int64_t col = n0 + j;
  out[j] = (col >= lo && col < hi) ? logits_one(q_s, w_s, heads, k_s + j * LOGITS_KSTRIDE, ks_s[j]) : -INFINITY;
}

extern "C" int cplab_indexer_logits(const uint8_t *q, const float *weight, int64_t m, int heads, const uint8_t *keys,
                                    int64_t n, const int32_t *ks, const int32_t *ke, float *logits, void *stream,
                                    cplab_diag *d) {
  KCHECK_ARG(d, m >= 0 && n >= 0, "cplab_indexer_logits: negative size (m %lld, n %lld)", (long long)m, (long long)n);
  KCHECK_ARG(d, heads >= 1 && heads <= LOGITS_MAX_HEADS, "cplab_indexer_logits: heads must be 1..%d, got %d",
             LOGITS_MAX_HEADS, heads);
  if (m == 0 || n == 0) return 0;
  KCHECK_ARG(d, q && weight && keys && ks && ke && logits, "cplab_indexer_logits: NULL argument");
  KCHECK_ARG(d, kaligned(q, 4) && kaligned(keys, 4), "cplab_indexer_logits: q and keys must be 4-byte aligned");
  KCHECK_ARG(d, m <= KGRID_MAX_X && (n + LOGITS_KEYS - 1) / LOGITS_KEYS <= 65535,
             "cplab_indexer_logits: %lld rows x %lld keys exceed the grid", (long long)m, (long long)n);
  size_t smem = logits_smem_bytes(heads);
  int rc = kset_smem(d, logits_kernel, smem, "logits_kernel");
  if (rc) return rc;
  dim3 grid((unsigned)m, kblocks(n, LOGITS_KEYS));
  logits_kernel<<<grid, LOGITS_KEYS, smem, kstream(stream)>>>(q, weight, heads, keys, n, ks, ke, logits);
  return kcheck_launch(d, "logits_kernel");
}
