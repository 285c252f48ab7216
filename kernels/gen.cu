// Generated inputs on the device: cache entries through a slot list, MLA and
// indexer queries, and plain bf16 values (benchmark weights and hidden
// states). Contracts in cplab_kernels.h; the value streams are
// cplab/philox.h (shared, header-only), the formats kformat.cuh; the bf16
// values have their own hash below, one __host__ __device__ body for
// cplab_gen_bf16 and cplab_gen_bf16_host.
//
// Work split: a warp quantises one 128-value tile, each lane taking the four
// values of one Philox block (elements 4·lane .. 4·lane + 3 of the tile), so
// the tile's amax is a warp reduction and each lane stores one 4-byte word.
#include <cuda_runtime.h>

#include <math.h>
#include <string.h>

#include "check.cuh"
#include "cplab/philox.h"
#include "cplab_kernels.h"
#include "kformat.cuh"

#define GEN_CACHE_THREADS 128 // 4 warps: one per latent tile
#define GEN_Q_THREADS 128     // 4 warps: 4 indexer heads per block
#define GEN_BF16_THREADS 256
#define GEN_BF16_MAX_BLOCKS 65536u // grid-stride beyond

// The four realistic values of Philox block `blk` of a row.
static __device__ __forceinline__ void gen_block4(uint64_t seed, uint32_t layer, uint32_t tensor, uint32_t req,
                                                  uint32_t pos, uint32_t blk, float x[4]) {
  cplab_u32x4 u = cplab_rand_u32x4(seed, layer, tensor, req, pos, blk);
  cplab_u32x4 v = cplab_rand_u32x4(seed, layer, tensor | CPLAB_TENSOR_AUX, req, pos, blk);
  for (int l = 0; l < 4; l++) x[l] = cplab_rand_realistic(u.v[l], v.v[l]);
}

// Two bf16 patterns in one word, the first in the low half (little-endian).
static __device__ __forceinline__ uint32_t gen_bf16x2(float lo, float hi) { return kf_bf16(lo) | (kf_bf16(hi) << 16); }

// Warp w writes latent tile w of the entry: 128 e4m3 bytes and its scale.
static __device__ void gen_mla_tile(uint64_t seed, uint32_t layer, uint32_t req, uint32_t pos, int tile, int lane,
                                    uint8_t *entry) {
  float x[4];
  gen_block4(seed, layer, CPLAB_TENSOR_KV_NOPE, req, pos, (uint32_t)(tile * 32 + lane), x);
  int k;
  uint32_t word = kf_quantize_tile4(x, &k);
  ((uint32_t *)(entry + CPLAB_MLA_NOPE_OFFSET))[tile * 32 + lane] = word;
  if (lane == 0) ((float *)(entry + CPLAB_MLA_SCALE_OFFSET))[tile] = kf_pow2(k);
}

// Lanes 0..15 write the 64 bf16 RoPE values, four each.
static __device__ void gen_mla_rope(uint64_t seed, uint32_t layer, uint32_t req, uint32_t pos, int lane,
                                    uint8_t *entry) {
  if (lane >= CPLAB_MLA_ROPE_DIM / 4) return;
  float x[4];
  gen_block4(seed, layer, CPLAB_TENSOR_KV_ROPE, req, pos, (uint32_t)lane, x);
  uint32_t *dst = (uint32_t *)(entry + CPLAB_MLA_ROPE_OFFSET) + 2 * lane;
  dst[0] = gen_bf16x2(x[0], x[1]);
  dst[1] = gen_bf16x2(x[2], x[3]);
}

// A whole warp writes the indexer entry: the key of the row the token's row
// copies (cplab_rand_row_source: ties), one tile, and its scale.
static __device__ void gen_idx_entry(uint64_t seed, uint32_t layer, uint32_t req, uint32_t pos, int lane,
                                     uint8_t *entry) {
  uint32_t src = cplab_rand_row_source(seed, layer, CPLAB_TENSOR_INDEX_K, req, pos, CPLAB_RAND_TIE_THRESHOLD);
  float x[4];
  gen_block4(seed, layer, CPLAB_TENSOR_INDEX_K, req, src, (uint32_t)lane, x);
  int k;
  uint32_t word = kf_quantize_tile4(x, &k);
  ((uint32_t *)entry)[lane] = word;
  if (lane == 0) *(float *)(entry + CPLAB_IDX_SCALE_OFFSET) = kf_pow2(k);
}

// One block per token: warps 0..3 the latent tiles, then warp 0 the RoPE and
// warp 1 the indexer entry. Warps never share data: no block barrier.
__global__ void __launch_bounds__(GEN_CACHE_THREADS)
    gen_cache_kernel(uint64_t seed, uint32_t layer, const int32_t *req, const int32_t *pos, const int64_t *slot,
                     uint8_t *kv_cache, uint8_t *idx_cache, int64_t num_slots) {
  int64_t i = blockIdx.x;
  int64_t s = slot[i];
  if (s < 0 || s >= num_slots) return;
  uint32_t r = (uint32_t)req[i], p = (uint32_t)pos[i];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (kv_cache) {
    uint8_t *entry = kv_cache + s * CPLAB_MLA_ENTRY_BYTES;
    gen_mla_tile(seed, layer, r, p, warp, lane, entry);
    if (warp == 0) gen_mla_rope(seed, layer, r, p, lane, entry);
  }
  if (idx_cache && warp == 1) gen_idx_entry(seed, layer, r, p, lane, idx_cache + s * CPLAB_IDX_ENTRY_BYTES);
}

extern "C" int cplab_gen_cache(const cplab_gen_cache_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_gen_cache: NULL parameters");
  KCHECK_ARG(d, p->n >= 0 && p->n <= KGRID_MAX_X, "cplab_gen_cache: token count %lld out of range", (long long)p->n);
  KCHECK_ARG(d, p->num_slots >= 0, "cplab_gen_cache: negative num_slots %lld", (long long)p->num_slots);
  if (p->n == 0 || (!p->kv_cache && !p->idx_cache)) return 0;
  KCHECK_ARG(d, p->req && p->pos && p->slot, "cplab_gen_cache: NULL token arrays");
  KCHECK_ARG(d, kaligned(p->kv_cache, 4) && kaligned(p->idx_cache, 4),
             "cplab_gen_cache: caches must be 4-byte aligned");
  gen_cache_kernel<<<(unsigned)p->n, GEN_CACHE_THREADS, 0, kstream(stream)>>>(
      p->seed, p->layer, p->req, p->pos, p->slot, p->kv_cache, p->idx_cache, p->num_slots);
  return kcheck_launch(d, "gen_cache_kernel");
}

// One thread per Philox block of the MLA query: 4 consecutive columns of one
// (token, local head); 576 = 144 blocks per head, aligned to heads.
__global__ void gen_mla_query_kernel(uint64_t seed, uint32_t layer, const int32_t *req, const int32_t *pos,
                                     int64_t total, int head0, int heads_local, uint16_t *q) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= total) return;
  const int per_head = CPLAB_MLA_ROW_DIM / 4;
  int64_t row = t / ((int64_t)heads_local * per_head);
  int rest = (int)(t % ((int64_t)heads_local * per_head));
  int h = rest / per_head, b = rest % per_head;
  uint32_t blk = (uint32_t)(head0 + h) * per_head + (uint32_t)b; // element (head0+h)·576 + 4b, over 4
  float x[4];
  gen_block4(seed, layer, CPLAB_TENSOR_Q_MLA, (uint32_t)req[row], (uint32_t)pos[row], blk, x);
  uint2 w = make_uint2(gen_bf16x2(x[0], x[1]), gen_bf16x2(x[2], x[3]));
  *(uint2 *)(q + (row * heads_local + h) * CPLAB_MLA_ROW_DIM + 4 * b) = w;
}

extern "C" int cplab_gen_mla_query(const cplab_gen_mla_query_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_gen_mla_query: NULL parameters");
  KCHECK_ARG(d, p->m >= 0 && p->heads_local >= 0 && p->head0 >= 0,
             "cplab_gen_mla_query: negative size (m %lld, head0 %d, heads %d)", (long long)p->m, p->head0,
             p->heads_local);
  int64_t total = p->m * p->heads_local * (CPLAB_MLA_ROW_DIM / 4);
  if (total == 0) return 0;
  KCHECK_ARG(d, p->req && p->pos && p->q, "cplab_gen_mla_query: NULL argument");
  KCHECK_ARG(d, kaligned(p->q, 8), "cplab_gen_mla_query: q must be 8-byte aligned");
  KCHECK_ARG(d, (int64_t)p->head0 + p->heads_local <= (int64_t)(UINT32_MAX / CPLAB_MLA_ROW_DIM),
             "cplab_gen_mla_query: head index %d + %d out of range", p->head0, p->heads_local);
  KCHECK_ARG(d, total / 256 < KGRID_MAX_X, "cplab_gen_mla_query: %lld rows too many", (long long)p->m);
  gen_mla_query_kernel<<<kblocks(total, 256), 256, 0, kstream(stream)>>>(p->seed, p->layer, p->req, p->pos, total,
                                                                         p->head0, p->heads_local, p->q);
  return kcheck_launch(d, "gen_mla_query_kernel");
}

// A warp per (token, indexer head): the head's 128 values are elements
// h·128 .. h·128 + 127 of the token's row (Philox blocks h·32 + lane); the raw
// weight is the auxiliary word of element heads·128 + h (sim_indexer_query_make).
__global__ void __launch_bounds__(GEN_Q_THREADS)
    gen_indexer_query_kernel(uint64_t seed, uint32_t layer, const int32_t *req, const int32_t *pos, int64_t m,
                             int heads, float c, uint8_t *q, float *scale, float *weight) {
  int64_t g = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (g >= m * heads) return; // whole warps leave together: g is warp-uniform
  int64_t row = g / heads;
  int h = (int)(g % heads);
  uint32_t r = (uint32_t)req[row], p = (uint32_t)pos[row];
  float x[4];
  gen_block4(seed, layer, CPLAB_TENSOR_INDEX_Q, r, p, (uint32_t)(h * 32 + lane), x);
  int k;
  uint32_t word = kf_quantize_tile4(x, &k);
  ((uint32_t *)(q + g * CPLAB_IDX_DIM))[lane] = word;
  if (lane != 0) return;
  float s = kf_pow2(k);
  uint32_t u = cplab_rand_u32(seed, layer, CPLAB_TENSOR_INDEX_Q | CPLAB_TENSOR_AUX, r, p,
                              (uint32_t)(heads * CPLAB_IDX_DIM + h));
  float w = (float)(int32_t)((u >> 8) + 1u) * 0x1p-24f; // (0, 1], exact
  scale[g] = s;
  weight[g] = (w * s) * c; // w · s exact (power of two); one rounding by c
}

extern "C" int cplab_gen_indexer_query(const cplab_gen_indexer_query_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_gen_indexer_query: NULL parameters");
  KCHECK_ARG(d, p->m >= 0, "cplab_gen_indexer_query: negative m %lld", (long long)p->m);
  KCHECK_ARG(d, p->heads >= 1 && p->heads <= 128, "cplab_gen_indexer_query: heads must be 1..128, got %d", p->heads);
  if (p->m == 0) return 0;
  KCHECK_ARG(d, p->req && p->pos && p->q && p->scale && p->weight, "cplab_gen_indexer_query: NULL argument");
  KCHECK_ARG(d, kaligned(p->q, 4), "cplab_gen_indexer_query: q must be 4-byte aligned");
  int64_t threads = p->m * p->heads * 32;
  KCHECK_ARG(d, threads / GEN_Q_THREADS < KGRID_MAX_X, "cplab_gen_indexer_query: %lld rows too many", (long long)p->m);
  float c = (float)(1.0 / sqrt((double)CPLAB_IDX_DIM * (double)p->heads));
  gen_indexer_query_kernel<<<kblocks(threads, GEN_Q_THREADS), GEN_Q_THREADS, 0, kstream(stream)>>>(
      p->seed, p->layer, p->req, p->pos, p->m, p->heads, c, p->q, p->scale, p->weight);
  return kcheck_launch(d, "gen_indexer_query_kernel");
}

// ---- plain bf16 values: one __host__ __device__ body -----------------------

// splitmix64's finaliser: a bijection of 64-bit words with full avalanche.
static __host__ __device__ inline uint64_t gen_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The contract of cplab_gen_bf16_host: the hash folds seed, tensor and i in
// by one mixing round each; v is exact in float, v · scale one IEEE float
// product (nothing to contract), and the bf16 rounding is integer
// arithmetic (round to nearest even), so host and device agree bit for bit.
static __host__ __device__ inline float gen_uniform_value(uint64_t seed, uint32_t tensor, int64_t i, float scale) {
  uint64_t h = gen_mix(seed + 0x9E3779B97F4A7C15ull);
  h = gen_mix(h ^ tensor);
  h = gen_mix(h ^ (uint64_t)i);
  uint32_t u = (uint32_t)(h >> 40);                               // 24 bits
  float v = (float)((int32_t)(2 * u + 1) - (1 << 24)) * 0x1p-24f; // exact
  return scale * v;
}

static __host__ __device__ inline uint16_t gen_bf16_value(uint64_t seed, uint32_t tensor, int64_t i, float scale) {
  float x = gen_uniform_value(seed, tensor, i, scale);
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  b += 0x7FFFu + ((b >> 16) & 1u); // finite x: round to nearest even (overflow gives inf)
  return (uint16_t)(b >> 16);
}

extern "C" uint16_t cplab_gen_bf16_host(uint64_t seed, uint32_t tensor, int64_t i, float scale) {
  return gen_bf16_value(seed, tensor, i, scale);
}

extern "C" float cplab_gen_uniform_host(uint64_t seed, uint32_t tensor, int64_t i, float scale) {
  return gen_uniform_value(seed, tensor, i, scale);
}

__global__ void gen_e4m3_kernel(uint64_t seed, uint32_t tensor, uint8_t *out, int64_t count, float scale) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    out[i] = (uint8_t)kf_e4m3(gen_uniform_value(seed, tensor, i, scale));
}

extern "C" int cplab_gen_e4m3(uint64_t seed, uint32_t tensor, uint8_t *out, int64_t count, float scale, void *stream,
                              cplab_diag *d) {
  KCHECK_ARG(d, count >= 0, "cplab_gen_e4m3: negative count %lld", (long long)count);
  KCHECK_ARG(d, isfinite(scale), "cplab_gen_e4m3: scale must be finite, got %g", (double)scale);
  if (count == 0) return 0;
  KCHECK_ARG(d, out, "cplab_gen_e4m3: NULL output");
  int64_t blocks = (count + GEN_BF16_THREADS - 1) / GEN_BF16_THREADS;
  if (blocks > GEN_BF16_MAX_BLOCKS) blocks = GEN_BF16_MAX_BLOCKS;
  gen_e4m3_kernel<<<(unsigned)blocks, GEN_BF16_THREADS, 0, kstream(stream)>>>(seed, tensor, out, count, scale);
  return kcheck_launch(d, "gen_e4m3_kernel");
}

__global__ void gen_bf16_kernel(uint64_t seed, uint32_t tensor, uint16_t *out, int64_t count, float scale) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    out[i] = gen_bf16_value(seed, tensor, i, scale);
}

extern "C" int cplab_gen_bf16(uint64_t seed, uint32_t tensor, uint16_t *out, int64_t count, float scale, void *stream,
                              cplab_diag *d) {
  KCHECK_ARG(d, count >= 0, "cplab_gen_bf16: negative count %lld", (long long)count);
  KCHECK_ARG(d, isfinite(scale), "cplab_gen_bf16: scale must be finite, got %g", (double)scale);
  if (count == 0) return 0;
  KCHECK_ARG(d, out && kaligned(out, 2), "cplab_gen_bf16: NULL or misaligned output");
  int64_t blocks = (count + GEN_BF16_THREADS - 1) / GEN_BF16_THREADS;
  if (blocks > GEN_BF16_MAX_BLOCKS) blocks = GEN_BF16_MAX_BLOCKS;
  gen_bf16_kernel<<<(unsigned)blocks, GEN_BF16_THREADS, 0, kstream(stream)>>>(seed, tensor, out, count, scale);
  return kcheck_launch(d, "gen_bf16_kernel");
}
