/* The bounds of cplab-bench --check's attention comparison: checkbound.h. */
#include "checkbound.h"

#include <math.h>

int cplab_bench_attention_close(const float *out, const float *want_out, const float *lse, const float *want_lse,
                                size_t heads, size_t dv) {
  for (size_t h = 0; h < heads; h++) {
    double diff = 0, norm = 0;
    for (size_t c = 0; c < dv; c++) {
      double a = out[h * dv + c], b = want_out[h * dv + c];
      diff += (a - b) * (a - b);
      norm += b * b;
    }
    /* Written so that NaN fails: a comparison with NaN is false. */
    if (!(diff <= CPLAB_BENCH_CHECK_OUT_REL_L2 * CPLAB_BENCH_CHECK_OUT_REL_L2 * norm)) return 0;
    double a = lse[h], b = want_lse[h];
    if (a == b) continue; /* also -inf == -inf */
    if (!isfinite(a) || !isfinite(b)) return 0; /* the bound of an infinite want would admit anything */
    if (!(fabs(a - b) <= CPLAB_BENCH_CHECK_LSE_ABS + CPLAB_BENCH_CHECK_LSE_REL * fabs(b))) return 0;
  }
  return 1;
}
