/* bench/kb_job.c: cplab-kernel-bench's job layer (contract in kb_job.h):
 * the ranked form over MPI and NCCL (once bench/mpibench.c, the scaffolding
 * of cplab-gather-bench and cplab-moe-bench), and the single-process form. */
#include "kb_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceilings.h"
#include "cplab/cli.h"

#if defined(CPLAB_KB_RANKED) && CPLAB_KB_RANKED
#include <cuda_runtime_api.h>
#include <mpi.h>
/* nccl.h declares `f()` functions, which -Wstrict-prototypes flags. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#define RANKED 1
#else
#define RANKED 0
#endif

int cplab_kb_job_ranked_build(void) { return RANKED; }

_Noreturn void cplab_kb_job_die(const cplab_kb_job *j, const cplab_diag *d) {
  char who[128];
  snprintf(who, sizeof who, "%s", j->prog);
#if RANKED
  int up = 0, down = 0;
  MPI_Initialized(&up);
  MPI_Finalized(&down);
  if (j->world > 1) snprintf(who, sizeof who, "%s (rank %d of %d)", j->prog, j->rank, j->world);
  cplab_diag_report(stderr, who, d);
  fflush(stderr);
  if (up && !down) MPI_Abort(MPI_COMM_WORLD, CPLAB_EXIT_ERROR);
#else
  cplab_diag_report(stderr, who, d);
#endif
  exit(CPLAB_EXIT_ERROR);
}

#if RANKED

/* A failed MPI call ends the job: the other ranks may already wait in the next collective. */
static void ck_mpi(const cplab_kb_job *j, int rc, const char *call) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = "unknown MPI error";
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  cplab_diag d = {0};
  cplab_diag_set(&d, CPLAB_EMPI, "%s: %s", call, msg);
  cplab_kb_job_die(j, &d);
}
#define CK_MPI(j, call) ck_mpi((j), (call), #call)

void cplab_kb_job_start(int *argc, char ***argv, const char *prog, cplab_kb_job *j) {
  *j = (cplab_kb_job){.prog = prog, .world = 1, .mpi = 1};
  CK_MPI(j, MPI_Init(argc, argv));
  CK_MPI(j, MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)); /* failures reach CK_MPI */
  CK_MPI(j, MPI_Comm_rank(MPI_COMM_WORLD, &j->rank));
  CK_MPI(j, MPI_Comm_size(MPI_COMM_WORLD, &j->world));
}

/* This rank's GPU: the local rank mod the devices visible. The node split is
 * collective, so it comes before anything that can fail on one rank alone. */
static int bind_device(cplab_kb_job *j, cplab_gpu_info *g, size_t *l2, cplab_diag *d) {
  MPI_Comm node;
  int node_rank, node_size, dev = 0, v = 0;
  CK_MPI(j, MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  CK_MPI(j, MPI_Comm_rank(node, &node_rank));
  CK_MPI(j, MPI_Comm_size(node, &node_size));
  CK_MPI(j, MPI_Comm_free(&node));
  int rc = cplab_gpu_query(g, d);
  if (rc == CPLAB_ENODEV) cplab_diag_prefix(d, "this benchmark needs a GPU (one per MPI rank): ");
  if (rc) return rc;
  if (node_size > g->device_count)
    CPLAB_FAIL(d, CPLAB_ENODEV, "%d ranks on this node but %d GPUs visible: run one rank per GPU", node_size,
               g->device_count);
  if ((rc = cplab_cli_pick_gpu(node_rank, g->device_count, &dev, d))) return rc;
  cudaError_t e = cudaSetDevice(dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, dev);
  if (e != cudaSuccess) CPLAB_FAIL(d, CPLAB_ECUDA, "binding GPU %d: %s", dev, cudaGetErrorString(e));
  *l2 = (size_t)v;
  return 0;
}

int cplab_kb_job_bind(cplab_kb_job *j, cplab_gpu_info *g, size_t *l2, cplab_diag *d) {
  int rc = bind_device(j, g, l2, d), worst = 0;
  /* Every rank learns whether all got their GPU, so that none waits in
   * NCCL's set-up for a rank that has given up. */
  CK_MPI(j, MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (!rc && worst) rc = cplab_diag_set(d, CPLAB_ENODEV, "another rank could not bind its GPU (it says why)");
  return rc;
}

int cplab_kb_job_comm(cplab_kb_job *j, cplab_diag *d) {
  if (j->comm) return 0;
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclSuccess;
  memset(&id, 0, sizeof id);
  if (j->rank == 0) r = ncclGetUniqueId(&id);
  int bad = cplab_kb_job_sum(j, r != ncclSuccess); /* no rank goes on to the init alone */
  if (r != ncclSuccess) CPLAB_FAIL(d, CPLAB_ENCCL, "ncclGetUniqueId: %s", ncclGetErrorString(r));
  if (bad) CPLAB_FAIL(d, CPLAB_ENCCL, "rank 0 could not make the NCCL id (it says why)");
  CK_MPI(j, MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  if ((r = ncclCommInitRank(&comm, j->world, id, j->rank)) != ncclSuccess)
    CPLAB_FAIL(d, CPLAB_ENCCL, "ncclCommInitRank (%d ranks): %s", j->world, ncclGetErrorString(r));
  if ((r = ncclGetVersion(&j->nccl_version)) != ncclSuccess)
    CPLAB_FAIL(d, CPLAB_ENCCL, "ncclGetVersion: %s", ncclGetErrorString(r));
  j->comm = comm;
  return 0;
}

int cplab_kb_job_finish(cplab_kb_job *j, int status) {
  if (j->comm) {
    ncclResult_t r = ncclCommDestroy((ncclComm_t)j->comm);
    j->comm = NULL;
    if (r != ncclSuccess) {
      cplab_diag d = {0};
      cplab_diag_set(&d, CPLAB_ENCCL, "ncclCommDestroy: %s", ncclGetErrorString(r));
      cplab_kb_job_die(j, &d);
    }
  }
  CK_MPI(j, MPI_Finalize());
  return status;
}

int cplab_kb_job_sum(const cplab_kb_job *j, int v) {
  int total = 0;
  CK_MPI(j, MPI_Allreduce(&v, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  return total;
}

void cplab_kb_job_max(const cplab_kb_job *j, double *v, size_t n) {
  if (n > (size_t)1 << 30) {
    cplab_diag d = {0};
    cplab_diag_set(&d, CPLAB_EOVERFLOW, "cplab_kb_job_max: %zu values", n);
    cplab_kb_job_die(j, &d);
  }
  CK_MPI(j, MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
}

void cplab_kb_job_barrier(const cplab_kb_job *j) { CK_MPI(j, MPI_Barrier(MPI_COMM_WORLD)); }

void cplab_kb_job_allgather_u64(const cplab_kb_job *j, uint64_t mine, uint64_t *all) {
  CK_MPI(j, MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD));
}

#else /* the single-process form */

void cplab_kb_job_start(int *argc, char ***argv, const char *prog, cplab_kb_job *j) {
  (void)argc, (void)argv;
  *j = (cplab_kb_job){.prog = prog, .world = 1};
}

int cplab_kb_job_bind(cplab_kb_job *j, cplab_gpu_info *g, size_t *l2, cplab_diag *d) {
  (void)j;
  int rc = cplab_gpu_query(g, d);
  if (rc == CPLAB_ENODEV) cplab_diag_prefix(d, "this benchmark needs a GPU: ");
  return rc ? rc : cplab_bench_l2_bytes(l2, d);
}

int cplab_kb_job_comm(cplab_kb_job *j, cplab_diag *d) {
  (void)j;
  CPLAB_FAIL(d, CPLAB_EUNSUPPORTED, "this build has no NCCL and no MPI (ranked kernels need both)");
}

int cplab_kb_job_finish(cplab_kb_job *j, int status) {
  (void)j;
  return status;
}

int cplab_kb_job_sum(const cplab_kb_job *j, int v) {
  (void)j;
  return v;
}

void cplab_kb_job_max(const cplab_kb_job *j, double *v, size_t n) { (void)j, (void)v, (void)n; }

void cplab_kb_job_barrier(const cplab_kb_job *j) { (void)j; }

void cplab_kb_job_allgather_u64(const cplab_kb_job *j, uint64_t mine, uint64_t *all) {
  (void)j;
  all[0] = mine;
}

#endif
