/* Property sweep: every invariant of vllm-pcp-dcp.md §10.1 holds for every
 * correct layout over 10,000 generated steps (P in {1,2,3,4,8}, D in {1, P,
 * TP·P}, I in {1,2,4,64}, B = 64), each rank's plan derived on its own; and
 * every mutant layout is caught by the rule its file says it breaks (.breaks),
 * and only where its needs (.needs) say it can show. */
#include <time.h>

#include "check.h"
#include "cplab/plan.h"
#include "mutants_table.h"
#include "sweep.h"
#include "testutil.h"

/* Derive every rank's plan for the case and check the step. */
static int run_case(const sweep_case *c, const cplab_layout *layout, uint64_t seed, cplab_check *chk, cplab_diag *d) {
  cplab_model model;
  cplab_model_preset("glm-5", &model);
  cplab_step step = {c->n, (cplab_request *)c->reqs};
  cplab_step_input in = {&step, 0, seed, &c->par, &model, layout};
  int world = cplab_parallel_world(&c->par);
  cplab_rank_plan *plans[64] = {0};
  int rc = 0;
  for (int r = 0; r < world && !rc; r++) rc = cplab_rank_plan_derive(&in, r, CPLAB_PLAN_TOKEN_MAPS, &plans[r], d);
  if (!rc) rc = cplab_check_step(&in, plans, world, seed, chk, d);
  if (!rc) rc = cplab_check_empty_context(layout, &c->par, &model, chk, d);
  for (int r = 0; r < world; r++) cplab_rank_plan_free(plans[r]);
  return rc;
}

/* §4.1 round-trip extents of the change's tests, W in {2, 4, 8} (TP1, PCP = DCP = W). */
static void test_round_trip_extents(void **state) {
  (void)state;
  static const int64_t lists[][4] = {{1}, {7}, {64}, {65}, {129}, {8, 8}, {1, 9}, {300, 1, 129}, {2730, 256, 63}};
  static const int sizes[] = {1, 1, 1, 1, 1, 2, 2, 3, 3};
  for (int w = 2; w <= 8; w *= 2)
    for (int il = 1; il <= 64; il *= 64)
      for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        sweep_case c;
        cplab_parallel_defaults(&c.par);
        c.par.pcp = c.par.dcp = w;
        c.par.interleave = il;
        c.par.max_model_len = 4096;
        c.n = (size_t)sizes[i];
        for (size_t g = 0; g < c.n; g++) c.reqs[g] = (cplab_request){(int64_t)g, 0, lists[i][g], CPLAB_PHASE_PREFILL};
        cplab_check chk = {0};
        cplab_diag d = {0};
        if (run_case(&c, cplab_layout_find("vllm"), 7, &chk, &d) != 0) fail_msg("W=%d list %zu: %s", w, i, d.msg);
        if (chk.violations) fail_msg("W=%d I=%d extents #%zu: %s", w, il, i, chk.first[0]);
        assert_true(chk.checks > 0);
      }
}

static void test_correct_layouts_hold_every_invariant(void **state) {
  (void)state;
  for (const cplab_layout *const *l = cplab_layouts(); *l; l++) {
    if ((*l)->mutant) continue;
    prop_run pr;
    prop_begin(&pr);
    long trials = strcmp((*l)->name, "vllm") == 0 ? 10000 : 2000, steps = 0;
    cplab_check chk = {0};
    clock_t t0 = clock();
    for (long trial = 0; trial < trials; trial++) {
      if (!prop_trial(&pr, trial)) continue;
      sweep_case c;
      sweep_random_case(&pr, &c);
      cplab_check before = chk;
      cplab_diag d = {0};
      prop_check(&pr, trial, run_case(&c, *l, (uint64_t)trial, &chk, &d) == 0, "%s: %s", (*l)->name, d.msg);
      prop_check(&pr, trial, chk.violations == before.violations, "%s (tp%d pcp%d dcp%d I%d): %s", (*l)->name,
                 c.par.tp, c.par.pcp, c.par.dcp, c.par.interleave, chk.first[before.kept < CPLAB_CHECK_KEEP ? before.kept : 0]);
      steps++;
    }
    print_message("# %s: %ld steps, %lld checks, 0 violations, %.1f s\n", (*l)->name, steps, (long long)chk.checks,
                  (double)(clock() - t0) / CLOCKS_PER_SEC);
    prop_end(&pr);
  }
}

static cplab_check_rule rule_named(const char *name) {
  for (int k = 0; k < CPLAB_RULE_COUNT; k++)
    if (strcmp(cplab_check_rule_name((cplab_check_rule)k), name) == 0) return (cplab_check_rule)k;
  fail_msg("a mutant declares .breaks = \"%s\", which is no rule of plan/check.c", name);
  return CPLAB_RULE_COUNT;
}

/* Each mutant of the registry: on generated steps where its "needs"
 * hold, the rule in "breaks" flags it; where they do not, it is the vllm
 * layout and no rule fires. */
static void test_mutants_are_caught(void **state) {
  (void)state;
  mutant_row rows[MUTANTS_MAX];
  size_t n = mutants_table(rows);
  assert_true(n > 0);
  for (size_t i = 0; i < n; i++) {
    const mutant_row *row = &rows[i];
    const cplab_layout *l = cplab_layout_find(row->name);
    if (!l || !l->mutant) fail_msg("%s is no mutant layout", row->name);
    cplab_check_rule rule = rule_named(row->breaks);
    prop_run pr;
    prop_begin(&pr);
    cplab_check chk = {0}, hidden = {0};
    long trial = 0, shown = 0, not_shown = 0;
    for (; trial < 3000 && (chk.by_rule[rule] == 0 || not_shown < 200); trial++) {
      if (!prop_trial(&pr, trial)) continue;
      sweep_case c;
      sweep_random_case(&pr, &c);
      int shows = mutant_shows(row, &c.par);
      if (shows ? chk.by_rule[rule] > 0 : not_shown >= 200) continue;
      cplab_diag d = {0};
      if (shows) {
        shown++;
        run_case(&c, l, (uint64_t)trial, &chk, &d);
        continue;
      }
      not_shown++;
      prop_check(&pr, trial, run_case(&c, l, (uint64_t)trial, &hidden, &d) == 0, "%s: %s", row->name, d.msg);
      prop_check(&pr, trial, hidden.violations == 0, "%s (tp%d pcp%d dcp%d I%d) lacks its needs but: %s", row->name,
                 c.par.tp, c.par.pcp, c.par.dcp, c.par.interleave, hidden.first[0]);
    }
    if (chk.by_rule[rule] == 0 && pr.only_trial < 0)
      fail_msg("%s was not caught by rule %s in %ld steps that meet its needs", row->name, row->breaks, shown);
    print_message("# %s caught by %s after %ld trials (%ld without its needs: no violation): %s\n", row->name,
                  row->breaks, trial, not_shown, chk.first[0]);
    prop_end(&pr);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_extents),
      cmocka_unit_test(test_correct_layouts_hold_every_invariant),
      cmocka_unit_test(test_mutants_are_caught),
  };
  return cmocka_run_group_tests_name("invariants", tests, NULL, NULL);
}
