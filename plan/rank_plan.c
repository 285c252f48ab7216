/* One rank's plan for one step, from its own view: the schedule (shared data),
 * its rows, its share of every context, the gathered prefill and indexer
 * plans, the collectives and, on request, the per-token maps. */
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/plan.h"

void cplab_rank_plan_free(cplab_rank_plan *p) {
  if (!p) return;
  cplab_schedule_free(&p->sched);
  cplab_split_free(&p->split);
  free(p->local_len);
  free(p->slot_mapping);
  free(p->gather_idx);
  free(p->write_mask);
  free(p->restore_idx);
  cplab_prefill_plan_free(&p->prefill);
  cplab_indexer_plan_free(&p->indexer);
  free(p->collectives);
  free(p);
}

/* slot_mapping: this DCP rank's slot of every new token (global form). Only
 * this rank's stripes (I tokens every I·D) are visited; the rest is -1. */
static int slot_map(cplab_rank_plan *p, const cplab_step *step, cplab_diag *d) {
  p->slot_mapping = malloc((size_t)(p->total_tokens ? p->total_tokens : 1) * sizeof(int64_t));
  if (!p->slot_mapping) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the slot mapping");
  const cplab_schedule *s = &p->sched;
  const cplab_parallel *par = &p->env.par;
  int64_t I = par->interleave, span = I * par->dcp;
  for (int64_t t = 0; t < p->total_tokens; t++) p->slot_mapping[t] = CPLAB_PAD_SLOT;
  for (int g = 0; g < s->num_requests; g++) {
    const cplab_request *q = &step->requests[g];
    const int32_t *row = s->block_table + (size_t)g * s->max_blocks;
    int64_t *out = p->slot_mapping + s->token_offset[g], first = q->num_computed, end = first + q->new_tokens;
    for (int64_t stripe = first / span * span + p->ids.dcp_rank * I; stripe < end; stripe += span) {
      int64_t lo = stripe > first ? stripe : first, hi = stripe + I < end ? stripe + I : end;
      for (int64_t pos = lo; pos < hi; pos++)
        out[pos - first] = cplab_kv_slot_global(par, p->ids.dcp_rank, row, s->max_blocks, pos);
    }
  }
  return 0;
}

/* §3.7: the PCP gathered buffer holds every PCP rank's tokens in rank-major
 * blocks of padded_num_tokens. Derived from every rank's rows, which any rank
 * can compute from shared data. Replicated tokens are restored from and
 * written by rank 0's copy only. */
static int gather_maps(cplab_rank_plan *p, const cplab_step *step, cplab_diag *d) {
  const cplab_schedule *s = &p->sched;
  int P = p->env.par.pcp;
  int64_t T = s->padded_num_tokens, slots = (int64_t)P * T;
  p->gather_idx = calloc((size_t)(slots ? slots : 1), sizeof(int32_t));
  p->write_mask = calloc((size_t)(slots ? slots : 1), 1);
  p->restore_idx = malloc((size_t)(p->total_tokens ? p->total_tokens : 1) * sizeof(int32_t));
  if (!p->gather_idx || !p->write_mask || !p->restore_idx) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the gather maps");
  for (int64_t i = 0; i < p->total_tokens; i++) p->restore_idx[i] = -1;
  for (int o = 0; o < P; o++) {
    cplab_split other;
    int rc = cplab_split_derive(s, step, &p->env, o, 0, &other, d);
    if (rc) return rc;
    for (int i = 0; i < other.num_rows; i++) {
      const cplab_row *row = &other.rows[i];
      for (int64_t j = 0; j < row->len; j++) {
        int64_t slot = o * T + row->token_offset + j, global = s->token_offset[row->req] + row->start + j;
        p->gather_idx[slot] = (int32_t)global;
        int primary = o == 0 || !row->replicated;
        p->write_mask[slot] = (uint8_t)primary;
        if (primary) p->restore_idx[global] = (int32_t)slot;
      }
    }
    cplab_split_free(&other);
  }
  return 0;
}

int cplab_rank_plan_derive(const cplab_step_input *in, int rank, int flags, cplab_rank_plan **out, cplab_diag *d) {
  *out = NULL;
  if (!in->step || in->step->num_requests == 0) CPLAB_FAIL(d, CPLAB_EINVAL, "a step needs at least one request");
  cplab_rank_plan *p = calloc(1, sizeof *p);
  if (!p) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for a rank plan");
  p->layout = in->layout;
  p->flags = flags;
  cplab_layout_env_init(&p->env, in->par);
  int rc = cplab_rank_ids_get(in->par, rank, &p->ids, d);
  if (!rc) rc = cplab_schedule_derive(in, &p->env, &p->sched, d);
  if (!rc) rc = cplab_split_derive(&p->sched, in->step, &p->env, p->ids.pcp, p->ids.dcp_rank, &p->split, d);
  if (!rc) {
    int R = p->sched.num_requests;
    p->total_tokens = p->sched.token_offset[R];
    p->local_len = calloc((size_t)R, sizeof(int64_t));
    if (!p->local_len) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    for (int g = 0; !rc && g < R; g++)
      p->local_len[g] = cplab_kv_local_len(p->sched.seq_len[g], p->ids.dcp_rank, in->par->interleave, in->par->dcp);
  }
  if (!rc) rc = cplab_prefill_plan_derive(p, &p->prefill, d);
  if (!rc) rc = cplab_indexer_plan_derive(p, &p->indexer, d);
  if (!rc) rc = cplab_collectives_derive(p, in->model, d);
  if (!rc && (flags & CPLAB_PLAN_TOKEN_MAPS)) {
    rc = slot_map(p, in->step, d);
    if (!rc) rc = gather_maps(p, in->step, d);
  }
  if (rc) {
    cplab_rank_plan_free(p);
    return rc;
  }
  *out = p;
  return 0;
}
