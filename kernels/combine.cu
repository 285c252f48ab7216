// DCP LSE combine (reference §7) with the kernel's NaN/±inf rules. Contract
// in cplab_kernels.h. One block per (row, head), a thread per 4 columns; the
// D factors are recomputed by every thread (D is small) in double, and the
// weighted sum is accumulated in double and rounded once.
#include <cuda_runtime.h>

#include <math.h>

#include "check.cuh"
#include "cplab/kvformat.h"
#include "cplab_kernels.h"

#define COMBINE_THREADS (CPLAB_MLA_NOPE_DIM / 4)

// NaN and +inf partial lse count as -inf (an empty or broken shard).
static __device__ __forceinline__ double comb_lse(float l) {
  return (isnan(l) || l == INFINITY) ? -(double)INFINITY : (double)l;
}

__global__ void __launch_bounds__(COMBINE_THREADS)
    combine_kernel(const float *lse, const float *out, int D, int64_t mh, float *final) {
  int64_t g = blockIdx.x; // (row, head) flattened: row·heads + head
  int c = 4 * threadIdx.x;
  double M = -(double)INFINITY;
  for (int r = 0; r < D; r++) M = fmax(M, comb_lse(lse[r * mh + g]));
  if (M == -(double)INFINITY) M = 0.0;
  double sum = 0.0;
  for (int r = 0; r < D; r++) sum += exp(comb_lse(lse[r * mh + g]) - M);
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  for (int r = 0; r < D; r++) {
    double f = exp(comb_lse(lse[r * mh + g]) - M) / sum; // exp(lse_r - L); 0/0 = NaN when every lse is -inf
    if (isnan(f) || f == 0.0) continue;                  // nothing to add: NaN outputs of empty shards included
    float4 o = *(const float4 *)(out + (r * mh + g) * CPLAB_MLA_NOPE_DIM + c);
    acc[0] += f * o.x;
    acc[1] += f * o.y;
    acc[2] += f * o.z;
    acc[3] += f * o.w;
  }
  *(float4 *)(final + g * CPLAB_MLA_NOPE_DIM + c) = make_float4((float)acc[0], (float)acc[1], (float)acc[2], (float)acc[3]);
}

extern "C" int cplab_lse_combine(const float *lse, const float *out, int D, int64_t m, int heads, float *final,
                                 void *stream, cplab_diag *d) {
  KCHECK_ARG(d, D >= 1 && m >= 0 && heads >= 0, "cplab_lse_combine: bad size (D %d, m %lld, heads %d)", D,
             (long long)m, heads);
  int64_t mh = m * heads;
  if (mh == 0) return 0;
  KCHECK_ARG(d, lse && out && final, "cplab_lse_combine: NULL argument");
  KCHECK_ARG(d, kaligned(out, 16) && kaligned(final, 16), "cplab_lse_combine: out and final must be 16-byte aligned");
  KCHECK_ARG(d, mh <= KGRID_MAX_X, "cplab_lse_combine: %lld (row, head) pairs too many", (long long)mh);
  combine_kernel<<<(unsigned)mh, COMBINE_THREADS, 0, kstream(stream)>>>(lse, out, D, mh, final);
  return kcheck_launch(d, "combine_kernel");
}
