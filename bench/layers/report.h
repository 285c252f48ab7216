/* bench/layers/report.h: the results model of cplab-bench and its report
 * writers (issue: layout benchmarks).
 *
 * cplab-bench measures TTFT (prefill N in / 1 out) and TPOT (decode 1 in /
 * M out) of one layout (a plan/layouts/ plugin, by name) per set of parallel
 * sizes (TP, PCP, DCP: "parallel") and CUDA-graph mode, each
 * configuration repeated R times. This module keeps the repeated samples
 * (one cplab_bench_point per configuration), turns them into statistics
 * (include/cplab/stats.h: median, p99, mean, spread, bootstrap interval of the
 * median, and the ratio against pure TP on as many GPUs), and
 * writes them as Markdown, JSON, HDF5 (read back to re-render) and gnuplot
 * plots. The file formats are described in bench/layers/RESULTS.md.
 *
 * Use: fill meta, cplab_bench_results_add() every point, then
 * cplab_bench_results_finish(), then any writer. Writers refuse unfinished
 * results. Every file writer writes a temporary file beside its target and
 * renames it on success: a target is either untouched or complete.
 */
#ifndef CPLAB_BENCH_REPORT_H
#define CPLAB_BENCH_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cplab/error.h"
#include "cplab/stats.h"

/* The HDF5 format attribute and its value (MAJOR.MINOR.PATCH; readers accept
 * the same MAJOR). The JSON output carries the same name and version. */
#define CPLAB_BENCH_FORMAT_NAME "cplab_bench_results"
#define CPLAB_BENCH_FORMAT_VERSION "2.0.0"

/* Bounds that keep sizes sane and protect readers from damaged files. */
#define CPLAB_BENCH_MAX_SAMPLES ((size_t)1 << 24)       /* per point */
#define CPLAB_BENCH_MAX_POINTS ((size_t)1 << 12)        /* per results */
#define CPLAB_BENCH_MAX_TOTAL_SAMPLES ((size_t)1 << 27) /* per file read */

typedef enum cplab_bench_metric { CPLAB_BENCH_TTFT, CPLAB_BENCH_TPOT } cplab_bench_metric;
/* "TTFT", "TPOT"; "?" for anything else. */
const char *cplab_bench_metric_name(cplab_bench_metric m);

enum { CPLAB_BENCH_PHASES = 5 }; /* projections (GEMMs), indexer (+top-k), sparse MLA, MoE, communication */
/* "proj", "indexer", "attention", "moe", "comm"; "?" for anything else. */
const char *cplab_bench_phase_name(int phase);

typedef struct cplab_bench_meta {
  char card[160]; /* device name and details */
  char date[32];  /* ISO 8601 UTC */
  char commit[64];
  char command[2048]; /* the exact command line */
  char preset[32];    /* model preset, e.g. "glm-5" */
  char backend[16];   /* "single" or "nccl" */
  int gpus;
  char note[512]; /* e.g. "single-device backend: communication was device copies" */
  uint64_t seed;  /* bootstrap seed (at most 2^53 - 1, exact in JSON) */
  int resamples;  /* bootstrap resamples (>= 100) */
  int layers;     /* decoder layers timed per step */
  char layout[64]; /* the layout measured (plan/layouts/), e.g. "vllm"; "" for none recorded */
  /* Query heads the attention kernels ran (cplab-bench --head-pad): N > 0,
   * each rank's heads rounded up to a multiple of N (zero-filled padding
   * heads, outputs discarded); 0 the real heads; -1 not recorded (results
   * before format 2, which ran the real heads). */
  int head_pad;
} cplab_bench_meta;

typedef struct cplab_bench_point {
  char parallel[32]; /* label built from the sizes (cplab_bench_parallel_label); "" on input: filled by _add */
  int tp, pcp, dcp;
  int heads, heads_run; /* a rank's real query heads and those its attention kernels ran (padding, meta.head_pad);
                         * 0 and 0: not recorded */
  char workload[16];  /* "prefill", "decode" or "mixed" */
  int64_t tokens;     /* prefill: new tokens per request; decode: context length */
  int64_t batch;      /* requests in the batch */
  int64_t out_tokens; /* decode: generated tokens M (TPOT = step time); prefill: 1 */
  char graph[16];     /* "eager", "piecewise" or "full" */
  cplab_bench_metric metric;
  size_t n;
  double *samples_ms;                  /* owned by the results after _add (copied in) */
  double phase_ms[CPLAB_BENCH_PHASES]; /* median per phase, NAN when not measured */
  /* filled by cplab_bench_results_finish: */
  cplab_stats stats;
  long baseline;     /* index of the point it is compared with, -1 if none */
  cplab_ratio ratio; /* median(this) / median(baseline), bootstrap CI; NAN without baseline */
} cplab_bench_point;

typedef struct cplab_bench_results {
  cplab_bench_meta meta;
  size_t n, cap;
  cplab_bench_point *points;
  int finished; /* set by _finish (and _read_h5), cleared by _add */
} cplab_bench_results;

/* Zero r and set the defaults: resamples 2000, gpus 1, layers 1, layout
 * "vllm", head_pad 0. A zeroed
 * struct is valid too (but needs meta.resamples before _finish). */
void cplab_bench_results_init(cplab_bench_results *r);

/* The parallel label: the parts with size > 1 in the order tp, pcp, dcp
 * ("tp4", "pcp4", "tp4dcp4", "pcp4dcp4", "tp2pcp2"); all sizes 1 give
 * "tp1". CPLAB_EINVAL for a size < 1, CPLAB_ERANGE when len is too small. */
int cplab_bench_parallel_label(int tp, int pcp, int dcp, char *buf, size_t len);

/* GPUs a set of parallel sizes runs on: tp * pcp (DCP shards inside the TP x PCP world). */
int cplab_bench_parallel_world(int tp, int pcp, int dcp);

/* Copy p (and its samples) into r. Rejects, with CPLAB_EINVAL and a message
 * naming the point: n == 0 or n > CPLAB_BENCH_MAX_SAMPLES, a non-finite or
 * negative sample or phase time, an unknown workload, graph or metric, a
 * metric the workload cannot measure (prefill: TTFT, decode: TPOT), tokens,
 * batch or out_tokens < 1, sizes the project's layout rules reject
 * (cplab_parallel_check), a label that does not match the sizes, heads
 * above heads_run or only one of them 0, and a
 * configuration (sizes, workload, tokens, batch, out_tokens, graph, metric)
 * already present. The stats, baseline and ratio of p are ignored. */
int cplab_bench_results_add(cplab_bench_results *r, const cplab_bench_point *p, cplab_diag *d);

/* The seed of point `index`'s bootstraps: meta.seed mixed with the index
 * (splitmix64), so every point draws its own stream and a report can be
 * reproduced from its inputs. */
uint64_t cplab_bench_point_seed(uint64_t seed, size_t index);

/* Stats of every point (cplab_stats_summarize with the point's seed and
 * meta.resamples) and its baseline: the point with the same workload,
 * tokens, batch, out_tokens, graph and metric whose parallel sizes are pure
 * TP (pcp == 1, dcp == 1) on as many GPUs (tp == this tp * pcp). The baseline
 * itself gets ratio 1 [1, 1] and its own index; a point without one gets
 * baseline -1 and a NAN ratio; a point whose baseline has a median of 0
 * keeps the baseline index but gets a NAN ratio (a ratio against 0 means
 * nothing). Idempotent. */
int cplab_bench_results_finish(cplab_bench_results *r, cplab_diag *d);

/* The baseline rule alone: index of point i's baseline, or -1. */
long cplab_bench_results_baseline_of(const cplab_bench_results *r, size_t i);

/* Free the points and their samples; r is left empty (meta kept). */
void cplab_bench_results_free(cplab_bench_results *r);

/* Markdown: a header block (card, date, commit, command, preset, backend,
 * GPUs, layers, statistics, note), one summary table per graph mode (rows:
 * workloads, columns: parallel sizes, cells "median (ratio×)"), then a
 * detail table with every point's statistics and phase medians. Rendered
 * completely before anything is written to out. */
int cplab_bench_write_markdown(const cplab_bench_results *r, FILE *out, cplab_diag *d);
/* The same into a file, atomically. */
int cplab_bench_write_markdown_file(const cplab_bench_results *r, const char *path, cplab_diag *d);

/* JSON: {"format", "version", "meta": {...}, "points": [...]} with every
 * statistic, ratio, baseline index, phase and raw sample; reals printed with
 * 17 significant digits (bit-exact round trip), NAN as null, keys in a fixed
 * order. */
int cplab_bench_write_json(const cplab_bench_results *r, const char *path, cplab_diag *d);

/* HDF5 (schema in RESULTS.md): meta as root attributes, points as columns
 * under /points, raw samples ragged (samples_ms + offsets). */
int cplab_bench_write_h5(const cplab_bench_results *r, const char *path, cplab_diag *d);
/* Read a file written by cplab_bench_write_h5 into r (initialised here;
 * finished on success, left empty on failure; free it with
 * cplab_bench_results_free, which is harmless after a failure). Checks the format
 * attribute, every size, every value (through the rules of _add) and the
 * stored baselines; a damaged or foreign file gives CPLAB_ESCHEMA, CPLAB_EHDF5,
 * CPLAB_ERANGE, CPLAB_EINVAL (a point _add rejects) or CPLAB_EIO, with a
 * message naming the file and the problem. */
int cplab_bench_read_h5(const char *path, cplab_bench_results *r, cplab_diag *d);

/* Plots: <prefix>.dat (one whitespace table per graph mode, metric and
 * parallel sizes: tokens, median, ci_low, ci_high, tokens ascending; blocks
 * separated by two blank lines for gnuplot's `index`) and <prefix>.gp, a
 * gnuplot script that draws one figure per metric and graph mode (TTFT
 * against prefill tokens, TPOT against context length, one line per set of
 * parallel sizes, error bars from the 95% interval) as
 * <base>-<metric>-<graph>.png (pngcairo, or png without cairo) and .svg. The script names the data and the images
 * by their base names, relative to the script's directory: run it there
 * (`cd DIR && gnuplot BASE.gp`). With render != 0 the script is run so, by
 * the gnuplot found on PATH; without one, CPLAB_ENOTFOUND says the script is
 * there to render later (the .dat and .gp are written either way). */
int cplab_bench_write_plots(const cplab_bench_results *r, const char *prefix, int render, cplab_diag *d);

#endif
