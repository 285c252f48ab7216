/* Storing the numeric pass in a rank file (numeric.h); part of cplab-sim,
 * so that libcplab_sim (the references tests reuse) needs no HDF5. */
#include <stdlib.h>

#include "numeric.h"
#include "reference.h"

static float *to_float(const double *x, size_t n) {
  float *f = malloc(sizeof *f * (n ? n : 1));
  if (f)
    for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
  return f;
}

int sim_numeric_write(cplab_trace_writer *w, size_t step, const sim_numeric_layer *l, cplab_diag *d) {
  uint64_t n = (uint64_t)l->rows, k = (uint64_t)l->k, h = (uint64_t)l->heads;
  int rc = 0;
  if (n > 0) {
    float *out = to_float(l->out, n * h * SIM_MLA_V), *lse = to_float(l->lse, n * h);
    const struct {
      cplab_trace_tensor t;
      uint64_t dims[3];
      const void *data;
    } rows[] = {
        {CPLAB_TT_SAMPLED_TOKENS, {n}, l->tokens},       {CPLAB_TT_TOPK, {n, k}, l->topk},
        {CPLAB_TT_TOPK_CONVERTED, {n, k}, l->converted}, {CPLAB_TT_TOPK_SCORES, {n, k}, l->scores},
        {CPLAB_TT_KTH_SCORE, {n}, l->kth},               {CPLAB_TT_ATTN_OUT, {n, h, SIM_MLA_V}, out},
        {CPLAB_TT_ATTN_LSE, {n, h}, lse},
    };
    if (!out || !lse) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0] && !rc; i++)
      rc = cplab_trace_write_tensor(w, step, l->layer, rows[i].t, rows[i].dims, rows[i].data, 0, d);
    free(out);
    free(lse);
  }
  uint64_t nd = (uint64_t)l->num_digests;
  if (!rc) rc = cplab_trace_write_tensor(w, step, l->layer, CPLAB_TT_DIGESTS, &nd, l->digests, 0, d);
  return rc;
}
