/* Shared helpers of the kernel tests: see kt.h. */
#include "kt.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_DEFAULT_SEED UINT64_C(20261129)

static const char *kt_prog = "kernel test";
static int kt_failures, kt_checks;
static cplab_diag kt_d;

cplab_diag *kt_diag(void) { return &kt_d; }

void kt_begin(const char *prog, uint64_t *rng) {
  kt_prog = prog;
  cplab_gpu_info info;
  int rc = cplab_gpu_query(&info, &kt_d);
  if (rc == CPLAB_ENODEV) {
    printf("SKIP: %s\n", kt_d.msg);
    exit(77);
  }
  kt_ok(rc, "cplab_gpu_query");
  const char *s = getenv("CPLAB_TEST_SEED");
  uint64_t seed = s ? strtoull(s, NULL, 10) : KT_DEFAULT_SEED;
  *rng = seed;
  printf("%s: device %s (sm_%d%d), CPLAB_TEST_SEED=%" PRIu64 "\n", prog, info.name, info.cc_major, info.cc_minor,
         seed);
  fflush(stdout);
}

int kt_model_size(const char *what) {
  const char *small = getenv("CPLAB_KT_SMALL");
  if (!small || strcmp(small, "1") != 0) return 1;
  printf("NOT RUN (CPLAB_KT_SMALL=1): %s\n", what);
  return 0;
}

int kt_end(void) {
  printf("%s: %d checks, %d failed\n", kt_prog, kt_checks, kt_failures);
  return kt_failures ? 1 : 0;
}

void kt_check(int ok, const char *fmt, ...) {
  va_list ap;
  kt_checks++;
  if (!ok) kt_failures++;
  printf("%s: ", ok ? "PASS" : "FAIL");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

void kt_ok(int rc, const char *what) {
  if (!rc) return;
  cplab_diag_prefix(&kt_d, "%s: ", what);
  cplab_diag_report(stderr, kt_prog, &kt_d);
  exit(1);
}

void *kt_dev(size_t bytes) {
  void *p = NULL;
  kt_ok(cplab_dev_alloc(&p, bytes, &kt_d), "cplab_dev_alloc");
  return p;
}

void *kt_dev_from(const void *host, size_t bytes) {
  void *p = kt_dev(bytes);
  kt_ok(cplab_dev_upload(p, host, bytes, &kt_d), "cplab_dev_upload");
  return p;
}

void kt_down(void *host, const void *dev, size_t bytes) {
  kt_ok(cplab_dev_download(host, dev, bytes, &kt_d), "cplab_dev_download");
}

void kt_sync(void) { kt_ok(cplab_dev_sync(NULL, &kt_d), "cplab_dev_sync"); }

void kt_free(void *dev) { kt_ok(cplab_dev_free(dev, &kt_d), "cplab_dev_free"); }

void *kt_host(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "%s: out of memory (%zu bytes)\n", kt_prog, bytes);
    exit(1);
  }
  return p;
}

uint64_t kt_next(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

int64_t kt_int(uint64_t *s, int64_t lo, int64_t hi) {
  return lo + (int64_t)(kt_next(s) % (uint64_t)(hi - lo + 1));
}

double kt_unit(uint64_t *s) { return (double)(kt_next(s) >> 11) * 0x1p-53; }

double kt_bf16(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
