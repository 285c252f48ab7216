/* kernels/cplab_moe.h: the MoE block of cplab-bench's synthetic decoder layer
 * on the GPU (kernels/moe.cu), one shard of the TP×PCP expert sharding at a
 * time, with the arithmetic of both PCP communication paths
 * (shared/reference/vllm-pcp-dcp.md §8; the CPU model is sim/moe_ref.h).
 *
 * The block (DeepSeek-V3.2 / GLM-5 form): router logits = x·Wr^T, the top_k
 * experts of a row (higher logit first, the lower expert index on ties),
 * gates = softmax over those top_k logits (fp32), and
 *   out = sum_j gate_j · expert_{e_j}(x) + shared_expert(x),
 * every expert a SwiGLU MLP: h = silu(x·Wg^T) ⊙ (x·Wu^T), y = h·Wd^T, with
 * Wg, Wu [I][d] (stored stacked as gate_up [2I][d], gate rows first) and
 * Wd [d][I]. The shared experts form one SwiGLU MLP of intermediate size
 * shared·I (none when shared == 0).
 *
 * Sharding over S shards (TP×PCP ranks): routed expert e lives on shard
 * e mod S; the shared MLP's intermediate dimension is cut into S equal
 * contiguous slices, shard q holding slice q (rows q·Is .. (q+1)·Is - 1 of
 * the shared Wg and Wu, the same columns of the shared Wd; Is = shared·I/S).
 * Shard q's partial output of a row = the sum over the row's chosen experts
 * that q holds, plus its shared slice; the block's output is the sum of the
 * S partials (what the PCP paths' reduce-scatter / all-reduce compute).
 *
 * Weights are a pure function of (seed, tensor, global indices), so every
 * shard holds a slice of one global model and a host reference can
 * regenerate any element (cplab_moe_weight_host).
 *
 * Numerics, as a serving engine does them: every GEMM is cplab_gemm_bf16
 * (bf16 in and out, fp32 accumulation); router logits are bf16, used as fp32
 * for the top-k and the softmax; the gate_up output and the SwiGLU result h
 * are bf16 (silu and the product in fp32); each expert's output is bf16; the
 * gate-weighted sum and the partial output are fp32.
 *
 * Conventions are cplab_kernels.h's: device pointers, streams as void *
 * (NULL: the legacy default stream), bf16 as uint16_t bit patterns, 0 or a
 * negative cplab error code with a message in d (CPLAB_EINVAL for bad shapes
 * or NULL pointers, CPLAB_ECUDA / CPLAB_ENOMEM for failed CUDA calls). */
#ifndef CPLAB_MOE_H
#define CPLAB_MOE_H

#include <stdint.h>

#include "cplab_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cplab_moe_shape {
  int dim, experts, top_k, inter, shared; /* d, E, k, I, number of shared experts */
  int shards, shard;                      /* S and this shard q */
} cplab_moe_shape;

/* Valid: dim, experts, inter >= 1; 1 <= top_k <= experts; shared >= 0;
 * shards >= 1; 0 <= shard < shards; shared·inter divisible by shards; every
 * tensor dimension below 2^31. CPLAB_EINVAL naming the rule otherwise. */
int cplab_moe_shape_check(const cplab_moe_shape *s, cplab_diag *d);

/* ---- weights ----------------------------------------------------------- */

/* The global tensors, by id. Element (expert, row, col) of tensor t is
 * cplab_moe_weight_host(shape, seed, t, expert, row, col); the expert index
 * is 0 for tensors that have none. fan_in is the length of a row. */
typedef enum cplab_moe_tensor {
  CPLAB_MOE_ROUTER = 0,         /* Wr [E][d], fan_in d */
  CPLAB_MOE_GATE_UP = 1,        /* per routed expert [2I][d]: rows [0, I) Wg, [I, 2I) Wu; fan_in d */
  CPLAB_MOE_DOWN = 2,           /* per routed expert Wd [d][I], fan_in I */
  CPLAB_MOE_SHARED_GATE_UP = 3, /* [2·shared·I][d]: rows [0, shared·I) Wg, then Wu; fan_in d */
  CPLAB_MOE_SHARED_DOWN = 4     /* [d][shared·I], fan_in shared·I */
} cplab_moe_tensor;
#define CPLAB_MOE_TENSORS 5

/* The bf16 pattern of one global weight element: with
 *   h = splitmix64-style hash of (seed, tensor, expert, row, col),
 *   u = the top 24 bits of h, v = (2u + 1 - 2^24) · 2^-24 (an odd multiple of
 *       2^-24 in (-1, 1): uniform, zero mean, exact in float),
 *   a = float(1 / sqrt(fan_in)) (rounded once from double),
 * the element is bf16(v · a) (the float product, then round to nearest
 * even). Only the shape's dim, inter and shared are read (fan_in); the same
 * __host__ __device__ code generates the device weights, so the values are
 * bit-identical. Indices are not range-checked. */
uint16_t cplab_moe_weight_host(const cplab_moe_shape *s, uint64_t seed, int tensor, int expert, int row, int col);

/* One shard's weights on the device. */
typedef struct cplab_moe cplab_moe;

/* Generate shard s->shard's weights from seed on the device: the router Wr
 * in full, the routed experts it holds (local expert l is global expert
 * shard + l·shards, l < ceil((E - shard) / S)) and its shared slice.
 * Synchronous (waits for the generation). CPLAB_EINVAL for a bad shape or
 * NULL pointers. */
int cplab_moe_create(const cplab_moe_shape *s, uint64_t seed, cplab_moe **out, cplab_diag *d);
/* Free the weights (NULL: no-op); waits for the device first (cudaFree). */
void cplab_moe_destroy(cplab_moe *m);

/* Where a shard's copy of a tensor lives: `count` matrices of rows × cols
 * bf16, row-major, matrix i at dev + i·stride (stride >= rows·cols, rounded
 * up to 8 elements so that every matrix starts 16-byte aligned):
 *   ROUTER            1 matrix [E][d];
 *   GATE_UP / DOWN    one per local expert l (global shard + l·S): [2I][d] /
 *                     [d][I] (count 0 when the shard holds no expert);
 *   SHARED_GATE_UP    1 matrix [2·Is][d]: rows [0, Is) are the global Wg rows
 *                     q·Is + r, rows [Is, 2Is) the global Wu rows q·Is + r;
 *   SHARED_DOWN       1 matrix [d][Is]: column c is global column q·Is + c
 *                     (count 0 for both when shared == 0). */
typedef struct cplab_moe_view {
  const uint16_t *dev;
  int64_t count, rows, cols, stride;
} cplab_moe_view;
int cplab_moe_weights(const cplab_moe *m, int tensor, cplab_moe_view *v, cplab_diag *d);
/* The shape the weights were made for. */
const cplab_moe_shape *cplab_moe_shape_of(const cplab_moe *m);

/* ---- plan and run ------------------------------------------------------- */

typedef struct cplab_moe_plan cplab_moe_plan;

/* Buffers and the routing of a fixed batch: runs the router on x (bf16
 * [n][d], device) once, synchronously (it first waits for the whole device,
 * so x may come from any stream), reads back the number of rows each local
 * expert receives, and sizes every buffer, so that cplab_moe_run needs no
 * host synchronisation and no allocation (it can be captured in a CUDA
 * graph). gemm: the cplab_gemm handle run uses (one stream at a time). The
 * plan refers to m and gemm, which must outlive it. n == 0 is a valid empty
 * plan (run does nothing). */
int cplab_moe_plan_create(cplab_moe *m, cplab_gemm *gemm, const uint16_t *x, int64_t n, cplab_moe_plan **out,
                          cplab_diag *d);
/* Free the plan (NULL: no-op); waits for the device first (cudaFree). */
void cplab_moe_plan_destroy(cplab_moe_plan *p);

/* Shard q's partial output for the plan's n rows of x (bf16 [n][d]): out
 * fp32 [n][d], every element written. In stream order: the router GEMM, the
 * top-k and gates, the permutation of the rows by local expert (counts and
 * positions computed on the device; each expert's segment starts at the
 * plan's offset, a multiple of 8 rows, and holds its rows in ascending row
 * order), one gate_up GEMM per local expert the plan gives rows, SwiGLU,
 * one down GEMM per such expert, the shared slice's three steps, and the
 * un-permute: each row sums gate_j · y_{e_j} over its chosen local experts
 * in the order of its top-k list, then adds its shared slice, in fp32, with
 * no atomics (deterministic: the same x gives the same bits). No host
 * synchronisation, no allocation.
 * If x no longer routes as it did when the plan was made, a device flag
 * records it (cplab_moe_plan_check): a row whose experts changed but every
 * local expert's row count unchanged is still computed correctly (the plan
 * fixes only sizes); a changed count makes the output wrong (rows beyond the
 * plan's count are dropped, never written out of bounds). */
int cplab_moe_run(cplab_moe_plan *p, const uint16_t *x, float *out, void *stream, cplab_diag *d);

/* Waits for the device, reads the flag of the runs since the plan was made
 * or since the previous check, and clears it: 0 when every one of them
 * routed as the plan, CPLAB_EMISMATCH "routing changed since the plan ..."
 * (saying whether the per-expert row counts changed too, i.e. whether those
 * runs' outputs are wrong) otherwise. */
int cplab_moe_plan_check(cplab_moe_plan *p, cplab_diag *d);

/* The sizes the plan fixed. counts: host array owned by the plan, rows of
 * each local expert (local_experts entries). */
typedef struct cplab_moe_plan_info {
  int64_t rows;          /* n */
  int local_experts;     /* L */
  int active_experts;    /* local experts with rows: the grouped GEMM's calls */
  int64_t routed_rows;   /* sum of counts: (row, local expert) pairs */
  int64_t padded_rows;   /* rows of the permuted buffers (segments padded to 8) */
  const int32_t *counts; /* [L] */
} cplab_moe_plan_info;
int cplab_moe_plan_info_of(const cplab_moe_plan *p, cplab_moe_plan_info *info, cplab_diag *d);

/* The routing of the plan's latest router pass (plan creation, or the latest
 * run once it has executed), device pointers owned by the plan: experts
 * int32 [n][k] (global expert ids, best first), gates fp32 [n][k], logits
 * bf16 [n][E]. Any pointer argument may be NULL (not wanted). */
int cplab_moe_plan_routing(const cplab_moe_plan *p, const int32_t **experts, const float **gates,
                           const uint16_t **logits, cplab_diag *d);

/* ---- reductions and conversion ------------------------------------------ */

/* out[i] = sum over p = 0..P-1, in that order, of parts[p·count + i] (parts
 * fp32 [P][count], contiguous), in fp32: the reduction of the partials
 * (all-reduce / reduce-scatter arithmetic), deterministic. P >= 1; out may
 * not overlap parts. */
int cplab_moe_sum_partials(const float *parts, int P, int64_t count, float *out, void *stream, cplab_diag *d);
/* out[i] = bf16(in[i]), round to nearest even (NaN -> 0x7FFF). */
int cplab_f32_to_bf16(const float *in, int64_t count, uint16_t *out, void *stream, cplab_diag *d);

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_MOE_H */
