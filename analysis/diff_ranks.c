/* Rank-invariance of one run (cplab-diff --ranks RUN): the plans every rank
 * wrote must agree where they must (shared digest, collectives within every
 * group: a mismatch is a hang in a real run), and, where the ranks wrote
 * token maps, every invariant of the reference (§10.1) must hold over them
 * (sim/check.c, index maps exercised by tag simulation); where they stored
 * numeric tensors, diff_numeric.c checks those. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "diff.h"

static void digest_checks(diff_report *r, size_t step, cplab_rank_plan *const *plans, const cplab_parallel *par,
                          int world) {
  uint64_t shared0 = cplab_rank_plan_shared_digest(plans[0]);
  int *m = malloc((size_t)world * sizeof *m);
  for (int k = 0; m && k < 3; k++) {
    for (int rank = 0; rank < world; rank++) {
      cplab_group_members(par, (cplab_group_kind)k, rank, m, NULL);
      if (m[0] == rank) continue;
      if (cplab_rank_plan_collective_digest(plans[rank], (cplab_group_kind)k) !=
          cplab_rank_plan_collective_digest(plans[m[0]], (cplab_group_kind)k))
        diff_report_add(r, "collectives: step %zu: ranks %d and %d issue different %s collectives: a real run hangs",
                        step, rank, m[0], cplab_group_name((cplab_group_kind)k));
    }
  }
  for (int rank = 1; rank < world; rank++)
    if (cplab_rank_plan_shared_digest(plans[rank]) != shared0)
      diff_report_add(r, "plan-identity: step %zu: rank %d derived another shared plan than rank 0", step, rank);
  free(m);
}

static void take_violations(diff_report *r, const sim_check *chk, size_t step) {
  for (int i = 0; i < chk->kept; i++) diff_report_add(r, "step %zu: %s", step, chk->first[i]);
  r->differences += chk->violations - chk->kept;
}

int diff_ranks(const char *run_path, const diff_policy *pol, diff_report *r, cplab_diag *d) {
  cplab_trace *run = NULL, **ranks = NULL;
  cplab_scenario *s = NULL;
  int rc = cplab_trace_open(run_path, &run, d), world = 0;
  if (!rc && strcmp(cplab_trace_get_info(run)->kind, "run") != 0)
    rc = cplab_diag_set(d, CPLAB_EUSAGE, "--ranks needs a run file (NAME.h5), got a %s file", cplab_trace_get_info(run)->kind);
  if (!rc) rc = cplab_trace_read_scenario(run, &s, d);
  const cplab_layout *layout = s ? cplab_layout_find(s->layout) : NULL;
  if (!rc && !layout) rc = cplab_diag_set(d, CPLAB_ENOTFOUND, "%s: unknown layout '%s'", run_path, s->layout);
  if (!rc) {
    world = cplab_trace_get_info(run)->world_size;
    ranks = calloc((size_t)world, sizeof *ranks);
    if (!ranks) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  }
  for (int k = 0; !rc && k < world; k++) rc = cplab_trace_open_rank(run, k, &ranks[k], d);
  cplab_rank_plan **plans = rc ? NULL : calloc((size_t)world, sizeof *plans);
  if (!rc && !plans) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  diff_dataset *ds = rc ? NULL : diff_report_dataset(r, "rank plans");
  if (!rc) { /* the plan builder of the run's layout must refuse an empty context */
    sim_check chk = {0};
    sim_check_empty_context(layout, &s->par, &s->model, &chk, d);
    for (int i = 0; i < chk.kept; i++) diff_report_add(r, "%s", chk.first[i]);
  }
  for (size_t step = 0; !rc && step < s->num_steps; step++) {
    int maps = 1;
    for (int k = 0; !rc && k < world; k++) {
      rc = cplab_trace_read_plan(ranks[k], step, &plans[k], d);
      if (!rc) maps &= plans[k]->slot_mapping != NULL;
    }
    if (rc) break;
    int64_t before = r->differences;
    digest_checks(r, step, plans, &s->par, world);
    /* The checks drive the run's layout ops over the plans as read. */
    for (int k = 0; k < world; k++) plans[k]->layout = layout;
    cplab_step_input in = {&s->steps[step], step, s->seed, &s->par, &s->model, layout};
    if (maps) {
      sim_check chk = {0};
      rc = sim_check_step(&in, plans, world, s->seed + step, &chk, d);
      if (!rc) take_violations(r, &chk, step);
      ds->compared += chk.checks;
    }
    ds->compared += world;
    ds->differences += r->differences - before;
    if (!rc) rc = diff_ranks_numeric(r, ranks, plans, &in, world, pol, d);
    for (int k = 0; k < world; k++) {
      cplab_rank_plan_free(plans[k]);
      plans[k] = NULL;
    }
  }
  free(plans);
  for (int k = 0; ranks && k < world; k++) cplab_trace_close(ranks[k]);
  free(ranks);
  cplab_scenario_free(s);
  cplab_trace_close(run);
  return rc;
}
