/* bench/kb_job.h: cplab-kernel-bench's job layer, as nccl-tests' common
 * driver has one: the processes that run the selected cases, and what they
 * do together.
 *
 * Two forms, one interface:
 *   - the ranked form (CPLAB_KB_RANKED: a build with MPI and NCCL, the
 *     HAVE_NCCL conditional of bench/local.mk): MPI started at once, every
 *     rank bound to its GPU (the local rank mod the GPUs visible: a node with
 *     more ranks than GPUs is refused, as NCCL refuses two ranks on one GPU),
 *     one NCCL communicator over all ranks, made only when a selected case
 *     needs it (cplab_kb_job_comm);
 *   - the single-process form (the CPU emulation, CPLAB_BENCH_EMU, and builds
 *     without NCCL): world 1, no MPI, no NCCL, the GPU the runtime gives.
 * Every rank runs every selected case; rank 0 alone prints and writes files.
 * A failure on any rank must end the whole job (cplab_kb_job_die: a rank that
 * gave up alone would leave the others waiting in their next collective).
 * The collectives here (sum, max, barrier, all-gather) die on an MPI error
 * rather than return it, for the same reason. */
#ifndef CPLAB_BENCH_KB_JOB_H
#define CPLAB_BENCH_KB_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"
#include "cplab_kernels.h"

#if defined(CPLAB_KB_RANKED) && CPLAB_KB_RANKED && defined(CPLAB_BENCH_EMU) && CPLAB_BENCH_EMU
#error "the emulated driver has no NCCL: CPLAB_KB_RANKED and CPLAB_BENCH_EMU exclude each other"
#endif

typedef struct cplab_kb_job {
  const char *prog;  /* messages start with it */
  int rank, world;   /* world 1 in the single-process form */
  int mpi;           /* 1: MPI was started (the ranked form) */
  void *comm;        /* the ncclComm_t, once cplab_kb_job_comm made it; else NULL */
  int nccl_version;  /* ncclGetVersion (major·10000 + minor·100 + patch), 0 before the communicator */
} cplab_kb_job;

/* Whether this build has the ranked form (and so the ranked kernels). */
int cplab_kb_job_ranked_build(void);

/* Start the job: MPI_Init in the ranked form (MPI errors returned, not
 * fatal, so that the checks here can say which call failed). Ends the
 * process with status 2 when MPI cannot start. */
void cplab_kb_job_start(int *argc, char ***argv, const char *prog, cplab_kb_job *j);
/* Bind this rank to its GPU, and fill *g and *l2 (the card and its L2).
 * Collective: returns 0 on every rank, or nonzero on every rank when any
 * rank failed (d: this rank's reason, or that another rank failed). */
int cplab_kb_job_bind(cplab_kb_job *j, cplab_gpu_info *g, size_t *l2, cplab_diag *d);
/* Make the NCCL communicator over all ranks (collective; once: later calls
 * return 0). CPLAB_EUNSUPPORTED in the single-process form. */
int cplab_kb_job_comm(cplab_kb_job *j, cplab_diag *d);
/* Leave in order (the communicator, then MPI) and return status. Collective. */
int cplab_kb_job_finish(cplab_kb_job *j, int status);
/* Report d as this rank's error and end the whole job with status 2
 * (MPI_Abort once MPI is up, else exit). */
_Noreturn void cplab_kb_job_die(const cplab_kb_job *j, const cplab_diag *d);

/* ---- collectives (identities in the single-process form) ---- */

/* The sum of v over the ranks: a check's failures, job-wide. */
int cplab_kb_job_sum(const cplab_kb_job *j, int v);
/* v[i] = the maximum of v[i] over the ranks: a repetition's time is the slowest rank's. */
void cplab_kb_job_max(const cplab_kb_job *j, double *v, size_t n);
/* All ranks meet. */
void cplab_kb_job_barrier(const cplab_kb_job *j);
/* all[r] = rank r's mine (all: world values). */
void cplab_kb_job_allgather_u64(const cplab_kb_job *j, uint64_t mine, uint64_t *all);

#endif /* CPLAB_BENCH_KB_JOB_H */
