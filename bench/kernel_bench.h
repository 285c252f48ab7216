/* bench/kernel_bench.h: cplab-kernel-bench, one driver over a small case
 * table per kernel (the nccl-tests shape: a common CLI, timing, statistics
 * and output in bench/kernel_bench.c, one file per kernel family filling a
 * cplab_kb_kernel).
 *
 * Adding a kernel: write its cplab_kb_kernel (cases, shape fields, set-up,
 * check, run, work; bench/kernel_attention.c is the example), declare it
 * below, list it in kernel_bench.c's `kernels` table and add its file to
 * the program's sources in bench/local.mk. Nothing else changes: the CLI,
 * the table, kernels.json, the peer file and the run script take the kernel
 * and its cases from there. */
#ifndef CPLAB_BENCH_KERNEL_BENCH_H
#define CPLAB_BENCH_KERNEL_BENCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"

/* One shape of one kernel. Names are unique over every kernel: the --case
 * names and the key of the peer file. */
typedef struct cplab_kb_case {
  const char *name;
  int in_default; /* run when no --case selects (and --all is not given) */
  const void *shape; /* the kernel's own shape struct */
  const char *note;  /* where the shape comes from (one line) */
} cplab_kb_case;

/* What the driver gives a kernel's set-up. */
typedef struct cplab_kb_env {
  size_t l2_bytes;    /* inputs rotate over >= 4x this (0: 2 sets) */
  int max_sets;       /* at most this many input sets */
  size_t mem_budget;  /* and at most this many bytes of them */
  int check_rows;     /* rows the check compares with the reference */
  uint64_t seed;
} cplab_kb_env;

/* Work of one run, for the rates. */
typedef struct cplab_kb_work {
  double flop;        /* the kernel's conventional count (FlashMLA's: every index slot) */
  double flop_valid;  /* counting only valid (query, key) pairs */
  double bytes;       /* bytes the kernel must move (the kernel's file says which) */
  int sets;           /* input sets the runs rotate over */
  double set_bytes;   /* bytes one run touches (sets · set_bytes >= 4 · L2 unless capped) */
  char launcher[96];  /* what a run launches (kernels.json's "launcher") */
} cplab_kb_work;

/* The check's result (before timing). */
typedef struct cplab_kb_check {
  int ok;
  int rows;            /* rows compared */
  double max_rel_l2;   /* worst relative L2 error of an output row (per head) */
  double max_lse_abs;  /* worst |lse - reference| */
  double tol_rel_l2, tol_lse_abs, tol_lse_rel; /* the kernel's tolerances: out, and lse within abs + rel |lse| */
  char detail[256];    /* what failed, for the report */
} cplab_kb_check;

typedef struct cplab_kb_kernel {
  const char *name;    /* kernels.json's "kernel" */
  const char *summary; /* one line for --list */
  const cplab_kb_case *cases;
  int ncases;
  /* The case's shape as kernels.json fields (an object; the peer file's
   * "shape" must equal it). */
  json_t *(*shape_json)(const void *shape);
  /* The shape for the table (a short line). */
  void (*shape_text)(const void *shape, char *buf, size_t cap);
  /* Allocate and generate the case's input sets on stream; *inst is freed
   * by teardown, also after a failure. */
  int (*setup)(const cplab_kb_case *c, const cplab_kb_env *env, void *stream, void **inst, cplab_diag *d);
  /* Poison the outputs, run once, compare with the reference: 0 with *res
   * filled (res->ok 0 when it disagreed), negative on an error. */
  int (*check)(void *inst, void *stream, cplab_kb_check *res, cplab_diag *d);
  /* Enqueue one run on the next input set (no synchronisation). */
  int (*run)(void *inst, void *stream, cplab_diag *d);
  void (*work)(const void *inst, cplab_kb_work *w);
  void (*teardown)(void *inst);
} cplab_kb_kernel;

/* The kernels (bench/kernel_attention.c). */
extern const cplab_kb_kernel cplab_kb_sparse_mla_prefill;
extern const cplab_kb_kernel cplab_kb_sparse_mla_decode_fp8;

#endif
