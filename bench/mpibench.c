/* bench/mpibench.c: the MPI + NCCL benchmark programs' shared scaffolding
 * (contract in mpibench.h). */
#include "mpibench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cplab/cli.h"

/* ---- checked calls ------------------------------------------------------ */

_Noreturn void mpibench_die(const cplab_diag *d) {
  int up = 0, down = 0, rank = -1;
  MPI_Initialized(&up);
  MPI_Finalized(&down);
  if (up && !down) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char who[96];
  snprintf(who, sizeof who, "%s (rank %d)", mpibench_prog, rank);
  cplab_diag_report(stderr, who, d);
  if (up && !down) MPI_Abort(MPI_COMM_WORLD, CPLAB_EXIT_ERROR);
  exit(CPLAB_EXIT_ERROR);
}

_Noreturn void mpibench_die_call(int code, const char *call, const char *file, int line, const char *why) {
  cplab_diag d = {0};
  cplab_diag_set(&d, code, "%s:%d: %s: %s", file, line, call, why);
  mpibench_die(&d);
}

void mpibench_ck_mpi(int rc, const char *call, const char *file, int line) {
  char msg[MPI_MAX_ERROR_STRING] = "unknown MPI error";
  int len;
  if (rc == MPI_SUCCESS) return;
  MPI_Error_string(rc, msg, &len);
  mpibench_die_call(CPLAB_EMPI, call, file, line, msg);
}

void mpibench_ck_cuda(cudaError_t e, const char *call, const char *file, int line) {
  if (e != cudaSuccess) mpibench_die_call(CPLAB_ECUDA, call, file, line, cudaGetErrorString(e));
}

void mpibench_ck_nccl(ncclResult_t r, const char *call, const char *file, int line) {
  if (r != ncclSuccess) mpibench_die_call(CPLAB_ENCCL, call, file, line, ncclGetErrorString(r));
}

void *mpibench_host_alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) mpibench_die_call(CPLAB_ENOMEM, "malloc", __FILE__, __LINE__, "out of host memory");
  return p;
}

/* ---- options ------------------------------------------------------------- */

int mpibench_parse_count(const char *arg, const char *name, int lo, int hi, int *out, cplab_diag *d) {
  int64_t v;
  int rc = cplab_cli_parse_int(name, arg, lo, hi, &v, d);
  if (!rc) *out = (int)v;
  return rc;
}

int mpibench_parse_list(const char *arg, const char *name, int64_t hi, int max, int64_t *v, int *n, cplab_diag *d) {
  *n = 0;
  for (const char *p = arg;; p++) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char tok[24];
    uint64_t x;
    if (len == 0 || len >= sizeof tok) CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: bad list '%s'", name, arg);
    memcpy(tok, p, len);
    tok[len] = '\0';
    if (cplab_parse_u64(tok, &x) != 0 || x == 0 || x > (uint64_t)hi)
      CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: '%s' is not a count in [1, %lld]", name, tok, (long long)hi);
    if (*n == max) CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: more than %d values", name, max);
    v[(*n)++] = (int64_t)x;
    if (!end) return 0;
    p = end;
  }
}

/* ---- the job --------------------------------------------------------------- */

void mpibench_start(int *argc, char ***argv, mpibench_ctx *c) {
  *c = (mpibench_ctx){0};
  CK_MPI(MPI_Init(argc, argv));
  CK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)); /* failures reach CK_MPI */
  CK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &c->rank));
  CK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &c->world));
}

/* Bind this rank to GPU (local rank mod device count). The node split is
 * collective, so it comes before anything that can fail on one rank alone.
 * Returns 0 or a code with the message in d: no GPU, or more ranks on this
 * node than GPUs (NCCL refuses two ranks on one GPU). */
static int bind_device(mpibench_ctx *c, cplab_diag *d) {
  MPI_Comm node;
  int node_rank, node_size, l2 = 0;
  CK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  CK_MPI(MPI_Comm_rank(node, &node_rank));
  CK_MPI(MPI_Comm_size(node, &node_size));
  CK_MPI(MPI_Comm_free(&node));
  int rc = cplab_gpu_query(&c->gpu, d), dev = 0;
  if (rc == CPLAB_ENODEV) cplab_diag_prefix(d, "rank %d: this benchmark needs one GPU per MPI rank: ", c->rank);
  if (rc) return rc;
  if (node_size > c->gpu.device_count)
    CPLAB_FAIL(d, CPLAB_ENODEV, "%d ranks on this node but %d GPUs visible: run one rank per GPU", node_size,
               c->gpu.device_count);
  if ((rc = cplab_cli_pick_gpu(node_rank, c->gpu.device_count, &dev, d))) return rc;
  CK_CUDA(cudaSetDevice(dev));
  CK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  c->l2_bytes = (size_t)l2;
  return 0;
}

int mpibench_open(mpibench_ctx *c) {
  cplab_diag d = {0};
  int worst = 0, rc = bind_device(c, &d);
  /* All ranks learn whether every one got its GPU, so that none waits in
   * NCCL's set-up for a rank that has given up. */
  CK_MPI(MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (rc) cplab_diag_report(stderr, mpibench_prog, &d);
  if (worst) return CPLAB_EXIT_ERROR;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (c->rank == 0) CK_NCCL(ncclGetUniqueId(&id));
  CK_MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  CK_NCCL(ncclCommInitRank(&c->comm, c->world, id, c->rank));
  CK_NCCL(ncclGetVersion(&c->nccl_version));
  /* A blocking stream: it waits for the legacy-stream copies of
   * cplab_dev_upload and they for it, so set-up needs no extra events. */
  CK_CUDA(cudaStreamCreate(&c->stream));
  return 0;
}

int mpibench_finish(mpibench_ctx *c, int status) {
  if (c->comm) CK_NCCL(ncclCommDestroy(c->comm));
  if (c->stream) CK_CUDA(cudaStreamDestroy(c->stream));
  CK_MPI(MPI_Finalize());
  return status;
}

int mpibench_after_options(mpibench_ctx *c, int parse_rc, int help, const cplab_diag *d, void (*usage)(FILE *)) {
  if (parse_rc || help) {
    if (c->rank == 0 && parse_rc) cplab_cli_usage_error(mpibench_prog, d);
    if (c->rank == 0 && !parse_rc) usage(stdout);
    return mpibench_finish(c, parse_rc ? CPLAB_EXIT_ERROR : CPLAB_EXIT_OK);
  }
  if (mpibench_open(c)) return mpibench_finish(c, CPLAB_EXIT_ERROR);
  return -1;
}

void mpibench_time_ops(const mpibench_ctx *c, int n, int reps, int warmup, void (*run)(void *arg, int op), void *arg,
                       cplab_spread *st) {
  double *t = mpibench_host_alloc((size_t)n * (size_t)reps * sizeof *t);
  cudaEvent_t start, stop;
  CK_CUDA(cudaEventCreate(&start));
  CK_CUDA(cudaEventCreate(&stop));
  for (int i = -warmup; i < reps; i++)
    for (int op = 0; op < n; op++) {
      float ms = 0;
      CK_CUDA(cudaStreamSynchronize(c->stream));
      CK_MPI(MPI_Barrier(MPI_COMM_WORLD));
      CK_CUDA(cudaEventRecord(start, c->stream));
      run(arg, op);
      CK_CUDA(cudaEventRecord(stop, c->stream));
      CK_CUDA(cudaEventSynchronize(stop));
      CK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      if (i >= 0) t[(size_t)op * (size_t)reps + (size_t)i] = 1e-3 * ms;
    }
  CK_MPI(MPI_Allreduce(MPI_IN_PLACE, t, n * reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  for (int op = 0; op < n; op++) st[op] = cplab_stats_spread(t + (size_t)op * (size_t)reps, (size_t)reps);
  CK_CUDA(cudaEventDestroy(start));
  CK_CUDA(cudaEventDestroy(stop));
  free(t);
}

int mpibench_sum_over_ranks(int v) {
  int total = 0;
  CK_MPI(MPI_Allreduce(&v, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  return total;
}

/* ---- results ----------------------------------------------------------------- */

json_t *mpibench_doc_header(const mpibench_ctx *c, const char *bench, int reps, int warmup, int argc, char **argv) {
  const cplab_gpu_info *g = &c->gpu;
  int nccl = c->nccl_version;
  char ver[3][40], date[32];
  cplab_bench_date(date, sizeof date);
  snprintf(ver[0], sizeof ver[0], "%d.%d.%d", nccl / 10000, nccl % 10000 / 100, nccl % 100);
  snprintf(ver[1], sizeof ver[1], "%d.%d", g->runtime_version / 1000, g->runtime_version % 1000 / 10);
  snprintf(ver[2], sizeof ver[2], "%d.%d", g->driver_version / 1000, g->driver_version % 1000 / 10);
  char *cmd = cplab_bench_command(argc, argv);
  if (!cmd) mpibench_die_call(CPLAB_ENOMEM, "malloc", __FILE__, __LINE__, "out of host memory");
  json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:o, s:i, s:s, s:s, s:s, s:s?, s:i, s:i}", "bench", bench, "date",
                          date, "commit", CPLAB_GIT_COMMIT, "command", cmd, "card",
                          cplab_bench_card_json(g, c->l2_bytes), "ranks", c->world, "nccl_version", ver[0],
                          "cuda_runtime_version", ver[1], "cuda_driver_version", ver[2], "nccl_nvls_enable",
                          getenv("NCCL_NVLS_ENABLE"), "reps", reps, "warmup", warmup);
  free(cmd);
  if (!doc) mpibench_die_call(CPLAB_ENOMEM, "json_pack", __FILE__, __LINE__, "cannot build the JSON document");
  return doc;
}

int mpibench_close_doc(const mpibench_ctx *c, json_t *doc, json_t *results, const char *path, int status) {
  cplab_diag d = {0};
  if (c->rank == 0 && !status) {
    json_object_set(doc, "results", results);
    if (path && cplab_bench_write_json(path, doc, &d) != 0) {
      cplab_diag_report(stderr, mpibench_prog, &d);
      status = CPLAB_EXIT_ERROR;
    }
  }
  json_decref(results);
  json_decref(doc);
  return status;
}
