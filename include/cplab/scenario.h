/* cplab/scenario.h: a scenario is everything that defines a run: model
 * dimensions, parallel layout, layout plugin, seed, numeric-check sampling and
 * the workload (explicit steps, or a seeded generator that expands into steps).
 *
 * Scenarios are JSON (format: docs/scenarios.md). Built-in ones are compiled
 * into every program from the JSON files in common/scenarios. Every rejection names the
 * place (file:line:column), the field and the rule. A program may also build a
 * scenario in memory (cplab_scenario_alloc, cplab_scenario_finish): the same
 * rules apply, and a rejection names the field by its JSON path.
 */
#ifndef CPLAB_SCENARIO_H
#define CPLAB_SCENARIO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"
#include "cplab/model.h"
#include "cplab/parallel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CPLAB_SCENARIO_FORMAT 1
#define CPLAB_NAME_MAX 64
#define CPLAB_MAX_STEPS 1000000
#define CPLAB_MAX_REQUESTS_PER_STEP 65536
#define CPLAB_MAX_REQUEST_ID INT32_MAX
#define CPLAB_MAX_SAMPLED_ROWS 1000000
#define CPLAB_MAX_SPEC_TOKENS 7 /* speculative.num_spec_tokens */
/* Seeds stay exactly representable as JSON numbers in every reader. */
#define CPLAB_MAX_SEED ((UINT64_C(1) << 53) - 1)

typedef enum cplab_phase { CPLAB_PHASE_PREFILL = 0, CPLAB_PHASE_DECODE } cplab_phase;

typedef struct cplab_request {
  int64_t id;           /* request id, stable across steps */
  int64_t num_computed; /* tokens already in the KV cache */
  int64_t new_tokens;   /* tokens scheduled in this step (1 for decode) */
  cplab_phase phase;
} cplab_request;

typedef struct cplab_step {
  size_t num_requests;
  cplab_request *requests; /* in scheduler order: index = global request index g */
} cplab_step;

typedef enum cplab_dist_kind {
  CPLAB_DIST_CONST = 0,  /* value                 */
  CPLAB_DIST_UNIFORM,    /* integers in [min, max] */
  CPLAB_DIST_LOGNORMAL,  /* exp(N(mu, sigma))      */
  CPLAB_DIST_EXPONENTIAL /* mean                   */
} cplab_dist_kind;

/* An integer distribution; draws are rounded and clamped to [min, max]. */
typedef struct cplab_dist {
  cplab_dist_kind kind;
  double mu, sigma, mean;
  int64_t value, min, max;
} cplab_dist;

typedef struct cplab_generator {
  int64_t steps;
  cplab_dist requests;       /* requests per step */
  double decode_fraction;    /* probability that a request is a decode row */
  cplab_dist context;        /* num_computed of decodes and of chunked prefills */
  cplab_dist prefill_tokens; /* new tokens of a prefill */
  double chunked_fraction;   /* probability that a prefill continues a computed prefix */
} cplab_generator;

typedef struct cplab_scenario {
  char name[CPLAB_NAME_MAX];
  char origin[256];  /* "builtin:NAME" or the file path */
  char *description; /* may be "" */
  cplab_model model;
  cplab_parallel par;
  char layout[CPLAB_NAME_MAX];
  uint64_t seed;
  int64_t sampled_rows;
  int has_generator;
  cplab_generator gen;
  size_t num_steps;
  cplab_step *steps; /* always expanded */
  char *source_json; /* the verbatim text it was read from; a built one's resolved form (cplab_scenario_finish) */
} cplab_scenario;

/* Command-line overrides, applied before validation and workload expansion. */
typedef struct cplab_scenario_overrides {
  int has_seed;
  uint64_t seed;
  const char *layout; /* NULL: keep the scenario's */
} cplab_scenario_overrides;

/* NAME of a built-in scenario, or a path to a JSON file. */
int cplab_scenario_load(const char *name_or_path, const cplab_scenario_overrides *ov, cplab_scenario **out,
                        cplab_diag *d);

/* Parse text (len bytes) read from origin (used in messages). */
int cplab_scenario_parse(const char *text, size_t len, const char *origin, const cplab_scenario_overrides *ov,
                         cplab_scenario **out, cplab_diag *d);

void cplab_scenario_free(cplab_scenario *s);

/* A scenario to fill in memory (a program that builds its own, e.g.
 * cplab-bench): parallel defaults, layout "vllm", 16 sampled rows, an empty
 * description, no steps, the given origin (named in messages). NULL on ENOMEM.
 * The caller fills it (steps and description malloc'd: cplab_scenario_free
 * releases them), then calls cplab_scenario_finish(). */
cplab_scenario *cplab_scenario_alloc(const char *origin);

/* Check a scenario built in memory against every rule the parser applies to
 * a file (the same rules, in the same order), apply the overrides, expand a
 * generator into steps, and when source_json is NULL fill it with the
 * resolved form (compact cplab_scenario_to_json, which parses back into the
 * same scenario). A rejection names the field by its JSON path:
 * "ORIGIN: parallel.dcp: RULE". Called once per scenario; on failure the
 * scenario is left for the caller to free. */
int cplab_scenario_finish(cplab_scenario *s, const cplab_scenario_overrides *ov, cplab_diag *d);

/* The resolved scenario: every field explicit (presets expanded, defaults
 * filled). Steps are listed when with_steps, else summarised. NULL on ENOMEM. */
json_t *cplab_scenario_to_json(const cplab_scenario *s, int with_steps);

/* Workload totals. */
typedef struct cplab_workload_summary {
  size_t steps, requests, decodes, prefills;
  int64_t new_tokens, max_extent;
} cplab_workload_summary;
void cplab_scenario_summarize(const cplab_scenario *s, cplab_workload_summary *out);

/* Built-in scenarios: NULL-terminated names; the JSON text of one by name
 * (CPLAB_ENOTFOUND if unknown). */
const char *const *cplab_scenario_builtin_names(void);
int cplab_scenario_builtin(const char *name, const char **text);

/* Names for scenarios and layouts: [a-z0-9][a-z0-9._-]*, shorter than CPLAB_NAME_MAX. */
int cplab_name_valid(const char *name);

/* Expand a generator into steps with GSL's mt19937 seeded from seed. Used by
 * the parser; exposed for tests. */
int cplab_workload_generate(const cplab_generator *g, const cplab_parallel *p, uint64_t seed, cplab_step **steps,
                            size_t *num_steps, cplab_diag *d);
void cplab_steps_free(cplab_step *steps, size_t num_steps);

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_SCENARIO_H */
