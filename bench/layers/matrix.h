/* bench/layers/matrix.h: the configurations cplab-bench measures (parallel
 * sizes × workload × graph mode) and the scenario each one runs, built in
 * memory and checked by cplab_scenario_finish(), the scenario parser's own
 * rules, so a benchmark obeys every rule a scenario file does.
 *
 * The layout is a registered plan/layouts/ plugin by name ("vllm",
 * "block-aligned", the mutants), the same for every configuration of a
 * matrix; the parallel sizes vary over the matrix.
 * Parallel labels: the sizes above 1 in the order tp, pcp, dcp ("tp4",
 * "pcp4", "tp4dcp4", "pcp4dcp4", "tp2pcp2dcp4"); "tp1" is one rank. A label
 * without tp has tp 1; DCP shards inside the TP×PCP world (GPUs = tp·pcp),
 * so the change's "dcp4" column is tp4dcp4 here.
 * Workloads (the change's tables):
 *   prefill N, batch B: one step of B requests with N new tokens each
 *                       (N in / 1 out: the step's time is the TTFT);
 *   decode L, batch B, M out: M steps of B one-token decode rows at
 *                       contexts L .. L+M-1 (1 in / M out: TPOT is the mean
 *                       step time);
 *   mixed N+B@L: one step holding a prefill of N tokens and B decode rows at
 *                       context L (the step time).
 * Graph modes (cplab_graph_mode, by cplab_graph_mode_label's words): eager
 * (NONE: no graphs), piecewise (graphs around attention), full_decode_only
 * (full graphs for uniform decode batches, eager otherwise) and full (vLLM's
 * FULL_AND_PIECEWISE: full graphs for uniform decode batches, piecewise
 * otherwise; PCP rejects FULL over mixed batches). */
#ifndef CPLAB_BENCH_MATRIX_H
#define CPLAB_BENCH_MATRIX_H

#include <stdint.h>

#include "cplab/error.h"
#include "cplab/heads.h"
#include "cplab/parallel.h"
#include "cplab/scenario.h"

#define CPLAB_BENCH_MAX_ITEMS 32
/* Requests summed over a configuration's steps (steps x requests per step). */
#define CPLAB_BENCH_MAX_REQUEST_ENTRIES (1 << 20)

/* One set of parallel sizes (cplab-bench and cplab-model --parallel). */
typedef struct cplab_bench_parallel {
  int tp, pcp, dcp;
  char label[32];
} cplab_bench_parallel;

/* Where a configuration's ranks run: all on one GPU (nccl 0), or one MPI
 * rank per GPU, this process being rank `rank` of `size` (nccl 1; mpi 0
 * only for size 1, without mpirun). */
typedef struct cplab_bench_backend {
  int nccl, rank, size, mpi;
} cplab_bench_backend;

typedef enum cplab_bench_kind { CPLAB_BENCH_PREFILL = 0, CPLAB_BENCH_DECODE, CPLAB_BENCH_MIXED } cplab_bench_kind;

typedef struct cplab_bench_workload {
  cplab_bench_kind kind;
  int64_t tokens;     /* prefill / mixed: new tokens of the prefill; decode: context length */
  int64_t batch;      /* prefill: requests; decode and mixed: decode rows */
  int64_t context;    /* mixed: context of the decode rows */
  int64_t out_tokens; /* decode: steps M; otherwise 1 */
} cplab_bench_workload;

typedef struct cplab_bench_matrix {
  char preset[32];
  uint64_t seed;
  int interleave, block_size;
  int num_parallel, num_workloads, num_graphs;
  cplab_bench_parallel parallel[CPLAB_BENCH_MAX_ITEMS];
  cplab_bench_workload workloads[CPLAB_BENCH_MAX_ITEMS];
  cplab_graph_mode graphs[CPLAB_GRAPH_LABELED];
  char model_set[512]; /* "FIELD=VALUE,..." over the preset (--model-set), "" for none */
  char layout[64];     /* the layout by name (--layout); "" is vllm */
  int head_pad;        /* --head-pad (cplab/heads.h): CPLAB_HEAD_PAD_AUTO (the device's; sm90's without one), _NONE or N */
} cplab_bench_matrix;

const char *cplab_bench_kind_name(cplab_bench_kind k);   /* "prefill", "decode", "mixed" */

/* One parallel label ("pcp4dcp4") into out; CPLAB_EUSAGE naming the problem. */
int cplab_bench_parallel_parse(const char *text, cplab_bench_parallel *out, cplab_diag *d);
/* Comma-separated lists into the matrix (each replaces the matrix's list):
 *   parallel sizes "tp4,pcp4"; graphs "eager,full";
 *   prefill "4096,32768" with batch B; decode "32768" with batch B and M out;
 *   mixed "8192+16@32768" (prefill tokens + decode rows @ their context). */
int cplab_bench_parse_parallel(cplab_bench_matrix *m, const char *text, cplab_diag *d);
int cplab_bench_parse_graphs(cplab_bench_matrix *m, const char *text, cplab_diag *d);
/* Model fields over the preset, "hidden_size=1024,n_routed_experts=16": the
 * syntax is checked here, names when the scenarios are built, ranges by the
 * scenario rules (cplab_scenario_finish). */
int cplab_bench_parse_model_set(cplab_bench_matrix *m, const char *text, cplab_diag *d);
int cplab_bench_add_workloads(cplab_bench_matrix *m, cplab_bench_kind kind, const char *text, int64_t batch,
                              int64_t out_tokens, cplab_diag *d);

/* The scenario of one configuration (free with cplab_scenario_free):
 * model preset, the parallel sizes, the matrix's layout (vllm for ""), the graph mode, the
 * workload's steps and a max_model_len that holds them. */
int cplab_bench_scenario(const cplab_bench_matrix *m, const cplab_bench_parallel *l, const cplab_bench_workload *w,
                         cplab_graph_mode g, cplab_scenario **out, cplab_diag *d);

/* "prefill 32768 in / 1 out", "decode 1 in / 16 out @ 32768, batch 4",
 * "mixed 8192 + 16 decode @ 32768". */
void cplab_bench_workload_label(const cplab_bench_workload *w, char *buf, size_t len);

#endif
