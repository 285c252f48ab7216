/* cplab-trace: validate, list and dump cplab traces.
 *   cplab-trace validate PATH      exit 0 valid, 1 invalid (the first problem), 2 error
 *   cplab-trace ls PATH            what the file (and, for a run, its ranks) holds
 *   cplab-trace dump PATH [--step N] [--rank R]   one step's plan, readable
 *   cplab-trace rows PATH [--step N] [--rank R]   each local token's workspace
 *                                  and deinterleaved indexer-key rows
 * ls, dump and rows exit 0, or 2 (h5diff's error) when the file cannot be read or
 * the step or rank asked for is not in it: only validate judges a file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/cli.h"
#include "cplab/trace.h"

#define PROG "cplab-trace"

enum { OPT_STEP = CPLAB_OPT_PROGRAM, OPT_RANK };
typedef struct opts {
  uint64_t step;
  int rank;
} opts;

static int tool_option(void *ctx, int opt, const char *arg, cplab_diag *d) {
  opts *o = ctx;
  uint64_t v;
  if (cplab_parse_u64(arg, &v) != 0 || v > INT32_MAX)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: expected a non-negative integer, got '%s'", opt == OPT_STEP ? "--step" : "--rank", arg);
  if (opt == OPT_STEP) o->step = v;
  else o->rank = (int)v;
  return 0;
}

static void usage(FILE *out) {
  fputs("Usage: " PROG " COMMAND PATH [OPTIONS]\n"
        "Commands:\n"
        "  validate PATH     check the file (a run file: also every rank file) against the schema\n"
        "                    (traces/SCHEMA.md); exit 0 valid, 1 invalid, 2 error\n"
        "  ls PATH           list what the file holds; exit 0, 2 error\n"
        "  dump PATH         print one step's plan of one rank readably; exit 0, 2 error\n"
        "                    (an unreadable or damaged file, a step or rank not in it)\n"
        "  rows PATH         print, for every local token of one step of one rank, its row of\n"
        "                    the gathered prefill workspace and of the deinterleaved indexer\n"
        "                    keys, derived from the stored plan by the run's layout (-1: the\n"
        "                    token's row does not use that plan); exit 0, 2 error\n"
        "Options:\n"
        "  --step N          step to dump or list (default 0)\n"
        "  --rank R          rank to dump or list when PATH is a run file (default 0)\n\n",
        out);
  cplab_cli_help_common(out);
}

static void print_info(const cplab_trace_info *in, const char *path) {
  printf("%s: cplab trace %s, %s file from %s", path, in->schema, in->kind, in->producer);
  if (in->rank >= 0) printf(", rank %d", in->rank);
  printf("\n  scenario %s, layout %s, world %d, %lld steps\n", in->scenario, in->layout, in->world_size,
         (long long)in->num_steps);
  if (in->warning[0]) printf("  warning: %s\n", in->warning);
}

static int cmd_ls(cplab_trace *t, const char *path, cplab_diag *d) {
  const cplab_trace_info *in = cplab_trace_get_info(t);
  print_info(in, path);
  if (strcmp(in->kind, "run") == 0) {
    for (int r = 0; r < in->world_size; r++) {
      cplab_trace *rt = NULL;
      int rc = cplab_trace_open_rank(t, r, &rt, d);
      if (rc) return rc;
      printf("  rank %d: %lld steps\n", r, (long long)cplab_trace_get_info(rt)->num_steps);
      cplab_trace_close(rt);
    }
    return 0;
  }
  printf("  %6s %5s %7s %14s %14s %11s %s\n", "step", "rows", "tokens", "prefill-chunks", "indexer-chunks",
         "collectives", "token-maps");
  for (int64_t s = 0; s < in->num_steps; s++) {
    cplab_rank_plan *p = NULL;
    int rc = cplab_trace_read_plan(t, (size_t)s, &p, d);
    if (rc) return rc;
    printf("  %6lld %5d %7lld %14d %14d %11d %s\n", (long long)s, p->split.num_rows, (long long)p->split.num_tokens,
           p->prefill.num_chunks, p->indexer.num_chunks, p->num_collectives, p->slot_mapping ? "yes" : "no");
    cplab_rank_plan_free(p);
  }
  return 0;
}

static void dump_plan(const cplab_rank_plan *p, size_t step) {
  printf("step %zu of rank %d (pcp %d, tp %d, dcp_rank %d): %d requests, %lld new tokens in the step\n", step,
         p->ids.rank, p->ids.pcp, p->ids.tp, p->ids.dcp_rank, p->sched.num_requests, (long long)p->total_tokens);
  printf("schedule: graphs %s, MoE %s, all rows replicated %d, padded tokens %lld, dispatch %d rows / %d tokens\n",
         cplab_graph_mode_name(p->sched.runtime_mode), p->sched.moe_fast_path ? "all-reduce fast path" : "gather + reduce-scatter",
         p->sched.all_rows_replicated, (long long)p->sched.padded_num_tokens, p->sched.dispatch_rows,
         p->sched.dispatch_tokens);
  printf("rows (%d, %d decode):\n  %4s %4s %7s %9s %7s %7s %9s %9s %7s\n", p->split.num_rows, p->split.num_decode_rows,
         "row", "req", "phase", "replicated", "start", "len", "start_pos", "seq_len", "tokens@");
  for (int i = 0; i < p->split.num_rows; i++) {
    const cplab_row *r = &p->split.rows[i];
    printf("  %4d %4d %7s %9d %7lld %7lld %9lld %9lld %7lld\n", i, r->req,
           r->dummy ? "dummy" : r->is_prefill ? "prefill" : "decode", r->replicated, (long long)r->start,
           (long long)r->len, (long long)r->start_pos, (long long)r->seq_len, (long long)r->token_offset);
  }
  const cplab_prefill_plan *f = &p->prefill;
  printf("gathered prefill plan: %s", f->active ? "" : "inactive\n");
  if (f->active) {
    printf("W %d, budget %lld rows per rank, %d regions, %d chunks\n", f->W, (long long)f->budget, f->num_regions, f->num_chunks);
    for (int k = 0; k < f->num_regions; k++)
      printf("  region %d: request %d, extent %lld, rows_per_rank %lld, chunk %d, workspace_start %lld\n", k,
             f->region_req[k], (long long)f->extent[k], (long long)f->rows_per_rank[k], f->region_chunk[k],
             (long long)f->workspace_start[k]);
    for (int c = 0; c < f->num_chunks; c++)
      printf("  chunk %d: regions %d..%d, shard_rows %lld, local tokens [%lld, %lld)\n", c, f->chunks[c].first_region,
             f->chunks[c].first_region + f->chunks[c].num_regions - 1, (long long)f->chunks[c].shard_rows,
             (long long)f->chunks[c].token_begin, (long long)f->chunks[c].token_end);
  }
  const cplab_indexer_plan *x = &p->indexer;
  printf("indexer plan: %s", x->active ? "" : "inactive\n");
  if (x->active) {
    printf("%d chunks\n", x->num_chunks);
    for (int c = 0; c < x->num_chunks; c++) {
      const cplab_indexer_chunk *ch = &x->chunks[c];
      printf("  chunk %d: regions %d..%d, %lld keys, %lld shard rows per rank, queries [%lld, %lld)%s%s\n", c,
             ch->first_region, ch->first_region + ch->num_regions - 1, (long long)ch->key_rows,
             (long long)ch->padded_total, (long long)ch->q_begin, (long long)ch->q_end,
             ch->query_split ? ", query sub-chunk" : "", ch->skip_kv_gather ? ", reuses the gathered keys" : "");
    }
  }
  printf("collectives (%d, in issue order):\n", p->num_collectives);
  for (int i = 0; i < p->num_collectives; i++) {
    const cplab_collective *c = &p->collectives[i];
    printf("  %2d %-15s %-4s %-5s %12lld  %s\n", i, cplab_coll_kind_name(c->kind), cplab_group_name(c->group),
           cplab_dtype_name(c->dtype), (long long)c->count, cplab_coll_what_name(c->what));
  }
}

/* The rank's groups as its file records them (schema 1.1); files of 1.0
 * say so instead. */
static int dump_groups(cplab_trace *t, cplab_diag *d) {
  static const char *const kinds[3] = {"TP", "PCP", "DCP"};
  cplab_trace_groups g;
  int rc = cplab_trace_read_groups(t, &g, d);
  if (rc == CPLAB_ENOTFOUND) {
    cplab_diag_clear(d);
    printf("groups: not recorded (schema %s)\n", cplab_trace_get_info(t)->schema);
    return 0;
  }
  if (rc) return rc;
  printf("groups: pp_rank %d, pcp_rank %d, tp_rank %d, dcp_rank %d\n", g.ids.pp, g.ids.pcp, g.ids.tp, g.ids.dcp_rank);
  const int index[3] = {g.ids.tp_group, g.ids.pcp_group, g.ids.dcp_group};
  for (int k = 0; k < 3; k++) {
    printf("  %s group %d:", kinds[k], index[k]);
    for (int i = 0; i < g.size[k]; i++) printf(" %d", g.members[k][i]);
    printf("\n");
  }
  cplab_trace_groups_fini(&g);
  return 0;
}

/* Every local token's gathered-workspace row (§4.2) and deinterleaved
 * indexer-key row (§4.3), derived from the stored plan by the run's layout
 * through the same functions cplab-sim checks and computes with, so the
 * rules live in one place; -1 where the token's row does not use the plan
 * (decode rows, or no gathered plan in the step). */
static int print_token_rows(const cplab_trace *t, cplab_rank_plan *p, size_t step, cplab_diag *d) {
  const char *name = cplab_trace_get_info(t)->layout;
  const cplab_layout *l = cplab_layout_find(name);
  if (!l) CPLAB_FAIL(d, CPLAB_ENOTFOUND, "the trace's layout '%s' is not one this cplab knows (--list-layouts)", name);
  p->layout = l;
  printf("step %zu of rank %d, layout %s: %lld local tokens\n", step, p->ids.rank, name, (long long)p->split.num_tokens);
  printf("  %6s %4s %7s %9s %13s %12s\n", "token", "req", "phase", "position", "workspace_row", "deinterleave");
  for (int i = 0; i < p->split.num_rows; i++) {
    const cplab_row *r = &p->split.rows[i];
    int kw = r->is_prefill && p->prefill.active ? cplab_prefill_region_of(&p->prefill, r->req) : -1;
    int ki = r->is_prefill && p->indexer.active ? cplab_indexer_region_of(&p->indexer, r->req) : -1;
    for (int64_t j = 0; j < r->len; j++) {
      int64_t pos = r->start_pos + j;
      int64_t ws = kw < 0 ? -1 : cplab_layout_workspace_row(l, &p->env, &p->prefill, kw, pos);
      int64_t de = ki < 0 ? -1 : cplab_layout_deinterleave(l, &p->env, &p->indexer, ki, pos);
      printf("  %6lld %4d %7s %9lld %13lld %12lld\n", (long long)(r->token_offset + j), r->req,
             r->is_prefill ? "prefill" : "decode", (long long)pos, (long long)ws, (long long)de);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {CPLAB_CLI_COMMON_LONGOPTS, {"step", required_argument, NULL, OPT_STEP},
                                           {"rank", required_argument, NULL, OPT_RANK}, {NULL, 0, NULL, 0}};
  cplab_cli cli;
  cplab_diag d = {0};
  opts o = {0, 0};
  int first;
  cplab_cli_init(&cli, NULL);
  if (cplab_cli_parse(argc, argv, CPLAB_CLI_COMMON_SHORTOPTS, longopts, &cli, tool_option, &o, &first, &d) != 0) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  if (cplab_cli_answer_info(&cli, PROG, usage)) return CPLAB_EXIT_OK;
  if (argc - first != 2) {
    cplab_diag_set(&d, CPLAB_EUSAGE, "expected a command (validate, ls, dump, rows) and a path");
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  const char *cmd = argv[first], *path = argv[first + 1];
  if (strcmp(cmd, "validate") && strcmp(cmd, "ls") && strcmp(cmd, "dump") && strcmp(cmd, "rows")) {
    cplab_diag_set(&d, CPLAB_EUSAGE, "unknown command '%s' (validate, ls, dump, rows)", cmd);
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  cplab_trace *t = NULL;
  int rc = cplab_trace_open(path, &t, &d);
  if (!rc && cplab_trace_get_info(t)->warning[0] && !cli.quiet)
    fprintf(stderr, PROG ": warning: %s: %s\n", path, cplab_trace_get_info(t)->warning);
  if (!rc && strcmp(cmd, "validate") == 0) {
    rc = cplab_trace_validate(t, &d);
    if (!rc && !cli.quiet) printf("%s: valid cplab trace (schema %s)\n", path, cplab_trace_get_info(t)->schema);
  } else if (!rc && strcmp(cmd, "ls") == 0) {
    rc = cmd_ls(t, path, &d);
  } else if (!rc) {
    const cplab_trace_info *in = cplab_trace_get_info(t);
    cplab_trace *rt = t;
    if (strcmp(in->kind, "run") == 0 && o.rank >= in->world_size)
      rc = cplab_diag_set(&d, CPLAB_EUSAGE, "--rank %d: no rank %d in %s (its world has %d)", o.rank, o.rank, path,
                          in->world_size);
    else if (strcmp(in->kind, "run") == 0) rc = cplab_trace_open_rank(t, o.rank, &rt, &d);
    if (!rc && (int64_t)o.step >= cplab_trace_get_info(rt)->num_steps)
      rc = cplab_diag_set(&d, CPLAB_EUSAGE, "--step %llu: %s: no step %llu (the trace has %lld)",
                          (unsigned long long)o.step, path,
                          (unsigned long long)o.step, (long long)cplab_trace_get_info(rt)->num_steps);
    cplab_rank_plan *p = NULL;
    if (!rc) rc = cplab_trace_read_plan(rt, (size_t)o.step, &p, &d);
    if (!rc && strcmp(cmd, "rows") == 0) {
      rc = print_token_rows(rt, p, (size_t)o.step, &d);
    } else if (!rc) {
      dump_plan(p, (size_t)o.step);
      rc = dump_groups(rt, &d);
    }
    cplab_rank_plan_free(p);
    if (rt != t) cplab_trace_close(rt);
  }
  cplab_trace_close(t);
  if (rc) {
    cplab_diag_report(stderr, PROG, &d);
    /* validate: a file that cannot be read at all is an error, one that breaks
     * the schema is a difference. ls, dump and rows judge nothing: whatever stops
     * them (an unreadable or damaged file, a step or rank that is not there)
     * is an error. */
    if (strcmp(cmd, "validate") != 0) return CPLAB_EXIT_ERROR;
    return rc == CPLAB_EIO || rc == CPLAB_EUSAGE || rc == CPLAB_ENOMEM ? CPLAB_EXIT_ERROR : CPLAB_EXIT_DIFFERENT;
  }
  return CPLAB_EXIT_OK;
}
