/* bench/ceilings.h: the GPU's ceilings, measured, and the timing and
 * statistics of cplab-kernel-bench (its ceilings, and its
 * ceiling_* cases: bench/kernel_ceilings.c). Operations (bench/ceilings.c):
 *   copy   a device-to-device copy of `bytes`, rotating over n buffers
 *          (run t copies buffer t mod n into (t + 1) mod n), n >= 3 and
 *          enough to span the caller's `span` (4x the L2) unless that takes
 *          more than CPLAB_CEIL_MAX_SETS; GB/s = 2 · bytes / t / 1e9 (read
 *          and write counted, perf-anchors' convention);
 *   bf16   cplab_gemm_bf16 (cuBLASLt, fp32 accumulation), C[M][N] = A[M][K] ·
 *          B[N][K]^T, random inputs in [-1, 1);
 *   fp8    cplab_gemm_fp8 (e4m3 in [-4, 4), per-tensor scales 0.5 and 0.25,
 *          bf16 out); TFLOPS = 2·M·N·K / t / 1e12.
 * Each GEMM's inputs rotate over enough sets to span 4x the L2 (at least 2).
 * Checks, before timing: the copy's bytes at its start, middle and end; for
 * a GEMM the whole output written (poisoned with bf16 NaN first) and 256
 * sampled elements (the corners, then random ones) within 2^-8·|ref| +
 * 2^-10·sum|terms| of a double-precision host reference, relative
 * Frobenius error < 1e-2 (tests/gpu/test_gpu_gemm.c's rule).
 * The checks count what they find (a cplab_ceil_verdict); the callers
 * decide: cplab-kernel-bench's ceilings cases record it, its measured
 * ceilings refuse to time a wrong operation.
 * Everything goes through cplab_kernels.h and cplab_stream.h, so it also
 * links against the CPU emulation of tests/emu (built with
 * -DCPLAB_BENCH_EMU=1: no CUDA runtime there, and no L2 to read). */
#ifndef CPLAB_BENCH_CEILINGS_H
#define CPLAB_BENCH_CEILINGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_out.h"
#include "cplab/error.h"
#include "cplab/stats.h"
#include "cplab_kernels.h"

#define CPLAB_CEIL_MAX_SETS 16

typedef struct cplab_ceil_shape {
  int64_t m, n, k;
} cplab_ceil_shape;

/* One operation: the copy (gemm == 0) or one GEMM of one dtype and shape,
 * with its rotation sets of inputs and outputs. */
typedef struct cplab_ceil_op {
  char name[48];
  int gemm, fp8, sets, turn;
  cplab_ceil_shape s; /* copy: s.k = bytes per copy */
  void *a[CPLAB_CEIL_MAX_SETS], *b[CPLAB_CEIL_MAX_SETS], *c[CPLAB_CEIL_MAX_SETS]; /* copy: a = buffers */
  float *scales;  /* fp8: device a_scale, b_scale */
  void *host_a, *host_b; /* set 0's inputs, for the check */
  cplab_gemm *g;  /* the handle a GEMM runs on */
} cplab_ceil_op;

/* The L2 size of device 0 in bytes (cudaDevAttrL2CacheSize; 0 under the CPU
 * emulation, which has none). */
int cplab_bench_l2_bytes(size_t *l2, cplab_diag *d);

/* *rng: a splitmix64 state; the GEMMs' random inputs come from it. */
uint64_t cplab_bench_splitmix(uint64_t *rng);

/* Set up an operation (device memory, generated inputs); free with
 * cplab_ceil_free, also after a failure. */
int cplab_ceil_setup_copy(cplab_ceil_op *o, size_t bytes, size_t span, cplab_diag *d);
int cplab_ceil_setup_gemm(cplab_ceil_op *o, cplab_ceil_shape s, int fp8, cplab_gemm *g, size_t l2, uint64_t *rng,
                          cplab_diag *d);
void cplab_ceil_free(cplab_ceil_op *o);

/* Enqueue one run of o on its next rotation set (a cplab_bench_run_fn). */
int cplab_ceil_run(void *o, void *stream, cplab_diag *d);

/* What a check found. GEMM: `samples` sampled elements, `beyond` of them
 * outside their allowance, `nan` output elements left NaN (unwritten), the
 * samples' relative Frobenius error and worst error / allowance. Copy:
 * `compared` bytes of three probes (start, middle, end), `beyond` of them
 * not copied. ok: nothing beyond, no NaN, Frobenius error < 1e-2. */
typedef struct cplab_ceil_verdict {
  int ok, samples;
  int64_t compared, beyond, nan;
  double rel_frob, worst;
  char detail[256]; /* a line for the report: what was compared, the first wrong element */
} cplab_ceil_verdict;

#define CPLAB_CEIL_TOL_FROB 1e-2

/* Run o once on set 0 (outputs poisoned first) and check it into *v:
 * 0 with *v filled (v->ok 0 when wrong), a code on a failed call. */
int cplab_ceil_check(cplab_ceil_op *o, void *stream, uint64_t *rng, cplab_ceil_verdict *v, cplab_diag *d);

/* Parse opt's argument "MxNxK[,MxNxK...]" into out[0..max) (*n of them):
 * each dimension a multiple of 16 in [16, 65536] (fp8 GEMMs need it);
 * CPLAB_EUSAGE naming opt otherwise. */
int cplab_ceil_parse_shapes(const char *opt, const char *arg, cplab_ceil_shape *out, int max, int *n, cplab_diag *d);

/* Work per run and its unit: (2·M·N·K, 1e12) for a GEMM, (2·bytes, 1e9) for
 * the copy; the rate is work / seconds / unit. */
void cplab_ceil_work(const cplab_ceil_op *o, double *work, double *unit);

/* ---- timing and statistics ---------------------------------------------------- */

/* One timed operation: enqueue one run on stream, asynchronously. */
typedef int (*cplab_bench_run_fn)(void *ctx, void *stream, cplab_diag *d);

/* Hold the stream lead_us microseconds (cplab_dev_hold_async; 0: no hold),
 * then enqueue warmup + reps rounds of the nops operations (run(ctx[i]) for
 * each i in turn), one event pair around each run, without waiting, then
 * wait. The hold lets the host queue the runs ahead of the GPU: without it a
 * run that the host enqueues more slowly than the GPU runs it has the host's
 * launch time inside its event pair (the GPU reaches the start event, then
 * waits for the launch). t[i][r] receives run r's seconds of operation i
 * (t[i] holds reps values, caller-allocated); *loop what the loop saw: the
 * GPU's busy fraction (near 1: it did not idle between runs; on an H200
 * runs of 5-9 us still leave ~1.3 us gaps with the host far ahead: the
 * GPU's own launch and event overheads) and the host's queueing time. */
typedef struct cplab_bench_loop {
  double busy;    /* the timed runs' sum over their span (first timed start to last timed stop) */
  double queue_s; /* host seconds to queue every run, after the hold: longer than the hold, and the
                   * GPU may have caught up with the host */
} cplab_bench_loop;
int cplab_bench_time(int nops, cplab_bench_run_fn run, void *const *ctx, int reps, int warmup, unsigned lead_us,
                     void *stream, double *const *t, cplab_bench_loop *loop, cplab_diag *d);

/* Back to back: hold the stream lead_us microseconds, enqueue warmup runs of
 * one operation, then reps runs between one event pair (no event between
 * them), then wait. *mean_s receives the seconds a run takes as runs follow
 * one another in a stream: the GPU's gaps between launches included, the
 * per-run event pairs of cplab_bench_time not. What a kernel costs inside a
 * sequence of launches, where a lone run's event pair also holds the launch
 * before it (bench/NOTES.md: ~1.3 us between runs on an H200). */
int cplab_bench_time_b2b(cplab_bench_run_fn run, void *ctx, int reps, int warmup, unsigned lead_us, void *stream,
                         double *mean_s, cplab_diag *d);

/* The hold before nops operations' warmup + reps runs: per_run_us a run, at
 * most CPLAB_BENCH_LEAD_MAX_US (per_run_us 0: none). */
#define CPLAB_BENCH_LEAD_MAX_US 200000u
unsigned cplab_bench_lead_us(unsigned per_run_us, int nops, int reps, int warmup);

/* The ceilings' JSON object of one operation: time_us {median, min, max,
 * p10, p90}, the rate at the median, p10 and p90 times, what was measured. */
json_t *cplab_ceil_json(const cplab_ceil_op *o, const cplab_spread *st);

#endif
