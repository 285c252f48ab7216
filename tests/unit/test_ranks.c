/* Rank table: the worked examples of vllm-pcp-dcp.md §1.3, then properties of
 * thousands of random layouts. */
#include "cplab/ranks.h"
#include "testutil.h"

static cplab_parallel layout(int tp, int pcp, int dcp, int pp) {
  cplab_parallel p;
  cplab_parallel_defaults(&p);
  p.tp = tp;
  p.pcp = pcp;
  p.dcp = dcp;
  p.pp = pp;
  p.max_model_len = 4096;
  return p;
}

static void expect_members(const cplab_rank_table *t, cplab_group_kind k, int rank, const int *want, int n) {
  assert_int_equal(cplab_group_size(&t->par, k), n);
  const int *got = cplab_rank_table_members(t, k, rank);
  for (int i = 0; i < n; i++) {
    if (got[i] != want[i])
      fail_msg("rank %d %s group member %d: got %d, want %d", rank, cplab_group_name(k), i, got[i], want[i]);
  }
}

static cplab_rank_table *table(int tp, int pcp, int dcp) {
  cplab_parallel p = layout(tp, pcp, dcp, 1);
  cplab_diag d = {0};
  cplab_rank_table *t = cplab_rank_table_alloc(&p, &d);
  if (!t) fail_msg("rank table for tp%d pcp%d dcp%d: %s", tp, pcp, dcp, d.msg);
  return t;
}

/* TP1/PCP4/DCP4: the PCP group and the DCP group are the same 4 ranks, same numbering. */
static void test_tp1_pcp4_dcp4(void **state) {
  (void)state;
  cplab_rank_table *t = table(1, 4, 4);
  assert_int_equal(t->world, 4);
  const int all[] = {0, 1, 2, 3};
  for (int r = 0; r < 4; r++) {
    assert_int_equal(t->ids[r].tp, 0);
    assert_int_equal(t->ids[r].pcp, r);
    assert_int_equal(t->ids[r].dcp_rank, r);
    const int self[] = {r};
    expect_members(t, CPLAB_GROUP_TP, r, self, 1);
    expect_members(t, CPLAB_GROUP_PCP, r, all, 4);
    expect_members(t, CPLAB_GROUP_DCP, r, all, 4);
  }
  assert_int_equal(cplab_q_gather_group(&t->par), CPLAB_Q_GATHER_NONE);
  assert_int_equal(cplab_combine_kind(&t->par), CPLAB_COMBINE_AG_AR);
  cplab_rank_table_free(t);
}

/* TP2/PCP2/DCP2: rank = pcp*2 + tp; TP {0,1},{2,3}; PCP {0,2},{1,3}; DCP = PCP. */
static void test_tp2_pcp2_dcp2(void **state) {
  (void)state;
  cplab_rank_table *t = table(2, 2, 2);
  const int tp01[] = {0, 1}, tp23[] = {2, 3}, pcp02[] = {0, 2}, pcp13[] = {1, 3};
  expect_members(t, CPLAB_GROUP_TP, 0, tp01, 2);
  expect_members(t, CPLAB_GROUP_TP, 3, tp23, 2);
  expect_members(t, CPLAB_GROUP_PCP, 0, pcp02, 2);
  expect_members(t, CPLAB_GROUP_PCP, 1, pcp13, 2);
  expect_members(t, CPLAB_GROUP_DCP, 2, pcp02, 2);
  expect_members(t, CPLAB_GROUP_DCP, 3, pcp13, 2);
  for (int r = 0; r < 4; r++) {
    assert_int_equal(t->ids[r].pcp, r / 2);
    assert_int_equal(t->ids[r].tp, r % 2);
    assert_int_equal(t->ids[r].dcp_rank, t->ids[r].pcp);
  }
  assert_int_equal(cplab_q_gather_group(&t->par), CPLAB_Q_GATHER_NONE);
  cplab_rank_table_free(t);
}

/* TP2/PCP2/DCP4: one DCP group in order [0,2,1,3]; dcp ranks 0->0, 2->1, 1->2, 3->3. */
static void test_tp2_pcp2_dcp4(void **state) {
  (void)state;
  cplab_rank_table *t = table(2, 2, 4);
  const int order[] = {0, 2, 1, 3};
  const int dcp_rank_of[] = {0, 2, 1, 3};
  for (int r = 0; r < 4; r++) {
    expect_members(t, CPLAB_GROUP_DCP, r, order, 4);
    assert_int_equal(t->ids[r].dcp_rank, dcp_rank_of[r]);
  }
  assert_int_equal(cplab_q_gather_group(&t->par), CPLAB_Q_GATHER_TP);
  assert_int_equal(cplab_dcp_partial_blocks(&t->par), 4); /* the members hold two TP ranks' heads */
  cplab_rank_table_free(t);
}

/* TP4/PCP1/DCP4: classic DCP; the DCP group is the TP group, dcp_rank = tp. */
static void test_tp4_pcp1_dcp4(void **state) {
  (void)state;
  cplab_rank_table *t = table(4, 1, 4);
  const int all[] = {0, 1, 2, 3};
  for (int r = 0; r < 4; r++) {
    expect_members(t, CPLAB_GROUP_TP, r, all, 4);
    expect_members(t, CPLAB_GROUP_DCP, r, all, 4);
    assert_int_equal(t->ids[r].dcp_rank, t->ids[r].tp);
    const int self[] = {r};
    expect_members(t, CPLAB_GROUP_PCP, r, self, 1);
  }
  assert_int_equal(cplab_q_gather_group(&t->par), CPLAB_Q_GATHER_DCP);
  assert_int_equal(cplab_combine_kind(&t->par), CPLAB_COMBINE_AG_RS);
  cplab_rank_table_free(t);
}

/* TP4/PCP1/DCP2: DCP groups are consecutive halves of the TP group. */
static void test_tp4_pcp1_dcp2(void **state) {
  (void)state;
  cplab_rank_table *t = table(4, 1, 2);
  const int lo[] = {0, 1}, hi[] = {2, 3};
  expect_members(t, CPLAB_GROUP_DCP, 1, lo, 2);
  expect_members(t, CPLAB_GROUP_DCP, 2, hi, 2);
  assert_int_equal(t->ids[3].dcp_rank, 1);
  cplab_rank_table_free(t);
}

static void test_rank_out_of_range(void **state) {
  (void)state;
  cplab_parallel p = layout(2, 2, 2, 1);
  cplab_rank_ids id;
  cplab_diag d = {0};
  assert_int_equal(cplab_rank_ids_get(&p, 4, &id, &d), CPLAB_ERANGE);
  assert_non_null(strstr(d.msg, "rank 4 is outside the world [0, 4)"));
  cplab_diag_clear(&d);
  assert_int_equal(cplab_rank_ids_get(&p, -1, &id, &d), CPLAB_ERANGE);
  cplab_parallel bad = layout(2, 4, 3, 1);
  cplab_diag_clear(&d);
  assert_null(cplab_rank_table_alloc(&bad, &d));
  assert_int_equal(d.code, CPLAB_EUNSUPPORTED);
}

/* A random valid layout: pcp > 1 needs dcp in {1, pcp, tp*pcp} and pp = 1;
 * pcp = 1 needs dcp | tp. */
static cplab_parallel random_layout(prop_run *pr) {
  static const int sizes[] = {1, 2, 3, 4, 6, 8, 16};
  int tp = sizes[prop_int(pr, 0, 6)], pcp = sizes[prop_int(pr, 0, 5)];
  int pp = pcp == 1 ? (int)prop_int(pr, 1, 3) : 1;
  int dcp;
  if (pcp > 1) {
    long c = prop_int(pr, 0, 2);
    dcp = c == 0 ? 1 : c == 1 ? pcp : tp * pcp;
  } else {
    int divisors[16], n = 0;
    for (int x = 1; x <= tp; x++)
      if (tp % x == 0) divisors[n++] = x;
    dcp = divisors[prop_int(pr, 0, n - 1)];
  }
  return layout(tp, pcp, dcp, pp);
}

/* Each group kind partitions the world; members agree on the group; positions
 * are the documented ids; DCP groups stay inside one pp slice. */
static void test_property_groups_partition(void **state) {
  (void)state;
  prop_run pr;
  prop_begin(&pr);
  long checked = 0;
  for (long trial = 0; trial < 5000; trial++) {
    if (!prop_trial(&pr, trial)) continue;
    cplab_parallel p = random_layout(&pr);
    cplab_diag d = {0};
    cplab_rank_table *t = cplab_rank_table_alloc(&p, &d);
    prop_check(&pr, trial, t != NULL, "tp%d pcp%d dcp%d pp%d rejected: %s", p.tp, p.pcp, p.dcp, p.pp, d.msg);
    prop_check(&pr, trial, t->world == p.tp * p.pcp * p.pp, "world %d", t->world);
    for (int k = 0; k < 3; k++) {
      int size = cplab_group_size(&p, (cplab_group_kind)k);
      for (int r = 0; r < t->world; r++) {
        const int *m = cplab_rank_table_members(t, (cplab_group_kind)k, r);
        const cplab_rank_ids *id = &t->ids[r];
        int pos = k == 0 ? id->tp : k == 1 ? id->pcp : id->dcp_rank;
        int gid = k == 0 ? id->tp_group : k == 1 ? id->pcp_group : id->dcp_group;
        prop_check(&pr, trial, m[pos] == r, "rank %d not at its position %d in its %s group", r, pos,
                   cplab_group_name((cplab_group_kind)k));
        prop_check(&pr, trial, gid >= 0 && gid < cplab_group_count(&p, (cplab_group_kind)k), "group id %d", gid);
        for (int j = 0; j < size; j++) {
          const int *mj = cplab_rank_table_members(t, (cplab_group_kind)k, m[j]);
          prop_check(&pr, trial, memcmp(mj, m, (size_t)size * sizeof(int)) == 0,
                     "ranks %d and %d disagree on their %s group", r, m[j], cplab_group_name((cplab_group_kind)k));
          prop_check(&pr, trial, t->ids[m[j]].pp == id->pp, "%s group crosses pp slices",
                     cplab_group_name((cplab_group_kind)k));
        }
      }
      /* Partition: groups agree on their members (above), so counting each
       * group once, by its first member, must cover the world exactly. */
      int groups = 0;
      for (int r = 0; r < t->world; r++) {
        const int *m = cplab_rank_table_members(t, (cplab_group_kind)k, r);
        if (m[0] == r) groups++;
      }
      prop_check(&pr, trial, groups * size == t->world, "%s groups of size %d do not tile world %d",
                 cplab_group_name((cplab_group_kind)k), size, t->world);
    }
    int *member_tp = malloc(sizeof(int) * (size_t)p.dcp);
    for (int r = 0; r < t->world; r++) {
      const cplab_rank_ids *id = &t->ids[r];
      prop_check(&pr, trial, r == (id->pp * p.pcp + id->pcp) * p.tp + id->tp, "rank numbering of %d", r);
      prop_check(&pr, trial, id->dcp_rank == (id->tp * p.pcp + id->pcp) % p.dcp, "dcp_rank of %d", r);
      /* The decode partials' head blocks: 1 exactly where every DCP member
       * holds r's heads (its TP rank), else one per member. */
      prop_check(&pr, trial, cplab_dcp_member_tp(&p, r, member_tp, &d) == 0, "member_tp of %d: %s", r, d.msg);
      const int *m = cplab_rank_table_members(t, CPLAB_GROUP_DCP, r);
      int shared = 1;
      for (int o = 0; o < p.dcp; o++) {
        prop_check(&pr, trial, member_tp[o] == t->ids[m[o]].tp, "member_tp[%d] of %d", o, r);
        shared &= member_tp[o] == id->tp;
      }
      prop_check(&pr, trial, cplab_dcp_partial_blocks(&p) == (shared ? 1 : p.dcp),
                 "tp%d pcp%d dcp%d: %d partial blocks, members %s heads", p.tp, p.pcp, p.dcp,
                 cplab_dcp_partial_blocks(&p), shared ? "share" : "differ in");
    }
    free(member_tp);
    if (p.tp == 1 && p.dcp == p.pcp) /* §10.1 inv. 1: the DCP group equals the PCP group */
      for (int r = 0; r < t->world; r++)
        prop_check(&pr, trial,
                   memcmp(cplab_rank_table_members(t, CPLAB_GROUP_DCP, r),
                          cplab_rank_table_members(t, CPLAB_GROUP_PCP, r), (size_t)p.pcp * sizeof(int)) == 0,
                   "TP1 DCP=PCP: DCP group of %d differs from its PCP group", r);
    cplab_rank_table_free(t);
    checked++;
  }
  prop_end(&pr);
  assert_true(checked > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tp1_pcp4_dcp4),          cmocka_unit_test(test_tp2_pcp2_dcp2),
      cmocka_unit_test(test_tp2_pcp2_dcp4),          cmocka_unit_test(test_tp4_pcp1_dcp4),
      cmocka_unit_test(test_tp4_pcp1_dcp2),          cmocka_unit_test(test_rank_out_of_range),
      cmocka_unit_test(test_property_groups_partition),
  };
  return cmocka_run_group_tests_name("ranks", tests, NULL, NULL);
}
