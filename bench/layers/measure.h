/* bench/layers/measure.h: cplab-bench's measuring mode (measure.c, built
 * with CUDA): the matrix walked configuration by configuration through the
 * executor's batched engine (exec/engine.h, the cplab_exec library), each
 * configuration's repetitions turned into TTFT / TPOT samples and phase
 * medians (steptime.h's arithmetic) and added to the results (report.h).
 * bench/ itself allocates no device memory and launches nothing.
 *
 * A sample is one repetition of the configuration's steps: a step's time is
 * the sum over layers and segments of the slowest rank's segment time, plus
 * the step's output gather (steptime.h), on one device; under NCCL, where
 * the collectives make the ranks wait for each other, it is the slowest
 * rank's time from its first launch to its step's end, every rank started
 * together. TTFT samples are prefill steps; a TPOT sample is the mean step
 * time of the workload's M decode steps. */
#ifndef CPLAB_BENCH_MEASURE_H
#define CPLAB_BENCH_MEASURE_H

#include <stdio.h>

#include "cplab/error.h"
#include "dryrun.h"
#include "engine.h"
#include "report.h"

/* Measure every configuration of matrix m (parallel sizes, then workloads,
 * then graph modes; a graph mode whose batches run as an earlier one's is
 * measured once) with the engine options o (o->close: NULL for --check's
 * bounds, checkbound.h) into r (initialised by the caller; meta filled here
 * from the device, the date, the build's commit and `command`; finished,
 * i.e. with statistics). A progress line per configuration goes to progress
 * (NULL: none; under NCCL only rank 0 should pass one). Under NCCL every
 * set of parallel sizes must have as many ranks as there are processes
 * (CPLAB_EUSAGE before anything is measured otherwise). */
int cplab_bench_measure_matrix(const cplab_bench_matrix *m, const exec_engine_opts *o, const cplab_bench_backend *be,
                               const char *command, cplab_bench_results *r, FILE *progress, cplab_diag *d);

#endif
