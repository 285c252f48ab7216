/* Scenario JSON -> cplab_scenario, with every rule checked and located.
 * Format: docs/scenarios.md. This file reads the text (keys, types, the JSON
 * forms); the rules any scenario obeys are scenario_check.c's, called here as
 * soon as their fields are read, so that the first error is the first in the
 * text. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cplab/scenario.h"
#include "json_reader.h"
#include "scenario_check.h"

#define MAX_SCENARIO_BYTES ((size_t)256 << 20)

static int get_name(cplab_json_reader *r, const json_t *obj, const char *key, int required, const char *def,
                    char *buf) {
  int rc = cplab_json_get_string(r, obj, "", key, required, def, buf, CPLAB_NAME_MAX);
  return rc ? rc : cplab_scenario_check_name(r, key, buf);
}

/* ---- model ----------------------------------------------------------------- */

static int preset_list(char *buf, size_t cap) {
  size_t used = 0;
  for (const char *const *p = cplab_model_preset_names(); *p && used < cap; p++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", *p);
  return 0;
}

static int parse_model(cplab_json_reader *r, const json_t *root, cplab_model *m) {
  const json_t *v = json_object_get(root, "model");
  if (!v) return cplab_json_fail(r, "", 0, CPLAB_ESCHEMA, "missing required key 'model'");
  char preset[32], list[128];
  preset_list(list, sizeof list);
  const json_t *overrides = NULL;
  if (json_is_string(v)) {
    snprintf(preset, sizeof preset, "%s", json_string_value(v));
  } else if (json_is_object(v)) {
    int rc = cplab_json_get_string(r, v, "model", "preset", 1, NULL, preset, sizeof preset);
    if (rc) return rc;
    overrides = v;
  } else {
    return cplab_json_fail(r, "model", 0, CPLAB_ESCHEMA, "expected a preset name or an object, got %s",
                           cplab_json_type_name(v));
  }
  if (cplab_model_preset(preset, m) != 0)
    return cplab_json_fail(r, overrides ? "model.preset" : "model", 0, CPLAB_ENOTFOUND,
                           "unknown model preset '%s' (presets: %s)", preset, list);
  if (overrides) {
    size_t n;
    const cplab_model_field *f = cplab_model_fields(&n);
    const char *allowed[64];
    allowed[0] = "preset";
    for (size_t i = 0; i < n; i++) allowed[i + 1] = f[i].name;
    allowed[n + 1] = NULL;
    int rc = cplab_json_check_keys(r, overrides, "model", allowed);
    for (size_t i = 0; !rc && i < n; i++) {
      int64_t *dst = cplab_model_field_ptr(m, &f[i]);
      rc = cplab_json_get_int(r, overrides, "model", f[i].name, 0, *dst, f[i].min, f[i].max, dst);
    }
    if (rc) return rc;
  }
  return cplab_scenario_check_model(r, m);
}

/* ---- parallel ----------------------------------------------------------------- */

static int get_small_int(cplab_json_reader *r, const json_t *obj, const char *key, int def, int *out) {
  int64_t v;
  int rc = cplab_json_get_int(r, obj, "parallel", key, 0, def, INT32_MIN, INT32_MAX, &v);
  if (!rc) *out = (int)v;
  return rc;
}

static int parse_parallel(cplab_json_reader *r, const json_t *root, const cplab_model *m, cplab_parallel *p) {
  static const char *const keys[] = {"tp",         "pcp",           "dcp",            "pp", "interleave",
                                     "block_size", "max_model_len", "cudagraph_mode", "indexer_max_logits_mb",
                                     NULL};
  cplab_parallel_defaults(p);
  const json_t *v = json_object_get(root, "parallel");
  if (!v) return cplab_json_fail(r, "", 0, CPLAB_ESCHEMA, "missing required key 'parallel'");
  int rc;
  if ((rc = cplab_json_expect_object(r, v, "parallel")) || (rc = cplab_json_check_keys(r, v, "parallel", keys)) ||
      (rc = get_small_int(r, v, "tp", p->tp, &p->tp)) || (rc = get_small_int(r, v, "pcp", p->pcp, &p->pcp)) ||
      (rc = get_small_int(r, v, "dcp", p->dcp, &p->dcp)) || (rc = get_small_int(r, v, "pp", p->pp, &p->pp)) ||
      (rc = get_small_int(r, v, "interleave", p->interleave, &p->interleave)) ||
      (rc = get_small_int(r, v, "block_size", p->block_size, &p->block_size)))
    return rc;
  int64_t def_len = m->max_position_embeddings < CPLAB_MAX_MODEL_LEN ? m->max_position_embeddings : CPLAB_MAX_MODEL_LEN;
  if ((rc = cplab_json_get_int(r, v, "parallel", "max_model_len", 0, def_len, INT64_MIN, INT64_MAX,
                               &p->max_model_len)))
    return rc;
  if ((rc = cplab_json_get_int(r, v, "parallel", "indexer_max_logits_mb", 0, p->indexer_max_logits_mb, INT64_MIN,
                               INT64_MAX, &p->indexer_max_logits_mb)))
    return rc;
  char mode[32];
  if ((rc = cplab_json_get_string(r, v, "parallel", "cudagraph_mode", 0,
                                  cplab_graph_mode_name(CPLAB_GRAPH_FULL_AND_PIECEWISE), mode, sizeof mode)))
    return rc;
  if (cplab_graph_mode_parse(mode, &p->graph_mode) != 0)
    return cplab_json_fail(r, "parallel.cudagraph_mode", 0, CPLAB_ENOTFOUND,
                           "unknown CUDA graph mode '%s' (modes: NONE, PIECEWISE, FULL_DECODE_ONLY, "
                           "FULL_AND_PIECEWISE, FULL)",
                           mode);
  return cplab_scenario_check_parallel(r, p, m);
}

/* ---- workload: explicit steps ------------------------------------------------- */

/* The request's fields; their ranges and rules are cplab_scenario_check_request's. */
static int parse_request(cplab_json_reader *r, const json_t *v, const char *path, cplab_request *q) {
  static const char *const keys[] = {"id", "num_computed", "new_tokens", "phase", NULL};
  int rc;
  char phase[16], child[CPLAB_PATH_MAX];
  if ((rc = cplab_json_expect_object(r, v, path)) || (rc = cplab_json_check_keys(r, v, path, keys)) ||
      (rc = cplab_json_get_int(r, v, path, "id", 1, 0, INT64_MIN, INT64_MAX, &q->id)) ||
      (rc = cplab_json_get_int(r, v, path, "num_computed", 0, 0, INT64_MIN, INT64_MAX, &q->num_computed)) ||
      (rc = cplab_json_get_int(r, v, path, "new_tokens", 1, 0, INT64_MIN, INT64_MAX, &q->new_tokens)) ||
      (rc = cplab_json_get_string(r, v, path, "phase", 1, NULL, phase, sizeof phase)))
    return rc;
  cplab_json_child(child, path, "phase");
  if (strcmp(phase, "prefill") == 0) q->phase = CPLAB_PHASE_PREFILL;
  else if (strcmp(phase, "decode") == 0) q->phase = CPLAB_PHASE_DECODE;
  else return cplab_json_fail(r, child, 0, CPLAB_ESCHEMA, "must be \"prefill\" or \"decode\", got \"%s\"", phase);
  return 0;
}

static int parse_steps(cplab_json_reader *r, const json_t *arr, const cplab_parallel *p, cplab_scenario *s) {
  static const char *const step_keys[] = {"requests", NULL};
  int rc = cplab_json_expect_array(r, arr, "workload.steps", 1, CPLAB_MAX_STEPS);
  if (rc) return rc;
  size_t n = json_array_size(arr);
  s->steps = calloc(n, sizeof *s->steps);
  if (!s->steps) return cplab_diag_set(r->d, CPLAB_ENOMEM, "out of memory for %zu steps", n);
  s->num_steps = n;
  cplab_request_table seen = {0};
  for (size_t i = 0; i < n && !rc; i++) {
    char path[CPLAB_PATH_MAX], rpath[CPLAB_PATH_MAX];
    const json_t *step = json_array_get(arr, i);
    cplab_json_index(path, "workload.steps", i);
    if ((rc = cplab_json_expect_object(r, step, path)) || (rc = cplab_json_check_keys(r, step, path, step_keys)))
      break;
    const json_t *reqs = json_object_get(step, "requests");
    cplab_json_child(rpath, path, "requests");
    if (!reqs) {
      rc = cplab_json_fail(r, path, 0, CPLAB_ESCHEMA, "missing required key 'requests'");
      break;
    }
    if ((rc = cplab_json_expect_array(r, reqs, rpath, 0, SIZE_MAX)) ||
        (rc = cplab_scenario_check_step_size(r, rpath, json_array_size(reqs))))
      break;
    size_t m = json_array_size(reqs);
    s->steps[i].requests = calloc(m, sizeof(cplab_request));
    if (!s->steps[i].requests) {
      rc = cplab_diag_set(r->d, CPLAB_ENOMEM, "out of memory for %zu requests", m);
      break;
    }
    s->steps[i].num_requests = m;
    for (size_t j = 0; j < m && !rc; j++) {
      char qpath[CPLAB_PATH_MAX];
      cplab_json_index(qpath, rpath, j);
      cplab_request *q = &s->steps[i].requests[j];
      rc = parse_request(r, json_array_get(reqs, j), qpath, q);
      if (!rc) rc = cplab_scenario_check_request(r, &seen, i, qpath, p, q);
    }
  }
  cplab_request_table_fini(&seen);
  return rc;
}

/* ---- workload: generator -------------------------------------------------------- */

/* A distribution's fields: lo and hi are the bounds of its draws, min's and
 * max's defaults; the ranges are cplab_scenario_check_generator's. */
static int parse_dist(cplab_json_reader *r, const json_t *g, const char *key, int64_t lo, int64_t hi,
                      cplab_dist *out) {
  char path[CPLAB_PATH_MAX];
  cplab_json_child(path, "workload.generator", key);
  const json_t *v = json_object_get(g, key);
  *out = (cplab_dist){.kind = CPLAB_DIST_CONST, .min = lo, .max = hi};
  if (!v) return cplab_json_fail(r, "workload.generator", 0, CPLAB_ESCHEMA, "missing required key '%s'", key);
  if (json_is_integer(v)) { /* shorthand for {"dist": "const", "value": N}, checked at its own path */
    return cplab_json_get_int(r, g, "workload.generator", key, 1, 0, lo, hi, &out->value);
  }
  static const char *const keys[] = {"dist", "value", "min", "max", "mu", "sigma", "mean", NULL};
  int rc;
  char kind[16];
  if ((rc = cplab_json_expect_object(r, v, path)) || (rc = cplab_json_check_keys(r, v, path, keys)) ||
      (rc = cplab_json_get_string(r, v, path, "dist", 1, NULL, kind, sizeof kind)))
    return rc;
  int uniform = strcmp(kind, "uniform") == 0;
  if ((rc = cplab_json_get_int(r, v, path, "min", uniform, lo, INT64_MIN, INT64_MAX, &out->min)) ||
      (rc = cplab_json_get_int(r, v, path, "max", uniform, hi, INT64_MIN, INT64_MAX, &out->max)))
    return rc;
  if (strcmp(kind, "const") == 0) {
    out->kind = CPLAB_DIST_CONST;
    return cplab_json_get_int(r, v, path, "value", 1, 0, INT64_MIN, INT64_MAX, &out->value);
  }
  if (uniform) {
    out->kind = CPLAB_DIST_UNIFORM;
    return 0;
  }
  if (strcmp(kind, "lognormal") == 0) {
    out->kind = CPLAB_DIST_LOGNORMAL;
    if ((rc = cplab_json_get_real(r, v, path, "mu", 1, 0, -HUGE_VAL, HUGE_VAL, &out->mu))) return rc;
    return cplab_json_get_real(r, v, path, "sigma", 1, 0, -HUGE_VAL, HUGE_VAL, &out->sigma);
  }
  if (strcmp(kind, "exponential") == 0) {
    out->kind = CPLAB_DIST_EXPONENTIAL;
    return cplab_json_get_real(r, v, path, "mean", 1, 0, -HUGE_VAL, HUGE_VAL, &out->mean);
  }
  char child[CPLAB_PATH_MAX];
  cplab_json_child(child, path, "dist");
  return cplab_json_fail(r, child, 0, CPLAB_ENOTFOUND,
                         "unknown distribution '%s' (const, uniform, lognormal, exponential)", kind);
}

static int parse_generator(cplab_json_reader *r, const json_t *g, const cplab_parallel *p, cplab_generator *gen) {
  static const char *const keys[] = {"steps",          "requests",      "decode_fraction", "context",
                                     "prefill_tokens", "chunked_fraction", NULL};
  int64_t mml = p->max_model_len;
  int rc;
  if ((rc = cplab_json_expect_object(r, g, "workload.generator")) ||
      (rc = cplab_json_check_keys(r, g, "workload.generator", keys)) ||
      (rc = cplab_json_get_int(r, g, "workload.generator", "steps", 1, 0, INT64_MIN, INT64_MAX, &gen->steps)) ||
      (rc = parse_dist(r, g, "requests", 1, CPLAB_MAX_REQUESTS_PER_STEP, &gen->requests)) ||
      (rc = cplab_json_get_real(r, g, "workload.generator", "decode_fraction", 0, 0.5, -HUGE_VAL, HUGE_VAL,
                                &gen->decode_fraction)) ||
      (rc = parse_dist(r, g, "context", 0, mml, &gen->context)) ||
      (rc = parse_dist(r, g, "prefill_tokens", 1, mml, &gen->prefill_tokens)) ||
      (rc = cplab_json_get_real(r, g, "workload.generator", "chunked_fraction", 0, 0, -HUGE_VAL, HUGE_VAL,
                                &gen->chunked_fraction)))
    return rc;
  return cplab_scenario_check_generator(r, gen, p);
}

static int parse_workload(cplab_json_reader *r, const json_t *root, cplab_scenario *s) {
  static const char *const keys[] = {"steps", "generator", NULL};
  const json_t *w = json_object_get(root, "workload");
  if (!w) return cplab_json_fail(r, "", 0, CPLAB_ESCHEMA, "missing required key 'workload'");
  int rc;
  if ((rc = cplab_json_expect_object(r, w, "workload")) || (rc = cplab_json_check_keys(r, w, "workload", keys)))
    return rc;
  const json_t *steps = json_object_get(w, "steps"), *gen = json_object_get(w, "generator");
  if ((steps != NULL) == (gen != NULL))
    return cplab_json_fail(r, "workload", 0, CPLAB_ESCHEMA, "needs exactly one of 'steps' or 'generator'");
  if (steps) return parse_steps(r, steps, &s->par, s);
  s->has_generator = 1;
  return parse_generator(r, gen, &s->par, &s->gen);
}

/* ---- top level -------------------------------------------------------------------- */

/* speculative.num_spec_tokens (MTP, reference §10.3): decode rows then hold
 * 1 + num_spec_tokens query tokens. */
static int parse_speculative(cplab_json_reader *r, const json_t *root, cplab_parallel *p) {
  static const char *const keys[] = {"num_spec_tokens", NULL};
  const json_t *v = json_object_get(root, "speculative");
  int64_t n = 0;
  int rc = 0;
  if (v && ((rc = cplab_json_expect_object(r, v, "speculative")) ||
            (rc = cplab_json_check_keys(r, v, "speculative", keys)) ||
            (rc = cplab_json_get_int(r, v, "speculative", "num_spec_tokens", 0, 0, INT64_MIN, INT64_MAX, &n))))
    return rc;
  if ((rc = cplab_scenario_check_speculative(r, n))) return rc;
  p->num_spec_tokens = (int)n;
  return 0;
}

static int parse_root(cplab_json_reader *r, const json_t *root, const cplab_scenario_overrides *ov,
                      cplab_scenario *s) {
  static const char *const keys[] = {"cplab_scenario", "name",  "description", "model",    "parallel",
                                     "speculative",    "layout", "seed",        "check",    "workload", NULL};
  static const char *const check_keys[] = {"sampled_rows", NULL};
  int rc;
  int64_t format, seed;
  char desc[4096];
  if ((rc = cplab_json_expect_object(r, root, "")) || (rc = cplab_json_check_keys(r, root, "", keys)) ||
      (rc = cplab_json_get_int(r, root, "", "cplab_scenario", 0, CPLAB_SCENARIO_FORMAT, INT64_MIN, INT64_MAX,
                               &format)))
    return rc;
  if (format != CPLAB_SCENARIO_FORMAT)
    return cplab_json_fail(r, "cplab_scenario", 0, CPLAB_EUNSUPPORTED,
                           "scenario format %lld is not supported (this cplab reads format %d)", (long long)format,
                           CPLAB_SCENARIO_FORMAT);
  if ((rc = get_name(r, root, "name", 1, NULL, s->name)) ||
      (rc = cplab_json_get_string(r, root, "", "description", 0, "", desc, sizeof desc)) ||
      (rc = parse_model(r, root, &s->model)) || (rc = parse_parallel(r, root, &s->model, &s->par)) ||
      (rc = parse_speculative(r, root, &s->par)) || (rc = get_name(r, root, "layout", 0, "vllm", s->layout)) ||
      /* The text's seed may be negative, which the unsigned field cannot say: its range is read here. */
      (rc = cplab_json_get_int(r, root, "", "seed", 0, 0, 0, (int64_t)CPLAB_MAX_SEED, &seed)))
    return rc;
  s->seed = (uint64_t)seed;
  if ((rc = cplab_scenario_check_layout(r, s->layout))) return rc;
  s->sampled_rows = 16;
  const json_t *check = json_object_get(root, "check");
  if (check && ((rc = cplab_json_expect_object(r, check, "check")) ||
                (rc = cplab_json_check_keys(r, check, "check", check_keys)) ||
                (rc = cplab_json_get_int(r, check, "check", "sampled_rows", 0, 16, INT64_MIN, INT64_MAX,
                                         &s->sampled_rows)) ||
                (rc = cplab_scenario_check_sampled_rows(r, s->sampled_rows))))
    return rc;
  if (!(s->description = strdup(desc))) return cplab_diag_set(r->d, CPLAB_ENOMEM, "out of memory");
  if ((rc = parse_workload(r, root, s))) return rc;
  return cplab_scenario_expand(r, s, ov);
}

int cplab_scenario_parse(const char *text, size_t len, const char *origin, const cplab_scenario_overrides *ov,
                         cplab_scenario **out, cplab_diag *d) {
  *out = NULL;
  cplab_scenario *s = calloc(1, sizeof *s);
  if (!s) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  snprintf(s->origin, sizeof s->origin, "%s", origin);
  s->source_json = malloc(len + 1);
  if (!s->source_json) {
    free(s);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for a %zu-byte scenario", len);
  }
  memcpy(s->source_json, text, len);
  s->source_json[len] = '\0';

  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  int rc;
  if (!root) {
    rc = cplab_diag_set(d, CPLAB_ESYNTAX, "%s:%d:%d: JSON syntax: %s", origin, err.line, err.column, err.text);
  } else {
    cplab_json_reader r;
    cplab_json_reader_init(&r, text, len, origin, d);
    rc = parse_root(&r, root, ov, s);
    cplab_json_reader_fini(&r);
    json_decref(root);
  }
  if (rc) {
    cplab_scenario_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int cplab_scenario_load(const char *name_or_path, const cplab_scenario_overrides *ov, cplab_scenario **out,
                        cplab_diag *d) {
  const char *text;
  *out = NULL;
  if (cplab_scenario_builtin(name_or_path, &text) == 0) {
    char origin[96];
    snprintf(origin, sizeof origin, "builtin:%s", name_or_path);
    return cplab_scenario_parse(text, strlen(text), origin, ov, out, d);
  }
  struct stat st;
  if (stat(name_or_path, &st) != 0 && !strchr(name_or_path, '/') && !strstr(name_or_path, ".json")) {
    char list[256] = "";
    size_t used = 0;
    for (const char *const *n = cplab_scenario_builtin_names(); *n && used < sizeof list; n++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *n);
    CPLAB_FAIL(d, CPLAB_ENOTFOUND, "no built-in scenario or file named '%s' (built-ins: %s)", name_or_path, list);
  }
  char *buf = NULL;
  size_t len = 0;
  int rc = cplab_json_read_file(name_or_path, MAX_SCENARIO_BYTES, "scenarios", &buf, &len, d);
  if (rc) return rc;
  rc = cplab_scenario_parse(buf, len, name_or_path, ov, out, d);
  free(buf);
  return rc;
}

void cplab_scenario_free(cplab_scenario *s) {
  if (!s) return;
  cplab_steps_free(s->steps, s->num_steps);
  free(s->description);
  free(s->source_json);
  free(s);
}
