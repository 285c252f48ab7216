/* scenario_builtin.h (internal): the table generated from common/scenarios/. */
#ifndef CPLAB_SCENARIO_BUILTIN_H
#define CPLAB_SCENARIO_BUILTIN_H

typedef struct cplab_builtin_scenario {
  const char *name;
  const char *text;
} cplab_builtin_scenario;

/* Terminated by {0, 0}. */
extern const cplab_builtin_scenario cplab_builtin_scenarios[];
/* The same names, NULL-terminated. */
extern const char *const cplab_builtin_scenario_names[];

#endif
