/* Writing traces: see include/cplab/trace.h and traces/SCHEMA.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cplab/atomic.h"
#include "cplab/trace.h"
#include "h5util.h"
#include "schema.h"

struct cplab_trace_writer {
  hid_t file;
  char *path, *tmp;
  int rank;
  cplab_rank_ids ids; /* rank files: the ids /groups records, which every plan written must carry */
};

int cplab_trace_rank_path(const char *run_path, int rank, char *out, size_t cap, cplab_diag *d) {
  size_t n = strlen(run_path);
  if (n < 4 || strcmp(run_path + n - 3, ".h5") != 0)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "trace path '%s' must end in .h5", run_path);
  int w = snprintf(out, cap, "%.*s.r%04d.h5", (int)(n - 3), run_path, rank);
  if (w < 0 || (size_t)w >= cap) CPLAB_FAIL(d, CPLAB_ERANGE, "trace path '%s' is too long", run_path);
  return 0;
}

static int write_model_and_layout(hid_t cfg, const cplab_scenario *s, cplab_diag *d) {
  size_t n;
  const cplab_model_field *f = cplab_model_fields(&n);
  int rc = h5u_attr_str(cfg, "model_preset", s->model.preset, d);
  for (size_t i = 0; !rc && i < n; i++) rc = h5u_attr_i64(cfg, f[i].name, cplab_model_field_get(&s->model, &f[i]), d);
  const cplab_parallel *p = &s->par;
  if (!rc) rc = h5u_attr_i32(cfg, "tp", p->tp, d);
  if (!rc) rc = h5u_attr_i32(cfg, "pcp", p->pcp, d);
  if (!rc) rc = h5u_attr_i32(cfg, "dcp", p->dcp, d);
  if (!rc) rc = h5u_attr_i32(cfg, "pp", p->pp, d);
  if (!rc) rc = h5u_attr_i32(cfg, "interleave", p->interleave, d);
  if (!rc) rc = h5u_attr_i32(cfg, "num_spec_tokens", p->num_spec_tokens, d);
  if (!rc) rc = h5u_attr_i32(cfg, "block_size", p->block_size, d);
  if (!rc) rc = h5u_attr_i64(cfg, "max_model_len", p->max_model_len, d);
  if (!rc) rc = h5u_attr_i64(cfg, "indexer_max_logits_mb", p->indexer_max_logits_mb, d);
  if (!rc) rc = h5u_attr_str(cfg, "cudagraph_mode", cplab_graph_mode_name(p->graph_mode), d);
  if (!rc) rc = h5u_attr_str(cfg, "scenario", s->name, d);
  if (!rc) rc = h5u_attr_str(cfg, "layout", s->layout, d);
  if (!rc) rc = h5u_attr_u64(cfg, "seed", s->seed, d);
  if (!rc) rc = h5u_attr_i64(cfg, "sampled_rows", s->sampled_rows, d);
  return rc;
}

static int write_config(hid_t file, const cplab_scenario *s, cplab_diag *d) {
  hid_t cfg = h5u_group_create(file, "config", d);
  if (cfg < 0) return d->code;
  int rc = write_model_and_layout(cfg, s, d);
  if (!rc) {
    json_t *j = cplab_scenario_to_json(s, 1);
    char *text = j ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    rc = text ? h5u_write_text(cfg, "scenario_json", text, d) : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    free(text);
    json_decref(j);
  }
  if (!rc) rc = h5u_write_text(cfg, "source_json", s->source_json ? s->source_json : "", d);
  h5u_close(cfg);
  return rc;
}

static int write_provenance(hid_t file, const cplab_trace_provenance *prov, cplab_diag *d) {
  hid_t g = h5u_group_create(file, "provenance", d);
  if (g < 0) return d->code;
  unsigned maj, min, rel;
  char hdf5[32], host[256] = "unknown";
  H5get_libversion(&maj, &min, &rel);
  snprintf(hdf5, sizeof hdf5, "%u.%u.%u", maj, min, rel);
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = '\0';
  int rc = h5u_attr_str(g, "producer", prov->producer, d);
  if (!rc) rc = h5u_attr_str(g, "cplab_version", PACKAGE_VERSION, d);
  if (!rc) rc = h5u_attr_str(g, "hdf5_version", hdf5, d);
  if (!rc) rc = h5u_attr_str(g, "compiler", __VERSION__, d);
  if (!rc) rc = h5u_attr_str(g, "host", host, d);
  if (!rc) rc = h5u_attr_str(g, "command_line", prov->command_line ? prov->command_line : "", d);
  if (!rc) rc = h5u_attr_str(g, "git_commit", prov->git_commit ? prov->git_commit : CPLAB_GIT_COMMIT, d);
  if (!rc) rc = h5u_attr_str(g, "device", prov->device ? prov->device : "", d);
  if (!rc) rc = h5u_attr_str(g, "mpi", prov->mpi ? prov->mpi : "", d);
  if (!rc) rc = h5u_attr_str(g, "cuda", prov->cuda ? prov->cuda : "", d);
  if (!rc) rc = h5u_attr_str(g, "nccl", prov->nccl ? prov->nccl : "", d);
  h5u_close(g);
  return rc;
}

/* Rank files: the rank's ids and the members of its TP, PCP and DCP groups
 * (SCHEMA.md "/groups"), so that a reader can check a rank's collectives and
 * its dcp_rank without re-deriving the numbering. */
static int write_groups(hid_t file, const cplab_parallel *par, const cplab_rank_ids *ids, cplab_diag *d) {
  hid_t g = h5u_group_create(file, "groups", d);
  if (g < 0) return d->code;
  int v[SCHEMA_GROUP_ATTRS], rc = 0;
  schema_group_values(ids, v);
  for (int i = 0; i < SCHEMA_GROUP_ATTRS && !rc; i++) rc = h5u_attr_i32(g, schema_group_attrs[i], v[i], d);
  int *members = rc ? NULL : malloc((size_t)cplab_parallel_world(par) * sizeof *members);
  if (!rc && !members) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int k = CPLAB_GROUP_TP; !rc && k <= CPLAB_GROUP_DCP; k++) {
    rc = cplab_group_members(par, (cplab_group_kind)k, ids->rank, members, d);
    if (!rc) rc = h5u_write1(g, schema_group_lists[k], H5U_I32, (uint64_t)cplab_group_size(par, (cplab_group_kind)k), members, d);
  }
  free(members);
  h5u_close(g);
  return rc;
}

static void writer_free(cplab_trace_writer *w) {
  if (!w) return;
  free(w->path);
  free(w->tmp);
  free(w);
}

int cplab_trace_create(const char *path, const cplab_scenario *s, int rank, const cplab_trace_provenance *prov,
                       cplab_trace_writer **out, cplab_diag *d) {
  *out = NULL;
  h5u_quiet();
  if (strcmp(prov->producer, "sim") != 0 && strcmp(prov->producer, "exec") != 0)
    CPLAB_FAIL(d, CPLAB_EINVAL, "trace producer must be sim or exec, got '%s'", prov->producer);
  cplab_trace_writer *w = calloc(1, sizeof *w);
  if (!w || !(w->path = strdup(path))) {
    writer_free(w);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  }
  w->rank = rank;
  w->file = -1;
  int begun = cplab_atomic_begin(path, &w->tmp, d);
  if (begun) {
    writer_free(w);
    return begun;
  }
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE);
  int rc = 0;
  /* Pinned format bounds and no timestamps: the same run, the same bytes. */
  if (fapl < 0 || fcpl < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0 ||
      H5Pset_obj_track_times(fcpl, 0) < 0)
    rc = h5u_fail(d, "cannot set up file properties for '%s'", path);
  if (!rc && (w->file = H5Fcreate(w->tmp, H5F_ACC_TRUNC, fcpl, fapl)) < 0)
    rc = h5u_fail(d, "cannot create '%s'", w->tmp);
  h5u_close(fapl);
  h5u_close(fcpl);
  if (!rc) rc = h5u_attr_str(w->file, "cplab_schema", CPLAB_TRACE_SCHEMA, d);
  if (!rc) rc = h5u_attr_str(w->file, "producer", prov->producer, d);
  if (!rc) rc = h5u_attr_str(w->file, "file_kind", rank < 0 ? "run" : "rank", d);
  if (!rc) rc = h5u_attr_i32(w->file, "world_size", cplab_parallel_world(&s->par), d);
  if (!rc) rc = h5u_attr_i64(w->file, "num_steps", (int64_t)s->num_steps, d);
  if (!rc && rank >= 0) rc = h5u_attr_i32(w->file, "rank", rank, d);
  if (!rc) rc = write_config(w->file, s, d);
  if (!rc && rank >= 0) rc = cplab_rank_ids_get(&s->par, rank, &w->ids, d);
  if (!rc && rank >= 0) rc = write_groups(w->file, &s->par, &w->ids, d);
  if (!rc) rc = write_provenance(w->file, prov, d);
  hid_t steps = rc || rank < 0 ? -1 : h5u_group_create(w->file, "steps", d);
  if (!rc && rank >= 0 && steps < 0) rc = d->code;
  h5u_close(steps);
  if (rc) {
    cplab_trace_abort(w);
    return rc;
  }
  *out = w;
  return 0;
}

/* ---- plans ---------------------------------------------------------------- */
static int write_schedule(hid_t g, const cplab_rank_plan *p, cplab_diag *d) {
  const cplab_schedule *s = &p->sched;
  uint64_t R = (uint64_t)s->num_requests;
  uint64_t bt[2] = {R, (uint64_t)s->max_blocks};
  int rc = h5u_attr_i64(g, "num_requests", s->num_requests, d);
  if (!rc) rc = h5u_attr_i64(g, "all_rows_replicated", s->all_rows_replicated, d);
  if (!rc) rc = h5u_attr_i64(g, "uniform_decode", s->uniform_decode, d);
  if (!rc) rc = h5u_attr_str(g, "runtime_mode", cplab_graph_mode_name(s->runtime_mode), d);
  if (!rc) rc = h5u_attr_i64(g, "moe_fast_path", s->moe_fast_path, d);
  if (!rc) rc = h5u_attr_i64(g, "padded_num_tokens", s->padded_num_tokens, d);
  if (!rc) rc = h5u_attr_i64(g, "padded_prefill_tokens", s->padded_prefill_tokens, d);
  if (!rc) rc = h5u_attr_i64(g, "dispatch_rows", s->dispatch_rows, d);
  if (!rc) rc = h5u_attr_i64(g, "dispatch_tokens", s->dispatch_tokens, d);
  if (!rc) rc = h5u_attr_i64(g, "dispatch_longest", s->dispatch_longest, d);
  if (!rc) rc = h5u_attr_i64(g, "max_blocks", s->max_blocks, d);
  if (!rc) rc = h5u_attr_u64(g, "shared_digest", cplab_rank_plan_shared_digest(p), d);
  if (!rc) rc = h5u_write1(g, "seq_len", H5U_I64, R, s->seq_len, d);
  if (!rc) rc = h5u_write1(g, "replicated", H5U_U8, R, s->replicated, d);
  if (!rc) rc = h5u_write1(g, "nominal_q", H5U_I64, R, s->nominal_q, d);
  if (!rc) rc = h5u_write1(g, "token_offset", H5U_I64, R + 1, s->token_offset, d);
  if (!rc) rc = h5u_write(g, "block_table", H5U_I32, 2, bt, s->block_table, d);
  if (!rc) rc = h5u_write1(g, "local_len", H5U_I64, R, p->local_len, d);
  return rc;
}

static int write_rows(hid_t g, const cplab_rank_plan *p, cplab_diag *d) {
  const cplab_split *sp = &p->split;
  int64_t *t = malloc((size_t)sp->num_rows * SCHEMA_ROW_COLS * sizeof *t);
  if (!t) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int i = 0; i < sp->num_rows; i++) {
    const cplab_row *r = &sp->rows[i];
    int64_t *o = t + (size_t)i * SCHEMA_ROW_COLS;
    o[0] = r->req, o[1] = r->is_prefill, o[2] = r->replicated, o[3] = r->dummy, o[4] = r->start, o[5] = r->len;
    o[6] = r->start_pos, o[7] = r->seq_len, o[8] = r->dcp_local_seq_len, o[9] = r->token_offset;
  }
  int rc = h5u_write_table(g, "rows", SCHEMA_ROW_COLS, SCHEMA_ROW_COLUMNS, (uint64_t)sp->num_rows, t, d);
  free(t);
  if (!rc) rc = h5u_attr_i64(g, "num_decode_rows", sp->num_decode_rows, d);
  if (!rc) rc = h5u_attr_i64(g, "num_tokens", sp->num_tokens, d);
  if (!rc) rc = h5u_attr_i64(g, "num_decode_tokens", sp->num_decode_tokens, d);
  return rc;
}

static int write_prefill(hid_t step, const cplab_prefill_plan *f, cplab_diag *d) {
  hid_t g = h5u_group_create(step, "prefill", d);
  if (g < 0) return d->code;
  uint64_t K = (uint64_t)f->num_regions;
  int rc = h5u_attr_i64(g, "active", f->active, d);
  if (!rc) rc = h5u_attr_i64(g, "W", f->W, d);
  if (!rc) rc = h5u_attr_i64(g, "budget", f->budget, d);
  if (!rc) rc = h5u_write1(g, "region_req", H5U_I32, K, f->region_req, d);
  if (!rc) rc = h5u_write1(g, "region_first_row", H5U_I32, K, f->region_first_row, d);
  if (!rc) rc = h5u_write1(g, "region_chunk", H5U_I32, K, f->region_chunk, d);
  if (!rc) rc = h5u_write1(g, "extent", H5U_I64, K, f->extent, d);
  if (!rc) rc = h5u_write1(g, "rows_per_rank", H5U_I64, K, f->rows_per_rank, d);
  if (!rc) rc = h5u_write1(g, "workspace_start", H5U_I64, K, f->workspace_start, d);
  int64_t *t = rc ? NULL : malloc((size_t)(f->num_chunks + 1) * SCHEMA_PREFILL_CHUNK_COLS * sizeof *t);
  if (!rc && !t) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int c = 0; !rc && c < f->num_chunks; c++) {
    const cplab_prefill_chunk *ch = &f->chunks[c];
    int64_t *o = t + (size_t)c * SCHEMA_PREFILL_CHUNK_COLS;
    o[0] = ch->first_region, o[1] = ch->num_regions, o[2] = ch->shard_rows, o[3] = ch->token_begin, o[4] = ch->token_end;
  }
  if (!rc)
    rc = h5u_write_table(g, "chunks", SCHEMA_PREFILL_CHUNK_COLS, SCHEMA_PREFILL_CHUNK_COLUMNS, (uint64_t)f->num_chunks,
                         t, d);
  free(t);
  h5u_close(g);
  return rc;
}

static int write_indexer(hid_t step, const cplab_rank_plan *p, cplab_diag *d) {
  const cplab_indexer_plan *x = &p->indexer;
  hid_t g = h5u_group_create(step, "indexer", d);
  if (g < 0) return d->code;
  uint64_t K = (uint64_t)x->num_regions;
  int rc = h5u_attr_i64(g, "active", x->active, d);
  if (!rc) rc = h5u_write1(g, "region_req", H5U_I32, K, x->region_req, d);
  if (!rc) rc = h5u_write1(g, "region_chunk", H5U_I32, K, x->region_chunk, d);
  if (!rc) rc = h5u_write1(g, "extent", H5U_I64, K, x->extent, d);
  if (!rc) rc = h5u_write1(g, "nominal_q", H5U_I64, K, x->nominal_q, d);
  if (!rc) rc = h5u_write1(g, "padded", H5U_I64, K, x->padded, d);
  if (!rc) rc = h5u_write1(g, "padded_cu", H5U_I64, K, x->padded_cu, d);
  if (!rc) rc = h5u_write1(g, "region_start", H5U_I64, K, x->region_start, d);
  int64_t *t = rc ? NULL : malloc((size_t)(x->num_chunks + 1) * SCHEMA_INDEXER_CHUNK_COLS * sizeof *t);
  if (!rc && !t) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  for (int c = 0; !rc && c < x->num_chunks; c++) {
    const cplab_indexer_chunk *ch = &x->chunks[c];
    int64_t *o = t + (size_t)c * SCHEMA_INDEXER_CHUNK_COLS;
    o[0] = ch->first_region, o[1] = ch->num_regions, o[2] = ch->key_rows, o[3] = ch->padded_total, o[4] = ch->q_begin;
    o[5] = ch->q_end, o[6] = ch->query_split, o[7] = ch->skip_kv_gather, o[8] = ch->token_begin, o[9] = ch->token_end;
  }
  if (!rc)
    rc = h5u_write_table(g, "chunks", SCHEMA_INDEXER_CHUNK_COLS, SCHEMA_INDEXER_CHUNK_COLUMNS, (uint64_t)x->num_chunks,
                         t, d);
  free(t);
  if (!rc && x->ks) rc = h5u_write1(g, "ks", H5U_I64, (uint64_t)p->split.num_tokens, x->ks, d);
  if (!rc && x->ke) rc = h5u_write1(g, "ke", H5U_I64, (uint64_t)p->split.num_tokens, x->ke, d);
  h5u_close(g);
  return rc;
}

static int write_collectives(hid_t g, const cplab_rank_plan *p, cplab_diag *d) {
  int n = p->num_collectives;
  int64_t *t = malloc((size_t)(n + 1) * SCHEMA_COLL_COLS * sizeof *t);
  if (!t) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (int i = 0; i < n; i++) {
    const cplab_collective *c = &p->collectives[i];
    int64_t *o = t + (size_t)i * SCHEMA_COLL_COLS;
    o[0] = c->kind, o[1] = c->group, o[2] = c->dtype, o[3] = c->count, o[4] = c->what;
  }
  int rc = h5u_write_table(g, "collectives", SCHEMA_COLL_COLS, SCHEMA_COLL_COLUMNS, (uint64_t)n, t, d);
  free(t);
  return rc;
}

static int write_token_maps(hid_t g, const cplab_rank_plan *p, cplab_diag *d) {
  if (!p->slot_mapping) return 0;
  uint64_t slots = (uint64_t)p->env.par.pcp * (uint64_t)p->sched.padded_num_tokens, T = (uint64_t)p->total_tokens;
  int rc = h5u_write1(g, "slot_mapping", H5U_I64, T, p->slot_mapping, d);
  if (!rc) rc = h5u_write1(g, "gather_idx", H5U_I32, slots, p->gather_idx, d);
  if (!rc) rc = h5u_write1(g, "write_mask", H5U_U8, slots, p->write_mask, d);
  if (!rc) rc = h5u_write1(g, "restore_idx", H5U_I32, T, p->restore_idx, d);
  return rc;
}

int cplab_trace_write_plan(cplab_trace_writer *w, size_t step, const cplab_rank_plan *p, cplab_diag *d) {
  if (w->rank < 0) CPLAB_FAIL(d, CPLAB_EINVAL, "plans go into rank files, not the run file");
  if (p->ids.rank != w->rank) CPLAB_FAIL(d, CPLAB_EINVAL, "plan of rank %d written to rank %d's file", p->ids.rank, w->rank);
  /* /groups records the file's ids once: a plan derived with other ids would
   * make the file contradict itself. */
  if (memcmp(&p->ids, &w->ids, sizeof w->ids) != 0)
    CPLAB_FAIL(d, CPLAB_EINVAL, "plan of rank %d carries other group ids (dcp_rank %d) than its file records (dcp_rank %d)",
               w->rank, p->ids.dcp_rank, w->ids.dcp_rank);
  char name[40];
  snprintf(name, sizeof name, "steps/%06zu", step);
  hid_t g = h5u_group_create(w->file, name, d);
  if (g < 0) return d->code;
  int rc = h5u_attr_i64(g, "step", (int64_t)step, d);
  if (!rc) rc = h5u_attr_i64(g, "total_tokens", p->total_tokens, d);
  if (!rc) rc = write_schedule(g, p, d);
  if (!rc) rc = write_rows(g, p, d);
  if (!rc) rc = write_prefill(g, &p->prefill, d);
  if (!rc) rc = write_indexer(g, p, d);
  if (!rc) rc = write_collectives(g, p, d);
  if (!rc) rc = write_token_maps(g, p, d);
  h5u_close(g);
  if (rc) cplab_diag_prefix(d, "%s: step %zu: ", w->path, step);
  return rc;
}

int cplab_trace_link_ranks(cplab_trace_writer *w, int world, cplab_diag *d) {
  if (w->rank >= 0) CPLAB_FAIL(d, CPLAB_EINVAL, "rank links go into the run file");
  hid_t g = h5u_group_create(w->file, "ranks", d);
  if (g < 0) return d->code;
  int rc = 0;
  for (int r = 0; r < world && !rc; r++) {
    char path[4096], name[16];
    rc = cplab_trace_rank_path(w->path, r, path, sizeof path, d);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(name, sizeof name, "r%04d", r);
    if (!rc && H5Lcreate_external(base, "/", g, name, H5P_DEFAULT, H5P_DEFAULT) < 0)
      rc = h5u_fail(d, "cannot link rank %d", r);
  }
  h5u_close(g);
  return rc;
}

/* Open (creating as needed) a group path like "steps/000003/layers/012". */
static hid_t open_or_create(hid_t file, const char *path, cplab_diag *d) {
  if (H5Lexists(file, path, H5P_DEFAULT) > 0) {
    hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
    if (g < 0) h5u_fail(d, "cannot open group '%s'", path);
    return g;
  }
  H5Eclear2(H5E_DEFAULT);
  return h5u_group_create(file, path, d);
}

int cplab_trace_write_tensor(cplab_trace_writer *w, size_t step, int layer, cplab_trace_tensor tensor,
                             const uint64_t *dims, const void *data, int compress, cplab_diag *d) {
  if (w->rank < 0) CPLAB_FAIL(d, CPLAB_EINVAL, "tensors go into rank files, not the run file");
  if (tensor < 0 || tensor >= CPLAB_TT_COUNT || layer < 0 || layer > 999)
    CPLAB_FAIL(d, CPLAB_EINVAL, "unknown tensor %d or layer %d", (int)tensor, layer);
  const cplab_trace_tensor_info *st = cplab_trace_tensor_info_of(tensor);
  if (st->last && dims[st->rank - 1] != st->last)
    CPLAB_FAIL(d, CPLAB_EINVAL, "tensor %s needs a last dimension of %llu, got %llu", st->name,
               (unsigned long long)st->last, (unsigned long long)dims[st->rank - 1]);
  char step_path[40], path[64];
  snprintf(step_path, sizeof step_path, "steps/%06zu", step);
  if (H5Lexists(w->file, step_path, H5P_DEFAULT) <= 0)
    CPLAB_FAIL(d, CPLAB_EINVAL, "write step %zu's plan before its tensors", step);
  snprintf(path, sizeof path, "%s/layers", step_path);
  hid_t layers = open_or_create(w->file, path, d);
  snprintf(path, sizeof path, "%s/layers/%03d", step_path, layer);
  hid_t g = layers < 0 ? -1 : open_or_create(w->file, path, d);
  int rc = g < 0 ? (d->code ? d->code : CPLAB_EHDF5) : h5u_write_ex(g, st->name, schema_h5_type(st->dtype), st->rank, dims, data, compress, d);
  h5u_close(g);
  h5u_close(layers);
  return rc;
}

int cplab_trace_write_events(cplab_trace_writer *w, const cplab_trace_event *events, size_t n, cplab_diag *d) {
  if (w->rank < 0) CPLAB_FAIL(d, CPLAB_EINVAL, "events go into rank files, not the run file");
  int64_t *t = malloc((n ? n : 1) * SCHEMA_EVENT_COLS * sizeof *t);
  if (!t) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    int64_t *o = t + i * SCHEMA_EVENT_COLS;
    o[0] = events[i].step, o[1] = events[i].layer, o[2] = events[i].op;
    o[3] = events[i].t_begin_ns, o[4] = events[i].t_end_ns, o[5] = events[i].bytes;
  }
  int rc = h5u_write_table(w->file, "events", SCHEMA_EVENT_COLS, SCHEMA_EVENT_COLUMNS, n, t, d);
  free(t);
  return rc;
}

void cplab_trace_abort(cplab_trace_writer *w) {
  if (!w) return;
  h5u_close(w->file);
  unlink(w->tmp);
  writer_free(w);
}

int cplab_trace_commit(cplab_trace_writer *w, cplab_diag *d) {
  int rc = 0;
  if (H5Fflush(w->file, H5F_SCOPE_LOCAL) < 0 || H5Fclose(w->file) < 0) rc = h5u_fail(d, "cannot finish '%s'", w->tmp);
  w->file = -1;
  if (!rc) rc = cplab_atomic_commit(w->tmp, w->path, d);
  else unlink(w->tmp);
  writer_free(w);
  return rc;
}

int cplab_trace_write_rows(cplab_trace_writer *w, size_t step, const cplab_trace_rows *r, cplab_diag *d) {
  uint64_t n = (uint64_t)r->rows, k = (uint64_t)r->k, h = (uint64_t)r->heads, gh = (uint64_t)r->partial_blocks * h;
  int rc = r->partial_out && (r->partial_blocks < 1 || !r->partial_lse)
               ? cplab_diag_set(d, CPLAB_EINVAL, "decode partials need their lse and a head block count >= 1")
               : 0;
  if (n > 0) {
    const struct {
      cplab_trace_tensor t;
      uint64_t dims[3];
      const void *data;
    } rows[] = {
        {CPLAB_TT_SAMPLED_TOKENS, {n}, r->tokens},       {CPLAB_TT_TOPK, {n, k}, r->topk},
        {CPLAB_TT_TOPK_CONVERTED, {n, k}, r->converted}, {CPLAB_TT_TOPK_SCORES, {n, k}, r->scores},
        {CPLAB_TT_KTH_SCORE, {n}, r->kth},               {CPLAB_TT_ATTN_OUT, {n, h, 512}, r->out},
        {CPLAB_TT_ATTN_LSE, {n, h}, r->lse},              {CPLAB_TT_TOPK_VALID, {n}, r->valid},
        {CPLAB_TT_ATTN_PARTIAL_OUT, {n, gh, 512}, r->partial_out},
        {CPLAB_TT_ATTN_PARTIAL_LSE, {n, gh}, r->partial_out ? r->partial_lse : NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0] && !rc; i++)
      if (rows[i].data) rc = cplab_trace_write_tensor(w, step, r->layer, rows[i].t, rows[i].dims, rows[i].data, 0, d);
  }
  uint64_t nd = (uint64_t)r->num_digests;
  if (!rc && nd) rc = cplab_trace_write_tensor(w, step, r->layer, CPLAB_TT_DIGESTS, &nd, r->digests, 0, d);
  return rc;
}
