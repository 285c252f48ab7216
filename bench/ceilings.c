/* The GPU's ceilings and the benchmarks' timing: see ceilings.h. */
#include "ceilings.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cplab/fp8.h"
#include "cplab_stream.h"

#ifndef CPLAB_BENCH_EMU
#include <cuda_runtime_api.h>
#endif

#define COPY_BUFS 3 /* at least: copy t is buffer t mod n -> buffer (t + 1) mod n */
#define SAMPLES 256 /* checked elements per GEMM */

static const float fp8_scale[5] = {0.5f, 0, 0, 0, 0.25f}; /* powers of two (the reference stays exact); a_scale at
                                                            [0], b_scale at [4]: 16-byte aligned, as cplab_gemm_fp8 asks */

int cplab_bench_l2_bytes(size_t *l2, cplab_diag *d) {
  *l2 = 0;
#ifndef CPLAB_BENCH_EMU
  int v = 0;
  cudaError_t e = cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, 0);
  if (e != cudaSuccess)
    CPLAB_FAIL(d, CPLAB_ECUDA, "cudaDeviceGetAttribute(cudaDevAttrL2CacheSize): %s", cudaGetErrorString(e));
  *l2 = (size_t)v;
#else
  (void)d;
#endif
  return 0;
}

uint64_t cplab_bench_splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* Uniform in [-r, r). */
static float uniform(uint64_t *s, float r) {
  return (float)((double)(cplab_bench_splitmix(s) >> 11) * 0x1p-52 - 1.0) * r;
}

/* n random bf16 in [-1, 1) or e4m3 in [-4, 4) (all binades, both signs). */
static void *random_matrix(size_t n, int fp8, uint64_t *rng) {
  if (fp8) {
    uint8_t *p = malloc(n ? n : 1);
    for (size_t i = 0; p && i < n; i++) p[i] = cplab_e4m3_from_f32(uniform(rng, 4.0f));
    return p;
  }
  uint16_t *p = malloc(2 * (n ? n : 1));
  for (size_t i = 0; p && i < n; i++) p[i] = cplab_bf16_from_f32(uniform(rng, 1.0f));
  return p;
}

int cplab_ceil_setup_gemm(cplab_ceil_op *o, cplab_ceil_shape s, int fp8, cplab_gemm *g, size_t l2, uint64_t *rng,
                          cplab_diag *d) {
  size_t es = fp8 ? 1 : 2, ab = (size_t)(s.m * s.k) * es, bb = (size_t)(s.n * s.k) * es, cb = (size_t)(s.m * s.n) * 2;
  size_t sets = (4 * l2 + ab + bb + cb - 1) / (ab + bb + cb);
  *o = (cplab_ceil_op){.gemm = 1, .fp8 = fp8, .s = s, .g = g,
                       .sets = sets < 2 ? 2 : sets > CPLAB_CEIL_MAX_SETS ? CPLAB_CEIL_MAX_SETS : (int)sets};
  snprintf(o->name, sizeof o->name, "%s %lldx%lldx%lld", fp8 ? "fp8" : "bf16", (long long)s.m, (long long)s.n,
           (long long)s.k);
  o->host_a = random_matrix((size_t)(s.m * s.k), fp8, rng);
  o->host_b = random_matrix((size_t)(s.n * s.k), fp8, rng);
  if (!o->host_a || !o->host_b) CPLAB_FAIL(d, CPLAB_ENOMEM, "%s: out of host memory", o->name);
  for (int i = 0; i < o->sets; i++) {
    int rc = cplab_dev_alloc(&o->a[i], ab, d);
    if (!rc) rc = cplab_dev_alloc(&o->b[i], bb, d);
    if (!rc) rc = cplab_dev_alloc(&o->c[i], cb, d);
    if (!rc) rc = i ? cplab_dev_copy(o->a[i], o->a[0], ab, d) : cplab_dev_upload(o->a[0], o->host_a, ab, d);
    if (!rc) rc = i ? cplab_dev_copy(o->b[i], o->b[0], bb, d) : cplab_dev_upload(o->b[0], o->host_b, bb, d);
    if (rc) return rc;
  }
  if (fp8) {
    int rc = cplab_dev_alloc((void **)&o->scales, sizeof fp8_scale, d);
    if (!rc) rc = cplab_dev_upload(o->scales, fp8_scale, sizeof fp8_scale, d);
    if (rc) return rc;
  }
  return 0;
}

int cplab_ceil_setup_copy(cplab_ceil_op *o, size_t bytes, size_t span, cplab_diag *d) {
  int n = COPY_BUFS;
  while (n < CPLAB_CEIL_MAX_SETS && (size_t)n * bytes < span) n++;
  *o = (cplab_ceil_op){.sets = n};
  if (bytes >= ((size_t)1 << 20)) snprintf(o->name, sizeof o->name, "copy %zu MiB", bytes >> 20);
  else snprintf(o->name, sizeof o->name, "copy %zu bytes", bytes);
  o->s.k = (int64_t)bytes;
  for (int i = 0; i < n; i++) {
    int rc = cplab_dev_alloc(&o->a[i], bytes, d);
    if (rc) return rc;
  }
  return 0;
}

void cplab_ceil_free(cplab_ceil_op *o) {
  cplab_diag d = {0}; /* freeing what was allocated cannot fail in a way worth reporting */
  for (int i = 0; i < o->sets; i++) {
    cplab_dev_free(o->a[i], &d);
    cplab_dev_free(o->b[i], &d);
    cplab_dev_free(o->c[i], &d);
  }
  cplab_dev_free(o->scales, &d);
  free(o->host_a), free(o->host_b);
  memset(o, 0, sizeof *o);
}

int cplab_ceil_run(void *op, void *stream, cplab_diag *d) {
  cplab_ceil_op *o = op;
  int s = o->turn++ % o->sets;
  if (!o->gemm) return cplab_dev_copy_async(o->a[(s + 1) % o->sets], o->a[s], (size_t)o->s.k, stream, d);
  if (o->fp8)
    return cplab_gemm_fp8(o->g, o->s.m, o->s.n, o->s.k, o->a[s], o->b[s], o->scales, o->scales + 4, o->c[s], stream,
                          d);
  return cplab_gemm_bf16(o->g, o->s.m, o->s.n, o->s.k, o->a[s], o->b[s], o->c[s], stream, d);
}

static double elem(const cplab_ceil_op *o, const void *m, size_t i) {
  return o->fp8 ? cplab_e4m3_to_f32(((const uint8_t *)m)[i]) : cplab_bf16_to_f32(((const uint16_t *)m)[i]);
}

static int check_copy(cplab_ceil_op *o, void *stream, cplab_ceil_verdict *v, cplab_diag *d) {
  /* buffer i holds bytes i + 1; after the copy (turn 0: buffer 0 -> 1), buffer 1 holds 1s */
  static uint8_t probe[3][4096];
  size_t bytes = (size_t)o->s.k, n = bytes < sizeof probe[0] ? bytes : sizeof probe[0];
  size_t at[3] = {0, (bytes - n) / 2, bytes - n};
  int rc = 0;
  for (int i = 0; !rc && i < o->sets; i++) rc = cplab_poison_bytes(o->a[i], bytes, (uint8_t)(i + 1), stream, d);
  o->turn = 0;
  if (!rc) rc = cplab_ceil_run(o, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  for (int p = 0; !rc && p < 3; p++) {
    rc = cplab_dev_download(probe[p], (uint8_t *)o->a[1] + at[p], n, d);
    for (size_t i = 0; !rc && i < n; i++, v->compared++)
      if (probe[p][i] != 1 && v->beyond++ == 0)
        snprintf(v->detail, sizeof v->detail, "%s: byte %zu not copied", o->name, at[p] + i);
  }
  v->ok = !rc && v->beyond == 0;
  if (v->ok)
    snprintf(v->detail, sizeof v->detail, "%s: %lld bytes of 3 probes (start, middle, end) copied", o->name,
             (long long)v->compared);
  return rc;
}

int cplab_ceil_check(cplab_ceil_op *o, void *stream, uint64_t *rng, cplab_ceil_verdict *v, cplab_diag *d) {
  *v = (cplab_ceil_verdict){0};
  if (!o->gemm) return check_copy(o, stream, v, d);
  int64_t m = o->s.m, n = o->s.n, k = o->s.k, count = m * n, nan_at = -1;
  uint16_t *c = malloc((size_t)count * 2);
  if (!c) CPLAB_FAIL(d, CPLAB_ENOMEM, "%s: out of host memory", o->name);
  double scale = o->fp8 ? (double)fp8_scale[0] * fp8_scale[4] : 1.0, num = 0, den = 0;
  o->turn = 0;
  int rc = cplab_poison_bf16(o->c[0], (size_t)count, stream, d);
  if (!rc) rc = cplab_ceil_run(o, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  if (!rc) rc = cplab_dev_download(c, o->c[0], (size_t)count * 2, d);
  for (int64_t e = 0; !rc && e < count; e++)
    if ((c[e] & 0x7FFF) > 0x7F80 && v->nan++ == 0) nan_at = e;
  if (!rc && nan_at >= 0)
    snprintf(v->detail, sizeof v->detail, "%s: C[%lld][%lld] is NaN: not written (%lld such)", o->name,
             (long long)(nan_at / n), (long long)(nan_at % n), (long long)v->nan);
  for (int t = 0; !rc && t < SAMPLES; t++) { /* the four corners, then random elements */
    int64_t i = t < 4 ? (t & 1) * (m - 1) : (int64_t)(cplab_bench_splitmix(rng) % (uint64_t)m);
    int64_t j = t < 4 ? (t >> 1) * (n - 1) : (int64_t)(cplab_bench_splitmix(rng) % (uint64_t)n);
    double ref = 0, abs_sum = 0;
    for (int64_t l = 0; l < k; l++) {
      double x = elem(o, o->host_a, (size_t)(i * k + l)) * elem(o, o->host_b, (size_t)(j * k + l));
      ref += x, abs_sum += fabs(x);
    }
    ref *= scale, abs_sum *= scale;
    double got = cplab_bf16_to_f32(c[i * n + j]), err = fabs(got - ref), allow = 0x1p-8 * fabs(ref) + 0x1p-10 * abs_sum;
    num += err * err, den += ref * ref, v->samples++, v->compared++;
    if (err / allow > v->worst || isnan(err)) v->worst = isnan(err) ? INFINITY : err / allow;
    if (!(err <= allow) && v->beyond++ == 0 && !v->nan)
      snprintf(v->detail, sizeof v->detail, "%s: C[%lld][%lld] = %.9g, reference %.9g (allowed error %.3g)", o->name,
               (long long)i, (long long)j, got, ref, allow);
  }
  free(c);
  if (rc) return rc;
  v->rel_frob = den > 0 ? sqrt(num / den) : 0;
  v->ok = !v->nan && !v->beyond && v->rel_frob < CPLAB_CEIL_TOL_FROB;
  if (!v->nan && !v->beyond && !v->ok)
    snprintf(v->detail, sizeof v->detail, "%s: relative Frobenius error %.3g over %d samples", o->name, v->rel_frob,
             SAMPLES);
  if (v->ok)
    snprintf(v->detail, sizeof v->detail, "%s: %d sampled elements, rel. Frobenius error %.2e, worst error/allowance %.3f",
             o->name, SAMPLES, v->rel_frob, v->worst);
  return 0;
}

int cplab_ceil_parse_shapes(const char *opt, const char *arg, cplab_ceil_shape *out, int max, int *n, cplab_diag *d) {
  *n = 0;
  for (const char *p = arg; *p;) {
    unsigned long long v[3];
    int used = 0;
    if (sscanf(p, "%llux%llux%llu%n", &v[0], &v[1], &v[2], &used) != 3 || (p[used] != ',' && p[used] != '\0'))
      CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: expected MxNxK%s, got '%s'", opt, max > 1 ? "[,MxNxK...]" : "", arg);
    for (int i = 0; i < 3; i++)
      if (v[i] < 16 || v[i] > 65536 || v[i] % 16)
        CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: %llu is not a multiple of 16 in [16, 65536] (fp8 GEMMs need it)", opt, v[i]);
    if (*n == max) CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: more than %d shape%s", opt, max, max > 1 ? "s" : "");
    out[(*n)++] = (cplab_ceil_shape){(int64_t)v[0], (int64_t)v[1], (int64_t)v[2]};
    p += used + (p[used] == ',');
  }
  if (*n == 0) CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: empty list", opt);
  return 0;
}

void cplab_ceil_work(const cplab_ceil_op *o, double *work, double *unit) {
  if (o->gemm) *work = 2.0 * (double)o->s.m * (double)o->s.n * (double)o->s.k, *unit = 1e12;
  else *work = 2.0 * (double)o->s.k, *unit = 1e9;
}

/* ---- timing and statistics ---------------------------------------------------- */

unsigned cplab_bench_lead_us(unsigned per_run_us, int nops, int reps, int warmup) {
  double us = (double)per_run_us * nops * (reps + warmup);
  return us < CPLAB_BENCH_LEAD_MAX_US ? (unsigned)us : CPLAB_BENCH_LEAD_MAX_US;
}

int cplab_bench_time(int nops, cplab_bench_run_fn run, void *const *ctx, int reps, int warmup, unsigned lead_us,
                     void *stream, double *const *t, cplab_bench_loop *loop, cplab_diag *d) {
  int runs = (warmup + reps) * nops, made = 0, rc = 0;
  struct timespec q0, q1;
  *loop = (cplab_bench_loop){0};
  cplab_event **ev = calloc(2 * (size_t)runs, sizeof *ev);
  if (!ev) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory for %d timing events", 2 * runs);
  for (; !rc && made < 2 * runs; made++) rc = cplab_event_create(&ev[made], d);
  if (!rc) rc = cplab_dev_hold_async(stream, lead_us, d);
  clock_gettime(CLOCK_MONOTONIC, &q0);
  for (int r = 0, e = 0; !rc && r < warmup + reps; r++)
    for (int i = 0; !rc && i < nops; i++, e += 2) {
      rc = cplab_event_record(ev[e], stream, d);
      if (!rc) rc = run(ctx[i], stream, d);
      if (!rc) rc = cplab_event_record(ev[e + 1], stream, d);
    }
  clock_gettime(CLOCK_MONOTONIC, &q1);
  loop->queue_s = (double)(q1.tv_sec - q0.tv_sec) + 1e-9 * (double)(q1.tv_nsec - q0.tv_nsec);
  if (!rc) rc = cplab_dev_sync(stream, d);
  double sum = 0;
  float ms = 0;
  for (int r = warmup, e = 2 * warmup * nops; !rc && r < warmup + reps; r++)
    for (int i = 0; !rc && i < nops; i++, e += 2) {
      rc = cplab_event_elapsed_ms(ev[e], ev[e + 1], &ms, d);
      t[i][r - warmup] = 1e-3 * ms, sum += 1e-3 * ms;
    }
  if (!rc && reps > 0) rc = cplab_event_elapsed_ms(ev[2 * warmup * nops], ev[2 * runs - 1], &ms, d);
  if (!rc) loop->busy = ms > 0 ? sum / (1e-3 * ms) : 1.0;
  for (int i = 0; i < made; i++) cplab_event_destroy(ev[i]);
  free(ev);
  return rc;
}

int cplab_bench_time_b2b(cplab_bench_run_fn run, void *ctx, int reps, int warmup, unsigned lead_us, void *stream,
                         double *mean_s, cplab_diag *d) {
  cplab_event *ev[2] = {NULL, NULL};
  float ms = 0;
  *mean_s = 0;
  if (reps < 1) CPLAB_FAIL(d, CPLAB_EINVAL, "back-to-back timing needs at least one run, not %d", reps);
  int rc = cplab_event_create(&ev[0], d);
  if (!rc) rc = cplab_event_create(&ev[1], d);
  if (!rc) rc = cplab_dev_hold_async(stream, lead_us, d);
  for (int r = 0; !rc && r < warmup; r++) rc = run(ctx, stream, d);
  if (!rc) rc = cplab_event_record(ev[0], stream, d);
  for (int r = 0; !rc && r < reps; r++) rc = run(ctx, stream, d);
  if (!rc) rc = cplab_event_record(ev[1], stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  if (!rc) rc = cplab_event_elapsed_ms(ev[0], ev[1], &ms, d);
  if (!rc) *mean_s = 1e-3 * ms / reps;
  cplab_event_destroy(ev[0]), cplab_event_destroy(ev[1]);
  return rc;
}

json_t *cplab_ceil_json(const cplab_ceil_op *o, const cplab_spread *st) {
  double work, unit;
  cplab_ceil_work(o, &work, &unit);
  json_t *r = json_pack("{s:s, s:o}", "op", o->name, "time_us", cplab_bench_spread_json(st));
  json_t *rate = json_pack("{s:f, s:f, s:f}", "at_median", work / st->median / unit, "at_p10_time",
                           work / st->p10 / unit, "at_p90_time", work / st->p90 / unit);
  if (o->gemm) {
    json_object_set_new(r, "dtype", json_string(o->fp8 ? "e4m3 x e4m3 -> bf16, per-tensor scales, fp32 accumulation"
                                                       : "bf16 x bf16 -> bf16, fp32 accumulation"));
    json_object_set_new(r, "shape", json_pack("{s:I, s:I, s:I}", "m", (json_int_t)o->s.m, "n", (json_int_t)o->s.n,
                                              "k", (json_int_t)o->s.k));
    json_object_set_new(r, "flop", json_real(work));
    json_object_set_new(r, "tflops", rate);
  } else {
    json_object_set_new(r, "bytes_per_copy", json_integer((json_int_t)o->s.k));
    json_object_set_new(r, "bytes_counted", json_integer((json_int_t)(2 * o->s.k)));
    json_object_set_new(r, "gbps", rate);
  }
  json_object_set_new(r, "rotation_sets", json_integer(o->sets));
  return r;
}
