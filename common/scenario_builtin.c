/* Built-in scenario lookup over the table generated from common/scenarios/. */
#include <string.h>

#include "cplab/scenario.h"
#include "scenario_builtin.h"

const char *const *cplab_scenario_builtin_names(void) { return cplab_builtin_scenario_names; }

int cplab_scenario_builtin(const char *name, const char **text) {
  for (size_t i = 0; cplab_builtin_scenarios[i].name; i++) {
    if (strcmp(cplab_builtin_scenarios[i].name, name) == 0) {
      *text = cplab_builtin_scenarios[i].text;
      return 0;
    }
  }
  return CPLAB_ENOTFOUND;
}
