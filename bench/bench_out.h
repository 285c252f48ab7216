/* bench/bench_out.h: the output a GPU benchmark program writes, in one
 * place: cplab-kernel-bench (bench/kernel_bench.c, whose case tables include
 * the ceilings and the ranked kernels that were cplab-gather-bench and
 * cplab-moe-bench). The UTC date, the command line, the card,
 * a spread of times and the JSON file. Plain C (no CUDA call), so it links
 * everywhere, the CPU emulation included. */
#ifndef CPLAB_BENCH_BENCH_OUT_H
#define CPLAB_BENCH_BENCH_OUT_H

#include <jansson.h>
#include <stddef.h>

#include "cplab/error.h"
#include "cplab/stats.h"
#include "cplab_kernels.h"

/* "YYYY-MM-DDTHH:MM:SSZ" (UTC, now) into buf (>= 21 bytes). */
void cplab_bench_date(char *buf, size_t cap);
/* The command line as one string (malloc'd; NULL when out of memory). */
char *cplab_bench_command(int argc, char **argv);
/* The card's JSON object: name, count, sm_count, l2_bytes, memory_bytes,
 * compute_capability, cuda_runtime_version, cuda_driver_version. */
json_t *cplab_bench_card_json(const cplab_gpu_info *g, size_t l2_bytes);
/* {"median", "min", "max", "p10", "p90"} of s (seconds) in microseconds. */
json_t *cplab_bench_spread_json(const cplab_spread *s);
/* doc as indented JSON with a final newline, written to path atomically:
 * 0 or a code with the message in d. */
int cplab_bench_write_json(const char *path, const json_t *doc, cplab_diag *d);

#endif
