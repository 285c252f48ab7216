// DCP LSE combine (reference §7) with the kernel's NaN/±inf rules. Contract
// in cplab_kernels.h. One block per (row, head), a thread per 4 columns.
// The first warp computes the D factors once, in double, into shared
// memory while every thread already has its first COMBINE_PREFETCH ranks'
// outputs in flight; the weighted sum is accumulated in double in rank
// order and rounded once. (The first version had every thread recompute
// 2·D double exps: at D 4 x 64 heads x batch 64 that was most of its 22 µs,
// 45-55% of copy; bench/NOTES.md.)
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab/kvformat.h"
#include "cplab_kernels.h"

#define COMBINE_THREADS (CPLAB_MLA_NOPE_DIM / 4)
#define COMBINE_PREFETCH 8 // ranks whose outputs a thread loads before the factors are known
#define COMBINE_D_MAX 4096 // factors in shared memory: 32 KiB

// NaN and +inf partial lse count as -inf (an empty or broken shard).
static __device__ __forceinline__ double comb_lse(float l) {
  return (isnan(l) || l == INFINITY) ? -(double)INFINITY : (double)l;
}

// f[r] = exp(lse_r - M) / sum_r' exp(lse_r' - M), M the largest lse (0 when
// every lse is -inf: then 0/0, NaN); the sum in rank order, as
// sim_lse_combine. Called by one whole warp.
static __device__ void comb_factors(const float *lse, int D, int64_t mh, int64_t g, double *f) {
  const int lane = threadIdx.x % 32;
  double M = -(double)INFINITY;
  for (int r = lane; r < D; r += 32) M = fmax(M, comb_lse(lse[r * mh + g]));
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) M = fmax(M, __shfl_xor_sync(0xFFFFFFFFu, M, o));
  if (M == -(double)INFINITY) M = 0.0;
  for (int r = lane; r < D; r += 32) f[r] = exp(comb_lse(lse[r * mh + g]) - M);
  __syncwarp();
  double sum = 0.0;
  if (lane == 0)
    for (int r = 0; r < D; r++) sum += f[r];
  sum = __shfl_sync(0xFFFFFFFFu, sum, 0);
  for (int r = lane; r < D; r += 32) f[r] /= sum;
}

__global__ void __launch_bounds__(COMBINE_THREADS)
    combine_kernel(const float *lse, const float *out, int D, int64_t mh, float *final) {
  extern __shared__ double comb_f[];
  const int64_t g = blockIdx.x; // (row, head) flattened: row·heads + head
  const int c = 4 * threadIdx.x;
  const float *src = out + g * CPLAB_MLA_NOPE_DIM + c;
  const int64_t rank_stride = mh * CPLAB_MLA_NOPE_DIM;
  float4 pre[COMBINE_PREFETCH];
#pragma unroll
  for (int r = 0; r < COMBINE_PREFETCH; r++)
    pre[r] = r < D ? *(const float4 *)(src + r * rank_stride) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (threadIdx.x < 32) comb_factors(lse, D, mh, g, comb_f);
  __syncthreads();
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  for (int r = 0; r < D; r++) {
    double f = comb_f[r];               // exp(lse_r - L); NaN when every lse is -inf
    if (isnan(f) || f == 0.0) continue; // nothing to add: NaN outputs of empty shards included
    float4 o = pre[0];
    if (r < COMBINE_PREFETCH) {
#pragma unroll
      for (int p = 0; p < COMBINE_PREFETCH; p++)
        if (p == r) o = pre[p];
    } else {
      o = *(const float4 *)(src + r * rank_stride);
    }
    acc[0] += f * o.x;
    acc[1] += f * o.y;
    acc[2] += f * o.z;
    acc[3] += f * o.w;
  }
  *(float4 *)(final + g * CPLAB_MLA_NOPE_DIM + c) = make_float4((float)acc[0], (float)acc[1], (float)acc[2], (float)acc[3]);
}

extern "C" int cplab_lse_combine(const cplab_lse_combine_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_lse_combine: NULL parameters");
  KCHECK_ARG(d, p->D >= 1 && p->m >= 0 && p->heads >= 0, "cplab_lse_combine: bad size (D %d, m %lld, heads %d)", p->D,
             (long long)p->m, p->heads);
  KCHECK_ARG(d, p->D <= COMBINE_D_MAX, "cplab_lse_combine: D %d above %d", p->D, COMBINE_D_MAX);
  int64_t mh = p->m * p->heads;
  if (mh == 0) return 0;
  KCHECK_ARG(d, p->lse && p->out && p->final, "cplab_lse_combine: NULL argument");
  KCHECK_ARG(d, kaligned(p->out, 16) && kaligned(p->final, 16),
             "cplab_lse_combine: out and final must be 16-byte aligned");
  KCHECK_ARG(d, mh <= KGRID_MAX_X, "cplab_lse_combine: %lld (row, head) pairs too many", (long long)mh);
  size_t smem = (size_t)p->D * sizeof(double); // <= 32 KiB: no opt-in needed
  combine_kernel<<<(unsigned)mh, COMBINE_THREADS, smem, kstream(stream)>>>(p->lse, p->out, p->D, mh, p->final);
  return kcheck_launch(d, "combine_kernel");
}
