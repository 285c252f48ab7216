/* The simulator's report, as text for people and JSON for machines. Both are
 * deterministic: no times, hosts or process counts. */
#include <stdio.h>

#include "config.h"
#include "sim.h"

static json_t *int_array(const int *v, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
  return a;
}

static json_t *summary_json(const cplab_scenario *s) {
  cplab_workload_summary w;
  cplab_scenario_summarize(s, &w);
  return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "steps", (json_int_t)w.steps, "requests",
                   (json_int_t)w.requests, "prefills", (json_int_t)w.prefills, "decodes", (json_int_t)w.decodes,
                   "new_tokens", (json_int_t)w.new_tokens, "max_context", (json_int_t)w.max_extent);
}

static const char *moe_path_name(int fast) { return fast ? "all-reduce fast path" : "gather + reduce-scatter"; }

static json_t *plans_json(const cplab_scenario *s, const sim_plans *pl) {
  const cplab_layout *layout = cplab_layout_find(s->layout);
  json_t *steps = json_array();
  for (size_t i = 0; i < pl->num_steps; i++) {
    const sim_step_info *info = &pl->info[i];
    json_t *ranks = json_array();
    for (int r = 0; r < pl->world; r++) {
      const int64_t *row = pl->rows + (i * (size_t)pl->world + (size_t)r) * SIM_PR_FIELDS;
      char digest[24];
      snprintf(digest, sizeof digest, "%016llx", (unsigned long long)row[SIM_PR_SHARED_DIGEST]);
      json_array_append_new(
          ranks, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "rank", (json_int_t)row[SIM_PR_RANK], "rows",
                           (json_int_t)row[SIM_PR_ROWS], "decode_rows", (json_int_t)row[SIM_PR_DECODE_ROWS], "tokens",
                           (json_int_t)row[SIM_PR_TOKENS], "prefill_chunks", (json_int_t)row[SIM_PR_PREFILL_CHUNKS],
                           "indexer_chunks", (json_int_t)row[SIM_PR_INDEXER_CHUNKS], "collectives",
                           (json_int_t)row[SIM_PR_COLLECTIVES], "shared_digest", digest));
    }
    json_array_append_new(
        steps, json_pack("{s:I, s:s, s:s, s:b, s:{s:I, s:I, s:I}, s:I, s:o}", "step", (json_int_t)i, "graph_mode",
                         cplab_graph_mode_name((cplab_graph_mode)info->runtime_mode), "moe_path",
                         moe_path_name(info->moe_fast_path), "all_rows_replicated", info->all_rows_replicated,
                         "dispatch", "rows", (json_int_t)info->dispatch_rows, "tokens",
                         (json_int_t)info->dispatch_tokens, "longest", (json_int_t)info->dispatch_longest,
                         "padded_tokens", (json_int_t)info->padded_tokens, "ranks", ranks));
  }
  json_t *first = json_array();
  for (int i = 0; i < pl->kept; i++) json_array_append_new(first, json_string(pl->first[i]));
  json_t *out = json_pack("{s:s, s:b, s:o, s:I, s:o}", "layout", s->layout, "mutant", layout && layout->mutant,
                          "steps", steps, "disagreements", (json_int_t)pl->disagreements, "first_disagreements", first);
  if (pl->checked) {
    json_t *by_rule = json_object(), *vfirst = json_array();
    for (int r = 0; r < CPLAB_RULE_COUNT; r++)
      json_object_set_new(by_rule, cplab_check_rule_name((cplab_check_rule)r), json_integer(pl->check.by_rule[r]));
    for (int i = 0; i < pl->check.kept; i++) json_array_append_new(vfirst, json_string(pl->check.first[i]));
    json_object_set_new(out, "invariants",
                        json_pack("{s:I, s:I, s:o, s:o}", "checks", (json_int_t)pl->check.checks, "violations",
                                  (json_int_t)pl->check.violations, "by_rule", by_rule, "first_violations", vfirst));
  }
  if (pl->numeric_layers)
    json_object_set_new(out, "numeric",
                        json_pack("{s:i, s:I}", "layers", pl->numeric_layers, "sampled_rows",
                                  (json_int_t)pl->numeric_rows));
  return out;
}

json_t *sim_report_json(const cplab_scenario *s, const cplab_rank_table *t, const sim_plans *plans) {
  json_t *ranks = json_array();
  for (int r = 0; r < t->world; r++) {
    const cplab_rank_ids *id = &t->ids[r];
    json_t *groups = json_object();
    for (int k = 0; k < 3; k++)
      json_object_set_new(groups, k == 0 ? "tp" : k == 1 ? "pcp" : "dcp",
                          int_array(cplab_rank_table_members(t, (cplab_group_kind)k, r),
                                    cplab_group_size(&t->par, (cplab_group_kind)k)));
    json_array_append_new(ranks, json_pack("{s:i, s:i, s:i, s:i, s:i, s:o}", "rank", id->rank, "pp", id->pp, "pcp",
                                           id->pcp, "tp", id->tp, "dcp_rank", id->dcp_rank, "groups", groups));
  }
  return json_pack("{s:s, s:s, s:o, s:o, s:{s:i, s:s, s:s, s:o}, s:o}", "program", "cplab-sim", "version",
                   PACKAGE_VERSION, "scenario", cplab_scenario_to_json(s, 0), "workload", summary_json(s),
                   "rank_table", "world_size", t->world, "q_gather_group",
                   cplab_q_gather_name(cplab_q_gather_group(&t->par)), "decode_combine",
                   cplab_combine_name(cplab_combine_kind(&t->par)), "ranks", ranks, "plans", plans_json(s, plans));
}

/* "{a,b,c}", padded to width unless it ends the line. */
static void print_members(FILE *out, const int *m, int n, int width) {
  char buf[256];
  int used = snprintf(buf, sizeof buf, "{");
  for (int i = 0; i < n && used < (int)sizeof buf - 16; i++) used += snprintf(buf + used, sizeof buf - (size_t)used, "%s%d", i ? "," : "", m[i]);
  if (used >= (int)sizeof buf - 16) used += snprintf(buf + used, sizeof buf - (size_t)used, ",...");
  snprintf(buf + used, sizeof buf - (size_t)used, "}");
  fprintf(out, "  %-*s", width, buf);
}

static void print_members_last(FILE *out, const int *m, int n) {
  print_members(out, m, n, 0);
}

static void plans_text(FILE *out, const cplab_scenario *s, const sim_plans *pl) {
  const cplab_layout *layout = cplab_layout_find(s->layout);
  fprintf(out, "\nplans (layout %s%s; every rank derived on its own, digests compared)\n", s->layout,
          layout && layout->mutant ? ", a MUTANT" : "");
  for (size_t i = 0; i < pl->num_steps; i++) {
    const sim_step_info *info = &pl->info[i];
    const cplab_step *st = &s->steps[i];
    size_t prefills = 0;
    int64_t tokens = 0;
    for (size_t j = 0; j < st->num_requests; j++) {
      prefills += st->requests[j].phase == CPLAB_PHASE_PREFILL;
      tokens += st->requests[j].new_tokens;
    }
    fprintf(out,
            "step %zu: requests %zu (prefill %zu, decode %zu), new tokens %lld; graphs %s, MoE %s; dispatch %lld "
            "rows, %lld tokens, longest %lld\n",
            i, st->num_requests, prefills, st->num_requests - prefills, (long long)tokens,
            cplab_graph_mode_name((cplab_graph_mode)info->runtime_mode), moe_path_name(info->moe_fast_path),
            (long long)info->dispatch_rows, (long long)info->dispatch_tokens, (long long)info->dispatch_longest);
    fprintf(out, "  %4s %5s %7s %14s %14s %11s  %s\n", "rank", "rows", "tokens", "prefill-chunks", "indexer-chunks",
            "collectives", "shared-plan digest");
    for (int r = 0; r < pl->world; r++) {
      const int64_t *row = pl->rows + (i * (size_t)pl->world + (size_t)r) * SIM_PR_FIELDS;
      fprintf(out, "  %4lld %5lld %7lld %14lld %14lld %11lld  %016llx\n", (long long)row[SIM_PR_RANK],
              (long long)row[SIM_PR_ROWS], (long long)row[SIM_PR_TOKENS], (long long)row[SIM_PR_PREFILL_CHUNKS],
              (long long)row[SIM_PR_INDEXER_CHUNKS], (long long)row[SIM_PR_COLLECTIVES],
              (unsigned long long)row[SIM_PR_SHARED_DIGEST]);
    }
  }
  if (pl->disagreements == 0)
    fprintf(out, "agreement: every rank derived the same shared plan in all %zu steps; collectives agree within "
                 "every TP, PCP and DCP group\n",
            pl->num_steps);
  else
    fprintf(out, "DISAGREEMENT: %lld (rank, step) pairs differ; first: %s\n", (long long)pl->disagreements,
            pl->first[0]);
  if (pl->checked) {
    fprintf(out, "invariants (vllm-pcp-dcp.md §10.1): %lld checks, %lld violations\n", (long long)pl->check.checks,
            (long long)pl->check.violations);
    for (int i = 0; i < pl->check.kept; i++) fprintf(out, "  %s\n", pl->check.first[i]);
  }
  if (pl->numeric_layers)
    fprintf(out, "numeric pass: %lld sampled rows (all ranks) over %d layer(s)%s\n", (long long)pl->numeric_rows,
            pl->numeric_layers, pl->numeric_rows ? "" : " (nothing sampled)");
}

void sim_report_text(FILE *out, const cplab_scenario *s, const cplab_rank_table *t, const sim_plans *plans) {
  const cplab_model *m = &s->model;
  const cplab_parallel *p = &s->par;
  cplab_workload_summary w;
  cplab_scenario_summarize(s, &w);
  fprintf(out, "scenario  %s (%s)\n", s->name, s->origin);
  if (s->description && *s->description) fprintf(out, "          %s\n", s->description);
  fprintf(out,
          "model     %s: hidden %lld, %lld layers, %lld heads, MLA head %lld (kv_lora %lld + rope %lld), "
          "v %lld, indexer %lld heads x %lld, top-k %lld, softmax scale %.6g\n",
          m->preset, (long long)m->hidden_size, (long long)m->num_layers, (long long)m->num_heads,
          (long long)cplab_model_mla_head_dim(m), (long long)m->kv_lora_rank, (long long)m->qk_rope_head_dim,
          (long long)m->v_head_dim, (long long)m->index_n_heads, (long long)m->index_head_dim,
          (long long)m->index_topk, cplab_model_softmax_scale(m));
  fprintf(out,
          "parallel  tp %d, pcp %d, dcp %d, pp %d -> world %d; interleave %d, block %d, max_model_len %lld, "
          "graphs %s\n",
          p->tp, p->pcp, p->dcp, p->pp, t->world, p->interleave, p->block_size, (long long)p->max_model_len,
          cplab_graph_mode_name(p->graph_mode));
  if (p->num_spec_tokens)
    fprintf(out, "mtp       %d speculative tokens: every decode row holds 1 + %d query tokens\n", p->num_spec_tokens,
            p->num_spec_tokens);
  fprintf(out, "layout    %s, seed %llu, %lld sampled rows\n", s->layout, (unsigned long long)s->seed,
          (long long)s->sampled_rows);
  fprintf(out, "workload  %zu steps%s: %zu requests (%zu prefills, %zu decodes), %lld new tokens, max context %lld\n",
          w.steps, s->has_generator ? " (generated, mt19937)" : "", w.requests, w.prefills, w.decodes,
          (long long)w.new_tokens, (long long)w.max_extent);
  fprintf(out, "\nrank table (TP fastest; DCP groups span PCP first; q-gather over %s; decode combine %s)\n",
          cplab_q_gather_name(cplab_q_gather_group(p)), cplab_combine_name(cplab_combine_kind(p)));
  fprintf(out, "  %4s %3s %4s %3s %8s  %-16s  %-16s  %s\n", "rank", "pp", "pcp", "tp", "dcp_rank", "TP group",
          "PCP group", "DCP group");
  for (int r = 0; r < t->world; r++) {
    const cplab_rank_ids *id = &t->ids[r];
    fprintf(out, "  %4d %3d %4d %3d %8d", id->rank, id->pp, id->pcp, id->tp, id->dcp_rank);
    for (int k = 0; k < 2; k++)
      print_members(out, cplab_rank_table_members(t, (cplab_group_kind)k, r),
                    cplab_group_size(p, (cplab_group_kind)k), 16);
    print_members_last(out, cplab_rank_table_members(t, CPLAB_GROUP_DCP, r), p->dcp);
    fputc('\n', out);
  }
  plans_text(out, s, plans);
}
