/* GPU test: the MoE block of kernels/moe.cu (cplab_moe.h) against a
 * double-precision host reference, and its two PCP paths against each other.
 *
 * The reference regenerates every weight it needs with
 * cplab_moe_weight_host (the global model's bf16 values, the same bits as
 * the device's) and computes the block in double on the same bf16 inputs:
 * logits, the top-k rule, softmax gates, SwiGLU experts, the shared MLP.
 *
 * Checks:
 *   - weights: every element of every tensor of a shard equals the host
 *     function at the global indices cplab_moe.h documents (bit-exact), for
 *     two shapes and shards;
 *   - reference (small shapes, S = 1, 2, 3, 4 shards, n = 1, 37 and 300:
 *     more rows than one 256-row chunk of the permutation's scan): the sum
 *     of the S partials against the reference, with
 *       routing: every shard chose the same experts (bit-identical lists);
 *         the device's bf16 logits within noise(e) = 2^-7 |l_e| +
 *         2^-16 sum_c |x_c Wr_ec| of the reference's double logits (bf16
 *         rounding is below 2^-8 relative, fp32 accumulation far below 2^-16
 *         of the absolute sum); the device's lists exactly the top-k of its
 *         own bf16 logits by the rule (ties included) and its gates their
 *         softmax within 2e-6 (fp32 exp and division); the rows whose list
 *         is also the top-k of the exact logits are counted (near-ties of
 *         the bf16 logits may legitimately differ);
 *       values: the reference is computed through the device's experts and
 *         the softmax of its bf16 logits, so that it differs from the device
 *         only by the bf16 rounding of gate_up, h and each expert's output
 *         (each below 2^-8 relative); per element
 *           |got - ref| <= 3e-2 · (|ref| + rms of ref's row)
 *         (rows differ in magnitude, and a row's errors scale with its
 *         terms), and cos_diff = 1 - 2 Σ got·ref / Σ (got² + ref²) <= 1e-4
 *         (DeepGEMM's calc_diff, perf-anchors.md §8). A host emulation of
 *         the device pipeline (fp32 sums, bf16 at the same points) gave
 *         worst error/allowance 0.33..0.47 and cos_diff ~6e-6 on these
 *         shapes (0.34 and 5.5e-6 on one DeepSeek-size row); one wrong
 *         expert in one of 37 rows gives cos_diff 2e-4..1e-3 and hundreds
 *         of elements over the allowance;
 *   - PCP paths on one GPU, P = 2 and 4 shards, every rank holding the same
 *     n rows (the fast path's condition): general = the P ranks' rows
 *     gathered rank-major (device copies), each shard's partial over all
 *     P·n rows, each rank's rows summed over shards (the reduce-scatter,
 *     cplab_moe_sum_partials); fast = each shard's partial over its n rows,
 *     summed over shards (the all-reduce). Checked: routing of every rank's
 *     rows identical between paths (a row may differ only at a near-tie of
 *     the bf16 logits, reported and excluded), general == fast within the
 *     tolerance above for every rank (bit-identity reported: the GEMMs see
 *     other row counts, so cuBLASLt may pick other kernels), and both ==
 *     reference (small shapes); for the real DeepSeek-V3.2 size
 *     (d 7168, E 256, k 8, I 2048, 1 shared, n 64) the paths against each
 *     other and the first row against the reference;
 *   - determinism and the plan's guard: the same x twice gives the same
 *     bits; swapping two rows that chose different experts (same per-expert
 *     counts) and giving every row the same input (changed counts) each make
 *     cplab_moe_plan_check return CPLAB_EMISMATCH with the right message,
 *     and the swapped rows' outputs are the original rows' outputs;
 *   - cplab_moe_sum_partials and cplab_f32_to_bf16 bit-exact against host
 *     fp32 arithmetic and cplab_bf16_from_f32;
 *   - bad arguments: CPLAB_EINVAL (shared slice not divisible, top_k > E,
 *     shard >= shards, NULL pointers, P < 1, an unknown tensor). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/fp8.h"
#include "cplab_moe.h"
#include "kt.h"

#define ELEM_TOL 3e-2
#define COS_DIFF_TOL 1e-4
#define X_RANGE 3.0 /* inputs uniform in (-3, 3): SwiGLU's gate values reach silu's nonlinear range */
#define MAX_SHARDS 8

/* ---- the host reference ------------------------------------------------------------- */

static double weight(const cplab_moe_shape *s, uint64_t seed, int tensor, int expert, int row, int col) {
  return kt_bf16(cplab_moe_weight_host(s, seed, tensor, expert, row, col));
}

/* Router logits of one row (x: d doubles) and the noise bound of the
 * device's bf16 logits around them. */
static void ref_logits(const cplab_moe_shape *s, uint64_t seed, const double *x, double *logit, double *noise) {
  for (int e = 0; e < s->experts; e++) {
    double acc = 0, abs_sum = 0;
    for (int c = 0; c < s->dim; c++) {
      double t = x[c] * weight(s, seed, CPLAB_MOE_ROUTER, 0, e, c);
      acc += t;
      abs_sum += fabs(t);
    }
    logit[e] = acc;
    noise[e] = 0x1p-7 * fabs(acc) + 0x1p-16 * abs_sum;
  }
}

/* The top-k rule: a higher logit first, the lower expert index on ties. */
static void ref_topk(const double *logit, int E, int k, int *idx) {
  for (int j = 0; j < k; j++) {
    int best = -1;
    for (int e = 0; e < E; e++) {
      int taken = 0;
      for (int i = 0; i < j; i++) taken |= idx[i] == e;
      if (!taken && (best < 0 || logit[e] > logit[best])) best = e;
    }
    idx[j] = best;
  }
}

/* Softmax of the logits of the chosen experts. */
static void ref_gates(const double *logit, const int32_t *chosen, int k, double *gate) {
  double top = logit[chosen[0]], sum = 0;
  for (int j = 1; j < k; j++) top = fmax(top, logit[chosen[j]]);
  for (int j = 0; j < k; j++) sum += gate[j] = exp(logit[chosen[j]] - top);
  for (int j = 0; j < k; j++) gate[j] /= sum;
}

/* acc += w · SwiGLU MLP (tensors t_gu [2·inter][d], t_dn [d][inter] of
 * expert e) of x. */
static void ref_mlp_add(const cplab_moe_shape *s, uint64_t seed, int t_gu, int t_dn, int e, int inter, const double *x,
                        double w, double *acc) {
  double *h = kt_host((size_t)inter * sizeof *h);
  for (int i = 0; i < inter; i++) {
    double g = 0, u = 0;
    for (int c = 0; c < s->dim; c++) {
      g += x[c] * weight(s, seed, t_gu, e, i, c);
      u += x[c] * weight(s, seed, t_gu, e, inter + i, c);
    }
    h[i] = g / (1 + exp(-g)) * u;
  }
  for (int r = 0; r < s->dim; r++) {
    double y = 0;
    for (int i = 0; i < inter; i++) y += h[i] * weight(s, seed, t_dn, e, r, i);
    acc[r] += w * y;
  }
  free(h);
}

/* The block's output of one row through the given experts, gated by the
 * softmax of logit over them. */
static void ref_row(const cplab_moe_shape *s, uint64_t seed, const double *x, const double *logit,
                    const int32_t *chosen, double *out) {
  double gate[64];
  ref_gates(logit, chosen, s->top_k, gate);
  memset(out, 0, (size_t)s->dim * sizeof *out);
  for (int j = 0; j < s->top_k; j++)
    ref_mlp_add(s, seed, CPLAB_MOE_GATE_UP, CPLAB_MOE_DOWN, chosen[j], s->inter, x, gate[j], out);
  if (s->shared > 0)
    ref_mlp_add(s, seed, CPLAB_MOE_SHARED_GATE_UP, CPLAB_MOE_SHARED_DOWN, 0, s->shared * s->inter, x, 1.0, out);
}

/* ---- routing checks ---------------------------------------------------------------- */

typedef struct route_stats {
  int64_t rows, bad_logit_rows, bad_route_rows, first_bad, same_as_exact;
  double max_logit_err, max_gate_err; /* logit error relative to its noise bound */
} route_stats;

/* One row of the device's routing: its bf16 logits lg within noise of the
 * reference's double logits; its list G exactly the top-k of lg (the rule,
 * ties included); its gates the softmax of lg over G within 2e-6 (fp32 exp
 * and division: a few ulps). Counts rows whose list is also the top-k of the
 * exact logits. */
static void route_row(const cplab_moe_shape *s, const double *logit, const double *noise, const uint16_t *lg,
                      const int32_t *G, const float *gate, int64_t row, route_stats *st) {
  int k = s->top_k, E = s->experts, want[64], exact[64], logits_ok = 1, route_ok = 1, same = 1;
  double *lgd = kt_host((size_t)E * sizeof *lgd), g[64];
  for (int e = 0; e < E; e++) {
    lgd[e] = kt_bf16(lg[e]);
    double r = fabs(lgd[e] - logit[e]) / noise[e];
    st->max_logit_err = fmax(st->max_logit_err, r);
    logits_ok &= r <= 1;
  }
  ref_topk(lgd, E, k, want);
  ref_topk(logit, E, k, exact);
  for (int j = 0; j < k; j++) route_ok &= G[j] == want[j], same &= G[j] == exact[j];
  if (route_ok) {
    ref_gates(lgd, G, k, g);
    for (int j = 0; j < k; j++) {
      double err = fabs((double)gate[j] - g[j]);
      st->max_gate_err = fmax(st->max_gate_err, err);
      route_ok &= err <= 2e-6;
    }
  }
  st->rows++;
  st->bad_logit_rows += !logits_ok;
  st->bad_route_rows += !route_ok;
  st->same_as_exact += same;
  if ((!logits_ok || !route_ok) && st->first_bad < 0) st->first_bad = row;
  free(lgd);
}

/* Do two routings of a row differ only among experts whose bf16 logits (of
 * either run: l1, l2) lie within 2^-6 relative (2 to 4 bf16 ulps) of that
 * run's k-th logit? The two runs' GEMMs may round a logit differently. */
static int near_tie(const cplab_moe_shape *s, const int32_t *G1, const int32_t *G2, const uint16_t *l1,
                    const uint16_t *l2) {
  int k = s->top_k;
  double kth1 = kt_bf16(l1[G1[k - 1]]), kth2 = kt_bf16(l2[G2[k - 1]]);
  for (int j = 0; j < k; j++)
    for (int side = 0; side < 2; side++) {
      int e = side ? G2[j] : G1[j], in_other = 0;
      for (int i = 0; i < k; i++) in_other |= (side ? G1[i] : G2[i]) == e;
      if (in_other) continue;
      if (fabs(kt_bf16(l1[e]) - kth1) > 0x1p-6 * fabs(kth1) || fabs(kt_bf16(l2[e]) - kth2) > 0x1p-6 * fabs(kth2))
        return 0;
    }
  return 1;
}

/* ---- value comparison ---------------------------------------------------------------- */

typedef struct cmp_stats {
  int64_t count, bad, first_bad, identical;
  double max_abs, worst, cos_diff, scale;
} cmp_stats;

/* got (fp32) against ref (double) over rows × d elements; rows with
 * skip[r] set are left out (skip may be NULL). An element's allowance is
 * ELEM_TOL · (|ref| + the rms of its row of ref): the errors of a row scale
 * with the magnitude of its terms, and rows differ in magnitude. */
static cmp_stats compare(const float *got, const double *ref, int64_t rows, int d, const uint8_t *skip) {
  cmp_stats c = {0, 0, -1, 0, 0, 0, 0, 0};
  double sq_all = 0, xy = 0, xx_yy = 0;
  for (int64_t r = 0; r < rows; r++) {
    if (skip && skip[r]) continue;
    double sq = 0;
    for (int i = 0; i < d; i++) sq += ref[r * d + i] * ref[r * d + i];
    double row_rms = sqrt(sq / d);
    sq_all += sq;
    c.count += d;
    for (int i = 0; i < d; i++) {
      int64_t e = r * d + i;
      double g = got[e], err = fabs(g - ref[e]), allow = ELEM_TOL * (fabs(ref[e]) + row_rms);
      if (!(err <= allow) && c.bad++ == 0) c.first_bad = e; /* NaN counts as bad */
      if (err > c.max_abs || err != err) c.max_abs = err;
      if (allow > 0 && err / allow > c.worst) c.worst = err / allow;
      c.identical += g == ref[e];
      xy += g * ref[e];
      xx_yy += g * g + ref[e] * ref[e];
    }
  }
  c.scale = c.count ? sqrt(sq_all / (double)c.count) : 0;
  c.cos_diff = xx_yy > 0 ? 1 - 2 * xy / xx_yy : 0;
  if (c.cos_diff != c.cos_diff) c.cos_diff = INFINITY;
  return c;
}

static void report(const char *what, const cmp_stats *c, int d) {
  kt_check(c->bad == 0 && c->cos_diff <= COS_DIFF_TOL,
           "%s: %lld elements (rms %.3g), %lld over %g·(|ref| + row rms) (worst error/allowance %.3g), max abs error "
           "%.3g, cos_diff %.3g (<= %g), %lld bit-identical",
           what, (long long)c->count, c->scale, (long long)c->bad, ELEM_TOL, c->worst, c->max_abs, c->cos_diff,
           COS_DIFF_TOL,
           (long long)c->identical);
  if (c->bad) printf("  first bad element: row %lld column %lld\n", (long long)(c->first_bad / d),
                     (long long)(c->first_bad % d));
}

/* ---- inputs and shards ---------------------------------------------------------------- */

/* n random bf16 rows in (-X_RANGE, X_RANGE); xd: the same values as doubles. */
static void random_rows(uint64_t *rng, int64_t n, int d, uint16_t *x, double *xd) {
  for (int64_t i = 0; i < n * d; i++) {
    x[i] = cplab_bf16_from_f32((float)(X_RANGE * (2 * kt_unit(rng) - 1)));
    if (xd) xd[i] = kt_bf16(x[i]);
  }
}

typedef struct shard_set {
  cplab_moe_shape s; /* the global shape (shard 0) */
  uint64_t seed;
  int S;
  cplab_moe *m[MAX_SHARDS];
} shard_set;

static void shards_create(shard_set *ss, const cplab_moe_shape *global, int S, uint64_t seed) {
  ss->s = *global;
  ss->s.shards = S;
  ss->s.shard = 0;
  ss->seed = seed;
  ss->S = S;
  for (int q = 0; q < S; q++) {
    cplab_moe_shape sq = ss->s;
    sq.shard = q;
    kt_ok(cplab_moe_create(&sq, seed, &ss->m[q], kt_diag()), "cplab_moe_create");
  }
}

static void shards_destroy(shard_set *ss) {
  for (int q = 0; q < ss->S; q++) cplab_moe_destroy(ss->m[q]);
}

/* What one forward pass over all shards leaves on the host. */
typedef struct routing {
  int32_t *experts; /* [n][k], shard 0's */
  float *gates;     /* [n][k] */
  uint16_t *logits; /* [n][E] */
} routing;

static void routing_alloc(routing *r, const cplab_moe_shape *s, int64_t n) {
  r->experts = kt_host((size_t)(n * s->top_k) * sizeof *r->experts);
  r->gates = kt_host((size_t)(n * s->top_k) * sizeof *r->gates);
  r->logits = kt_host((size_t)(n * s->experts) * sizeof *r->logits);
}

static void routing_free(routing *r) { free(r->experts), free(r->gates), free(r->logits); }

/* Every shard's partial over the n rows of dx into dparts ([S][n][d],
 * device); shard 0's routing into rt; checks that every shard routed the
 * same and that every plan saw the routing it was made with. */
static void all_partials(const char *what, shard_set *ss, cplab_gemm *g, const uint16_t *dx, int64_t n,
                         float *dparts, routing *rt) {
  const cplab_moe_shape *s = &ss->s;
  size_t nk = (size_t)(n * s->top_k);
  int32_t *other = kt_host(nk * sizeof *other);
  int64_t differing = 0;
  int checks_ok = 1;
  for (int q = 0; q < ss->S; q++) {
    cplab_moe_plan *p = NULL;
    const int32_t *dexp;
    const float *dgate;
    const uint16_t *dlog;
    kt_ok(cplab_moe_plan_create(ss->m[q], g, dx, n, &p, kt_diag()), "cplab_moe_plan_create");
    kt_ok(cplab_moe_run(p, dx, dparts + (size_t)q * (size_t)n * (size_t)s->dim, NULL, kt_diag()), "cplab_moe_run");
    kt_sync();
    kt_ok(cplab_moe_plan_routing(p, &dexp, &dgate, &dlog, kt_diag()), "cplab_moe_plan_routing");
    if (q == 0) {
      kt_down(rt->experts, dexp, nk * sizeof *rt->experts);
      kt_down(rt->gates, dgate, nk * sizeof *rt->gates);
      kt_down(rt->logits, dlog, (size_t)(n * s->experts) * 2);
    } else {
      kt_down(other, dexp, nk * sizeof *other);
      for (int64_t i = 0; i < n; i++)
        differing += memcmp(other + i * s->top_k, rt->experts + i * s->top_k, (size_t)s->top_k * 4) != 0;
    }
    checks_ok &= cplab_moe_plan_check(p, kt_diag()) == 0;
    cplab_moe_plan_destroy(p);
  }
  kt_check(differing == 0 && checks_ok, "%s: %d shards chose the same experts for all %lld rows (%lld differ); plan "
           "checks %s", what, ss->S, (long long)n, (long long)differing, checks_ok ? "clean" : "FAILED");
  free(other);
}

/* The full output (sum of the S partials) of n rows, downloaded into out. */
static void full_output(const char *what, shard_set *ss, cplab_gemm *g, const uint16_t *dx, int64_t n, float *out,
                        routing *rt) {
  size_t nd = (size_t)n * (size_t)ss->s.dim;
  float *dparts = kt_dev((size_t)ss->S * nd * sizeof(float)), *dout = kt_dev(nd * sizeof(float));
  all_partials(what, ss, g, dx, n, dparts, rt);
  kt_ok(cplab_moe_sum_partials(dparts, ss->S, (int64_t)nd, dout, NULL, kt_diag()), "cplab_moe_sum_partials");
  kt_down(out, dout, nd * sizeof(float));
  kt_free(dparts), kt_free(dout);
}

/* The reference of rows [0, rows) through the device's routing rt (its
 * experts, and gates from its bf16 logits), checking that routing on the
 * way (route_stats into st). ref: [rows][d]. */
static void reference(const shard_set *ss, const double *xd, int64_t rows, const routing *rt, double *ref,
                      route_stats *st) {
  const cplab_moe_shape *s = &ss->s;
  int E = s->experts, k = s->top_k;
  double *logit = kt_host((size_t)E * sizeof *logit), *noise = kt_host((size_t)E * sizeof *noise);
  double *lgd = kt_host((size_t)E * sizeof *lgd);
  memset(st, 0, sizeof *st);
  st->first_bad = -1;
  for (int64_t i = 0; i < rows; i++) {
    const double *x = xd + i * s->dim;
    ref_logits(s, ss->seed, x, logit, noise);
    route_row(s, logit, noise, rt->logits + i * E, rt->experts + i * k, rt->gates + i * k, i, st);
    for (int e = 0; e < E; e++) lgd[e] = kt_bf16(rt->logits[i * E + e]);
    ref_row(s, ss->seed, x, lgd, rt->experts + i * k, ref + i * s->dim);
  }
  free(logit), free(noise), free(lgd);
}

static void report_routing(const char *what, const route_stats *st) {
  kt_check(st->bad_logit_rows == 0 && st->bad_route_rows == 0,
           "%s routing: %lld rows; bf16 logits within noise of the reference: %lld rows not (max error/noise "
           "%.3g); lists exactly the top-k of the bf16 logits with their softmax gates: %lld rows not (max gate "
           "error %.3g); %lld rows also the top-k of the exact logits",
           what, (long long)st->rows, (long long)st->bad_logit_rows, st->max_logit_err,
           (long long)st->bad_route_rows, st->max_gate_err, (long long)st->same_as_exact);
  if (st->bad_logit_rows || st->bad_route_rows) printf("  first bad row %lld\n", (long long)st->first_bad);
}

/* ---- checks --------------------------------------------------------------------------- */

/* Global row/column of local row r, column c of tensor t on shard q (the
 * table of cplab_moe.h, written out independently of moe.cu). */
static void global_index(const cplab_moe_shape *s, int t, int64_t i, int r, int c, int *e, int *row, int *col) {
  int Is = s->shared * s->inter / s->shards, q = s->shard;
  *e = (t == CPLAB_MOE_GATE_UP || t == CPLAB_MOE_DOWN) ? q + (int)i * s->shards : 0;
  *row = r;
  *col = c;
  if (t == CPLAB_MOE_SHARED_GATE_UP) *row = r < Is ? q * Is + r : s->shared * s->inter + q * Is + (r - Is);
  if (t == CPLAB_MOE_SHARED_DOWN) *col = q * Is + c;
}

static void check_weights(const cplab_moe_shape *global, int S, int q, uint64_t seed) {
  cplab_moe_shape s = *global;
  s.shards = S;
  s.shard = q;
  cplab_moe *m = NULL;
  kt_ok(cplab_moe_create(&s, seed, &m, kt_diag()), "cplab_moe_create");
  int64_t L = q < s.experts ? (s.experts - q + S - 1) / S : 0, Is = (int64_t)s.shared * s.inter / S;
  int64_t want_count[CPLAB_MOE_TENSORS] = {1, L, L, Is ? 1 : 0, Is ? 1 : 0};
  int64_t want_rows[CPLAB_MOE_TENSORS] = {s.experts, 2 * (int64_t)s.inter, s.dim, 2 * Is, s.dim};
  int64_t want_cols[CPLAB_MOE_TENSORS] = {s.dim, s.dim, s.inter, s.dim, Is};
  int64_t compared = 0, wrong = 0, layout_wrong = 0;
  double max_abs = 0;
  for (int t = 0; t < CPLAB_MOE_TENSORS; t++) {
    cplab_moe_view v;
    kt_ok(cplab_moe_weights(m, t, &v, kt_diag()), "cplab_moe_weights");
    if (v.count != want_count[t] || (v.count && (v.rows != want_rows[t] || v.cols != want_cols[t] ||
                                                 v.stride < v.rows * v.cols || v.stride % 8))) {
      layout_wrong++;
      continue;
    }
    if (v.count == 0) continue;
    uint16_t *w = kt_host((size_t)(v.count * v.stride) * 2);
    kt_down(w, v.dev, (size_t)(v.count * v.stride) * 2);
    for (int64_t i = 0; i < v.count; i++)
      for (int r = 0; r < v.rows; r++)
        for (int c = 0; c < v.cols; c++) {
          int e, row, col;
          global_index(&s, t, i, r, c, &e, &row, &col);
          uint16_t got = w[i * v.stride + (int64_t)r * v.cols + c];
          wrong += got != cplab_moe_weight_host(&s, seed, t, e, row, col);
          max_abs = fmax(max_abs, fabs(kt_bf16(got)));
          compared++;
        }
    free(w);
  }
  kt_check(wrong == 0 && layout_wrong == 0,
           "weights of shard %d/%d (d %d, E %d, I %d, shared %d): %lld elements equal the host function's, %lld "
           "differ, %lld tensor layouts wrong; max |w| %.4g",
           q, S, s.dim, s.experts, s.inter, s.shared, (long long)(compared - wrong), (long long)wrong,
           (long long)layout_wrong, max_abs);
  cplab_moe_destroy(m);
}

/* The full output of S shards over n random rows against the reference. */
static void check_reference(cplab_gemm *g, uint64_t *rng, const cplab_moe_shape *global, int S, int64_t n) {
  shard_set ss;
  shards_create(&ss, global, S, kt_next(rng));
  int d = global->dim;
  size_t nd = (size_t)n * (size_t)d;
  uint16_t *x = kt_host(nd * 2);
  double *xd = kt_host(nd * sizeof *xd), *ref = kt_host(nd * sizeof *ref);
  float *out = kt_host(nd * sizeof *out);
  random_rows(rng, n, d, x, xd);
  uint16_t *dx = kt_dev_from(x, nd * 2);
  routing rt;
  routing_alloc(&rt, &ss.s, n);
  char what[160];
  snprintf(what, sizeof what, "d %d E %d k %d I %d shared %d, S %d, n %lld", d, global->experts, global->top_k,
           global->inter, global->shared, S, (long long)n);
  full_output(what, &ss, g, dx, n, out, &rt);
  route_stats st;
  reference(&ss, xd, n, &rt, ref, &st);
  report_routing(what, &st);
  cmp_stats c = compare(out, ref, n, d, NULL);
  report(what, &c, d);
  routing_free(&rt);
  kt_free(dx);
  free(x), free(xd), free(ref), free(out);
  shards_destroy(&ss);
}

/* Rows of the general path whose routing differs from the fast path's:
 * marked in skip, counted, and checked to be near-ties. */
static int64_t rerouted_rows(const cplab_moe_shape *s, const routing *fast, const routing *gen, int64_t n, int rank,
                             uint8_t *skip, int64_t *not_ties) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) {
    const int32_t *Gf = fast->experts + i * s->top_k, *Gg = gen->experts + (rank * n + i) * s->top_k;
    skip[i] = memcmp(Gf, Gg, (size_t)s->top_k * 4) != 0;
    if (!skip[i]) continue;
    count++;
    *not_ties += !near_tie(s, Gf, Gg, fast->logits + i * s->experts, gen->logits + (rank * n + i) * s->experts);
  }
  return count;
}

/* The two PCP paths over P shards, every rank holding the same n rows.
 * ref_rows: how many leading rows to check against the reference (0: none). */
static void check_paths(cplab_gemm *g, uint64_t *rng, const cplab_moe_shape *global, int P, int64_t n,
                        int64_t ref_rows) {
  shard_set ss;
  shards_create(&ss, global, P, kt_next(rng));
  const cplab_moe_shape *s = &ss.s;
  int d = s->dim;
  size_t nd = (size_t)n * (size_t)d;
  uint16_t *x = kt_host(nd * 2);
  double *xd = kt_host(nd * sizeof *xd);
  random_rows(rng, n, d, x, xd);
  char what[200];
  snprintf(what, sizeof what, "paths P %d (d %d E %d k %d I %d shared %d, n %lld per rank)", P, d, s->experts,
           s->top_k, s->inter, s->shared, (long long)n);

  /* every rank's copy of the rows, and their all-gather (rank order) */
  uint16_t *dx[MAX_SHARDS], *dgathered = kt_dev((size_t)P * nd * 2);
  for (int r = 0; r < P; r++) {
    dx[r] = kt_dev_from(x, nd * 2);
    kt_ok(cplab_dev_copy(dgathered + (size_t)r * nd, dx[r], nd * 2, kt_diag()), "cplab_dev_copy");
  }
  /* fast: each shard over its own n rows (rank q's copy), all-reduced */
  float *dparts_fast = kt_dev((size_t)P * nd * sizeof(float)), *dfast = kt_dev(nd * sizeof(float));
  routing rt_fast, rt_gen;
  routing_alloc(&rt_fast, s, n);
  routing_alloc(&rt_gen, s, (int64_t)P * n);
  all_partials(what, &ss, g, dx[0], n, dparts_fast, &rt_fast);
  kt_ok(cplab_moe_sum_partials(dparts_fast, P, (int64_t)nd, dfast, NULL, kt_diag()), "cplab_moe_sum_partials");
  /* general: each shard over all P·n rows, then rank r's rows reduce-scattered */
  float *dparts_gen = kt_dev((size_t)P * P * nd * sizeof(float)), *dstage = kt_dev((size_t)P * nd * sizeof(float));
  float *dgen = kt_dev(nd * sizeof(float));
  all_partials(what, &ss, g, dgathered, (int64_t)P * n, dparts_gen, &rt_gen);

  float *fast = kt_host(nd * sizeof *fast), *gen = kt_host(nd * sizeof *gen);
  double *fast_d = kt_host(nd * sizeof *fast_d), *ref = NULL;
  uint8_t *skip = kt_host((size_t)n);
  kt_down(fast, dfast, nd * sizeof(float));
  for (size_t i = 0; i < nd; i++) fast_d[i] = fast[i];
  if (ref_rows > 0) {
    route_stats st;
    ref = kt_host((size_t)ref_rows * (size_t)d * sizeof *ref);
    reference(&ss, xd, ref_rows, &rt_fast, ref, &st);
    report_routing(what, &st);
    cmp_stats c = compare(fast, ref, ref_rows, d, NULL);
    char w2[400];
    snprintf(w2, sizeof w2, "%s: fast vs reference (%lld rows)", what, (long long)ref_rows);
    report(w2, &c, d);
  }
  for (int r = 0; r < P; r++) {
    for (int q = 0; q < P; q++) /* shard q's partial of rank r's rows */
      kt_ok(cplab_dev_copy(dstage + (size_t)q * nd, dparts_gen + ((size_t)q * P + (size_t)r) * nd, nd * sizeof(float),
                           kt_diag()),
            "cplab_dev_copy");
    kt_ok(cplab_moe_sum_partials(dstage, P, (int64_t)nd, dgen, NULL, kt_diag()), "cplab_moe_sum_partials");
    kt_down(gen, dgen, nd * sizeof(float));
    int64_t not_ties = 0, rerouted = rerouted_rows(s, &rt_fast, &rt_gen, n, r, skip, &not_ties);
    char w2[400];
    snprintf(w2, sizeof w2, "%s: rank %d general vs fast (%lld rows rerouted at near-ties, left out)", what, r,
             (long long)rerouted);
    kt_check(not_ties == 0, "%s: rank %d routing of the general path: %lld rows differ from the fast path's, %lld "
             "of them not at a near-tie", what, r, (long long)rerouted, (long long)not_ties);
    cmp_stats c = compare(gen, fast_d, (int64_t)n, d, skip);
    report(w2, &c, d);
    if (ref_rows > 0) {
      snprintf(w2, sizeof w2, "%s: rank %d general vs reference", what, r);
      c = compare(gen, ref, ref_rows, d, skip);
      report(w2, &c, d);
    }
  }
  routing_free(&rt_fast), routing_free(&rt_gen);
  for (int r = 0; r < P; r++) kt_free(dx[r]);
  kt_free(dgathered), kt_free(dparts_fast), kt_free(dfast), kt_free(dparts_gen), kt_free(dstage), kt_free(dgen);
  free(x), free(xd), free(fast), free(gen), free(fast_d), free(ref), free(skip);
  shards_destroy(&ss);
}

/* Run p on dx into dout and download it. */
static void run_plan(cplab_moe_plan *p, const uint16_t *dx, float *dout, float *out, size_t nd) {
  kt_ok(cplab_moe_run(p, dx, dout, NULL, kt_diag()), "cplab_moe_run");
  kt_down(out, dout, nd * sizeof(float));
}

/* Determinism and the plan's guard on shard 0 of S = 2. */
static void check_plan_guard(cplab_gemm *g, uint64_t *rng, const cplab_moe_shape *global, int64_t n) {
  shard_set ss;
  shards_create(&ss, global, 2, kt_next(rng));
  const cplab_moe_shape *s = &ss.s;
  int d = s->dim, k = s->top_k;
  size_t nd = (size_t)n * (size_t)d;
  uint16_t *x = kt_host(nd * 2), *x2 = kt_host(nd * 2);
  random_rows(rng, n, d, x, NULL);
  uint16_t *dx = kt_dev_from(x, nd * 2), *dx2 = kt_dev(nd * 2);
  float *dout = kt_dev(nd * sizeof(float)), *out = kt_host(nd * 4), *out2 = kt_host(nd * 4), *out3 = kt_host(nd * 4);
  int32_t *experts = kt_host((size_t)n * (size_t)k * 4);
  cplab_moe_plan *p = NULL;
  const int32_t *dexp;
  kt_ok(cplab_moe_plan_create(ss.m[0], g, dx, n, &p, kt_diag()), "cplab_moe_plan_create");
  cplab_moe_plan_info info;
  kt_ok(cplab_moe_plan_info_of(p, &info, kt_diag()), "cplab_moe_plan_info_of");
  kt_ok(cplab_moe_plan_routing(p, &dexp, NULL, NULL, kt_diag()), "cplab_moe_plan_routing");
  kt_down(experts, dexp, (size_t)n * (size_t)k * 4);

  run_plan(p, dx, dout, out, nd);
  int rc1 = cplab_moe_plan_check(p, kt_diag());
  run_plan(p, dx, dout, out2, nd);
  int rc2 = cplab_moe_plan_check(p, kt_diag());
  kt_check(rc1 == 0 && rc2 == 0 && memcmp(out, out2, nd * 4) == 0,
           "plan: %lld rows, %d local experts (%d with rows), %lld routed rows in %lld padded; two runs on the same "
           "x: checks %d, %d, outputs bit-identical: %s",
           (long long)n, info.local_experts, info.active_experts, (long long)info.routed_rows,
           (long long)info.padded_rows, rc1, rc2, memcmp(out, out2, nd * 4) == 0 ? "yes" : "no");

  /* swap row 0 with the first row that chose other experts: same counts */
  int64_t b = 1;
  while (b < n && memcmp(experts, experts + b * k, (size_t)k * 4) == 0) b++;
  if (b < n) {
    memcpy(x2, x, nd * 2);
    memcpy(x2, x + b * d, (size_t)d * 2);
    memcpy(x2 + b * d, x, (size_t)d * 2);
    kt_ok(cplab_dev_upload(dx2, x2, nd * 2, kt_diag()), "cplab_dev_upload");
    run_plan(p, dx2, dout, out3, nd);
    cplab_diag dd = {0};
    int rc = cplab_moe_plan_check(p, &dd);
    double *want = kt_host(nd * sizeof *want); /* out with rows 0 and b swapped */
    for (size_t i = 0; i < nd; i++) want[i] = out[i];
    for (int c = 0; c < d; c++) want[c] = out[b * d + c], want[b * d + c] = out[c];
    cmp_stats cs = compare(out3, want, n, d, NULL);
    kt_check(rc == CPLAB_EMISMATCH && strstr(dd.msg, "routing changed since the plan") &&
                 strstr(dd.msg, "same per-expert row counts"),
             "swapped rows 0 and %lld: check %s \"%s\"", (long long)b, cplab_err_name(rc), dd.msg);
    report("swapped rows: outputs are the original rows' outputs swapped", &cs, d);
    free(want);
  } else {
    printf("NOTE: every row chose the same experts: the swap case is skipped\n");
  }

  /* every row = row 0: the local counts become n or 0 */
  int changed = 0;
  for (int l = 0; l < info.local_experts; l++) {
    int e = s->shard + l * s->shards, in_row0 = 0;
    for (int j = 0; j < k; j++) in_row0 |= experts[j] == e;
    changed |= info.counts[l] != (in_row0 ? n : 0);
  }
  for (int64_t i = 0; i < n; i++) memcpy(x2 + i * d, x, (size_t)d * 2);
  kt_ok(cplab_dev_upload(dx2, x2, nd * 2, kt_diag()), "cplab_dev_upload");
  run_plan(p, dx2, dout, out3, nd);
  cplab_diag dd = {0};
  int rc = cplab_moe_plan_check(p, &dd);
  int rc_after = cplab_moe_plan_check(p, kt_diag()); /* cleared by the previous check */
  run_plan(p, dx, dout, out3, nd);                   /* the plan still serves its own x */
  int rc_back = cplab_moe_plan_check(p, kt_diag());
  kt_check((!changed || (rc == CPLAB_EMISMATCH && strstr(dd.msg, "row count differs"))) && rc_after == 0 &&
               rc_back == 0 && memcmp(out, out3, nd * 4) == 0,
           "every row = row 0 (counts %s): check %s \"%s\"; next check %d; back on x: check %d, output bit-identical "
           "to the first run: %s",
           changed ? "changed" : "unchanged (not checkable)", cplab_err_name(rc), dd.msg, rc_after, rc_back,
           memcmp(out, out3, nd * 4) == 0 ? "yes" : "no");

  cplab_moe_plan_destroy(p);
  kt_free(dx), kt_free(dx2), kt_free(dout);
  free(x), free(x2), free(out), free(out2), free(out3), free(experts);
  shards_destroy(&ss);
}

/* cplab_moe_sum_partials and cplab_f32_to_bf16, bit-exact. */
static void check_sum_and_convert(uint64_t *rng) {
  enum { P = 3, COUNT = 1000 };
  float *parts = kt_host(P * COUNT * 4), *got = kt_host(COUNT * 4), *want = kt_host(COUNT * 4);
  uint16_t *b16 = kt_host(COUNT * 2);
  for (int i = 0; i < P * COUNT; i++) parts[i] = (float)((2 * kt_unit(rng) - 1) * 1000.0);
  for (int i = 0; i < COUNT; i++) {
    float acc = parts[i];
    for (int q = 1; q < P; q++) acc += parts[q * COUNT + i];
    want[i] = acc;
  }
  float *dparts = kt_dev_from(parts, P * COUNT * 4), *dout = kt_dev(COUNT * 4);
  kt_ok(cplab_moe_sum_partials(dparts, P, COUNT, dout, NULL, kt_diag()), "cplab_moe_sum_partials");
  kt_down(got, dout, COUNT * 4);
  kt_check(memcmp(got, want, COUNT * 4) == 0, "sum of %d partials over %d elements: bit-identical to the host's "
           "in-order fp32 sum: %s", P, COUNT, memcmp(got, want, COUNT * 4) == 0 ? "yes" : "no");

  /* bf16 rounding: random values, plus the special ones */
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3e-39f, 3.4e38f, 1.00390625f,
                           1.01171875f, 65504.0f};
  for (int i = 0; i < P * COUNT; i++)
    parts[i] = (float)((2 * kt_unit(rng) - 1) * ldexp(1.0, (int)kt_int(rng, -60, 60)));
  memcpy(parts, special, sizeof special);
  kt_free(dparts);
  dparts = kt_dev_from(parts, P * COUNT * 4);
  uint16_t *db16 = kt_dev(P * COUNT * 2);
  uint16_t *all = kt_host(P * COUNT * 2);
  kt_ok(cplab_f32_to_bf16(dparts, P * COUNT, db16, NULL, kt_diag()), "cplab_f32_to_bf16");
  kt_down(all, db16, P * COUNT * 2);
  int wrong = 0;
  for (int i = 0; i < P * COUNT; i++) wrong += all[i] != cplab_bf16_from_f32(parts[i]);
  kt_check(wrong == 0, "f32 -> bf16 of %d values (specials included): %d differ from cplab_bf16_from_f32", P * COUNT,
           wrong);
  kt_free(dparts), kt_free(dout), kt_free(db16);
  free(parts), free(got), free(want), free(b16), free(all);
}

static int einval(int rc) { return rc == CPLAB_EINVAL; }

static void check_bad_arguments(cplab_gemm *g) {
  cplab_moe_shape ok = {16, 4, 2, 8, 1, 1, 0};
  cplab_moe *m = NULL;
  cplab_diag dd = {0};
  int pass = 1, n_checked = 0;
#define EXPECT_EINVAL(call)                                                                \
  do {                                                                                     \
    n_checked++;                                                                           \
    cplab_diag_clear(&dd);                                                                 \
    if (!einval(call)) pass = 0, printf("  not CPLAB_EINVAL: %s (%s)\n", #call, dd.msg);  \
  } while (0)
  cplab_moe_shape s = ok;
  s.shards = 3; /* shared·inter = 8 is not divisible by 3 */
  EXPECT_EINVAL(cplab_moe_create(&s, 1, &m, &dd));
  s = ok, s.top_k = 5;
  EXPECT_EINVAL(cplab_moe_create(&s, 1, &m, &dd));
  s = ok, s.shard = 1;
  EXPECT_EINVAL(cplab_moe_create(&s, 1, &m, &dd));
  s = ok, s.shard = -1;
  EXPECT_EINVAL(cplab_moe_create(&s, 1, &m, &dd));
  s = ok, s.dim = 0;
  EXPECT_EINVAL(cplab_moe_create(&s, 1, &m, &dd));
  s = ok, s.shared = -1;
  EXPECT_EINVAL(cplab_moe_create(&s, 1, &m, &dd));
  EXPECT_EINVAL(cplab_moe_create(NULL, 1, &m, &dd));
  EXPECT_EINVAL(cplab_moe_create(&ok, 1, NULL, &dd));
  int created_none = m == NULL;

  kt_ok(cplab_moe_create(&ok, 1, &m, kt_diag()), "cplab_moe_create");
  uint16_t x[4 * 16] = {0};
  uint16_t *dx = kt_dev_from(x, sizeof x);
  float *dout = kt_dev(4 * 16 * 4);
  cplab_moe_plan *p = NULL;
  cplab_moe_view v;
  EXPECT_EINVAL(cplab_moe_plan_create(NULL, g, dx, 4, &p, &dd));
  EXPECT_EINVAL(cplab_moe_plan_create(m, NULL, dx, 4, &p, &dd));
  EXPECT_EINVAL(cplab_moe_plan_create(m, g, NULL, 4, &p, &dd));
  EXPECT_EINVAL(cplab_moe_plan_create(m, g, dx, -1, &p, &dd));
  EXPECT_EINVAL(cplab_moe_plan_create(m, g, dx, 4, NULL, &dd));
  kt_ok(cplab_moe_plan_create(m, g, dx, 4, &p, kt_diag()), "cplab_moe_plan_create");
  EXPECT_EINVAL(cplab_moe_run(NULL, dx, dout, NULL, &dd));
  EXPECT_EINVAL(cplab_moe_run(p, NULL, dout, NULL, &dd));
  EXPECT_EINVAL(cplab_moe_run(p, dx, NULL, NULL, &dd));
  EXPECT_EINVAL(cplab_moe_plan_check(NULL, &dd));
  EXPECT_EINVAL(cplab_moe_plan_routing(NULL, NULL, NULL, NULL, &dd));
  EXPECT_EINVAL(cplab_moe_plan_info_of(p, NULL, &dd));
  EXPECT_EINVAL(cplab_moe_weights(m, CPLAB_MOE_TENSORS, &v, &dd));
  EXPECT_EINVAL(cplab_moe_weights(NULL, CPLAB_MOE_ROUTER, &v, &dd));
  EXPECT_EINVAL(cplab_moe_sum_partials(NULL, 2, 16, dout, NULL, &dd));
  EXPECT_EINVAL(cplab_moe_sum_partials(dout, 0, 16, dout, NULL, &dd));
  EXPECT_EINVAL(cplab_moe_sum_partials(dout, 2, -1, dout, NULL, &dd));
  EXPECT_EINVAL(cplab_f32_to_bf16(NULL, 16, dx, NULL, &dd));
  EXPECT_EINVAL(cplab_f32_to_bf16(dout, 16, NULL, NULL, &dd));
#undef EXPECT_EINVAL
  /* the empty plan: valid, run writes nothing */
  cplab_moe_plan *empty = NULL;
  int rc_empty = cplab_moe_plan_create(m, g, NULL, 0, &empty, &dd);
  int rc_run = rc_empty ? rc_empty : cplab_moe_run(empty, NULL, NULL, NULL, &dd);
  kt_check(pass && created_none && rc_empty == 0 && rc_run == 0,
           "bad arguments: %d calls rejected with CPLAB_EINVAL: %s; failed creates leave NULL: %s; an empty plan "
           "(n = 0) runs: rc %d, %d", n_checked, pass ? "all" : "NOT all", created_none ? "yes" : "no", rc_empty,
           rc_run);
  cplab_moe_plan_destroy(empty);
  cplab_moe_plan_destroy(p);
  cplab_moe_destroy(m);
  kt_free(dx), kt_free(dout);
}

int main(void) {
  uint64_t rng;
  cplab_gemm *g = NULL;
  kt_begin("test_gpu_moe", &rng);
  kt_ok(cplab_gemm_create(&g, kt_diag()), "cplab_gemm_create");
  /* a small shape with the models' proportions, and an odd one (rows of 196
   * bf16: 8- not 16-byte multiples; E = 10 over 3 shards: 4, 3, 3 experts;
   * two shared experts) */
  const cplab_moe_shape small = {256, 16, 4, 128, 1, 1, 0};
  const cplab_moe_shape odd = {196, 10, 3, 72, 2, 1, 0};
  const cplab_moe_shape deepseek = {7168, 256, 8, 2048, 1, 1, 0};

  check_bad_arguments(g);
  check_sum_and_convert(&rng);
  check_weights(&small, 2, 1, 0x1234);
  check_weights(&odd, 3, 2, 0x5678);
  check_weights(&odd, 4, 3, 0x5678);

  check_reference(g, &rng, &small, 1, 1);
  check_reference(g, &rng, &small, 1, 37);
  check_reference(g, &rng, &small, 4, 1);
  check_reference(g, &rng, &small, 2, 300);
  check_reference(g, &rng, &odd, 1, 37);
  check_reference(g, &rng, &odd, 3, 37);

  check_paths(g, &rng, &small, 2, 37, 37);
  check_paths(g, &rng, &small, 4, 37, 37);
  check_paths(g, &rng, &odd, 2, 37, 37);
  check_paths(g, &rng, &odd, 4, 1, 1);

  check_plan_guard(g, &rng, &small, 37);

  if (kt_model_size("the DeepSeek-V3.2-size paths (about 22.5 GB of weights)")) {
    check_paths(g, &rng, &deepseek, 2, 64, 1);
    check_paths(g, &rng, &deepseek, 4, 64, 0);
  }

  kt_ok(cplab_gemm_destroy(g, kt_diag()), "cplab_gemm_destroy");
  return kt_end();
}
