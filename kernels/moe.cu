// The MoE block on the GPU: generated sharded weights, the router's top-k,
// the permutation by local expert, grouped bf16 GEMMs through cuBLASLt,
// SwiGLU, the deterministic un-permute, and the reduction of the shards'
// partial outputs. Contracts in cplab_moe.h.
//
// Kernels and launch shapes (n rows, k = top_k, E experts, L local experts,
// R padded permuted rows, d = dim, I = inter):
//   moe_gen_kernel      grid-stride over one tensor's local elements, 256 threads
//   moe_route_kernel    a warp per row (4 rows per 128-thread block): top-k by
//                       k rounds of a warp max over 64-bit keys, softmax by lane 0
//   moe_count_kernel    a block per local expert (256 threads): rows that chose it
//   moe_permute_kernel  a block per local expert (256 threads): each row's
//                       position in the expert's segment by a block-wide
//                       exclusive scan (ballot + popc), rows in ascending order
//   moe_gather_kernel   a block per permuted row (128 threads over d)
//   moe_swiglu_kernel   grid-stride over rows·I, 256 threads
//   moe_combine_kernel  a block per row (256 threads over d): the fixed-order sum
//   moe_sum_kernel / moe_to_bf16_kernel  grid-stride, 256 threads
// Only integer atomics (the mismatch flag); no float is accumulated by
// atomics, so every output is a deterministic function of the input.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.cuh"
#include "cplab_moe.h"

#define MOE_THREADS 256        // block size of the grid-stride and per-expert kernels
#define MOE_ROUTE_THREADS 128  // 4 warps: 4 rows per block
#define MOE_GATHER_THREADS 128 // threads over the columns of one permuted row
#define MOE_GRID_MAX (1u << 20)
#define MOE_SEGMENT_ROWS 8 // expert segments start at multiples of 8 rows: 16-byte aligned rows for cuBLASLt
#define MOE_MATRIX_ALIGN 8 // elements: each expert's weight matrix starts 16-byte aligned

// Bits of the plan's device flag.
#define MOE_FLAG_ROUTING 1 // some row's experts differ from the plan's
#define MOE_FLAG_COUNTS 2  // some local expert's row count differs: the output is wrong

// ---- weights: one __host__ __device__ body -------------------------------

// splitmix64's finaliser: a bijection of 64-bit words with full avalanche.
static __host__ __device__ inline uint64_t moe_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One hash per (seed, tensor, expert, row, col); each pair of 32-bit fields
// is folded in by its own mixing round, so no two index tuples share a word.
static __host__ __device__ inline uint64_t moe_hash(uint64_t seed, int tensor, int expert, int row, int col) {
  uint64_t h = moe_mix(seed + 0x9E3779B97F4A7C15ull);
  h = moe_mix(h ^ (((uint64_t)(uint32_t)tensor << 32) | (uint32_t)expert));
  return moe_mix(h ^ (((uint64_t)(uint32_t)row << 32) | (uint32_t)col));
}

// float -> bf16 bits, round to nearest even, by integer arithmetic (so host
// and device agree without relying on either's conversion); finite x only.
static __host__ __device__ inline uint16_t moe_bf16_rne(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static __host__ __device__ inline int64_t moe_fan_in(const cplab_moe_shape &s, int tensor) {
  if (tensor == CPLAB_MOE_DOWN) return s.inter;
  if (tensor == CPLAB_MOE_SHARED_DOWN) return (int64_t)s.shared * s.inter;
  return s.dim;
}

// The contract of cplab_moe_weight_host. Every float operation is exact or a
// single IEEE-rounded operation (double sqrt and division, the double ->
// float rounding, one float product), identical on host and device; there is
// no a·b + c that could be contracted.
static __host__ __device__ inline uint16_t moe_weight(const cplab_moe_shape &s, uint64_t seed, int tensor, int expert,
                                                      int row, int col) {
  uint32_t u = (uint32_t)(moe_hash(seed, tensor, expert, row, col) >> 40);  // 24 bits
  float v = (float)((int32_t)(2 * u + 1) - (1 << 24)) * 0x1p-24f;            // exact
  float a = (float)(1.0 / sqrt((double)moe_fan_in(s, tensor)));
  return moe_bf16_rne(v * a);
}

extern "C" uint16_t cplab_moe_weight_host(const cplab_moe_shape *s, uint64_t seed, int tensor, int expert, int row,
                                          int col) {
  return moe_weight(*s, seed, tensor, expert, row, col);
}

// ---- shapes ---------------------------------------------------------------

static int moe_local_experts(const cplab_moe_shape *s) {
  return s->shard < s->experts ? (s->experts - s->shard + s->shards - 1) / s->shards : 0;
}

static int moe_shared_slice(const cplab_moe_shape *s) {
  return (int)((int64_t)s->shared * s->inter / s->shards);
}

extern "C" int cplab_moe_shape_check(const cplab_moe_shape *s, cplab_diag *d) {
  KCHECK_ARG(d, s, "cplab_moe: NULL shape");
  KCHECK_ARG(d, s->dim >= 1 && s->experts >= 1 && s->inter >= 1,
             "cplab_moe: dim, experts and inter must be >= 1, got %d, %d, %d", s->dim, s->experts, s->inter);
  KCHECK_ARG(d, s->top_k >= 1 && s->top_k <= s->experts, "cplab_moe: top_k must be 1..experts (%d), got %d",
             s->experts, s->top_k);
  KCHECK_ARG(d, s->shared >= 0, "cplab_moe: shared must be >= 0, got %d", s->shared);
  KCHECK_ARG(d, s->shards >= 1 && s->shard >= 0 && s->shard < s->shards,
             "cplab_moe: shard must be 0..shards-1 with shards >= 1, got shard %d of %d", s->shard, s->shards);
  int64_t shared_inter = (int64_t)s->shared * s->inter;
  KCHECK_ARG(d, 2 * (int64_t)s->inter <= INT32_MAX && 2 * shared_inter <= INT32_MAX,
             "cplab_moe: 2·inter and 2·shared·inter must be below 2^31, got inter %d, shared %d", s->inter,
             s->shared);
  KCHECK_ARG(d, shared_inter % s->shards == 0,
             "cplab_moe: the shared intermediate size %lld (shared %d · inter %d) must divide into %d equal slices",
             (long long)shared_inter, s->shared, s->inter, s->shards);
  return 0;
}

// ---- the model: weights of one shard ---------------------------------------

// How the local matrices of one tensor map to global indices: matrix i is
// global expert expert0 + i·expert_step; local row r < row_split is global
// row row_base0 + r, else row_base1 + (r - row_split); local column c is
// global column col_base + c.
struct moe_gen_desc {
  int tensor;
  int64_t count, rows, cols, stride;
  int expert0, expert_step;
  int row_split, row_base0, row_base1, col_base;
};

struct cplab_moe {
  cplab_moe_shape shape;
  uint64_t seed;
  int local_experts; // L
  int shared_slice;  // Is
  moe_gen_desc desc[CPLAB_MOE_TENSORS];
  uint16_t *w[CPLAB_MOE_TENSORS]; // device, desc[t].count · desc[t].stride elements
};

static int64_t moe_round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

static moe_gen_desc moe_desc_make(int tensor, int64_t count, int64_t rows, int64_t cols) {
  moe_gen_desc g;
  memset(&g, 0, sizeof g);
  g.tensor = tensor;
  g.count = rows > 0 && cols > 0 ? count : 0;
  g.rows = rows;
  g.cols = cols;
  g.stride = moe_round_up(rows * cols, MOE_MATRIX_ALIGN);
  g.row_split = (int)rows; // every row maps to row_base0 + r unless a split is set
  return g;
}

// The five tensors of shard q (cplab_moe_weights' table).
static void moe_describe(cplab_moe *m) {
  const cplab_moe_shape *s = &m->shape;
  int q = s->shard, S = s->shards, L = m->local_experts, Is = m->shared_slice;
  int shared_inter = s->shared * s->inter;
  m->desc[CPLAB_MOE_ROUTER] = moe_desc_make(CPLAB_MOE_ROUTER, 1, s->experts, s->dim);
  moe_gen_desc *g = &m->desc[CPLAB_MOE_GATE_UP];
  *g = moe_desc_make(CPLAB_MOE_GATE_UP, L, 2 * (int64_t)s->inter, s->dim);
  g->expert0 = q, g->expert_step = S;
  g = &m->desc[CPLAB_MOE_DOWN];
  *g = moe_desc_make(CPLAB_MOE_DOWN, L, s->dim, s->inter);
  g->expert0 = q, g->expert_step = S;
  g = &m->desc[CPLAB_MOE_SHARED_GATE_UP];
  *g = moe_desc_make(CPLAB_MOE_SHARED_GATE_UP, 1, 2 * (int64_t)Is, s->dim);
  g->row_split = Is, g->row_base0 = q * Is, g->row_base1 = shared_inter + q * Is; // Wg slice, then Wu slice
  g = &m->desc[CPLAB_MOE_SHARED_DOWN];
  *g = moe_desc_make(CPLAB_MOE_SHARED_DOWN, 1, s->dim, Is);
  g->col_base = q * Is; // Wd's columns of the slice
}

__global__ void __launch_bounds__(MOE_THREADS)
    moe_gen_kernel(cplab_moe_shape s, uint64_t seed, moe_gen_desc g, uint16_t *out) {
  int64_t per = g.rows * g.cols, total = g.count * per;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = t / per, rc = t % per;
    int r = (int)(rc / g.cols), c = (int)(rc % g.cols);
    int row = r < g.row_split ? g.row_base0 + r : g.row_base1 + (r - g.row_split);
    int expert = g.expert0 + (int)i * g.expert_step;
    out[i * g.stride + rc] = moe_weight(s, seed, g.tensor, expert, row, g.col_base + c);
  }
}

// Grid of a grid-stride kernel over `total` items.
static unsigned moe_grid(int64_t total) {
  unsigned b = kblocks(total, MOE_THREADS);
  return b < MOE_GRID_MAX ? b : MOE_GRID_MAX;
}

// Allocate and generate every tensor (the padding between matrices zeroed).
static int moe_generate(cplab_moe *m, cplab_diag *d) {
  for (int t = 0; t < CPLAB_MOE_TENSORS; t++) {
    const moe_gen_desc *g = &m->desc[t];
    size_t bytes = (size_t)(g->count * g->stride) * sizeof(uint16_t);
    if (bytes == 0) continue;
    KCHECK_CUDA(d, cudaMalloc((void **)&m->w[t], bytes));
    KCHECK_CUDA(d, cudaMemset(m->w[t], 0, bytes));
    moe_gen_kernel<<<moe_grid(g->count * g->rows * g->cols), MOE_THREADS>>>(m->shape, m->seed, *g, m->w[t]);
    int rc = kcheck_launch(d, "moe_gen_kernel");
    if (rc) return rc;
  }
  KCHECK_CUDA(d, cudaDeviceSynchronize());
  return 0;
}

extern "C" void cplab_moe_destroy(cplab_moe *m) {
  if (!m) return;
  for (int t = 0; t < CPLAB_MOE_TENSORS; t++) cudaFree(m->w[t]); // best effort: nothing to report to
  free(m);
}

extern "C" int cplab_moe_create(const cplab_moe_shape *s, uint64_t seed, cplab_moe **out, cplab_diag *d) {
  KCHECK_ARG(d, out, "cplab_moe_create: NULL result pointer");
  *out = NULL;
  int rc = cplab_moe_shape_check(s, d);
  if (rc) return rc;
  cplab_moe *m = (cplab_moe *)calloc(1, sizeof *m);
  if (!m) return cplab_diag_set(d, CPLAB_ENOMEM, "cplab_moe_create: out of host memory");
  m->shape = *s;
  m->seed = seed;
  m->local_experts = moe_local_experts(s);
  m->shared_slice = moe_shared_slice(s);
  moe_describe(m);
  rc = moe_generate(m, d);
  if (rc) {
    cplab_diag_prefix(d, "cplab_moe_create: ");
    cplab_moe_destroy(m);
    return rc;
  }
  *out = m;
  return 0;
}

extern "C" int cplab_moe_weights(const cplab_moe *m, int tensor, cplab_moe_view *v, cplab_diag *d) {
  KCHECK_ARG(d, m && v, "cplab_moe_weights: NULL argument");
  KCHECK_ARG(d, tensor >= 0 && tensor < CPLAB_MOE_TENSORS, "cplab_moe_weights: no tensor %d", tensor);
  const moe_gen_desc *g = &m->desc[tensor];
  v->dev = m->w[tensor];
  v->count = g->count;
  v->rows = g->rows;
  v->cols = g->cols;
  v->stride = g->stride;
  return 0;
}

extern "C" const cplab_moe_shape *cplab_moe_shape_of(const cplab_moe *m) { return m ? &m->shape : NULL; }

// ---- routing kernels --------------------------------------------------------

static __device__ __forceinline__ float moe_bf16_to_f32(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }

// The order of (logit, expert) as one 64-bit key: the logit's bits made
// order-preserving (-0 first made +0), then 0xFFFFFFFF - expert, so a larger
// key is a higher logit, then a lower expert index (topk.cu's rule). Keys of
// distinct experts are distinct, and every real key is above 0.
static __device__ __forceinline__ uint64_t moe_route_key(float logit, int expert) {
  uint32_t b = logit == 0.0f ? 0u : __float_as_uint(logit);
  uint32_t ord = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return ((uint64_t)ord << 32) | (uint64_t)(0xFFFFFFFFu - (uint32_t)expert);
}

// A warp per row: k rounds, round j taking the largest key below round j-1's
// (so no "taken" marks), then lane 0 turns the chosen logits into the
// softmax. With plan_experts, a row whose list differs from the plan's sets
// MOE_FLAG_ROUTING.
__global__ void __launch_bounds__(MOE_ROUTE_THREADS)
    moe_route_kernel(const uint16_t *logits, int64_t n, int E, int k, int32_t *experts, float *gates,
                     const int32_t *plan_experts, int *flag) {
  int64_t row = (int64_t)blockIdx.x * (MOE_ROUTE_THREADS / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return; // the whole warp leaves together
  const uint16_t *lrow = logits + row * E;
  int32_t *erow = experts + row * k;
  float *grow = gates + row * k;
  uint64_t prev = 0;
  for (int j = 0; j < k; j++) {
    uint64_t best = 0; // below every real key
    for (int e = lane; e < E; e += 32) {
      uint64_t key = moe_route_key(moe_bf16_to_f32(lrow[e]), e);
      if ((j == 0 || key < prev) && key > best) best = key;
    }
    for (int off = 16; off > 0; off >>= 1) {
      uint64_t other = __shfl_xor_sync(0xFFFFFFFFu, best, off);
      best = other > best ? other : best;
    }
    prev = best; // k <= E: a real key was found
    if (lane == 0) {
      int e = (int)(0xFFFFFFFFu - (uint32_t)best);
      erow[j] = e;
      grow[j] = moe_bf16_to_f32(lrow[e]); // the logit for now; the gate below
    }
  }
  if (lane != 0) return;
  float top = grow[0], sum = 0.0f; // the largest chosen logit: exp never overflows
  for (int j = 0; j < k; j++) sum += expf(grow[j] - top);
  bool changed = false;
  for (int j = 0; j < k; j++) {
    grow[j] = expf(grow[j] - top) / sum;
    if (plan_experts) changed |= plan_experts[row * k + j] != erow[j];
  }
  if (changed) atomicOr(flag, MOE_FLAG_ROUTING);
}

// The slot j of the row's top-k list holding expert e, or -1.
static __device__ __forceinline__ int moe_pick(const int32_t *row_experts, int k, int e) {
  for (int j = 0; j < k; j++)
    if (row_experts[j] == e) return j;
  return -1;
}

// Block l counts the rows that chose local expert l (global shard + l·S).
__global__ void __launch_bounds__(MOE_THREADS)
    moe_count_kernel(const int32_t *experts, int64_t n, int k, int shard, int S, int32_t *counts) {
  int e = shard + (int)blockIdx.x * S;
  int total = 0;
  for (int64_t base = 0; base < n; base += blockDim.x) {
    int64_t i = base + threadIdx.x;
    total += __syncthreads_count(i < n && moe_pick(experts + i * k, k, e) >= 0);
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

// Block l places the rows that chose local expert l at seg_off[l] + their
// rank among those rows (ascending row order): perm_row[slot] = row and
// slot_of[row][j] = slot. Rows beyond the plan's count are dropped (a
// changed routing never writes outside the segment); a count different from
// the plan's sets MOE_FLAG_COUNTS. The rank is a block-wide exclusive scan
// of "chose e" over chunks of MOE_THREADS rows: within a warp by ballot and
// popc, across warps by the per-warp totals in shared memory.
__global__ void __launch_bounds__(MOE_THREADS)
    moe_permute_kernel(const int32_t *experts, int64_t n, int k, int shard, int S, const int32_t *plan_count,
                       const int32_t *seg_off, int32_t *perm_row, int32_t *slot_of, int *flag) {
  __shared__ int warp_total[MOE_THREADS / 32];
  int l = blockIdx.x, e = shard + l * S, cap = plan_count[l], start = seg_off[l];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t placed = 0; // rows of earlier chunks; the same in every thread
  for (int64_t base = 0; base < n; base += MOE_THREADS) {
    int64_t i = base + threadIdx.x;
    int j = i < n ? moe_pick(experts + i * k, k, e) : -1;
    unsigned ballot = __ballot_sync(0xFFFFFFFFu, j >= 0);
    if (lane == 0) warp_total[warp] = __popc(ballot);
    __syncthreads();
    int before = 0, chunk = 0;
    for (int w = 0; w < MOE_THREADS / 32; w++) {
      if (w < warp) before += warp_total[w];
      chunk += warp_total[w];
    }
    int64_t pos = placed + before + __popc(ballot & ((1u << lane) - 1u));
    if (j >= 0 && pos < cap) {
      int32_t slot = start + (int32_t)pos;
      perm_row[slot] = (int32_t)i;
      slot_of[i * k + j] = slot;
    }
    placed += chunk;
    __syncthreads(); // warp_total is rewritten by the next chunk
  }
  if (threadIdx.x == 0 && placed != cap) atomicOr(flag, MOE_FLAG_COUNTS);
}

// xp[slot] = x[perm_row[slot]]; padding slots (-1) are zero rows.
__global__ void __launch_bounds__(MOE_GATHER_THREADS)
    moe_gather_kernel(const uint16_t *x, int64_t n, int dim, const int32_t *perm_row, uint16_t *xp) {
  int64_t slot = blockIdx.x;
  int32_t src = perm_row[slot];
  uint16_t *dst = xp + slot * dim;
  if (src >= 0 && src < n) {
    const uint16_t *s = x + (int64_t)src * dim;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) dst[c] = s[c];
  } else {
    for (int c = threadIdx.x; c < dim; c += blockDim.x) dst[c] = 0;
  }
}

// h[r][c] = bf16(silu(g) · u), g = gu[r][c], u = gu[r][I + c], in fp32;
// silu(g) = g / (1 + e^-g) (-0 for very negative g, where e^-g is inf).
__global__ void __launch_bounds__(MOE_THREADS)
    moe_swiglu_kernel(const uint16_t *gu, int64_t rows, int inter, uint16_t *h) {
  int64_t total = rows * inter;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = t / inter, c = t % inter;
    float g = moe_bf16_to_f32(gu[r * 2 * inter + c]), u = moe_bf16_to_f32(gu[r * 2 * inter + inter + c]);
    float silu = g / (1.0f + expf(-g));
    h[t] = __bfloat16_as_ushort(__float2bfloat16_rn(silu * u));
  }
}

// out[i][c] = sum_j gate[i][j] · yp[slot_of[i][j]][c] over the row's local
// experts, j ascending, then + ys[i][c] (the shared slice; ys may be NULL).
__global__ void __launch_bounds__(MOE_THREADS)
    moe_combine_kernel(const float *gates, const int32_t *slot_of, int k, const uint16_t *yp, int64_t padded_rows,
                       const uint16_t *ys, int dim, float *out) {
  int64_t i = blockIdx.x;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < k; j++) {
      int32_t s = slot_of[i * k + j];
      if (s >= 0 && s < padded_rows) acc += gates[i * k + j] * moe_bf16_to_f32(yp[(int64_t)s * dim + c]);
    }
    if (ys) acc += moe_bf16_to_f32(ys[i * dim + c]);
    out[i * dim + c] = acc;
  }
}

// ---- the plan ------------------------------------------------------------------

struct cplab_moe_plan {
  cplab_moe *m;
  cplab_gemm *gemm;
  int64_t n, routed_rows, padded_rows;
  int L, active;
  int32_t *counts;  // host [L]: rows of each local expert
  int64_t *seg_off; // host [L]: first row of each expert's segment
  int32_t *seg_off32; // the same as uploaded (the device permutation's offsets)
  // device
  uint16_t *logits;                          // [n][E]
  int32_t *experts, *plan_experts, *slot_of; // [n][k]
  float *gates;                              // [n][k]
  int32_t *d_counts, *d_seg_off;             // [L]
  int32_t *perm_row;                         // [R]
  uint16_t *xp, *gu, *h, *yp;                // [R][d], [R][2I], [R][I], [R][d]
  uint16_t *sgu, *sh, *ys;                   // [n][2Is], [n][Is], [n][d]
  int *flag;
};

extern "C" void cplab_moe_plan_destroy(cplab_moe_plan *p) {
  if (!p) return;
  void *dev[] = {p->logits, p->experts, p->plan_experts, p->slot_of, p->gates, p->d_counts, p->d_seg_off,
                 p->perm_row, p->xp,      p->gu,      p->h,         p->yp,       p->sgu,   p->sh,
                 p->ys,     p->flag};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) cudaFree(dev[i]); // best effort
  free(p->counts);
  free(p->seg_off);
  free(p->seg_off32);
  free(p);
}

// cudaMalloc of `bytes` (0: NULL) into *ptr.
static int moe_alloc(void *ptr, size_t bytes, cplab_diag *d) {
  void **slot = (void **)ptr;
  *slot = NULL;
  if (bytes == 0) return 0;
  cudaError_t err = cudaMalloc(slot, bytes);
  if (err != cudaSuccess)
    return cplab_diag_set(d, err == cudaErrorMemoryAllocation ? CPLAB_ENOMEM : CPLAB_ECUDA,
                          "cudaMalloc(%zu bytes): %s", bytes, cudaGetErrorString(err));
  return 0;
}

// The router GEMM and the top-k on stream s: logits, experts and gates of
// the n rows; with check, routing different from the plan's sets the flag.
static int moe_route(cplab_moe_plan *p, const uint16_t *x, bool check, cudaStream_t s, cplab_diag *d) {
  const cplab_moe_shape *sh = &p->m->shape;
  int rc = cplab_gemm_bf16(p->gemm, p->n, sh->experts, sh->dim, x, p->m->w[CPLAB_MOE_ROUTER], p->logits, s, d);
  if (rc) return rc;
  const int rows_per_block = MOE_ROUTE_THREADS / 32;
  moe_route_kernel<<<kblocks(p->n, rows_per_block), MOE_ROUTE_THREADS, 0, s>>>(
      p->logits, p->n, sh->experts, sh->top_k, p->experts, p->gates, check ? p->plan_experts : NULL, p->flag);
  return kcheck_launch(d, "moe_route_kernel");
}

// Plan step 1: the routing buffers, one router pass, the per-expert counts
// (read back) and the snapshot of the routing later runs are checked against.
static int plan_route_and_count(cplab_moe_plan *p, const uint16_t *x, cplab_diag *d) {
  const cplab_moe_shape *s = &p->m->shape;
  size_t nk = (size_t)p->n * s->top_k, L = (size_t)p->L;
  int rc = moe_alloc(&p->logits, (size_t)p->n * s->experts * 2, d);
  if (!rc) rc = moe_alloc(&p->experts, nk * 4, d);
  if (!rc) rc = moe_alloc(&p->plan_experts, nk * 4, d);
  if (!rc) rc = moe_alloc(&p->slot_of, nk * 4, d);
  if (!rc) rc = moe_alloc(&p->gates, nk * 4, d);
  if (!rc) rc = moe_alloc(&p->d_counts, L * 4, d);
  if (!rc) rc = moe_alloc(&p->d_seg_off, L * 4, d);
  if (!rc) rc = moe_alloc(&p->flag, sizeof(int), d);
  if (rc) return rc;
  KCHECK_CUDA(d, cudaMemset(p->flag, 0, sizeof(int)));
  KCHECK_CUDA(d, cudaDeviceSynchronize()); // x may have been written on any stream
  rc = moe_route(p, x, false, NULL, d);
  if (rc) return rc;
  if (p->L > 0) {
    moe_count_kernel<<<(unsigned)p->L, MOE_THREADS>>>(p->experts, p->n, s->top_k, s->shard, s->shards, p->d_counts);
    rc = kcheck_launch(d, "moe_count_kernel");
    if (rc) return rc;
  }
  if (L > 0) KCHECK_CUDA(d, cudaMemcpy(p->counts, p->d_counts, L * 4, cudaMemcpyDeviceToHost));
  KCHECK_CUDA(d, cudaMemcpy(p->plan_experts, p->experts, nk * 4, cudaMemcpyDeviceToDevice));
  return 0;
}

// Plan step 2: segment offsets (multiples of MOE_SEGMENT_ROWS) and sizes.
static int plan_segments(cplab_moe_plan *p, cplab_diag *d) {
  int64_t off = 0;
  for (int l = 0; l < p->L; l++) {
    p->seg_off[l] = off;
    p->routed_rows += p->counts[l];
    p->active += p->counts[l] > 0;
    off += moe_round_up(p->counts[l], MOE_SEGMENT_ROWS);
  }
  p->padded_rows = off;
  KCHECK_ARG(d, off <= INT32_MAX, "%lld permuted rows exceed int32 slots", (long long)off);
  for (int l = 0; l < p->L; l++) p->seg_off32[l] = (int32_t)p->seg_off[l];
  if (p->L > 0)
    KCHECK_CUDA(d, cudaMemcpy(p->d_seg_off, p->seg_off32, (size_t)p->L * 4, cudaMemcpyHostToDevice));
  return 0;
}

// Plan step 3: the work buffers, zeroed so that padding rows hold zeros
// (they are computed over but never read).
static int plan_buffers(cplab_moe_plan *p, cplab_diag *d) {
  const cplab_moe_shape *s = &p->m->shape;
  size_t R = (size_t)p->padded_rows, n = (size_t)p->n, dim = (size_t)s->dim, I = (size_t)s->inter;
  size_t Is = (size_t)p->m->shared_slice;
  struct {
    void *ptr;
    size_t bytes;
  } buf[] = {{&p->perm_row, R * 4},       {&p->xp, R * dim * 2},  {&p->gu, R * 2 * I * 2}, {&p->h, R * I * 2},
             {&p->yp, R * dim * 2},       {&p->sgu, n * 2 * Is * 2}, {&p->sh, n * Is * 2},
             {&p->ys, Is ? n * dim * 2 : 0}};
  for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++) {
    int rc = moe_alloc(buf[i].ptr, buf[i].bytes, d);
    if (rc) return rc;
    void *dev = *(void **)buf[i].ptr;
    if (dev) KCHECK_CUDA(d, cudaMemset(dev, 0, buf[i].bytes));
  }
  KCHECK_CUDA(d, cudaDeviceSynchronize());
  return 0;
}

extern "C" int cplab_moe_plan_create(cplab_moe *m, cplab_gemm *gemm, const uint16_t *x, int64_t n,
                                     cplab_moe_plan **out, cplab_diag *d) {
  KCHECK_ARG(d, out, "cplab_moe_plan_create: NULL result pointer");
  *out = NULL;
  KCHECK_ARG(d, m && gemm, "cplab_moe_plan_create: NULL model or GEMM handle");
  KCHECK_ARG(d, n >= 0 && n * (int64_t)m->shape.top_k <= INT32_MAX,
             "cplab_moe_plan_create: %lld rows: n·top_k must be in [0, 2^31)", (long long)n);
  KCHECK_ARG(d, x || n == 0, "cplab_moe_plan_create: NULL x");
  cplab_moe_plan *p = (cplab_moe_plan *)calloc(1, sizeof *p);
  size_t L1 = (size_t)(m->local_experts ? m->local_experts : 1);
  if (p) {
    p->counts = (int32_t *)calloc(L1, sizeof *p->counts);
    p->seg_off = (int64_t *)calloc(L1, sizeof *p->seg_off);
    p->seg_off32 = (int32_t *)calloc(L1, sizeof *p->seg_off32);
  }
  if (!p || !p->counts || !p->seg_off || !p->seg_off32) {
    cplab_moe_plan_destroy(p);
    return cplab_diag_set(d, CPLAB_ENOMEM, "cplab_moe_plan_create: out of host memory");
  }
  p->m = m;
  p->gemm = gemm;
  p->n = n;
  p->L = m->local_experts;
  int rc = 0;
  if (n > 0) {
    rc = plan_route_and_count(p, x, d);
    if (!rc) rc = plan_segments(p, d);
    if (!rc) rc = plan_buffers(p, d);
  }
  if (rc) {
    cplab_diag_prefix(d, "cplab_moe_plan_create: ");
    cplab_moe_plan_destroy(p);
    return rc;
  }
  *out = p;
  return 0;
}

extern "C" int cplab_moe_plan_info_of(const cplab_moe_plan *p, cplab_moe_plan_info *info, cplab_diag *d) {
  KCHECK_ARG(d, p && info, "cplab_moe_plan_info_of: NULL argument");
  info->rows = p->n;
  info->local_experts = p->L;
  info->active_experts = p->active;
  info->routed_rows = p->routed_rows;
  info->padded_rows = p->padded_rows;
  info->counts = p->counts;
  return 0;
}

extern "C" int cplab_moe_plan_routing(const cplab_moe_plan *p, const int32_t **experts, const float **gates,
                                      const uint16_t **logits, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_moe_plan_routing: NULL plan");
  if (experts) *experts = p->experts;
  if (gates) *gates = p->gates;
  if (logits) *logits = p->logits;
  return 0;
}

extern "C" int cplab_moe_plan_check(cplab_moe_plan *p, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_moe_plan_check: NULL plan");
  if (!p->flag) return 0; // an empty plan routes nothing
  int flag = 0;
  KCHECK_CUDA(d, cudaDeviceSynchronize());
  KCHECK_CUDA(d, cudaMemcpy(&flag, p->flag, sizeof flag, cudaMemcpyDeviceToHost));
  KCHECK_CUDA(d, cudaMemset(p->flag, 0, sizeof(int)));
  KCHECK_CUDA(d, cudaDeviceSynchronize()); // cleared before a run on any stream can set it again
  if (flag & MOE_FLAG_COUNTS)
    return cplab_diag_set(d, CPLAB_EMISMATCH,
                          "routing changed since the plan: some local expert's row count differs from the plan's "
                          "(the output of those runs is wrong; make a new plan)");
  if (flag & MOE_FLAG_ROUTING)
    return cplab_diag_set(d, CPLAB_EMISMATCH,
                          "routing changed since the plan: rows chose other experts, with the same per-expert row "
                          "counts (the output of those runs is still right)");
  return 0;
}

// ---- the run -----------------------------------------------------------------------

// One GEMM per local expert with rows, on that expert's segment:
// out_seg[count][n_out] = in_seg[count][k_in] · W_l[n_out][k_in]^T.
static int moe_grouped_gemm(cplab_moe_plan *p, const char *what, const uint16_t *in, int64_t k_in,
                            const uint16_t *w, int64_t w_stride, int64_t n_out, uint16_t *out, cudaStream_t s,
                            cplab_diag *d) {
  for (int l = 0; l < p->L; l++) {
    if (p->counts[l] == 0) continue;
    int64_t r0 = p->seg_off[l];
    int rc = cplab_gemm_bf16(p->gemm, p->counts[l], n_out, k_in, in + r0 * k_in, w + l * w_stride, out + r0 * n_out,
                             s, d);
    if (rc) {
      cplab_diag_prefix(d, "%s GEMM of local expert %d (%d rows): ", what, l, p->counts[l]);
      return rc;
    }
  }
  return 0;
}

static int moe_swiglu(const uint16_t *gu, int64_t rows, int inter, uint16_t *h, cudaStream_t s, cplab_diag *d) {
  if (rows == 0) return 0;
  moe_swiglu_kernel<<<moe_grid(rows * inter), MOE_THREADS, 0, s>>>(gu, rows, inter, h);
  return kcheck_launch(d, "moe_swiglu_kernel");
}

// Routed experts: permutation, gather, gate_up, SwiGLU, down.
static int moe_run_routed(cplab_moe_plan *p, const uint16_t *x, cudaStream_t s, cplab_diag *d) {
  const cplab_moe *m = p->m;
  const cplab_moe_shape *sh = &m->shape;
  if (p->L == 0) return 0;
  moe_permute_kernel<<<(unsigned)p->L, MOE_THREADS, 0, s>>>(p->experts, p->n, sh->top_k, sh->shard, sh->shards,
                                                             p->d_counts, p->d_seg_off, p->perm_row, p->slot_of,
                                                             p->flag);
  int rc = kcheck_launch(d, "moe_permute_kernel");
  if (rc || p->padded_rows == 0) return rc;
  moe_gather_kernel<<<(unsigned)p->padded_rows, MOE_GATHER_THREADS, 0, s>>>(x, p->n, sh->dim, p->perm_row, p->xp);
  rc = kcheck_launch(d, "moe_gather_kernel");
  const moe_gen_desc *gu = &m->desc[CPLAB_MOE_GATE_UP], *dn = &m->desc[CPLAB_MOE_DOWN];
  int64_t I = sh->inter;
  if (!rc)
    rc = moe_grouped_gemm(p, "gate_up", p->xp, sh->dim, m->w[CPLAB_MOE_GATE_UP], gu->stride, 2 * I, p->gu, s, d);
  if (!rc) rc = moe_swiglu(p->gu, p->padded_rows, sh->inter, p->h, s, d);
  if (!rc) rc = moe_grouped_gemm(p, "down", p->h, I, m->w[CPLAB_MOE_DOWN], dn->stride, sh->dim, p->yp, s, d);
  return rc;
}

// The shared slice over all n rows: ys = SwiGLU(x · Wgu_q^T) · Wd_q^T.
static int moe_run_shared(cplab_moe_plan *p, const uint16_t *x, cudaStream_t s, cplab_diag *d) {
  const cplab_moe *m = p->m;
  int64_t Is = m->shared_slice, dim = m->shape.dim;
  if (Is == 0) return 0;
  int rc = cplab_gemm_bf16(p->gemm, p->n, 2 * Is, dim, x, m->w[CPLAB_MOE_SHARED_GATE_UP], p->sgu, s, d);
  if (!rc) rc = moe_swiglu(p->sgu, p->n, (int)Is, p->sh, s, d);
  if (!rc) rc = cplab_gemm_bf16(p->gemm, p->n, dim, Is, p->sh, m->w[CPLAB_MOE_SHARED_DOWN], p->ys, s, d);
  if (rc) cplab_diag_prefix(d, "shared slice: ");
  return rc;
}

extern "C" int cplab_moe_run(cplab_moe_plan *p, const uint16_t *x, float *out, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_moe_run: NULL plan");
  if (p->n == 0) return 0;
  KCHECK_ARG(d, x && out, "cplab_moe_run: NULL x or out");
  const cplab_moe_shape *sh = &p->m->shape;
  cudaStream_t s = kstream(stream);
  size_t nk = (size_t)p->n * sh->top_k;
  // -1 everywhere the permutation writes nothing: non-local choices, padding slots.
  KCHECK_CUDA(d, cudaMemsetAsync(p->slot_of, 0xFF, nk * 4, s));
  if (p->padded_rows) KCHECK_CUDA(d, cudaMemsetAsync(p->perm_row, 0xFF, (size_t)p->padded_rows * 4, s));
  int rc = moe_route(p, x, true, s, d);
  if (!rc) rc = moe_run_routed(p, x, s, d);
  if (!rc) rc = moe_run_shared(p, x, s, d);
  if (!rc) {
    moe_combine_kernel<<<(unsigned)p->n, MOE_THREADS, 0, s>>>(p->gates, p->slot_of, sh->top_k, p->yp,
                                                               p->padded_rows, p->ys, sh->dim, out);
    rc = kcheck_launch(d, "moe_combine_kernel");
  }
  if (rc) cplab_diag_prefix(d, "cplab_moe_run: ");
  return rc;
}

// ---- reductions and conversion ------------------------------------------------------

__global__ void __launch_bounds__(MOE_THREADS)
    moe_sum_kernel(const float *parts, int P, int64_t count, float *out) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
    float acc = parts[i];
    for (int q = 1; q < P; q++) acc += parts[q * count + i];
    out[i] = acc;
  }
}

extern "C" int cplab_moe_sum_partials(const float *parts, int P, int64_t count, float *out, void *stream,
                                      cplab_diag *d) {
  KCHECK_ARG(d, P >= 1 && count >= 0, "cplab_moe_sum_partials: bad size (P %d, count %lld)", P, (long long)count);
  if (count == 0) return 0;
  KCHECK_ARG(d, parts && out, "cplab_moe_sum_partials: NULL argument");
  moe_sum_kernel<<<moe_grid(count), MOE_THREADS, 0, kstream(stream)>>>(parts, P, count, out);
  return kcheck_launch(d, "moe_sum_kernel");
}

__global__ void __launch_bounds__(MOE_THREADS) moe_to_bf16_kernel(const float *in, int64_t count, uint16_t *out) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
}

extern "C" int cplab_f32_to_bf16(const float *in, int64_t count, uint16_t *out, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, count >= 0, "cplab_f32_to_bf16: negative count %lld", (long long)count);
  if (count == 0) return 0;
  KCHECK_ARG(d, in && out, "cplab_f32_to_bf16: NULL argument");
  moe_to_bf16_kernel<<<moe_grid(count), MOE_THREADS, 0, kstream(stream)>>>(in, count, out);
  return kcheck_launch(d, "moe_to_bf16_kernel");
}
