/* scenario_check.h (internal): the rules of a scenario, written once for
 * both ways a scenario is built. The JSON reader (scenario_parse.c) calls each
 * rule as soon as it has read the fields it covers, so that a file's first
 * error is reported at its place in the text; cplab_scenario_finish() calls
 * them all, in the same order, on a scenario built in memory, with a reader
 * that has no text (messages "ORIGIN: FIELD: RULE"). Paths are the JSON
 * paths of the fields (docs/scenarios.md) in both cases.
 */
#ifndef CPLAB_SCENARIO_CHECK_H
#define CPLAB_SCENARIO_CHECK_H

#include "cplab/scenario.h"
#include "json_reader.h"

/* Last state of each request id, to check that steps continue one another. */
typedef struct cplab_request_state {
  int64_t id, extent;
  size_t last_step; /* step index + 1; 0 = empty slot */
  cplab_phase phase;
} cplab_request_state;

typedef struct cplab_request_table {
  cplab_request_state *slots;
  size_t cap, used;
} cplab_request_table;

void cplab_request_table_fini(cplab_request_table *t);

/* path: a name ([a-z0-9][a-z0-9._-]*). */
int cplab_scenario_check_name(cplab_json_reader *r, const char *path, const char *name);
/* The model: a known preset, every field in range, the cache formats' widths. */
int cplab_scenario_check_model(cplab_json_reader *r, const cplab_model *m);
/* The parallel layout against the model (parallel.c's rules). */
int cplab_scenario_check_parallel(cplab_json_reader *r, const cplab_parallel *p, const cplab_model *m);
int cplab_scenario_check_speculative(cplab_json_reader *r, int64_t num_spec_tokens);
int cplab_scenario_check_seed(cplab_json_reader *r, uint64_t seed);
/* The layout's name is checked with cplab_scenario_check_name first. */
int cplab_scenario_check_layout(cplab_json_reader *r, const char *layout);
int cplab_scenario_check_sampled_rows(cplab_json_reader *r, int64_t rows);
/* A step's request count (path: workload.steps[i].requests). */
int cplab_scenario_check_step_size(cplab_json_reader *r, const char *path, size_t num_requests);
/* One request (path: workload.steps[i].requests[j]) of step `step`: its
 * ranges, then that it continues its id's previous rows (table t). */
int cplab_scenario_check_request(cplab_json_reader *r, cplab_request_table *t, size_t step, const char *path,
                                 const cplab_parallel *p, const cplab_request *q);
int cplab_scenario_check_generator(cplab_json_reader *r, const cplab_generator *g, const cplab_parallel *p);
/* The command-line overrides, then the generator's steps (when it has one). */
int cplab_scenario_expand(cplab_json_reader *r, cplab_scenario *s, const cplab_scenario_overrides *ov);

#endif
