/* cplab's bf16/e4m3 conversions against CUDA's own (host-side cuda_bf16.h /
 * cuda_fp8.h, wrapped by fp8_cuda_ref.cu): every bf16 pattern, every e4m3
 * byte and the float sweep of fp8_tables.h, bit for bit; then the digests
 * of CUDA's tables against the ones tests/unit/test_numeric_fp8.c pins, so
 * the pinned values are CUDA's. Needs no GPU. TAP output, first mismatch of
 * each comparison as a diagnostic. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cplab/fp8.h"
#include "fp8_cuda_ref.h"
#include "fp8_digests.h"
#include "fp8_tables.h"

typedef struct tap {
  int n, failed;
} tap;

static void tap_result(tap *t, size_t mismatches, size_t total, const char *what) {
  t->n++;
  if (mismatches) t->failed++;
  printf("%s %d - %s: %zu inputs, %zu mismatches\n", mismatches ? "not ok" : "ok", t->n, what, total, mismatches);
  fflush(stdout);
}

/* One comparison over i = 0..n-1: input, cplab's result and CUDA's, as bit patterns. */
#define COMPARE(t, what, n, input_expr, mine_expr, ref_expr)                                                         \
  do {                                                                                                             \
    size_t bad_ = 0;                                                                                               \
    for (size_t i = 0; i < (n); i++) {                                                                             \
      uint32_t in_ = (uint32_t)(input_expr), mine_ = (uint32_t)(mine_expr), ref_ = (uint32_t)(ref_expr);          \
      if (mine_ != ref_ && bad_++ == 0)                                                                            \
        printf("# %s: first mismatch at input 0x%08" PRIx32 ": cplab 0x%" PRIx32 ", CUDA 0x%" PRIx32 "\n", (what), \
               in_, mine_, ref_);                                                                                  \
    }                                                                                                              \
    tap_result((t), bad_, (n), (what));                                                                            \
  } while (0)

static uint16_t mine_e4m3_to_bf16(uint8_t b) { return cplab_e4m3_to_bf16(b); }

static void check_digests(tap *t, const char *who, const uint64_t got[FP8T_NDIGESTS]) {
  size_t bad = 0;
  for (int i = 0; i < FP8T_NDIGESTS; i++)
    if (got[i] != fp8t_pinned[i]) {
      if (bad++ == 0) printf("# %s digests differ from tests/numeric/fp8_digests.h; computed:\n", who);
    }
  if (bad)
    for (int i = 0; i < FP8T_NDIGESTS; i++)
      printf("#     UINT64_C(0x%016" PRIx64 "), /* %s */\n", got[i], fp8t_digest_names[i]);
  char what[96];
  snprintf(what, sizeof what, "%s table digests equal the pinned ones", who);
  tap_result(t, bad, FP8T_NDIGESTS, what);
}

int main(void) {
  size_t n = 0;
  uint32_t *s = fp8t_sweep_alloc(&n);
  if (!s) {
    printf("Bail out! out of memory\n");
    return 1;
  }
  tap t = {0, 0};
  printf("1..10\n");
  COMPARE(&t, "bf16 -> f32, all 2^16 bf16", 65536u, i, fp8t_cplab_bf16_to_f32((uint16_t)i),
          fp8_cuda_bf16_to_f32((uint16_t)i));
  COMPARE(&t, "f32 -> bf16 of every bf16's float (round trip)", 65536u, i,
          fp8t_cplab_bf16_from_f32(fp8_cuda_bf16_to_f32((uint16_t)i)),
          fp8_cuda_bf16_from_f32(fp8_cuda_bf16_to_f32((uint16_t)i)));
  COMPARE(&t, "f32 -> e4m3 of every bf16's float", 65536u, i,
          fp8t_cplab_e4m3_from_f32(fp8_cuda_bf16_to_f32((uint16_t)i)),
          fp8_cuda_e4m3_from_f32(fp8_cuda_bf16_to_f32((uint16_t)i)));
  COMPARE(&t, "bf16 -> f32 -> e4m3 against __nv_cvt_bfloat16raw_to_fp8", 65536u, i,
          fp8t_cplab_e4m3_from_f32(fp8t_cplab_bf16_to_f32((uint16_t)i)), fp8_cuda_e4m3_from_bf16((uint16_t)i));
  COMPARE(&t, "f32 -> bf16 over the float sweep", n, s[i], fp8t_cplab_bf16_from_f32(s[i]),
          fp8_cuda_bf16_from_f32(s[i]));
  COMPARE(&t, "f32 -> e4m3 over the float sweep", n, s[i], fp8t_cplab_e4m3_from_f32(s[i]),
          fp8_cuda_e4m3_from_f32(s[i]));
  COMPARE(&t, "e4m3 -> f32, all 256 bytes", 256u, i, fp8t_cplab_e4m3_to_f32((uint8_t)i),
          fp8_cuda_e4m3_to_f32((uint8_t)i));
  COMPARE(&t, "e4m3 -> bf16, all 256 bytes", 256u, i, mine_e4m3_to_bf16((uint8_t)i),
          fp8_cuda_e4m3_to_bf16((uint8_t)i));

  static const fp8t_convs cuda = {fp8_cuda_bf16_from_f32, fp8_cuda_bf16_to_f32, fp8_cuda_e4m3_from_f32,
                                  fp8_cuda_e4m3_to_f32, fp8_cuda_e4m3_to_bf16};
  uint64_t d_cuda[FP8T_NDIGESTS], d_mine[FP8T_NDIGESTS];
  if (fp8t_digests(&cuda, s, n, d_cuda) || fp8t_digests(&fp8t_cplab, s, n, d_mine)) {
    printf("Bail out! out of memory\n");
    free(s);
    return 1;
  }
  check_digests(&t, "CUDA's", d_cuda);
  check_digests(&t, "cplab's", d_mine);
  free(s);
  return t.failed ? 1 : 0;
}
