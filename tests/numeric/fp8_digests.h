/* tests/numeric/fp8_digests.h: XXH3-64 digests of the conversion tables of
 * fp8_tables.h. tests/numeric/fp8_vs_cuda.c checks that CUDA's own
 * conversions produce exactly these (so they are CUDA's, not only cplab's);
 * tests/unit/test_numeric_fp8.c checks cplab's against them in every build. */
#ifndef CPLAB_TESTS_FP8_DIGESTS_H
#define CPLAB_TESTS_FP8_DIGESTS_H

#include <stdint.h>

#include "fp8_tables.h"

/* Produced by CUDA 13.0's host conversions (nvcc V13.0.88), printed by
 * tests/numeric/test_numeric_fp8_cuda; cplab's tables gave the same. */
static const uint64_t fp8t_pinned[FP8T_NDIGESTS] = {
    UINT64_C(0xddc2cf862125d2bd), /* bf16->f32 (all bf16) */
    UINT64_C(0xb13551872d137c76), /* f32->bf16 (all bf16) */
    UINT64_C(0x26b361a8329e940f), /* f32->e4m3 (all bf16) */
    UINT64_C(0xa381bb147af8d809), /* sweep inputs */
    UINT64_C(0xc46588ccb15a97b5), /* f32->bf16 (sweep) */
    UINT64_C(0x086d5d161ff7c9cf), /* f32->e4m3 (sweep) */
    UINT64_C(0xc183e7ff25abadf2), /* e4m3->f32 (all e4m3) */
    UINT64_C(0x1ef31de5b9760524), /* e4m3->bf16 (all e4m3) */
};

#endif
