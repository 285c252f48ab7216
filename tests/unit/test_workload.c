/* Workload generator: a pinned known answer, determinism, and every generated
 * request valid over thousands of random generator settings. */
#include "cplab/scenario.h"
#include "testutil.h"

static int steps_equal(const cplab_step *a, size_t na, const cplab_step *b, size_t nb) {
  if (na != nb) return 0;
  for (size_t i = 0; i < na; i++)
    if (a[i].num_requests != b[i].num_requests ||
        memcmp(a[i].requests, b[i].requests, a[i].num_requests * sizeof(cplab_request)) != 0)
      return 0;
  return 1;
}

/* Guards against silent changes of the generator (or of GSL's mt19937): the
 * built-in "mixed" scenario expands to exactly these totals. */
static void test_known_answer_mixed(void **state) {
  (void)state;
  cplab_scenario *s = NULL;
  cplab_diag d = {0};
  assert_int_equal(cplab_scenario_load("mixed", NULL, &s, &d), 0);
  cplab_workload_summary w;
  cplab_scenario_summarize(s, &w);
  assert_int_equal(w.steps, 32);
  assert_int_equal(w.requests, 134);
  assert_int_equal(w.prefills, 82);
  assert_int_equal(w.decodes, 52);
  assert_int_equal(w.new_tokens, 38450);
  assert_int_equal(w.max_extent, 18503);
  cplab_scenario_free(s);
}

static cplab_dist random_dist(prop_run *pr, int64_t lo, int64_t hi) {
  cplab_dist d = {.min = lo, .max = hi};
  d.kind = (cplab_dist_kind)prop_int(pr, 0, 3);
  int64_t a = lo + (int64_t)prop_int(pr, 0, (long)(hi - lo)), b = lo + (int64_t)prop_int(pr, 0, (long)(hi - lo));
  d.min = a < b ? a : b;
  d.max = a < b ? b : a;
  d.value = d.min + (d.max - d.min) / 2;
  d.mu = (double)prop_int(pr, -2, 12);
  d.sigma = (double)prop_int(pr, 0, 30) / 10.0;
  d.mean = (double)prop_int(pr, 1, 100000);
  return d;
}

static void test_property_generated_requests_valid(void **state) {
  (void)state;
  prop_run pr;
  prop_begin(&pr);
  size_t total = 0;
  for (long trial = 0; trial < 2000; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    cplab_parallel p;
    cplab_parallel_defaults(&p);
    p.max_model_len = prop_int(&pr, 1, 200000);
    int64_t mml = p.max_model_len;
    cplab_generator g = {
        .steps = prop_int(&pr, 1, 20),
        .requests = random_dist(&pr, 1, 64),
        .decode_fraction = (double)prop_int(&pr, 0, 10) / 10.0,
        .context = random_dist(&pr, 0, mml),
        .prefill_tokens = random_dist(&pr, 1, mml),
        .chunked_fraction = (double)prop_int(&pr, 0, 10) / 10.0,
    };
    uint64_t seed = (uint64_t)prop_int(&pr, 0, 1L << 30);
    cplab_step *steps = NULL, *again = NULL;
    size_t n = 0, n2 = 0;
    cplab_diag d = {0};
    prop_check(&pr, trial, cplab_workload_generate(&g, &p, seed, &steps, &n, &d) == 0, "generate: %s", d.msg);
    prop_check(&pr, trial, cplab_workload_generate(&g, &p, seed, &again, &n2, &d) == 0, "generate: %s", d.msg);
    prop_check(&pr, trial, steps_equal(steps, n, again, n2), "same seed, different steps");
    prop_check(&pr, trial, n == (size_t)g.steps, "%zu steps, wanted %lld", n, (long long)g.steps);
    for (size_t i = 0; i < n; i++) {
      const cplab_step *st = &steps[i];
      prop_check(&pr, trial, st->num_requests >= (size_t)g.requests.min && st->num_requests <= (size_t)g.requests.max,
                 "step %zu has %zu requests outside [%lld, %lld]", i, st->num_requests, (long long)g.requests.min,
                 (long long)g.requests.max);
      for (size_t j = 0; j < st->num_requests; j++) {
        const cplab_request *q = &st->requests[j];
        total++;
        for (size_t k = 0; k < j; k++) prop_check(&pr, trial, st->requests[k].id != q->id, "duplicate id");
        prop_check(&pr, trial, q->num_computed >= 0 && q->new_tokens >= 1, "empty or negative request");
        prop_check(&pr, trial, q->num_computed + q->new_tokens <= mml, "extent %lld > max_model_len %lld",
                   (long long)(q->num_computed + q->new_tokens), (long long)mml);
        if (q->phase == CPLAB_PHASE_DECODE) {
          prop_check(&pr, trial, q->new_tokens == 1 && q->num_computed >= 1, "bad decode row");
        } else {
          prop_check(&pr, trial, q->new_tokens <= g.prefill_tokens.max || q->new_tokens == 1,
                     "prefill of %lld tokens above the distribution's max %lld", (long long)q->new_tokens,
                     (long long)g.prefill_tokens.max);
          if (g.chunked_fraction == 0.0) prop_check(&pr, trial, q->num_computed == 0, "unchunked prefill with context");
        }
        if (g.decode_fraction == 0.0) prop_check(&pr, trial, q->phase == CPLAB_PHASE_PREFILL, "decode drawn at 0");
      }
    }
    cplab_steps_free(steps, n);
    cplab_steps_free(again, n2);
  }
  prop_end(&pr);
  if (pr.only_trial < 0) assert_true(total > 10000);
}

static void test_seed_high_bits_matter(void **state) {
  (void)state;
  cplab_parallel p;
  cplab_parallel_defaults(&p);
  p.max_model_len = 100000;
  cplab_generator g = {.steps = 8,
                       .requests = {.kind = CPLAB_DIST_UNIFORM, .min = 1, .max = 16},
                       .decode_fraction = 0.5,
                       .context = {.kind = CPLAB_DIST_UNIFORM, .min = 1, .max = 50000},
                       .prefill_tokens = {.kind = CPLAB_DIST_UNIFORM, .min = 1, .max = 5000},
                       .chunked_fraction = 0.5};
  cplab_step *a, *b;
  size_t na, nb;
  cplab_diag d = {0};
  assert_int_equal(cplab_workload_generate(&g, &p, 5, &a, &na, &d), 0);
  assert_int_equal(cplab_workload_generate(&g, &p, 5 + (UINT64_C(1) << 40), &b, &nb, &d), 0);
  assert_false(steps_equal(a, na, b, nb));
  cplab_steps_free(a, na);
  cplab_steps_free(b, nb);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_answer_mixed),
      cmocka_unit_test(test_property_generated_requests_valid),
      cmocka_unit_test(test_seed_high_bits_matter),
  };
  return cmocka_run_group_tests_name("workload", tests, NULL, NULL);
}
