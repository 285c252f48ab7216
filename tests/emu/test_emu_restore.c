/* Kernel test of cplab_restore_rows (kernels/restore.cu): written for the
 * CPU emulation, and plain C against cplab_kernels.h, so it runs on a GPU
 * too (tests/gpu/gpu_restore.sh builds it against the real kernels; the
 * executor's output path runs the kernel there as well). Against the
 * contract in cplab_kernels.h, bit for bit:
 *   - out[g] = gathered[restore_idx[g]] for an index in [0, gathered_rows),
 *     a row of CPLAB_BF16_POISON for any other (-1, gathered_rows, INT32_MIN,
 *     INT32_MAX), rows of 576 bf16 (the MLA row) and of 2, 62 and 1030
 *     (fewer and more words than a warp's 32 lanes);
 *   - both of the kernel's paths: 16-byte words (both buffers 16-byte
 *     aligned, row_elems % 8 == 0: rows of 8, 16, 576, 776 and 1544 bf16,
 *     one, two and three passes of a warp's 96 words) and 4-byte words (any
 *     other: row_elems % 8 != 0, or gathered / out only 4- or 8-byte
 *     aligned); row counts around the 2 rows of a warp and the 16 of a
 *     block (1, 2, 3, 15, 16, 17, 33), so that the grid's last warp and
 *     block are partial; nothing written outside the n rows (guard bytes
 *     before and after the output keep their fill);
 *   - n = 0 writes nothing; an odd row_elems or a NULL map is CPLAB_EINVAL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kt.h"

#define GUARD_BYTES 64 /* before and after the output rows, filled with GUARD_FILL */
#define GUARD_FILL 0x5A

/* n rows of row_elems bf16 restored from gathered_rows rows; the gathered
 * rows start g_off and the output rows o_off bf16 after a 256-byte aligned
 * address (offsets of 2 bf16 and up: 4-byte aligned, as the contract wants). */
static void restore_case_at(uint64_t *rng, int64_t gathered_rows, int64_t n, int row_elems, int g_off, int o_off) {
  size_t gbytes = (size_t)gathered_rows * row_elems * 2, obytes = (size_t)n * row_elems * 2;
  size_t obuf = GUARD_BYTES + (size_t)o_off * 2 + obytes + GUARD_BYTES;
  uint16_t *g = kt_host(gbytes ? gbytes : 2), *out = kt_host(obuf);
  int32_t *idx = kt_host((size_t)n * 4);
  for (size_t i = 0; i < gbytes / 2; i++) g[i] = (uint16_t)kt_next(rng);
  static const int32_t bad[] = {-1, INT32_MIN, INT32_MAX};
  int64_t invalid = 0;
  for (int64_t r = 0; r < n; r++) {
    int64_t u = kt_int(rng, 0, 9);
    if (u == 0 || gathered_rows == 0) idx[r] = bad[kt_int(rng, 0, 2)];
    else if (u == 1) idx[r] = (int32_t)gathered_rows; /* one past the end */
    else idx[r] = (int32_t)kt_int(rng, 0, gathered_rows - 1);
    invalid += idx[r] < 0 || idx[r] >= gathered_rows;
  }
  uint16_t *d_gbuf = kt_dev(gbytes + (size_t)g_off * 2 + 2), *d_obuf = kt_dev(obuf);
  uint16_t *d_g = d_gbuf + g_off, *d_out = (uint16_t *)(void *)((char *)d_obuf + GUARD_BYTES) + o_off;
  if (gbytes) kt_ok(cplab_dev_upload(d_g, g, gbytes, kt_diag()), "cplab_dev_upload");
  kt_ok(cplab_poison_bytes(d_obuf, obuf, GUARD_FILL, NULL, kt_diag()), "cplab_poison_bytes");
  int32_t *d_idx = kt_dev_from(idx, (size_t)n * 4);
  kt_ok(cplab_restore_rows(&(cplab_restore_rows_params){.gathered = d_g, .gathered_rows = gathered_rows,
                                                        .restore_idx = d_idx, .n = n, .row_elems = row_elems,
                                                        .out = d_out}, NULL, kt_diag()), "cplab_restore_rows");
  kt_sync();
  kt_down(out, d_obuf, obuf);
  const uint16_t *rows = (const uint16_t *)(const void *)((const char *)out + GUARD_BYTES) + o_off;
  int64_t wrong = 0;
  for (int64_t r = 0; r < n; r++) {
    const uint16_t *o = rows + r * row_elems;
    int valid = idx[r] >= 0 && idx[r] < gathered_rows;
    int ok = 1;
    for (int c = 0; c < row_elems; c++)
      ok &= o[c] == (valid ? g[(int64_t)idx[r] * row_elems + c] : (uint16_t)CPLAB_BF16_POISON);
    if (!ok && wrong++ == 0) printf("# row %lld (index %d) differs\n", (long long)r, idx[r]);
  }
  size_t before = GUARD_BYTES + (size_t)o_off * 2, guard_bad = 0;
  for (size_t b = 0; b < obuf; b++)
    if (b < before || b >= before + obytes) guard_bad += ((const uint8_t *)out)[b] != GUARD_FILL;
  int fast = row_elems % 8 == 0 && g_off % 8 == 0 && o_off % 8 == 0;
  kt_check(wrong == 0 && guard_bad == 0,
           "restore_rows: %lld rows of %d bf16 from %lld gathered rows (offsets %d / %d bf16: %s words; %lld "
           "indices outside -> poison): %lld rows wrong, %zu bytes written outside",
           (long long)n, row_elems, (long long)gathered_rows, g_off, o_off, fast ? "16-byte" : "4-byte",
           (long long)invalid, (long long)wrong, guard_bad);
  kt_free(d_gbuf), kt_free(d_obuf), kt_free(d_idx);
  free(g), free(out), free(idx);
}

static void restore_case(uint64_t *rng, int64_t gathered_rows, int64_t n, int row_elems) {
  restore_case_at(rng, gathered_rows, n, row_elems, 0, 0);
}

/* Both paths over the row lengths, row counts and alignments above. */
static void restore_paths(uint64_t *rng) {
  static const int fast_rows[] = {8, 16, 776, 1544};
  for (size_t i = 0; i < sizeof fast_rows / sizeof fast_rows[0]; i++) restore_case(rng, 37, 45, fast_rows[i]);
  static const int64_t counts[] = {1, 2, 3, 15, 16, 17, 33};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    restore_case(rng, 24, counts[i], 576);
    restore_case_at(rng, 24, counts[i], 6, 0, 0);
  }
  restore_case_at(rng, 50, 37, 576, 2, 0);  /* gathered 4-byte aligned only */
  restore_case_at(rng, 50, 37, 576, 0, 2);  /* out 4-byte aligned only */
  restore_case_at(rng, 50, 37, 576, 4, 4);  /* both 8-byte aligned only */
  restore_case_at(rng, 50, 37, 576, 8, 16); /* 16-byte aligned, not 256 */
  restore_case_at(rng, 50, 37, 580, 0, 0);  /* 290 words, 4 passes of the 4-byte path */
  restore_case_at(rng, 0, 17, 576, 0, 0);   /* nothing gathered: every row poison */
}

static void restore_edges(void) {
  uint16_t *d_out = kt_dev(64);
  int32_t idx[1] = {0};
  int32_t *d_idx = kt_dev_from(idx, sizeof idx);
  uint16_t host[32];
  kt_ok(cplab_poison_bytes(d_out, 64, 0x11, NULL, kt_diag()), "cplab_poison_bytes");
  cplab_diag d = {0};
  cplab_restore_rows_params p = {.gathered = d_out, .gathered_rows = 1, .restore_idx = d_idx, .n = 0,
                                 .row_elems = 32, .out = d_out};
  int rc0 = cplab_restore_rows(&p, NULL, &d);
  p.n = 1, p.row_elems = 31;
  int rc_odd = cplab_restore_rows(&p, NULL, &d);
  p.row_elems = 32, p.restore_idx = NULL;
  int rc_null = cplab_restore_rows(&p, NULL, &d);
  cplab_diag dp = {0};
  int rc_params = cplab_restore_rows(NULL, NULL, &dp);
  kt_sync();
  kt_down(host, d_out, 64);
  int untouched = 1;
  for (int i = 0; i < 32; i++) untouched &= host[i] == 0x1111;
  kt_check(rc0 == 0 && rc_odd == CPLAB_EINVAL && rc_null == CPLAB_EINVAL && untouched,
           "restore_rows edges: n = 0 rc %d, odd row rc %d, NULL map rc %d, output untouched: %s", rc0, rc_odd,
           rc_null, untouched ? "yes" : "no");
  kt_check(rc_params == CPLAB_EINVAL && strstr(dp.msg, "NULL parameters"),
           "restore_rows without its parameter struct: rc %d (%s)", rc_params, dp.msg);
  kt_free(d_out), kt_free(d_idx);
}

int main(void) {
  uint64_t rng;
  kt_begin("test_emu_restore", &rng);
  restore_case(&rng, 300, 1000, 576);
  restore_case(&rng, 7, 50, 2);
  restore_case(&rng, 40, 77, 62);
  restore_case(&rng, 20, 33, 1030);
  restore_paths(&rng);
  restore_edges();
  return kt_end();
}
