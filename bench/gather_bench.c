/* cplab-gather-bench: the DCP gather's bandwidth against NCCL's own all-gather.
 *
 * One MPI rank per GPU, one NCCL communicator over all ranks. For each shard
 * size (rows of the bf16 MLA workspace, 576 bf16 = 1152 bytes per row) it times
 *   1. ncclAllGather of the rows·1152-byte shard into a world·rows·1152 buffer;
 *   2. the executor's DCP gather of one prefill chunk: cplab_gather_mla (fp8
 *      cache of 656-byte entries, a shuffled list of `rows` slots, upconverted
 *      into the local shard) followed by the same all-gather;
 *   3. cplab_gather_mla alone, moving rows·(656 read + 1152 written) bytes.
 * Method (reference perf-anchors.md §5): CUDA events on the stream around each
 * operation; before each one the stream is drained and all ranks meet at a
 * barrier; a repetition's time is the maximum over ranks. The three operations
 * alternate inside every repetition, so drift (clocks, heat) hits them alike,
 * and their inputs rotate over enough sets (cache, slot list, shard) that the
 * L2 cannot keep one between its uses. Bandwidths as nccl-tests: algbw = S / t
 * with S = world·rows·1152, busbw = algbw·(n - 1)/n (undefined for n = 1).
 * Nothing is timed before the first run of (2) on the size has been checked
 * (check_size). Exit 0 ok, 2 on any error or wrong gather.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cplab/cli.h"
#include "cplab/kvformat.h"
#include "cplab_kernels.h"
#include "mpibench.h"

#define PROG "cplab-gather-bench"
const char mpibench_prog[] = PROG;
#define ROW_ELEMS ((size_t)CPLAB_MLA_ROW_DIM)       /* 576 bf16 per workspace row */
#define ROW_BYTES (ROW_ELEMS * 2)                   /* 1152 */
#define ENTRY_BYTES ((size_t)CPLAB_MLA_ENTRY_BYTES) /* 656 per fp8_ds_mla entry */
#define SEED 0x6761746865720001ULL                  /* of the generated caches; any fixed value */
#define MAX_SIZES 32
#define MAX_ROWS (1 << 24)
#define MAX_SETS 256

enum { OP_NCCL, OP_EXEC, OP_LOCAL, NOPS };
static const char *const op_key[NOPS] = {"nccl_allgather", "executor_gather", "local_gather"};

typedef struct opts {
  int64_t rows[MAX_SIZES];
  int nsizes, reps, warmup, help;
  const char *out;
} opts;

typedef struct bufs { /* one size's buffers; the inputs in `sets` rotation sets */
  int64_t rows;
  int sets;
  uint8_t *cache;     /* sets × rows × 656: entries in slots 0 .. rows-1 */
  int64_t *slot;      /* sets × rows: a permutation of 0 .. rows-1 */
  uint16_t *shard;    /* sets × rows × 576 bf16 */
  uint16_t *gathered; /* world × rows × 576 bf16, rank-major */
  int64_t *slot0;     /* host copy of set 0's slot list, for the spot check */
} bufs;

/* ---- options ------------------------------------------------------------------ */

static int parse_opts(int argc, char **argv, opts *o, cplab_diag *d) {
  enum { OPT_ROWS = CPLAB_OPT_PROGRAM, OPT_REPS, OPT_WARMUP };
  static const struct option longopts[] = {
      {"rows", required_argument, NULL, OPT_ROWS}, {"reps", required_argument, NULL, OPT_REPS},
      {"warmup", required_argument, NULL, OPT_WARMUP}, {"out", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  static const int64_t default_rows[] = {512, 2048, 8192, 32768, 131072};
  *o = (opts){.nsizes = 5, .reps = 50, .warmup = 5};
  memcpy(o->rows, default_rows, sizeof default_rows);
  opterr = 0; /* getopt must not print: rank 0 reports, once */
  int opt, rc = 0;
  while (!rc && (opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
    switch (opt) {
      case OPT_ROWS: rc = mpibench_parse_list(optarg, "--rows", MAX_ROWS, MAX_SIZES, o->rows, &o->nsizes, d); break;
      case OPT_REPS: rc = mpibench_parse_count(optarg, "--reps", 1, 100000, &o->reps, d); break;
      case OPT_WARMUP: rc = mpibench_parse_count(optarg, "--warmup", 0, 10000, &o->warmup, d); break;
      case 'o': o->out = optarg; break;
      case 'h': o->help = 1; break;
      default: /* '?': getopt sets optopt to the option's code when only its argument is missing */
        rc = cplab_cli_getopt_error(argv, "o:h", d);
    }
  }
  if (!rc && optind < argc) rc = cplab_diag_set(d, CPLAB_EUSAGE, "unexpected argument '%s'", argv[optind]);
  return rc;
}

static void usage(FILE *f) {
  fputs("Usage: mpirun -np N " PROG " [--rows LIST] [--reps N] [--warmup N] [-o FILE.json]\n"
        "Times, per shard size (rows of 576 bf16 per rank), NCCL's all-gather, the executor's DCP gather\n"
        "(cplab_gather_mla + the same all-gather) and the gather kernel alone. One MPI rank per GPU.\n"
        "  --rows LIST     rows per rank, comma-separated (default 512,2048,8192,32768,131072)\n"
        "  --reps N        timed repetitions per size (default 50)\n"
        "  --warmup N      untimed repetitions before them (default 5)\n"
        "  -o, --out FILE  also write the results as JSON to FILE\n"
        "  -h, --help      this help\n"
        "Exit status: 0 ok, 2 an error (no GPU, a failed call, a wrong gather).\n",
        f);
}

/* ---- set-up -------------------------------------------------------------------- */

/* v = a permutation of 0 .. n-1 (Fisher-Yates over splitmix64), a function of key. */
static void shuffle(int64_t *v, int64_t n, uint64_t key) {
  for (int64_t i = 0; i < n; i++) v[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    uint64_t z = (key += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    int64_t j = (int64_t)((z ^ (z >> 31)) % (uint64_t)(i + 1)), t = v[i];
    v[i] = v[j], v[j] = t;
  }
}

/* A device copy of n bytes of host memory. */
static void *dev_copy(const void *host, size_t n) {
  cplab_diag d = {0};
  void *p = NULL;
  mpibench_ck_lab(cplab_dev_alloc(&p, n, &d), &d);
  mpibench_ck_lab(cplab_dev_upload(p, host, n, &d), &d);
  return p;
}

/* Allocate one size's buffers and fill every rotation set: the cache with
 * generated entries in slots 0 .. rows-1 (request = this rank, so that ranks'
 * shards differ; layer = the set, so that sets differ), the slot list with a
 * shuffle of those slots. Enough sets that together they span 4× the L2; at
 * least 2, so consecutive operations never share one. */
static void setup_bufs(const mpibench_ctx *c, int64_t rows, bufs *b) {
  cplab_diag d = {0};
  size_t n = (size_t)rows, set_bytes = n * (ENTRY_BYTES + sizeof(int64_t) + ROW_BYTES);
  size_t sets = (4 * c->l2_bytes + set_bytes - 1) / set_bytes;
  *b = (bufs){.rows = rows, .sets = sets < 2 ? 2 : sets > MAX_SETS ? MAX_SETS : (int)sets};
  mpibench_ck_lab(cplab_dev_alloc((void **)&b->cache, b->sets * n * ENTRY_BYTES, &d), &d);
  mpibench_ck_lab(cplab_dev_alloc((void **)&b->slot, b->sets * n * sizeof(int64_t), &d), &d);
  mpibench_ck_lab(cplab_dev_alloc((void **)&b->shard, b->sets * n * ROW_BYTES, &d), &d);
  mpibench_ck_lab(cplab_dev_alloc((void **)&b->gathered, (size_t)c->world * n * ROW_BYTES, &d), &d);
  int32_t *req = mpibench_host_alloc(n * sizeof *req), *pos = mpibench_host_alloc(n * sizeof *pos);
  int64_t *perm = mpibench_host_alloc(n * sizeof *perm);
  b->slot0 = mpibench_host_alloc(n * sizeof *b->slot0);
  for (size_t i = 0; i < n; i++) req[i] = c->rank, pos[i] = (int32_t)i, perm[i] = (int64_t)i;
  void *dreq = dev_copy(req, n * sizeof *req), *dpos = dev_copy(pos, n * sizeof *pos);
  void *dident = dev_copy(perm, n * sizeof *perm); /* token i -> slot i */
  for (int s = 0; s < b->sets; s++) {
    mpibench_ck_lab(cplab_gen_cache(&(cplab_gen_cache_params){.seed = SEED, .layer = (uint32_t)s, .req = dreq,
                                                              .pos = dpos, .slot = dident, .n = rows,
                                                              .kv_cache = b->cache + s * n * ENTRY_BYTES,
                                                              .idx_cache = NULL, .num_slots = rows},
                                    c->stream, &d), &d);
    shuffle(perm, rows, ((uint64_t)c->rank << 40) ^ ((uint64_t)s << 32) ^ (uint64_t)rows);
    if (s == 0) memcpy(b->slot0, perm, n * sizeof *perm);
    mpibench_ck_lab(cplab_dev_upload(b->slot + s * n, perm, n * sizeof *perm, &d), &d);
  }
  mpibench_ck_lab(cplab_dev_sync(c->stream, &d), &d); /* generation is done before its inputs go */
  mpibench_ck_lab(cplab_dev_free(dreq, &d), &d);
  mpibench_ck_lab(cplab_dev_free(dpos, &d), &d);
  mpibench_ck_lab(cplab_dev_free(dident, &d), &d);
  free(req), free(pos), free(perm);
}

static void free_bufs(bufs *b) {
  cplab_diag d = {0};
  void *dev[] = {b->cache, b->slot, b->shard, b->gathered};
  for (int i = 0; i < 4; i++) mpibench_ck_lab(cplab_dev_free(dev[i], &d), &d);
  free(b->slot0);
}

/* ---- the operations ------------------------------------------------------------ */

/* Enqueue operation op on rotation set s: (1) all-gathers the set's shard as
 * it is; (2) first regathers the shard from the set's cache, as the executor does. */
static void run_op(const mpibench_ctx *c, const bufs *b, int op, int s) {
  cplab_diag d = {0};
  size_t first = (size_t)s * (size_t)b->rows; /* the set's first row and slot */
  uint16_t *shard = b->shard + first * ROW_ELEMS;
  if (op != OP_NCCL)
    mpibench_ck_lab(cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = b->cache + first * ENTRY_BYTES,
                                                                .num_slots = b->rows, .slot = b->slot + first,
                                                                .rows = b->rows, .out = shard}, c->stream, &d),
           &d);
  if (op != OP_LOCAL)
    CK_NCCL(ncclAllGather(shard, b->gathered, (size_t)b->rows * ROW_ELEMS, ncclBfloat16, c->comm, c->stream));
}

/* Correctness before timing: poison set 0's shard and the gathered buffer,
 * run (2) once on set 0, then on every rank compare slice j of the gathered
 * buffer with the XXH3 digest of rank j's shard (exchanged over MPI), and
 * three shard rows with the host's dequantisation of their generated entries
 * (what travels is the real upconverted cache, not poison). Returns this
 * rank's number of mismatches, the first described in why. */
static int check_size(const mpibench_ctx *c, const bufs *b, char *why, size_t why_len) {
  cplab_diag d = {0};
  size_t bytes = (size_t)b->rows * ROW_BYTES;
  int bad = 0;
  mpibench_ck_lab(cplab_poison_bf16(b->shard, (size_t)b->rows * ROW_ELEMS, c->stream, &d), &d);
  mpibench_ck_lab(cplab_poison_bytes(b->gathered, (size_t)c->world * bytes, 0xA5, c->stream, &d), &d);
  run_op(c, b, OP_EXEC, 0);
  mpibench_ck_lab(cplab_dev_sync(c->stream, &d), &d);
  uint16_t *host = mpibench_host_alloc(bytes);
  uint64_t mine, *all = mpibench_host_alloc((size_t)c->world * sizeof *all);
  mpibench_ck_lab(cplab_dev_download(host, b->shard, bytes, &d), &d);
  mine = XXH3_64bits(host, bytes);
  const int64_t probe[3] = {0, b->rows / 2, b->rows - 1};
  for (int k = 0; k < 3; k++) {
    uint8_t entry[CPLAB_MLA_ENTRY_BYTES];
    uint16_t ref[CPLAB_MLA_ROW_DIM];
    cplab_kvformat_mla_generate(SEED, 0, (uint32_t)c->rank, (uint32_t)b->slot0[probe[k]], entry);
    cplab_kvformat_mla_dequantize(entry, ref);
    if (memcmp(ref, host + (size_t)probe[k] * ROW_ELEMS, ROW_BYTES) != 0 && bad++ == 0)
      snprintf(why, why_len, "shard row %lld is not the dequantised entry of slot %lld", (long long)probe[k],
               (long long)b->slot0[probe[k]]);
  }
  CK_MPI(MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD));
  for (int j = 0; j < c->world; j++) {
    mpibench_ck_lab(cplab_dev_download(host, b->gathered + (size_t)j * b->rows * ROW_ELEMS, bytes, &d), &d);
    if (XXH3_64bits(host, bytes) != all[j] && bad++ == 0)
      snprintf(why, why_len, "slice %d of the gathered buffer differs from rank %d's shard", j, j);
  }
  free(host), free(all);
  return bad;
}

typedef struct op_call { /* run_op's arguments, for mpibench_time_ops */
  const mpibench_ctx *c;
  const bufs *b;
  int turn; /* runs so far, warm-up included: each takes the next rotation set */
} op_call;

static void run_call(void *arg, int op) {
  op_call *x = arg;
  run_op(x->c, x->b, op, x->turn++ % x->b->sets);
}

/* ---- report ---------------------------------------------------------------------- */

/* The table's head; one column per number of report_size's line:
 * nccl_* = (1), exec_* = (2), local_* = (3). */
static void print_header(const mpibench_ctx *c, const opts *o) {
  const cplab_gpu_info *g = &c->gpu;
  int nccl = c->nccl_version;
  const char *nvls = getenv("NCCL_NVLS_ENABLE");
  printf("# " PROG ": %d rank(s), %s, NCCL %d.%d.%d, NCCL_NVLS_ENABLE=%s\n"
         "# times: median over %d repetitions (after %d warm-up) of the slowest rank, in us; bandwidths in GB/s\n"
         "#%8s %11s %10s %8s %8s %10s %8s %8s %6s %10s %8s\n",
         c->world, g->name, nccl / 10000, nccl % 10000 / 100, nccl % 100, nvls ? nvls : "(unset)", o->reps,
         o->warmup, "rows", "bytes/rank", "nccl_us", "algbw", "busbw", "exec_us", "algbw", "busbw", "ratio",
         "local_us", "GB/s");
  fflush(stdout);
}

/* One table line and one JSON entry (rank 0). Bandwidths in GB/s (1e9 B/s)
 * from the median times; busbw is "-" / null for one rank, where nccl-tests'
 * factor (n-1)/n would make it 0. */
static void report_size(const mpibench_ctx *c, const bufs *b, const cplab_spread *st, json_t *results) {
  double total = (double)c->world * (double)b->rows * (double)ROW_BYTES;
  double local_bytes = (double)b->rows * (double)(ENTRY_BYTES + ROW_BYTES);
  double alg[2], bus[2], ratio = st[OP_EXEC].median / st[OP_NCCL].median, gbps = local_bytes / st[OP_LOCAL].median / 1e9;
  char busbw[2][16] = {"-", "-"};
  json_t *r = json_pack("{s:I, s:I, s:I, s:i}", "rows", (json_int_t)b->rows, "bytes_per_rank",
                        (json_int_t)((size_t)b->rows * ROW_BYTES), "total_bytes", (json_int_t)total, "rotation_sets",
                        b->sets);
  for (int op = 0; op < NOPS; op++) {
    const cplab_spread *s = &st[op];
    json_t *o = json_pack("{s:o}", "time_us", cplab_bench_spread_json(s));
    if (op == OP_LOCAL) {
      json_object_set_new(o, "bytes_moved", json_integer((json_int_t)local_bytes));
      json_object_set_new(o, "gbps", json_real(gbps));
    } else {
      alg[op] = total / s->median / 1e9;
      bus[op] = alg[op] * (c->world - 1) / c->world;
      if (c->world > 1) snprintf(busbw[op], sizeof busbw[op], "%.2f", bus[op]);
      json_object_set_new(o, "algbw_gbps", json_real(alg[op]));
      json_object_set_new(o, "busbw_gbps", c->world > 1 ? json_real(bus[op]) : json_null());
    }
    if (op == OP_EXEC) json_object_set_new(o, "ratio_to_nccl", json_real(ratio));
    json_object_set_new(r, op_key[op], o);
  }
  json_array_append_new(results, r);
  printf("%9lld %11zu %10.2f %8.2f %8s %10.2f %8.2f %8s %6.3f %10.2f %8.1f\n", (long long)b->rows,
         (size_t)b->rows * ROW_BYTES, 1e6 * st[OP_NCCL].median, alg[OP_NCCL], busbw[OP_NCCL], 1e6 * st[OP_EXEC].median,
         alg[OP_EXEC], busbw[OP_EXEC], ratio, 1e6 * st[OP_LOCAL].median, gbps);
  fflush(stdout);
}

/* ---- main ------------------------------------------------------------------------ */

/* One size: set up, check, time; its table line and JSON entry on rank 0.
 * Returns 0, or CPLAB_EXIT_ERROR when a gather came out wrong on any rank. */
static int bench_size(const mpibench_ctx *c, const opts *o, int64_t rows, json_t *results) {
  bufs b;
  char why[256] = "";
  setup_bufs(c, rows, &b);
  int bad = check_size(c, &b, why, sizeof why), total = mpibench_sum_over_ranks(bad);
  if (bad)
    fprintf(stderr, PROG ": error: rank %d, %lld rows: %s (%d mismatches) [CPLAB_EINTERNAL]\n", c->rank,
            (long long)rows, why, bad);
  if (!total) {
    cplab_spread st[NOPS];
    op_call x = {c, &b, 0};
    mpibench_time_ops(c, NOPS, o->reps, o->warmup, run_call, &x, st);
    if (c->rank == 0) report_size(c, &b, st, results);
  }
  free_bufs(&b);
  return total ? CPLAB_EXIT_ERROR : 0;
}

int main(int argc, char **argv) {
  mpibench_ctx c;
  cplab_diag d = {0};
  opts o;
  int rc;
  mpibench_start(&argc, &argv, &c);
  rc = parse_opts(argc, argv, &o, &d);
  if ((rc = mpibench_after_options(&c, rc, o.help, &d, usage)) >= 0) return rc;
  rc = 0;
  json_t *doc = c.rank == 0 ? mpibench_doc_header(&c, "gather", o.reps, o.warmup, argc, argv) : NULL;
  json_t *results = json_array();
  if (c.rank == 0) {
    json_object_set_new(doc, "bandwidth_unit", json_string("GB/s (1e9 B/s)"));
    print_header(&c, &o);
  }
  for (int i = 0; !rc && i < o.nsizes; i++) rc = bench_size(&c, &o, o.rows[i], results);
  if (c.rank == 0 && !rc)
    printf("# checked first: every rank's slice of every gathered buffer matched its owner's shard (XXH3)\n");
  rc = mpibench_close_doc(&c, doc, results, o.out, rc);
  return mpibench_finish(&c, rc ? CPLAB_EXIT_ERROR : CPLAB_EXIT_OK);
}
