/* cplab/heads.h: head padding, the query heads sparse MLA's attention
 * kernels run. FlashMLA's sparse kernels run 64 (sm90) or 128 (sm100 and
 * later) query heads a block and vLLM pads a rank's heads up to them
 * (perf-anchors §1: GLM-5 at TP4 runs 16 real heads as 64). The executor
 * pads its queries this way, cplab-bench's plan-derived work and cplab-model's
 * predictions count the same heads, and both programs take the same
 * --head-pad option: one rule for all, here.
 */
#ifndef CPLAB_HEADS_H
#define CPLAB_HEADS_H

#include "cplab/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --head-pad's words (a multiple N > 1 stands for itself), and the padding
 * of FlashMLA's sparse kernels by SM generation. */
enum {
  CPLAB_HEAD_PAD_AUTO = -1, /* the device's: SM90's or SM100's */
  CPLAB_HEAD_PAD_NONE = 0,  /* the real heads */
  CPLAB_HEAD_PAD_SM90 = 64,
  CPLAB_HEAD_PAD_SM100 = 128
};

/* The heads a kernel runs for `heads` real ones with padding pad: heads
 * rounded up to a multiple of pad (pad 0 or 1: heads). */
int cplab_heads_run(int heads, int pad);

/* --head-pad's text: "auto" (CPLAB_HEAD_PAD_AUTO), "none"
 * (CPLAB_HEAD_PAD_NONE) or a multiple in [lo, 1024]; CPLAB_EUSAGE
 * "--head-pad TEXT: expected auto, none or a multiple in [lo, 1024]"
 * otherwise. lo is 2 where none must be spelled one way (cplab-bench records
 * it as 0), 1 where a multiple of 1 is none's spelling (cplab-model's). */
int cplab_head_pad_parse(const char *text, int lo, int *pad, cplab_diag *d);

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_HEADS_H */
