/* Indexer reference: see indexer_ref.h. */
#include "indexer_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/fp8.h"
#include "cplab/philox.h"

int sim_indexer_query_make(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position, int heads,
                           sim_indexer_query *out, cplab_diag *d) {
  if (heads < 1 || heads > 64) CPLAB_FAIL(d, CPLAB_EINVAL, "indexer heads must be 1..64, got %d", heads);
  float values[64 * CPLAB_IDX_DIM];
  cplab_rand_realistic_row(seed, layer, CPLAB_TENSOR_INDEX_Q, request, position, values, (uint32_t)heads * CPLAB_IDX_DIM);
  out->heads = heads;
  for (int h = 0; h < heads; h++) {
    int rc = cplab_kvformat_quantize_tile(values + h * CPLAB_IDX_DIM, CPLAB_IDX_DIM, out->q[h], &out->scale[h], d);
    if (rc) return rc;
    /* Raw weight in (0, 1], from the query's auxiliary stream past its values. */
    uint32_t u = cplab_rand_u32(seed, layer, CPLAB_TENSOR_INDEX_Q | CPLAB_TENSOR_AUX, request, position,
                                (uint32_t)(heads * CPLAB_IDX_DIM + h));
    double w = ((double)(u >> 8) + 1.0) / 16777216.0;
    out->weight[h] = w * out->scale[h] / sqrt((double)CPLAB_IDX_DIM) / sqrt((double)heads);
  }
  return 0;
}

double sim_indexer_logit_mag(const sim_indexer_query *q, const uint8_t key[CPLAB_IDX_ENTRY_BYTES], double *mag) {
  float ks;
  memcpy(&ks, key + CPLAB_IDX_SCALE_OFFSET, sizeof ks); /* little-endian fp32, as stored */
  double kv[CPLAB_IDX_DIM], logit = 0, m = 0;
  for (int c = 0; c < CPLAB_IDX_DIM; c++) kv[c] = cplab_e4m3_to_f32(key[c]);
  for (int h = 0; h < q->heads; h++) {
    double dot = 0, abs = 0;
    for (int c = 0; c < CPLAB_IDX_DIM; c++) {
      double p = (double)cplab_e4m3_to_f32(q->q[h][c]) * kv[c];
      dot += p, abs += fabs(p);
    }
    if (dot > 0) logit += q->weight[h] * dot;
    m += fabs(q->weight[h]) * abs;
  }
  if (mag) *mag = m * fabs((double)ks);
  return logit * ks;
}

double sim_indexer_logit(const sim_indexer_query *q, const uint8_t key[CPLAB_IDX_ENTRY_BYTES]) {
  return sim_indexer_logit_mag(q, key, NULL);
}

int sim_indexer_by_score(const void *a, const void *b) {
  const sim_scored *x = a, *y = b;
  int nx = x->s != x->s, ny = y->s != y->s;
  if (nx != ny) return ny - nx;
  if (!nx && x->s != y->s) return x->s > y->s ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

int sim_indexer_topk(const sim_indexer_query *q, const uint8_t (*keys)[CPLAB_IDX_ENTRY_BYTES], int64_t n, int k,
                     int32_t *out, double *scores, double *kth, cplab_diag *d) {
  if (k < 1 || n < 0) CPLAB_FAIL(d, CPLAB_EINVAL, "top-k needs k >= 1 and n >= 0 (k %d, n %lld)", k, (long long)n);
  sim_scored *all = malloc((size_t)(n ? n : 1) * sizeof *all);
  if (!all) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %lld logits", (long long)n);
  for (int64_t i = 0; i < n; i++) all[i] = (sim_scored){sim_indexer_logit(q, keys[i]), i};
  qsort(all, (size_t)n, sizeof *all, sim_indexer_by_score);
  for (int j = 0; j < k; j++) {
    out[j] = j < n ? (int32_t)all[j].i : -1;
    scores[j] = j < n ? all[j].s : -INFINITY;
  }
  *kth = n >= k ? all[k - 1].s : -INFINITY;
  free(all);
  return 0;
}
