/* Rank-invariance of one run (cplab-diff --ranks RUN): the plans every rank
 * wrote must agree where they must (shared digest, collectives within every
 * group: a mismatch is a hang in a real run), and, where the ranks wrote
 * token maps, every invariant of the reference (§10.1) must hold over them
 * (plan/check.c, index maps exercised by tag simulation); where they stored
 * numeric tensors, diff_numeric.c checks those. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "diff.h"

/* The invariants of one step as cases (--junit): the §10.1 rules (the
 * empty-context rule is the layout's, checked once per run) and the numeric
 * checks, whose "conversion" is the rule of the same name over stored top-k. */
typedef struct step_cases {
  diff_case *rule[CPLAB_RULE_COUNT];
  diff_numeric_cases num;
} step_cases;

static void step_cases_open(diff_report *r, size_t step, const diff_policy *pol, step_cases *sc) {
  char group[32];
  snprintf(group, sizeof group, "step%zu", step);
  for (int k = 0; k < CPLAB_RULE_COUNT; k++) {
    sc->rule[k] = k == CPLAB_RULE_EMPTY_CONTEXT ? NULL : diff_report_case(r, group, cplab_check_rule_name((cplab_check_rule)k));
    if (sc->rule[k]) sc->rule[k]->skip = "not checked: the ranks wrote no token maps";
  }
  sc->num.conversion = sc->rule[CPLAB_RULE_CONVERSION];
  sc->num.conversion->skip = "not checked: the ranks wrote neither token maps nor numeric tensors";
  sc->num.replicated = diff_report_case(r, group, "replicated-rows");
  sc->num.replicated->skip = "not checked: no numeric tensors stored in this step";
  snprintf(sc->num.replicated->criterion, sizeof sc->num.replicated->criterion,
           "a token several ranks hold: the same top-k, attention and LSE bit for bit");
  sc->num.combine = diff_report_case(r, group, "decode-combine");
  sc->num.combine->skip = sc->num.replicated->skip;
  const diff_tolerance *t = &pol->t[CPLAB_TT_ATTN_OUT];
  snprintf(sc->num.combine->criterion, sizeof sc->num.combine->criterion,
           "combined attention within %g + %g |a| of single-device attention", t->atol, t->rtol);
  sc->num.partials = diff_report_case(r, group, "partial-combine");
  sc->num.partials->skip =
      "not checked: no decode partials stored in this step (DCP 1, no combined row, or schema < 1.2)";
  t = &pol->combine;
  snprintf(sc->num.partials->criterion, sizeof sc->num.partials->criterion,
           "LSE combine of the members' stored partials: out within %g + %g (1+|L|) m, lse within %g + %g (1+|L|)",
           t->atol, t->rtol, t->atol, t->rtol);
}

/* The rule a violation of plan/check.c names first ("ownership: ..."), or -1. */
static int rule_of_violation(const char *msg) {
  for (int k = 0; k < CPLAB_RULE_COUNT; k++) {
    size_t n = strlen(cplab_check_rule_name((cplab_check_rule)k));
    if (strncmp(msg, cplab_check_rule_name((cplab_check_rule)k), n) == 0 && msg[n] == ':') return k;
  }
  return -1;
}

static void digest_checks(diff_report *r, size_t step, cplab_rank_plan *const *plans, const cplab_parallel *par,
                          int world, const step_cases *sc) {
  diff_case *coll = sc->rule[CPLAB_RULE_COLLECTIVES], *identity = sc->rule[CPLAB_RULE_PLAN];
  coll->evaluated = identity->evaluated = 1;
  uint64_t shared0 = cplab_rank_plan_shared_digest(plans[0]);
  int *m = malloc((size_t)world * sizeof *m);
  for (int k = 0; m && k < 3; k++) {
    for (int rank = 0; rank < world; rank++) {
      cplab_group_members(par, (cplab_group_kind)k, rank, m, NULL);
      if (m[0] == rank) continue;
      if (cplab_rank_plan_collective_digest(plans[rank], (cplab_group_kind)k) !=
          cplab_rank_plan_collective_digest(plans[m[0]], (cplab_group_kind)k))
        diff_report_add(r, coll, "collectives: step %zu: ranks %d and %d issue different %s collectives: a real run hangs",
                        step, rank, m[0], cplab_group_name((cplab_group_kind)k));
    }
  }
  for (int rank = 1; rank < world; rank++)
    if (cplab_rank_plan_shared_digest(plans[rank]) != shared0)
      diff_report_add(r, identity, "plan-identity: step %zu: rank %d derived another shared plan than rank 0", step, rank);
  free(m);
}

/* Every rule was evaluated; the violations plan/check.c kept no text for
 * are counted against their rules. */
static void take_violations(diff_report *r, const cplab_check *chk, size_t step, const step_cases *sc) {
  int64_t untold[CPLAB_RULE_COUNT];
  memcpy(untold, chk->by_rule, sizeof untold);
  for (int k = 0; k < CPLAB_RULE_COUNT; k++)
    if (sc->rule[k]) sc->rule[k]->evaluated = 1;
  for (int i = 0; i < chk->kept; i++) {
    int k = rule_of_violation(chk->first[i]);
    if (k >= 0) untold[k]--;
    diff_report_add(r, k >= 0 ? sc->rule[k] : NULL, "step %zu: %s", step, chk->first[i]);
  }
  for (int k = 0; k < CPLAB_RULE_COUNT; k++) diff_report_count(r, sc->rule[k], untold[k]);
}

/* The plan builder of the run's layout must refuse an empty context: one
 * case of the run, not of a step. */
static void empty_context(diff_report *r, const cplab_layout *layout, const cplab_scenario *s, cplab_diag *d) {
  cplab_check chk = {0};
  diff_case *c = diff_report_case(r, "layout", cplab_check_rule_name(CPLAB_RULE_EMPTY_CONTEXT));
  c->evaluated = 1;
  cplab_check_empty_context(layout, &s->par, &s->model, &chk, d);
  for (int i = 0; i < chk.kept; i++) diff_report_add(r, c, "%s", chk.first[i]);
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
  if (!rc) empty_context(r, layout, s, d);
  for (size_t step = 0; !rc && step < s->num_steps; step++) {
    int maps = 1;
    for (int k = 0; !rc && k < world; k++) {
      rc = cplab_trace_read_plan(ranks[k], step, &plans[k], d);
      if (!rc) maps &= plans[k]->slot_mapping != NULL;
    }
    if (rc) break;
    int64_t before = r->differences;
    step_cases sc;
    step_cases_open(r, step, pol, &sc);
    digest_checks(r, step, plans, &s->par, world, &sc);
    /* The checks drive the run's layout ops over the plans as read. */
    for (int k = 0; k < world; k++) plans[k]->layout = layout;
    cplab_step_input in = {&s->steps[step], step, s->seed, &s->par, &s->model, layout};
    if (maps) {
      cplab_check chk = {0};
      rc = cplab_check_step(&in, plans, world, s->seed + step, &chk, d);
      if (!rc) take_violations(r, &chk, step, &sc);
      ds->compared += chk.checks;
    }
    ds->compared += world;
    ds->differences += r->differences - before;
    if (!rc) rc = diff_ranks_numeric(r, ranks, plans, &in, world, pol, &sc.num, d);
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
