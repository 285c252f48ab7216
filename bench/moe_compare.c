/* bench/moe_compare.c: the fast path against the general path (contract in
 * moe_compare.h). */
#include "moe_compare.h"

#include <math.h>
#include <string.h>

#include "cplab/fp8.h"

/* Row lists ea, eb (k each) differ only at a near-tie of logits la, lb. */
static int near_tie(const int32_t *ea, const int32_t *eb, const uint16_t *la, const uint16_t *lb, int k) {
  const int32_t *lists[2] = {ea, eb};
  const uint16_t *logits[2] = {la, lb};
  for (int s = 0; s < 2; s++) {
    float kth = cplab_bf16_to_f32(logits[s][lists[s][k - 1]]);
    double slack = ldexp(fabs(kth), -6) + 1e-6;
    for (int side = 0; side < 2; side++)
      for (int j = 0; j < k; j++) {
        int e = lists[side][j], in_both = 0;
        for (int i = 0; i < k; i++) in_both |= lists[!side][i] == e;
        if (!in_both && fabs(cplab_bf16_to_f32(logits[s][e]) - kth) > slack) return 0;
      }
  }
  return 1;
}

moe_verdict moe_compare(const moe_side *general, const moe_side *fast, int64_t n, int64_t dim, int experts, int k) {
  moe_verdict v = {.elems = n * dim};
  double dot = 0, sq = 0;
  for (int64_t r = 0; r < n; r++) {
    const int32_t *eg = general->experts + r * k, *ef = fast->experts + r * k;
    if (memcmp(eg, ef, (size_t)k * sizeof *eg) != 0) {
      v.route_differs++;
      if (near_tie(eg, ef, general->logits + r * experts, fast->logits + r * experts, k)) v.near_ties++;
      else v.bad_rows++;
      continue;
    }
    const float *gr = general->out + r * dim, *fr = fast->out + r * dim;
    double ms = 0;
    for (int64_t i = 0; i < dim; i++) ms += (double)fr[i] * fr[i];
    double rms = sqrt(ms / (double)dim);
    for (int64_t i = 0; i < dim; i++) {
      double a = gr[i], ref = fr[i], err = fabs(a - ref), allow = MOE_TOL_REL * (fabs(ref) + rms);
      v.identical += memcmp(&gr[i], &fr[i], sizeof(float)) == 0;
      double ratio = allow > 0 ? err / allow : err > 0 ? INFINITY : 0;
      v.worst = fmax(v.worst, isnan(a) || isnan(ref) ? INFINITY : ratio);
      dot += a * ref, sq += a * a + ref * ref;
    }
  }
  v.cos_diff = sq > 0 ? 1 - 2 * dot / sq : 0;
  v.values_bad = !(v.cos_diff <= MOE_TOL_COS) || !(v.worst <= 1);
  return v;
}
