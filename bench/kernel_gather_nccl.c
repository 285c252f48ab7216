/* cplab-kernel-bench: the DCP gather against NCCL's all-gather, a ranked
 * kernel (kernel_bench.h), what cplab-gather-bench measured before it was
 * folded into the driver. Every MPI rank holds one shard of the bf16 MLA
 * workspace (576 bf16 = 1152 bytes a row); per shard size (a case) three
 * operations alternate inside every repetition:
 *   nccl_allgather   ncclAllGather of the rows·1152-byte shard into a
 *                    world·rows·1152 buffer;
 *   executor_gather  what the executor does per prefill chunk: cplab_gather_mla
 *                    (656-byte fp8 entries from a generated cache, through a
 *                    shuffled list of `rows` slots, upconverted into the
 *                    shard), then the same all-gather;
 *   local_gather     cplab_gather_mla alone: rows·(656 read + 1152 written).
 * Bandwidths as nccl-tests': algbw = S / t with S = world·rows·1152, busbw =
 * algbw·(n - 1)/n (null for one rank, where the factor would make it 0);
 * local_gather's GB/s over the bytes it moves. The inputs (cache, slot list,
 * shard) rotate over enough sets to span 4x the L2 (at least 2), so no
 * operation finds its input in L2; the gathered buffer is one.
 * The check, on every rank before anything is timed: set 0's shard and the
 * gathered buffer poisoned, executor_gather run once, then every slice of
 * the gathered buffer must have the XXH3 digest of its owner's shard
 * (exchanged over the job) and three shard rows must equal the host's
 * dequantisation of their generated entries (what travels is the real
 * upconverted cache, not poison). Caches hold real entries (cplab_gen_cache:
 * request = rank, layer = set). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ceilings.h"
#include "cplab/kvformat.h"
#include "cplab_kernels.h"
#include "kb_nccl.h"
#include "kernel_bench.h"

#define ROW_ELEMS ((size_t)CPLAB_MLA_ROW_DIM)       /* 576 bf16 per workspace row */
#define ROW_BYTES (ROW_ELEMS * 2)                   /* 1152 */
#define ENTRY_BYTES ((size_t)CPLAB_MLA_ENTRY_BYTES) /* 656 per fp8_ds_mla entry */
#define SEED 0x6761746865720001ULL                  /* of the generated caches: cplab-gather-bench's */
#define MAX_SETS 256

enum { OP_NCCL, OP_EXEC, OP_LOCAL, NOPS };
static const char *const op_names[NOPS] = {"nccl_allgather", "executor_gather", "local_gather"};

typedef struct ag_shape {
  int64_t rows; /* rows of the shard per rank */
} ag_shape;

#define N_AG "cplab-gather-bench's default sizes: a prefill chunk's workspace shard per rank"
#define AG(nm, def, r, note) {nm, def, &(const ag_shape){r}, note}
static const cplab_kb_case ag_cases[] = {
    AG("dcp-ag-512", 1, 512, N_AG),
    AG("dcp-ag-2k", 1, 2048, N_AG),
    AG("dcp-ag-8k", 1, 8192, N_AG),
    AG("dcp-ag-32k", 1, 32768, N_AG),
    AG("dcp-ag-128k", 1, 131072, N_AG),
    AG("smoke-dcp-ag", 0, 300, "tiny: the GPU smoke test's case (not a multiple of anything)"),
};

typedef struct ag_inst {
  const cplab_kb_env *env;
  int64_t rows;
  int sets, turn, world, rank;
  void *comm;         /* ncclComm_t */
  uint8_t *cache;     /* sets × rows × 656: entries in slots 0 .. rows-1 */
  int64_t *slot;      /* sets × rows: a permutation of 0 .. rows-1 */
  uint16_t *shard;    /* sets × rows × 576 bf16 */
  uint16_t *gathered; /* world × rows × 576 bf16, rank-major */
  int64_t *slot0;     /* host copy of set 0's slot list, for the check */
} ag_inst;

static json_t *ag_json(const void *p) {
  const ag_shape *s = p;
  return json_pack("{s:I, s:I}", "rows", (json_int_t)s->rows, "bytes_per_rank", (json_int_t)((size_t)s->rows * ROW_BYTES));
}

static void ag_text(const void *p, char *buf, size_t cap) {
  const ag_shape *s = p;
  snprintf(buf, cap, "rows %lld (%zu B a rank)", (long long)s->rows, (size_t)s->rows * ROW_BYTES);
}

/* v = a permutation of 0 .. n-1 (Fisher-Yates over splitmix64), a function of key. */
static void shuffle(int64_t *v, int64_t n, uint64_t key) {
  for (int64_t i = 0; i < n; i++) v[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(cplab_bench_splitmix(&key) % (uint64_t)(i + 1)), t = v[i];
    v[i] = v[j], v[j] = t;
  }
}

static void ag_teardown(void *p) {
  ag_inst *x = p;
  cplab_diag scratch = {0};
  void *dev[] = {x->cache, x->slot, x->shard, x->gathered};
  for (int i = 0; i < 4; i++) cplab_dev_free(dev[i], &scratch);
  free(x->slot0);
  free(x);
}

/* A device copy of n bytes of host memory into *dst. */
static int dev_copy(void **dst, const void *host, size_t n, cplab_diag *d) {
  int rc = cplab_dev_alloc(dst, n, d);
  return rc ? rc : cplab_dev_upload(*dst, host, n, d);
}

/* Allocate the case's buffers and fill every rotation set: the cache with
 * generated entries in slots 0 .. rows-1 (request = this rank, so that the
 * ranks' shards differ; layer = the set, so that sets differ), the slot
 * list with a shuffle of those slots. */
static int ag_setup(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d) {
  const ag_shape *s = c->shape;
  if (!env->job || !env->job->comm) CPLAB_FAIL(d, CPLAB_EINTERNAL, "gather_nccl: no NCCL communicator");
  ag_inst *x = calloc(1, sizeof *x);
  if (!x) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  *inst = x;
  size_t n = (size_t)s->rows, set_bytes = n * (ENTRY_BYTES + sizeof(int64_t) + ROW_BYTES);
  size_t sets = (4 * env->l2_bytes + set_bytes - 1) / set_bytes;
  *x = (ag_inst){.env = env, .rows = s->rows, .world = env->job->world, .rank = env->job->rank, .comm = env->job->comm,
                 .sets = sets < 2 ? 2 : sets > MAX_SETS ? MAX_SETS : (int)sets};
  int32_t *req = malloc(n * sizeof *req), *pos = malloc(n * sizeof *pos);
  int64_t *perm = malloc(n * sizeof *perm);
  void *dreq = NULL, *dpos = NULL, *dident = NULL;
  x->slot0 = malloc(n * sizeof *x->slot0);
  int rc = req && pos && perm && x->slot0 ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory");
  if (!rc) rc = cplab_dev_alloc((void **)&x->cache, x->sets * n * ENTRY_BYTES, d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->slot, x->sets * n * sizeof(int64_t), d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->shard, x->sets * n * ROW_BYTES, d);
  if (!rc) rc = cplab_dev_alloc((void **)&x->gathered, (size_t)x->world * n * ROW_BYTES, d);
  for (size_t i = 0; !rc && i < n; i++) req[i] = x->rank, pos[i] = (int32_t)i, perm[i] = (int64_t)i;
  if (!rc) rc = dev_copy(&dreq, req, n * sizeof *req, d);
  if (!rc) rc = dev_copy(&dpos, pos, n * sizeof *pos, d);
  if (!rc) rc = dev_copy(&dident, perm, n * sizeof *perm, d); /* token i -> slot i */
  for (int si = 0; !rc && si < x->sets; si++) {
    rc = cplab_gen_cache(&(cplab_gen_cache_params){.seed = SEED, .layer = (uint32_t)si, .req = dreq, .pos = dpos,
                                                   .slot = dident, .n = s->rows,
                                                   .kv_cache = x->cache + si * n * ENTRY_BYTES, .idx_cache = NULL,
                                                   .num_slots = s->rows},
                         stream, d);
    shuffle(perm, s->rows, ((uint64_t)x->rank << 40) ^ ((uint64_t)si << 32) ^ (uint64_t)s->rows);
    if (!rc && si == 0) memcpy(x->slot0, perm, n * sizeof *perm);
    if (!rc) rc = cplab_dev_upload(x->slot + si * n, perm, n * sizeof *perm, d);
  }
  if (!rc) rc = cplab_dev_sync(stream, d); /* generation is done before its inputs go */
  cplab_diag scratch = {0};
  cplab_dev_free(dreq, &scratch), cplab_dev_free(dpos, &scratch), cplab_dev_free(dident, &scratch);
  free(req), free(pos), free(perm);
  return rc;
}

/* Enqueue operation op on rotation set si: nccl_allgather all-gathers the
 * set's shard as it is; executor_gather first regathers it from the set's
 * cache, as the executor does. */
static int ag_run_set(ag_inst *x, int op, int si, void *stream, cplab_diag *d) {
  size_t first = (size_t)si * (size_t)x->rows; /* the set's first row and slot */
  uint16_t *shard = x->shard + first * ROW_ELEMS;
  int rc = 0;
  if (op != OP_NCCL)
    rc = cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = x->cache + first * ENTRY_BYTES, .num_slots = x->rows,
                                                     .slot = x->slot + first, .rows = x->rows, .out = shard},
                          stream, d);
  if (!rc && op != OP_LOCAL)
    rc = KB_NCCL(d, ncclAllGather(shard, x->gathered, (size_t)x->rows * ROW_ELEMS, ncclBfloat16, (ncclComm_t)x->comm,
                                  (cudaStream_t)stream));
  return rc;
}

static int ag_run_op(void *p, int mode, int op, void *stream, cplab_diag *d) {
  ag_inst *x = p;
  (void)mode;
  return ag_run_set(x, op, x->turn++ % x->sets, stream, d);
}

static int ag_check(void *p, void *stream, cplab_kb_check *res, cplab_diag *d) {
  ag_inst *x = p;
  size_t bytes = (size_t)x->rows * ROW_BYTES;
  memset(res, 0, sizeof *res);
  int rc = cplab_poison_bf16(x->shard, (size_t)x->rows * ROW_ELEMS, stream, d);
  if (!rc) rc = cplab_poison_bytes(x->gathered, (size_t)x->world * bytes, 0xA5, stream, d);
  if (!rc) rc = ag_run_set(x, OP_EXEC, 0, stream, d);
  if (!rc) rc = cplab_dev_sync(stream, d);
  uint16_t *host = malloc(bytes);
  uint64_t *all = malloc((size_t)x->world * sizeof *all);
  if (!rc && (!host || !all)) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory");
  if (!rc) rc = cplab_dev_download(host, x->shard, bytes, d);
  const int64_t probe[3] = {0, x->rows / 2, x->rows - 1};
  for (int k = 0; !rc && k < 3; k++) {
    uint8_t entry[CPLAB_MLA_ENTRY_BYTES];
    uint16_t ref[CPLAB_MLA_ROW_DIM];
    cplab_kvformat_mla_generate(SEED, 0, (uint32_t)x->rank, (uint32_t)x->slot0[probe[k]], entry);
    cplab_kvformat_mla_dequantize(entry, ref);
    res->compared++;
    if (memcmp(ref, host + (size_t)probe[k] * ROW_ELEMS, ROW_BYTES) != 0 && res->mismatches++ == 0)
      snprintf(res->detail, sizeof res->detail, "shard row %lld is not the dequantised entry of slot %lld; ",
               (long long)probe[k], (long long)x->slot0[probe[k]]);
  }
  /* Collective: every rank reaches it (a failed call above ends the job). */
  if (!rc) cplab_kb_job_allgather_u64(x->env->job, XXH3_64bits(host, bytes), all);
  for (int j = 0; !rc && j < x->world; j++) {
    rc = cplab_dev_download(host, x->gathered + (size_t)j * (size_t)x->rows * ROW_ELEMS, bytes, d);
    res->compared++;
    if (!rc && XXH3_64bits(host, bytes) != all[j] && res->mismatches++ == 0)
      snprintf(res->detail, sizeof res->detail, "slice %d of the gathered buffer differs from rank %d's shard; ", j, j);
  }
  free(host), free(all);
  if (!rc) {
    size_t at = strlen(res->detail);
    res->rows = 3;
    res->ok = res->mismatches == 0;
    snprintf(res->reference, sizeof res->reference,
             "every slice against its owner's shard (XXH3), 3 shard rows against cplab_kvformat_mla_dequantize");
    snprintf(res->detail + at, sizeof res->detail - at, "%d slices and 3 rows: %lld differ", x->world,
             (long long)res->mismatches);
  }
  return rc;
}

static void ag_work(const void *p, cplab_kb_work *w) {
  const ag_inst *x = p;
  w->sets = x->sets;
  w->set_bytes = (double)x->rows * (double)(ENTRY_BYTES + sizeof(int64_t) + ROW_BYTES);
  w->bytes = (double)x->world * (double)x->rows * (double)ROW_BYTES;
  snprintf(w->launcher, sizeof w->launcher, "ncclAllGather, cplab_gather_mla");
}

/* algbw and busbw (GB/s) of the all-gathering operations, GB/s of the local one. */
static void ag_fields(const void *p, int op, double median_s, int world, json_t *e, char col[3][16]) {
  const ag_inst *x = p;
  double total = (double)world * (double)x->rows * (double)ROW_BYTES;
  json_object_set_new(e, "total_bytes", json_real(total));
  if (op == OP_LOCAL) {
    double moved = (double)x->rows * (double)(ENTRY_BYTES + ROW_BYTES), gbps = moved / median_s / 1e9;
    json_object_set_new(e, "bytes_moved", json_real(moved));
    json_object_set_new(e, "gbps", json_real(gbps));
    snprintf(col[2], 16, "%.1f", gbps);
    return;
  }
  double alg = total / median_s / 1e9, bus = alg * (world - 1) / world;
  json_object_set_new(e, "algbw_gbps", json_real(alg));
  json_object_set_new(e, "busbw_gbps", world > 1 ? json_real(bus) : json_null());
  snprintf(col[0], 16, "%.2f", alg);
  if (world > 1) snprintf(col[1], 16, "%.2f", bus);
}

const cplab_kb_kernel cplab_kb_gather_nccl = {
    .name = "gather_nccl",
    .summary = "the DCP gather (cplab_gather_mla + ncclAllGather) against NCCL's all-gather, per shard size (ranked)",
    .cases = ag_cases,
    .ncases = (int)(sizeof ag_cases / sizeof ag_cases[0]),
    .shape_json = ag_json,
    .shape_text = ag_text,
    .setup = ag_setup,
    .check = ag_check,
    .work = ag_work,
    .teardown = ag_teardown,
    .check_kind = CPLAB_KB_CHECK_EXACT,
    .rate = CPLAB_KB_RATE_BYTES,
    .work_note = "gather_nccl: total_bytes = world x rows x 1152 (bf16 rows); algbw = total_bytes / t, busbw = algbw "
                 "(n-1)/n (null for one rank); local_gather: rows x (656 read + 1152 written) / t",
    .ranked = 1,
    .nops = NOPS,
    .op_names = op_names,
    .run_op = ag_run_op,
    .op_fields = ag_fields,
    .cols = {"algbw", "busbw", "GB/s"},
};
