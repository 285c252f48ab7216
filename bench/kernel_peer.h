/* bench/kernel_peer.h: the PyTorch peer's results (bench/kernel_peer.py
 * writes them, cplab-kernel-bench --peer FILE reads them), so that each
 * kernels.json entry carries the peer measured in the same run.
 *
 * The file (JSON):
 *   {"peer": "pytorch", "version": "2.11.0+cu130", "device": "NVIDIA H200",
 *    "date": "...", "command": "...", "reps": 30, "warmup": 5,
 *    "entries": [{"kernel": "sparse_mla_prefill", "case": "fm-prefill-h64",
 *                 "name": "torch gather + bmm, bf16, fp32 softmax",
 *                 "median_us": 12.5, "p10_us": 12.1, "p90_us": 13.0,
 *                 "sets": 2, "shape": {...the case's shape fields...},
 *                 "check": {"max_rel_l2": 0.004, "max_lse_abs": 0.0001}},
 *                {"kernel": ..., "case": ..., "name": ..., "error": "CUDA out of memory"}]}
 * The indexer path's entries (bench/kernel_peer.py's peers of
 * indexer_logits_prefill, topk_*, convert, gather_upconvert, restore) only
 * time: no "check"; their "shape" holds the kernel's own fields (convert's
 * "path" a string). A kernel the script has no peer for gets no entry.
 * "peer" and "entries" are required, the other top-level keys optional.
 * In an entry kernel, case and name are required, and either median_us
 * (> 0) or error (the peer could not run the case). The case must be in
 * the program's table under that kernel, at most once, and its "shape",
 * when present, must equal the table's (a file from another version of
 * the table is refused rather than matched to the wrong shape). Unknown
 * keys are errors (a misspelt field is not silently dropped); every error
 * names the file, line, column and field. */
#ifndef CPLAB_BENCH_KERNEL_PEER_H
#define CPLAB_BENCH_KERNEL_PEER_H

#include <stddef.h>

#include "cplab/error.h"
#include "kernel_bench.h"

typedef struct cplab_kb_peer {
  const cplab_kb_kernel *kernel;
  const cplab_kb_case *kcase;
  char name[160];
  int has_time;            /* else error[] says why there is none */
  double median_us, p10_us, p90_us;
  int has_check;
  double max_rel_l2, max_lse_abs;
  char error[256];
} cplab_kb_peer;

typedef struct cplab_kb_peers {
  char source[64];  /* "peer" */
  char version[64]; /* "version" ("" when absent) */
  size_t n;
  cplab_kb_peer *e;
} cplab_kb_peers;

/* Read and check path against the kernels' case tables; 0, or CPLAB_EIO
 * (unreadable), CPLAB_ESYNTAX (not JSON), CPLAB_ESCHEMA / CPLAB_ERANGE /
 * CPLAB_ENOTFOUND (a field, a value, an unknown case) with the location. */
int cplab_kb_peers_load(const char *path, const cplab_kb_kernel *const *kernels, int nkernels, cplab_kb_peers *out,
                        cplab_diag *d);
/* The peer entry of case c, NULL when the file has none. */
const cplab_kb_peer *cplab_kb_peers_find(const cplab_kb_peers *p, const cplab_kb_case *c);
void cplab_kb_peers_free(cplab_kb_peers *p);

#endif
