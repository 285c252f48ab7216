/* bench/mpibench.h: what the MPI + NCCL benchmark programs share
 * (cplab-gather-bench, cplab-moe-bench): one MPI rank per GPU, one NCCL
 * communicator over all ranks, checked calls that end the whole job on
 * failure, option parsing, the statistics of a set of repetitions and the
 * JSON document's context (card, versions, date, commit, command). The
 * output itself (date, command line, card, a spread of times, the JSON file)
 * is bench/bench_out.c's, shared with cplab-kernel-bench.
 *
 * Every function either succeeds or ends the job with status 2
 * (mpibench_die): a rank that gives up alone would leave the others waiting
 * in their next collective, so failures call MPI_Abort. Each program defines
 * `mpibench_prog`, the name its messages start with. */
#ifndef CPLAB_BENCH_MPIBENCH_H
#define CPLAB_BENCH_MPIBENCH_H

#include <jansson.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>
/* nccl.h declares `f()` functions, which -Wstrict-prototypes flags. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "bench_out.h"
#include "cplab/error.h"
#include "cplab/stats.h"
#include "cplab_kernels.h"

/* The program's name, for messages: defined once by each program. */
extern const char mpibench_prog[];

/* This rank's place in the job. */
typedef struct mpibench_ctx {
  int rank, world;
  ncclComm_t comm;
  cudaStream_t stream;
  size_t l2_bytes;
  int nccl_version; /* ncclGetVersion: major·10000 + minor·100 + patch */
  cplab_gpu_info gpu;
} mpibench_ctx;


/* ---- checked calls ------------------------------------------------------ */

_Noreturn void mpibench_die(const cplab_diag *d);
_Noreturn void mpibench_die_call(int code, const char *call, const char *file, int line, const char *why);
void mpibench_ck_mpi(int rc, const char *call, const char *file, int line);
void mpibench_ck_cuda(cudaError_t e, const char *call, const char *file, int line);
void mpibench_ck_nccl(ncclResult_t r, const char *call, const char *file, int line);
static inline void mpibench_ck_lab(int rc, const cplab_diag *d) {
  if (rc) mpibench_die(d);
}
#define CK_CUDA(call) mpibench_ck_cuda((call), #call, __FILE__, __LINE__)
#define CK_NCCL(call) mpibench_ck_nccl((call), #call, __FILE__, __LINE__)
#define CK_MPI(call) mpibench_ck_mpi((call), #call, __FILE__, __LINE__)

/* malloc, or the end of the job. */
void *mpibench_host_alloc(size_t bytes);

/* ---- options ------------------------------------------------------------- */

/* An integer option in [lo, hi]: 0 or CPLAB_EUSAGE naming it. */
int mpibench_parse_count(const char *arg, const char *name, int lo, int hi, int *out, cplab_diag *d);
/* A comma-separated list of integers in [1, hi], at most max of them, into
 * v (its count in *n): 0 or CPLAB_EUSAGE naming the option and the value. */
int mpibench_parse_list(const char *arg, const char *name, int64_t hi, int max, int64_t *v, int *n, cplab_diag *d);

/* ---- the job --------------------------------------------------------------- */

/* MPI_Init, with MPI errors returned to CK_MPI; fills rank and world. */
void mpibench_start(int *argc, char ***argv, mpibench_ctx *c);
/* Bind every rank to its GPU (local rank mod device count) and, once all
 * have one, make the NCCL communicator and the stream. Collective. Returns 0,
 * or CPLAB_EXIT_ERROR on every rank when any rank has no GPU or there are
 * more ranks on a node than GPUs (each rank has said why). */
int mpibench_open(mpibench_ctx *c);
/* Leave in order and return status (collective: every rank calls it). */
int mpibench_finish(mpibench_ctx *c, int status);
/* What follows option parsing (parse_rc: its result, d its message): a
 * usage error said once (rank 0), --help printed once (usage), or the job
 * opened (mpibench_open). Returns -1 when the program goes on, else the
 * exit status it must return (the job already finished). */
int mpibench_after_options(mpibench_ctx *c, int parse_rc, int help, const cplab_diag *d, void (*usage)(FILE *));

/* The timing of both programs (perf-anchors.md §5): n operations run in
 * turn inside every repetition, so that drift (clocks, heat) hits them alike;
 * warmup untimed repetitions, then reps timed ones. Each operation alone: the
 * stream drained, all ranks at a barrier, then CUDA events on the stream
 * around run(arg, op). st[op] = the spread of op's repetitions (seconds),
 * each the slowest rank's time. Collective. */
void mpibench_time_ops(const mpibench_ctx *c, int n, int reps, int warmup, void (*run)(void *arg, int op), void *arg,
                       cplab_spread *st);

/* The sum over ranks of v (collective): a check's failures, job-wide. */
int mpibench_sum_over_ranks(int v);

/* ---- results ----------------------------------------------------------------- */
/* The JSON document's context: bench, date (UTC), commit, command line,
 * card (cplab_bench_card_json), ranks, NCCL / CUDA versions,
 * NCCL_NVLS_ENABLE, reps and warmup. Written by cplab_bench_write_json. */
json_t *mpibench_doc_header(const mpibench_ctx *c, const char *bench, int reps, int warmup, int argc, char **argv);
/* The end of a run: on rank 0, when status is 0, doc gets "results" and is
 * written to path (when not NULL); doc and results are freed on every rank.
 * Returns status, or CPLAB_EXIT_ERROR when the file could not be written
 * (said on stderr). */
int mpibench_close_doc(const mpibench_ctx *c, json_t *doc, json_t *results, const char *path, int status);

#endif /* CPLAB_BENCH_MPIBENCH_H */
