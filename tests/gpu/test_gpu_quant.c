/* GPU test: the e4m3 generator (cplab_gen_e4m3) and the activation
 * quantisation (cplab_f32_to_e4m3, cplab_bf16_to_e4m3) against the host's
 * conversion rule (cplab/fp8.h, cplab_e4m3_from_f32), byte for byte:
 *   - gen_e4m3 equals e4m3(cplab_gen_uniform_host(...)) over several counts,
 *     seeds and scales, nothing written past count;
 *   - the quantisers over random values spanning e4m3's range and beyond
 *     (saturation at ±448), zeros and tiny values (subnormals), with scales
 *     1, 1/64 and 8;
 *   - count 0 is a no-op; bad arguments give CPLAB_EINVAL.
 * The same program runs on the CPU emulation (tests/emu/emu_quant.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/fp8.h"
#include "kt.h"

#define PAD 64
#define SENTINEL 0x5A

static int64_t differing(const uint8_t *got, const uint8_t *want, int64_t n, int64_t *first) {
  int64_t bad = 0;
  *first = -1;
  for (int64_t i = 0; i < n; i++)
    if (got[i] != want[i]) bad++, *first = *first < 0 ? i : *first;
  return bad;
}

static int pad_intact(const uint8_t *p) {
  for (int i = 0; i < PAD; i++)
    if (p[i] != SENTINEL) return 0;
  return 1;
}

static void check_gen(void) {
  const int64_t counts[] = {1, 255, 4096, 100003};
  const float scales[] = {1.0f, 0.01f, 600.0f};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
      int64_t n = counts[c];
      uint64_t seed = 77 + c * 3 + s;
      uint8_t *want = kt_host((size_t)n + PAD), *got = kt_host((size_t)n + PAD);
      memset(want, SENTINEL, (size_t)n + PAD);
      for (int64_t i = 0; i < n; i++) want[i] = cplab_e4m3_from_f32(cplab_gen_uniform_host(seed, 9, i, scales[s]));
      void *dev = kt_dev((size_t)n + PAD);
      memset(got, SENTINEL, (size_t)n + PAD);
      kt_ok(cplab_dev_upload(dev, got, (size_t)n + PAD, kt_diag()), "upload");
      kt_ok(cplab_gen_e4m3(seed, 9, dev, n, scales[s], NULL, kt_diag()), "cplab_gen_e4m3");
      kt_down(got, dev, (size_t)n + PAD);
      int64_t first, bad = differing(got, want, n, &first);
      kt_check(bad == 0 && pad_intact(got + n), "gen_e4m3 count %lld scale %g: %lld bytes differ from the host rule "
               "(first at %lld), bytes after count %s", (long long)n, (double)scales[s], (long long)bad,
               (long long)first, pad_intact(got + n) ? "untouched" : "WRITTEN");
      kt_free(dev);
      free(want), free(got);
    }
}

/* Random floats: sign, exponent 2^-14 .. 2^12 (beyond e4m3's 448), mantissa; some exact zeros. */
static float random_value(uint64_t *rng) {
  uint64_t r = kt_next(rng);
  if ((r & 31) == 0) return (r & 32) ? -0.0f : 0.0f;
  float m = 1.0f + (float)((r >> 8) & 0xFFFFF) * 0x1p-20f;
  int e = (int)((r >> 32) % 27) - 14;
  return ((r >> 40) & 1 ? -1.0f : 1.0f) * ldexpf(m, e);
}

static void check_quant(uint64_t *rng) {
  const float inv[] = {1.0f, 1.0f / 64, 8.0f};
  int64_t n = 50021;
  float *x = kt_host(sizeof *x * (size_t)n);
  uint16_t *xb = kt_host(sizeof *xb * (size_t)n);
  uint8_t *want = kt_host((size_t)n + PAD), *got = kt_host((size_t)n + PAD);
  for (int64_t i = 0; i < n; i++) x[i] = random_value(rng), xb[i] = cplab_bf16_from_f32(x[i]);
  float *dx = kt_dev_from(x, sizeof *x * (size_t)n);
  uint16_t *dxb = kt_dev_from(xb, sizeof *xb * (size_t)n);
  uint8_t *dout = kt_dev((size_t)n + PAD);
  for (size_t s = 0; s < sizeof inv / sizeof inv[0]; s++)
    for (int bf = 0; bf < 2; bf++) {
      int64_t sat = 0;
      for (int64_t i = 0; i < n; i++) {
        float v = (bf ? cplab_bf16_to_f32(xb[i]) : x[i]) * inv[s];
        want[i] = cplab_e4m3_from_f32(v);
        sat += fabsf(v) > 448.0f;
      }
      memset(got, SENTINEL, (size_t)n + PAD);
      kt_ok(cplab_dev_upload(dout, got, (size_t)n + PAD, kt_diag()), "upload");
      if (bf) kt_ok(cplab_bf16_to_e4m3(dxb, n, inv[s], dout, NULL, kt_diag()), "cplab_bf16_to_e4m3");
      else kt_ok(cplab_f32_to_e4m3(dx, n, inv[s], dout, NULL, kt_diag()), "cplab_f32_to_e4m3");
      kt_down(got, dout, (size_t)n + PAD);
      int64_t first, bad = differing(got, want, n, &first);
      kt_check(bad == 0 && pad_intact(got + n), "%s_to_e4m3, inv_scale %g: %lld values (%lld saturating), %lld differ "
               "from cplab_e4m3_from_f32 (first at %lld), bytes after count %s", bf ? "bf16" : "f32", (double)inv[s],
               (long long)n, (long long)sat, (long long)bad, (long long)first, pad_intact(got + n) ? "untouched" : "WRITTEN");
    }
  kt_free(dx), kt_free(dxb), kt_free(dout);
  free(x), free(xb), free(want), free(got);
}

static void check_arguments(void) {
  cplab_diag d = {0};
  uint8_t *dev = kt_dev(64);
  int zero = cplab_f32_to_e4m3(NULL, 0, 1.0f, NULL, NULL, &d) == 0 && cplab_bf16_to_e4m3(NULL, 0, 1.0f, NULL, NULL, &d) == 0 &&
             cplab_gen_e4m3(1, 1, NULL, 0, 1.0f, NULL, &d) == 0;
  kt_check(zero, "count 0 (NULL buffers) is a no-op for the three launchers");
  int bad = 0, calls = 0;
  cplab_diag e = {0};
  calls++, bad += cplab_f32_to_e4m3(NULL, 4, 1.0f, dev, NULL, &e) == CPLAB_EINVAL;
  calls++, bad += cplab_f32_to_e4m3((const float *)dev, -1, 1.0f, dev, NULL, &e) == CPLAB_EINVAL;
  calls++, bad += cplab_f32_to_e4m3((const float *)dev, 4, NAN, dev, NULL, &e) == CPLAB_EINVAL;
  calls++, bad += cplab_bf16_to_e4m3((const uint16_t *)(dev + 1), 4, 1.0f, dev, NULL, &e) == CPLAB_EINVAL;
  calls++, bad += cplab_bf16_to_e4m3((const uint16_t *)dev, 4, INFINITY, dev, NULL, &e) == CPLAB_EINVAL;
  calls++, bad += cplab_gen_e4m3(1, 1, NULL, 4, 1.0f, NULL, &e) == CPLAB_EINVAL;
  calls++, bad += cplab_gen_e4m3(1, 1, dev, 4, NAN, NULL, &e) == CPLAB_EINVAL;
  kt_check(bad == calls, "bad arguments: %d of %d calls give CPLAB_EINVAL", bad, calls);
  kt_free(dev);
}

int main(void) {
  uint64_t rng;
  kt_begin("test_gpu_quant", &rng);
  check_gen();
  check_quant(&rng);
  check_arguments();
  kt_sync();
  return kt_end();
}
