/* bench/layers/checkbound.h: how close cplab-bench's attention results must
 * be to cplab-exec's for --check (measure.c hands the bound to the
 * executor's batched engine, which applies it: exec/engine.h). The top-k is
 * compared exactly; attention is compared by the kernels' bounds, because
 * the split decode kernel rounds by its split count, which depends on the
 * batch (cplab_sparse_mla_decode_split): the engine's batched rows and
 * cplab-exec's one-row calls each lie within the kernels' bounds of the
 * double reference (tests/gpu/test_gpu_attention.c: out within a relative
 * L2 of 1e-2 per (row, head), lse within 1e-3 + 3e-5 |lse|), so within
 * twice those of each other. A wrong row or head, the bugs the check is
 * for, is off by its whole size. */
#ifndef CPLAB_BENCH_CHECKBOUND_H
#define CPLAB_BENCH_CHECKBOUND_H

#include <stddef.h>

#define CPLAB_BENCH_CHECK_OUT_REL_L2 2e-2
#define CPLAB_BENCH_CHECK_LSE_ABS 2e-3
#define CPLAB_BENCH_CHECK_LSE_REL 6e-5

/* 1 when every head h < heads of out [heads][dv] and lse [heads] is within
 * the bounds of want_out / want_lse: ||out - want|| <= 2e-2 ||want|| (an
 * all-zero want admits only zeros), |lse - want| <= 2e-3 + 6e-5 |want|, or
 * the same lse (-inf for a row without entries); NaN anywhere fails. */
int cplab_bench_attention_close(const float *out, const float *want_out, const float *lse, const float *want_lse,
                                size_t heads, size_t dv);

#endif
