/* Index maps shared by the simulator and the executor: see cplab/maps.h. */
#include "cplab/maps.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/ranks.h"
#include "cplab/seed.h"

/* Draw min(want, n) of the n tokens in pool (ascending stays ascending). */
static int64_t choose(gsl_rng *rng, const int64_t *pool, int64_t n, int64_t want, int64_t *dest) {
  if (want >= n) {
    for (int64_t i = 0; i < n; i++) dest[i] = pool[i];
    return n;
  }
  if (want > 0) gsl_ran_choose(rng, dest, (size_t)want, (void *)pool, (size_t)n, sizeof *pool);
  return want;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Global tokens sampled in the step, ascending. */
static int sample_global(const cplab_step_input *in, const cplab_schedule *sc, int64_t sampled_rows, int64_t **out,
                         int64_t *n, cplab_diag *d) {
  int64_t total = sc->token_offset[sc->num_requests];
  int64_t *decode = malloc(sizeof(int64_t) * (size_t)(total + 1)), *prefill = malloc(sizeof(int64_t) * (size_t)(total + 1));
  int64_t *pick = malloc(sizeof(int64_t) * (size_t)(total + 1));
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!decode || !prefill || !pick || !rng) {
    free(decode), free(prefill), free(pick);
    if (rng) gsl_rng_free(rng);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory sampling %lld tokens", (long long)total);
  }
  int64_t nd = 0, np = 0;
  for (int g = 0; g < sc->num_requests; g++)
    for (int64_t t = sc->token_offset[g]; t < sc->token_offset[g + 1]; t++) {
      if (in->step->requests[g].phase == CPLAB_PHASE_DECODE) decode[nd++] = t;
      else prefill[np++] = t;
    }
  gsl_rng_set(rng, cplab_seed_stream(in->seed, CPLAB_SEED_STREAM_SAMPLE + in->step_index));
  int64_t want_d = (sampled_rows + 1) / 2;
  if (want_d > nd) want_d = nd;
  int64_t want_p = sampled_rows - want_d;
  if (want_p > np) { /* too few prefill tokens: give the rest to decodes */
    want_d += want_p - np;
    want_p = np;
  }
  int64_t got = choose(rng, decode, nd, want_d, pick);
  got += choose(rng, prefill, np, want_p, pick + got);
  qsort(pick, (size_t)got, sizeof *pick, cmp_i64);
  gsl_rng_free(rng);
  free(decode);
  free(prefill);
  *out = pick;
  *n = got;
  return 0;
}

int cplab_maps_sample(const cplab_step_input *in, const cplab_rank_plan *rp, int64_t sampled_rows, int64_t **tokens,
                       int64_t *n, cplab_diag *d) {
  *tokens = NULL;
  *n = 0;
  int64_t *global = NULL, ng = 0;
  int rc = sample_global(in, &rp->sched, sampled_rows, &global, &ng, d);
  if (rc) return rc;
  int64_t *local = malloc(sizeof(int64_t) * (size_t)(ng + 1)), m = 0;
  if (!local) {
    free(global);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  }
  /* Rows are in local token order; a row's tokens are a contiguous run of
   * its request's global tokens. */
  for (int i = 0; i < rp->split.num_rows; i++) {
    const cplab_row *row = &rp->split.rows[i];
    if (row->dummy || row->len == 0) continue;
    int64_t g0 = rp->sched.token_offset[row->req] + row->start, g1 = g0 + row->len;
    for (int64_t j = 0; j < ng; j++)
      if (global[j] >= g0 && global[j] < g1) local[m++] = row->token_offset + (global[j] - g0);
  }
  free(global);
  qsort(local, (size_t)m, sizeof *local, cmp_i64);
  if (m == 0) {
    free(local);
    local = NULL;
  }
  *tokens = local;
  *n = m;
  return 0;
}

int cplab_maps_partials_alloc(const cplab_rank_plan *rp, const int64_t *tokens, int64_t n, int heads, int *blocks,
                              float **out, float **lse, cplab_diag *d) {
  *out = *lse = NULL;
  *blocks = cplab_dcp_partial_blocks(&rp->env.par);
  int64_t combined = 0;
  for (int64_t i = 0; i < n; i++) {
    const cplab_row *row = cplab_split_row_of(&rp->split, tokens[i]);
    combined += row && cplab_row_dcp_combined(&rp->env.par, row);
  }
  if (!combined) return 0;
  size_t gh = (size_t)n * (size_t)*blocks * (size_t)heads;
  *out = malloc(sizeof **out * gh * CPLAB_MLA_NOPE_DIM);
  *lse = malloc(sizeof **lse * gh);
  if (!*out || !*lse) {
    free(*out), free(*lse);
    *out = *lse = NULL;
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the decode partials of %lld rows", (long long)n);
  }
  for (size_t i = 0; i < gh * CPLAB_MLA_NOPE_DIM; i++) (*out)[i] = NAN;
  for (size_t i = 0; i < gh; i++) (*lse)[i] = NAN;
  return 0;
}

/* Slot of peer o's local index li of request g (through the block table). */
static int64_t local_slot(const cplab_rank_plan *rp, int g, int64_t li) {
  int B = rp->env.par.block_size;
  const cplab_schedule *s = &rp->sched;
  if (li / B >= s->max_blocks) return -1;
  return (int64_t)s->block_table[(int64_t)g * s->max_blocks + li / B] * B + li % B;
}

/* One shard gather: peer o copies local indices [0, n) of request g into
 * rows [start, start + n) of its shard of `cap` rows (rows past the shard
 * are dropped; a later region overwrites an earlier one). */
static void gather_region(const cplab_rank_plan *rp, int o, int g, int64_t start, int64_t n, int64_t cap, int32_t *peer,
                          int64_t *slot) {
  for (int64_t li = 0; li < n && start + li < cap; li++)
    if (start + li >= 0) peer[start + li] = o, slot[start + li] = local_slot(rp, g, li);
}

static int sources_alloc(int64_t rows, cplab_maps_sources *out, cplab_diag *d) {
  out->rows = rows;
  out->peer = malloc(sizeof *out->peer * (size_t)(rows > 0 ? rows : 1));
  out->slot = malloc(sizeof *out->slot * (size_t)(rows > 0 ? rows : 1));
  if (!out->peer || !out->slot) {
    cplab_maps_sources_free(out);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for a %lld-row gather", (long long)rows);
  }
  for (int64_t i = 0; i < rows; i++) out->peer[i] = -1, out->slot[i] = -1;
  return 0;
}

void cplab_maps_sources_free(cplab_maps_sources *s) {
  free(s->peer);
  free(s->slot);
  memset(s, 0, sizeof *s);
}

int cplab_maps_workspace_sources(const cplab_rank_plan *rp, int c, cplab_maps_sources *out, cplab_diag *d) {
  const cplab_prefill_plan *pl = &rp->prefill;
  int W = pl->W, I = rp->env.par.interleave;
  int64_t S = pl->chunks[c].shard_rows;
  int rc = sources_alloc(W * S, out, d);
  for (int o = 0; o < W && !rc; o++)
    for (int k = pl->chunks[c].first_region; k < pl->chunks[c].first_region + pl->chunks[c].num_regions; k++)
      gather_region(rp, o, pl->region_req[k], pl->workspace_start[k], cplab_kv_local_len(pl->extent[k], o, I, W), S,
                    out->peer + o * S, out->slot + o * S);
  return rc;
}

int cplab_maps_key_sources(const cplab_rank_plan *rp, int c, cplab_maps_sources *out, cplab_diag *d) {
  const cplab_indexer_plan *pl = &rp->indexer;
  int W = rp->env.par.dcp, I = rp->env.par.interleave;
  int64_t T = pl->chunks[c].padded_total;
  int rc = sources_alloc(W * T, out, d);
  for (int o = 0; o < W && !rc; o++)
    for (int k = pl->chunks[c].first_region; k < pl->chunks[c].first_region + pl->chunks[c].num_regions; k++)
      gather_region(rp, o, pl->region_req[k], pl->padded_cu[k], cplab_kv_local_len(pl->extent[k], o, I, W), T,
                    out->peer + o * T, out->slot + o * T);
  return rc;
}

typedef struct slot_pos {
  int64_t slot, p;
  int32_t g;
} slot_pos;

static int by_slot(const void *a, const void *b) {
  const slot_pos *x = a, *y = b;
  return (x->slot > y->slot) - (x->slot < y->slot);
}

int cplab_maps_written(const cplab_rank_plan *rp, int64_t **slots, int32_t **req, int64_t **pos, int64_t *n, cplab_diag *d) {
  const cplab_schedule *s = &rp->sched;
  const cplab_parallel *par = &rp->env.par;
  int o = rp->ids.dcp_rank;
  int64_t cap = 0, k = 0;
  for (int g = 0; g < s->num_requests; g++) cap += cplab_kv_local_len(s->seq_len[g], o, par->interleave, par->dcp);
  slot_pos *w = malloc(sizeof *w * (size_t)(cap ? cap : 1));
  *slots = malloc(sizeof **slots * (size_t)(cap ? cap : 1));
  *req = malloc(sizeof **req * (size_t)(cap ? cap : 1));
  *pos = malloc(sizeof **pos * (size_t)(cap ? cap : 1));
  if (!w || !*slots || !*req || !*pos) {
    free(w), free(*slots), free(*req), free(*pos);
    *slots = NULL, *req = NULL, *pos = NULL;
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %lld cache slots", (long long)cap);
  }
  for (int g = 0; g < s->num_requests; g++)
    for (int64_t p = 0; p < s->seq_len[g]; p++) {
      int64_t slot = cplab_kv_slot_per_block(par, o, s->block_table + (int64_t)g * s->max_blocks, s->max_blocks, p);
      if (slot >= 0) w[k++] = (slot_pos){slot, p, g};
    }
  qsort(w, (size_t)k, sizeof *w, by_slot);
  for (int64_t i = 0; i < k; i++) (*slots)[i] = w[i].slot, (*req)[i] = w[i].g, (*pos)[i] = w[i].p;
  free(w);
  *n = k;
  return 0;
}

uint64_t cplab_maps_cache_digest(const int64_t *slots, const uint8_t *entries, int64_t n, size_t bytes) {
  XXH3_state_t *h = XXH3_createState();
  if (!h) return 0;
  XXH3_64bits_reset(h);
  for (int64_t i = 0; i < n; i++) {
    uint8_t le[8];
    for (int b = 0; b < 8; b++) le[b] = (uint8_t)((uint64_t)slots[i] >> (8 * b));
    XXH3_64bits_update(h, le, sizeof le);
    XXH3_64bits_update(h, entries + (size_t)i * bytes, bytes);
  }
  uint64_t out = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  return out;
}
