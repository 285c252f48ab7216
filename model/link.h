/* model/link.h: the link model of cplab-model, per collective and group.
 *
 * A collective over a group of n ranks moving S bytes (S as nccl-tests
 * counts it: the whole gathered array for an all-gather, the whole input of
 * a reduce-scatter, the buffer of an all-reduce) takes
 *     t = latency + S * F(kind, n) / busbw
 * with the ring algorithm's factor F: all-gather and reduce-scatter
 * (n - 1) / n, all-reduce 2 (n - 1) / n, and F = 0 (no time) for n = 1.
 * busbw is then the bus bandwidth nccl-tests reports. A group inside one
 * node runs on the intra-node tier (NVLink); a group whose ranks span nodes
 * (nodes of gpus_per_node consecutive ranks) on the inter-node tier
 * (InfiniBand), whose ring is bounded by its slowest link.
 *
 * Parameters come from a preset (cards not at hand, values from
 * shared/reference/perf-anchors.md §5-6), from a link file
 *   {"cplab_model_link": "1.0.0", "name": "...", "gpus_per_node": 8,
 *    "intra": {"latency_us": 20, "busbw_gbps": 360},
 *    "inter": {"latency_us": 30, "busbw_gbps": 45}}
 * or calibrated from a gather-bench result (its ncclAllGather times
 * per size: a least-squares line of time against S (n - 1) / n).
 * The single-device backend's collectives are device copies; its tier is
 * the copy bandwidth (half the read + write copy ceiling) and a latency
 * calibrated on cplab-bench's comm phase.
 */
#ifndef CPLAB_MODEL_LINK_H
#define CPLAB_MODEL_LINK_H

#include "cplab/error.h"
#include "cplab/plan.h"

typedef struct cplab_model_tier {
  double latency_us, busbw_gbps;
} cplab_model_tier;

typedef struct cplab_model_link {
  char name[256]; /* the preset, file or calibration it came from */
  int gpus_per_node;
  cplab_model_tier intra, inter;
} cplab_model_link;

/* The ring factor F(kind, n); 0 for n <= 1. */
double cplab_model_coll_factor(cplab_coll_kind kind, int n);

/* S of a collective a rank issues with count elements of dtype (the plan's
 * convention: count = the elements this rank contributes). */
double cplab_model_coll_bytes(cplab_coll_kind kind, int n, int64_t count, cplab_dtype dtype);

/* Time in microseconds over tier t; 0 for n <= 1. */
double cplab_model_tier_us(const cplab_model_tier *t, cplab_coll_kind kind, int n, double bytes);

/* "h200" (NVLink4 ring, NCCL_NVLS_ENABLE=0: 360 GB/s busbw, 20 us; NDR
 * InfiniBand 400 Gb/s a GPU: 45 GB/s, 30 us), "gb200" (NVLink5 in a
 * 72-GPU domain: 720 GB/s, 15 us; the same InfiniBand). CPLAB_ENOTFOUND
 * for another name. */
int cplab_model_link_preset(const char *name, cplab_model_link *out, cplab_diag *d);

/* A link file of the format above. */
int cplab_model_link_load(const char *path, cplab_model_link *out, cplab_diag *d);

/* Calibrate the intra-node tier from the gather bench's JSON, "ranks" > 1:
 * cplab-kernel-bench's kernels.json of --kernel gather_nccl (its "entries"[]
 * of op nccl_allgather: total_bytes and median_us; bench/run-gpu-gather.sh
 * since 2026-12-02) or the former cplab-gather-bench's ("results"[].total_bytes
 * and nccl_allgather.time_us.median: the committed results before): latency
 * and busbw of the least-squares line; the inter tier and gpus_per_node are
 * kept. */
int cplab_model_link_calibrate(const char *gather_bench_json, cplab_model_link *link, cplab_diag *d);

/* Least-squares line y = a + b x over n points (n >= 2, x not constant),
 * each point weighted by w[i] (NULL: all 1). */
int cplab_model_fit_line(const double *x, const double *y, const double *w, int n, double *a, double *b, cplab_diag *d);

#endif
