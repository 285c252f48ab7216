/* bench/kb_nccl.h: NCCL for the ranked kernels' case tables
 * (bench/kernel_gather_nccl.c, kernel_moe_paths.c): the header, and a
 * checked call that turns NCCL's result into the driver's error. Only in
 * builds with NCCL (CPLAB_KB_RANKED). */
#ifndef CPLAB_BENCH_KB_NCCL_H
#define CPLAB_BENCH_KB_NCCL_H

#include <cuda_runtime_api.h>
/* nccl.h declares `f()` functions, which -Wstrict-prototypes flags. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "cplab/error.h"

/* 0, or CPLAB_ENCCL naming the call and NCCL's reason. */
static inline int cplab_kb_nccl(ncclResult_t r, const char *call, cplab_diag *d) {
  if (r == ncclSuccess) return 0;
  CPLAB_FAIL(d, CPLAB_ENCCL, "%s: %s", call, ncclGetErrorString(r));
}
#define KB_NCCL(d, call) cplab_kb_nccl((call), #call, (d))

#endif
