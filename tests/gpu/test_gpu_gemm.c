/* GPU test: the cuBLASLt GEMMs of kernels/gemm.cu against a double-precision
 * host reference.
 *   - cplab_gemm_bf16 on 64x128x256, 129x257x512 (odd m and n: edge tiles)
 *     and 33x17x77 (odd k too: rows not 16-byte aligned), random bf16;
 *   - cplab_gemm_fp8 on 256x512x1024 with a_scale 0.5, b_scale 2.0 and on
 *     128x64x256 with 0.25 and 3.0 (a product != 1, so that a scale the GEMM
 *     ignores shows), random e4m3;
 *   - the edge cases: k = 0 gives C = 0, m = 0 writes nothing, fp8 sizes that
 *     are not multiples of 16 are refused with CPLAB_EINVAL.
 * Inputs are exact bf16 / e4m3 values (cplab/fp8.h), so the reference
 *   ref[i][j] = a_scale · b_scale · sum_l A[i][l] · B[j][l]
 * is exact up to double rounding. The output is poisoned (bf16 NaN) first, so
 * an element the GEMM does not write fails. Two checks per case:
 *   - relative Frobenius error ||C - ref|| / ||ref|| < 1e-2 (rounding the
 *     fp32 sums to bf16 alone gives about 1e-3);
 *   - per element |C - ref| <= 2^-8 |ref| + 2^-10 sum_l |a_scale·A[i][l] ·
 *     b_scale·B[j][l]|: bf16 rounding (2^-9 relative) plus a loose allowance
 *     for the accumulation (fp32, or Hopper's narrower fp8 accumulator between
 *     promotions); a transposed or shifted operand misses it by far.
 * Maximum absolute and relative errors are printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/fp8.h"
#include "kt.h"

#define FROB_TOL 1e-2

typedef struct shape {
  int64_t m, n, k;
} shape;

/* Compare C (bf16 [m][n], host copy) with ref and the per-element allowance
 * sums |terms| (both double [m][n]); one PASS/FAIL line. */
static void compare(const char *what, const shape *s, const uint16_t *C, const double *ref, const double *abs_sum) {
  double num = 0, den = 0, max_abs = 0, max_rel = 0, worst = 0; /* worst: error / allowance */
  int64_t bad = 0, first_bad = -1, count = s->m * s->n;
  for (int64_t e = 0; e < count; e++) {
    double c = kt_bf16(C[e]), err = fabs(c - ref[e]);
    double allow = 0x1p-8 * fabs(ref[e]) + 0x1p-10 * abs_sum[e];
    num += (c - ref[e]) * (c - ref[e]);
    den += ref[e] * ref[e];
    if (!(err <= allow)) { /* NaN (an unwritten element) counts as bad */
      if (bad++ == 0) first_bad = e;
    }
    if (err > max_abs || err != err) max_abs = err;
    if (ref[e] != 0 && err / fabs(ref[e]) > max_rel) max_rel = err / fabs(ref[e]);
    if (allow > 0 && err / allow > worst) worst = err / allow;
  }
  double frob = den > 0 ? sqrt(num / den) : sqrt(num);
  kt_check(frob < FROB_TOL && bad == 0,
           "%s %lldx%lldx%lld: rel Frobenius error %.3g (< %g), max abs error %.3g, max rel error %.3g, "
           "worst error/allowance %.3g, %lld elements over the allowance%s",
           what, (long long)s->m, (long long)s->n, (long long)s->k, frob, FROB_TOL, max_abs, max_rel, worst,
           (long long)bad, bad ? "" : " (none)");
  if (bad)
    printf("  first bad element [%lld][%lld]: got %.9g, expected %.9g\n", (long long)(first_bad / s->n),
           (long long)(first_bad % s->n), kt_bf16(C[first_bad]), ref[first_bad]);
}

/* ref and abs_sum of scale · A · B^T for A [m][k], B [n][k] given as doubles. */
static void reference(const shape *s, const double *a, const double *b, double scale, double *ref, double *abs_sum) {
  for (int64_t i = 0; i < s->m; i++)
    for (int64_t j = 0; j < s->n; j++) {
      double acc = 0, acc_abs = 0;
      for (int64_t l = 0; l < s->k; l++) {
        double t = a[i * s->k + l] * b[j * s->k + l];
        acc += t;
        acc_abs += fabs(t);
      }
      ref[i * s->n + j] = scale * acc;
      abs_sum[i * s->n + j] = fabs(scale) * acc_abs;
    }
}

/* A poisoned device output of m·n bf16 (NaN 0x7FC0). */
static uint16_t *poisoned_output(int64_t count) {
  uint16_t *dC = kt_dev((size_t)count * 2);
  kt_ok(cplab_poison_bf16(dC, (size_t)count, NULL, kt_diag()), "cplab_poison_bf16");
  return dC;
}

static void check_bf16(cplab_gemm *h, uint64_t *rng, shape s) {
  size_t na = (size_t)(s.m * s.k), nb = (size_t)(s.n * s.k), nc = (size_t)(s.m * s.n);
  uint16_t *a = kt_host(na * 2), *b = kt_host(nb * 2), *c = kt_host(nc * 2);
  double *fa = kt_host(na * sizeof(double)), *fb = kt_host(nb * sizeof(double));
  double *ref = kt_host(nc * sizeof(double)), *abs_sum = kt_host(nc * sizeof(double));
  for (size_t i = 0; i < na; i++) a[i] = cplab_bf16_from_f32((float)(2 * kt_unit(rng) - 1));
  for (size_t i = 0; i < nb; i++) b[i] = cplab_bf16_from_f32((float)(2 * kt_unit(rng) - 1));
  for (size_t i = 0; i < na; i++) fa[i] = kt_bf16(a[i]);
  for (size_t i = 0; i < nb; i++) fb[i] = kt_bf16(b[i]);
  reference(&s, fa, fb, 1.0, ref, abs_sum);
  uint16_t *dA = kt_dev_from(a, na * 2), *dB = kt_dev_from(b, nb * 2), *dC = poisoned_output((int64_t)nc);
  kt_ok(cplab_gemm_bf16(h, s.m, s.n, s.k, dA, dB, dC, NULL, kt_diag()), "cplab_gemm_bf16");
  kt_sync();
  kt_down(c, dC, nc * 2);
  compare("bf16", &s, c, ref, abs_sum);
  kt_free(dA), kt_free(dB), kt_free(dC);
  free(a), free(b), free(c), free(fa), free(fb), free(ref), free(abs_sum);
}

static void check_fp8(cplab_gemm *h, uint64_t *rng, shape s, float a_scale, float b_scale) {
  size_t na = (size_t)(s.m * s.k), nb = (size_t)(s.n * s.k), nc = (size_t)(s.m * s.n);
  uint8_t *a = kt_host(na), *b = kt_host(nb);
  uint16_t *c = kt_host(nc * 2);
  double *fa = kt_host(na * sizeof(double)), *fb = kt_host(nb * sizeof(double));
  double *ref = kt_host(nc * sizeof(double)), *abs_sum = kt_host(nc * sizeof(double));
  /* uniform in (-4, 4): every e4m3 binade from subnormals up to 4, both signs */
  for (size_t i = 0; i < na; i++) a[i] = cplab_e4m3_from_f32((float)(8 * kt_unit(rng) - 4));
  for (size_t i = 0; i < nb; i++) b[i] = cplab_e4m3_from_f32((float)(8 * kt_unit(rng) - 4));
  for (size_t i = 0; i < na; i++) fa[i] = cplab_e4m3_to_f32(a[i]);
  for (size_t i = 0; i < nb; i++) fb[i] = cplab_e4m3_to_f32(b[i]);
  reference(&s, fa, fb, (double)a_scale * (double)b_scale, ref, abs_sum);
  uint8_t *dA = kt_dev_from(a, na), *dB = kt_dev_from(b, nb);
  float *d_as = kt_dev_from(&a_scale, sizeof a_scale), *d_bs = kt_dev_from(&b_scale, sizeof b_scale);
  uint16_t *dC = poisoned_output((int64_t)nc);
  kt_ok(cplab_gemm_fp8(h, s.m, s.n, s.k, dA, dB, d_as, d_bs, dC, NULL, kt_diag()), "cplab_gemm_fp8");
  kt_sync();
  kt_down(c, dC, nc * 2);
  char what[64];
  snprintf(what, sizeof what, "fp8 (scales %g, %g)", a_scale, b_scale);
  compare(what, &s, c, ref, abs_sum);
  kt_free(dA), kt_free(dB), kt_free(d_as), kt_free(d_bs), kt_free(dC);
  free(a), free(b), free(c), free(fa), free(fb), free(ref), free(abs_sum);
}

/* k = 0: C all +0; m = 0: nothing written (C keeps its poison); fp8 with a
 * size not a multiple of 16: CPLAB_EINVAL, C untouched; fp8 with a scale
 * pointer not 16-byte aligned: CPLAB_EINVAL. */
static void check_edges(cplab_gemm *h) {
  enum { M = 16, N = 32 };
  uint16_t c[M * N];
  uint8_t zeros[M * 16] = {0};
  float one = 1.0f;
  uint16_t *dC = poisoned_output(M * N);
  uint8_t *dA = kt_dev_from(zeros, sizeof zeros), *dB = kt_dev_from(zeros, sizeof zeros);
  float *ds = kt_dev_from(&one, sizeof one);
  cplab_diag d = {0};
  int rc = cplab_gemm_bf16(h, M, N, 0, NULL, NULL, dC, NULL, &d);
  kt_sync();
  kt_down(c, dC, sizeof c);
  int zero = 1;
  for (int i = 0; i < M * N; i++) zero &= c[i] == 0;
  kt_check(rc == 0 && zero, "bf16 with k = 0: rc %d, C all +0: %s", rc, zero ? "yes" : "no");

  kt_ok(cplab_poison_bf16(dC, M * N, NULL, kt_diag()), "cplab_poison_bf16");
  rc = cplab_gemm_fp8(h, 0, N, 16, dA, dB, ds, ds, dC, NULL, &d);
  int rc2 = cplab_gemm_fp8(h, 8, 16, 16, dA, dB, ds, ds, dC, NULL, &d); /* m = 8: refused */
  kt_sync();
  kt_down(c, dC, sizeof c);
  int untouched = 1;
  for (int i = 0; i < M * N; i++) untouched &= c[i] == CPLAB_BF16_POISON;
  kt_check(rc == 0 && rc2 == CPLAB_EINVAL && strstr(d.msg, "multiples of 16") && untouched,
           "fp8 with m = 0: rc %d; with m = 8: rc %d (%s), \"%s\"; C untouched: %s", rc, rc2, cplab_err_name(rc2),
           d.msg, untouched ? "yes" : "no");
  /* A scale 4 bytes into an allocation: cuBLASLt refuses fp8 GEMMs with such
   * scale pointers, so the wrapper asks for 16-byte alignment up front. */
  float two[2] = {1.0f, 1.0f};
  float *ds2 = kt_dev_from(two, sizeof two);
  cplab_diag e = {0};
  rc = cplab_gemm_fp8(h, M, N, 16, dA, dB, ds2 + 1, ds2, dC, NULL, &e);
  kt_check(rc == CPLAB_EINVAL && strstr(e.msg, "16-byte aligned"), "fp8 with a_scale 4 bytes off alignment: rc %d (%s), "
           "\"%s\"", rc, cplab_err_name(rc), e.msg);
  kt_free(dC), kt_free(dA), kt_free(dB), kt_free(ds), kt_free(ds2);
}

int main(void) {
  uint64_t rng;
  cplab_gemm *h = NULL;
  kt_begin("test_gpu_gemm", &rng);
  printf("cuBLASLt version %zu\n", cplab_gemm_lib_version());
  kt_ok(cplab_gemm_create(&h, kt_diag()), "cplab_gemm_create");
  check_bf16(h, &rng, (shape){64, 128, 256});
  check_bf16(h, &rng, (shape){129, 257, 512});
  check_bf16(h, &rng, (shape){33, 17, 77});
  check_fp8(h, &rng, (shape){256, 512, 1024}, 0.5f, 2.0f);
  check_fp8(h, &rng, (shape){128, 64, 256}, 0.25f, 3.0f);
  check_edges(h);
  kt_ok(cplab_gemm_destroy(h, kt_diag()), "cplab_gemm_destroy");
  return kt_end();
}
