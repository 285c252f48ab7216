/* cplab-kernel-bench: what moves the indexer path's lists and rows
 * (kernel_bench.h): the top-k conversion, the gather + upconvert of the
 * fp8 cache into the bf16 workspace, and the restore to global order.
 *   convert           cplab_convert_prefill_topk ("path": "prefill": a
 *                     prefill chunk's request-relative top-k tokens into
 *                     rows of the rank-major gathered workspace, one
 *                     region, extent guard off as production runs it) and
 *                     cplab_convert_decode_topk ("path": "decode": a
 *                     decode row's top-k positions into this DCP rank's
 *                     cache slots through its block-table row, -1 for
 *                     tokens other ranks own), rows x k int32 in and out;
 *   gather_upconvert  cplab_gather_mla: `keys` 656-byte fp8 cache entries,
 *                     through a slot list (64-token blocks in shuffled
 *                     order, as a paged cache holds them), into bf16
 *                     workspace rows [keys][576];
 *   gather_idx        cplab_gather_idx: the same for the indexer cache's
 *                     132-byte entries, copied as they are (a DCP rank's
 *                     shard of the gathered indexer keys, cplab-bench's
 *                     KEY_SHARD piece);
 *   restore           cplab_restore_rows: the PCP output all-gather of a
 *                     prefill of `tokens` tokens (every PCP rank's
 *                     DualChunkSwap pair of chunks, padded to equal size,
 *                     rank-major) put back in global order, rows of
 *                     row_elems bf16.
 * Inputs: convert's lists drawn on the host (each row's distinct tokens of
 * its context, in random order, -1 after them where the context is shorter
 * than k: cplab_topk's output form) and uploaded; the cache by
 * cplab_gen_cache, the gathered rows by cplab_gen_bf16; another request
 * (tensor) per set, enough sets to span 4x the L2.
 * The checks, exact, against the C functions the kernel tests use
 * (tests/gpu/test_gpu_convert.c, test_gpu_gen.c, tests/emu/
 * test_emu_restore.c), on poisoned outputs, --check-rows rows spread over
 * the call, every entry of each:
 *   convert  cplab_layout_vllm_convert_prefill / _decode (plan/layouts);
 *   gather   cplab_kvformat_mla_dequantize of cplab_kvformat_mla_generate
 *            of the row's token (gather_idx: cplab_kvformat_idx_generate's
 *            bytes);
 *   restore  cplab_gen_bf16_host of the gathered row the map names.
 * Work (bytes, against the copy ceiling): convert the int32 lists read and
 * written (4 + 4 B an entry; the block table is not counted); gather the
 * entry read, its slot (int64) and the bf16 row written (656 + 8 + 1152 B;
 * gather_idx 132 + 8 + 132 B);
 * restore the row read and written and its index (2 · 2 · row_elems + 4 B). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/kvformat.h"
#include "cplab/layout.h"
#include "cplab/plan.h"
#include "cplab_kernels.h"
#include "kernel_bench.h"
#include "kernel_indexer.h"

#define N_SMOKE "tiny: the tests' smoke case (CPU emulation, GPU smoke test)"
#define I32_POISON 0x7F /* bytes: 0x7F7F7F7F, no workspace row or slot these cases produce */

/* ---- convert ---------------------------------------------------------------------------- */

typedef struct convert_shape {
  int decode, k, dcp, interleave, block_size;
  int64_t rows, context;
} convert_shape;

#define CPREFILL(nm, def, m, ctx, D, I, nt)                                                                       \
  {                                                                                                              \
    nm, def,                                                                                                     \
        &(const convert_shape){.decode = 0, .k = 2048, .dcp = D, .interleave = I, .rows = m, .context = ctx}, nt  \
  }
#define CDECODE(nm, def, m, ctx, D, I, B, nt)                                                                     \
  {                                                                                                              \
    nm, def,                                                                                                     \
        &(const convert_shape){                                                                                  \
            .decode = 1, .k = 2048, .dcp = D, .interleave = I, .block_size = B, .rows = m, .context = ctx},        \
        nt                                                                                                       \
  }
#define N_CP "a causal prefill chunk at the end of a 32k context, on a DCP rank (rank-major workspace)"
#define N_CD "decode rows' merged top-k of a 128k context, on DCP rank 0 (block size 64)"

static const cplab_kb_case convert_cases[] = {
    CPREFILL("convert-prefill-4k-dcp4", 1, 4096, 32768, 4, 1, N_CP),
    CPREFILL("convert-prefill-8k-dcp8", 1, 8192, 32768, 8, 1, N_CP),
    CDECODE("convert-decode-b64-dcp4", 1, 64, 131072, 4, 1, 64, N_CD),
    CDECODE("convert-decode-b128-dcp8", 1, 128, 131072, 8, 1, 64, N_CD),
    {"smoke-convert-prefill", 0,
     &(const convert_shape){.decode = 0, .k = 128, .dcp = 2, .interleave = 2, .rows = 16, .context = 140}, N_SMOKE},
    {"smoke-convert-decode", 0,
     &(const convert_shape){
         .decode = 1, .k = 256, .dcp = 2, .interleave = 1, .block_size = 64, .rows = 3, .context = 4096},
     N_SMOKE},
};

static json_t *convert_json(const void *p) {
  const convert_shape *s = p;
  json_t *j = json_pack("{s:s, s:I, s:i, s:I, s:i, s:i}", "path", s->decode ? "decode" : "prefill", "rows",
                        (json_int_t)s->rows, "k", s->k, "context", (json_int_t)s->context, "dcp", s->dcp, "interleave",
                        s->interleave);
  if (s->decode) json_object_set_new(j, "block_size", json_integer(s->block_size));
  return j;
}

static void convert_text(const void *p, char *buf, size_t cap) {
  const convert_shape *s = p;
  int n = snprintf(buf, cap, "%s rows %lld k %d ctx %lld dcp %d", s->decode ? "decode" : "prefill",
                   (long long)s->rows, s->k, (long long)s->context, s->dcp);
  if (n > 0 && (size_t)n < cap && s->interleave > 1) n += snprintf(buf + n, cap - (size_t)n, " I %d", s->interleave);
  if (n > 0 && (size_t)n < cap && s->decode) snprintf(buf + n, cap - (size_t)n, " B %d", s->block_size);
}

typedef struct convert_inst {
  const convert_shape *s;
  int sets, turn, check_rows, max_blocks;
  cplab_layout_env env;
  cplab_prefill_plan plan; /* prefill: the one region, for the reference */
  cplab_prefill_chunk chunk;
  int64_t ws_start, shard_rows, extent;
  int32_t region_chunk;
  int32_t *topk0, *table;  /* host: set 0's lists [rows][k]; decode: the block table [rows][max_blocks] */
  int32_t *d_rowmap, *d_table; /* prefill: the rows' region (0); decode: the rows' request (i); the table */
  int64_t *d_ws_start, *d_shard_rows;
  int32_t *topk[CPLAB_KBI_MAX_SETS], *out[CPLAB_KBI_MAX_SETS];
} convert_inst;

/* One set's lists, host [rows][k]. */
static void convert_lists(const convert_shape *s, uint64_t *rng, int32_t *topk) {
  for (int64_t i = 0; i < s->rows; i++) {
    int32_t *row = topk + i * s->k;
    int64_t ctx = s->decode ? s->context : s->context - s->rows + i + 1;
    int n = ctx < s->k ? (int)ctx : s->k;
    cplab_kbi_distinct(rng, ctx, n, row);
    for (int j = n; j < s->k; j++) row[j] = -1;
  }
}

static void convert_teardown(void *p) {
  convert_inst *x = p;
  cplab_diag d = {0};
  if (!x) return;
  for (int i = 0; i < x->sets; i++) cplab_dev_free(x->topk[i], &d), cplab_dev_free(x->out[i], &d);
  cplab_dev_free(x->d_rowmap, &d), cplab_dev_free(x->d_table, &d);
  cplab_dev_free(x->d_ws_start, &d), cplab_dev_free(x->d_shard_rows, &d);
  free(x->topk0), free(x->table);
  free(x);
}

static int convert_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  const convert_shape *s = c->shape;
  convert_inst *x = calloc(1, sizeof *x);
  *inst = x;
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  (void)stream;
  int64_t m = s->rows, k = s->k, local = cplab_kv_local_len(s->context, 0, s->interleave, s->dcp);
  uint64_t rng = env->seed ^ (0xC0DEULL * (uint64_t)(c - convert_cases + 1));
  x->s = s, x->check_rows = cplab_kbi_check_rows(env, m);
  x->env.par.dcp = s->dcp, x->env.par.interleave = s->interleave, x->env.par.block_size = s->block_size;
  x->max_blocks = s->decode ? (int)((local + s->block_size - 1) / s->block_size) : 0;
  x->topk0 = malloc((size_t)(m * k) * 4);
  int32_t *rowmap = calloc((size_t)m, 4), *lists = malloc((size_t)(m * k) * 4);
  if (s->decode) x->table = malloc((size_t)m * x->max_blocks * 4);
  int rc = !x->topk0 || !rowmap || !lists || (s->decode && !x->table) ? cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory")
                                                                      : 0;
  if (!rc && s->decode) {
    for (int64_t i = 0; i < m; i++) rowmap[i] = (int32_t)i; /* row i is request i */
    for (int64_t b = 0; b < m * x->max_blocks; b++) x->table[b] = (int32_t)cplab_kbi_rnd(&rng, 1 << 20);
    rc = cplab_kbi_upload((void **)&x->d_table, x->table, (size_t)m * x->max_blocks * 4, d);
  } else if (!rc) {
    /* one region (the chunk's request) at workspace row 0 of each rank's slice of shard_rows rows */
    x->ws_start = 0, x->shard_rows = local, x->extent = s->context;
    x->chunk = (cplab_prefill_chunk){.first_region = 0, .num_regions = 1, .shard_rows = local};
    x->plan = (cplab_prefill_plan){.active = 1, .W = s->dcp, .num_regions = 1, .extent = &x->extent,
                                   .rows_per_rank = &x->shard_rows, .workspace_start = &x->ws_start,
                                   .region_chunk = &x->region_chunk, .num_chunks = 1, .chunks = &x->chunk};
    rc = cplab_kbi_upload((void **)&x->d_ws_start, &x->ws_start, 8, d);
    if (!rc) rc = cplab_kbi_upload((void **)&x->d_shard_rows, &x->shard_rows, 8, d);
  }
  if (!rc) rc = cplab_kbi_upload((void **)&x->d_rowmap, rowmap, (size_t)m * 4, d);
  double set_bytes = (double)(m * k) * 8;
  int sets = cplab_kbi_sets(env, set_bytes, set_bytes);
  for (int si = 0; !rc && si < sets; si++) {
    x->sets = si + 1;
    convert_lists(s, &rng, si ? lists : x->topk0);
    rc = cplab_kbi_upload((void **)&x->topk[si], si ? lists : x->topk0, (size_t)(m * k) * 4, d);
    if (!rc) rc = cplab_dev_alloc((void **)&x->out[si], (size_t)(m * k) * 4, d);
  }
  free(rowmap), free(lists);
  return rc;
}

static int convert_run_set(convert_inst *x, int si, void *stream, cplab_diag *d) {
  const convert_shape *s = x->s;
  if (s->decode)
    return cplab_convert_decode_topk(
        &(cplab_convert_decode_topk_params){.topk = x->topk[si], .m = s->rows, .k = s->k, .row_req = x->d_rowmap,
                                            .block_table = x->d_table, .num_req = (int)s->rows,
                                            .max_blocks = x->max_blocks, .block_size = s->block_size, .dcp = s->dcp,
                                            .dcp_rank = 0, .interleave = s->interleave, .out = x->out[si]}, stream, d);
  return cplab_convert_prefill_topk(
      &(cplab_convert_prefill_topk_params){.topk = x->topk[si], .m = s->rows, .k = s->k, .row_region = x->d_rowmap,
                                           .ws_start = x->d_ws_start, .shard_rows = x->d_shard_rows, .extent = NULL,
                                           .num_regions = 1, .dcp = s->dcp, .interleave = s->interleave,
                                           .out = x->out[si]}, stream, d);
}

static int convert_run(void *p, void *stream, cplab_diag *d) {
  convert_inst *x = p;
  return convert_run_set(x, x->turn++ % x->sets, stream, d);
}

static int convert_check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  convert_inst *x = p;
  const convert_shape *s = x->s;
  int64_t m = s->rows, k = s->k, minus1 = 0;
  memset(res, 0, sizeof *res);
  int rc = cplab_poison_bytes(x->out[0], (size_t)(m * k) * 4, I32_POISON, stream, d);
  if (!rc) rc = convert_run_set(x, 0, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  int32_t *got = rc ? NULL : malloc((size_t)k * 4);
  if (!rc && !got) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for the check");
  for (int i = 0; !rc && i < x->check_rows; i++) {
    int64_t r = cplab_kbi_check_row(i, x->check_rows, m);
    rc = cplab_dev_download(got, x->out[0] + r * k, (size_t)k * 4, d);
    for (int64_t j = 0; !rc && j < k; j++) {
      int32_t tok = x->topk0[r * k + j];
      int32_t want = s->decode ? cplab_layout_vllm_convert_decode(&x->env, x->table + r * x->max_blocks, x->max_blocks,
                                                                  tok, 0)
                               : cplab_layout_vllm_convert_prefill(&x->env, &x->plan, 0, tok, 0);
      res->compared++, minus1 += want == -1;
      if (got[j] != want && res->mismatches++ == 0)
        snprintf(res->detail, sizeof res->detail, "row %lld entry %lld (token %d): got %d, want %d; ", (long long)r,
                 (long long)j, tok, got[j], want);
    }
  }
  if (!rc) {
    size_t at = strlen(res->detail);
    res->rows = x->check_rows;
    res->ok = res->mismatches == 0;
    snprintf(res->reference, sizeof res->reference, "cplab_layout_vllm_convert_%s (plan/layouts/vllm.c), exactly",
             s->decode ? "decode" : "prefill");
    snprintf(res->detail + at, sizeof res->detail - at, "%d rows x %d entries (%lld of them -1): %lld differ from %s",
             res->rows, s->k, (long long)minus1, (long long)res->mismatches, res->reference);
  }
  free(got);
  return rc;
}

static void convert_work(const void *p, cplab_kb_work *w) {
  const convert_inst *x = p;
  w->flop = w->flop_valid = 0;
  w->bytes = w->set_bytes = (double)(x->s->rows * x->s->k) * 8;
  w->sets = x->sets;
  snprintf(w->launcher, sizeof w->launcher, "%s",
           x->s->decode ? "cplab_convert_decode_topk" : "cplab_convert_prefill_topk");
}

/* ---- gather_upconvert and gather_idx ----------------------------------------------------- */

#define BLOCK 64 /* tokens per cache block */

typedef struct gather_shape {
  int64_t keys;
} gather_shape;

static const cplab_kb_case gather_cases[] = {
    {"gather-8k", 1, &(const gather_shape){8192}, "a DCP rank's shard of a 32k prefill at dcp 4"},
    {"gather-32k", 1, &(const gather_shape){32768}, "a 32k context's workspace"},
    {"gather-128k", 1, &(const gather_shape){131072}, "a 128k context's workspace"},
    {"smoke-gather", 0, &(const gather_shape){200}, N_SMOKE " (the last block partly used)"},
};

static const cplab_kb_case gidx_cases[] = {
    {"gather-idx-8k", 1, &(const gather_shape){8192}, "a DCP rank's shard of a 32k prefill's indexer keys at dcp 4"},
    {"gather-idx-32k", 1, &(const gather_shape){32768}, "a 32k prefill's indexer keys (the shard at dcp 1)"},
    {"gather-idx-128k", 1, &(const gather_shape){131072}, "a 128k context's indexer keys"},
    {"smoke-gather-idx", 0, &(const gather_shape){200}, N_SMOKE " (the last block partly used)"},
};

static json_t *gather_json(const void *p) { return json_pack("{s:I}", "keys", (json_int_t)((const gather_shape *)p)->keys); }
static void gather_text(const void *p, char *buf, size_t cap) {
  snprintf(buf, cap, "keys %lld", (long long)((const gather_shape *)p)->keys);
}
#define gidx_json gather_json
#define gidx_text gather_text

typedef struct gather_inst {
  const gather_shape *s;
  int idx; /* gather_idx: the indexer cache, rows copied */
  uint64_t seed;
  int sets, turn, check_rows;
  int64_t num_slots;
  uint8_t *cache[CPLAB_KBI_MAX_SETS];
  int64_t *slot[CPLAB_KBI_MAX_SETS];
  void *out[CPLAB_KBI_MAX_SETS];
} gather_inst;

static uint32_t gather_req(int si) { return (uint32_t)(si + 1); }
static size_t gather_entry_bytes(const gather_inst *x) { return x->idx ? CPLAB_IDX_ENTRY_BYTES : CPLAB_MLA_ENTRY_BYTES; }
static size_t gather_row_bytes(const gather_inst *x) { return x->idx ? CPLAB_IDX_ENTRY_BYTES : CPLAB_MLA_ROW_DIM * 2; }

static void gather_teardown(void *p) {
  gather_inst *x = p;
  cplab_diag d = {0};
  if (!x) return;
  for (int i = 0; i < x->sets; i++)
    cplab_dev_free(x->cache[i], &d), cplab_dev_free(x->slot[i], &d), cplab_dev_free(x->out[i], &d);
  free(x);
}
#define gidx_teardown gather_teardown

static int gather_setup_as(int idx, const cplab_kb_case *c, uint64_t salt, const cplab_kb_env *env, void *stream,
                           void **inst, cplab_diag *d) {
  const gather_shape *s = c->shape;
  gather_inst *x = calloc(1, sizeof *x);
  *inst = x;
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  int64_t n = s->keys, blocks = (n + BLOCK - 1) / BLOCK;
  uint64_t rng = env->seed ^ salt;
  x->s = s, x->idx = idx, x->seed = env->seed, x->check_rows = cplab_kbi_check_rows(env, n);
  x->num_slots = blocks * BLOCK;
  size_t eb = gather_entry_bytes(x), rb = gather_row_bytes(x);
  int32_t *req = malloc((size_t)n * 4), *pos = malloc((size_t)n * 4), *perm = malloc((size_t)blocks * 4);
  int64_t *slot = malloc((size_t)n * 8);
  void *d_req = NULL, *d_pos = NULL;
  int rc = !req || !pos || !perm || !slot ? cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory") : 0;
  double set_bytes = (double)n * (double)(eb + 8 + rb);
  int sets = cplab_kbi_sets(env, set_bytes, set_bytes + (double)(x->num_slots - n) * (double)eb);
  for (int si = 0; !rc && si < sets; si++) {
    x->sets = si + 1;
    /* token j of request si + 1 at slot perm[j / 64] · 64 + j mod 64: whole blocks, in shuffled order */
    for (int64_t b = 0; b < blocks; b++) perm[b] = (int32_t)b;
    for (int64_t b = blocks - 1; b > 0; b--) {
      int64_t i = (int64_t)cplab_kbi_rnd(&rng, (uint64_t)b + 1);
      int32_t t = perm[b];
      perm[b] = perm[i], perm[i] = t;
    }
    for (int64_t j = 0; j < n; j++)
      req[j] = (int32_t)gather_req(si), pos[j] = (int32_t)j, slot[j] = (int64_t)perm[j / BLOCK] * BLOCK + j % BLOCK;
    rc = cplab_dev_alloc((void **)&x->cache[si], (size_t)x->num_slots * eb, d);
    if (!rc) rc = cplab_poison_bytes(x->cache[si], (size_t)x->num_slots * eb, 0x7F, stream, d);
    if (!rc) rc = cplab_kbi_upload((void **)&x->slot[si], slot, (size_t)n * 8, d);
    if (!rc) rc = cplab_kbi_upload(&d_req, req, (size_t)n * 4, d);
    if (!rc) rc = cplab_kbi_upload(&d_pos, pos, (size_t)n * 4, d);
    if (!rc)
      rc = cplab_gen_cache(&(cplab_gen_cache_params){.seed = x->seed, .layer = CPLAB_KBI_LAYER, .req = d_req,
                                                     .pos = d_pos, .slot = x->slot[si], .n = n,
                                                     .kv_cache = idx ? NULL : x->cache[si],
                                                     .idx_cache = idx ? x->cache[si] : NULL, .num_slots = x->num_slots},
                           stream, d);
    if (!rc) rc = cplab_dev_alloc(&x->out[si], (size_t)n * rb, d);
    if (!rc) rc = cplab_dev_sync(stream, d);
    cplab_diag scratch = {0};
    cplab_dev_free(d_req, &scratch), cplab_dev_free(d_pos, &scratch);
    d_req = d_pos = NULL;
  }
  cplab_diag scratch = {0};
  cplab_dev_free(d_req, &scratch), cplab_dev_free(d_pos, &scratch); /* left by a failure */
  free(req), free(pos), free(perm), free(slot);
  return rc;
}

static int gather_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  return gather_setup_as(0, c, 0x6A7EULL * (uint64_t)(c - gather_cases + 1), env, stream, inst, d);
}
static int gidx_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  return gather_setup_as(1, c, 0x61D7ULL * (uint64_t)(c - gidx_cases + 1), env, stream, inst, d);
}

static int gather_run_set(gather_inst *x, int si, void *stream, cplab_diag *d) {
  if (x->idx)
    return cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = x->cache[si], .num_slots = x->num_slots,
                                                       .slot = x->slot[si], .rows = x->s->keys, .out = x->out[si]},
                            stream, d);
  return cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = x->cache[si], .num_slots = x->num_slots,
                                                     .slot = x->slot[si], .rows = x->s->keys, .out = x->out[si]},
                          stream, d);
}

static int gather_run(void *p, void *stream, cplab_diag *d) {
  gather_inst *x = p;
  return gather_run_set(x, x->turn++ % x->sets, stream, d);
}
#define gidx_run gather_run

/* Row r's expected bytes: the bf16 row of its token's entry, or (gather_idx) the entry. */
static void gather_want(const gather_inst *x, int64_t r, uint8_t *want) {
  if (x->idx) {
    cplab_kvformat_idx_generate(x->seed, CPLAB_KBI_LAYER, gather_req(0), (uint32_t)r, want);
    return;
  }
  uint8_t entry[CPLAB_MLA_ENTRY_BYTES];
  uint16_t row[CPLAB_MLA_ROW_DIM];
  cplab_kvformat_mla_generate(x->seed, CPLAB_KBI_LAYER, gather_req(0), (uint32_t)r, entry);
  cplab_kvformat_mla_dequantize(entry, row);
  memcpy(want, row, sizeof row);
}

static int gather_check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  gather_inst *x = p;
  int64_t n = x->s->keys;
  size_t rb = gather_row_bytes(x), unit = x->idx ? 1 : 2; /* compared as bytes or as bf16 */
  uint8_t got[CPLAB_MLA_ROW_DIM * 2], want[CPLAB_MLA_ROW_DIM * 2];
  memset(res, 0, sizeof *res);
  int rc = cplab_poison_bytes(x->out[0], (size_t)n * rb, 0xFF, stream, d);
  if (!rc) rc = gather_run_set(x, 0, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  for (int i = 0; !rc && i < x->check_rows; i++) {
    int64_t r = cplab_kbi_check_row(i, x->check_rows, n);
    rc = cplab_dev_download(got, (uint8_t *)x->out[0] + (size_t)r * rb, rb, d);
    gather_want(x, r, want);
    for (size_t c = 0; !rc && c < rb / unit; c++) {
      res->compared++;
      unsigned g = unit == 1 ? got[c] : ((const uint16_t *)got)[c], w = unit == 1 ? want[c] : ((const uint16_t *)want)[c];
      if (g != w && res->mismatches++ == 0)
        snprintf(res->detail, sizeof res->detail, "row %lld %s %zu: got 0x%0*x, want 0x%0*x; ", (long long)r,
                 unit == 1 ? "byte" : "column", c, (int)(2 * unit), g, (int)(2 * unit), w);
    }
  }
  if (!rc) {
    size_t at = strlen(res->detail);
    res->rows = x->check_rows;
    res->ok = res->mismatches == 0;
    snprintf(res->reference, sizeof res->reference, "%s (the row's token), bit for bit",
             x->idx ? "cplab_kvformat_idx_generate" : "cplab_kvformat_mla_dequantize of cplab_kvformat_mla_generate");
    snprintf(res->detail + at, sizeof res->detail - at, "%d rows x %zu %s: %lld differ from %s", res->rows, rb / unit,
             unit == 1 ? "bytes" : "bf16", (long long)res->mismatches, res->reference);
  }
  return rc;
}
#define gidx_check gather_check

static void gather_work(const void *p, cplab_kb_work *w) {
  const gather_inst *x = p;
  w->flop = w->flop_valid = 0;
  w->bytes = w->set_bytes = (double)x->s->keys * (double)(gather_entry_bytes(x) + 8 + gather_row_bytes(x));
  w->sets = x->sets;
  snprintf(w->launcher, sizeof w->launcher, x->idx ? "cplab_gather_idx" : "cplab_gather_mla");
}
#define gidx_work gather_work

/* ---- restore ----------------------------------------------------------------------------- */

typedef struct restore_shape {
  int pcp, row_elems;
  int64_t tokens;
} restore_shape;

#define N_RESTORE "a prefill's attention output all-gathered over PCP (DualChunkSwap), back in global order"
static const cplab_kb_case restore_cases[] = {
    {"restore-8k-pcp2", 1, &(const restore_shape){.pcp = 2, .row_elems = CPLAB_MLA_ROW_DIM, .tokens = 8192}, N_RESTORE},
    {"restore-32k-pcp4", 1, &(const restore_shape){.pcp = 4, .row_elems = CPLAB_MLA_ROW_DIM, .tokens = 32768},
     N_RESTORE},
    {"restore-32k-pcp8", 0, &(const restore_shape){.pcp = 8, .row_elems = CPLAB_MLA_ROW_DIM, .tokens = 32768},
     N_RESTORE},
    {"smoke-restore", 0, &(const restore_shape){.pcp = 2, .row_elems = CPLAB_MLA_ROW_DIM, .tokens = 101},
     N_SMOKE " (padded chunks)"},
};

static json_t *restore_json(const void *p) {
  const restore_shape *s = p;
  return json_pack("{s:I, s:i, s:i}", "tokens", (json_int_t)s->tokens, "pcp", s->pcp, "row_elems", s->row_elems);
}
static void restore_text(const void *p, char *buf, size_t cap) {
  const restore_shape *s = p;
  snprintf(buf, cap, "tokens %lld pcp %d row %d bf16", (long long)s->tokens, s->pcp, s->row_elems);
}

typedef struct restore_inst {
  const restore_shape *s;
  uint64_t seed;
  int sets, turn, check_rows;
  int64_t gathered_rows;
  int32_t *map, *d_map; /* [tokens]: the gathered row of each global token */
  uint16_t *gathered[CPLAB_KBI_MAX_SETS], *out[CPLAB_KBI_MAX_SETS];
} restore_inst;

static uint32_t restore_tensor(int si) { return 0x52E5u + (uint32_t)si; }

/* DualChunkSwap: 2P chunks of cs tokens, PCP rank r holds chunks r and 2P-1-r as its 2·cs padded rows. */
static void restore_map(const restore_shape *s, int32_t *map, int64_t *gathered_rows) {
  int64_t P = s->pcp, C = 2 * P, cs = (s->tokens + C - 1) / C;
  for (int64_t g = 0; g < s->tokens; g++) {
    int64_t c = g / cs, off = g - c * cs;
    map[g] = (int32_t)(c < P ? c * 2 * cs + off : (C - 1 - c) * 2 * cs + cs + off);
  }
  *gathered_rows = P * 2 * cs;
}

static void restore_teardown(void *p) {
  restore_inst *x = p;
  cplab_diag d = {0};
  if (!x) return;
  for (int i = 0; i < x->sets; i++) cplab_dev_free(x->gathered[i], &d), cplab_dev_free(x->out[i], &d);
  cplab_dev_free(x->d_map, &d);
  free(x->map);
  free(x);
}

static int restore_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  const restore_shape *s = c->shape;
  restore_inst *x = calloc(1, sizeof *x);
  *inst = x;
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  int64_t n = s->tokens;
  x->s = s, x->seed = env->seed, x->check_rows = cplab_kbi_check_rows(env, n);
  if (!(x->map = malloc((size_t)n * 4))) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  restore_map(s, x->map, &x->gathered_rows);
  size_t row = (size_t)s->row_elems * 2;
  double set_bytes = (double)n * (2.0 * (double)row + 4);
  int sets = cplab_kbi_sets(env, set_bytes, (double)(x->gathered_rows + n) * (double)row);
  int rc = cplab_kbi_upload((void **)&x->d_map, x->map, (size_t)n * 4, d);
  for (int si = 0; !rc && si < sets; si++) {
    x->sets = si + 1;
    rc = cplab_dev_alloc((void **)&x->gathered[si], (size_t)x->gathered_rows * row, d);
    if (!rc)
      rc = cplab_gen_bf16(x->seed, restore_tensor(si), x->gathered[si], x->gathered_rows * s->row_elems, 1.0f, stream,
                          d);
    if (!rc) rc = cplab_dev_alloc((void **)&x->out[si], (size_t)n * row, d);
  }
  if (!rc) rc = cplab_dev_sync(stream, d);
  return rc;
}

static int restore_run_set(restore_inst *x, int si, void *stream, cplab_diag *d) {
  return cplab_restore_rows(&(cplab_restore_rows_params){.gathered = x->gathered[si], .gathered_rows = x->gathered_rows,
                                                         .restore_idx = x->d_map, .n = x->s->tokens,
                                                         .row_elems = x->s->row_elems, .out = x->out[si]}, stream, d);
}

static int restore_run(void *p, void *stream, cplab_diag *d) {
  restore_inst *x = p;
  return restore_run_set(x, x->turn++ % x->sets, stream, d);
}

static int restore_check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  restore_inst *x = p;
  const restore_shape *s = x->s;
  int E = s->row_elems;
  memset(res, 0, sizeof *res);
  int rc = cplab_poison_bytes(x->out[0], (size_t)s->tokens * E * 2, 0xFF, stream, d);
  if (!rc) rc = restore_run_set(x, 0, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  uint16_t *got = rc ? NULL : malloc((size_t)E * 2);
  if (!rc && !got) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory for the check");
  for (int i = 0; !rc && i < x->check_rows; i++) {
    int64_t r = cplab_kbi_check_row(i, x->check_rows, s->tokens);
    rc = cplab_dev_download(got, x->out[0] + r * E, (size_t)E * 2, d);
    for (int c = 0; !rc && c < E; c++) {
      uint16_t want = cplab_gen_bf16_host(x->seed, restore_tensor(0), (int64_t)x->map[r] * E + c, 1.0f);
      res->compared++;
      if (got[c] != want && res->mismatches++ == 0)
        snprintf(res->detail, sizeof res->detail, "token %lld (gathered row %d) column %d: got 0x%04x, want 0x%04x; ",
                 (long long)r, x->map[r], c, got[c], want);
    }
  }
  if (!rc) {
    size_t at = strlen(res->detail);
    res->rows = x->check_rows;
    res->ok = res->mismatches == 0;
    snprintf(res->reference, sizeof res->reference,
             "cplab_gen_bf16_host of the gathered row the restore map names, bit for bit");
    snprintf(res->detail + at, sizeof res->detail - at, "%d rows x %d bf16: %lld differ from %s", res->rows, E,
             (long long)res->mismatches, res->reference);
  }
  free(got);
  return rc;
}

static void restore_work(const void *p, cplab_kb_work *w) {
  const restore_inst *x = p;
  w->flop = w->flop_valid = 0;
  w->bytes = w->set_bytes = (double)x->s->tokens * (4.0 * x->s->row_elems + 4);
  w->sets = x->sets;
  snprintf(w->launcher, sizeof w->launcher, "cplab_restore_rows");
}

/* ---- the kernels ------------------------------------------------------------------------- */

#define MOVER(kname, text, table, p, note)                                                                       \
  {                                                                                                              \
    .name = kname, .summary = text, .cases = table, .ncases = (int)(sizeof table / sizeof table[0]),             \
    .shape_json = p##_json, .shape_text = p##_text, .setup = p##_setup, .check = p##_check, .run = p##_run,       \
    .work = p##_work, .teardown = p##_teardown, .check_kind = CPLAB_KB_CHECK_EXACT, .rate = CPLAB_KB_RATE_BYTES,  \
    .work_note = note                                                                                            \
  }
const cplab_kb_kernel cplab_kb_convert =
    MOVER("convert",
          "cplab_convert_prefill_topk / _decode_topk (\"path\"): top-k lists [rows][k] into workspace rows / cache slots",
          convert_cases, convert,
          "gbps: the int32 lists read and written (8 B an entry; the block table not counted), against the copy");
const cplab_kb_kernel cplab_kb_gather_upconvert =
    MOVER("gather_upconvert", "cplab_gather_mla: 656-byte fp8 cache entries through a slot list into bf16 rows [keys][576]",
          gather_cases, gather,
          "gbps: per row the 656-byte entry and its int64 slot read and the 1152-byte bf16 row written, against the "
          "copy");
const cplab_kb_kernel cplab_kb_gather_idx =
    MOVER("gather_idx", "cplab_gather_idx: 132-byte indexer cache entries through a slot list into a key buffer [keys][132]",
          gidx_cases, gidx, "gbps: per row the 132-byte entry and its int64 slot read and the entry written, against the copy");
const cplab_kb_kernel cplab_kb_restore =
    MOVER("restore", "cplab_restore_rows: the PCP output all-gather's rows [gathered][576] back in global token order",
          restore_cases, restore,
          "gbps: per token its bf16 row read and written and its int32 map entry read, against the copy");
