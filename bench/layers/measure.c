/* cplab-bench's measuring mode (measure.h): the matrix walked
 * configuration by configuration through the executor's batched engine
 * (exec/engine.h), each configuration's event times made samples here
 * (steptime.h), each one a point of the results (report.h), with the run's
 * provenance. */
#include "measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkbound.h"
#include "config.h"
#include "cplab/stats.h"
#include "steptime.h"

/* The engine's phases and segments are the report's. */
_Static_assert((int)EXEC_ENGINE_PHASES == (int)CPLAB_BENCH_PHASES, "the engine's phases are the report's");
_Static_assert((int)EXEC_ENGINE_SEGMENTS == (int)CPLAB_BENCH_SEGMENTS, "the engine's segments are steptime.h's");

/* One configuration measured: a sample per repetition, the median per phase. */
typedef struct bench_measured {
  size_t n;
  double *samples_ms;                  /* [n] */
  double *phases;                      /* [n][CPLAB_BENCH_PHASES], summed over the steps like the samples */
  double steps;                        /* the scenario's steps: a sample is their mean */
  double phase_ms[CPLAB_BENCH_PHASES]; /* median per phase; NAN where graphs merge phases */
  exec_engine_result res;              /* runtime mode, rows checked */
} bench_measured;

static void measured_free(bench_measured *m) {
  free(m->samples_ms), free(m->phases);
  memset(m, 0, sizeof *m);
}

/* A repetition of a step (the engine's sink): its time and phases
 * (steptime.h on one device, the slowest rank's span under NCCL), averaged
 * over the configuration's steps into sample t->rep. */
static int add_times(void *ctx, const exec_engine_times *t, cplab_diag *d) {
  bench_measured *m = ctx;
  double total = 0, ph[CPLAB_BENCH_PHASES];
  if (t->rep < 0 || (size_t)t->rep >= m->n) CPLAB_FAIL(d, CPLAB_EINTERNAL, "engine: repetition %d of %zu", t->rep, m->n);
  cplab_bench_step_time(t->seg, t->layers, t->world, t->out, t->mixed, &total, ph);
  if (!isnan(t->span)) total = t->span;
  m->samples_ms[t->rep] += total / m->steps;
  for (int p = 0; p < CPLAB_BENCH_PHASES; p++) m->phases[(size_t)t->rep * CPLAB_BENCH_PHASES + p] += ph[p] / m->steps;
  return 0;
}

/* Configuration c on the engine: its samples and phase medians. */
static int measure_config(exec_engine *e, const cplab_bench_config *c, const exec_engine_opts *o, bench_measured *m,
                          cplab_diag *d) {
  memset(m, 0, sizeof *m);
  m->n = o->reps > 0 ? (size_t)o->reps : 0;
  m->steps = (double)c->scenario->num_steps;
  m->samples_ms = calloc(m->n + 1, sizeof *m->samples_ms);
  m->phases = calloc((m->n + 1) * CPLAB_BENCH_PHASES, sizeof *m->phases);
  double *col = malloc(sizeof *col * (m->n + 1));
  int rc = m->samples_ms && m->phases && col ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = exec_engine_run(e, c->scenario, o, add_times, m, &m->res, d);
  for (int p = 0; p < CPLAB_BENCH_PHASES && !rc; p++) {
    for (size_t i = 0; i < m->n; i++) col[i] = m->phases[i * CPLAB_BENCH_PHASES + p];
    m->phase_ms[p] = cplab_stats_median(col, m->n);
  }
  free(col);
  if (rc) {
    cplab_diag_prefix(d, "%s: ", c->title);
    measured_free(m);
  }
  return rc;
}

typedef struct measure_ctx {
  exec_engine *e;
  const exec_engine_opts *o;
  cplab_bench_results *r;
  FILE *progress;
  int index;
} measure_ctx;

/* Achieved TFLOPS per phase where the phase was timed alone: the plans'
 * work of the busiest rank (plancost.h, per layer) over the phase's time. */
static void print_rates(FILE *out, const cplab_bench_config *c, const bench_measured *ms, int layers) {
  const cplab_bench_plan_cost *pc = c->cost;
  double work[4] = {0, 0, 0, 0}; /* proj, indexer, attention (real heads), attention as run (padding heads too) */
  for (int r = 0; r < pc->world; r++) {
    const cplab_bench_work *w = &pc->ranks[r];
    work[0] = w->proj_flop > work[0] ? w->proj_flop : work[0];
    work[1] = w->indexer_flop > work[1] ? w->indexer_flop : work[1];
    work[2] = w->attn_flop > work[2] ? w->attn_flop : work[2];
    work[3] = w->attn_flop_run > work[3] ? w->attn_flop_run : work[3];
  }
  static const char *const names[3] = {"proj", "indexer", "attention"};
  for (int p = 0; p < 3; p++)
    if (isfinite(ms->phase_ms[p]) && ms->phase_ms[p] > 0 && work[p] > 0)
      fprintf(out, ", %s %.3g TFLOPS", names[p], work[p] * layers / (ms->phase_ms[p] * 1e-3) / 1e12);
  double attn = ms->phase_ms[EXEC_PHASE_ATTENTION];
  if (isfinite(attn) && attn > 0 && work[3] > work[2]) /* what the kernels ran, padding heads included */
    fprintf(out, " (%.3g as run, heads %d -> %d)", work[3] * layers / (attn * 1e-3) / 1e12, c->heads.real,
            c->heads.run);
}

static void point_of(const cplab_bench_config *c, const bench_measured *ms, cplab_bench_point *p) {
  const cplab_bench_workload *w = c->workload;
  memset(p, 0, sizeof *p);
  p->tp = c->parallel->tp, p->pcp = c->parallel->pcp, p->dcp = c->parallel->dcp;
  p->heads = c->heads.real, p->heads_run = c->heads.run;
  snprintf(p->workload, sizeof p->workload, "%s", cplab_bench_kind_name(w->kind));
  p->tokens = w->tokens, p->batch = w->batch;
  p->out_tokens = w->kind == CPLAB_BENCH_DECODE ? w->out_tokens : 1;
  snprintf(p->graph, sizeof p->graph, "%s", cplab_graph_mode_label(c->graph));
  /* A prefill or mixed step yields a request's first token; decode steps one more each. */
  p->metric = w->kind == CPLAB_BENCH_DECODE ? CPLAB_BENCH_TPOT : CPLAB_BENCH_TTFT;
  p->n = ms->n, p->samples_ms = ms->samples_ms;
  memcpy(p->phase_ms, ms->phase_ms, sizeof p->phase_ms);
}

static int measure_one(void *ctx, const cplab_bench_config *c, cplab_diag *d) {
  measure_ctx *x = ctx;
  bench_measured ms;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = measure_config(x->e, c, x->o, &ms, d);
  if (rc) return rc;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  cplab_bench_point p;
  point_of(c, &ms, &p);
  rc = cplab_bench_results_add(x->r, &p, d);
  if (!rc && x->progress) {
    double *s = malloc(sizeof *s * ms.n);
    if (s) memcpy(s, ms.samples_ms, sizeof *s * ms.n);
    fprintf(x->progress, "[%d] %s (runs %s): median %.3f ms of %zu, %.1f s", ++x->index, c->title, ms.res.runtime_mode,
            s ? cplab_stats_median(s, ms.n) : ms.samples_ms[0], ms.n,
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    free(s);
    print_rates(x->progress, c, &ms, x->o->layers);
    if (ms.res.checked_rows)
      fprintf(x->progress, ", %lld rows agree with cplab-exec's", (long long)ms.res.checked_rows);
    fputc('\n', x->progress);
    fflush(x->progress);
  }
  measured_free(&ms);
  return rc;
}

static void fill_meta(cplab_bench_meta *meta, const cplab_bench_matrix *m, const exec_engine_opts *o,
                      const cplab_bench_backend *be, const char *command) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(meta->date, sizeof meta->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  snprintf(meta->commit, sizeof meta->commit, "%s", CPLAB_GIT_COMMIT);
  snprintf(meta->command, sizeof meta->command, "%s", command);
  snprintf(meta->preset, sizeof meta->preset, "%s", m->preset);
  snprintf(meta->layout, sizeof meta->layout, "%s", m->layout[0] ? m->layout : "vllm");
  meta->head_pad = o->head_pad > 1 ? o->head_pad : 0;
  snprintf(meta->backend, sizeof meta->backend, "%s", be->nccl ? "nccl" : "single");
  int n = be->nccl ? snprintf(meta->note, sizeof meta->note,
                              "NCCL backend: one MPI rank per GPU; a step counts the slowest rank's time from its "
                              "first launch to its end; communication was NCCL collectives (DCP all-gathers in "
                              "place, the plan's other collectives at their sizes)")
                   : snprintf(meta->note, sizeof meta->note,
                              "single-device backend: every rank of a layout ran on one GPU, one after another; a "
                              "segment between two collectives counts its slowest rank; communication was device "
                              "copies");
  if (n > 0 && (size_t)n < sizeof meta->note) {
    int more = snprintf(meta->note + n, sizeof meta->note - (size_t)n, "; projections: %s GEMMs",
                        o->fp8 ? "fp8 (e4m3, per-tensor scales)" : "bf16");
    n = more > 0 ? n + more : n;
  }
  if (m->model_set[0] && n > 0 && (size_t)n < sizeof meta->note) /* cut short if it must be: a note, not data */
    if (snprintf(meta->note + n, sizeof meta->note - (size_t)n, "; model fields over the preset: %s", m->model_set) < 0)
      meta->note[n] = 0;
  meta->gpus = be->nccl ? be->size : 1;
  meta->seed = m->seed & ((UINT64_C(1) << 53) - 1);
  meta->layers = o->layers;
}

/* Under NCCL: every set of parallel sizes has as many ranks as there are processes. */
static int check_worlds(const cplab_bench_matrix *m, const cplab_bench_backend *be, cplab_diag *d) {
  for (int i = 0; be->nccl && i < m->num_parallel; i++) {
    const cplab_bench_parallel *l = &m->parallel[i];
    if (l->tp * l->pcp != be->size)
      CPLAB_FAIL(d, CPLAB_EUSAGE, "--backend nccl: parallel sizes %s have %d ranks, but %d process(es) run (mpirun "
                 "-np %d for it; one run per GPU count)", l->label, l->tp * l->pcp, be->size, l->tp * l->pcp);
  }
  return 0;
}

int cplab_bench_measure_matrix(const cplab_bench_matrix *m, const exec_engine_opts *o, const cplab_bench_backend *be,
                               const char *command, cplab_bench_results *r, FILE *progress, cplab_diag *d) {
  exec_engine_opts eo = *o;
  if (!eo.close) eo.close = cplab_bench_attention_close; /* --check's bounds */
  exec_engine_backend ebe = {be->nccl, be->rank, be->size, be->mpi};
  measure_ctx x = {NULL, &eo, r, progress, 0};
  cplab_bench_matrix run = *m; /* with the head padding resolved */
  int rc = check_worlds(m, be, d);
  /* A layout the executor's kernels cannot run is refused before the GPU is touched. */
  if (!rc) rc = exec_engine_layout_supported(m->layout[0] ? m->layout : "vllm", d);
  if (!rc) rc = exec_engine_alloc(&ebe, &x.e, d);
  if (rc == CPLAB_ENODEV) cplab_diag_prefix(d, "measuring needs a GPU (--dry-run needs none): ");
  if (!rc) rc = exec_engine_card(r->meta.card, sizeof r->meta.card, d);
  if (!rc && m->head_pad == CPLAB_HEAD_PAD_AUTO) rc = exec_engine_head_pad_auto(&run.head_pad, d);
  eo.head_pad = run.head_pad;
  if (!rc) fill_meta(&r->meta, m, &eo, be, command);
  if (!rc) rc = cplab_bench_for_each(&run, measure_one, &x, d);
  if (!rc) rc = cplab_bench_results_finish(r, d);
  exec_engine_free(x.e);
  return rc;
}
