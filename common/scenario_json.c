/* The resolved scenario as JSON, and workload totals. The JSON is itself a
 * valid scenario: feeding it back reproduces the run. */
#include <string.h>

#include "cplab/scenario.h"

static const char *const dist_names[] = {"const", "uniform", "lognormal", "exponential"};

static json_t *dist_to_json(const cplab_dist *d) {
  json_t *o = json_object();
  json_object_set_new(o, "dist", json_string(dist_names[d->kind]));
  switch (d->kind) {
    case CPLAB_DIST_CONST: json_object_set_new(o, "value", json_integer(d->value)); break;
    case CPLAB_DIST_UNIFORM: break;
    case CPLAB_DIST_LOGNORMAL:
      json_object_set_new(o, "mu", json_real(d->mu));
      json_object_set_new(o, "sigma", json_real(d->sigma));
      break;
    case CPLAB_DIST_EXPONENTIAL: json_object_set_new(o, "mean", json_real(d->mean)); break;
  }
  json_object_set_new(o, "min", json_integer(d->min));
  json_object_set_new(o, "max", json_integer(d->max));
  return o;
}

static json_t *steps_to_json(const cplab_scenario *s) {
  json_t *steps = json_array();
  for (size_t i = 0; i < s->num_steps; i++) {
    json_t *reqs = json_array();
    for (size_t j = 0; j < s->steps[i].num_requests; j++) {
      const cplab_request *q = &s->steps[i].requests[j];
      json_array_append_new(reqs, json_pack("{s:I, s:I, s:I, s:s}", "id", (json_int_t)q->id, "num_computed",
                                            (json_int_t)q->num_computed, "new_tokens", (json_int_t)q->new_tokens,
                                            "phase", q->phase == CPLAB_PHASE_DECODE ? "decode" : "prefill"));
    }
    json_array_append_new(steps, json_pack("{s:o}", "requests", reqs));
  }
  return steps;
}

json_t *cplab_scenario_to_json(const cplab_scenario *s, int with_steps) {
  json_t *root = json_object(), *model = json_object();
  if (!root || !model) {
    json_decref(root);
    json_decref(model);
    return NULL;
  }
  json_object_set_new(root, "cplab_scenario", json_integer(CPLAB_SCENARIO_FORMAT));
  json_object_set_new(root, "name", json_string(s->name));
  json_object_set_new(root, "description", json_string(s->description ? s->description : ""));
  json_object_set_new(model, "preset", json_string(s->model.preset));
  size_t n;
  const cplab_model_field *f = cplab_model_fields(&n);
  for (size_t i = 0; i < n; i++) json_object_set_new(model, f[i].name, json_integer(cplab_model_field_get(&s->model, &f[i])));
  json_object_set_new(root, "model", model);
  const cplab_parallel *p = &s->par;
  json_object_set_new(root, "parallel",
                      json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:s, s:I}", "tp", p->tp, "pcp", p->pcp, "dcp",
                                p->dcp, "pp", p->pp, "interleave", p->interleave, "block_size", p->block_size,
                                "max_model_len", (json_int_t)p->max_model_len, "cudagraph_mode",
                                cplab_graph_mode_name(p->graph_mode), "indexer_max_logits_mb",
                                (json_int_t)p->indexer_max_logits_mb));
  if (p->num_spec_tokens) /* only when set: scenarios without MTP resolve as before */
    json_object_set_new(root, "speculative", json_pack("{s:i}", "num_spec_tokens", p->num_spec_tokens));
  json_object_set_new(root, "layout", json_string(s->layout));
  json_object_set_new(root, "seed", json_integer((json_int_t)s->seed));
  json_object_set_new(root, "check", json_pack("{s:I}", "sampled_rows", (json_int_t)s->sampled_rows));
  json_t *w = json_object();
  if (s->has_generator && !with_steps) {
    const cplab_generator *g = &s->gen;
    json_object_set_new(w, "generator",
                        json_pack("{s:I, s:o, s:f, s:o, s:o, s:f}", "steps", (json_int_t)g->steps, "requests",
                                  dist_to_json(&g->requests), "decode_fraction", g->decode_fraction, "context",
                                  dist_to_json(&g->context), "prefill_tokens", dist_to_json(&g->prefill_tokens),
                                  "chunked_fraction", g->chunked_fraction));
  } else {
    json_object_set_new(w, "steps", steps_to_json(s));
  }
  json_object_set_new(root, "workload", w);
  return root;
}

void cplab_scenario_summarize(const cplab_scenario *s, cplab_workload_summary *out) {
  memset(out, 0, sizeof *out);
  out->steps = s->num_steps;
  for (size_t i = 0; i < s->num_steps; i++) {
    for (size_t j = 0; j < s->steps[i].num_requests; j++) {
      const cplab_request *q = &s->steps[i].requests[j];
      out->requests++;
      if (q->phase == CPLAB_PHASE_DECODE) out->decodes++;
      else out->prefills++;
      out->new_tokens += q->new_tokens;
      if (q->num_computed + q->new_tokens > out->max_extent) out->max_extent = q->num_computed + q->new_tokens;
    }
  }
}
