/* The configuration matrix of cplab-bench and the scenario of each
 * configuration: see matrix.h. */
#include "matrix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/cli.h"
#include "report.h"

const char *cplab_bench_kind_name(cplab_bench_kind k) {
  return k == CPLAB_BENCH_PREFILL ? "prefill" : k == CPLAB_BENCH_DECODE ? "decode" : "mixed";
}


/* A positive decimal size at *p (advanced past it); 0 when there is none. */
static int64_t take_size(const char **p) {
  char buf[24];
  size_t n = strspn(*p, "0123456789");
  uint64_t v;
  if (n == 0 || n >= sizeof buf) return 0;
  memcpy(buf, *p, n), buf[n] = 0;
  *p += n;
  return cplab_parse_u64(buf, &v) == 0 && v <= (1u << 20) ? (int64_t)v : 0;
}

int cplab_bench_parallel_parse(const char *text, cplab_bench_parallel *out, cplab_diag *d) {
  static const char *const parts[3] = {"tp", "pcp", "dcp"};
  int size[3] = {1, 1, 1}, next = 0;
  const char *p = text;
  if (!*p) CPLAB_FAIL(d, CPLAB_EUSAGE, "parallel sizes '': empty (e.g. tp4, pcp4, tp4dcp4, pcp4dcp4)");
  while (*p) {
    int k = next;
    while (k < 3 && strncmp(p, parts[k], strlen(parts[k])) != 0) k++;
    if (k == 3)
      CPLAB_FAIL(d, CPLAB_EUSAGE, "parallel sizes '%s': expected tp, pcp and dcp sizes in that order, each once (e.g. "
                 "pcp4dcp4)", text);
    p += strlen(parts[k]);
    int64_t v = take_size(&p);
    if (v < 1) CPLAB_FAIL(d, CPLAB_EUSAGE, "parallel sizes '%s': %s needs a positive size", text, parts[k]);
    size[k] = (int)v;
    next = k + 1;
  }
  out->tp = size[0], out->pcp = size[1], out->dcp = size[2];
  /* The canonical label ("tp1pcp2" reads back as "pcp2"), the one results files check. */
  if (cplab_bench_parallel_label(out->tp, out->pcp, out->dcp, out->label, sizeof out->label) != 0)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "parallel sizes '%s': too large", text);
  return 0;
}

/* Split a comma-separated list; fn handles each item. */
static int for_each_item(const char *text, const char *what, int (*fn)(void *ctx, const char *item, cplab_diag *d),
                         void *ctx, cplab_diag *d) {
  char item[128];
  const char *p = text;
  if (!*p) CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: empty list", what);
  for (;;) {
    size_t n = strcspn(p, ",");
    if (n == 0 || n >= sizeof item) CPLAB_FAIL(d, CPLAB_EUSAGE, "%s '%s': an empty or overlong item", what, text);
    memcpy(item, p, n), item[n] = 0;
    int rc = fn(ctx, item, d);
    if (rc) return rc;
    if (!p[n]) return 0;
    p += n + 1;
  }
}

static int add_parallel(void *ctx, const char *item, cplab_diag *d) {
  cplab_bench_matrix *m = ctx;
  cplab_bench_parallel l;
  int rc = cplab_bench_parallel_parse(item, &l, d);
  if (rc) return rc;
  for (int i = 0; i < m->num_parallel; i++)
    if (strcmp(m->parallel[i].label, l.label) == 0) CPLAB_FAIL(d, CPLAB_EUSAGE, "--parallel: %s given twice", l.label);
  if (m->num_parallel == CPLAB_BENCH_MAX_ITEMS)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--parallel: more than %d", CPLAB_BENCH_MAX_ITEMS);
  m->parallel[m->num_parallel++] = l;
  return 0;
}

int cplab_bench_parse_parallel(cplab_bench_matrix *m, const char *text, cplab_diag *d) {
  m->num_parallel = 0;
  return for_each_item(text, "--parallel", add_parallel, m, d);
}

static int add_graph(void *ctx, const char *item, cplab_diag *d) {
  cplab_bench_matrix *m = ctx;
  cplab_graph_mode g;
  if (cplab_graph_mode_parse_label(item, &g) != 0)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "graphs: unknown mode '%s' (eager, piecewise, full_decode_only, full)", item);
  for (int i = 0; i < m->num_graphs; i++)
    if (m->graphs[i] == g) CPLAB_FAIL(d, CPLAB_EUSAGE, "graphs: %s given twice", item);
  m->graphs[m->num_graphs++] = g;
  return 0;
}

int cplab_bench_parse_graphs(cplab_bench_matrix *m, const char *text, cplab_diag *d) {
  m->num_graphs = 0;
  return for_each_item(text, "graphs", add_graph, m, d);
}

typedef struct workload_ctx {
  cplab_bench_matrix *m;
  cplab_bench_workload proto;
} workload_ctx;

static int add_workload(void *ctx, const char *item, cplab_diag *d) {
  workload_ctx *c = ctx;
  cplab_bench_workload w = c->proto;
  const char *p = item, *what = cplab_bench_kind_name(w.kind);
  w.tokens = take_size(&p);
  if (w.kind == CPLAB_BENCH_MIXED) { /* N+B@L */
    if (*p++ != '+' || (w.batch = take_size(&p)) < 1 || *p++ != '@' || (w.context = take_size(&p)) < 1)
      CPLAB_FAIL(d, CPLAB_EUSAGE, "mixed '%s': expected PREFILL+ROWS@CONTEXT (e.g. 8192+16@32768)", item);
  }
  if (w.tokens < 1 || *p) CPLAB_FAIL(d, CPLAB_EUSAGE, "%s '%s': expected a positive token count", what, item);
  if (c->m->num_workloads == CPLAB_BENCH_MAX_ITEMS)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "workloads: more than %d", CPLAB_BENCH_MAX_ITEMS);
  c->m->workloads[c->m->num_workloads++] = w;
  return 0;
}

int cplab_bench_add_workloads(cplab_bench_matrix *m, cplab_bench_kind kind, const char *text, int64_t batch,
                              int64_t out_tokens, cplab_diag *d) {
  if (batch < 1 || batch > 4096) CPLAB_FAIL(d, CPLAB_EUSAGE, "batch: must be in [1, 4096], got %lld", (long long)batch);
  if (out_tokens < 1 || out_tokens > 4096)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "out-tokens: must be in [1, 4096], got %lld", (long long)out_tokens);
  workload_ctx c = {m, {kind, 0, batch, 0, kind == CPLAB_BENCH_DECODE ? out_tokens : 1}};
  return for_each_item(text, cplab_bench_kind_name(kind), add_workload, &c, d);
}

void cplab_bench_workload_label(const cplab_bench_workload *w, char *buf, size_t len) {
  long long n = (long long)w->tokens, b = (long long)w->batch;
  if (w->kind == CPLAB_BENCH_PREFILL)
    snprintf(buf, len, b > 1 ? "prefill %lld in / 1 out, batch %lld" : "prefill %lld in / 1 out", n, b);
  else if (w->kind == CPLAB_BENCH_DECODE)
    snprintf(buf, len, "decode 1 in / %lld out @ %lld, batch %lld", (long long)w->out_tokens, n, b);
  else
    snprintf(buf, len, "mixed %lld + %lld decode @ %lld", n, b, (long long)w->context);
}

/* "FIELD=VALUE" at item into field and *value; 0 or -1 when malformed. */
static int split_setting(const char *item, char *field, size_t cap, int64_t *value) {
  const char *eq = strchr(item, '=');
  uint64_t v;
  if (!eq || eq == item || (size_t)(eq - item) >= cap || cplab_parse_u64(eq + 1, &v) != 0 || v > INT64_MAX) return -1;
  memcpy(field, item, (size_t)(eq - item)), field[eq - item] = 0;
  *value = (int64_t)v;
  return 0;
}

static int check_setting(void *ctx, const char *item, cplab_diag *d) {
  char field[64];
  int64_t v;
  (void)ctx;
  if (split_setting(item, field, sizeof field, &v) != 0)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--model-set: '%s' is not FIELD=VALUE with a non-negative integer VALUE", item);
  return 0;
}

int cplab_bench_parse_model_set(cplab_bench_matrix *m, const char *text, cplab_diag *d) {
  if (strlen(text) >= sizeof m->model_set) CPLAB_FAIL(d, CPLAB_EUSAGE, "--model-set: too long");
  int rc = for_each_item(text, "--model-set", check_setting, NULL, d);
  if (!rc) snprintf(m->model_set, sizeof m->model_set, "%s", text);
  return rc;
}

/* One --model-set item over the model at ctx: the field by name (its range is
 * the scenario's rule, cplab_scenario_finish's). */
static int set_field(void *ctx, const char *item, cplab_diag *d) {
  cplab_model *model = ctx;
  char field[64], list[512];
  int64_t v;
  size_t n, used = 0;
  const cplab_model_field *f = cplab_model_fields(&n);
  if (split_setting(item, field, sizeof field, &v) != 0) return 0; /* refused when the option was read */
  for (size_t i = 0; i < n; i++)
    if (strcmp(f[i].name, field) == 0) return *cplab_model_field_ptr(model, &f[i]) = v, 0;
  list[0] = '\0';
  for (size_t i = 0; i < n && used < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, ", %s", f[i].name);
  CPLAB_FAIL(d, CPLAB_ESCHEMA, "model.%s: unknown key '%s' (allowed here: preset%s)", field, field, list);
}

/* The workload's steps (allocated: the scenario owns them) and the longest
 * context they reach. */
static int steps_of(const cplab_bench_workload *w, cplab_scenario *s, int64_t *longest) {
  size_t nsteps = (size_t)(w->kind == CPLAB_BENCH_DECODE ? w->out_tokens : 1);
  size_t rows = (size_t)w->batch + (w->kind == CPLAB_BENCH_MIXED);
  if (!(s->steps = calloc(nsteps, sizeof *s->steps))) return -1;
  s->num_steps = nsteps;
  for (size_t i = 0; i < nsteps; i++) {
    cplab_request *q = calloc(rows, sizeof *q);
    if (!q) return -1;
    s->steps[i] = (cplab_step){rows, q};
    for (int64_t r = 0; r < w->batch; r++) {
      if (w->kind == CPLAB_BENCH_PREFILL) q[r] = (cplab_request){r, 0, w->tokens, CPLAB_PHASE_PREFILL};
      else if (w->kind == CPLAB_BENCH_DECODE) q[r] = (cplab_request){r, w->tokens + (int64_t)i, 1, CPLAB_PHASE_DECODE};
      else q[r] = (cplab_request){r, w->context, 1, CPLAB_PHASE_DECODE};
    }
    if (w->kind == CPLAB_BENCH_MIXED) q[w->batch] = (cplab_request){w->batch, 0, w->tokens, CPLAB_PHASE_PREFILL};
  }
  *longest = w->kind == CPLAB_BENCH_DECODE ? w->tokens + (int64_t)nsteps
             : w->kind == CPLAB_BENCH_MIXED && w->context + 1 > w->tokens ? w->context + 1 : w->tokens;
  return 0;
}

/* The configuration's scenario, filled in (not yet checked). */
static int fill_scenario(const cplab_bench_matrix *m, const cplab_bench_parallel *l, const cplab_bench_workload *w,
                         cplab_graph_mode g, cplab_scenario *s, cplab_diag *d) {
  int64_t longest = 0;
  snprintf(s->name, sizeof s->name, "bench");
  free(s->description);
  if (!(s->description = strdup("cplab-bench configuration")) || steps_of(w, s, &longest) != 0)
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory building the %s scenario", l->label);
  /* An unknown preset keeps its name alone: the scenario's rules refuse it. */
  if (cplab_model_preset(m->preset, &s->model) != 0) snprintf(s->model.preset, sizeof s->model.preset, "%s", m->preset);
  else if (m->model_set[0]) {
    int rc = for_each_item(m->model_set, "--model-set", set_field, &s->model, d);
    if (rc) cplab_diag_prefix(d, "%s: ", s->origin);
    if (rc) return rc;
  }
  int64_t block = (int64_t)m->block_size * l->dcp;
  s->par.tp = l->tp, s->par.pcp = l->pcp, s->par.dcp = l->dcp;
  s->par.interleave = m->interleave, s->par.block_size = m->block_size;
  s->par.max_model_len = (longest + block - 1) / block * block;
  s->par.graph_mode = g;
  snprintf(s->layout, sizeof s->layout, "%s", m->layout[0] ? m->layout : "vllm");
  s->seed = m->seed;
  return 0;
}

int cplab_bench_scenario(const cplab_bench_matrix *m, const cplab_bench_parallel *l, const cplab_bench_workload *w,
                         cplab_graph_mode g, cplab_scenario **out, cplab_diag *d) {
  *out = NULL;
  /* The steps are allocated before the rules see them: bound them first. */
  int64_t entries = (w->kind == CPLAB_BENCH_DECODE ? w->out_tokens : 1) * (w->batch + 1);
  if (entries > CPLAB_BENCH_MAX_REQUEST_ENTRIES)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: %lld steps x %lld requests exceed %d requests in all; lower --batch or --out-tokens",
               l->label, (long long)(w->kind == CPLAB_BENCH_DECODE ? w->out_tokens : 1), (long long)w->batch,
               CPLAB_BENCH_MAX_REQUEST_ENTRIES);
  char origin[160], wl[96];
  cplab_bench_workload_label(w, wl, sizeof wl);
  snprintf(origin, sizeof origin, "%s, %s", l->label, wl);
  cplab_scenario *s = cplab_scenario_alloc(origin);
  if (!s) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory building the %s scenario", l->label);
  int rc = fill_scenario(m, l, w, g, s, d);
  if (!rc) rc = cplab_scenario_finish(s, NULL, d);
  if (rc) cplab_scenario_free(s);
  else *out = s;
  return rc;
}
