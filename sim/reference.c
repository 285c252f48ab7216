/* Numeric reference of DCP decode attention: see reference.h. */
#include "reference.h"

#include <math.h>
#include <string.h>

void sim_attention(const double *q, int heads, const double *rows, size_t n, double scale, double *out, double *lse) {
  memset(out, 0, (size_t)heads * SIM_MLA_V * sizeof *out);
  for (int h = 0; h < heads; h++) {
    const double *qh = q + (size_t)h * SIM_MLA_QK;
    double *oh = out + (size_t)h * SIM_MLA_V;
    if (n == 0) {
      lse[h] = -INFINITY;
      continue;
    }
    double m = -INFINITY;
    for (size_t j = 0; j < n; j++) { /* the largest score first, for a stable softmax */
      double s = 0;
      for (int c = 0; c < SIM_MLA_QK; c++) s += qh[c] * rows[j * SIM_MLA_QK + c];
      if (scale * s > m) m = scale * s;
    }
    double sum = 0;
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (int c = 0; c < SIM_MLA_QK; c++) s += qh[c] * rows[j * SIM_MLA_QK + c];
      double p = exp(scale * s - m);
      sum += p;
      for (int c = 0; c < SIM_MLA_V; c++) oh[c] += p * rows[j * SIM_MLA_QK + c];
    }
    for (int c = 0; c < SIM_MLA_V; c++) oh[c] /= sum;
    lse[h] = m + log(sum);
  }
}

void sim_lse_combine(int D, int heads, const double *lse, const double *out, double *final) {
  memset(final, 0, (size_t)heads * SIM_MLA_V * sizeof *final);
  for (int h = 0; h < heads; h++) {
    double M = -INFINITY;
    for (int d = 0; d < D; d++) {
      double l = lse[(size_t)d * heads + h];
      if (isnan(l) || l == INFINITY) l = -INFINITY;
      if (l > M) M = l;
    }
    if (M == -INFINITY) M = 0;
    double sum = 0;
    for (int d = 0; d < D; d++) {
      double l = lse[(size_t)d * heads + h];
      if (isnan(l) || l == INFINITY) l = -INFINITY;
      sum += exp(l - M);
    }
    double L = log(sum) + M;
    for (int d = 0; d < D; d++) {
      double l = lse[(size_t)d * heads + h];
      if (isnan(l) || l == INFINITY) l = -INFINITY;
      double f = exp(l - L);
      if (isnan(f) || f == 0) continue; /* a rank with nothing to add contributes 0, NaN outputs included */
      const double *od = out + ((size_t)d * heads + h) * SIM_MLA_V;
      for (int c = 0; c < SIM_MLA_V; c++) final[(size_t)h * SIM_MLA_V + c] += f * od[c];
    }
  }
}

double sim_lse_merge(int D, const double *lse, size_t stride) {
  double m = -INFINITY, s = 0;
  for (int o = 0; o < D; o++) {
    double v = lse[(size_t)o * stride];
    if (v == v && v < INFINITY && v > m) m = v;
  }
  if (m == -INFINITY) return -INFINITY;
  for (int o = 0; o < D; o++) {
    double v = lse[(size_t)o * stride];
    if (v == v && v < INFINITY) s += exp(v - m);
  }
  return m + log(s);
}
