/* GPU test: the streams, events and graphs of cplab_stream.h and the bf16
 * generator of cplab_kernels.h:
 *   - cplab_gen_bf16: bit for bit against cplab_gen_bf16_host over several
 *     counts, seeds, tensors and scales (nothing written past count); values
 *     finite, within |scale|, mean near 0, seed and tensor change them;
 *   - cplab_dev_copy_async: random bytes, odd sizes and offsets, the bytes
 *     around the destination range untouched;
 *   - cplab_dev_copy2d_async: rows between different pitches, odd offsets,
 *     the gaps between the rows untouched; a width beyond a pitch refused;
 *   - graphs: a body that generates into A and copies A -> B, captured once:
 *     capture runs nothing (A and B keep their sentinel), each of two launches
 *     (A and B reset to the sentinel in between) gives the expected B; a body
 *     that fails after one launch gives its error and message from the
 *     capture, and the stream then still copies and captures; the legacy
 *     stream (NULL) cannot be captured;
 *   - events: elapsed time around some work finite and >= 0;
 *   - holds: an event pair around a hold of 0, 1 and 3000 us spans at least
 *     that; work queued behind a hold runs in full; one over the maximum is
 *     refused;
 *   - bad arguments: CPLAB_EINVAL.
 * The same program runs under the CPU emulation (tests/emu/emu_stream.sh),
 * where tests/emu/stream_host.cpp stands in for kernels/stream.cu: there a
 * graph calls its body at each launch, so a failing body's error comes from
 * the first launch instead of the capture (accepted only when the capture
 * returned a graph; a GPU graph launch cannot return the body's code). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab_stream.h"
#include "kt.h"

#define SENTINEL_BYTE 0x5A
#define SENTINEL_BF16 0x5A5Au
#define GEN_PAD 64 /* values after count that must stay untouched */

/* |x| <= |scale| rounded up to bf16 (the largest value bf16(scale · v) can
 * take for |v| < 1). */
static int within_scale(double x, float scale) { return fabs(x) <= fabs((double)scale) * (1.0 + 0x1p-8); }

static int bf16_finite(uint16_t b) { return (b & 0x7F80u) != 0x7F80u; }

/* One generator case: count values (+ GEN_PAD sentinel values after them). */
static void gen_case(uint64_t seed, uint32_t tensor, int64_t count, float scale, void *stream) {
  size_t n = (size_t)count + GEN_PAD;
  uint16_t *dev = kt_dev(n * 2);
  kt_ok(cplab_poison_bytes(dev, n * 2, SENTINEL_BYTE, stream, kt_diag()), "cplab_poison_bytes");
  kt_ok(cplab_gen_bf16(seed, tensor, dev, count, scale, stream, kt_diag()), "cplab_gen_bf16");
  kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
  uint16_t *got = kt_host(n * 2);
  kt_down(got, dev, n * 2);
  int64_t wrong = 0, first_wrong = -1, nonfinite = 0, outside = 0, pad_touched = 0, neg = 0, pos = 0;
  double sum = 0;
  for (int64_t i = 0; i < count; i++) {
    uint16_t want = cplab_gen_bf16_host(seed, tensor, i, scale);
    if (got[i] != want && wrong++ == 0) first_wrong = i;
    double x = kt_bf16(got[i]);
    if (!bf16_finite(got[i])) nonfinite++;
    else if (!within_scale(x, scale)) outside++;
    else sum += x;
    neg += x < 0, pos += x > 0;
  }
  for (size_t i = (size_t)count; i < n; i++) pad_touched += got[i] != SENTINEL_BF16;
  double mean = count ? sum / (double)count : 0;
  /* The mean of count uniform values on (-1, 1) · scale: sd |scale| / sqrt(3 count). */
  double mean_bound = count ? 6.0 * fabs((double)scale) / sqrt(3.0 * (double)count) : 0;
  int mean_ok = count < 1000 || fabs(mean) <= mean_bound;
  int signs_ok = count < 64 || (neg > 0 && pos > 0);
  kt_check(wrong == 0 && nonfinite == 0 && outside == 0 && pad_touched == 0 && mean_ok && signs_ok,
           "gen_bf16 seed %llu tensor %u count %lld scale %g: %lld differ from the host (first at %lld), "
           "%lld non-finite, %lld beyond |scale|, %lld padding values written, mean %.3g (bound %.3g), "
           "%lld < 0, %lld > 0",
           (unsigned long long)seed, tensor, (long long)count, (double)scale, (long long)wrong,
           (long long)first_wrong, (long long)nonfinite, (long long)outside, (long long)pad_touched, mean,
           mean_bound, (long long)neg, (long long)pos);
  free(got);
  kt_free(dev);
}

static void check_gen(uint64_t *rng, void *stream) {
  static const int64_t counts[] = {1, 2, 255, 256, 257, 4099, 100003};
  static const float scales[] = {1.0f, 0.02f, 0.3f, -2.5f, 1e-36f /* subnormal products */, 3e38f};
  static const uint32_t tensors[] = {0, 7, UINT32_MAX};
  uint64_t seeds[] = {0, 1, kt_next(rng)};
  for (int c = 0; c < (int)(sizeof counts / sizeof *counts); c++)
    gen_case(seeds[c % 3], tensors[(c / 3) % 3], counts[c], scales[c % 6], stream);
  for (int s = 0; s < 6; s++) gen_case(seeds[s % 3], tensors[s % 3], 5000, scales[s], stream);
  /* Beyond one grid (65536 blocks of 256): the grid-stride loop (about 1 s
   * under emulation). */
  gen_case(seeds[2], 3, ((int64_t)1 << 24) + 1000, 0.05f, stream);

  /* Seed and tensor change the values; count 0 writes nothing. */
  int64_t n = 4096, same_seed = 0, same_tensor = 0;
  for (int64_t i = 0; i < n; i++) {
    uint16_t a = cplab_gen_bf16_host(seeds[2], 5, i, 1.0f);
    same_seed += a == cplab_gen_bf16_host(seeds[2] + 1, 5, i, 1.0f);
    same_tensor += a == cplab_gen_bf16_host(seeds[2], 6, i, 1.0f);
  }
  /* bf16 of a uniform value: equal by chance about 1 time in 2^8 or less. */
  kt_check(same_seed < n / 32 && same_tensor < n / 32,
           "gen_bf16: of %lld values, %lld equal under seed + 1, %lld under tensor + 1", (long long)n,
           (long long)same_seed, (long long)same_tensor);
  kt_check(cplab_gen_bf16(1, 0, NULL, 0, 1.0f, stream, kt_diag()) == 0, "gen_bf16 of 0 values (NULL out) is a no-op");
}

/* ---- copies ------------------------------------------------------------------ */

static void check_copy(uint64_t *rng, void *stream) {
  enum { N = 20000 };
  static const size_t cases[][3] = {/* bytes, src offset, dst offset */
                                    {1, 0, 0},    {3, 1, 5},       {4, 0, 0},     {255, 7, 3},  {4097, 3, 7},
                                    {9001, 13, 0}, {16384, 0, 1001}, {19999, 1, 0}, {N, 0, 0}};
  uint8_t *src = kt_host(N), *want = kt_host(N), *got = kt_host(N);
  for (int i = 0; i < N; i++) src[i] = (uint8_t)kt_next(rng);
  uint8_t *dsrc = kt_dev_from(src, N), *ddst = kt_dev(N);
  int bad_cases = 0;
  for (int c = 0; c < (int)(sizeof cases / sizeof *cases); c++) {
    size_t bytes = cases[c][0], so = cases[c][1], dof = cases[c][2];
    kt_ok(cplab_poison_bytes(ddst, N, SENTINEL_BYTE, stream, kt_diag()), "cplab_poison_bytes");
    kt_ok(cplab_dev_copy_async(ddst + dof, dsrc + so, bytes, stream, kt_diag()), "cplab_dev_copy_async");
    kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
    kt_down(got, ddst, N);
    memset(want, SENTINEL_BYTE, N);
    memcpy(want + dof, src + so, bytes);
    size_t wrong = 0;
    for (int i = 0; i < N; i++) wrong += got[i] != want[i];
    if (wrong)
      bad_cases++, printf("  copy of %zu bytes (src +%zu, dst +%zu): %zu bytes wrong\n", bytes, so, dof, wrong);
  }
  kt_check(bad_cases == 0, "dev_copy_async: %d cases (sizes 1..%d, odd offsets), %d wrong",
           (int)(sizeof cases / sizeof *cases), N, bad_cases);
  /* bytes 0: nothing, NULL pointers allowed. */
  kt_check(cplab_dev_copy_async(NULL, NULL, 0, stream, kt_diag()) == 0, "dev_copy_async of 0 bytes is a no-op");
  free(src), free(want), free(got);
  kt_free(dsrc), kt_free(ddst);
}

/* Strided copies: rows of `width` bytes between pitches, the gaps between
 * rows untouched (the batched engine's head slices). */
static void check_copy2d(uint64_t *rng, void *stream) {
  enum { N = 8192 };
  static const size_t cases[][4] = {/* width, rows, src pitch, dst pitch */
                                    {1, 1, 1, 1}, {64, 16, 256, 64}, {100, 7, 100, 300}, {255, 30, 256, 257},
                                    {2048, 3, 2048, 2048}};
  uint8_t *src = kt_host(N), *want = kt_host(N), *got = kt_host(N);
  for (int i = 0; i < N; i++) src[i] = (uint8_t)kt_next(rng);
  uint8_t *dsrc = kt_dev_from(src, N), *ddst = kt_dev(N);
  int bad_cases = 0;
  for (int c = 0; c < (int)(sizeof cases / sizeof *cases); c++) {
    size_t width = cases[c][0], rows = cases[c][1], sp = cases[c][2], dp = cases[c][3];
    kt_ok(cplab_poison_bytes(ddst, N, SENTINEL_BYTE, stream, kt_diag()), "cplab_poison_bytes");
    kt_ok(cplab_dev_copy2d_async(ddst + 3, dp, dsrc + 1, sp, width, rows, stream, kt_diag()), "cplab_dev_copy2d_async");
    kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
    kt_down(got, ddst, N);
    memset(want, SENTINEL_BYTE, N);
    for (size_t i = 0; i < rows; i++) memcpy(want + 3 + i * dp, src + 1 + i * sp, width);
    size_t wrong = 0;
    for (int i = 0; i < N; i++) wrong += got[i] != want[i];
    if (wrong) bad_cases++, printf("  2-D copy %zu x %zu (pitches %zu, %zu): %zu bytes wrong\n", rows, width, sp, dp, wrong);
  }
  kt_check(bad_cases == 0, "dev_copy2d_async: %d cases, %d wrong", (int)(sizeof cases / sizeof *cases), bad_cases);
  kt_check(cplab_dev_copy2d_async(NULL, 0, NULL, 0, 0, 5, stream, kt_diag()) == 0, "dev_copy2d_async of width 0 is a no-op");
  cplab_diag dd = {0};
  kt_check(cplab_dev_copy2d_async(ddst, 8, dsrc, 16, 9, 2, stream, &dd) == CPLAB_EINVAL,
           "dev_copy2d_async refuses a width beyond the destination pitch");
  free(src), free(want), free(got);
  kt_free(dsrc), kt_free(ddst);
}

/* ---- graphs -------------------------------------------------------------------- */

typedef struct graph_ctx {
  uint64_t seed;
  uint32_t tensor;
  int64_t count;
  float scale;
  uint16_t *a, *b; /* device, count values each */
  int fail;        /* fail after the first launch */
} graph_ctx;

#define BODY_FAILURE CPLAB_ERANGE
#define BODY_FAILURE_MSG "test body: planned failure"

/* Launches only (no synchronisation, no allocation): the capture's rules. */
static int graph_body(void *p, void *stream, cplab_diag *d) {
  const graph_ctx *c = p;
  int rc = cplab_gen_bf16(c->seed, c->tensor, c->a, c->count, c->scale, stream, d);
  if (rc) return rc;
  if (c->fail) return cplab_diag_set(d, BODY_FAILURE, BODY_FAILURE_MSG);
  return cplab_dev_copy_async(c->b, c->a, (size_t)c->count * 2, stream, d);
}

/* Number of values of dev (count) that differ from want (NULL: the sentinel). */
static int64_t count_wrong(const uint16_t *dev, int64_t count, const uint16_t *want) {
  uint16_t *got = kt_host((size_t)count * 2);
  kt_down(got, dev, (size_t)count * 2);
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; i++) wrong += got[i] != (want ? want[i] : SENTINEL_BF16);
  free(got);
  return wrong;
}

static void reset(graph_ctx *c, void *stream) {
  kt_ok(cplab_poison_bytes(c->a, (size_t)c->count * 2, SENTINEL_BYTE, stream, kt_diag()), "cplab_poison_bytes");
  kt_ok(cplab_poison_bytes(c->b, (size_t)c->count * 2, SENTINEL_BYTE, stream, kt_diag()), "cplab_poison_bytes");
  kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
}

static void check_graph(uint64_t *rng, void *stream) {
  graph_ctx c = {kt_next(rng), 11, 50001, 0.125f, NULL, NULL, 0};
  c.a = kt_dev((size_t)c.count * 2);
  c.b = kt_dev((size_t)c.count * 2);
  uint16_t *want = kt_host((size_t)c.count * 2);
  for (int64_t i = 0; i < c.count; i++) want[i] = cplab_gen_bf16_host(c.seed, c.tensor, i, c.scale);
  reset(&c, stream);

  cplab_graph *g = NULL;
  kt_ok(cplab_graph_capture(stream, graph_body, &c, &g, kt_diag()), "cplab_graph_capture");
  kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
  int64_t a_after_capture = count_wrong(c.a, c.count, NULL), b_after_capture = count_wrong(c.b, c.count, NULL);
  kt_check(g && a_after_capture == 0 && b_after_capture == 0,
           "graph capture ran nothing: %lld of A, %lld of B changed from the sentinel",
           (long long)a_after_capture, (long long)b_after_capture);
  for (int launch = 1; launch <= 2; launch++) {
    kt_ok(cplab_graph_launch(g, stream, kt_diag()), "cplab_graph_launch");
    kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
    int64_t wa = count_wrong(c.a, c.count, want), wb = count_wrong(c.b, c.count, want);
    kt_check(wa == 0 && wb == 0, "graph launch %d (gen into A, copy A -> B, %lld values): %lld of A, %lld of B wrong",
             launch, (long long)c.count, (long long)wa, (long long)wb);
    reset(&c, stream); /* the next launch must write them again */
  }
  cplab_graph_destroy(g);

  /* A body that fails after one launch: its error, its message, no graph;
   * the capture is over and the stream works. */
  graph_ctx f = c;
  f.fail = 1;
  cplab_diag dd = {0};
  g = NULL;
  int rc = cplab_graph_capture(stream, graph_body, &f, &g, &dd);
  const char *where = "capture";
  if (rc == 0 && g) { /* the CPU emulation runs the body at launch (see the top) */
    where = "first launch (emulation)";
    rc = cplab_graph_launch(g, stream, &dd);
    kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
    reset(&c, stream);
    cplab_graph_destroy(g);
    g = NULL;
  }
  kt_check(rc == BODY_FAILURE && !g && strstr(dd.msg, BODY_FAILURE_MSG) != NULL,
           "failing body: %s gives %s (want %s), message \"%s\"", where, cplab_err_name(rc),
           cplab_err_name(BODY_FAILURE), dd.msg);
  kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
  int64_t a_untouched = count_wrong(c.a, c.count, NULL);
  kt_ok(cplab_gen_bf16(c.seed, c.tensor, c.a, c.count, c.scale, stream, kt_diag()), "cplab_gen_bf16 after failure");
  kt_ok(cplab_dev_copy_async(c.b, c.a, (size_t)c.count * 2, stream, kt_diag()), "cplab_dev_copy_async after failure");
  kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
  int64_t b_copied = count_wrong(c.b, c.count, want);
  kt_check(a_untouched == 0 && b_copied == 0,
           "after the failed capture: the discarded launch wrote %lld of A; gen + copy on the stream: %lld of B wrong",
           (long long)a_untouched, (long long)b_copied);
  reset(&c, stream);
  rc = cplab_graph_capture(stream, graph_body, &c, &g, kt_diag());
  kt_ok(rc, "cplab_graph_capture after a failed one");
  kt_ok(cplab_graph_launch(g, stream, kt_diag()), "cplab_graph_launch");
  kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
  int64_t wb = count_wrong(c.b, c.count, want);
  kt_check(wb == 0, "capture and launch after the failed capture: %lld of B wrong", (long long)wb);
  cplab_graph_destroy(g);

  /* The legacy stream cannot be captured. */
  cplab_diag_clear(&dd);
  g = (cplab_graph *)&dd; /* must be reset to NULL */
  rc = cplab_graph_capture(NULL, graph_body, &c, &g, &dd);
  kt_check(rc == CPLAB_EINVAL && g == NULL, "graph capture on the legacy stream (NULL): %s, \"%s\"",
           cplab_err_name(rc), dd.msg);

  free(want);
  kt_free(c.a), kt_free(c.b);
}

/* ---- events ---------------------------------------------------------------------- */

static void check_events(uint64_t *rng, void *stream) {
  cplab_event *e0 = NULL, *e1 = NULL;
  kt_ok(cplab_event_create(&e0, kt_diag()), "cplab_event_create");
  kt_ok(cplab_event_create(&e1, kt_diag()), "cplab_event_create");
  int64_t n = 1 << 20;
  uint16_t *buf = kt_dev((size_t)n * 2);
  kt_ok(cplab_event_record(e0, stream, kt_diag()), "cplab_event_record");
  kt_ok(cplab_gen_bf16(kt_next(rng), 1, buf, n, 1.0f, stream, kt_diag()), "cplab_gen_bf16");
  kt_ok(cplab_event_record(e1, stream, kt_diag()), "cplab_event_record");
  float ms = -1;
  kt_ok(cplab_event_elapsed_ms(e0, e1, &ms, kt_diag()), "cplab_event_elapsed_ms");
  kt_check(isfinite(ms) && ms >= 0, "event elapsed time around gen_bf16 of %lld values: %g ms", (long long)n,
           (double)ms);
  /* The same pair again, nothing in between. */
  kt_ok(cplab_event_record(e0, stream, kt_diag()), "cplab_event_record");
  kt_ok(cplab_event_record(e1, stream, kt_diag()), "cplab_event_record");
  ms = -1;
  kt_ok(cplab_event_elapsed_ms(e0, e1, &ms, kt_diag()), "cplab_event_elapsed_ms");
  kt_check(isfinite(ms) && ms >= 0, "event elapsed time of nothing: %g ms", (double)ms);
  cplab_event_destroy(e0);
  cplab_event_destroy(e1);
  kt_free(buf);
}

/* ---- holding a stream --------------------------------------------------------------- */

/* A hold keeps the stream busy its microseconds: an event pair around it
 * spans them, and work queued behind it runs after it, in full. */
static void check_hold(uint64_t *rng, void *stream) {
  cplab_event *e0 = NULL, *e1 = NULL;
  kt_ok(cplab_event_create(&e0, kt_diag()), "cplab_event_create");
  kt_ok(cplab_event_create(&e1, kt_diag()), "cplab_event_create");
  static const unsigned holds[] = {0, 1, 3000};
  for (int i = 0; i < 3; i++) {
    float ms = -1;
    kt_ok(cplab_event_record(e0, stream, kt_diag()), "cplab_event_record");
    kt_ok(cplab_dev_hold_async(stream, holds[i], kt_diag()), "cplab_dev_hold_async");
    kt_ok(cplab_event_record(e1, stream, kt_diag()), "cplab_event_record");
    kt_ok(cplab_event_elapsed_ms(e0, e1, &ms, kt_diag()), "cplab_event_elapsed_ms");
    kt_check(isfinite(ms) && ms >= 1e-3 * holds[i] && ms < 1e-3 * holds[i] + 1000,
             "a hold of %u us: the event pair around it spans %.3f ms", holds[i], (double)ms);
  }
  int64_t n = 4099;
  uint64_t seed = kt_next(rng);
  uint16_t *buf = kt_dev((size_t)n * 2), *want = kt_host((size_t)n * 2);
  for (int64_t i = 0; i < n; i++) want[i] = cplab_gen_bf16_host(seed, 3, i, 1.0f);
  kt_ok(cplab_poison_bytes(buf, (size_t)n * 2, SENTINEL_BYTE, stream, kt_diag()), "cplab_poison_bytes");
  kt_ok(cplab_dev_hold_async(stream, 2000, kt_diag()), "cplab_dev_hold_async");
  kt_ok(cplab_gen_bf16(seed, 3, buf, n, 1.0f, stream, kt_diag()), "cplab_gen_bf16");
  kt_ok(cplab_dev_sync(stream, kt_diag()), "cplab_dev_sync");
  kt_check(count_wrong(buf, n, want) == 0, "gen_bf16 queued behind a 2 ms hold ran in full after it");
  cplab_diag dd = {0};
  kt_check(cplab_dev_hold_async(stream, CPLAB_HOLD_MAX_US + 1, &dd) == CPLAB_EINVAL && strstr(dd.msg, "more than"),
           "a hold over CPLAB_HOLD_MAX_US is refused: \"%s\"", dd.msg);
  free(want);
  kt_free(buf);
  cplab_event_destroy(e0);
  cplab_event_destroy(e1);
}

/* ---- bad arguments ------------------------------------------------------------------ */

static void check_bad_arguments(void *stream) {
  cplab_diag dd = {0};
  int pass = 1, n_checked = 0;
  uint16_t *buf = kt_dev(64);
  cplab_event *e = NULL;
  kt_ok(cplab_event_create(&e, kt_diag()), "cplab_event_create");
  cplab_graph *g = NULL;
  float ms;
#define EXPECT_EINVAL(call)                                                                          \
  do {                                                                                               \
    n_checked++;                                                                                     \
    cplab_diag_clear(&dd);                                                                           \
    int rc_ = (call);                                                                                \
    if (rc_ != CPLAB_EINVAL)                                                                         \
      pass = 0, printf("  not CPLAB_EINVAL but %s: %s (%s)\n", cplab_err_name(rc_), #call, dd.msg); \
  } while (0)
  EXPECT_EINVAL(cplab_stream_create(NULL, &dd));
  EXPECT_EINVAL(cplab_dev_copy_async(NULL, buf, 2, stream, &dd));
  EXPECT_EINVAL(cplab_dev_copy_async(buf, NULL, 2, stream, &dd));
  EXPECT_EINVAL(cplab_event_create(NULL, &dd));
  EXPECT_EINVAL(cplab_event_record(NULL, stream, &dd));
  EXPECT_EINVAL(cplab_event_elapsed_ms(NULL, e, &ms, &dd));
  EXPECT_EINVAL(cplab_event_elapsed_ms(e, NULL, &ms, &dd));
  EXPECT_EINVAL(cplab_event_elapsed_ms(e, e, NULL, &dd));
  EXPECT_EINVAL(cplab_graph_capture(stream, NULL, NULL, &g, &dd));
  EXPECT_EINVAL(cplab_graph_capture(stream, graph_body, NULL, NULL, &dd));
  EXPECT_EINVAL(cplab_graph_capture(NULL, graph_body, NULL, &g, &dd));
  EXPECT_EINVAL(cplab_graph_launch(NULL, stream, &dd));
  EXPECT_EINVAL(cplab_gen_bf16(1, 0, NULL, 4, 1.0f, stream, &dd));
  EXPECT_EINVAL(cplab_gen_bf16(1, 0, (uint16_t *)((char *)buf + 1), 4, 1.0f, stream, &dd));
  EXPECT_EINVAL(cplab_gen_bf16(1, 0, buf, -1, 1.0f, stream, &dd));
  EXPECT_EINVAL(cplab_gen_bf16(1, 0, buf, 4, INFINITY, stream, &dd));
  EXPECT_EINVAL(cplab_gen_bf16(1, 0, buf, 4, NAN, stream, &dd));
#undef EXPECT_EINVAL
  /* NULL is a no-op for the destructors. */
  kt_ok(cplab_stream_destroy(NULL, kt_diag()), "cplab_stream_destroy(NULL)");
  cplab_event_destroy(NULL);
  cplab_graph_destroy(NULL);
  kt_check(pass && g == NULL, "bad arguments: %d calls give CPLAB_EINVAL, no graph", n_checked);
  cplab_event_destroy(e);
  kt_free(buf);
}

int main(void) {
  uint64_t rng;
  kt_begin("test_gpu_stream", &rng);
  void *stream = NULL;
  kt_ok(cplab_stream_create(&stream, kt_diag()), "cplab_stream_create");
  kt_check(stream != NULL, "stream_create gives a stream other than the legacy one");
  check_gen(&rng, stream);
  check_copy(&rng, stream);
  check_copy2d(&rng, stream);
  check_graph(&rng, stream);
  check_events(&rng, stream);
  check_hold(&rng, stream);
  check_bad_arguments(stream);
  kt_ok(cplab_stream_destroy(stream, kt_diag()), "cplab_stream_destroy");
  return kt_end();
}
