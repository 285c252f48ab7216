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
  size_t n = (size_t)l->rows, h = (size_t)l->heads;
  float *out = to_float(l->out, n * h * SIM_MLA_V), *lse = to_float(l->lse, n * h);
  int rc = out && lse ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  cplab_trace_rows r = {.layer = l->layer, .rows = l->rows, .k = l->k, .heads = l->heads, .tokens = l->tokens,
                        .topk = l->topk, .converted = l->converted, .scores = l->scores, .kth = l->kth, .out = out,
                        .lse = lse, .num_digests = l->num_digests, .digests = l->digests, .valid = l->valid,
                        .partial_blocks = l->blocks, .partial_out = l->partial_out, .partial_lse = l->partial_lse};
  if (!rc) rc = cplab_trace_write_rows(w, step, &r, d);
  free(out), free(lse);
  return rc;
}
