/* Synthetic MoE reference and its PCP paths: see moe_ref.h. */
#include "moe_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The top_k experts of a row (by router logit, lower index on ties) and
 * their softmax weights. */
static void route(const sim_moe *m, const double *x, int *chosen, double *gate) {
  double logit[256];
  for (int e = 0; e < m->experts; e++) {
    double s = 0;
    for (int c = 0; c < m->dim; c++) s += m->router[(size_t)e * m->dim + c] * x[c];
    logit[e] = s;
  }
  for (int j = 0; j < m->top_k; j++) {
    int best = -1;
    for (int e = 0; e < m->experts; e++) {
      int taken = 0;
      for (int i = 0; i < j; i++) taken |= chosen[i] == e;
      if (!taken && (best < 0 || logit[e] > logit[best])) best = e;
    }
    chosen[j] = best;
  }
  double mx = logit[chosen[0]], sum = 0;
  for (int j = 0; j < m->top_k; j++) sum += gate[j] = exp(logit[chosen[j]] - mx);
  for (int j = 0; j < m->top_k; j++) gate[j] /= sum;
}

/* Rows through the experts held by rank r of P (P = 1: all of them). */
static void apply(const sim_moe *m, int P, int r, const double *in, size_t n, double *out) {
  int chosen[256];
  double gate[256];
  memset(out, 0, n * (size_t)m->dim * sizeof *out);
  for (size_t i = 0; i < n; i++) {
    const double *x = in + i * (size_t)m->dim;
    route(m, x, chosen, gate);
    for (int j = 0; j < m->top_k; j++) {
      if (chosen[j] % P != r) continue;
      const double *w = m->weights + (size_t)chosen[j] * m->dim * m->dim;
      for (int a = 0; a < m->dim; a++) {
        double s = 0;
        for (int b = 0; b < m->dim; b++) s += w[(size_t)a * m->dim + b] * x[b];
        out[i * (size_t)m->dim + a] += gate[j] * s;
      }
    }
  }
}

void sim_moe_forward(const sim_moe *m, const double *in, size_t n, double *out) { apply(m, 1, 0, in, n, out); }

void sim_moe_partial(const sim_moe *m, int P, int r, const double *in, size_t n, double *out) {
  apply(m, P, r, in, n, out);
}

void sim_moe_general(const sim_moe *m, int P, const double *const *rows, const size_t *counts, double **out) {
  size_t total = 0, d = (size_t)m->dim;
  for (int r = 0; r < P; r++) total += counts[r];
  double *gathered = malloc((total ? total : 1) * d * sizeof *gathered);
  double *partial = malloc((total ? total : 1) * d * sizeof *partial);
  size_t off = 0;
  for (int r = 0; r < P; r++, off += counts[r - 1]) /* all-gather, rank order */
    memcpy(gathered + off * d, rows[r], counts[r] * d * sizeof *gathered);
  for (int r = 0; r < P; r++) memset(out[r], 0, counts[r] * d * sizeof **out);
  for (int q = 0; q < P; q++) { /* rank q's shard over every row, then the reduce-scatter */
    apply(m, P, q, gathered, total, partial);
    off = 0;
    for (int r = 0; r < P; r++) {
      for (size_t i = 0; i < counts[r] * d; i++) out[r][i] += partial[off * d + i];
      off += counts[r];
    }
  }
  free(gathered);
  free(partial);
}

void sim_moe_fast(const sim_moe *m, int P, const double *rows, size_t n, double **out) {
  size_t d = (size_t)m->dim;
  double *partial = malloc((n ? n : 1) * d * sizeof *partial);
  for (int r = 0; r < P; r++) memset(out[r], 0, n * d * sizeof **out);
  for (int q = 0; q < P; q++) { /* rank q's partial, summed into every rank (all-reduce) */
    apply(m, P, q, rows, n, partial);
    for (int r = 0; r < P; r++)
      for (size_t i = 0; i < n * d; i++) out[r][i] += partial[i];
  }
  free(partial);
}
