/* cplab-bench --dry-run: see dryrun.h. */
#include "dryrun.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/layout.h"
#include "cplab/parallel.h"

void cplab_bench_plan_cost_free(cplab_bench_plan_cost *c) {
  free(c->ranks);
  memset(c, 0, sizeof *c);
}

/* acc += w / steps, field by field. */
static void accumulate(cplab_bench_work *acc, const cplab_bench_work *w, double steps) {
  acc->tokens += w->tokens, acc->prefill_tokens += w->prefill_tokens, acc->decode_tokens += w->decode_tokens;
  acc->moe_rows += w->moe_rows;
  acc->proj_flop += w->proj_flop / steps, acc->moe_flop += w->moe_flop / steps;
  acc->indexer_pairs += w->indexer_pairs / steps, acc->indexer_flop += w->indexer_flop / steps;
  acc->logits_bytes += w->logits_bytes / steps;
  acc->prefill_pairs += w->prefill_pairs / steps, acc->decode_pairs += w->decode_pairs / steps;
  acc->attn_rows += w->attn_rows / steps, acc->attn_flop += w->attn_flop / steps;
  acc->attn_flop_run += w->attn_flop_run / steps;
  acc->attn_prefill_rows += w->attn_prefill_rows / steps, acc->attn_decode_rows += w->attn_decode_rows / steps;
  for (int c = 0; c < CPLAB_CW_COUNT; c++) acc->comm_bytes[c] += w->comm_bytes[c] / steps;
}

int cplab_bench_plan_cost_of(const cplab_scenario *s, cplab_bench_plan_cost *out, cplab_diag *d) {
  memset(out, 0, sizeof *out);
  const cplab_layout *layout = cplab_layout_find(s->layout);
  if (!layout) CPLAB_FAIL(d, CPLAB_ENOTFOUND, "unknown layout '%s'", s->layout);
  out->world = cplab_parallel_world(&s->par);
  out->pcp = s->par.pcp;
  if (!(out->ranks = calloc((size_t)out->world, sizeof *out->ranks))) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = 0;
  for (size_t st = 0; st < s->num_steps && !rc; st++) {
    cplab_step_input in = {&s->steps[st], st, s->seed, &s->par, &s->model, layout};
    for (int r = 0; r < out->world && !rc; r++) {
      cplab_rank_plan *p = NULL;
      cplab_bench_work w;
      rc = cplab_rank_plan_derive(&in, r, 0, &p, d);
      if (!rc) rc = cplab_bench_work_of(&in, p, &w, d);
      if (!rc) accumulate(&out->ranks[r], &w, (double)s->num_steps);
      if (!rc && st == 0 && r == 0) {
        snprintf(out->runtime_mode, sizeof out->runtime_mode, "%s", cplab_graph_mode_name(p->sched.runtime_mode));
        out->moe_fast_path = p->sched.moe_fast_path;
      }
      cplab_rank_plan_free(p);
      if (rc) cplab_diag_prefix(d, "step %zu, rank %d: ", st, r);
    }
  }
  /* Token and row counts are per step too. */
  for (int r = 0; r < out->world; r++) {
    cplab_bench_work *w = &out->ranks[r];
    int64_t n = (int64_t)s->num_steps;
    w->tokens /= n, w->prefill_tokens /= n, w->decode_tokens /= n, w->moe_rows /= n;
  }
  if (rc) cplab_bench_plan_cost_free(out);
  return rc;
}

/* max / mean of one field over the ranks (1 when all are 0). */
static double imbalance(const cplab_bench_plan_cost *c, size_t offset) {
  double mx = 0, sum = 0;
  for (int r = 0; r < c->world; r++) {
    double v = *(const double *)(const void *)((const char *)&c->ranks[r] + offset);
    sum += v, mx = v > mx ? v : mx;
  }
  return sum > 0 ? mx / (sum / c->world) : 1.0;
}

static void print_text(FILE *out, const char *title, const cplab_bench_plan_cost *c, const cplab_bench_heads *h) {
  const char *moe = c->pcp == 1        ? "experts over TP, no PCP path"
                    : c->moe_fast_path ? "PCP fast path (all-reduce)"
                                       : "PCP general path (all-gather + reduce-scatter)";
  fprintf(out, "%s\n  runtime graph mode %s, MoE %s; query heads per rank %d, run %d", title, c->runtime_mode, moe,
          h->real, h->run);
  if (h->group_real != h->real) fprintf(out, " (decode rows: DCP group's %d, run %d)", h->group_real, h->group_run);
  if (h->pad > 1) fprintf(out, ", padded to a multiple of %d", h->pad);
  fprintf(out, "; per rank, per layer and step:\n  %5s %9s %9s %10s %10s %12s %10s %10s %10s\n", "rank", "tokens",
          "moe_rows", "proj_GF", "moe_GF", "idx_Mpairs", "attn_GF", "attnrun_GF", "comm_MB");
  for (int r = 0; r < c->world; r++) {
    const cplab_bench_work *w = &c->ranks[r];
    fprintf(out, "  %5d %9lld %9lld %10.2f %10.2f %12.2f %10.2f %10.2f %10.3f\n", r, (long long)w->tokens,
            (long long)w->moe_rows, w->proj_flop / 1e9, w->moe_flop / 1e9, w->indexer_pairs / 1e6, w->attn_flop / 1e9,
            w->attn_flop_run / 1e9, cplab_bench_work_comm_total(w) / 1e6);
  }
  fprintf(out, "  max/mean over ranks: indexer %.3f, attention %.3f, MoE %.3f\n\n",
          imbalance(c, offsetof(cplab_bench_work, indexer_pairs)), imbalance(c, offsetof(cplab_bench_work, attn_flop)),
          imbalance(c, offsetof(cplab_bench_work, moe_flop)));
}

static json_t *work_json(const cplab_bench_work *w) {
  json_t *comm = json_object();
  for (int c = 0; c < CPLAB_CW_COUNT; c++)
    if (w->comm_bytes[c] > 0) json_object_set_new(comm, cplab_coll_what_name((cplab_coll_what)c), json_real(w->comm_bytes[c]));
  return json_pack("{s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:o}", "tokens",
                   (json_int_t)w->tokens, "prefill_tokens", (json_int_t)w->prefill_tokens, "decode_tokens",
                   (json_int_t)w->decode_tokens, "moe_rows", (json_int_t)w->moe_rows, "proj_flop", w->proj_flop,
                   "moe_flop", w->moe_flop, "indexer_pairs", w->indexer_pairs, "indexer_flop", w->indexer_flop,
                   "logits_bytes", w->logits_bytes, "attn_flop", w->attn_flop, "attn_flop_run", w->attn_flop_run,
                   "attn_rows", w->attn_rows, "comm_bytes", comm);
}

static json_t *config_json(const cplab_bench_parallel *l, const char *workload, cplab_graph_mode g,
                           const cplab_bench_plan_cost *c, const cplab_bench_heads *h) {
  json_t *ranks = json_array();
  for (int r = 0; r < c->world; r++) json_array_append_new(ranks, work_json(&c->ranks[r]));
  const char *moe = c->pcp == 1 ? "tp" : c->moe_fast_path ? "pcp_fast" : "pcp_general";
  return json_pack("{s:s, s:i, s:i, s:i, s:{s:i, s:i, s:i, s:i}, s:s, s:s, s:s, s:s, s:o}", "parallel", l->label, "tp",
                   l->tp, "pcp", l->pcp, "dcp", l->dcp, "heads", "real", h->real, "run", h->run, "group_real",
                   h->group_real, "group_run", h->group_run, "workload", workload, "graph", cplab_graph_mode_label(g),
                   "runtime_mode", c->runtime_mode, "moe_path", moe, "ranks", ranks);
}

/* 1 when graph index gi's batches run in the same runtime mode as an earlier
 * graph of the list (so the configuration would be measured twice). */
static int runs_as_earlier(char modes[3][24], int gi) {
  for (int j = 0; j < gi; j++)
    if (modes[j][0] && strcmp(modes[j], modes[gi]) == 0) return 1;
  return 0;
}

static int each_graph(const cplab_bench_matrix *m, int li, int wi, cplab_bench_config_fn fn, void *ctx,
                      cplab_diag *d) {
  char modes[3][24] = {{0}};
  int rc = 0;
  for (int gi = 0; gi < m->num_graphs && !rc; gi++) {
    cplab_bench_config c = {&m->parallel[li], &m->workloads[wi], m->graphs[gi], NULL, NULL, {0}, ""};
    cplab_scenario *s = NULL;
    cplab_bench_plan_cost cost = {0};
    char wl[96];
    cplab_bench_workload_label(c.workload, wl, sizeof wl);
    snprintf(c.title, sizeof c.title, "%s, %s, %s", c.parallel->label, wl, cplab_graph_mode_label(c.graph));
    rc = cplab_bench_scenario(m, c.parallel, c.workload, c.graph, &s, d);
    if (!rc) rc = cplab_bench_plan_cost_of(s, &cost, d);
    if (!rc) cplab_bench_heads_of(&s->model, &s->par, cplab_bench_head_pad_of(m), &c.heads);
    for (int r = 0; !rc && r < cost.world; r++) cplab_bench_work_pad(&cost.ranks[r], &s->model, &s->par, c.heads.pad);
    if (!rc) snprintf(modes[gi], sizeof modes[gi], "%s", cost.runtime_mode);
    c.scenario = s, c.cost = &cost;
    if (!rc && !runs_as_earlier(modes, gi)) rc = fn(ctx, &c, d);
    cplab_bench_plan_cost_free(&cost);
    cplab_scenario_free(s);
  }
  return rc;
}

int cplab_bench_head_pad_of(const cplab_bench_matrix *m) {
  return m->head_pad == CPLAB_HEAD_PAD_AUTO ? CPLAB_HEAD_PAD_SM90 : m->head_pad;
}

int cplab_bench_for_each(const cplab_bench_matrix *m, cplab_bench_config_fn fn, void *ctx, cplab_diag *d) {
  int rc = 0;
  for (int li = 0; li < m->num_parallel && !rc; li++)
    for (int wi = 0; wi < m->num_workloads && !rc; wi++) rc = each_graph(m, li, wi, fn, ctx, d);
  return rc;
}

typedef struct dry_ctx {
  FILE *out;
  json_t *all; /* NULL: text */
} dry_ctx;

static int dry_one(void *ctx, const cplab_bench_config *c, cplab_diag *d) {
  dry_ctx *x = ctx;
  char wl[96];
  cplab_bench_workload_label(c->workload, wl, sizeof wl);
  if (!x->all) print_text(x->out, c->title, c->cost, &c->heads);
  else if (json_array_append_new(x->all, config_json(c->parallel, wl, c->graph, c->cost, &c->heads)) != 0)
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  return 0;
}

int cplab_bench_dry_run(const cplab_bench_matrix *m, FILE *out, int json, cplab_diag *d) {
  dry_ctx x = {out, json ? json_array() : NULL};
  if (json && !x.all) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int pad = cplab_bench_head_pad_of(m);
  if (!json) {
    fprintf(out, "# layout %s; attention heads ", m->layout[0] ? m->layout : "vllm");
    if (pad > 1)
      fprintf(out, "padded to a multiple of %d%s (attnrun_GF counts the padding heads too)\n\n", pad,
              m->head_pad == CPLAB_HEAD_PAD_AUTO ? " (--head-pad auto without a device: sm90's)" : "");
    else
      fputs("not padded (--head-pad none)\n\n", out);
  }
  int rc = cplab_bench_for_each(m, dry_one, &x, d);
  if (!rc && json) {
    json_t *doc = json_pack("{s:s, s:s, s:s, s:i, s:O}", "cplab_bench_dry_run", "2.0.0", "preset", m->preset, "layout",
                            m->layout[0] ? m->layout : "vllm", "head_pad", cplab_bench_head_pad_of(m), "configurations",
                            x.all);
    if (!doc || json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
      rc = cplab_diag_set(d, CPLAB_EIO, "cannot write the dry run's JSON");
    else
      fputc('\n', out);
    json_decref(doc);
  }
  json_decref(x.all);
  return rc;
}
