/* The numeric pass's memory model: see numeric_mem.h. */
#include "numeric_mem.h"

#include "cplab/maps.h"

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

/* A key row as the indexer kernel reads it: the e4m3 values, then the scale
 * (poison reads NaN throughout, so that a read of it shows). */
void sim_mem_key_row(const uint8_t e[CPLAB_IDX_ENTRY_BYTES], float k[CPLAB_IDX_DIM + 1]) {
  for (int j = 0; j < CPLAB_IDX_DIM; j++) k[j] = cplab_e4m3_to_f32(e[j]);
  k[CPLAB_IDX_DIM] = cplab_kvformat_idx_scale(e);
}

int sim_mem_workspace(sim_mem *m, int c, const uint16_t **ws, int64_t *rows, cplab_diag *d) {
  if (!m->workspace[c]) {
    cplab_maps_sources src;
    int rc = cplab_maps_workspace_sources(m->rp, c, &src, d);
    if (rc) return rc;
    uint16_t *buf = malloc(sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)(src.rows > 0 ? src.rows : 1));
    if (!buf) {
      cplab_maps_sources_free(&src);
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
    cplab_maps_sources_free(&src);
    m->workspace[c] = buf;
  }
  *ws = m->workspace[c];
  *rows = m->workspace_rows[c];
  return 0;
}

int sim_mem_keys(sim_mem *m, int c, const float **keys, int64_t *rows, cplab_diag *d) {
  enum { ROW = CPLAB_IDX_DIM + 1 };
  if (!m->keys[c]) {
    cplab_maps_sources src;
    int rc = cplab_maps_key_sources(m->rp, c, &src, d);
    if (rc) return rc;
    float *buf = calloc((size_t)(src.rows > 0 ? src.rows : 1) * ROW, sizeof *buf);
    if (!buf) {
      cplab_maps_sources_free(&src);
      CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for %lld gathered keys", (long long)src.rows);
    }
    for (int64_t r = 0; r < src.rows; r++) {
      if (src.peer[r] < 0) continue; /* padding: zero bytes, a zero key with scale 0 */
      uint8_t e[CPLAB_IDX_ENTRY_BYTES];
      sim_mem_idx_entry(m, src.peer[r], src.slot[r], e);
      sim_mem_key_row(e, buf + (size_t)r * ROW);
    }
    m->keys_rows[c] = src.rows;
    cplab_maps_sources_free(&src);
    m->keys[c] = buf;
  }
  *keys = m->keys[c];
  *rows = m->keys_rows[c];
  return 0;
}

int sim_mem_cache_digest(const sim_mem *m, int which, uint64_t *out, cplab_diag *d) {
  int64_t *slots, *pos, n;
  int32_t *req;
  int rc = cplab_maps_written(m->rp, &slots, &req, &pos, &n, d);
  if (rc) return rc;
  size_t bytes = which == 0 ? CPLAB_MLA_ENTRY_BYTES : CPLAB_IDX_ENTRY_BYTES;
  uint8_t *entries = malloc(bytes * (size_t)(n ? n : 1));
  if (!entries) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory for the cache digest");
  for (int64_t i = 0; !rc && i < n; i++) {
    uint32_t id = request_id(m, req[i]), p = (uint32_t)pos[i];
    if (which == 0) cplab_kvformat_mla_generate(m->in->seed, (uint32_t)m->layer, id, p, entries + (size_t)i * bytes);
    else cplab_kvformat_idx_generate(m->in->seed, (uint32_t)m->layer, id, p, entries + (size_t)i * bytes);
  }
  if (!rc) *out = cplab_maps_cache_digest(slots, entries, n, bytes);
  free(entries), free(slots), free(req), free(pos);
  return rc;
}
