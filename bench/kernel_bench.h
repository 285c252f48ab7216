/* bench/kernel_bench.h: cplab-kernel-bench, one driver over a small case
 * table per kernel (the nccl-tests shape: a common CLI, timing, statistics
 * and output in bench/kernel_bench.c, one file per kernel family filling a
 * cplab_kb_kernel).
 *
 * Adding a kernel: write its cplab_kb_kernel (cases, shape fields, set-up,
 * check, run, work; bench/kernel_attention.c is the example), declare it
 * below, list it in kernel_bench.c's `kernels` table and add its file to
 * the program's sources in bench/local.mk (and give bench/kernel_peer.py a
 * peer for it: without one the peer file says so for its cases). Nothing
 * else changes: the CLI, the table, kernels.json, the peer file and the run
 * script take the kernel and its cases from there. A kernel whose check is
 * not the attention kernels' (out and lse against sim_attention) sets
 * check_kind, and one whose rate is not FlashMLA's FLOP count sets rate:
 * kernels.json then carries only the fields that apply.
 *
 * Ranked kernels (ranked = 1: bench/kernel_gather_nccl.c, the example, and
 * bench/kernel_moe_paths.c) are a job's: every MPI rank runs the case on its
 * GPU, over the job's NCCL communicator (env->job, bench/kb_job.h). They are
 * built only with MPI and NCCL (CPLAB_KB_RANKED) and timed by the collective
 * method (perf-anchors.md §5): before each operation the stream is drained
 * and all ranks meet at a barrier, events go around the one operation, and
 * a repetition's time is the slowest rank's. A ranked kernel has one or more
 * operations (run_op) that alternate inside every repetition, in each of its
 * modes (e.g. eager, then graph replays), so that drift hits them alike;
 * each (mode, operation) is a table row and a kernels.json entry, with its
 * ratio to the mode's first operation. */
#ifndef CPLAB_BENCH_KERNEL_BENCH_H
#define CPLAB_BENCH_KERNEL_BENCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"
#include "kb_job.h"

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
  const cplab_kb_job *job; /* the ranks, and (ranked kernels) the NCCL communicator */
} cplab_kb_env;

/* Work of one run, for the rates. */
typedef struct cplab_kb_work {
  double flop;        /* the kernel's conventional count (FlashMLA's: every index slot) */
  double flop_valid;  /* counting only valid (query, key) pairs */
  double bytes;       /* bytes the kernel must move (the kernel's file says which) */
  int sets;           /* input sets the runs rotate over */
  double set_bytes;   /* bytes one run touches (sets · set_bytes >= 4 · L2 unless capped) */
  char launcher[128]; /* what a run launches (kernels.json's "launcher") */
} cplab_kb_work;

/* What a kernel's check measures (kernels.json's "check" fields, the
 * table's two error columns). */
typedef enum cplab_kb_check_kind {
  CPLAB_KB_CHECK_ATTENTION = 0, /* out's relative L2 error and lse's error, within tolerances */
  CPLAB_KB_CHECK_TOLERANCE,     /* one relative error within a tolerance, plus entries that must be exact */
  CPLAB_KB_CHECK_EXACT          /* entries equal to the reference, bit for bit */
} cplab_kb_check_kind;

/* Which rates a kernel reports, against which ceiling. */
typedef enum cplab_kb_rate {
  CPLAB_KB_RATE_ATTENTION = 0, /* tflops and tflops_valid against the bf16 GEMM, gbps against the copy */
  CPLAB_KB_RATE_FP8_FLOPS,     /* tflops against the fp8 GEMM */
  CPLAB_KB_RATE_BYTES,         /* gbps against the copy */
  CPLAB_KB_RATE_BF16_FLOPS     /* tflops against the bf16 GEMM (and no valid-entry count) */
} cplab_kb_rate;

/* The check's result (before timing). */
typedef struct cplab_kb_check {
  int ok;
  int rows;            /* rows compared */
  /* CPLAB_KB_CHECK_ATTENTION */
  double max_rel_l2;   /* worst relative L2 error of an output row (per head) */
  double max_lse_abs;  /* worst |lse - reference| */
  double tol_rel_l2, tol_lse_abs, tol_lse_rel; /* the kernel's tolerances: out, and lse within abs + rel |lse| */
  /* CPLAB_KB_CHECK_TOLERANCE and _EXACT */
  double max_rel_err, tol_rel_err; /* TOLERANCE: the worst error (its measure in reference) and its bound */
  int64_t compared;    /* output entries compared */
  int64_t mismatches;  /* of them, those that must be exact and are not (0 for ok) */
  char reference[160]; /* what the output was compared with, and how */
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
  cplab_kb_check_kind check_kind; /* 0: the attention kernels' */
  cplab_kb_rate rate;             /* 0: the attention kernels' */
  const char *work_note;          /* how flop and bytes are counted (kernels.json's conventions) */
  const char *family;             /* a name --kernel also takes, for every kernel of the family (NULL: none) */
  int no_copy_same_size;          /* 1: no same-size copy beside a bytes-rated case (the copy ceiling is one) */
  /* Ranked kernels only (run is NULL for them; rate, work's flop and bytes unused). */
  int ranked;                       /* 1: needs the job's communicator, timed by the collective method */
  int nops;                         /* operations per mode, alternating inside each repetition */
  const char *const *op_names;      /* kernels.json's "op" */
  int nmodes;                       /* 0 or 1: one mode, unnamed */
  const char *const *mode_names;    /* kernels.json's "mode" (nmodes > 1) */
  /* After a passed check, before timing (NULL: nothing): e.g. capture graphs. Collective. */
  int (*prepare)(void *inst, void *stream, cplab_diag *d);
  /* Enqueue operation op of mode on stream (no synchronisation). Collective. */
  int (*run_op)(void *inst, int mode, int op, void *stream, cplab_diag *d);
  /* The operation's measured quantities at its median time (seconds) into
   * its kernels.json entry, and up to three table columns (names: cols). */
  void (*op_fields)(const void *inst, int op, double median_s, int world, json_t *e, char col[3][16]);
  const char *cols[3];              /* the extra columns' names (NULL: none) */
} cplab_kb_kernel;

/* The kernels: bench/kernel_attention.c, */
extern const cplab_kb_kernel cplab_kb_sparse_mla_prefill;
extern const cplab_kb_kernel cplab_kb_sparse_mla_decode_fp8;
/* bench/kernel_indexer.c, */
extern const cplab_kb_kernel cplab_kb_indexer_logits_prefill;
/* bench/kernel_indexer_decode.c, */
extern const cplab_kb_kernel cplab_kb_indexer_logits_decode;
extern const cplab_kb_kernel cplab_kb_indexer_topk_decode;
/* bench/kernel_topk.c, */
extern const cplab_kb_kernel cplab_kb_topk_prefill;
extern const cplab_kb_kernel cplab_kb_topk_decode;
extern const cplab_kb_kernel cplab_kb_topk_decode_convert;
extern const cplab_kb_kernel cplab_kb_topk_merge;
extern const cplab_kb_kernel cplab_kb_topk_merge_convert;
/* bench/kernel_convert.c, */
extern const cplab_kb_kernel cplab_kb_convert;
extern const cplab_kb_kernel cplab_kb_gather_upconvert;
extern const cplab_kb_kernel cplab_kb_gather_idx;
extern const cplab_kb_kernel cplab_kb_restore;
/* bench/kernel_combine.c, */
extern const cplab_kb_kernel cplab_kb_lse_combine;
/* bench/kernel_ceilings.c: the card's ceilings (family "ceilings"). */
extern const cplab_kb_kernel cplab_kb_ceiling_copy;
extern const cplab_kb_kernel cplab_kb_ceiling_gemm_bf16;
extern const cplab_kb_kernel cplab_kb_ceiling_gemm_fp8;
#if defined(CPLAB_KB_RANKED) && CPLAB_KB_RANKED
/* Ranked (MPI and NCCL builds only): bench/kernel_gather_nccl.c, */
extern const cplab_kb_kernel cplab_kb_gather_nccl;
/* bench/kernel_moe_paths.c. */
extern const cplab_kb_kernel cplab_kb_moe_paths;
#endif
/* For the kernels' checks: fn(item) for each of n items, size bytes apart,
 * each on a thread of its own (an item whose thread cannot be started runs
 * here, in turn); returns when every one has run. A checked row's double
 * reference takes about a second on the GPU node while the GPU idles. */
void cplab_kb_each_on_a_thread(void *(*fn)(void *), void *items, size_t size, int n);

/* The ranked kernels' names, known to every build, so that one without them
 * can refuse them by name. */
#define CPLAB_KB_RANKED_NAMES "gather_nccl, moe_paths"

#endif
