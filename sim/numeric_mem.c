/* The numeric pass's memory model: see numeric_mem.h. */
#include "numeric_mem.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cplab/fp8.h"
#include "cplab/kv.h"

static int by_phys(const void *a, const void *b) {
  const sim_mem_block *x = a, *y = b;
  return (x->phys > y->phys) - (x->phys < y->phys);
}

int sim_mem_init(sim_mem *m, const cplab_step_input *in, const cplab_rank_plan *rp, int layer, cplab_diag *d) {
  memset(m, 0, sizeof *m);
  m->in = in, m->rp = rp, m->layer = layer;
  const cplab_schedule *s = &rp->sched;
  m->nblocks = (int64_t)s->num_requests * s->max_blocks;
  m->blocks = malloc(sizeof *m->blocks * (size_t)(m->nblocks ? m->nblocks : 1));
  m->workspace = calloc((size_t)rp->prefill.num_chunks + 1, sizeof *m->workspace);
  m->keys = calloc((size_t)rp->indexer.num_chunks + 1, sizeof *m->keys);
  m->workspace_rows = calloc((size_t)rp->prefill.num_chunks + 1, sizeof *m->workspace_rows);
  m->keys_rows = calloc((size_t)rp->indexer.num_chunks + 1, sizeof *m->keys_rows);
  if (!m->blocks || !m->workspace || !m->keys || !m->workspace_rows || !m->keys_rows) {
    sim_mem_fini(m);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the memory model");
  }
  for (int g = 0; g < s->num_requests; g++)
    for (int j = 0; j < s->max_blocks; j++)
      m->blocks[(int64_t)g * s->max_blocks + j] = (sim_mem_block){s->block_table[(int64_t)g * s->max_blocks + j], g, j};
  qsort(m->blocks, (size_t)m->nblocks, sizeof *m->blocks, by_phys);
  return 0;
}

void sim_mem_fini(sim_mem *m) {
  if (m->workspace)
    for (int c = 0; c < m->rp->prefill.num_chunks; c++) free(m->workspace[c]);
  if (m->keys)
    for (int c = 0; c < m->rp->indexer.num_chunks; c++) free(m->keys[c]);
  free(m->workspace);
  free(m->keys);
  free(m->workspace_rows);
  free(m->keys_rows);
  free(m->blocks);
  memset(m, 0, sizeof *m);
}

/* The token peer o wrote at slot: request g and position p, or 0 when none. */
static int written_at(const sim_mem *m, int o, int64_t slot, int *g, int64_t *p) {
  const cplab_parallel *par = m->in->par;
  int B = par->block_size;
  if (slot < 0) return 0;
  sim_mem_block key = {(int32_t)(slot / B), 0, 0};
  const sim_mem_block *b = bsearch(&key, m->blocks, (size_t)m->nblocks, sizeof *b, by_phys);
  if (!b) return 0;
  int64_t li = (int64_t)b->j * B + slot % B;
  int64_t pos = sim_mem_position(li, o, par->interleave, par->dcp);
  if (pos >= m->rp->sched.seq_len[b->req]) return 0;
  /* Only the slot the slot-mapping kernel computes for pos holds it. */
  const int32_t *row = m->rp->sched.block_table + (int64_t)b->req * m->rp->sched.max_blocks;
  if (cplab_kv_slot_per_block(par, o, row, m->rp->sched.max_blocks, pos) != slot) return 0;
  *g = b->req, *p = pos;
  return 1;
}

static uint32_t request_id(const sim_mem *m, int g) { return (uint32_t)m->in->step->requests[g].id; }

int sim_mem_kv_entry(const sim_mem *m, int o, int64_t slot, uint8_t entry[CPLAB_MLA_ENTRY_BYTES]) {
  int g;
  int64_t p;
  if (!written_at(m, o, slot, &g, &p)) {
    memset(entry, 0xFF, CPLAB_MLA_ENTRY_BYTES);
    return 0;
  }
  cplab_kvformat_mla_generate(m->in->seed, (uint32_t)m->layer, request_id(m, g), (uint32_t)p, entry);
  return 1;
}

int sim_mem_idx_entry(const sim_mem *m, int o, int64_t slot, uint8_t entry[CPLAB_IDX_ENTRY_BYTES]) {
  int g;
  int64_t p;
  if (!written_at(m, o, slot, &g, &p)) {
    memset(entry, 0xFF, CPLAB_IDX_ENTRY_BYTES);
    return 0;
  }
  cplab_kvformat_idx_generate(m->in->seed, (uint32_t)m->layer, request_id(m, g), (uint32_t)p, entry);
  return 1;
}

/* Slot of peer o's local index li of request g (through the block table). */
static int64_t local_slot(const sim_mem *m, int g, int64_t li) {
  int B = m->in->par->block_size;
  const cplab_schedule *s = &m->rp->sched;
  if (li / B >= s->max_blocks) return -1;
  return (int64_t)s->block_table[(int64_t)g * s->max_blocks + li / B] * B + li % B;
}

/* A key row as the indexer kernel reads it: the e4m3 values, then the scale
 * (poison reads NaN throughout, so that a read of it shows). */
void sim_mem_key_row(const uint8_t e[CPLAB_IDX_ENTRY_BYTES], float k[CPLAB_IDX_DIM + 1]) {
  for (int j = 0; j < CPLAB_IDX_DIM; j++) k[j] = cplab_e4m3_to_f32(e[j]);
  k[CPLAB_IDX_DIM] = cplab_kvformat_idx_scale(e);
}

/* One shard gather: peer o copies local indices [0, n) of request g into
 * rows [start, start + n) of its shard of `cap` rows (rows past the shard
 * are dropped; a later region overwrites an earlier one). */
static void gather_region(const sim_mem *m, int o, int g, int64_t start, int64_t n, int64_t cap, int32_t *peer,
                          int64_t *slot) {
  for (int64_t li = 0; li < n && start + li < cap; li++)
    if (start + li >= 0) peer[start + li] = o, slot[start + li] = local_slot(m, g, li);
}

static int sources_alloc(int64_t rows, sim_mem_sources *out, cplab_diag *d) {
  out->rows = rows;
  out->peer = malloc(sizeof *out->peer * (size_t)(rows > 0 ? rows : 1));
  out->slot = malloc(sizeof *out->slot * (size_t)(rows > 0 ? rows : 1));
  if (!out->peer || !out->slot) {
    sim_mem_sources_free(out);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for a %lld-row gather", (long long)rows);
  }
  for (int64_t i = 0; i < rows; i++) out->peer[i] = -1, out->slot[i] = -1;
  return 0;
}

void sim_mem_sources_free(sim_mem_sources *s) {
  free(s->peer);
  free(s->slot);
  memset(s, 0, sizeof *s);
}

int sim_mem_workspace_sources(const sim_mem *m, int c, sim_mem_sources *out, cplab_diag *d) {
  const cplab_prefill_plan *pl = &m->rp->prefill;
  int W = pl->W, I = m->in->par->interleave;
  int64_t S = pl->chunks[c].shard_rows;
  int rc = sources_alloc(W * S, out, d);
  for (int o = 0; o < W && !rc; o++)
    for (int k = pl->chunks[c].first_region; k < pl->chunks[c].first_region + pl->chunks[c].num_regions; k++)
      gather_region(m, o, pl->region_req[k], pl->workspace_start[k], cplab_kv_local_len(pl->extent[k], o, I, W), S,
                    out->peer + o * S, out->slot + o * S);
  return rc;
}

int sim_mem_key_sources(const sim_mem *m, int c, sim_mem_sources *out, cplab_diag *d) {
  const cplab_indexer_plan *pl = &m->rp->indexer;
  int W = m->in->par->dcp, I = m->in->par->interleave;
  int64_t T = pl->chunks[c].padded_total;
  int rc = sources_alloc(W * T, out, d);
  for (int o = 0; o < W && !rc; o++)
    for (int k = pl->chunks[c].first_region; k < pl->chunks[c].first_region + pl->chunks[c].num_regions; k++)
      gather_region(m, o, pl->region_req[k], pl->padded_cu[k], cplab_kv_local_len(pl->extent[k], o, I, W), T,
                    out->peer + o * T, out->slot + o * T);
  return rc;
}

int sim_mem_workspace(sim_mem *m, int c, const uint16_t **ws, int64_t *rows, cplab_diag *d) {
  if (!m->workspace[c]) {
    sim_mem_sources src;
    int rc = sim_mem_workspace_sources(m, c, &src, d);
    if (rc) return rc;
    uint16_t *buf = malloc(sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)(src.rows > 0 ? src.rows : 1));
    if (!buf) {
      sim_mem_sources_free(&src);
      CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for a %lld-row workspace", (long long)src.rows);
    }
    for (int64_t r = 0; r < src.rows; r++) {
      uint16_t *row = buf + (size_t)r * CPLAB_MLA_ROW_DIM;
      if (src.peer[r] < 0) {
        for (int j = 0; j < CPLAB_MLA_ROW_DIM; j++) row[j] = SIM_BF16_NAN;
      } else {
        uint8_t e[CPLAB_MLA_ENTRY_BYTES];
        sim_mem_kv_entry(m, src.peer[r], src.slot[r], e);
        cplab_kvformat_mla_dequantize(e, row);
      }
    }
    m->workspace_rows[c] = src.rows;
    sim_mem_sources_free(&src);
    m->workspace[c] = buf;
  }
  *ws = m->workspace[c];
  *rows = m->workspace_rows[c];
  return 0;
}

int sim_mem_keys(sim_mem *m, int c, const float **keys, int64_t *rows, cplab_diag *d) {
  enum { ROW = CPLAB_IDX_DIM + 1 };
  if (!m->keys[c]) {
    sim_mem_sources src;
    int rc = sim_mem_key_sources(m, c, &src, d);
    if (rc) return rc;
    float *buf = calloc((size_t)(src.rows > 0 ? src.rows : 1) * ROW, sizeof *buf);
    if (!buf) {
      sim_mem_sources_free(&src);
      CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %lld gathered keys", (long long)src.rows);
    }
    for (int64_t r = 0; r < src.rows; r++) {
      if (src.peer[r] < 0) continue; /* padding: zero bytes, a zero key with scale 0 */
      uint8_t e[CPLAB_IDX_ENTRY_BYTES];
      sim_mem_idx_entry(m, src.peer[r], src.slot[r], e);
      sim_mem_key_row(e, buf + (size_t)r * ROW);
    }
    m->keys_rows[c] = src.rows;
    sim_mem_sources_free(&src);
    m->keys[c] = buf;
  }
  *keys = m->keys[c];
  *rows = m->keys_rows[c];
  return 0;
}

typedef struct slot_pos {
  int64_t slot, p;
  int32_t g;
} slot_pos;

static int by_slot(const void *a, const void *b) {
  const slot_pos *x = a, *y = b;
  return (x->slot > y->slot) - (x->slot < y->slot);
}

int sim_mem_written(const sim_mem *m, int64_t **slots, int32_t **req, int64_t **pos, int64_t *n, cplab_diag *d) {
  const cplab_schedule *s = &m->rp->sched;
  const cplab_parallel *par = m->in->par;
  int o = m->rp->ids.dcp_rank;
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

uint64_t sim_mem_digest_entries(const int64_t *slots, const uint8_t *entries, int64_t n, size_t bytes) {
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

int sim_mem_cache_digest(const sim_mem *m, int which, uint64_t *out, cplab_diag *d) {
  int64_t *slots, *pos, n;
  int32_t *req;
  int rc = sim_mem_written(m, &slots, &req, &pos, &n, d);
  if (rc) return rc;
  size_t bytes = which == 0 ? CPLAB_MLA_ENTRY_BYTES : CPLAB_IDX_ENTRY_BYTES;
  uint8_t *entries = malloc(bytes * (size_t)(n ? n : 1));
  if (!entries) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory for the cache digest");
  for (int64_t i = 0; !rc && i < n; i++) {
    uint32_t id = request_id(m, req[i]), p = (uint32_t)pos[i];
    if (which == 0) cplab_kvformat_mla_generate(m->in->seed, (uint32_t)m->layer, id, p, entries + (size_t)i * bytes);
    else cplab_kvformat_idx_generate(m->in->seed, (uint32_t)m->layer, id, p, entries + (size_t)i * bytes);
  }
  if (!rc) *out = sim_mem_digest_entries(slots, entries, n, bytes);
  free(entries), free(slots), free(req), free(pos);
  return rc;
}
