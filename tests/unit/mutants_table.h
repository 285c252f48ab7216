/* tests/unit/mutants_table.h: the catalogue of mutants, tests/mutants.tsv,
 * as the unit tests read it (the file's header says what each column means).
 * Only the first four columns are read here: the mutant's name, the bug, the
 * rule it breaks and the conditions under which it can show; the commands'
 * columns are run by tests/cli/mutants.sh. The file is found through
 * top_srcdir, which make check sets. */
#ifndef CPLAB_TEST_MUTANTS_TABLE_H
#define CPLAB_TEST_MUTANTS_TABLE_H

#include "cplab/parallel.h"
#include "testutil.h"

#define MUTANTS_MAX 32

typedef struct mutant_row {
  char name[64];
  char breaks[32];
  /* needs: the step shows the bug only with PCP > 1, DCP > 1, interleave > 1 */
  int needs_pcp, needs_dcp, needs_interleave;
} mutant_row;

/* Read the table into rows (at most MUTANTS_MAX); fails the running test on
 * a missing file or a malformed row. Returns the number of rows. */
static inline size_t mutants_table(mutant_row *rows) {
  const char *top = getenv("top_srcdir");
  char path[512], line[4096];
  snprintf(path, sizeof path, "%s/tests/mutants.tsv", top ? top : ".");
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s (set top_srcdir)", path);
  size_t n = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    line[strcspn(line, "\n")] = '\0';
    if (n == MUTANTS_MAX) fail_msg("%s: more than %d rows", path, MUTANTS_MAX);
    mutant_row *r = &rows[n++];
    memset(r, 0, sizeof *r);
    char *save = NULL, *name = strtok_r(line, "\t", &save), *bug = strtok_r(NULL, "\t", &save);
    char *breaks = strtok_r(NULL, "\t", &save), *needs = strtok_r(NULL, "\t", &save);
    if (!name || !bug || !breaks || !needs) fail_msg("%s: row %zu lacks name, bug, breaks or needs", path, n);
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->breaks, sizeof r->breaks, "%s", breaks);
    char *nsave = NULL;
    for (char *w = strtok_r(needs, " ", &nsave); w; w = strtok_r(NULL, " ", &nsave)) {
      if (strcmp(w, "pcp>1") == 0) r->needs_pcp = 1;
      else if (strcmp(w, "dcp>1") == 0) r->needs_dcp = 1;
      else if (strcmp(w, "interleave>1") == 0) r->needs_interleave = 1;
      else fail_msg("%s: %s needs '%s' (known: pcp>1, dcp>1, interleave>1)", path, r->name, w);
    }
  }
  fclose(f);
  return n;
}

/* Whether a layout with these parallel settings meets the row's needs. */
static inline int mutant_shows(const mutant_row *r, const cplab_parallel *par) {
  return (!r->needs_pcp || par->pcp > 1) && (!r->needs_dcp || par->dcp > 1) &&
         (!r->needs_interleave || par->interleave > 1);
}

#endif
