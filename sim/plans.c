/* Every rank's plan of every step. Process p derives ranks p, p + size, ...
 * each on its own (cplab_rank_plan_derive sees only the shared step and the
 * rank's ids), reduces each plan to a row of facts and digests, and process 0
 * gathers the rows and checks agreement: one shared digest for all ranks, and
 * equal collective digests within every TP, PCP and DCP group. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numeric.h"
#include "sim.h"

void sim_plans_free(sim_plans *p) {
  free(p->rows);
  free(p->info);
  memset(p, 0, sizeof *p);
}

static void plan_row(const cplab_rank_plan *rp, int64_t *row) {
  row[SIM_PR_RANK] = rp->ids.rank;
  row[SIM_PR_ROWS] = rp->split.num_rows;
  row[SIM_PR_DECODE_ROWS] = rp->split.num_decode_rows;
  row[SIM_PR_TOKENS] = rp->split.num_tokens;
  row[SIM_PR_DECODE_TOKENS] = rp->split.num_decode_tokens;
  row[SIM_PR_PREFILL_CHUNKS] = rp->prefill.num_chunks;
  row[SIM_PR_INDEXER_CHUNKS] = rp->indexer.num_chunks;
  row[SIM_PR_COLLECTIVES] = rp->num_collectives;
  row[SIM_PR_SHARED_DIGEST] = (int64_t)cplab_rank_plan_shared_digest(rp);
  for (int k = 0; k < 3; k++) row[SIM_PR_COLL_DIGEST + k] = (int64_t)cplab_rank_plan_collective_digest(rp, (cplab_group_kind)k);
}

static void step_info(const cplab_rank_plan *rp, sim_step_info *info) {
  const cplab_schedule *s = &rp->sched;
  *info = (sim_step_info){s->padded_num_tokens, s->dispatch_rows, s->dispatch_tokens, s->dispatch_longest,
                          (int)s->runtime_mode, s->moe_fast_path, s->all_rows_replicated};
}

static void disagree(sim_plans *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void disagree(sim_plans *out, const char *fmt, ...) {
  out->disagreements++;
  if (out->kept >= SIM_KEEP_DISAGREEMENTS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->first[out->kept++], sizeof out->first[0], fmt, ap);
  va_end(ap);
}

/* Process 0: digests must agree (all ranks: shared; group members: collectives). */
static void compare_digests(sim_plans *out, const cplab_rank_table *t) {
  for (size_t s = 0; s < out->num_steps; s++) {
    const int64_t *base = out->rows + s * (size_t)out->world * SIM_PR_FIELDS;
    for (int r = 0; r < out->world; r++) {
      const int64_t *row = base + (size_t)r * SIM_PR_FIELDS;
      if (row[SIM_PR_SHARED_DIGEST] != base[SIM_PR_SHARED_DIGEST])
        disagree(out, "step %zu: rank %d derived a different shared plan than rank 0 (schedule, chunks or indexer plan)",
                 s, r);
      for (int k = 0; k < 3; k++) {
        int first = cplab_rank_table_members(t, (cplab_group_kind)k, r)[0];
        const int64_t *lead = base + (size_t)first * SIM_PR_FIELDS;
        if (row[SIM_PR_COLL_DIGEST + k] != lead[SIM_PR_COLL_DIGEST + k])
          disagree(out, "step %zu: rank %d and rank %d issue different %s collectives: a real run hangs", s, r, first,
                   cplab_group_name((cplab_group_kind)k));
      }
    }
  }
}

/* One step: derive this process's ranks (all of them with full_check, kept
 * for the invariant check). */
/* The numeric pass of the selected layers on one rank's plan; each layer's
 * results go to the rank's trace when there is one. */
static int run_numeric(const cplab_step_input *in, const cplab_rank_plan *rp, const sim_numeric_opts *num,
                       int64_t sampled_rows, cplab_trace_writer *w, sim_plans *out, cplab_diag *d) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = 0;
  for (int i = 0; i < num->layers.count && !rc; i++) {
    sim_numeric_layer l;
    rc = sim_numeric_compute(in, rp, num->layers.layers[i], sampled_rows, &l, d);
    if (rc) break;
    out->numeric_rows += l.rows;
    if (w) rc = sim_numeric_write(w, in->step_index, &l, d);
    sim_numeric_layer_free(&l);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  out->numeric_seconds += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  return rc;
}

static int run_step(const sim_procs *pr, const cplab_scenario *s, const cplab_layout *layout, size_t step,
                    int full_check, const sim_numeric_opts *num, cplab_trace_writer **writers, sim_plans *out,
                    int64_t *mine, sim_step_info *info0, cplab_diag *d) {
  cplab_step_input in = {&s->steps[step], step, s->seed, &s->par, &s->model, layout};
  int world = out->world, rc = 0, n = 0, flags = full_check || writers ? CPLAB_PLAN_TOKEN_MAPS : 0;
  cplab_rank_plan **kept = full_check ? calloc((size_t)world, sizeof *kept) : NULL;
  if (full_check && !kept) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int r = pr->rank; r < world && !rc; r += pr->size, n++) {
    cplab_rank_plan *rp = NULL;
    rc = cplab_rank_plan_derive(&in, r, flags, &rp, d);
    if (rc) {
      cplab_diag_prefix(d, "step %zu, rank %d: ", step, r);
      break;
    }
    plan_row(rp, mine + (size_t)n * SIM_PR_FIELDS);
    if (writers) rc = cplab_trace_write_plan(writers[n], step, rp, d);
    if (!rc && num && num->enabled) {
      rc = run_numeric(&in, rp, num, s->sampled_rows, writers ? writers[n] : NULL, out, d);
      if (rc) cplab_diag_prefix(d, "step %zu, rank %d: ", step, r);
    }
    if (rc) {
      cplab_rank_plan_free(rp);
      break;
    }
    if (r == 0) step_info(rp, info0);
    if (kept) kept[r] = rp;
    else cplab_rank_plan_free(rp);
  }
  if (!rc && kept) rc = cplab_check_step(&in, kept, world, s->seed + step, &out->check, d);
  if (kept) {
    for (int r = 0; r < world; r++) cplab_rank_plan_free(kept[r]);
    free(kept);
  }
  return rc;
}

/* Rank files of this process's ranks, opened before the first step. */
static int open_rank_traces(const sim_procs *pr, const cplab_scenario *s, const sim_trace_target *trace, int world,
                            cplab_trace_writer ***out, cplab_diag *d) {
  *out = NULL;
  if (!trace || !trace->path) return 0;
  int n = 0;
  for (int r = pr->rank; r < world; r += pr->size) n++;
  cplab_trace_writer **w = calloc((size_t)(n ? n : 1), sizeof *w);
  if (!w) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = 0, i = 0;
  for (int r = pr->rank; r < world && !rc; r += pr->size, i++) {
    char path[4096];
    rc = cplab_trace_rank_path(trace->path, r, path, sizeof path, d);
    if (!rc) rc = cplab_trace_create(path, s, r, &trace->prov, &w[i], d);
  }
  if (rc) {
    for (int j = 0; j < n; j++) cplab_trace_abort(w[j]);
    free(w);
    return rc;
  }
  *out = w;
  return 0;
}

/* Commit (ok) or abort this process's rank files; then, once every process
 * committed, process 0 writes the run file. */
static int finish_traces(const sim_procs *pr, const cplab_scenario *s, const sim_trace_target *trace, int world,
                         cplab_trace_writer **w, int ok, cplab_diag *d) {
  if (!w) return 0;
  int n = 0, rc = 0;
  for (int r = pr->rank; r < world; r += pr->size) n++;
  for (int i = 0; i < n; i++) {
    if (ok && !rc) rc = cplab_trace_commit(w[i], d);
    else cplab_trace_abort(w[i]);
  }
  free(w);
  int any = sim_procs_agree(pr, ok ? rc : CPLAB_EINTERNAL);
  if (!rc && ok && any) rc = cplab_diag_set(d, any, "another process failed to write its rank files");
  if (!rc && ok && pr->rank == 0) {
    cplab_trace_writer *run = NULL;
    rc = cplab_trace_create(trace->path, s, -1, &trace->prov, &run, d);
    if (!rc) rc = cplab_trace_link_ranks(run, world, d);
    if (!rc) rc = cplab_trace_commit(run, d);
    else cplab_trace_abort(run);
  }
  return rc;
}

int sim_plans_run(const sim_procs *pr, const cplab_scenario *s, const cplab_layout *layout, const cplab_rank_table *t,
                  int full_check, const sim_numeric_opts *numeric, const sim_trace_target *trace, sim_plans *out,
                  cplab_diag *d) {
  memset(out, 0, sizeof *out);
  if (full_check && pr->size > 1)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--check needs every rank's plans in one process; run it without mpirun");
  out->num_steps = s->num_steps;
  out->world = cplab_parallel_world(&s->par);
  out->checked = full_check;
  out->numeric_layers = numeric && numeric->enabled ? numeric->layers.count : 0;
  int per_proc = (out->world + pr->size - 1) / pr->size;
  size_t mine_len = s->num_steps * (size_t)(per_proc ? per_proc : 1) * SIM_PR_FIELDS;
  int64_t *mine = calloc(mine_len, sizeof *mine);
  out->info = calloc(s->num_steps, sizeof *out->info);
  if (!mine || !out->info) {
    free(mine);
    sim_plans_free(out);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %zu steps of plans", s->num_steps);
  }
  int rc = 0, nmine = 0;
  cplab_trace_writer **writers = NULL;
  if (full_check) rc = cplab_check_empty_context(layout, &s->par, &s->model, &out->check, d);
  if (!rc) rc = open_rank_traces(pr, s, trace, out->world, &writers, d);
  for (size_t step = 0; step < s->num_steps && !rc; step++) {
    int before = nmine;
    for (int r = pr->rank; r < out->world; r += pr->size) nmine++;
    rc = run_step(pr, s, layout, step, full_check, numeric, writers, out, mine + (size_t)before * SIM_PR_FIELDS,
                  &out->info[step], d);
  }
  if (writers) {
    int trc = finish_traces(pr, s, trace, out->world, writers, rc == 0, d);
    if (!rc) rc = trc;
  }
  /* Gather together or not at all. */
  int any = sim_procs_agree(pr, rc);
  if (!rc && any) rc = cplab_diag_set(d, any, "another process failed to derive its plans");
  int64_t *all = NULL;
  int nall = 0;
  if (!rc && pr->mpi) rc = sim_procs_totals(pr, &out->numeric_rows, &out->numeric_seconds, d);
  if (!rc && pr->mpi) rc = sim_gather_rows(pr, mine, nmine, SIM_PR_FIELDS, &all, &nall, d);
  if (!rc && pr->rank == 0) {
    /* Place every row at [step][rank]: processes send steps in order, ranks ascending. */
    out->rows = calloc(s->num_steps * (size_t)out->world * SIM_PR_FIELDS, sizeof(int64_t));
    if (!out->rows) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    const int64_t *src = pr->mpi ? all : mine;
    int count = pr->mpi ? nall : nmine;
    for (int p = 0, i = 0; !rc && i < count; p++) {
      int ranks_of_p = 0;
      for (int r = p; r < out->world; r += pr->size) ranks_of_p++;
      for (size_t step = 0; step < s->num_steps; step++)
        for (int j = 0; j < ranks_of_p; j++, i++) {
          const int64_t *row = src + (size_t)i * SIM_PR_FIELDS;
          memcpy(out->rows + (step * (size_t)out->world + (size_t)row[SIM_PR_RANK]) * SIM_PR_FIELDS, row,
                 SIM_PR_FIELDS * sizeof(int64_t));
        }
    }
    if (!rc) compare_digests(out, t);
  }
  free(all);
  free(mine);
  if (rc) sim_plans_free(out);
  return rc;
}
