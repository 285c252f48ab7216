/* The rules every scenario obeys, and the steps a generator expands into:
 * see scenario_check.h. Rules on the parallel layout: parallel.c; on the
 * model: model.c; workload continuity: check_continuity() below. */
#include "scenario_check.h"

#include <stdlib.h>
#include <string.h>

#include "cplab/layout.h"

int cplab_name_valid(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n >= CPLAB_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '-' || c == '_' || c == '.'));
    if (!ok) return 0;
  }
  return 1;
}

int cplab_scenario_check_name(cplab_json_reader *r, const char *path, const char *name) {
  /* A buffer filled in memory may lack its terminator: read no further than it. */
  if (!memchr(name, '\0', CPLAB_NAME_MAX))
    return cplab_json_fail(r, path, 0, CPLAB_ERANGE, "must be shorter than %d characters", CPLAB_NAME_MAX);
  if (!cplab_name_valid(name))
    return cplab_json_fail(r, path, 0, CPLAB_ESCHEMA,
                           "'%s' is not a valid name (lower-case letters and digits, then also '-', '_', '.')", name);
  return 0;
}

/* ---- model and parallel layout ----------------------------------------------- */

int cplab_scenario_check_model(cplab_json_reader *r, const cplab_model *m) {
  cplab_model known;
  if (!memchr(m->preset, '\0', sizeof m->preset) || cplab_model_preset(m->preset, &known) != 0) {
    char list[128];
    size_t used = 0;
    list[0] = '\0';
    for (const char *const *p = cplab_model_preset_names(); *p && used < sizeof list; p++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *p);
    return cplab_json_fail(r, "model.preset", 0, CPLAB_ENOTFOUND, "unknown model preset '%.*s' (presets: %s)",
                           (int)sizeof m->preset, m->preset, list);
  }
  cplab_diag local = {0};
  if (cplab_model_check(m, &local)) return cplab_json_fail_field(r, "model", &local);
  return 0;
}

int cplab_scenario_check_parallel(cplab_json_reader *r, const cplab_parallel *p, const cplab_model *m) {
  if (p->graph_mode < CPLAB_GRAPH_NONE || p->graph_mode > CPLAB_GRAPH_FULL)
    return cplab_json_fail(r, "parallel.cudagraph_mode", 0, CPLAB_ENOTFOUND,
                           "unknown CUDA graph mode %d (modes: NONE, PIECEWISE, FULL_DECODE_ONLY, "
                           "FULL_AND_PIECEWISE, FULL)",
                           (int)p->graph_mode);
  cplab_diag local = {0};
  if (cplab_parallel_check(p, m->num_heads, &local)) return cplab_json_fail_field(r, "parallel", &local);
  if (p->max_model_len > m->max_position_embeddings)
    return cplab_json_fail(r, "parallel.max_model_len", 0, CPLAB_ERANGE,
                           "%lld exceeds the model's max_position_embeddings (%lld)", (long long)p->max_model_len,
                           (long long)m->max_position_embeddings);
  return 0;
}

int cplab_scenario_check_speculative(cplab_json_reader *r, int64_t num_spec_tokens) {
  return cplab_json_check_int(r, "speculative.num_spec_tokens", num_spec_tokens, 0, CPLAB_MAX_SPEC_TOKENS);
}

int cplab_scenario_check_seed(cplab_json_reader *r, uint64_t seed) {
  if (seed > CPLAB_MAX_SEED)
    return cplab_json_fail(r, "seed", 0, CPLAB_ERANGE, "must be in [0, %llu], got %llu",
                           (unsigned long long)CPLAB_MAX_SEED, (unsigned long long)seed);
  return 0;
}

int cplab_scenario_check_layout(cplab_json_reader *r, const char *layout) {
  if (!cplab_layout_find(layout))
    return cplab_json_fail(r, "layout", 0, CPLAB_ENOTFOUND, "unknown layout '%s' (see --list-layouts)", layout);
  return 0;
}

int cplab_scenario_check_sampled_rows(cplab_json_reader *r, int64_t rows) {
  return cplab_json_check_int(r, "check.sampled_rows", rows, 0, CPLAB_MAX_SAMPLED_ROWS);
}

/* ---- workload: explicit steps ------------------------------------------------- */

static cplab_request_state *req_lookup(cplab_request_table *t, int64_t id) {
  if (t->used * 2 >= t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    cplab_request_state *n = calloc(cap, sizeof *n);
    if (!n) return NULL;
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->slots[i].last_step) continue;
      size_t h = (size_t)((uint64_t)t->slots[i].id * UINT64_C(0x9E3779B97F4A7C15) >> 16) & (cap - 1);
      while (n[h].last_step) h = (h + 1) & (cap - 1);
      n[h] = t->slots[i];
    }
    free(t->slots);
    t->slots = n;
    t->cap = cap;
  }
  size_t h = (size_t)((uint64_t)id * UINT64_C(0x9E3779B97F4A7C15) >> 16) & (t->cap - 1);
  while (t->slots[h].last_step && t->slots[h].id != id) h = (h + 1) & (t->cap - 1);
  if (!t->slots[h].last_step) {
    t->slots[h].id = id;
    t->used++;
  }
  return &t->slots[h];
}

void cplab_request_table_fini(cplab_request_table *t) {
  free(t->slots);
  *t = (cplab_request_table){0};
}

static int check_continuity(cplab_json_reader *r, cplab_request_table *t, size_t step, const cplab_request *q,
                            const char *path) {
  cplab_request_state *st = req_lookup(t, q->id);
  if (!st) return cplab_diag_set(r->d, CPLAB_ENOMEM, "out of memory checking request continuity");
  char child[CPLAB_PATH_MAX];
  if (st->last_step == step + 1) {
    cplab_json_child(child, path, "id");
    return cplab_json_fail(r, child, 0, CPLAB_ESCHEMA, "request id %lld appears twice in step %zu",
                           (long long)q->id, step);
  }
  if (st->last_step) {
    /* A request continues where it stopped; num_computed 0 restarts a prefill
     * (recompute after preemption). */
    int restart = q->phase == CPLAB_PHASE_PREFILL && q->num_computed == 0;
    cplab_json_child(child, path, "num_computed");
    if (!restart && q->num_computed != st->extent)
      return cplab_json_fail(r, child, 0, CPLAB_ESCHEMA,
                             "request %lld reached %lld tokens of context in step %zu, so it must continue with "
                             "num_computed %lld (or 0 to restart its prefill), got %lld",
                             (long long)q->id, (long long)st->extent, st->last_step - 1, (long long)st->extent,
                             (long long)q->num_computed);
    cplab_json_child(child, path, "phase");
    if (!restart && st->phase == CPLAB_PHASE_DECODE && q->phase == CPLAB_PHASE_PREFILL)
      return cplab_json_fail(r, child, 0, CPLAB_ESCHEMA,
                             "request %lld was decoding in step %zu and cannot prefill again without restarting "
                             "at num_computed 0",
                             (long long)q->id, st->last_step - 1);
  }
  st->last_step = step + 1;
  st->extent = q->num_computed + q->new_tokens;
  st->phase = q->phase;
  return 0;
}

int cplab_scenario_check_step_size(cplab_json_reader *r, const char *path, size_t num_requests) {
  return cplab_json_check_count(r, path, num_requests, 1, CPLAB_MAX_REQUESTS_PER_STEP);
}

int cplab_scenario_check_request(cplab_json_reader *r, cplab_request_table *t, size_t step, const char *path,
                                 const cplab_parallel *p, const cplab_request *q) {
  int64_t mml = p->max_model_len;
  char id[CPLAB_PATH_MAX], computed[CPLAB_PATH_MAX], tokens[CPLAB_PATH_MAX], phase[CPLAB_PATH_MAX];
  cplab_json_child(id, path, "id");
  cplab_json_child(computed, path, "num_computed");
  cplab_json_child(tokens, path, "new_tokens");
  cplab_json_child(phase, path, "phase");
  int rc;
  if ((rc = cplab_json_check_int(r, id, q->id, 0, CPLAB_MAX_REQUEST_ID)) ||
      (rc = cplab_json_check_int(r, computed, q->num_computed, 0, mml)) ||
      (rc = cplab_json_check_int(r, tokens, q->new_tokens, 1, mml)))
    return rc;
  if (q->phase != CPLAB_PHASE_PREFILL && q->phase != CPLAB_PHASE_DECODE)
    return cplab_json_fail(r, phase, 0, CPLAB_ESCHEMA, "must be \"prefill\" or \"decode\", got phase %d",
                           (int)q->phase);
  if (q->num_computed + q->new_tokens > mml)
    return cplab_json_fail(r, tokens, 0, CPLAB_ERANGE,
                           "num_computed + new_tokens = %lld exceeds parallel.max_model_len (%lld)",
                           (long long)(q->num_computed + q->new_tokens), (long long)mml);
  /* A speculative decode row holds the sampled token and up to num_spec_tokens
   * drafts: vLLM's scheduler schedules fewer drafts where they would not fit
   * (near max_model_len, or the draft proposed fewer), never more. */
  if (q->phase == CPLAB_PHASE_DECODE && q->new_tokens > 1 + p->num_spec_tokens)
    return cplab_json_fail(r, tokens, 0, CPLAB_EUNSUPPORTED,
                           "a decode row schedules at most 1 + speculative.num_spec_tokens = %d new tokens, got %lld",
                           1 + p->num_spec_tokens, (long long)q->new_tokens);
  if (q->phase == CPLAB_PHASE_DECODE && q->num_computed < 1)
    return cplab_json_fail(r, computed, 0, CPLAB_ERANGE, "a decode row needs a computed context (num_computed >= 1)");
  return check_continuity(r, t, step, q, path);
}

/* Every step of a scenario built in memory, with the paths of its JSON form. */
static int check_steps(cplab_json_reader *r, const cplab_scenario *s) {
  int rc = cplab_json_check_count(r, "workload.steps", s->num_steps, 1, CPLAB_MAX_STEPS);
  cplab_request_table seen = {0};
  for (size_t i = 0; i < s->num_steps && !rc; i++) {
    char path[CPLAB_PATH_MAX], rpath[CPLAB_PATH_MAX], qpath[CPLAB_PATH_MAX];
    cplab_json_index(path, "workload.steps", i);
    cplab_json_child(rpath, path, "requests");
    rc = cplab_scenario_check_step_size(r, rpath, s->steps[i].num_requests);
    for (size_t j = 0; j < s->steps[i].num_requests && !rc; j++) {
      cplab_json_index(qpath, rpath, j);
      rc = cplab_scenario_check_request(r, &seen, i, qpath, &s->par, &s->steps[i].requests[j]);
    }
  }
  cplab_request_table_fini(&seen);
  return rc;
}

/* ---- workload: generator -------------------------------------------------------- */

/* An integer distribution whose draws lie in [lo, hi] (path: its key). */
static int check_dist(cplab_json_reader *r, const char *key, const cplab_dist *d, int64_t lo, int64_t hi) {
  char path[CPLAB_PATH_MAX], child[CPLAB_PATH_MAX];
  cplab_json_child(path, "workload.generator", key);
  int rc;
  cplab_json_child(child, path, "min");
  if ((rc = cplab_json_check_int(r, child, d->min, lo, hi))) return rc;
  cplab_json_child(child, path, "max");
  if ((rc = cplab_json_check_int(r, child, d->max, lo, hi))) return rc;
  if (d->min > d->max)
    return cplab_json_fail(r, child, 0, CPLAB_ERANGE, "max (%lld) is below min (%lld)", (long long)d->max,
                           (long long)d->min);
  switch (d->kind) {
    case CPLAB_DIST_CONST:
      cplab_json_child(child, path, "value");
      return cplab_json_check_int(r, child, d->value, d->min, d->max);
    case CPLAB_DIST_UNIFORM: return 0;
    case CPLAB_DIST_LOGNORMAL:
      cplab_json_child(child, path, "mu");
      if ((rc = cplab_json_check_real(r, child, d->mu, -50, 50))) return rc;
      cplab_json_child(child, path, "sigma");
      return cplab_json_check_real(r, child, d->sigma, 0, 20);
    case CPLAB_DIST_EXPONENTIAL:
      cplab_json_child(child, path, "mean");
      return cplab_json_check_real(r, child, d->mean, 1e-9, 1e12);
  }
  cplab_json_child(child, path, "dist");
  return cplab_json_fail(r, child, 0, CPLAB_ENOTFOUND,
                         "unknown distribution %d (const, uniform, lognormal, exponential)", (int)d->kind);
}

int cplab_scenario_check_generator(cplab_json_reader *r, const cplab_generator *g, const cplab_parallel *p) {
  int64_t mml = p->max_model_len;
  int rc;
  if ((rc = cplab_json_check_int(r, "workload.generator.steps", g->steps, 1, CPLAB_MAX_STEPS)) ||
      (rc = check_dist(r, "requests", &g->requests, 1, CPLAB_MAX_REQUESTS_PER_STEP)) ||
      (rc = cplab_json_check_real(r, "workload.generator.decode_fraction", g->decode_fraction, 0, 1)) ||
      (rc = check_dist(r, "context", &g->context, 0, mml)) ||
      (rc = check_dist(r, "prefill_tokens", &g->prefill_tokens, 1, mml)) ||
      (rc = cplab_json_check_real(r, "workload.generator.chunked_fraction", g->chunked_fraction, 0, 1)))
    return rc;
  return 0;
}

/* ---- overrides and expansion ------------------------------------------------------ */

int cplab_scenario_expand(cplab_json_reader *r, cplab_scenario *s, const cplab_scenario_overrides *ov) {
  /* Overrides replace what the scenario said, with the same rules. */
  if (ov && ov->layout) {
    if (!cplab_layout_find(ov->layout))
      CPLAB_FAIL(r->d, CPLAB_EUSAGE, "--layout: unknown layout '%s' (see --list-layouts)", ov->layout);
    snprintf(s->layout, sizeof s->layout, "%s", ov->layout);
  }
  if (ov && ov->has_seed) {
    if (ov->seed > CPLAB_MAX_SEED)
      CPLAB_FAIL(r->d, CPLAB_EUSAGE, "--seed: must be in [0, %llu], got %llu", (unsigned long long)CPLAB_MAX_SEED,
                 (unsigned long long)ov->seed);
    s->seed = ov->seed;
  }
  if (s->has_generator)
    return cplab_workload_generate(&s->gen, &s->par, s->seed, &s->steps, &s->num_steps, r->d);
  return 0;
}

/* ---- scenarios built in memory ------------------------------------------------------ */

cplab_scenario *cplab_scenario_alloc(const char *origin) {
  cplab_scenario *s = calloc(1, sizeof *s);
  if (!s || !(s->description = strdup(""))) {
    free(s);
    return NULL;
  }
  snprintf(s->origin, sizeof s->origin, "%s", origin);
  cplab_parallel_defaults(&s->par);
  snprintf(s->layout, sizeof s->layout, "vllm");
  s->sampled_rows = 16;
  return s;
}

/* The rules in the order the JSON reader applies them, so that a scenario and
 * its JSON form are refused for the same first reason. */
static int check_all(cplab_json_reader *r, cplab_scenario *s, const cplab_scenario_overrides *ov) {
  int rc;
  if ((rc = cplab_scenario_check_name(r, "name", s->name)) || (rc = cplab_scenario_check_model(r, &s->model)) ||
      (rc = cplab_scenario_check_parallel(r, &s->par, &s->model)) ||
      (rc = cplab_scenario_check_speculative(r, s->par.num_spec_tokens)) ||
      (rc = cplab_scenario_check_name(r, "layout", s->layout)) || (rc = cplab_scenario_check_seed(r, s->seed)) ||
      (rc = cplab_scenario_check_layout(r, s->layout)) ||
      (rc = cplab_scenario_check_sampled_rows(r, s->sampled_rows)))
    return rc;
  if (s->has_generator && s->num_steps)
    return cplab_json_fail(r, "workload", 0, CPLAB_ESCHEMA, "needs exactly one of 'steps' or 'generator'");
  if ((rc = s->has_generator ? cplab_scenario_check_generator(r, &s->gen, &s->par) : check_steps(r, s))) return rc;
  return cplab_scenario_expand(r, s, ov);
}

int cplab_scenario_finish(cplab_scenario *s, const cplab_scenario_overrides *ov, cplab_diag *d) {
  cplab_json_reader r;
  cplab_json_reader_init(&r, NULL, 0, s->origin, d);
  int rc = check_all(&r, s, ov);
  cplab_json_reader_fini(&r);
  if (rc || s->source_json) return rc;
  /* Traces and results record the text a scenario came from: a built one's is
   * its resolved form, which loads back into the same scenario. */
  json_t *j = cplab_scenario_to_json(s, 0);
  s->source_json = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (!s->source_json) CPLAB_FAIL(d, CPLAB_ENOMEM, "%s: out of memory for the scenario's JSON form", s->origin);
  return 0;
}
