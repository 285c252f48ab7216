/* Scenarios: built-ins, resolved round trip, overrides, JSON positions, and
 * properties: the parser's verdict on random layouts equals the rules', and
 * random corruptions of a valid file never crash and always explain. */
#include "cplab/scenario.h"
#include "json_locate.h"
#include "testutil.h"

static cplab_scenario *load(const char *name, const cplab_scenario_overrides *ov) {
  cplab_scenario *s = NULL;
  cplab_diag d = {0};
  if (cplab_scenario_load(name, ov, &s, &d) != 0) fail_msg("%s: %s", name, d.msg);
  return s;
}

static char *dump(const cplab_scenario *s, int with_steps) {
  json_t *j = cplab_scenario_to_json(s, with_steps);
  assert_non_null(j);
  char *text = json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  json_decref(j);
  assert_non_null(text);
  return text;
}

static void test_builtins_round_trip(void **state) {
  (void)state;
  int n = 0;
  for (const char *const *name = cplab_scenario_builtin_names(); *name; name++, n++) {
    cplab_scenario *s = load(*name, NULL);
    assert_string_equal(s->name, *name);
    for (int with_steps = 0; with_steps <= 1; with_steps++) {
      char *a = dump(s, with_steps);
      cplab_scenario *again = NULL;
      cplab_diag d = {0};
      if (cplab_scenario_parse(a, strlen(a), "resolved", NULL, &again, &d) != 0)
        fail_msg("%s: resolved form does not load back: %s", *name, d.msg);
      char *b = dump(again, with_steps);
      assert_string_equal(a, b);
      /* The expanded steps agree too. */
      assert_int_equal(again->num_steps, s->num_steps);
      for (size_t i = 0; i < s->num_steps; i++) {
        assert_int_equal(again->steps[i].num_requests, s->steps[i].num_requests);
        assert_memory_equal(again->steps[i].requests, s->steps[i].requests,
                            s->steps[i].num_requests * sizeof(cplab_request));
      }
      free(a);
      free(b);
      cplab_scenario_free(again);
    }
    cplab_scenario_free(s);
  }
  assert_true(n >= 2);
}

static void test_pr56157(void **state) {
  (void)state;
  cplab_scenario *s = load("pr56157", NULL);
  assert_string_equal(s->model.preset, "glm-5");
  assert_int_equal(s->par.tp, 1);
  assert_int_equal(s->par.pcp, 4);
  assert_int_equal(s->par.dcp, 4);
  assert_int_equal(cplab_parallel_world(&s->par), 4);
  assert_int_equal(s->steps[0].requests[0].new_tokens, 32768);
  assert_int_equal(s->steps[0].requests[0].phase, CPLAB_PHASE_PREFILL);
  assert_true(s->num_steps >= 2);
  assert_int_equal(s->steps[1].requests[0].phase, CPLAB_PHASE_DECODE);
  assert_string_equal(s->layout, "vllm");
  cplab_scenario_free(s);
}

static void test_overrides(void **state) {
  (void)state;
  cplab_scenario_overrides ov = {1, 99, "block-aligned"};
  cplab_scenario *s = load("mixed", &ov);
  assert_int_equal(s->seed, 99);
  assert_string_equal(s->layout, "block-aligned");
  cplab_scenario *base = load("mixed", NULL);
  /* Another seed, another generated workload. */
  int differs = s->num_steps != base->num_steps;
  for (size_t i = 0; !differs && i < s->num_steps; i++)
    differs = s->steps[i].num_requests != base->steps[i].num_requests ||
              memcmp(s->steps[i].requests, base->steps[i].requests,
                     s->steps[i].num_requests * sizeof(cplab_request)) != 0;
  assert_true(differs);
  cplab_scenario_free(s);
  cplab_scenario_free(base);
  cplab_scenario *out = NULL;
  cplab_diag d = {0};
  cplab_scenario_overrides bad = {1, (UINT64_C(1) << 53), NULL};
  assert_int_equal(cplab_scenario_load("smoke", &bad, &out, &d), CPLAB_EUSAGE);
  assert_null(out);
  assert_non_null(strstr(d.msg, "--seed"));
}

static void expect_pos(const cplab_json_locator *loc, const char *path, int want_key, int line, int col) {
  cplab_json_pos p = cplab_json_locate(loc, path, want_key);
  if (p.line != line || p.col != col)
    fail_msg("%s%s: at %d:%d, expected %d:%d", path, want_key ? " (key)" : "", p.line, p.col, line, col);
}

static void test_json_positions(void **state) {
  (void)state;
  const char *text = "{\n  \"a\": {\"b\": [1,\n    {\"c\": \"x\"}]},\n  \"d\": 2\n}\n";
  cplab_json_locator *loc = cplab_json_locator_alloc(text, strlen(text));
  assert_non_null(loc);
  expect_pos(loc, "a.b[1].c", 0, 3, 11);
  expect_pos(loc, "a.b[1].c", 1, 3, 6);
  expect_pos(loc, "d", 0, 4, 8);
  expect_pos(loc, "a.b[0]", 0, 2, 15);
  expect_pos(loc, "", 0, 1, 1);
  expect_pos(loc, "nope", 0, 0, 0);
  cplab_json_locator_free(loc);
}

/* A scenario text with the given parallel object. */
static char *with_parallel(int tp, int pcp, int dcp, int pp, int il, int bs, long mml, const char *mode) {
  char *text = malloc(1024);
  assert_non_null(text);
  int n = snprintf(text, 1024,
                   "{\"name\": \"p\", \"model\": \"glm-5\", \"parallel\": {\"tp\": %d, \"pcp\": %d, \"dcp\": %d, "
                   "\"pp\": %d, \"interleave\": %d, \"block_size\": %d, \"max_model_len\": %ld, "
                   "\"cudagraph_mode\": \"%s\"}, \"workload\": {\"steps\": [{\"requests\": [{\"id\": 0, "
                   "\"new_tokens\": 1, \"phase\": \"prefill\"}]}]}}",
                   tp, pcp, dcp, pp, il, bs, mml, mode);
  assert_true(n > 0 && n < 1024);
  return text;
}

static void test_property_parallel_verdicts(void **state) {
  (void)state;
  static const char *const modes[] = {"NONE", "PIECEWISE", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE", "FULL"};
  prop_run pr;
  prop_begin(&pr);
  long accepted = 0, rejected = 0;
  for (long trial = 0; trial < 3000; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    cplab_parallel p;
    cplab_parallel_defaults(&p);
    /* Mostly near-valid layouts, so that both verdicts are common. */
    static const int sizes[] = {1, 2, 4, 8, 0, 3};
    p.tp = sizes[prop_int(&pr, 0, 5)];
    p.pcp = sizes[prop_int(&pr, 0, 5)];
    long pick = prop_int(&pr, 0, 3);
    p.dcp = pick == 0 ? 1 : pick == 1 ? p.pcp : pick == 2 ? p.tp * p.pcp : (int)prop_int(&pr, 0, 40);
    p.pp = prop_int(&pr, 0, 4) ? 1 : 2;
    p.interleave = 1 << prop_int(&pr, 0, 7);
    p.block_size = prop_int(&pr, 0, 3) ? 64 : (int)prop_int(&pr, -2, 100);
    p.max_model_len = prop_int(&pr, 0, 5) ? prop_int(&pr, 1, 202752) : prop_int(&pr, -1, 300000);
    p.graph_mode = (cplab_graph_mode)prop_int(&pr, 0, 4);
    char *text = with_parallel(p.tp, p.pcp, p.dcp, p.pp, p.interleave, p.block_size, (long)p.max_model_len,
                               modes[p.graph_mode]);
    cplab_diag rule = {0}, got = {0};
    int want = cplab_parallel_check(&p, 64, &rule) == 0 && p.max_model_len <= 202752;
    cplab_scenario *s = NULL;
    int rc = cplab_scenario_parse(text, strlen(text), "prop", NULL, &s, &got);
    prop_check(&pr, trial, (rc == 0) == want, "parser says %d (%s), rules say %s for %s", rc, got.msg,
               want ? "ok" : rule.msg, text);
    if (rc) {
      prop_check(&pr, trial, strncmp(got.msg, "prop:1:", 7) == 0, "message without location: %s", got.msg);
      rejected++;
    } else {
      accepted++;
    }
    cplab_scenario_free(s);
    free(text);
  }
  prop_end(&pr);
  if (pr.only_trial < 0) assert_true(accepted > 100 && rejected > 100);
}

/* Corrupt a valid scenario at random; the parser must return 0 or a located
 * message, never crash (run under the sanitizers in CI). */
static void test_property_corruption(void **state) {
  (void)state;
  const char *base;
  assert_int_equal(cplab_scenario_builtin("smoke", &base), 0);
  size_t n = strlen(base);
  static const char alphabet[] = "{}[],:\"0123456789-+.eE abcxyz\\\n\t";
  static const char *const numbers[] = {"-1", "0", "1e999", "99999999999999999999", "-9223372036854775808",
                                        "4.5", "65", "null", "true", "\"\""};
  prop_run pr;
  prop_begin(&pr);
  long ok = 0, failed = 0;
  for (long trial = 0; trial < 4000; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    char *text = malloc(2 * n + 64);
    memcpy(text, base, n + 1);
    size_t len = n;
    int edits = (int)prop_int(&pr, 1, 4);
    for (int e = 0; e < edits; e++) {
      size_t at = (size_t)prop_int(&pr, 0, (long)len - 1);
      switch (prop_int(&pr, 0, 3)) {
        case 0: { /* delete a run */
          size_t k = (size_t)prop_int(&pr, 1, 8);
          if (at + k > len) k = len - at;
          memmove(text + at, text + at + k, len - at - k + 1);
          len -= k;
          break;
        }
        case 1: /* overwrite one character */ text[at] = alphabet[prop_int(&pr, 0, (long)sizeof alphabet - 2)]; break;
        case 2: { /* replace a digit run with a hostile number */
          while (at < len && (text[at] < '0' || text[at] > '9')) at++;
          size_t end = at;
          while (end < len && text[end] >= '0' && text[end] <= '9') end++;
          const char *num = numbers[prop_int(&pr, 0, 9)];
          size_t k = strlen(num);
          if (len + k - (end - at) >= 2 * n + 60) break;
          memmove(text + at + k, text + end, len - end + 1);
          memcpy(text + at, num, k);
          len = len + k - (end - at);
          break;
        }
        default: /* truncate */ len = at, text[len] = '\0'; break;
      }
      if (len == 0) break;
    }
    cplab_scenario *s = NULL;
    cplab_diag d = {0};
    int rc = cplab_scenario_parse(text, len, "mut", NULL, &s, &d);
    if (rc == 0) {
      prop_check(&pr, trial, s != NULL && s->num_steps > 0, "accepted without steps");
      ok++;
    } else {
      prop_check(&pr, trial, s == NULL && rc < 0, "failure left a scenario");
      prop_check(&pr, trial, strncmp(d.msg, "mut:", 4) == 0 && strlen(d.msg) > 8, "unlocated message '%s'", d.msg);
      failed++;
    }
    cplab_scenario_free(s);
    free(text);
  }
  prop_end(&pr);
  if (pr.only_trial < 0) assert_true(failed > 1000);
  (void)ok;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_builtins_round_trip),        cmocka_unit_test(test_pr56157),
      cmocka_unit_test(test_overrides),                  cmocka_unit_test(test_json_positions),
      cmocka_unit_test(test_property_parallel_verdicts), cmocka_unit_test(test_property_corruption),
  };
  return cmocka_run_group_tests_name("scenario", tests, NULL, NULL);
}
