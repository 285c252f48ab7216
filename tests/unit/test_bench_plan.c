/* cplab-bench's configuration matrix (bench/layers/matrix.c) and plan-derived
 * work (plancost.c, dryrun.c): the parsers accept what the help text says and
 * name what they reject; each configuration's scenario holds its workload;
 * the counted work obeys the conservation laws of the layouts (PCP splits a
 * prefill's pairs without losing any, DCP splits a decode row's keys,
 * DualChunkSwap balances causal work) and the GEMM FLOP match the published
 * per-token figure of the preset (perf-anchors §1: 1.03 GFLOP for GLM-5). */
#include <math.h>

#include "cplab/kv.h"
#include "dryrun.h"
#include "matrix.h"
#include "plancost.h"
#include "testutil.h"

static void expect_usage(int rc, const cplab_diag *d, const char *fragment) {
  assert_int_equal(rc, CPLAB_EUSAGE);
  if (!strstr(d->msg, fragment)) fail_msg("expected '%s' in '%s'", fragment, d->msg);
}

static void test_layout_labels(void **state) {
  (void)state;
  struct {
    const char *text, *label;
    int tp, pcp, dcp;
  } ok[] = {{"tp4", "tp4", 4, 1, 1},         {"pcp4", "pcp4", 1, 4, 1},     {"tp4dcp4", "tp4dcp4", 4, 1, 4},
            {"pcp4dcp4", "pcp4dcp4", 1, 4, 4}, {"tp1", "tp1", 1, 1, 1},     {"tp1pcp2", "pcp2", 1, 2, 1},
            {"tp2pcp2dcp4", "tp2pcp2dcp4", 2, 2, 4}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    cplab_bench_parallel l;
    cplab_diag d = {0};
    assert_int_equal(cplab_bench_parallel_parse(ok[i].text, &l, &d), 0);
    assert_string_equal(l.label, ok[i].label);
    assert_true(l.tp == ok[i].tp && l.pcp == ok[i].pcp && l.dcp == ok[i].dcp);
  }
  struct {
    const char *text, *fragment;
  } bad[] = {{"", "empty"},           {"tp", "tp needs a positive size"}, {"tp0", "tp needs a positive size"},
             {"pcp2tp2", "in that order"}, {"tp2tp2", "in that order"},   {"x4", "in that order"},
             {"tp4 ", "in that order"}, {"tp99999999", "tp needs a positive size"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cplab_bench_parallel l;
    cplab_diag d = {0};
    expect_usage(cplab_bench_parallel_parse(bad[i].text, &l, &d), &d, bad[i].fragment);
  }
}

static void test_lists(void **state) {
  (void)state;
  cplab_bench_matrix m = {0};
  cplab_diag d = {0};
  assert_int_equal(cplab_bench_parse_parallel(&m, "tp4,pcp4,tp4dcp4,pcp4dcp4", &d), 0);
  assert_int_equal(m.num_parallel, 4);
  assert_string_equal(m.parallel[3].label, "pcp4dcp4");
  assert_int_equal(cplab_bench_parse_graphs(&m, "eager,piecewise,full", &d), 0);
  assert_true(m.num_graphs == 3 && m.graphs[2] == CPLAB_GRAPH_FULL_AND_PIECEWISE);
  /* full_decode_only is reachable: the scenario runs vLLM's FULL_DECODE_ONLY */
  assert_int_equal(cplab_bench_parse_graphs(&m, "full_decode_only,eager", &d), 0);
  assert_true(m.num_graphs == 2 && m.graphs[0] == CPLAB_GRAPH_FULL_DECODE_ONLY && m.graphs[1] == CPLAB_GRAPH_NONE);
  assert_int_equal(cplab_bench_parse_graphs(&m, "eager,piecewise,full", &d), 0);
  assert_int_equal(cplab_bench_add_workloads(&m, CPLAB_BENCH_PREFILL, "4096,32768", 2, 16, &d), 0);
  assert_int_equal(cplab_bench_add_workloads(&m, CPLAB_BENCH_DECODE, "32768", 4, 16, &d), 0);
  assert_int_equal(cplab_bench_add_workloads(&m, CPLAB_BENCH_MIXED, "8192+16@32768", 1, 16, &d), 0);
  assert_int_equal(m.num_workloads, 4);
  cplab_bench_workload *w = m.workloads;
  assert_true(w[0].tokens == 4096 && w[0].batch == 2 && w[0].out_tokens == 1);
  assert_true(w[2].kind == CPLAB_BENCH_DECODE && w[2].tokens == 32768 && w[2].batch == 4 && w[2].out_tokens == 16);
  assert_true(w[3].kind == CPLAB_BENCH_MIXED && w[3].tokens == 8192 && w[3].batch == 16 && w[3].context == 32768);
  char label[96];
  cplab_bench_workload_label(&w[1], label, sizeof label);
  assert_string_equal(label, "prefill 32768 in / 1 out, batch 2");
  cplab_bench_workload_label(&w[2], label, sizeof label);
  assert_string_equal(label, "decode 1 in / 16 out @ 32768, batch 4");
  cplab_bench_workload_label(&w[3], label, sizeof label);
  assert_string_equal(label, "mixed 8192 + 16 decode @ 32768");
  struct {
    int which; /* 0 layouts, 1 graphs, 2 prefill, 3 mixed, 4 batch */
    const char *text, *fragment;
  } bad[] = {{0, "tp4,tp4", "tp4 given twice"},       {0, "tp4,,pcp4", "empty or overlong item"},
             {0, "", "empty list"},                   {1, "eager,fast", "unknown mode 'fast'"},
             {1, "full,full", "full given twice"},    {2, "0", "expected a positive token count"},
             {2, "12a", "expected a positive token count"}, {2, "4096,", "empty or overlong item"},
             {3, "8192+16", "PREFILL+ROWS@CONTEXT"},  {3, "8192@16+3", "PREFILL+ROWS@CONTEXT"},
             {4, "4096", "batch: must be in [1, 4096]"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cplab_bench_matrix b = {0};
    cplab_diag e = {0};
    int rc = bad[i].which == 0   ? cplab_bench_parse_parallel(&b, bad[i].text, &e)
             : bad[i].which == 1 ? cplab_bench_parse_graphs(&b, bad[i].text, &e)
             : bad[i].which == 2 ? cplab_bench_add_workloads(&b, CPLAB_BENCH_PREFILL, bad[i].text, 1, 1, &e)
             : bad[i].which == 3 ? cplab_bench_add_workloads(&b, CPLAB_BENCH_MIXED, bad[i].text, 1, 1, &e)
                                 : cplab_bench_add_workloads(&b, CPLAB_BENCH_PREFILL, bad[i].text, 0, 1, &e);
    expect_usage(rc, &e, bad[i].fragment);
  }
}

static cplab_bench_matrix matrix(const char *layouts, cplab_bench_kind kind, const char *items, int64_t batch,
                                 int64_t out) {
  cplab_bench_matrix m = {0};
  cplab_diag d = {0};
  snprintf(m.preset, sizeof m.preset, "glm-5");
  m.seed = 7, m.interleave = 1, m.block_size = 64;
  assert_int_equal(cplab_bench_parse_parallel(&m, layouts, &d), 0);
  assert_int_equal(cplab_bench_parse_graphs(&m, "eager", &d), 0);
  assert_int_equal(cplab_bench_add_workloads(&m, kind, items, batch, out, &d), 0);
  return m;
}

/* The plan cost of the matrix's first configuration (graph: eager). */
static cplab_bench_plan_cost cost_of(const cplab_bench_matrix *m, int layout) {
  cplab_scenario *s = NULL;
  cplab_bench_plan_cost c;
  cplab_diag d = {0};
  if (cplab_bench_scenario(m, &m->parallel[layout], &m->workloads[0], CPLAB_GRAPH_NONE, &s, &d) != 0)
    fail_msg("scenario: %s", d.msg);
  if (cplab_bench_plan_cost_of(s, &c, &d) != 0) fail_msg("plan cost: %s", d.msg);
  cplab_scenario_free(s);
  return c;
}

static void test_scenarios_hold_the_workload(void **state) {
  (void)state;
  cplab_bench_matrix m = matrix("pcp4dcp4", CPLAB_BENCH_DECODE, "1000", 3, 5);
  cplab_scenario *s = NULL;
  cplab_diag d = {0};
  assert_int_equal(
      cplab_bench_scenario(&m, &m.parallel[0], &m.workloads[0], CPLAB_GRAPH_FULL_AND_PIECEWISE, &s, &d), 0);
  assert_true(s->par.tp == 1 && s->par.pcp == 4 && s->par.dcp == 4 && s->par.graph_mode == CPLAB_GRAPH_FULL_AND_PIECEWISE);
  cplab_scenario *fdo = NULL;
  assert_int_equal(
      cplab_bench_scenario(&m, &m.parallel[0], &m.workloads[0], CPLAB_GRAPH_FULL_DECODE_ONLY, &fdo, &d), 0);
  assert_int_equal(fdo->par.graph_mode, CPLAB_GRAPH_FULL_DECODE_ONLY);
  cplab_scenario_free(fdo);
  assert_int_equal(s->num_steps, 5);
  for (size_t st = 0; st < 5; st++) {
    assert_int_equal(s->steps[st].num_requests, 3);
    assert_true(s->steps[st].requests[2].num_computed == 1000 + (int64_t)st && s->steps[st].requests[2].new_tokens == 1);
  }
  assert_true(s->par.max_model_len >= 1005 && s->par.max_model_len % (64 * 4) == 0);
  cplab_scenario_free(s);
  /* A mixed step: the decode rows, then the prefill. */
  cplab_bench_matrix x = matrix("tp2", CPLAB_BENCH_MIXED, "300+2@5000", 1, 1);
  assert_int_equal(cplab_bench_scenario(&x, &x.parallel[0], &x.workloads[0], CPLAB_GRAPH_PIECEWISE, &s, &d), 0);
  assert_true(s->num_steps == 1 && s->steps[0].num_requests == 3);
  assert_true(s->steps[0].requests[0].phase == CPLAB_PHASE_DECODE && s->steps[0].requests[0].num_computed == 5000);
  assert_true(s->steps[0].requests[2].phase == CPLAB_PHASE_PREFILL && s->steps[0].requests[2].new_tokens == 300);
  cplab_scenario_free(s);
  /* A workload too large to spell out as steps is refused before it is built. */
  cplab_bench_matrix huge = matrix("tp1", CPLAB_BENCH_DECODE, "1000", 4096, 4096);
  cplab_diag e = {0};
  assert_int_equal(cplab_bench_scenario(&huge, &huge.parallel[0], &huge.workloads[0], CPLAB_GRAPH_NONE, &s, &e),
                   CPLAB_EUSAGE);
  assert_non_null(strstr(e.msg, "4096 steps x 4096 requests exceed 1048576 requests in all"));
  assert_null(s);
  /* Parallel sizes the scenario rules reject are named with the configuration. */
  cplab_bench_matrix bad = matrix("tp2dcp4", CPLAB_BENCH_PREFILL, "64", 1, 1);
  assert_int_not_equal(cplab_bench_scenario(&bad, &bad.parallel[0], &bad.workloads[0], CPLAB_GRAPH_NONE, &s, &d), 0);
  assert_non_null(strstr(d.msg, "tp2dcp4, prefill 64 in / 1 out"));
  assert_null(s);
}

static double causal_pairs(double n) { return n * (n + 1) / 2; }

static void test_prefill_work(void **state) {
  (void)state;
  const int64_t N = 8192, K = 2048; /* glm-5: top-k 2048 */
  cplab_bench_matrix m = matrix("tp1,pcp2,pcp4,pcp4dcp4,tp4", CPLAB_BENCH_PREFILL, "8192", 1, 1);
  cplab_bench_plan_cost one = cost_of(&m, 0);
  assert_int_equal(one.world, 1);
  const cplab_bench_work *w = &one.ranks[0];
  assert_true(w->tokens == N && w->prefill_tokens == N && w->moe_rows == N);
  assert_true(w->indexer_pairs == causal_pairs((double)N));
  assert_true(w->attn_rows == causal_pairs((double)K) + (double)(N - K) * (double)K);
  /* GLM-5 per token: projections 50,987,008 replicated + 64 heads x 4,653,056 = 348,782,592 FLOP; MoE router
   * 3,145,728 + 8 experts x 75,497,472 + the shared one = 682,622,976 FLOP; 1.031 G in all (anchor: 1.03 G). */
  assert_true(w->proj_flop == 348782592.0 * (double)N);
  assert_true(w->moe_flop == 682622976.0 * (double)N);
  assert_true(fabs((w->proj_flop + w->moe_flop) / (double)N / 1.03e9 - 1) < 0.01);
  assert_true(cplab_bench_work_comm_total(w) == 0); /* one rank: no collective */
  /* PCP splits the pairs and tokens without losing any, balanced by DualChunkSwap. */
  for (int li = 1; li <= 3; li++) {
    cplab_bench_plan_cost c = cost_of(&m, li);
    double pairs = 0, maxp = 0;
    int64_t tokens = 0;
    for (int r = 0; r < c.world; r++) {
      pairs += c.ranks[r].indexer_pairs, tokens += c.ranks[r].prefill_tokens;
      maxp = fmax(maxp, c.ranks[r].indexer_pairs);
      assert_true(c.ranks[r].moe_rows == (int64_t)c.world * c.ranks[r].tokens); /* general path: all gathered rows */
      assert_true(c.ranks[r].comm_bytes[CPLAB_CW_MOE_REDUCE_SCATTER] > 0);
    }
    assert_true(tokens == N && pairs == causal_pairs((double)N));
    assert_true(maxp / (pairs / c.world) < 1.001);
    assert_false(c.moe_fast_path);
    cplab_bench_plan_cost_free(&c);
  }
  /* TP splits the per-head projections: rank work = replicated + heads/T x per head. */
  cplab_bench_plan_cost tp4 = cost_of(&m, 4);
  assert_true(tp4.ranks[3].proj_flop == (50987008.0 + 16 * 4653056.0) * (double)N);
  assert_true(tp4.ranks[0].indexer_pairs == causal_pairs((double)N)); /* the indexer is replicated under TP */
  /* TP's two all-reduces per layer (o_proj, the MoE shards' outputs), each of N rows of hidden bf16;
   * none of them under PCP alone. */
  const double *tb = tp4.ranks[0].comm_bytes;
  assert_true(tb[CPLAB_CW_O_PROJ_ALLREDUCE] > 0 && tb[CPLAB_CW_MOE_TP_ALLREDUCE] == tb[CPLAB_CW_O_PROJ_ALLREDUCE]);
  assert_true(tb[CPLAB_CW_O_PROJ_ALLREDUCE] == (double)N * 6144 * 2); /* GLM-5's hidden size 6144 */
  cplab_bench_plan_cost pcp4 = cost_of(&m, 2);
  assert_true(pcp4.ranks[0].comm_bytes[CPLAB_CW_MOE_TP_ALLREDUCE] == 0);
  cplab_bench_plan_cost_free(&pcp4);
  cplab_bench_plan_cost_free(&tp4);
  cplab_bench_plan_cost_free(&one);
}

static void test_decode_work(void **state) {
  (void)state;
  const int64_t L = 5000, B = 3, M = 4;
  cplab_bench_matrix m = matrix("tp1,tp4dcp4,pcp2dcp2", CPLAB_BENCH_DECODE, "5000", B, M);
  cplab_bench_plan_cost one = cost_of(&m, 0);
  /* Per step (averaged over the M steps): B tokens, each over its whole context L + s + 1. */
  double mean_keys = (double)L + (M - 1) / 2.0 + 1;
  assert_true(one.ranks[0].tokens == B && one.ranks[0].decode_tokens == B);
  assert_true(fabs(one.ranks[0].indexer_pairs - B * mean_keys) < 1e-6);
  assert_true(one.ranks[0].attn_rows == (double)(B * 2048));
  cplab_bench_plan_cost_free(&one);
  /* DCP: the ranks' local keys add up to the whole context; every rank holds every decode row. */
  for (int li = 1; li <= 2; li++) {
    cplab_bench_plan_cost c = cost_of(&m, li);
    double pairs = 0;
    for (int r = 0; r < c.world; r++) {
      pairs += c.ranks[r].indexer_pairs;
      assert_true(c.ranks[r].decode_tokens == B);
    }
    /* Every rank holds every decode row; each of the world/D DCP groups covers the context once. */
    int groups = c.world / m.parallel[li].dcp;
    assert_true(fabs(pairs / groups - B * mean_keys) < 1e-6);
    if (m.parallel[li].pcp > 1) assert_true(c.moe_fast_path); /* eager, all rows replicated: the all-reduce path */
    cplab_bench_plan_cost_free(&c);
  }
}

/* Head padding: GLM-5's 64 heads on tp4 are 16 a rank, run as 64 (sm90) or
 * 128 (sm100); the padded attention FLOP scale by run / real per kernel; a
 * DCP group's heads (tp4dcp4: 64) are padded apart. --head-pad's words. */
static void test_head_padding(void **state) {
  (void)state;
  cplab_bench_matrix m = matrix("tp4,tp4dcp4,pcp4", CPLAB_BENCH_MIXED, "4096+4@8192", 4, 1);
  for (int li = 0; li < 3; li++) {
    cplab_scenario *s = NULL;
    cplab_diag d = {0};
    assert_int_equal(cplab_bench_scenario(&m, &m.parallel[li], &m.workloads[0], CPLAB_GRAPH_NONE, &s, &d), 0);
    assert_string_equal(s->layout, "vllm"); /* an empty name is vllm */
    cplab_bench_plan_cost c = cost_of(&m, li);
    for (int pad = 0; pad <= 128; pad += 64) {
      cplab_bench_heads h;
      cplab_bench_heads_of(&s->model, &s->par, pad, &h);
      int tp = m.parallel[li].tp, dcp = m.parallel[li].dcp, real = 64 / tp, group = real * (dcp < tp ? dcp : tp);
      assert_true(h.real == real && h.group_real == group);
      assert_int_equal(h.run, pad ? (real + pad - 1) / pad * pad : real);
      assert_int_equal(h.group_run, pad ? (group + pad - 1) / pad * pad : group);
      cplab_bench_work w = c.ranks[0];
      assert_true(w.attn_flop_run == w.attn_flop); /* none until padded */
      cplab_bench_work_pad(&w, &s->model, &s->par, pad);
      double F = 2.0 * (576 + 512), want = F * (w.attn_prefill_rows * h.run + w.attn_decode_rows * h.group_run);
      assert_true(fabs(w.attn_flop_run - want) <= 1e-9 * want && w.attn_flop_run >= w.attn_flop);
      if (pad == 0) assert_true(fabs(w.attn_flop_run - w.attn_flop) <= 1e-9 * w.attn_flop);
      if (pad == 64 && tp == 4 && dcp == 1) assert_true(fabs(w.attn_flop_run - 4 * w.attn_flop) <= 1e-9 * w.attn_flop);
    }
    cplab_bench_plan_cost_free(&c);
    cplab_scenario_free(s);
  }
  /* The layout by name reaches the scenario. */
  snprintf(m.layout, sizeof m.layout, "block-aligned");
  cplab_scenario *s = NULL;
  cplab_diag d = {0};
  assert_int_equal(cplab_bench_scenario(&m, &m.parallel[0], &m.workloads[0], CPLAB_GRAPH_NONE, &s, &d), 0);
  assert_string_equal(s->layout, "block-aligned");
  cplab_scenario_free(s);
  int pad = 0;
  assert_true(cplab_head_pad_parse("auto", 2, &pad, &d) == 0 && pad == CPLAB_HEAD_PAD_AUTO);
  assert_true(cplab_head_pad_parse("none", 2, &pad, &d) == 0 && pad == CPLAB_HEAD_PAD_NONE);
  assert_true(cplab_head_pad_parse("128", 2, &pad, &d) == 0 && pad == 128);
  expect_usage(cplab_head_pad_parse("1", 2, &pad, &d), &d, "--head-pad 1: expected auto, none or a multiple");
  m.head_pad = CPLAB_HEAD_PAD_AUTO;
  assert_int_equal(cplab_bench_head_pad_of(&m), 64);
  m.head_pad = CPLAB_HEAD_PAD_NONE;
  assert_int_equal(cplab_bench_head_pad_of(&m), 0);
}

/* The walk skips a graph mode whose batches run as an earlier one's. */
static int count(void *ctx, const cplab_bench_config *c, cplab_diag *d) {
  (void)d;
  char *seen = ctx;
  strcat(seen, cplab_graph_mode_label(c->graph));
  strcat(seen, ";");
  return 0;
}

static void test_walk_skips_repeated_modes(void **state) {
  (void)state;
  cplab_bench_matrix m = matrix("pcp2", CPLAB_BENCH_PREFILL, "512", 1, 1);
  cplab_diag d = {0};
  assert_int_equal(cplab_bench_parse_graphs(&m, "eager,piecewise,full", &d), 0);
  assert_int_equal(cplab_bench_add_workloads(&m, CPLAB_BENCH_DECODE, "512", 1, 2, &d), 0);
  char seen[256] = "";
  assert_int_equal(cplab_bench_for_each(&m, count, seen, &d), 0);
  /* prefill: full runs piecewise (skipped); decode: full runs FULL graphs. */
  assert_string_equal(seen, "eager;piecewise;eager;piecewise;full;");
}

/* The shared helpers the engine counts and moves keys with: a position's
 * owner and local index invert cplab_kv_position, each rank's local length
 * counts exactly its positions, and the element sizes of the collectives. */
static void test_kv_position_and_dtype_bytes(void **state) {
  (void)state;
  const int Is[] = {1, 2, 4, 64}, Ds[] = {1, 2, 3, 4, 8};
  for (size_t a = 0; a < sizeof Is / sizeof Is[0]; a++)
    for (size_t b = 0; b < sizeof Ds / sizeof Ds[0]; b++) {
      int I = Is[a], D = Ds[b];
      int64_t held[8] = {0};
      for (int64_t p = 0; p < 1000; p++) {
        int o = cplab_kv_owner(p, I, D);
        assert_int_equal(cplab_kv_position(cplab_kv_local_idx(p, I, D), o, I, D), p);
        assert_int_equal(cplab_kv_local_idx(p, I, D), held[o]); /* local indices count up per rank */
        held[o]++;
      }
      for (int o = 0; o < D; o++) assert_int_equal(cplab_kv_local_len(1000, o, I, D), held[o]);
    }
  assert_int_equal(cplab_dtype_bytes(CPLAB_DT_BF16), 2);
  assert_int_equal(cplab_dtype_bytes(CPLAB_DT_FP32), 4);
  assert_int_equal(cplab_dtype_bytes(CPLAB_DT_U8), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_labels),       cmocka_unit_test(test_lists),
      cmocka_unit_test(test_scenarios_hold_the_workload), cmocka_unit_test(test_prefill_work),
      cmocka_unit_test(test_decode_work),         cmocka_unit_test(test_walk_skips_repeated_modes),
      cmocka_unit_test(test_kv_position_and_dtype_bytes), cmocka_unit_test(test_head_padding),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
