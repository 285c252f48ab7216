/* The indexer reference (§6): top-k returns exactly the k best logits with
 * the documented tie rule, honours causal bounds, sees the exact ties the
 * input generator plants; and the keys a rank reads through the gathered,
 * deinterleaved PCP+DCP buffer are bitwise the single-rank keys (so every
 * rank's top-k equals the single-rank top-k), which a bad deinterleave breaks. */
#include <math.h>
#include <string.h>

#include "cplab/fp8.h"
#include "cplab/kv.h"
#include "cplab/plan.h"
#include "indexer_ref.h"
#include "testutil.h"

enum { MAX_N = 600, HEADS = 32 };
static uint8_t keys[MAX_N][CPLAB_IDX_ENTRY_BYTES];

static void make_keys(uint64_t seed, uint32_t request, int64_t n) {
  for (int64_t p = 0; p < n; p++) cplab_kvformat_idx_generate(seed, 0, request, (uint32_t)p, keys[p]);
}

static void test_topk_is_the_k_best(void **state) {
  (void)state;
  static int32_t out[2048];
  static double scores[2048], logits[MAX_N];
  static const int ks[] = {1, 16, 64, 2048};
  prop_run pr;
  prop_begin(&pr);
  long ties_seen = 0;
  for (long trial = 0; trial < 120; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    int64_t n = prop_int(&pr, 0, MAX_N);
    int k = ks[prop_int(&pr, 0, 3)];
    make_keys((uint64_t)trial, 3, n);
    sim_indexer_query q;
    cplab_diag d = {0};
    prop_check(&pr, trial, sim_indexer_query_make((uint64_t)trial, 0, 3, (uint32_t)n, HEADS, &q, &d) == 0, "%s", d.msg);
    double kth;
    prop_check(&pr, trial, sim_indexer_topk(&q, (const uint8_t(*)[CPLAB_IDX_ENTRY_BYTES])keys, n, k, out, scores, &kth, &d) == 0, "%s", d.msg);
    for (int64_t i = 0; i < n; i++) logits[i] = sim_indexer_logit(&q, keys[i]);
    char picked[MAX_N] = {0};
    int64_t valid = n < k ? n : k;
    for (int j = 0; j < k; j++) {
      if (j >= valid) {
        prop_check(&pr, trial, out[j] == -1 && scores[j] == -INFINITY, "entry %d past the %lld valid keys", j, (long long)valid);
        continue;
      }
      prop_check(&pr, trial, out[j] >= 0 && out[j] < n && !picked[out[j]], "entry %d = %d invalid or repeated", j, out[j]);
      picked[out[j]] = 1;
      prop_check(&pr, trial, scores[j] == logits[out[j]], "score of entry %d", j);
      if (j > 0) {
        int ordered = scores[j - 1] > scores[j] || (scores[j - 1] == scores[j] && out[j - 1] < out[j]);
        prop_check(&pr, trial, ordered, "entries %d, %d break the tie rule", j - 1, j);
        ties_seen += scores[j - 1] == scores[j];
      }
    }
    for (int64_t i = 0; i < n; i++)
      if (!picked[i] && valid == k)
        prop_check(&pr, trial, logits[i] < kth || (logits[i] == kth && i > out[k - 1]),
                   "key %lld (%.17g) left out above the k-th (%.17g)", (long long)i, logits[i], kth);
  }
  prop_end(&pr);
  if (pr.only_trial < 0) assert_true(ties_seen > 0); /* the generator's copied key rows give exact ties */
  print_message("# exact ties met in the selections: %ld\n", ties_seen);
}

/* Causal bounds: a query at position p sees keys [0, p]; with p + 1 <= k
 * all of them are selected and the rest of the row is -1. */
static void test_causal_bounds(void **state) {
  (void)state;
  static int32_t out[2048];
  static double scores[2048];
  make_keys(5, 1, 300);
  for (int64_t p = 0; p < 300; p += 37) {
    sim_indexer_query q;
    cplab_diag d = {0};
    double kth;
    assert_int_equal(sim_indexer_query_make(5, 0, 1, (uint32_t)p, HEADS, &q, &d), 0);
    assert_int_equal(sim_indexer_topk(&q, (const uint8_t(*)[CPLAB_IDX_ENTRY_BYTES])keys, p + 1, 2048, out, scores, &kth, &d), 0);
    char seen[300] = {0};
    for (int j = 0; j <= p; j++) {
      assert_true(out[j] >= 0 && out[j] <= p && !seen[out[j]]);
      seen[out[j]] = 1;
    }
    for (int j = (int)p + 1; j < 2048; j++) assert_int_equal(out[j], -1);
    assert_true(kth == -INFINITY);
  }
}

/* Keys through the PCP+DCP indexer path (shards by ownership, rank-major
 * all-gather, the layout's deinterleave) equal the logical keys bitwise. */
static int64_t gathered_keys_mismatches(const char *layout, int interleave) {
  cplab_model model;
  cplab_model_preset("glm-5", &model);
  cplab_parallel par;
  cplab_parallel_defaults(&par);
  par.pcp = par.dcp = 2, par.interleave = interleave, par.max_model_len = 1024;
  cplab_request reqs[] = {{0, 0, 40, CPLAB_PHASE_PREFILL}, {1, 60, 70, CPLAB_PHASE_PREFILL}};
  cplab_step step = {2, reqs};
  cplab_step_input in = {&step, 0, 11, &par, &model, cplab_layout_find(layout)};
  cplab_rank_plan *p = NULL;
  cplab_diag d = {0};
  if (cplab_rank_plan_derive(&in, 0, 0, &p, &d)) fail_msg("%s", d.msg);
  const cplab_indexer_plan *ip = &p->indexer;
  assert_true(ip->active && ip->num_chunks == 1);
  int64_t S = ip->chunks[0].padded_total, mismatches = 0;
  uint8_t(*gathered)[CPLAB_IDX_ENTRY_BYTES] = calloc((size_t)(2 * S), CPLAB_IDX_ENTRY_BYTES);
  for (int o = 0; o < 2; o++) /* each DCP rank's shard, from its own cache */
    for (int k = 0; k < ip->num_regions; k++)
      for (int64_t t = 0; t < ip->extent[k]; t++)
        if (cplab_kv_owner(t, interleave, 2) == o)
          cplab_kvformat_idx_generate(11, 0, (uint32_t)ip->region_req[k], (uint32_t)t,
                                      gathered[o * S + ip->padded_cu[k] + cplab_kv_local_idx(t, interleave, 2)]);
  for (int k = 0; k < ip->num_regions; k++)
    for (int64_t t = 0; t < ip->extent[k]; t++) {
      uint8_t logical[CPLAB_IDX_ENTRY_BYTES];
      cplab_kvformat_idx_generate(11, 0, (uint32_t)ip->region_req[k], (uint32_t)t, logical);
      int64_t row = cplab_layout_deinterleave(p->layout, &p->env, ip, k, t);
      mismatches += row < 0 || row >= 2 * S || memcmp(gathered[row], logical, CPLAB_IDX_ENTRY_BYTES) != 0;
    }
  free(gathered);
  cplab_rank_plan_free(p);
  return mismatches;
}

/* The magnitude sum: two heads, a key of +1 / -1 entries, by hand. Head 0
 * (q = +2 everywhere, w' 0.5) has dot 2 · (64 - 64) = 0 and magnitude
 * 2 · 128; head 1 (q = +1 on the key's +1 entries, -1 elsewhere, w' -0.25)
 * has dot 128 = its magnitude. Logit: ReLU(0) · 0.5 + 128 · -0.25 = -32, times
 * the key scale 4; mag: (0.5 · 256 + 0.25 · 128) · 4 = 640. */
static void test_logit_magnitude_sum(void **state) {
  (void)state;
  static uint8_t key[CPLAB_IDX_ENTRY_BYTES];
  sim_indexer_query q = {.heads = 2};
  float ks = 4.0f;
  for (int c = 0; c < CPLAB_IDX_DIM; c++) {
    float kv = c % 2 ? -1.0f : 1.0f;
    key[c] = cplab_e4m3_from_f32(kv);
    q.q[0][c] = cplab_e4m3_from_f32(2.0f);
    q.q[1][c] = cplab_e4m3_from_f32(kv);
  }
  memcpy(key + CPLAB_IDX_SCALE_OFFSET, &ks, sizeof ks);
  q.weight[0] = 0.5, q.weight[1] = -0.25;
  double mag = -1, logit = sim_indexer_logit_mag(&q, key, &mag);
  assert_true(logit == -128.0 && mag == 640.0);
  assert_true(sim_indexer_logit(&q, key) == logit);
  assert_true(sim_indexer_logit_mag(&q, key, NULL) == logit);
}

static void test_gathered_keys_are_the_logical_keys(void **state) {
  (void)state;
  for (int il = 1; il <= 4; il *= 2) assert_int_equal(gathered_keys_mismatches("vllm", il), 0);
  assert_true(gathered_keys_mismatches("mutant-bad-deinterleave", 4) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_topk_is_the_k_best),
      cmocka_unit_test(test_causal_bounds),
      cmocka_unit_test(test_logit_magnitude_sum),
      cmocka_unit_test(test_gathered_keys_are_the_logical_keys),
  };
  return cmocka_run_group_tests_name("indexer", tests, NULL, NULL);
}
