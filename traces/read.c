/* Reading and validating traces: see include/cplab/trace.h. Every dataset is
 * checked (class, sign, size, rank, shape) before it is read and every value
 * is range-checked before it is used as an index, so a malformed or hostile
 * file gives a message naming the object and the rule, never a bad access. */
#include <hdf5_hl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/trace.h"
#include "h5util.h"
#include "schema.h"

/* Elements one dataset may hold: far above real traces, far below what would
 * exhaust memory; in-memory images (fuzzing) get a tighter bound. */
#define MAX_ELEMENTS ((uint64_t)1 << 28)
#define MAX_ELEMENTS_IMAGE ((uint64_t)1 << 20)
#define MAX_JSON_BYTES ((size_t)256 << 20)

struct cplab_trace {
  hid_t file;
  char where[512]; /* the path, for messages */
  uint64_t max_elements;
  cplab_trace_info info;
  int minor;            /* the file's schema minor version */
  int has_spec_tokens;  /* /config has num_spec_tokens (schema 1.1) */
  cplab_parallel par;
};

const cplab_trace_info *cplab_trace_get_info(const cplab_trace *t) { return &t->info; }
int cplab_trace_schema_minor(const cplab_trace *t) { return t->minor; }

void cplab_trace_close(cplab_trace *t) {
  if (!t) return;
  h5u_close(t->file);
  free(t);
}

/* ---- header ------------------------------------------------------------------ */
static int parse_version(const char *s, int *maj, int *min, int *patch) {
  return sscanf(s, "%d.%d.%d", maj, min, patch) == 3 ? 0 : -1;
}

static int read_parallel(cplab_trace *t, cplab_diag *d) {
  char where[600];
  snprintf(where, sizeof where, "%s:/config", t->where);
  if (!h5u_has(t->file, "config")) CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: missing group /config", t->where);
  hid_t cfg = H5Gopen2(t->file, "config", H5P_DEFAULT);
  if (cfg < 0) return h5u_fail(d, "%s: /config is not a group", t->where);
  cplab_parallel *p = &t->par;
  cplab_parallel_defaults(p);
  int64_t v[8];
  static const char *const names[] = {"tp", "pcp", "dcp", "pp", "interleave", "block_size", "max_model_len",
                                      "indexer_max_logits_mb"};
  int rc = 0;
  for (int i = 0; i < 8 && !rc; i++) rc = h5u_read_attr_i64(cfg, where, names[i], &v[i], d);
  char mode[32];
  if (!rc) rc = h5u_read_attr_str(cfg, where, "cudagraph_mode", mode, sizeof mode, d);
  if (!rc) rc = h5u_read_attr_str(cfg, where, "scenario", t->info.scenario, sizeof t->info.scenario, d);
  if (!rc) rc = h5u_read_attr_str(cfg, where, "layout", t->info.layout, sizeof t->info.layout, d);
  /* Optional since 1.1: files of 1.0 ran without speculative decoding
   * recorded here (their scenario_json still says). */
  int64_t spec = 0;
  t->has_spec_tokens = h5u_has_attr(cfg, "num_spec_tokens");
  if (!rc && t->has_spec_tokens) rc = h5u_read_attr_i64(cfg, where, "num_spec_tokens", &spec, d);
  h5u_close(cfg);
  if (rc) return rc;
  if (spec < 0 || spec > CPLAB_MAX_SPEC_TOKENS)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: num_spec_tokens %lld out of range (0..%d)", where, (long long)spec,
               CPLAB_MAX_SPEC_TOKENS);
  p->num_spec_tokens = (int)spec;
  for (int i = 0; i < 6; i++)
    if (v[i] < INT32_MIN || v[i] > INT32_MAX) CPLAB_FAIL(d, CPLAB_ERANGE, "%s: %s out of range", where, names[i]);
  p->tp = (int)v[0], p->pcp = (int)v[1], p->dcp = (int)v[2], p->pp = (int)v[3], p->interleave = (int)v[4];
  p->block_size = (int)v[5], p->max_model_len = v[6], p->indexer_max_logits_mb = v[7];
  if (cplab_graph_mode_parse(mode, &p->graph_mode) != 0)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: unknown cudagraph_mode '%s'", where, mode);
  cplab_diag local = {0};
  if (cplab_parallel_check(p, 0, &local) != 0) CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: %s", where, local.msg);
  return 0;
}

static int read_header(cplab_trace *t, cplab_diag *d) {
  cplab_trace_info *in = &t->info;
  char where[600];
  snprintf(where, sizeof where, "%s:/", t->where);
  int rc = h5u_read_attr_str(t->file, where, "cplab_schema", in->schema, sizeof in->schema, d);
  if (rc) {
    cplab_diag_clear(d);
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: not a cplab trace (no cplab_schema attribute)", t->where);
  }
  int maj, min, patch;
  if (parse_version(in->schema, &maj, &min, &patch) != 0)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: malformed schema version '%s'", t->where, in->schema);
  if (maj != CPLAB_TRACE_SCHEMA_MAJOR)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "%s: schema %s is not readable by this cplab (reads %d.x)", t->where, in->schema,
               CPLAB_TRACE_SCHEMA_MAJOR);
  t->minor = min;
  if (min > CPLAB_TRACE_SCHEMA_MINOR)
    snprintf(in->warning, sizeof in->warning, "schema %s is newer than this cplab's %s: unknown optional data is ignored",
             in->schema, CPLAB_TRACE_SCHEMA);
  int64_t world, steps, rank = -1;
  if ((rc = h5u_read_attr_str(t->file, where, "producer", in->producer, sizeof in->producer, d)) ||
      (rc = h5u_read_attr_str(t->file, where, "file_kind", in->kind, sizeof in->kind, d)) ||
      (rc = h5u_read_attr_i64(t->file, where, "world_size", &world, d)) ||
      (rc = h5u_read_attr_i64(t->file, where, "num_steps", &steps, d)))
    return rc;
  if (strcmp(in->producer, "sim") != 0 && strcmp(in->producer, "exec") != 0)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: producer must be sim or exec, got '%s'", where, in->producer);
  int is_rank = strcmp(in->kind, "rank") == 0;
  if (!is_rank && strcmp(in->kind, "run") != 0)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: file_kind must be run or rank, got '%s'", where, in->kind);
  if (is_rank && (rc = h5u_read_attr_i64(t->file, where, "rank", &rank, d))) return rc;
  if (world < 1 || world > CPLAB_MAX_WORLD) CPLAB_FAIL(d, CPLAB_ERANGE, "%s: world_size %lld out of range", where, (long long)world);
  if (steps < 0 || steps > CPLAB_MAX_STEPS) CPLAB_FAIL(d, CPLAB_ERANGE, "%s: num_steps %lld out of range", where, (long long)steps);
  if (is_rank && (rank < 0 || rank >= world))
    CPLAB_FAIL(d, CPLAB_ERANGE, "%s: rank %lld outside the world of %lld", where, (long long)rank, (long long)world);
  in->world_size = (int)world;
  in->num_steps = steps;
  in->rank = (int)rank;
  if ((rc = read_parallel(t, d))) return rc;
  if (cplab_parallel_world(&t->par) != in->world_size)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: world_size %d disagrees with /config (pp·pcp·tp = %d)", where, in->world_size,
               cplab_parallel_world(&t->par));
  return 0;
}

static int open_common(cplab_trace *t, cplab_trace **out, cplab_diag *d) {
  int rc = read_header(t, d);
  if (rc) {
    cplab_trace_close(t);
    return rc;
  }
  *out = t;
  return 0;
}

int cplab_trace_open(const char *path, cplab_trace **out, cplab_diag *d) {
  *out = NULL;
  h5u_quiet();
  cplab_trace *t = calloc(1, sizeof *t);
  if (!t) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  snprintf(t->where, sizeof t->where, "%s", path);
  t->max_elements = MAX_ELEMENTS;
  FILE *probe = fopen(path, "rb");
  if (!probe) {
    free(t);
    CPLAB_FAIL(d, CPLAB_EIO, "cannot open '%s'", path);
  }
  fclose(probe);
  if (H5Fis_hdf5(path) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    free(t);
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: not an HDF5 file (truncated or damaged?)", path);
  }
  t->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (t->file < 0) {
    free(t);
    return h5u_fail(d, "%s: cannot open as HDF5 (truncated or damaged?)", path);
  }
  return open_common(t, out, d);
}

int cplab_trace_open_image(const void *buf, size_t len, cplab_trace **out, cplab_diag *d) {
  *out = NULL;
  h5u_quiet();
  cplab_trace *t = calloc(1, sizeof *t);
  if (!t) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  snprintf(t->where, sizeof t->where, "(image of %zu bytes)", len);
  t->max_elements = MAX_ELEMENTS_IMAGE;
  /* H5LT copies the buffer (flags 0), so the caller keeps ownership. */
  t->file = len ? H5LTopen_file_image((void *)buf, len, 0) : -1;
  if (t->file < 0) {
    free(t);
    return h5u_fail(d, "(image of %zu bytes): not an HDF5 file image", len);
  }
  return open_common(t, out, d);
}

int cplab_trace_open_rank(cplab_trace *run, int rank, cplab_trace **out, cplab_diag *d) {
  *out = NULL;
  if (strcmp(run->info.kind, "run") != 0) CPLAB_FAIL(d, CPLAB_EINVAL, "%s is not a run file", run->where);
  if (rank < 0 || rank >= run->info.world_size)
    CPLAB_FAIL(d, CPLAB_ERANGE, "%s: rank %d outside the world of %d", run->where, rank, run->info.world_size);
  char link[32];
  snprintf(link, sizeof link, "ranks/r%04d", rank);
  if (!h5u_has(run->file, "ranks") || H5Lexists(run->file, link, H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: missing link /%s", run->where, link);
  }
  char buf[1024];
  H5L_info_t li;
  const char *file = NULL, *obj = NULL;
  if (H5Lget_info(run->file, link, &li, H5P_DEFAULT) < 0 || li.type != H5L_TYPE_EXTERNAL || li.u.val_size > sizeof buf ||
      H5Lget_val(run->file, link, buf, sizeof buf, H5P_DEFAULT) < 0 ||
      H5Lunpack_elink_val(buf, li.u.val_size, NULL, &file, &obj) < 0) {
    H5Eclear2(H5E_DEFAULT);
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: /%s is not an external link to a rank file", run->where, link);
  }
  if (strchr(file, '/')) CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: /%s must name a file beside the run file", run->where, link);
  char path[1536];
  const char *slash = strrchr(run->where, '/');
  snprintf(path, sizeof path, "%.*s%s", slash ? (int)(slash - run->where + 1) : 0, run->where, file);
  int rc = cplab_trace_open(path, out, d);
  if (rc == CPLAB_EIO) { /* the run names a rank file that is not there: the run is incomplete */
    cplab_diag_clear(d);
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: rank %d's file '%s' is missing", run->where, rank, path);
  }
  if (!rc && ((*out)->info.rank != rank || strcmp((*out)->info.kind, "rank") != 0)) {
    cplab_trace_close(*out);
    *out = NULL;
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: link /%s leads to a file that is not rank %d's", run->where, link, rank);
  }
  return rc;
}

/* ---- plans ------------------------------------------------------------------------ */
typedef struct reader {
  cplab_trace *t;
  hid_t g;
  char where[640];
  cplab_diag *d;
} reader;

/* Expect a dataset of rank 1 and n elements (n < 0: any) and read it into a
 * fresh array. */
static int read_vec(reader *r, const char *name, h5u_type type, int64_t n, void **out, uint64_t *count) {
  uint64_t dims[2];
  *out = NULL;
  int rc = h5u_expect(r->g, r->where, name, type, 1, dims, r->d);
  if (rc) return rc;
  if (n >= 0 && dims[0] != (uint64_t)n)
    CPLAB_FAIL(r->d, CPLAB_ESCHEMA, "%s: dataset '%s' has %llu elements, expected %lld", r->where, name,
               (unsigned long long)dims[0], (long long)n);
  if (dims[0] > r->t->max_elements)
    CPLAB_FAIL(r->d, CPLAB_ERANGE, "%s: dataset '%s' is implausibly large (%llu elements)", r->where, name,
               (unsigned long long)dims[0]);
  *out = malloc((size_t)(dims[0] ? dims[0] : 1) * h5u_type_size(type));
  if (!*out) CPLAB_FAIL(r->d, CPLAB_ENOMEM, "out of memory reading '%s'", name);
  if (count) *count = dims[0];
  return h5u_read(r->g, r->where, name, type, *out, dims[0], r->d);
}

static int read_table(reader *r, const char *name, int cols, int64_t **out, uint64_t *rows) {
  uint64_t dims[2];
  *out = NULL;
  int rc = h5u_expect(r->g, r->where, name, H5U_I64, 2, dims, r->d);
  if (rc) return rc;
  if (dims[1] != (uint64_t)cols)
    CPLAB_FAIL(r->d, CPLAB_ESCHEMA, "%s: table '%s' must have %d columns, has %llu", r->where, name, cols,
               (unsigned long long)dims[1]);
  if (dims[0] > r->t->max_elements / (uint64_t)cols)
    CPLAB_FAIL(r->d, CPLAB_ERANGE, "%s: table '%s' is implausibly large", r->where, name);
  *out = malloc((size_t)(dims[0] ? dims[0] : 1) * (size_t)cols * sizeof(int64_t));
  if (!*out) CPLAB_FAIL(r->d, CPLAB_ENOMEM, "out of memory reading '%s'", name);
  *rows = dims[0];
  return h5u_read(r->g, r->where, name, H5U_I64, *out, dims[0] * (uint64_t)cols, r->d);
}

#define BAD(r, ...) CPLAB_FAIL((r)->d, CPLAB_ESCHEMA, __VA_ARGS__)
#define IN(v, lo, hi) ((v) >= (lo) && (v) <= (hi))

static int read_schedule(reader *r, cplab_rank_plan *p) {
  cplab_schedule *s = &p->sched;
  int64_t R, mb;
  int rc = h5u_read_attr_i64(r->g, r->where, "num_requests", &R, r->d);
  if (!rc) rc = h5u_read_attr_i64(r->g, r->where, "max_blocks", &mb, r->d);
  if (rc) return rc;
  if (!IN(R, 1, CPLAB_MAX_REQUESTS_PER_STEP)) BAD(r, "%s: num_requests %lld out of range", r->where, (long long)R);
  if (mb != cplab_kv_max_blocks(&r->t->par)) BAD(r, "%s: max_blocks %lld disagrees with /config", r->where, (long long)mb);
  s->num_requests = (int)R;
  s->max_blocks = (int)mb;
  static const char *const attrs[] = {"all_rows_replicated", "uniform_decode", "moe_fast_path", "padded_num_tokens",
                                      "padded_prefill_tokens", "dispatch_rows", "dispatch_tokens", "dispatch_longest"};
  int64_t a[8];
  for (int i = 0; i < 8 && !rc; i++) rc = h5u_read_attr_i64(r->g, r->where, attrs[i], &a[i], r->d);
  char mode[32];
  if (!rc) rc = h5u_read_attr_str(r->g, r->where, "runtime_mode", mode, sizeof mode, r->d);
  if (rc) return rc;
  for (int i = 0; i < 3; i++)
    if (!IN(a[i], 0, 1)) BAD(r, "%s: %s must be 0 or 1", r->where, attrs[i]);
  for (int i = 3; i < 8; i++)
    if (!IN(a[i], 0, (int64_t)INT32_MAX)) BAD(r, "%s: %s out of range", r->where, attrs[i]);
  s->all_rows_replicated = (int)a[0], s->uniform_decode = (int)a[1], s->moe_fast_path = (int)a[2];
  s->padded_num_tokens = a[3], s->padded_prefill_tokens = a[4], s->dispatch_rows = (int)a[5];
  s->dispatch_tokens = (int)a[6], s->dispatch_longest = a[7];
  if (cplab_graph_mode_parse(mode, &s->runtime_mode) != 0) BAD(r, "%s: unknown runtime_mode '%s'", r->where, mode);
  int32_t *bt = NULL;
  if ((rc = read_vec(r, "seq_len", H5U_I64, R, (void **)&s->seq_len, NULL)) ||
      (rc = read_vec(r, "replicated", H5U_U8, R, (void **)&s->replicated, NULL)) ||
      (rc = read_vec(r, "nominal_q", H5U_I64, R, (void **)&s->nominal_q, NULL)) ||
      (rc = read_vec(r, "token_offset", H5U_I64, R + 1, (void **)&s->token_offset, NULL)) ||
      (rc = read_vec(r, "local_len", H5U_I64, R, (void **)&p->local_len, NULL)))
    return rc;
  uint64_t dims[2];
  if ((rc = h5u_expect(r->g, r->where, "block_table", H5U_I32, 2, dims, r->d))) return rc;
  if (dims[0] != (uint64_t)R || dims[1] != (uint64_t)mb) BAD(r, "%s: block_table must be [%lld, %lld]", r->where, (long long)R, (long long)mb);
  if ((uint64_t)R * (uint64_t)mb > r->t->max_elements) CPLAB_FAIL(r->d, CPLAB_ERANGE, "%s: block_table too large", r->where);
  bt = malloc((size_t)(R * mb) * sizeof(int32_t));
  if (!bt) CPLAB_FAIL(r->d, CPLAB_ENOMEM, "out of memory");
  s->block_table = bt;
  if ((rc = h5u_read(r->g, r->where, "block_table", H5U_I32, bt, (uint64_t)(R * mb), r->d))) return rc;
  if (s->token_offset[0] != 0) BAD(r, "%s: token_offset must start at 0", r->where);
  int64_t mml = r->t->par.max_model_len;
  for (int64_t g = 0; g < R; g++) {
    int64_t q = s->token_offset[g + 1] - s->token_offset[g];
    if (!IN(q, 0, mml) || !IN(s->seq_len[g], q, mml) || s->replicated[g] > 1 || !IN(s->nominal_q[g], 0, q) ||
        !IN(p->local_len[g], 0, s->seq_len[g]))
      BAD(r, "%s: request %lld has inconsistent lengths (new %lld, seq_len %lld, nominal %lld, local %lld)", r->where,
          (long long)g, (long long)q, (long long)s->seq_len[g], (long long)s->nominal_q[g], (long long)p->local_len[g]);
  }
  for (int64_t i = 0; i < R * mb; i++)
    if (s->block_table[i] < 0) BAD(r, "%s: negative block id in block_table", r->where);
  p->total_tokens = s->token_offset[R];
  return 0;
}

static int read_rows(reader *r, cplab_rank_plan *p) {
  int64_t *t = NULL;
  uint64_t n;
  int rc = read_table(r, "rows", SCHEMA_ROW_COLS, &t, &n);
  int64_t ndr = 0, ntok = 0, ndt = 0;
  if (!rc) rc = h5u_read_attr_i64(r->g, r->where, "num_decode_rows", &ndr, r->d);
  if (!rc) rc = h5u_read_attr_i64(r->g, r->where, "num_tokens", &ntok, r->d);
  if (!rc) rc = h5u_read_attr_i64(r->g, r->where, "num_decode_tokens", &ndt, r->d);
  if (!rc && (n < 1 || n > 2 * (uint64_t)p->sched.num_requests + 1))
    rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: %llu rows for %d requests", r->where, (unsigned long long)n, p->sched.num_requests);
  cplab_split *sp = &p->split;
  if (!rc && !(sp->rows = calloc((size_t)n, sizeof(cplab_row)))) rc = cplab_diag_set(r->d, CPLAB_ENOMEM, "out of memory");
  int64_t offset = 0;
  for (uint64_t i = 0; !rc && i < n; i++) {
    const int64_t *o = t + i * SCHEMA_ROW_COLS;
    int64_t g = o[0];
    int ok = IN(g, 0, p->sched.num_requests - 1) && IN(o[1], 0, 1) && IN(o[2], 0, 1) && IN(o[3], 0, 1) && o[4] >= 0 &&
             o[5] >= 0 && o[9] == offset;
    if (ok && !o[3]) {
      int64_t q = p->sched.token_offset[g + 1] - p->sched.token_offset[g];
      ok = o[4] + o[5] <= q && o[7] == o[6] + o[5] && IN(o[7], 0, p->sched.seq_len[g]);
    }
    if (!ok) rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: row %llu is inconsistent", r->where, (unsigned long long)i);
    else {
      sp->rows[i] = (cplab_row){(int32_t)g, (uint8_t)o[1], (uint8_t)o[2], (uint8_t)o[3], o[4], o[5], o[6], o[7], o[8], o[9]};
      offset += o[5];
    }
  }
  free(t);
  if (rc) return rc;
  sp->num_rows = (int)n;
  if (!IN(ndr, 0, (int64_t)n) || ntok != offset || !IN(ndt, 0, ntok))
    BAD(r, "%s: num_decode_rows / num_tokens / num_decode_tokens disagree with the rows", r->where);
  sp->num_decode_rows = (int)ndr, sp->num_tokens = ntok, sp->num_decode_tokens = ndt;
  return 0;
}

/* sub = r's group `name`, opened (close sub->g after use). */
static int open_group(reader *r, const char *name, reader *sub) {
  *sub = *r;
  if (snprintf(sub->where, sizeof sub->where, "%s/%s", r->where, name) >= (int)sizeof sub->where)
    BAD(r, "%s: path too long", r->where);
  if (!h5u_has(r->g, name)) BAD(r, "%s: missing group '%s'", r->where, name);
  sub->g = H5Gopen2(r->g, name, H5P_DEFAULT);
  if (sub->g < 0) return h5u_fail(r->d, "%s: '%s' is not a group", r->where, name);
  return 0;
}

static int read_prefill(reader *r, cplab_rank_plan *p) {
  reader sub;
  int rc = open_group(r, "prefill", &sub);
  if (rc) return rc;
  cplab_prefill_plan *f = &p->prefill;
  int64_t active, W, budget, *t = NULL;
  uint64_t K, K2, K3, K4, K5, K6, C = 0;
  rc = h5u_read_attr_i64(sub.g, sub.where, "active", &active, r->d);
  if (!rc) rc = h5u_read_attr_i64(sub.g, sub.where, "W", &W, r->d);
  if (!rc) rc = h5u_read_attr_i64(sub.g, sub.where, "budget", &budget, r->d);
  if (!rc) rc = read_vec(&sub, "region_req", H5U_I32, -1, (void **)&f->region_req, &K);
  if (!rc) rc = read_vec(&sub, "region_first_row", H5U_I32, (int64_t)K, (void **)&f->region_first_row, &K2);
  if (!rc) rc = read_vec(&sub, "region_chunk", H5U_I32, (int64_t)K, (void **)&f->region_chunk, &K3);
  if (!rc) rc = read_vec(&sub, "extent", H5U_I64, (int64_t)K, (void **)&f->extent, &K4);
  if (!rc) rc = read_vec(&sub, "rows_per_rank", H5U_I64, (int64_t)K, (void **)&f->rows_per_rank, &K5);
  if (!rc) rc = read_vec(&sub, "workspace_start", H5U_I64, (int64_t)K, (void **)&f->workspace_start, &K6);
  if (!rc) rc = read_table(&sub, "chunks", SCHEMA_PREFILL_CHUNK_COLS, &t, &C);
  if (!rc && (!IN(active, 0, 1) || !IN(W, 0, CPLAB_MAX_WORLD) || budget < 0 || C > K || K > (uint64_t)p->split.num_rows))
    rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: inconsistent sizes or flags", sub.where);
  if (!rc && !(f->chunks = calloc((size_t)C + 1, sizeof *f->chunks))) rc = cplab_diag_set(r->d, CPLAB_ENOMEM, "out of memory");
  for (uint64_t k = 0; !rc && k < K; k++)
    if (!IN(f->region_req[k], 0, p->sched.num_requests - 1) || !IN(f->region_first_row[k], 0, p->split.num_rows - 1) ||
        !IN(f->region_chunk[k], 0, (int64_t)C - 1) || f->extent[k] < 0 || f->rows_per_rank[k] < 0 || f->workspace_start[k] < 0)
      rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: region %llu is out of range", sub.where, (unsigned long long)k);
  for (uint64_t c = 0; !rc && c < C; c++) {
    const int64_t *o = t + c * SCHEMA_PREFILL_CHUNK_COLS;
    if (!IN(o[0], 0, (int64_t)K) || !IN(o[1], 0, (int64_t)K - o[0]) || o[2] < 0 || !IN(o[3], 0, p->split.num_tokens) ||
        !IN(o[4], o[3], p->split.num_tokens))
      rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: chunk %llu is out of range", sub.where, (unsigned long long)c);
    else f->chunks[c] = (cplab_prefill_chunk){(int)o[0], (int)o[1], o[2], o[3], o[4]};
  }
  free(t);
  h5u_close(sub.g);
  if (rc) return rc;
  f->active = (int)active, f->W = (int)W, f->budget = budget, f->num_regions = (int)K, f->num_chunks = (int)C;
  return 0;
}

static int read_indexer(reader *r, cplab_rank_plan *p) {
  reader sub;
  int rc = open_group(r, "indexer", &sub);
  if (rc) return rc;
  cplab_indexer_plan *x = &p->indexer;
  int64_t active, *t = NULL;
  uint64_t K, n, C = 0;
  rc = h5u_read_attr_i64(sub.g, sub.where, "active", &active, r->d);
  if (!rc) rc = read_vec(&sub, "region_req", H5U_I32, -1, (void **)&x->region_req, &K);
  if (!rc) rc = read_vec(&sub, "region_chunk", H5U_I32, (int64_t)K, (void **)&x->region_chunk, &n);
  if (!rc) rc = read_vec(&sub, "extent", H5U_I64, (int64_t)K, (void **)&x->extent, &n);
  if (!rc) rc = read_vec(&sub, "nominal_q", H5U_I64, (int64_t)K, (void **)&x->nominal_q, &n);
  if (!rc) rc = read_vec(&sub, "padded", H5U_I64, (int64_t)K, (void **)&x->padded, &n);
  if (!rc) rc = read_vec(&sub, "padded_cu", H5U_I64, (int64_t)K, (void **)&x->padded_cu, &n);
  if (!rc) rc = read_vec(&sub, "region_start", H5U_I64, (int64_t)K, (void **)&x->region_start, &n);
  if (!rc) rc = read_table(&sub, "chunks", SCHEMA_INDEXER_CHUNK_COLS, &t, &C);
  if (!rc && (!IN(active, 0, 1) || K > (uint64_t)p->split.num_rows || C > (uint64_t)INT32_MAX))
    rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: inconsistent sizes or flags", sub.where);
  if (!rc && !(x->chunks = calloc((size_t)C + 1, sizeof *x->chunks))) rc = cplab_diag_set(r->d, CPLAB_ENOMEM, "out of memory");
  for (uint64_t k = 0; !rc && k < K; k++)
    if (!IN(x->region_req[k], 0, p->sched.num_requests - 1) || !IN(x->region_chunk[k], 0, (int64_t)C - 1) ||
        x->extent[k] < 0 || x->nominal_q[k] < 0 || x->padded[k] < 0 || x->padded_cu[k] < 0 || x->region_start[k] < 0)
      rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: region %llu is out of range", sub.where, (unsigned long long)k);
  for (uint64_t c = 0; !rc && c < C; c++) {
    const int64_t *o = t + c * SCHEMA_INDEXER_CHUNK_COLS;
    if (!IN(o[0], 0, (int64_t)K) || !IN(o[1], 0, (int64_t)K - o[0]) || o[2] < 0 || o[3] < 0 || o[4] < 0 ||
        o[5] < o[4] || !IN(o[6], 0, 1) || !IN(o[7], 0, 1) || !IN(o[8], 0, p->split.num_tokens) ||
        !IN(o[9], o[8], p->split.num_tokens))
      rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: chunk %llu is out of range", sub.where, (unsigned long long)c);
    else
      x->chunks[c] = (cplab_indexer_chunk){(int)o[0], (int)o[1], o[2], o[3], o[4], o[5], (int)o[6], (int)o[7], o[8], o[9]};
  }
  free(t);
  int has_ks = !rc && h5u_has(sub.g, "ks");
  if (has_ks) rc = read_vec(&sub, "ks", H5U_I64, p->split.num_tokens, (void **)&x->ks, &n);
  if (has_ks && !rc) rc = read_vec(&sub, "ke", H5U_I64, p->split.num_tokens, (void **)&x->ke, &n);
  for (int64_t m = 0; has_ks && !rc && m < p->split.num_tokens; m++)
    if (x->ks[m] < -1 || x->ke[m] < x->ks[m]) rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: ks/ke of token %lld", sub.where, (long long)m);
  h5u_close(sub.g);
  if (rc) return rc;
  x->active = (int)active, x->num_regions = (int)K, x->num_chunks = (int)C;
  return 0;
}

static int read_collectives(reader *r, cplab_rank_plan *p) {
  int64_t *t = NULL;
  uint64_t n;
  int rc = read_table(r, "collectives", SCHEMA_COLL_COLS, &t, &n);
  if (!rc && !(p->collectives = calloc((size_t)n + 1, sizeof *p->collectives)))
    rc = cplab_diag_set(r->d, CPLAB_ENOMEM, "out of memory");
  for (uint64_t i = 0; !rc && i < n; i++) {
    const int64_t *o = t + i * SCHEMA_COLL_COLS;
    if (!IN(o[0], 0, 2) || !IN(o[1], 0, 2) || !IN(o[2], 0, 2) || o[3] < 0 || !IN(o[4], 0, CPLAB_CW_COUNT - 1))
      rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: collective %llu has an unknown kind, group, type or purpose",
                          r->where, (unsigned long long)i);
    else
      p->collectives[i] = (cplab_collective){(cplab_coll_kind)o[0], (cplab_group_kind)o[1], (cplab_dtype)o[2], o[3],
                                             (cplab_coll_what)o[4]};
  }
  free(t);
  if (!rc) p->num_collectives = (int)n;
  return rc;
}

static int read_token_maps(reader *r, cplab_rank_plan *p) {
  if (!h5u_has(r->g, "slot_mapping")) return 0;
  int64_t T = p->total_tokens, slots = (int64_t)r->t->par.pcp * p->sched.padded_num_tokens;
  uint64_t n;
  int rc = read_vec(r, "slot_mapping", H5U_I64, T, (void **)&p->slot_mapping, &n);
  if (!rc) rc = read_vec(r, "gather_idx", H5U_I32, slots, (void **)&p->gather_idx, &n);
  if (!rc) rc = read_vec(r, "write_mask", H5U_U8, slots, (void **)&p->write_mask, &n);
  if (!rc) rc = read_vec(r, "restore_idx", H5U_I32, T, (void **)&p->restore_idx, &n);
  for (int64_t i = 0; !rc && i < T; i++)
    if (p->slot_mapping[i] < -1 || !IN(p->restore_idx[i], 0, slots - 1))
      rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: token map entry %lld out of range", r->where, (long long)i);
  for (int64_t i = 0; !rc && i < slots; i++)
    if (!IN(p->gather_idx[i], 0, T > 0 ? T - 1 : 0) || p->write_mask[i] > 1)
      rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: gather slot %lld out of range", r->where, (long long)i);
  return rc;
}

int cplab_trace_read_plan(cplab_trace *t, size_t step, cplab_rank_plan **out, cplab_diag *d) {
  *out = NULL;
  if (strcmp(t->info.kind, "rank") != 0) CPLAB_FAIL(d, CPLAB_EINVAL, "%s: plans live in rank files", t->where);
  if ((int64_t)step >= t->info.num_steps)
    CPLAB_FAIL(d, CPLAB_ERANGE, "%s: no step %zu (the trace has %lld)", t->where, step, (long long)t->info.num_steps);
  reader r = {t, -1, "", d};
  char name[40];
  snprintf(name, sizeof name, "steps/%06zu", step);
  snprintf(r.where, sizeof r.where, "%s:/%s", t->where, name);
  if (!h5u_has(t->file, "steps") || H5Lexists(t->file, name, H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: missing step group", r.where);
  }
  r.g = H5Gopen2(t->file, name, H5P_DEFAULT);
  if (r.g < 0) return h5u_fail(d, "%s: not a group", r.where);
  cplab_rank_plan *p = calloc(1, sizeof *p);
  int rc = p ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) {
    cplab_layout_env_init(&p->env, &t->par);
    rc = cplab_rank_ids_get(&t->par, t->info.rank, &p->ids, d);
  }
  if (!rc) rc = read_schedule(&r, p);
  if (!rc) rc = read_rows(&r, p);
  if (!rc) rc = read_prefill(&r, p);
  if (!rc) rc = read_indexer(&r, p);
  if (!rc) rc = read_collectives(&r, p);
  if (!rc) rc = read_token_maps(&r, p);
  h5u_close(r.g);
  if (rc) {
    cplab_rank_plan_free(p);
    return rc;
  }
  p->flags = p->slot_mapping ? CPLAB_PLAN_TOKEN_MAPS : 0;
  *out = p;
  return 0;
}

/* ---- groups ------------------------------------------------------------------------ */
/* The ids /groups records, each checked against want (the layout's
 * numbering): a writer that numbered its groups otherwise is caught here,
 * so the ids a reader gets are want's. */
static int read_group_ids(reader *r, const cplab_rank_ids *want, cplab_rank_ids *got) {
  int expect[SCHEMA_GROUP_ATTRS];
  schema_group_values(want, expect);
  for (int i = 0; i < SCHEMA_GROUP_ATTRS; i++) {
    int64_t v;
    int rc = h5u_read_attr_i64(r->g, r->where, schema_group_attrs[i], &v, r->d);
    if (rc) return rc;
    if (v != expect[i])
      BAD(r, "%s: %s is %lld, the layout's numbering (SCHEMA.md \"/groups\") gives %d", r->where, schema_group_attrs[i],
          (long long)v, expect[i]);
  }
  *got = *want;
  return 0;
}

static int read_group_members(reader *r, const cplab_parallel *par, int rank, cplab_trace_groups *out) {
  int *want = malloc((size_t)cplab_parallel_world(par) * sizeof *want);
  int rc = want ? 0 : cplab_diag_set(r->d, CPLAB_ENOMEM, "out of memory");
  for (int k = CPLAB_GROUP_TP; !rc && k <= CPLAB_GROUP_DCP; k++) {
    out->size[k] = cplab_group_size(par, (cplab_group_kind)k);
    rc = read_vec(r, schema_group_lists[k], H5U_I32, out->size[k], (void **)&out->members[k], NULL);
    if (!rc) rc = cplab_group_members(par, (cplab_group_kind)k, rank, want, r->d);
    for (int i = 0; !rc && i < out->size[k]; i++)
      if (out->members[k][i] != want[i])
        rc = cplab_diag_set(r->d, CPLAB_ESCHEMA, "%s: %s[%d] is %d, the layout's numbering (SCHEMA.md \"/groups\") gives %d",
                            r->where, schema_group_lists[k], i, out->members[k][i], want[i]);
  }
  free(want);
  return rc;
}

void cplab_trace_groups_fini(cplab_trace_groups *g) {
  for (int k = 0; k < 3; k++) free(g->members[k]);
  memset(g, 0, sizeof *g);
}

int cplab_trace_read_groups(cplab_trace *t, cplab_trace_groups *out, cplab_diag *d) {
  memset(out, 0, sizeof *out);
  if (strcmp(t->info.kind, "rank") != 0) CPLAB_FAIL(d, CPLAB_EINVAL, "%s: groups live in rank files", t->where);
  if (!h5u_has(t->file, "groups"))
    CPLAB_FAIL(d, CPLAB_ENOTFOUND, "%s: no /groups (written before schema 1.1)", t->where);
  reader r = {t, H5Gopen2(t->file, "groups", H5P_DEFAULT), "", d};
  snprintf(r.where, sizeof r.where, "%s:/groups", t->where);
  if (r.g < 0) return h5u_fail(d, "%s: not a group", r.where);
  cplab_rank_ids want;
  int rc = cplab_rank_ids_get(&t->par, t->info.rank, &want, d);
  if (!rc) rc = read_group_ids(&r, &want, &out->ids);
  if (!rc) rc = read_group_members(&r, &t->par, t->info.rank, out);
  h5u_close(r.g);
  if (rc) cplab_trace_groups_fini(out);
  return rc;
}

/* Optional data: a file without /groups (schema 1.0) is valid. */
static int validate_groups(cplab_trace *t, cplab_diag *d) {
  if (!h5u_has(t->file, "groups")) return 0;
  cplab_trace_groups g;
  int rc = cplab_trace_read_groups(t, &g, d);
  cplab_trace_groups_fini(&g);
  return rc;
}

/* ---- layer tensors and events ------------------------------------------------------------ */
/* Check one tensor dataset: type, rank, fixed last dimension, and rows =
 * the layer's rows where the schema says so. */
static int check_tensor(hid_t g, const char *where, int tensor, int64_t rows, uint64_t max_elements,
                        uint64_t *dims, cplab_diag *d) {
  const cplab_trace_tensor_info *st = cplab_trace_tensor_info_of((cplab_trace_tensor)tensor);
  int rc = h5u_expect(g, where, st->name, schema_h5_type(st->dtype), st->rank, dims, d);
  if (rc) return rc;
  uint64_t count = 1;
  for (int i = 0; i < st->rank; i++) count = dims[i] && count > max_elements / dims[i] ? max_elements + 1 : count * dims[i];
  if (count > max_elements) CPLAB_FAIL(d, CPLAB_ERANGE, "%s: tensor '%s' is implausibly large", where, st->name);
  if (st->last && dims[st->rank - 1] != st->last)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: tensor '%s' must have %llu columns", where, st->name, (unsigned long long)st->last);
  if (st->per_row && (int64_t)dims[0] != rows)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: tensor '%s' must have a row per sampled token (or per local token without "
               "sampled_tokens): %lld, has %llu", where, st->name, (long long)rows, (unsigned long long)dims[0]);
  return 0;
}

/* Check one tensor of a layer and read it into a fresh array (*data NULL
 * unless it succeeds). */
static int load_tensor(hid_t g, const char *where, int tensor, int64_t rows, uint64_t max_elements, uint64_t *dims,
                       void **data, cplab_diag *d) {
  const cplab_trace_tensor_info *st = cplab_trace_tensor_info_of((cplab_trace_tensor)tensor);
  *data = NULL;
  int rc = check_tensor(g, where, tensor, rows, max_elements, dims, d);
  uint64_t count = 1;
  for (int i = 0; !rc && i < st->rank; i++) count *= dims[i];
  if (!rc && !(*data = malloc((size_t)(count ? count : 1) * cplab_trace_dtype_size(st->dtype))))
    rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory for tensor '%s'", st->name);
  if (!rc) rc = h5u_read(g, where, st->name, schema_h5_type(st->dtype), *data, count, d);
  if (rc) {
    free(*data);
    *data = NULL;
  }
  return rc;
}

/* topk_valid counts the valid entries of each row's top-k: never negative,
 * and where the layer stores topk too, exactly its entries other than -1. */
static int check_topk_valid(hid_t g, const char *where, int64_t rows, uint64_t max_elements, cplab_diag *d) {
  if (!h5u_has(g, "topk_valid")) return 0;
  uint64_t vd[3], kd[3] = {0, 0, 0};
  int32_t *valid = NULL, *topk = NULL;
  int rc = load_tensor(g, where, CPLAB_TT_TOPK_VALID, rows, max_elements, vd, (void **)&valid, d);
  if (!rc && h5u_has(g, "topk")) rc = load_tensor(g, where, CPLAB_TT_TOPK, rows, max_elements, kd, (void **)&topk, d);
  for (uint64_t i = 0; !rc && i < vd[0]; i++) {
    int64_t n = 0;
    for (uint64_t j = 0; topk && j < kd[1]; j++) n += topk[i * kd[1] + j] != -1;
    if (valid[i] < 0)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: topk_valid of row %llu is negative (%d)", where, (unsigned long long)i,
                          valid[i]);
    else if (topk && valid[i] != n)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: topk_valid of row %llu is %d, its topk holds %lld valid entries", where,
                          (unsigned long long)i, valid[i], (long long)n);
  }
  free(valid);
  free(topk);
  return rc;
}

/* The decode partials (1.2) come as a pair with one width, G·heads: G head
 * blocks (cplab_dcp_partial_blocks, 1 or dcp) of attn_out's heads, and
 * only in runs with DCP. */
static int check_partials(cplab_trace *t, hid_t g, const char *where, int64_t rows, cplab_diag *d) {
  int has_out = h5u_has(g, "attn_partial_out"), has_lse = h5u_has(g, "attn_partial_lse");
  if (!has_out && !has_lse) return 0;
  if (has_out != has_lse)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: attn_partial_out and attn_partial_lse must be stored together", where);
  if (t->par.dcp < 2)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: decode partials in a run without DCP (dcp %d)", where, t->par.dcp);
  uint64_t po[3], pl[3], ao[3];
  int rc = check_tensor(g, where, CPLAB_TT_ATTN_PARTIAL_OUT, rows, t->max_elements, po, d);
  if (!rc) rc = check_tensor(g, where, CPLAB_TT_ATTN_PARTIAL_LSE, rows, t->max_elements, pl, d);
  if (!rc && po[1] != pl[1])
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: attn_partial_out has %llu heads, attn_partial_lse %llu", where,
                        (unsigned long long)po[1], (unsigned long long)pl[1]);
  if (rc || !h5u_has(g, "attn_out")) return rc;
  rc = check_tensor(g, where, CPLAB_TT_ATTN_OUT, rows, t->max_elements, ao, d);
  int blocks = cplab_dcp_partial_blocks(&t->par);
  if (!rc && po[1] != (uint64_t)blocks * ao[1])
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: attn_partial_out has %llu heads, %d block(s) of attn_out's %llu expected",
                        where, (unsigned long long)po[1], blocks, (unsigned long long)ao[1]);
  return rc;
}

/* Rows of a layer's per-row tensors: its sampled_tokens (each a local token,
 * checked) or, without them, every local token. */
static int layer_rows(hid_t g, const char *where, int64_t local_tokens, uint64_t max_elements, int64_t *rows,
                      cplab_diag *d) {
  *rows = local_tokens;
  if (!h5u_has(g, "sampled_tokens")) return 0;
  uint64_t dims[3];
  int rc = check_tensor(g, where, CPLAB_TT_SAMPLED_TOKENS, 0, max_elements, dims, d);
  int64_t *v = rc ? NULL : malloc((size_t)(dims[0] ? dims[0] : 1) * sizeof *v);
  if (!rc && !v) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = h5u_read(g, where, "sampled_tokens", H5U_I64, v, dims[0], d);
  for (uint64_t i = 0; !rc && i < dims[0]; i++)
    if (v[i] < 0 || v[i] >= local_tokens)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: sampled token %lld is not a local token (0..%lld)", where,
                          (long long)v[i], (long long)local_tokens - 1);
  free(v);
  if (!rc) *rows = (int64_t)dims[0];
  return rc;
}

typedef struct layer_walk {
  cplab_trace *t;
  const char *where;
  int64_t local_tokens;
  cplab_diag *d;
  int rc;
} layer_walk;

static herr_t visit_tensor(hid_t g, const char *name, const H5L_info_t *info, void *op) {
  (void)info;
  layer_walk *w = op;
  int k = cplab_trace_tensor_find(name);
  uint64_t dims[3];
  if (k < 0) w->rc = cplab_diag_set(w->d, CPLAB_ESCHEMA, "%s: unknown tensor '%s'", w->where, name);
  else w->rc = check_tensor(g, w->where, k, w->local_tokens, w->t->max_elements, dims, w->d);
  return w->rc ? -1 : 0;
}

static herr_t visit_layer(hid_t layers, const char *name, const H5L_info_t *info, void *op) {
  (void)info;
  layer_walk *w = op;
  char where[700];
  snprintf(where, sizeof where, "%s/%s", w->where, name);
  int ok = strlen(name) == 3 && strspn(name, "0123456789") == 3;
  hid_t g = ok ? H5Gopen2(layers, name, H5P_DEFAULT) : -1;
  if (g < 0) {
    H5Eclear2(H5E_DEFAULT);
    w->rc = cplab_diag_set(w->d, CPLAB_ESCHEMA, "%s: a layer must be a group named by three digits", where);
    return -1;
  }
  layer_walk inner = *w;
  inner.where = where;
  w->rc = layer_rows(g, where, w->local_tokens, w->t->max_elements, &inner.local_tokens, w->d);
  hsize_t idx = 0;
  if (!w->rc) { /* a bad sampled_tokens must not be overwritten by the tensor walk's 0 */
    if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, visit_tensor, &inner) < 0 && !inner.rc)
      inner.rc = h5u_fail(w->d, "%s: cannot list the tensors", where);
    w->rc = inner.rc ? inner.rc : check_topk_valid(g, where, inner.local_tokens, w->t->max_elements, w->d);
    if (!w->rc) w->rc = check_partials(w->t, g, where, inner.local_tokens, w->d);
  }
  h5u_close(g);
  return w->rc ? -1 : 0;
}

static int validate_layers(cplab_trace *t, size_t step, int64_t local_tokens, cplab_diag *d) {
  char path[64], where[700];
  snprintf(path, sizeof path, "steps/%06zu/layers", step);
  if (H5Lexists(t->file, path, H5P_DEFAULT) <= 0) return 0;
  snprintf(where, sizeof where, "%s:/%s", t->where, path);
  hid_t g = H5Gopen2(t->file, path, H5P_DEFAULT);
  if (g < 0) return h5u_fail(d, "%s: not a group", where);
  layer_walk w = {t, where, local_tokens, d, 0};
  hsize_t idx = 0;
  if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, visit_layer, &w) < 0 && !w.rc)
    w.rc = h5u_fail(d, "%s: cannot list the layers", where);
  h5u_close(g);
  return w.rc;
}

static int validate_events(cplab_trace *t, cplab_diag *d) {
  if (!h5u_has(t->file, "events")) return 0;
  reader r = {t, t->file, "", d};
  snprintf(r.where, sizeof r.where, "%s:/", t->where);
  int64_t *e = NULL;
  uint64_t n;
  int rc = read_table(&r, "events", SCHEMA_EVENT_COLS, &e, &n);
  for (uint64_t i = 0; !rc && i < n; i++) {
    const int64_t *o = e + i * SCHEMA_EVENT_COLS;
    if (!IN(o[0], 0, t->info.num_steps - 1) || o[1] < -1 || o[2] < 0 || o[3] < 0 || o[4] < o[3] || o[5] < 0)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: event %llu is out of range", r.where, (unsigned long long)i);
  }
  free(e);
  return rc;
}

int cplab_trace_read_tensor(cplab_trace *t, size_t step, int layer, cplab_trace_tensor tensor, uint64_t *dims,
                            void **data, cplab_diag *d) {
  *data = NULL;
  if (tensor < 0 || tensor >= CPLAB_TT_COUNT) CPLAB_FAIL(d, CPLAB_EINVAL, "unknown tensor %d", (int)tensor);
  cplab_rank_plan *p = NULL;
  int rc = cplab_trace_read_plan(t, step, &p, d); /* validates the step and gives its local tokens */
  int64_t local = p ? p->split.num_tokens : 0;
  cplab_rank_plan_free(p);
  if (rc) return rc;
  char path[64], where[700];
  snprintf(path, sizeof path, "steps/%06zu/layers/%03d", step, layer);
  snprintf(where, sizeof where, "%s:/%s", t->where, path);
  if (layer < 0 || layer > 999 || H5Lexists(t->file, path, H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    CPLAB_FAIL(d, CPLAB_ENOTFOUND, "%s: no such layer", where);
  }
  hid_t g = H5Gopen2(t->file, path, H5P_DEFAULT);
  if (g < 0) return h5u_fail(d, "%s: not a group", where);
  const cplab_trace_tensor_info *st = cplab_trace_tensor_info_of((cplab_trace_tensor)tensor);
  int64_t rows = local;
  if (!h5u_has(g, st->name)) rc = cplab_diag_set(d, CPLAB_ENOTFOUND, "%s: no tensor '%s'", where, st->name);
  if (!rc) rc = layer_rows(g, where, local, t->max_elements, &rows, d);
  if (!rc) rc = load_tensor(g, where, tensor, rows, t->max_elements, dims, data, d);
  h5u_close(g);
  return rc;
}

int cplab_trace_read_scenario(cplab_trace *t, cplab_scenario **out, cplab_diag *d) {
  *out = NULL;
  char where[600], *json = NULL;
  snprintf(where, sizeof where, "%s:/config", t->where);
  hid_t cfg = H5Gopen2(t->file, "config", H5P_DEFAULT);
  if (cfg < 0) return h5u_fail(d, "%s: /config is not a group", t->where);
  size_t max_json = t->max_elements * 8 < MAX_JSON_BYTES ? (size_t)t->max_elements * 8 : MAX_JSON_BYTES;
  int rc = h5u_read_text(cfg, where, "scenario_json", max_json, &json, d);
  h5u_close(cfg);
  if (rc) return rc;
  cplab_diag local = {0};
  if (cplab_scenario_parse(json, strlen(json), where, NULL, out, &local) != 0)
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: scenario_json is not a valid scenario: %s", where, local.msg);
  free(json);
  return rc;
}

static herr_t collect_layer(hid_t g, const char *name, const H5L_info_t *info, void *op) {
  (void)g, (void)info;
  int **list = op; /* list[0] = array, list[1] = count (as int*) */
  int n = *list[1];
  if (strlen(name) != 3 || strspn(name, "0123456789") != 3 || n >= 1000) return -1;
  list[0][n] = atoi(name);
  *list[1] = n + 1;
  return 0;
}

int cplab_trace_list_layers(cplab_trace *t, size_t step, int **layers, int *n, cplab_diag *d) {
  *layers = NULL;
  *n = 0;
  char path[64];
  snprintf(path, sizeof path, "steps/%06zu/layers", step);
  if (H5Lexists(t->file, path, H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  hid_t g = H5Gopen2(t->file, path, H5P_DEFAULT);
  int *arr = malloc(1000 * sizeof *arr);
  int count = 0, *list[2] = {arr, &count};
  hsize_t idx = 0;
  int rc = 0;
  if (g < 0 || !arr || H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_layer, list) < 0)
    rc = h5u_fail(d, "%s:/%s: cannot list the layers (names must be three digits)", t->where, path);
  h5u_close(g);
  if (rc) {
    free(arr);
    return rc;
  }
  *layers = arr;
  *n = count;
  return 0;
}

/* ---- validation ------------------------------------------------------------------------ */
static int validate_common(cplab_trace *t, cplab_diag *d) {
  char *json = NULL;
  size_t max_json = t->max_elements * 8 < MAX_JSON_BYTES ? (size_t)t->max_elements * 8 : MAX_JSON_BYTES;
  hid_t cfg = H5Gopen2(t->file, "config", H5P_DEFAULT);
  char where[600];
  snprintf(where, sizeof where, "%s:/config", t->where);
  int rc = cfg < 0 ? h5u_fail(d, "%s: /config is not a group", t->where) : 0;
  if (!rc) rc = h5u_read_text(cfg, where, "scenario_json", max_json, &json, d);
  cplab_scenario *s = NULL;
  if (!rc) {
    cplab_diag local = {0};
    if (cplab_scenario_parse(json, strlen(json), "scenario_json", NULL, &s, &local) != 0)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: scenario_json is not a valid scenario: %s", where, local.msg);
    else if ((int64_t)s->num_steps != t->info.num_steps || strcmp(s->name, t->info.scenario) != 0 ||
             cplab_parallel_world(&s->par) != t->info.world_size)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: scenario_json disagrees with the attributes", where);
    else if (t->has_spec_tokens && s->par.num_spec_tokens != t->par.num_spec_tokens)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: num_spec_tokens %d disagrees with scenario_json's %d", where,
                          t->par.num_spec_tokens, s->par.num_spec_tokens);
  }
  free(json);
  json = NULL;
  if (!rc) rc = h5u_read_text(cfg, where, "source_json", max_json, &json, d);
  free(json);
  cplab_scenario_free(s);
  h5u_close(cfg);
  if (!rc && !h5u_has(t->file, "provenance")) rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: missing group /provenance", t->where);
  return rc;
}

int cplab_trace_validate(cplab_trace *t, cplab_diag *d) {
  int rc = validate_common(t, d);
  if (rc) return rc;
  if (strcmp(t->info.kind, "rank") == 0) {
    rc = validate_groups(t, d);
    for (int64_t s = 0; s < t->info.num_steps && !rc; s++) {
      cplab_rank_plan *p = NULL;
      rc = cplab_trace_read_plan(t, (size_t)s, &p, d);
      if (!rc) rc = validate_layers(t, (size_t)s, p->split.num_tokens, d);
      cplab_rank_plan_free(p);
    }
    return rc ? rc : validate_events(t, d);
  }
  for (int r = 0; r < t->info.world_size && !rc; r++) {
    cplab_trace *rt = NULL;
    rc = cplab_trace_open_rank(t, r, &rt, d);
    if (!rc && (rt->info.num_steps != t->info.num_steps || strcmp(rt->info.scenario, t->info.scenario) != 0 ||
                strcmp(rt->info.layout, t->info.layout) != 0))
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: rank %d's file belongs to another run", t->where, r);
    if (!rc) rc = cplab_trace_validate(rt, d);
    cplab_trace_close(rt);
  }
  return rc;
}
