// cuBLASLt GEMMs for C callers: bf16 x bf16 and e4m3 x e4m3 (per-tensor
// scales), bf16 out, fp32 accumulation. Contracts in cplab_kernels.h.
//
// Row-major operands through cuBLASLt's column-major API. A matrix stored
// row-major as X[r][c] (row stride c) is, read column-major, the matrix X^T
// with c rows, r columns and leading dimension c. We want, all row-major,
//   C[m][n] = A[m][k] · B[n][k]^T.
// Transposing both sides gives C^T = B · A^T, and in column-major terms:
//   cuBLASLt's A := our B, stored k x n (ld k) = B^T; with TRANSA = T, op(A) = B (n x k);
//   cuBLASLt's B := our A, stored k x m (ld k) = A^T; with TRANSB = N, op(B) = A^T (k x m);
//   cuBLASLt's D := our C, stored n x m (ld n) = C^T,
// i.e. the column-major problem (M, N, K) = (n, m, k) in the "TN" form. Both
// operands then have k contiguous, which is the one form cuBLASLt's fp8
// kernels accept on Hopper, so bf16 and fp8 share this mapping (and bf16 runs
// the most common form, a Linear layer's x · W^T, as well).
//
// Per call the wrapper builds the descriptors, asks the heuristic for one
// algorithm (the first, i.e. the fastest by its estimate) and runs it;
// cuBLASLt keeps its own cache of heuristic answers, so a repeated shape costs
// little host time. Nothing else is cached, so no state outlives a call but
// the handle and its workspace.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "check.cuh"
#include "gemm_args.cuh"
#include "cplab_kernels.h"

// Hopper's cuBLASLt kernels use up to 32 MiB (split-K partial sums, stream-K
// fix-up); 64 MiB leaves room for later cards without limiting the heuristic.
#define GEMM_WORKSPACE_BYTES ((size_t)64 << 20)

struct cplab_gemm {
  cublasLtHandle_t lt;
  void *workspace;
  size_t workspace_bytes;
};

static int lt_fail(cplab_diag *d, cublasStatus_t st, const char *call, int line) {
  return cplab_diag_set(d, st == CUBLAS_STATUS_ALLOC_FAILED ? CPLAB_ENOMEM : CPLAB_ECUDA, "%s:%d: %s: %s (%d)",
                        __FILE__, line, call, cublasLtGetStatusString(st), (int)st);
}

// Return from the enclosing function when a cuBLASLt call fails.
#define KCHECK_LT(d, call)                                              \
  do {                                                                  \
    cublasStatus_t kst_ = (call);                                       \
    if (kst_ != CUBLAS_STATUS_SUCCESS) return lt_fail((d), kst_, #call, __LINE__); \
  } while (0)

extern "C" size_t cplab_gemm_lib_version(void) { return cublasLtGetVersion(); }

extern "C" int cplab_gemm_create(cplab_gemm **out, cplab_diag *d) {
  KCHECK_ARG(d, out, "cplab_gemm_create: NULL result pointer");
  *out = NULL;
  cplab_gemm *h = (cplab_gemm *)calloc(1, sizeof *h);
  if (!h) return cplab_diag_set(d, CPLAB_ENOMEM, "cplab_gemm_create: out of host memory");
  cublasStatus_t st = cublasLtCreate(&h->lt);
  if (st != CUBLAS_STATUS_SUCCESS) {
    free(h);
    return lt_fail(d, st, "cublasLtCreate", __LINE__);
  }
  cudaError_t err = cudaMalloc(&h->workspace, GEMM_WORKSPACE_BYTES);
  if (err != cudaSuccess) {
    cublasLtDestroy(h->lt); // best effort: the allocation failure is the error to report
    free(h);
    return cplab_diag_set(d, err == cudaErrorMemoryAllocation ? CPLAB_ENOMEM : CPLAB_ECUDA,
                          "cplab_gemm_create: cudaMalloc(%zu bytes of workspace): %s", GEMM_WORKSPACE_BYTES,
                          cudaGetErrorString(err));
  }
  h->workspace_bytes = GEMM_WORKSPACE_BYTES;
  *out = h;
  return 0;
}

extern "C" int cplab_gemm_destroy(cplab_gemm *h, cplab_diag *d) {
  if (!h) return 0;
  // cudaFree waits for the device, so no GEMM still uses the workspace.
  cudaError_t err = cudaFree(h->workspace);
  cublasStatus_t st = cublasLtDestroy(h->lt);
  free(h);
  if (err != cudaSuccess)
    return cplab_diag_set(d, CPLAB_ECUDA, "cplab_gemm_destroy: cudaFree(workspace): %s", cudaGetErrorString(err));
  if (st != CUBLAS_STATUS_SUCCESS) return lt_fail(d, st, "cublasLtDestroy", __LINE__);
  return 0;
}

// The descriptors of one call; destroyed by lt_problem_destroy whatever happened.
typedef struct lt_problem {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, c; // cuBLASLt's A (our B), B (our A), C = D (our C)
  cublasLtMatmulPreference_t pref;
} lt_problem;

static int lt_problem_destroy(lt_problem *p, cplab_diag *d) {
  cublasStatus_t st[5] = {CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_SUCCESS,
                          CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_SUCCESS};
  if (p->pref) st[0] = cublasLtMatmulPreferenceDestroy(p->pref);
  if (p->c) st[1] = cublasLtMatrixLayoutDestroy(p->c);
  if (p->b) st[2] = cublasLtMatrixLayoutDestroy(p->b);
  if (p->a) st[3] = cublasLtMatrixLayoutDestroy(p->a);
  if (p->op) st[4] = cublasLtMatmulDescDestroy(p->op);
  for (int i = 0; i < 5; i++)
    if (st[i] != CUBLAS_STATUS_SUCCESS) return lt_fail(d, st[i], "cublasLt*Destroy (descriptors)", __LINE__);
  return 0;
}

// The largest power of two (at most 256, cuBLASLt's default assumption) that
// divides the address. The heuristic must be told, or it may pick a kernel
// whose vector loads need more alignment than a sub-buffer pointer has.
static uint32_t ptr_alignment(const void *p) {
  uintptr_t a = (uintptr_t)p;
  uint32_t al = 256;
  while (al > 1 && (a & (al - 1))) al >>= 1;
  return al;
}

typedef struct gemm_call {
  const char *name;       // "cplab_gemm_bf16" / "cplab_gemm_fp8", for messages
  cudaDataType_t in_type; // of A and B
  int64_t m, n, k;
  const void *A, *B;
  const float *a_scale, *b_scale; // fp8 only (device pointers)
  void *C;
} gemm_call;

// Build the descriptors into p (the caller destroys them), pick the
// heuristic's first algorithm and enqueue the matmul.
static int gemm_enqueue(cplab_gemm *h, const gemm_call *g, lt_problem *p, cudaStream_t stream, cplab_diag *d) {
  const int32_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  KCHECK_LT(d, cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  KCHECK_LT(d, cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
  KCHECK_LT(d, cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
  if (g->in_type == CUDA_R_8F_E4M3) {
    // cuBLASLt's A is our B and its B our A: the scales follow their matrices
    // (the product is the same either way, per-tensor scales commute).
    const void *sa = g->b_scale, *sb = g->a_scale;
    const int8_t fast_accum = 0; // periodic promotion of the partial sums to fp32: the accurate mode
    KCHECK_LT(d, cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
    KCHECK_LT(d, cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
    KCHECK_LT(d, cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                                sizeof fast_accum));
  }
  uint64_t m = (uint64_t)g->m, n = (uint64_t)g->n, k = (uint64_t)g->k;
  KCHECK_LT(d, cublasLtMatrixLayoutCreate(&p->a, g->in_type, k, n, (int64_t)k)); // our B, [n][k] row-major
  KCHECK_LT(d, cublasLtMatrixLayoutCreate(&p->b, g->in_type, k, m, (int64_t)k)); // our A, [m][k] row-major
  KCHECK_LT(d, cublasLtMatrixLayoutCreate(&p->c, CUDA_R_16BF, n, m, (int64_t)n)); // our C, [m][n] row-major

  const uint64_t ws = h->workspace_bytes;
  const uint32_t al_a = ptr_alignment(g->B), al_b = ptr_alignment(g->A), al_c = ptr_alignment(g->C);
  KCHECK_LT(d, cublasLtMatmulPreferenceCreate(&p->pref));
  KCHECK_LT(d, cublasLtMatmulPreferenceSetAttribute(p->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  KCHECK_LT(d, cublasLtMatmulPreferenceSetAttribute(p->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a,
                                                    sizeof al_a));
  KCHECK_LT(d, cublasLtMatmulPreferenceSetAttribute(p->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b,
                                                    sizeof al_b));
  KCHECK_LT(d, cublasLtMatmulPreferenceSetAttribute(p->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c,
                                                    sizeof al_c));
  KCHECK_LT(d, cublasLtMatmulPreferenceSetAttribute(p->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c,
                                                    sizeof al_c));

  // The heuristic's first candidate, and only if cublasLtMatmul refuses it
  // (NOT_SUPPORTED: argument validation, before anything is enqueued) up to
  // seven more. Asking for eight on every call costs host time that eager
  // decode steps, made of small GEMMs, show (cplab-bench on an H200: 1.27 ms
  // per step of GLM-5 pcp4dcp4 with one candidate, 5.68 ms with eight).
  enum { GEMM_CANDIDATES = 8 };
  cublasLtMatmulHeuristicResult_t res[GEMM_CANDIDATES];
  const float alpha = 1.0f, beta = 0.0f; // host memory (the default pointer mode), scale type CUDA_R_32F;
                                         // beta = 0: C is not read, so it may be D itself
  cublasStatus_t st = CUBLAS_STATUS_NOT_SUPPORTED;
  int tried = 0, skip = 0;
  for (int want = 1; want <= GEMM_CANDIDATES && st == CUBLAS_STATUS_NOT_SUPPORTED; want *= GEMM_CANDIDATES) {
    int found = 0;
    memset(res, 0, sizeof res);
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(h->lt, p->op, p->a, p->b, p->c, p->c, p->pref, want, res, &found);
    // NOT_SUPPORTED, or success with no usable result: nothing fits this problem.
    if (hs == CUBLAS_STATUS_NOT_SUPPORTED || (hs == CUBLAS_STATUS_SUCCESS && found < 1))
      return cplab_diag_set(d, CPLAB_EUNSUPPORTED,
                            "%s: cuBLASLt has no algorithm for m=%lld n=%lld k=%lld (pointer alignment A %u, B %u, "
                            "C %u bytes; workspace %zu bytes)",
                            g->name, (long long)g->m, (long long)g->n, (long long)g->k, al_b, al_a, al_c,
                            h->workspace_bytes);
    if (hs != CUBLAS_STATUS_SUCCESS) return lt_fail(d, hs, "cublasLtMatmulAlgoGetHeuristic", __LINE__);
    for (int i = skip; i < found && st == CUBLAS_STATUS_NOT_SUPPORTED; i++) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      tried++;
      st = cublasLtMatmul(h->lt, p->op, &alpha, g->B, p->a, g->A, p->b, &beta, g->C, p->c, g->C, p->c, &res[i].algo,
                          h->workspace, h->workspace_bytes, stream);
    }
    skip = found; /* the first `found` were tried */
  }
  if (st == CUBLAS_STATUS_NOT_SUPPORTED)
    return cplab_diag_set(d, CPLAB_EUNSUPPORTED,
                          "%s: cuBLASLt refused all %d candidate algorithms for m=%lld n=%lld k=%lld (NOT_SUPPORTED)",
                          g->name, tried, (long long)g->m, (long long)g->n, (long long)g->k);
  if (st != CUBLAS_STATUS_SUCCESS) return lt_fail(d, st, "cublasLtMatmul", __LINE__);
  return 0;
}

// Shared argument checks, the empty cases, then the matmul.
static int gemm_run(cplab_gemm *h, const gemm_call *g, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, h, "%s: NULL handle", g->name);
  KCHECK_ARG(d, g->m >= 0 && g->n >= 0 && g->k >= 0 && g->m <= INT32_MAX && g->n <= INT32_MAX && g->k <= INT32_MAX,
             "%s: sizes must be in [0, 2^31), got m=%lld n=%lld k=%lld", g->name, (long long)g->m, (long long)g->n,
             (long long)g->k);
  if (g->m == 0 || g->n == 0) return 0;
  KCHECK_ARG(d, g->C, "%s: NULL output", g->name);
  KCHECK_ARG(d, kaligned(g->C, 2), "%s: C must be 2-byte aligned", g->name);
  if (g->k == 0) { // an empty sum: C = 0 (bf16 +0 is all-zero bits); cuBLASLt is not asked about k = 0
    KCHECK_CUDA(d, cudaMemsetAsync(g->C, 0, (size_t)g->m * (size_t)g->n * 2, kstream(stream)));
    return 0;
  }
  KCHECK_ARG(d, g->A && g->B, "%s: NULL input matrix", g->name);
  lt_problem p;
  memset(&p, 0, sizeof p);
  int rc = gemm_enqueue(h, g, &p, kstream(stream), d);
  int rc_free = lt_problem_destroy(&p, d);
  return rc ? rc : rc_free;
}

extern "C" int cplab_gemm_bf16(cplab_gemm *h, int64_t m, int64_t n, int64_t k, const uint16_t *A, const uint16_t *B,
                               uint16_t *C, void *stream, cplab_diag *d) {
  gemm_call g = {"cplab_gemm_bf16", CUDA_R_16BF, m, n, k, A, B, NULL, NULL, C};
  int rc = gemm_bf16_args(A, B, d);
  return rc ? rc : gemm_run(h, &g, stream, d);
}

extern "C" int cplab_gemm_fp8(cplab_gemm *h, int64_t m, int64_t n, int64_t k, const uint8_t *A, const uint8_t *B,
                              const float *a_scale, const float *b_scale, uint16_t *C, void *stream, cplab_diag *d) {
  gemm_call g = {"cplab_gemm_fp8", CUDA_R_8F_E4M3, m, n, k, A, B, a_scale, b_scale, C};
  if (m == 0 || n == 0) return gemm_run(h, &g, stream, d); // nothing to do: no further checks
  int rc = gemm_fp8_args(m, n, k, A, B, a_scale, b_scale, C, d);
  if (rc) return rc;
  return gemm_run(h, &g, stream, d);
}
