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

/* ---- scenarios built in memory (cplab_scenario_finish) ------------------------ */

/* A valid two-step scenario built in memory: a prefill, then its decode. */
static cplab_scenario *built(void) {
  cplab_scenario *s = cplab_scenario_alloc("mem");
  assert_non_null(s);
  snprintf(s->name, sizeof s->name, "built");
  assert_int_equal(cplab_model_preset("glm-5", &s->model), 0);
  s->par.tp = 2, s->par.pcp = 2, s->par.dcp = 2, s->par.max_model_len = 4096;
  s->num_steps = 2;
  s->steps = calloc(2, sizeof *s->steps);
  assert_non_null(s->steps);
  for (size_t i = 0; i < 2; i++) {
    s->steps[i].num_requests = 1;
    s->steps[i].requests = calloc(1, sizeof(cplab_request));
    assert_non_null(s->steps[i].requests);
  }
  s->steps[0].requests[0] = (cplab_request){0, 0, 100, CPLAB_PHASE_PREFILL};
  s->steps[1].requests[0] = (cplab_request){0, 100, 1, CPLAB_PHASE_DECODE};
  return s;
}

/* The rest of a message after its origin and position: "ORIGIN[:L:C]: ". */
static const char *after_origin(const char *msg, const char *origin) {
  size_t n = strlen(origin);
  if (strncmp(msg, origin, n) != 0 || msg[n] != ':') return msg;
  msg += n + 1;
  const char *p = msg;
  for (int part = 0; part < 2; part++) {
    size_t digits = strspn(p, "0123456789");
    if (!digits || p[digits] != ':') return msg[0] == ' ' ? msg + 1 : msg;
    p += digits + 1;
  }
  return p[0] == ' ' ? p + 1 : p;
}

static void test_built_valid(void **state) {
  (void)state;
  cplab_scenario *s = built();
  cplab_diag d = {0};
  if (cplab_scenario_finish(s, NULL, &d)) fail_msg("%s", d.msg);
  assert_string_equal(s->layout, "vllm");
  assert_int_equal(s->sampled_rows, 16);
  assert_non_null(s->source_json);
  /* source_json is the resolved form: it parses back into the same scenario. */
  cplab_scenario *again = NULL;
  if (cplab_scenario_parse(s->source_json, strlen(s->source_json), "again", NULL, &again, &d)) fail_msg("%s", d.msg);
  char *a = dump(s, 1), *b = dump(again, 1);
  assert_string_equal(a, b);
  free(a), free(b);
  cplab_scenario_free(again);
  cplab_scenario_free(s);
}

/* Each bad field is refused with the field's JSON path, and the scenario
 * stays the caller's to free. */
static void test_built_refused(void **state) {
  (void)state;
  static const struct {
    const char *want;
    int code;
  } cases[] = {
      {"mem: name: 'Bad' is not a valid name", CPLAB_ESCHEMA},
      {"mem: model.preset: unknown model preset 'llama'", CPLAB_ENOTFOUND},
      {"mem: model.num_heads: must be in [1, 4096], got 0", CPLAB_ERANGE},
      {"mem: parallel.dcp: with pcp > 1, dcp must be 1, pcp (2) or tp·pcp (4), got 3", CPLAB_EUNSUPPORTED},
      {"mem: parallel.max_model_len: 300000 exceeds the model's max_position_embeddings", CPLAB_ERANGE},
      {"mem: speculative.num_spec_tokens: must be in [0, 7], got 8", CPLAB_ERANGE},
      {"mem: layout: unknown layout 'zigzag'", CPLAB_ENOTFOUND},
      {"mem: seed: must be in [0, 9007199254740991], got 9007199254740992", CPLAB_ERANGE},
      {"mem: check.sampled_rows: must be in [0, 1000000], got -1", CPLAB_ERANGE},
      {"mem: workload.steps[1].requests: must have between 1 and 65536 entries, got 0", CPLAB_ERANGE},
      {"mem: workload.steps[1].requests[0].num_computed: request 0 reached 100 tokens", CPLAB_ESCHEMA},
      {"mem: workload.steps[0].requests[0].new_tokens: must be in [1, 4096], got 0", CPLAB_ERANGE},
      {"mem: workload.steps[1].requests[0].phase: must be \"prefill\" or \"decode\"", CPLAB_ESCHEMA},
      {"mem: workload.generator.context.max: max (10) is below min (100)", CPLAB_ERANGE},
      {"mem: workload: needs exactly one of 'steps' or 'generator'", CPLAB_ESCHEMA},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cplab_scenario *s = built();
    switch (i) {
      case 0: snprintf(s->name, sizeof s->name, "Bad"); break;
      case 1: snprintf(s->model.preset, sizeof s->model.preset, "llama"); break;
      case 2: s->model.num_heads = 0; break;
      case 3: s->par.dcp = 3; break;
      case 4: s->par.max_model_len = 300000; break;
      case 5: s->par.num_spec_tokens = 8; break;
      case 6: snprintf(s->layout, sizeof s->layout, "zigzag"); break;
      case 7: s->seed = CPLAB_MAX_SEED + 1; break;
      case 8: s->sampled_rows = -1; break;
      case 9: s->steps[1].num_requests = 0; break;
      case 10: s->steps[1].requests[0].num_computed = 99; break;
      case 11: s->steps[0].requests[0].new_tokens = 0; break;
      case 12: s->steps[1].requests[0].phase = (cplab_phase)7; break;
      case 13: /* a generator instead of the steps */
        cplab_steps_free(s->steps, s->num_steps);
        s->steps = NULL, s->num_steps = 0, s->has_generator = 1;
        s->gen = (cplab_generator){.steps = 2,
                                   .requests = {.kind = CPLAB_DIST_CONST, .value = 1, .min = 1, .max = 4},
                                   .context = {.kind = CPLAB_DIST_UNIFORM, .min = 100, .max = 10},
                                   .prefill_tokens = {.kind = CPLAB_DIST_CONST, .value = 8, .min = 1, .max = 64}};
        break;
      default: s->has_generator = 1; break; /* and steps */
    }
    cplab_diag d = {0};
    int rc = cplab_scenario_finish(s, NULL, &d);
    if (rc != cases[i].code || strncmp(d.msg, cases[i].want, strlen(cases[i].want)) != 0)
      fail_msg("case %zu: got %d '%s', expected %d '%s'", i, rc, d.msg, cases[i].code, cases[i].want);
    cplab_scenario_free(s);
  }
}

/* A generator built in memory expands into the steps its JSON form does. */
static void test_built_generator(void **state) {
  (void)state;
  cplab_scenario *s = load("mixed", NULL);
  cplab_scenario *b = cplab_scenario_alloc("mem");
  assert_non_null(b);
  memcpy(b->name, s->name, sizeof b->name);
  b->model = s->model, b->par = s->par, b->seed = s->seed, b->sampled_rows = s->sampled_rows;
  memcpy(b->layout, s->layout, sizeof b->layout);
  b->has_generator = 1, b->gen = s->gen;
  cplab_diag d = {0};
  if (cplab_scenario_finish(b, NULL, &d)) fail_msg("%s", d.msg);
  assert_int_equal(b->num_steps, s->num_steps);
  for (size_t i = 0; i < s->num_steps; i++) {
    assert_int_equal(b->steps[i].num_requests, s->steps[i].num_requests);
    assert_memory_equal(b->steps[i].requests, s->steps[i].requests, s->steps[i].num_requests * sizeof(cplab_request));
  }
  cplab_scenario_free(b);
  cplab_scenario_free(s);
}

/* Property: a random scenario, mostly near-valid, built in memory gets the
 * verdict its JSON form gets from the parser, with the same message after
 * the origin (the parser's adds the position in the text). */
static void test_property_built_equals_parsed(void **state) {
  (void)state;
  static const int sizes[] = {1, 2, 4, 8, 0, 3};
  prop_run pr;
  prop_begin(&pr);
  long accepted = 0, rejected = 0;
  for (long trial = 0; trial < 3000; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    cplab_scenario *s = cplab_scenario_alloc("prop");
    assert_non_null(s);
    snprintf(s->name, sizeof s->name, prop_int(&pr, 0, 30) ? "p%ld" : "P%ld", trial);
    assert_int_equal(cplab_model_preset(prop_int(&pr, 0, 1) ? "glm-5" : "deepseek-v3.2", &s->model), 0);
    if (!prop_int(&pr, 0, 20)) s->model.num_heads = prop_int(&pr, -1, 200);
    cplab_parallel *p = &s->par;
    p->tp = sizes[prop_int(&pr, 0, 5)];
    p->pcp = sizes[prop_int(&pr, 0, 5)];
    long pick = prop_int(&pr, 0, 3);
    p->dcp = pick == 0 ? 1 : pick == 1 ? p->pcp : pick == 2 ? p->tp * p->pcp : (int)prop_int(&pr, 0, 40);
    p->interleave = prop_int(&pr, 0, 3) ? 1 : 1 << prop_int(&pr, 0, 7);
    p->max_model_len = prop_int(&pr, 0, 10) ? prop_int(&pr, 64, 8192) : prop_int(&pr, -1, 300000);
    p->graph_mode = (cplab_graph_mode)prop_int(&pr, 0, 4);
    p->num_spec_tokens = prop_int(&pr, 0, 10) ? 0 : (int)prop_int(&pr, 0, 8);
    if (!prop_int(&pr, 0, 30)) snprintf(s->layout, sizeof s->layout, "block-aligned");
    if (!prop_int(&pr, 0, 40)) snprintf(s->layout, sizeof s->layout, "zigzag");
    s->seed = prop_int(&pr, 0, 40) ? (uint64_t)prop_int(&pr, 0, 1000000) : CPLAB_MAX_SEED + 1;
    s->sampled_rows = prop_int(&pr, 0, 40) ? prop_int(&pr, 0, 64) : -1;
    /* Steps of up to 3 requests (ids 0..3), mostly continuing where each stopped. */
    int64_t extent[4] = {0};
    s->num_steps = (size_t)prop_int(&pr, 1, 3);
    s->steps = calloc(s->num_steps, sizeof *s->steps);
    assert_non_null(s->steps);
    for (size_t i = 0; i < s->num_steps; i++) {
      cplab_step *st = &s->steps[i];
      st->num_requests = (size_t)prop_int(&pr, prop_int(&pr, 0, 30) ? 1 : 0, 3);
      st->requests = calloc(st->num_requests + 1, sizeof(cplab_request));
      assert_non_null(st->requests);
      for (size_t j = 0; j < st->num_requests; j++) {
        cplab_request *q = &st->requests[j];
        q->id = prop_int(&pr, 0, 20) ? (int64_t)(j + (size_t)prop_int(&pr, 0, 1)) % 4 : prop_int(&pr, -1, 3);
        int64_t at = q->id >= 0 && q->id < 4 ? extent[q->id] : 0;
        q->phase = at > 0 && prop_int(&pr, 0, 3) ? CPLAB_PHASE_DECODE : CPLAB_PHASE_PREFILL;
        q->num_computed = prop_int(&pr, 0, 20) ? at : prop_int(&pr, -1, 9000);
        if (q->phase == CPLAB_PHASE_DECODE) q->new_tokens = prop_int(&pr, 0, 8) ? 1 : prop_int(&pr, 0, 3);
        else q->new_tokens = prop_int(&pr, 0, 20) ? prop_int(&pr, 1, 100) : prop_int(&pr, 0, 9000);
        if (q->id >= 0 && q->id < 4) extent[q->id] = q->num_computed + q->new_tokens;
      }
    }
    /* The JSON form, taken before finish (which fills source_json). */
    json_t *j = cplab_scenario_to_json(s, 1);
    assert_non_null(j);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    assert_non_null(text);
    cplab_diag parsed = {0}, made = {0};
    cplab_scenario *t = NULL;
    int want = cplab_scenario_parse(text, strlen(text), "prop", NULL, &t, &parsed);
    int got = cplab_scenario_finish(s, NULL, &made);
    prop_check(&pr, trial, got == want, "built says %d (%s), parsed %d (%s) for %s", got, made.msg, want, parsed.msg,
               text);
    if (got == want && got) {
      prop_check(&pr, trial, strcmp(after_origin(made.msg, "prop"), after_origin(parsed.msg, "prop")) == 0,
                 "built: %s, parsed: %s", made.msg, parsed.msg);
      prop_check(&pr, trial, strncmp(made.msg, "prop: ", 6) == 0, "message without origin: %s", made.msg);
      rejected++;
    } else if (got == want) {
      char *a = dump(s, 1), *b = dump(t, 1);
      prop_check(&pr, trial, strcmp(a, b) == 0, "built %s, parsed %s", a, b);
      free(a), free(b);
      accepted++;
    }
    cplab_scenario_free(t);
    cplab_scenario_free(s);
    free(text);
  }
  prop_end(&pr);
  if (pr.only_trial < 0) assert_true(accepted > 100 && rejected > 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_builtins_round_trip),        cmocka_unit_test(test_pr56157),
      cmocka_unit_test(test_overrides),                  cmocka_unit_test(test_json_positions),
      cmocka_unit_test(test_property_parallel_verdicts), cmocka_unit_test(test_property_corruption),
      cmocka_unit_test(test_built_valid),                cmocka_unit_test(test_built_refused),
      cmocka_unit_test(test_built_generator),            cmocka_unit_test(test_property_built_equals_parsed),
  };
  return cmocka_run_group_tests_name("scenario", tests, NULL, NULL);
}
