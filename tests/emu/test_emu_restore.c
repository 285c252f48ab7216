/* Kernel test of cplab_restore_rows (kernels/restore.cu), which no test of
 * tests/gpu covers (the executor's output path runs it on a GPU): written for
 * the CPU emulation, and plain C against cplab_kernels.h, so it runs on a GPU
 * too. Against the contract in cplab_kernels.h, bit for bit:
 *   - out[g] = gathered[restore_idx[g]] for an index in [0, gathered_rows),
 *     a row of CPLAB_BF16_POISON for any other (-1, gathered_rows, INT32_MIN,
 *     INT32_MAX), rows of 576 bf16 (the MLA row) and of 2, 62 and 1030
 *     (fewer and more words than a warp's 32 lanes);
 *   - n = 0 writes nothing; an odd row_elems or a NULL map is CPLAB_EINVAL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kt.h"

static void restore_case(uint64_t *rng, int64_t gathered_rows, int64_t n, int row_elems) {
  size_t gbytes = (size_t)gathered_rows * row_elems * 2, obytes = (size_t)n * row_elems * 2;
  uint16_t *g = kt_host(gbytes), *out = kt_host(obytes);
  int32_t *idx = kt_host((size_t)n * 4);
  for (size_t i = 0; i < gbytes / 2; i++) g[i] = (uint16_t)kt_next(rng);
  static const int32_t bad[] = {-1, INT32_MIN, INT32_MAX};
  int64_t invalid = 0;
  for (int64_t r = 0; r < n; r++) {
    int64_t u = kt_int(rng, 0, 9);
    if (u == 0) idx[r] = bad[kt_int(rng, 0, 2)];
    else if (u == 1) idx[r] = (int32_t)gathered_rows; /* one past the end */
    else idx[r] = (int32_t)kt_int(rng, 0, gathered_rows - 1);
    invalid += idx[r] < 0 || idx[r] >= gathered_rows;
  }
  uint16_t *d_g = kt_dev_from(g, gbytes), *d_out = kt_dev(obytes);
  int32_t *d_idx = kt_dev_from(idx, (size_t)n * 4);
  kt_ok(cplab_restore_rows(d_g, gathered_rows, d_idx, n, row_elems, d_out, NULL, kt_diag()), "cplab_restore_rows");
  kt_sync();
  kt_down(out, d_out, obytes);
  int64_t wrong = 0;
  for (int64_t r = 0; r < n; r++) {
    const uint16_t *o = out + r * row_elems;
    int valid = idx[r] >= 0 && idx[r] < gathered_rows;
    int ok = 1;
    for (int c = 0; c < row_elems; c++)
      ok &= o[c] == (valid ? g[(int64_t)idx[r] * row_elems + c] : (uint16_t)CPLAB_BF16_POISON);
    if (!ok && wrong++ == 0) printf("# row %lld (index %d) differs\n", (long long)r, idx[r]);
  }
  kt_check(wrong == 0,
           "restore_rows: %lld rows of %d bf16 from %lld gathered rows (%lld indices outside -> poison): %lld rows "
           "wrong",
           (long long)n, row_elems, (long long)gathered_rows, (long long)invalid, (long long)wrong);
  kt_free(d_g), kt_free(d_out), kt_free(d_idx);
  free(g), free(out), free(idx);
}

static void restore_edges(void) {
  uint16_t *d_out = kt_dev(64);
  int32_t idx[1] = {0};
  int32_t *d_idx = kt_dev_from(idx, sizeof idx);
  uint16_t host[32];
  kt_ok(cplab_poison_bytes(d_out, 64, 0x11, NULL, kt_diag()), "cplab_poison_bytes");
  cplab_diag d = {0};
  int rc0 = cplab_restore_rows(d_out, 1, d_idx, 0, 32, d_out, NULL, &d);
  int rc_odd = cplab_restore_rows(d_out, 1, d_idx, 1, 31, d_out, NULL, &d);
  int rc_null = cplab_restore_rows(d_out, 1, NULL, 1, 32, d_out, NULL, &d);
  kt_sync();
  kt_down(host, d_out, 64);
  int untouched = 1;
  for (int i = 0; i < 32; i++) untouched &= host[i] == 0x1111;
  kt_check(rc0 == 0 && rc_odd == CPLAB_EINVAL && rc_null == CPLAB_EINVAL && untouched,
           "restore_rows edges: n = 0 rc %d, odd row rc %d, NULL map rc %d, output untouched: %s", rc0, rc_odd,
           rc_null, untouched ? "yes" : "no");
  kt_free(d_out), kt_free(d_idx);
}

int main(void) {
  uint64_t rng;
  kt_begin("test_emu_restore", &rng);
  restore_case(&rng, 300, 1000, 576);
  restore_case(&rng, 7, 50, 2);
  restore_case(&rng, 40, 77, 62);
  restore_case(&rng, 20, 33, 1030);
  restore_edges();
  return kt_end();
}
