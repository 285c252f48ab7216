/* bench/moe_compare.h: the moe_paths check of cplab-kernel-bench (once cplab-moe-bench's): the MoE block's fast
 * PCP path gives the general path's output (host arrays, no GPU).
 *
 * Each side gives, for n rows, its output (fp32 [n][dim]), its routing
 * (global expert ids, best first, int32 [n][k]) and its router logits (bf16
 * [n][experts]). A row whose two expert lists differ is a near-tie when every
 * expert only one side chose has, in both sides' logits, a logit within
 * 2^-6·|kth| + 1e-6 of that side's k-th chosen logit (a few bf16 steps:
 * other GEMM kernels may round a logit differently); it is excluded from the
 * value check; any other difference is a bad row. Rows routed alike are
 * compared as test_gpu_moe compares the device with its reference:
 *   |general - fast| <= MOE_TOL_REL · (|fast| + the fast row's rms) per
 *   element, and cos_diff = 1 - 2 Σ g·f / Σ (g² + f²) <= MOE_TOL_COS,
 * NaN anywhere a failure. */
#ifndef CPLAB_BENCH_MOE_COMPARE_H
#define CPLAB_BENCH_MOE_COMPARE_H

#include <stdint.h>

#define MOE_TOL_REL 3e-2
#define MOE_TOL_COS 1e-4

typedef struct moe_side {
  const float *out;       /* [n][dim] */
  const int32_t *experts; /* [n][k] */
  const uint16_t *logits; /* [n][experts] */
} moe_side;

typedef struct moe_verdict {
  int64_t elems, identical;                /* compared elements, and those bit-identical */
  int64_t route_differs, near_ties, bad_rows; /* rows whose routing differs: near-ties, the others */
  double worst, cos_diff;                  /* worst error / allowance; cos_diff of the compared rows */
  int values_bad;                          /* worst > 1, cos_diff > MOE_TOL_COS or a NaN */
} moe_verdict;

moe_verdict moe_compare(const moe_side *general, const moe_side *fast, int64_t n, int64_t dim, int experts, int k);

/* Whether the paths agree: no bad row and no value beyond tolerance. */
static inline int moe_verdict_ok(const moe_verdict *v) { return v->bad_rows == 0 && !v->values_bad; }

#endif /* CPLAB_BENCH_MOE_COMPARE_H */
