/* The executor's batched engine: see engine.h. This file drives a
 * scenario: per step, the plans and the buffers of the ranks this process
 * holds (engine_rank.c; every rank on one device, one rank per process
 * under NCCL), the units that are launched (pieces, or graphs of pieces:
 * the one place where exec captures CUDA graphs), the timed repetitions
 * and their event times, and the check against the per-row pass. */
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include "engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kvformat.h"
#include "cplab/layout.h"
#include "cplab/parallel.h"
#include "consensus.h"
#include "engine_internal.h"
#include "rank.h"

struct exec_engine {
  exec_engine_backend be;
  void *stream;
  cplab_gemm *gemm;
  /* The MoE shards of the last configuration, kept while the next one
   * shares the model, seed and shard count (generating them takes a while). */
  cplab_moe_shape moe_shape;
  uint64_t moe_seed;
  int moe_shards;
  cplab_moe **moe;
};

static void moe_release(exec_engine *e) {
  for (int q = 0; q < e->moe_shards; q++) cplab_moe_destroy(e->moe[q]);
  free(e->moe);
  e->moe = NULL, e->moe_shards = 0;
}

void exec_engine_free(exec_engine *e) {
  if (!e) return;
  cplab_diag ignore = {0};
  moe_release(e);
  cplab_gemm_destroy(e->gemm, &ignore);
  cplab_stream_destroy(e->stream, &ignore);
  free(e);
}

int exec_engine_alloc(const exec_engine_backend *be, exec_engine **out, cplab_diag *d) {
  cplab_gpu_info info;
  *out = NULL;
  int rc = cplab_gpu_query(&info, d);
#if CPLAB_EXEC_NCCL
  int device;
  if (!rc && be->nccl) rc = exec_nccl_pick_device(be->rank, &device, d); /* before the stream: it lives there */
#else
  if (!rc && be->nccl) rc = cplab_diag_set(d, CPLAB_EUNSUPPORTED, "--backend nccl: this build has no NCCL");
#endif
  if (rc) return rc;
  exec_engine *e = calloc(1, sizeof *e);
  if (!e) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  e->be = *be;
  rc = cplab_stream_create(&e->stream, d);
  if (!rc) rc = cplab_gemm_create(&e->gemm, d);
  if (rc) exec_engine_free(e);
  else *out = e;
  return rc;
}

int exec_engine_card(char *card, size_t len, cplab_diag *d) {
  char cuda[128];
  return exec_device_describe(card, len, cuda, sizeof cuda, d);
}

int exec_engine_head_pad_auto(int *pad, cplab_diag *d) {
  cplab_gpu_info info;
  int rc = cplab_gpu_query(&info, d);
  *pad = !rc && info.cc_major >= 10 ? CPLAB_HEAD_PAD_SM100 : CPLAB_HEAD_PAD_SM90;
  return rc;
}

int exec_engine_layout_supported(const char *name, cplab_diag *d) {
  const cplab_layout *l = cplab_layout_find(name);
  if (!l) CPLAB_FAIL(d, CPLAB_ENOTFOUND, "unknown layout '%s'", name);
  return exec_layout_supported(l, d);
}

/* Rank ids' expert shard of the tp·pcp shards. */
static int moe_shard_of(const cplab_parallel *par, const cplab_rank_ids *ids) { return ids->pcp * par->tp + ids->tp; }

/* The MoE shards of the model, S of them: all on one device, this rank's
 * (`only`) under NCCL; kept from the last configuration when equal. */
static int moe_shards(exec_engine *e, const cplab_scenario *s, int only, cplab_diag *d) {
  const cplab_model *m = &s->model;
  int S = s->par.tp * s->par.pcp;
  cplab_moe_shape shape = {(int)m->hidden_size, (int)m->n_routed_experts, (int)m->n_active_experts,
                           (int)m->moe_intermediate_size, (int)m->n_shared_experts, S, 0};
  if (e->moe && e->moe_shards == S && e->moe_seed == s->seed && memcmp(&shape, &e->moe_shape, sizeof shape) == 0 &&
      (only < 0 || e->moe[only]))
    return 0;
  moe_release(e);
  if (!(e->moe = calloc((size_t)S, sizeof *e->moe))) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  e->moe_shape = shape, e->moe_seed = s->seed;
  int rc = 0;
  for (; e->moe_shards < S && !rc; e->moe_shards++) {
    cplab_moe_shape q = shape;
    q.shard = e->moe_shards;
    if (only < 0 || q.shard == only) rc = cplab_moe_create(&q, s->seed, &e->moe[e->moe_shards], d);
  }
  if (rc) moe_release(e);
  return rc;
}

/* ---- units: what one launch covers ---------------------------------------- */

typedef struct engine_unit {
  engine_step *s;
  int r, seg, first, end; /* pieces [first, end) of rank r in segment seg */
  cplab_graph *graph;     /* NULL: launched piece by piece */
  cplab_event *ev[2];     /* per layer: [layer][2] */
} engine_unit;

static int unit_body(void *ctx, void *stream, cplab_diag *d) {
  engine_unit *u = ctx;
  (void)stream; /* the pieces launch on the step's stream, the one captured */
  int rc = 0;
  for (int p = u->first; p < u->end && !rc; p++) rc = engine_rank_piece(u->s, u->r, p, d);
  return rc;
}

/* Units of one step: per segment and rank, the pieces grouped as the
 * runtime mode launches them. */
typedef struct engine_units {
  int n, layers;
  engine_unit *u;
  cplab_event **events; /* [n][layers][2] */
  cplab_event *out_ev[2 * 1024];
} engine_units;

static void units_free(engine_units *us) {
  for (int i = 0; i < us->n; i++) cplab_graph_destroy(us->u[i].graph);
  for (int i = 0; us->events && i < us->n * us->layers * 2; i++) cplab_event_destroy(us->events[i]);
  for (size_t i = 0; i < sizeof us->out_ev / sizeof us->out_ev[0]; i++) cplab_event_destroy(us->out_ev[i]);
  free(us->u), free(us->events);
  memset(us, 0, sizeof *us);
}

static int units_add(engine_units *us, engine_step *s, int r, int seg, int first, int end, int graph, cplab_diag *d) {
  engine_unit *u = &us->u[us->n++];
  *u = (engine_unit){s, r, seg, first, end, NULL, {NULL, NULL}};
  return graph ? cplab_graph_capture(s->stream, unit_body, u, &u->graph, d) : 0;
}

/* The ranks this process holds: [first, end). */
static int held_first(const engine_step *s) { return s->me < 0 ? 0 : s->me; }
static int held_end(const engine_step *s) { return s->me < 0 ? s->world : s->me + 1; }

static int units_build(engine_units *us, engine_step *s, cplab_graph_mode mode, int layers, cplab_diag *d) {
  memset(us, 0, sizeof *us);
  us->layers = layers;
  if (!(us->u = calloc((size_t)s->world * PIECE_COUNT, sizeof *us->u))) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = 0;
  for (int seg = 0; seg < ENGINE_SEGMENTS && !rc; seg++)
    for (int r = held_first(s); r < held_end(s) && !rc; r++) {
      int first = engine_segment_first[seg], end = engine_segment_first[seg + 1];
      if (mode == CPLAB_GRAPH_NONE) {
        for (int p = first; p < end && !rc; p++) rc = units_add(us, s, r, seg, p, p + 1, 0, d);
      } else if (mode == CPLAB_GRAPH_PIECEWISE) { /* a graph per run of non-attention pieces */
        for (int p = first; p < end && !rc;) {
          int q = p + 1;
          while (!engine_piece_is_attention[p] && q < end && !engine_piece_is_attention[q]) q++;
          rc = units_add(us, s, r, seg, p, q, !engine_piece_is_attention[p], d); /* attention: piece by piece */
          p = q;
        }
      } else {
        rc = units_add(us, s, r, seg, first, end, 1, d);
      }
    }
  size_t ne = (size_t)us->n * (size_t)layers * 2;
  if (!rc && !(us->events = calloc(ne, sizeof *us->events))) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (size_t i = 0; i < ne && !rc; i++) rc = cplab_event_create(&us->events[i], d);
  for (int i = 0; i < 2 * s->world && !rc; i++) rc = cplab_event_create(&us->out_ev[i], d);
  if (rc) units_free(us);
  return rc;
}

static cplab_event **unit_events(engine_units *us, int i, int layer) {
  return us->events + ((size_t)i * (size_t)us->layers + (size_t)layer) * 2;
}

/* One repetition: every layer's segments in order, ranks one after another
 * inside a segment (ranks meet at the collectives between segments). */
static int step_launch(engine_units *us, engine_step *s, cplab_diag *d) {
  int rc = 0;
  for (int l = 0; l < us->layers && !rc; l++)
    for (int i = 0; i < us->n && !rc; i++) {
      engine_unit *u = &us->u[i];
      cplab_event **ev = unit_events(us, i, l);
      rc = cplab_event_record(ev[0], s->stream, d);
      if (!rc) rc = u->graph ? cplab_graph_launch(u->graph, s->stream, d) : unit_body(u, s->stream, d);
      if (!rc) rc = cplab_event_record(ev[1], s->stream, d);
    }
  for (int r = held_first(s); r < held_end(s) && !rc; r++) { /* the step's output gather */
    rc = cplab_event_record(us->out_ev[2 * r], s->stream, d);
    if (!rc) rc = engine_rank_piece(s, r, PIECE_COUNT, d);
    if (!rc) rc = cplab_event_record(us->out_ev[2 * r + 1], s->stream, d);
  }
  return rc;
}

/* A repetition's times from the events, handed to the sink: per layer,
 * rank and segment the time of each phase's units (mixed[p] where a graph
 * merged phase p with another), each rank's output gather, and under NCCL
 * the slowest rank's wall time from its first launch to its output
 * gather's end (there the NCCL calls wait for the peers, so a sum of each
 * segment's slowest rank would count a wait twice: engine.h). Under NCCL
 * each process times its own rank and the ranks share their times. */
static int step_time(engine_units *us, engine_step *s, size_t step, int rep, exec_engine_sink sink, void *ctx,
                     cplab_diag *d) {
  enum { ROW = EXEC_ENGINE_PHASES + 1 };
  int W = s->world, rc = 0;
  exec_engine_times tm = {.step = step, .rep = rep, .layers = us->layers, .world = W, .span = NAN};
  size_t nseg = (size_t)us->layers * (size_t)W * ENGINE_SEGMENTS * ROW;
  double *t = calloc(nseg + (size_t)W + 1, sizeof *t), *out = t ? t + nseg : NULL, span = 0;
  if (!t) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int l = 0; l < us->layers && !rc; l++)
    for (int i = 0; i < us->n && !rc; i++) {
      engine_unit *u = &us->u[i];
      float ms = 0;
      rc = cplab_event_elapsed_ms(unit_events(us, i, l)[0], unit_events(us, i, l)[1], &ms, d);
      double *row = t + (((size_t)l * (size_t)W + (size_t)u->r) * ENGINE_SEGMENTS + (size_t)u->seg) * ROW;
      int ph = engine_piece_phase[u->first];
      for (int p = u->first + 1; p < u->end; p++)
        if (engine_piece_phase[p] != ph) tm.mixed[ph] = tm.mixed[engine_piece_phase[p]] = 1;
      row[ph] += ms, row[EXEC_ENGINE_PHASES] += ms;
    }
  for (int r = held_first(s); r < held_end(s) && !rc; r++) {
    float ms = 0;
    rc = cplab_event_elapsed_ms(us->out_ev[2 * r], us->out_ev[2 * r + 1], &ms, d);
    out[r] = ms;
    if (!rc && s->nccl) { /* under NCCL the units are this rank's: unit 0 is its first */
      rc = cplab_event_elapsed_ms(unit_events(us, 0, 0)[0], us->out_ev[2 * r + 1], &ms, d);
      span = ms;
    }
  }
  if (!rc && s->nccl) { /* every rank's times, and the slowest span (times are >= 0, the others' rows 0 here) */
    t[nseg + (size_t)W] = span;
    rc = engine_nccl_max(t, nseg + (size_t)W + 1, d);
    tm.span = t[nseg + (size_t)W];
  }
  tm.seg = t, tm.out = out;
  if (!rc) rc = sink(ctx, &tm, d);
  free(t);
  return rc;
}

/* ---- the check against the executor ---------------------------------------- */

static int check_rank(engine_step *s, int r, const exec_layer *ex, exec_engine_close bound, cplab_diag *d) {
  const engine_rank *k = &s->ranks[r];
  size_t K = (size_t)k->K, H = (size_t)k->Hl, row = H * CPLAB_MLA_NOPE_DIM;
  int32_t *topk = malloc(sizeof *topk * K);
  float *out = malloc(sizeof *out * row), *lse = malloc(sizeof *lse * H * (size_t)k->D);
  double *merge = malloc(sizeof *merge * (size_t)k->D);
  int rc = topk && out && lse && merge ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int64_t i = 0; i < ex->rows && !rc; i++) {
    int64_t t = ex->tokens[i];
    rc = cplab_dev_download(topk, k->topk + (size_t)t * K, sizeof *topk * K, d);
    if (!rc) rc = cplab_dev_download(out, k->attn_out + (size_t)t * row, sizeof *out * row, d);
    if (!rc && (t >= k->Tdec || k->D == 1)) {
      rc = cplab_dev_download(lse, k->attn_lse + (size_t)t * H, sizeof *lse * H, d);
    } else if (!rc) { /* decode under DCP: the lse of the combined row from the shards' */
      size_t gq = (size_t)(k->Tdec * k->Hg);
      for (int o = 0; o < k->D && !rc; o++)
        rc = cplab_dev_download(lse + (size_t)o * H, k->glse + (size_t)o * gq + ((size_t)t * (size_t)k->Hg + (size_t)k->head_off),
                                sizeof *lse * H, d);
      for (size_t h = 0; !rc && h < H; h++) {
        for (int o = 0; o < k->D; o++) merge[o] = lse[(size_t)o * H + h];
        lse[h] = (float)exec_merged_lse(merge, k->D, 1);
      }
    }
    if (rc) break;
    const char *what = memcmp(topk, ex->topk + (size_t)i * K, sizeof *topk * K) ? "top-k differs from"
                       : !bound(out, ex->out + (size_t)i * row, lse, ex->lse + (size_t)i * H, H, CPLAB_MLA_NOPE_DIM)
                           ? "attention is beyond the kernels' bounds of"
                           : NULL;
    if (what)
      rc = cplab_diag_set(d, CPLAB_EMISMATCH, "rank %d, local token %lld: the engine's %s cplab-exec's", r,
                          (long long)t, what);
  }
  free(topk), free(out), free(lse), free(merge);
  return rc;
}

/* cplab-exec's pass on the same plans and caches: every rank on one device
 * (exec_single), this process's rank under NCCL (exec_nccl, a collective
 * call of every rank). */
static int check_step(engine_step *s, exec_single *xs, const cplab_step_input *in, cplab_rank_plan **plans,
                      const exec_engine_opts *o, int64_t *checked, cplab_diag *d) {
  int64_t rows = o->check_rows;
  exec_layer *ex = calloc((size_t)s->world, sizeof *ex);
  if (!ex) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = cplab_dev_sync(s->stream, d);
#if CPLAB_EXEC_NCCL
  if (!rc && s->nccl) rc = exec_nccl_layer(s->nccl, in, plans[s->me], 0, rows, &ex[s->me], d);
#endif
  if (!rc && !s->nccl) rc = exec_single_layer(xs, in, plans, 0, rows, ex, d);
  for (int r = held_first(s); r < held_end(s) && !rc; r++) {
    rc = check_rank(s, r, &ex[r], o->close, d);
    *checked += ex[r].rows;
  }
  for (int r = 0; r < s->world; r++) exec_layer_free(&ex[r]);
  free(ex);
  return rc;
}

/* ---- a scenario ----------------------------------------------------------- */

typedef struct engine_run {
  exec_engine *e;
  const exec_engine_opts *o;
  const cplab_scenario *sc;
  const cplab_layout *layout;
  cplab_rank_table *t;
  exec_single *xs; /* one device */
  exec_nccl *xn;   /* NCCL */
  exec_engine_sink sink;
  void *ctx;
  exec_engine_result *res;
} engine_run;

/* The executor's plan consensus (consensus.h) before any buffer is sized
 * from a plan: ranks whose plans disagree (a layout that is not
 * rank-invariant) stop here, naming the field, instead of copying between
 * blocks of different shapes. */
static int step_consensus(engine_step *s, size_t step, cplab_rank_plan **plans, cplab_diag *d) {
  int n = held_end(s) - held_first(s);
  uint64_t *words = calloc((size_t)n * EXEC_CONSENSUS_WORDS, sizeof *words);
  if (!words) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int i = 0; i < n; i++) exec_consensus_words(plans[held_first(s) + i], words + (size_t)i * EXEC_CONSENSUS_WORDS);
  int rc = 0;
#if CPLAB_EXEC_NCCL
  if (s->nccl && s->world > 1) rc = exec_consensus_mpi(words, n, s->t, step, d); /* one rank may run without MPI */
#endif
  if (!s->nccl) rc = exec_consensus_check(words, s->t, step, d);
  free(words);
  return rc;
}

/* The held ranks' plans, caches and buffers; under NCCL every rank's setup
 * is done before the ranks agree on their collectives and shapes. */
static int step_setup(engine_run *x, engine_step *s, const cplab_step_input *in, cplab_rank_plan **plans,
                      cplab_diag *d) {
  int rc = plans && s->ranks ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int r = held_first(s); r < held_end(s) && !rc; r++)
    rc = cplab_rank_plan_derive(in, r, CPLAB_PLAN_TOKEN_MAPS, &plans[r], d);
  if (!rc) rc = step_consensus(s, in->step_index, plans, d);
#if CPLAB_EXEC_NCCL
  if (!rc && s->nccl) rc = exec_nccl_fill(s->nccl, in, plans[s->me], 0, d);
#endif
  if (!rc && !s->nccl) rc = exec_single_fill(x->xs, in, plans, 0, d);
  for (int r = held_first(s); r < held_end(s) && !rc; r++) {
    const cplab_rank_ids *ids = &plans[r]->ids;
    rc = engine_rank_setup(s, r, in, plans[r], x->e->moe[moe_shard_of(&x->sc->par, ids)], d);
  }
  if (s->nccl) { /* a rank that failed must not leave the others waiting in a collective */
    rc = engine_nccl_status(rc, d);
    if (!rc) rc = engine_nccl_agree_counts(s, &s->ranks[s->me], d);
    if (!rc) rc = engine_nccl_agree_shapes(s, &s->ranks[s->me], d);
  }
  exec_arena *mem = rc ? NULL : &s->ranks[held_first(s)].mem; /* freed last (run_step) */
  if (!rc) rc = exec_arena_alloc(mem, &s->copy_src, s->copy_bytes, d);
  if (!rc) rc = exec_arena_alloc(mem, &s->copy_dst, s->copy_bytes, d);
  return rc;
}

/* The timed repetitions (ranks started together under NCCL). */
static int step_reps(engine_run *x, engine_step *s, size_t step, engine_units *us, cplab_diag *d) {
  int rc = 0;
  for (int w = 0; w < x->o->warmup && !rc; w++) rc = step_launch(us, s, d);
  if (!rc) rc = cplab_dev_sync(s->stream, d);
  for (int i = 0; i < x->o->reps && !rc; i++) {
    if (s->nccl) rc = engine_nccl_barrier(s, d);
    if (!rc) rc = step_launch(us, s, d);
    if (!rc) rc = step_time(us, s, step, i, x->sink, x->ctx, d);
  }
  return rc;
}

static int run_step(engine_run *x, size_t st, cplab_diag *d) {
  const cplab_scenario *sc = x->sc;
  int W = cplab_parallel_world(&sc->par), rc = 0;
  cplab_step_input in = {&sc->steps[st], st, sc->seed, &sc->par, &sc->model, x->layout};
  cplab_rank_plan **plans = calloc((size_t)W, sizeof *plans);
  engine_step s = {.world = W, .me = x->xn ? x->e->be.rank : -1, .ranks = calloc((size_t)W, sizeof(engine_rank)),
                   .nccl = x->xn, .t = x->t, .gemm = x->e->gemm, .stream = x->e->stream, .fp8 = x->o->fp8,
                   .head_pad = x->o->head_pad};
#if CPLAB_EXEC_NCCL
  if (x->xn) exec_nccl_caches(x->xn, &s.kv, &s.idx, &s.num_slots);
#endif
  if (x->xs) exec_single_caches(x->xs, &s.kv, &s.idx, &s.num_slots);
  engine_units us = {0};
  /* Under NCCL the ranks compare their status before each part that calls
   * collectives, so that a rank's failure stops the others there. */
  rc = step_setup(x, &s, &in, plans, d);
  /* The schedule resolved the configured mode for this batch (NONE, PIECEWISE or FULL). */
  cplab_graph_mode mode = rc ? CPLAB_GRAPH_NONE : plans[held_first(&s)]->sched.runtime_mode;
  if (!rc && st == 0) snprintf(x->res->runtime_mode, sizeof x->res->runtime_mode, "%s", cplab_graph_mode_name(mode));
  if (!rc) rc = units_build(&us, &s, mode, x->o->layers, d);
  if (s.nccl) rc = engine_nccl_status(rc, d);
  if (!rc) rc = step_reps(x, &s, st, &us, d);
  for (int r = held_first(&s); r < held_end(&s) && !rc; r++) /* the MoE's routing stayed the plan's */
    rc = s.ranks[r].moe_plan ? cplab_moe_plan_check(s.ranks[r].moe_plan, d) : 0;
  if (s.nccl) rc = engine_nccl_status(rc, d);
  if (!rc && x->o->check_rows > 0) rc = check_step(&s, x->xs, &in, plans, x->o, &x->res->checked_rows, d);
  if (s.nccl) rc = engine_nccl_status(rc, d);
  if (rc) cplab_diag_prefix(d, "step %zu: ", st);
  if (rc == CPLAB_ENOMEM && x->xs && W > 1) { /* say why one GPU was not enough, and what to do */
    char m[CPLAB_DIAG_MSG_MAX];
    snprintf(m, sizeof m, "%s", d->msg);
    cplab_diag_set(d, rc, "%s (the single-device backend holds all %d ranks' buffers and caches on one GPU: fewer "
                   "tokens a step, or --backend nccl with a GPU a rank)", m, W);
  }
  cplab_diag ignore = {0};
  cplab_dev_sync(s.stream, &ignore);
  units_free(&us);
  for (int r = W - 1; r >= 0 && s.ranks; r--) engine_rank_free(&s.ranks[r]); /* the first held rank holds the scratch */
  for (int r = 0; r < W && plans; r++) cplab_rank_plan_free(plans[r]);
  free(s.ranks), free(plans);
  return rc;
}

int exec_engine_run(exec_engine *e, const cplab_scenario *sc, const exec_engine_opts *o, exec_engine_sink sink,
                    void *ctx, exec_engine_result *res, cplab_diag *d) {
  memset(res, 0, sizeof *res);
  if (o->reps < 1 || o->warmup < 0 || o->layers < 1) CPLAB_FAIL(d, CPLAB_EINVAL, "engine: reps, warmup or layers out of range");
  if (!sink || (o->check_rows > 0 && !o->close)) CPLAB_FAIL(d, CPLAB_EINVAL, "engine: no sink, or a check without a bound");
  engine_run x = {e, o, sc, cplab_layout_find(sc->layout), NULL, NULL, NULL, sink, ctx, res};
  int bad = exec_engine_layout_supported(sc->layout, d);
  if (bad) return bad;
  int world = cplab_parallel_world(&sc->par), rc = 0;
  if (e->be.nccl && world != e->be.size)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "the layout has %d ranks, and the NCCL backend runs one process per rank "
               "(this run has %d)", world, e->be.size);
  if (!(x.t = cplab_rank_table_alloc(&sc->par, d))) rc = d->code ? d->code : CPLAB_ENOMEM;
  int only = -1;
  if (!rc && e->be.nccl) {
    cplab_rank_ids ids;
    rc = cplab_rank_ids_get(&sc->par, e->be.rank, &ids, d);
    only = moe_shard_of(&sc->par, &ids);
  }
  if (!rc) rc = moe_shards(e, sc, only, d);
#if CPLAB_EXEC_NCCL
  if (!rc && e->be.nccl) rc = exec_nccl_alloc(sc, x.layout, e->be.rank, e->be.mpi, &x.xn, d);
#endif
  if (!rc && !e->be.nccl) rc = exec_single_alloc(sc, x.layout, x.t, &x.xs, d);
  for (size_t st = 0; st < sc->num_steps && !rc; st++) rc = run_step(&x, st, d);
  if (!rc && e->be.nccl) rc = engine_nccl_sum(&res->checked_rows, 1, d);
  exec_single_free(x.xs);
#if CPLAB_EXEC_NCCL
  exec_nccl_free(x.xn);
#endif
  cplab_rank_table_free(x.t);
  return rc;
}
