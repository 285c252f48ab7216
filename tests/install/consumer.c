/* Installed-library check (make installcheck): a program outside the tree
 * builds against the installed headers and libcplab through pkg-config. */
#include <cplab/ranks.h>
#include <cplab/scenario.h>
#include <stdio.h>

int main(void) {
  cplab_scenario *s = NULL;
  cplab_diag d = {0};
  if (cplab_scenario_load("pr56157", NULL, &s, &d) != 0) {
    cplab_diag_report(stderr, "consumer", &d);
    return 1;
  }
  cplab_rank_table *t = cplab_rank_table_alloc(&s->par, &d);
  int ok = t && t->world == 4 && t->ids[3].dcp_rank == 3;
  printf("installed libcplab: scenario %s, world %d: %s\n", s->name, t ? t->world : -1, ok ? "ok" : "WRONG");
  cplab_rank_table_free(t);
  cplab_scenario_free(s);
  return ok ? 0 : 1;
}
