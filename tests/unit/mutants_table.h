/* tests/unit/mutants_table.h: the catalogue of mutants as the unit tests read
 * it: from the mutants themselves, each of which declares in its own file
 * (plan/layouts/mutant_*.c) the rule that must catch it and where it can show
 * (include/cplab/layout.h says what each field means). Only the name, the rule
 * and the needs are read here; the commands' claims (.caught) are run by
 * tests/cli/mutants.sh. */
#ifndef CPLAB_TEST_MUTANTS_TABLE_H
#define CPLAB_TEST_MUTANTS_TABLE_H

#include "cplab/layout.h"
#include "cplab/parallel.h"
#include "testutil.h"

#define MUTANTS_MAX 32

typedef struct mutant_row {
  char name[64];
  char breaks[32];
  /* needs: the step shows the bug only with PCP > 1, DCP > 1, interleave > 1 */
  int needs_pcp, needs_dcp, needs_interleave;
} mutant_row;

/* The mutants of the registry into rows (at most MUTANTS_MAX); fails the
 * running test on a mutant that declares no bug, rule or needs, or needs it
 * does not know. Returns the number of rows. */
static inline size_t mutants_table(mutant_row *rows) {
  size_t n = 0;
  for (const cplab_layout *const *l = cplab_layouts(); *l; l++) {
    if (!(*l)->mutant) continue;
    if (n == MUTANTS_MAX) fail_msg("more than %d mutants", MUTANTS_MAX);
    mutant_row *r = &rows[n++];
    memset(r, 0, sizeof *r);
    if (!(*l)->reproduces || !(*l)->breaks || !(*l)->needs)
      fail_msg("%s declares no .reproduces, .breaks or .needs (include/cplab/layout.h)", (*l)->name);
    snprintf(r->name, sizeof r->name, "%s", (*l)->name);
    snprintf(r->breaks, sizeof r->breaks, "%s", (*l)->breaks);
    char needs[128], *nsave = NULL;
    snprintf(needs, sizeof needs, "%s", (*l)->needs);
    for (char *w = strtok_r(needs, " ", &nsave); w; w = strtok_r(NULL, " ", &nsave)) {
      if (strcmp(w, "pcp>1") == 0) r->needs_pcp = 1;
      else if (strcmp(w, "dcp>1") == 0) r->needs_dcp = 1;
      else if (strcmp(w, "interleave>1") == 0) r->needs_interleave = 1;
      else fail_msg("%s needs '%s' (known: pcp>1, dcp>1, interleave>1)", r->name, w);
    }
  }
  return n;
}

/* Whether a layout with these parallel settings meets the row's needs. */
static inline int mutant_shows(const mutant_row *r, const cplab_parallel *par) {
  return (!r->needs_pcp || par->pcp > 1) && (!r->needs_dcp || par->dcp > 1) &&
         (!r->needs_interleave || par->interleave > 1);
}

#endif
