// tests/emu/gemm_host.cpp: the GEMM launchers of kernels/gemm.cu for the CPU
// emulation, in place of cuBLASLt (which has no CPU implementation). Same
// extern "C" functions (cplab_kernels.h), same argument checks and messages
// as gemm.cu, the same results by contract: C[m][n] = A[m][k] · B[n][k]^T,
// row-major, fp32 accumulation (in order of l), bf16 out rounded once; fp8
// e4m3 inputs with per-tensor fp32 scales read from "device" memory when the
// GEMM runs, applied to the fp32 sum. Operands must lie in cudaMalloc'd
// memory of the emulation (else CPLAB_ECUDA, where cuBLASLt would fault).
//
// A test of these launchers (tests/gpu/test_gpu_gemm.c under emulation)
// checks this stand-in and the test's own arithmetic, not cuBLASLt: the
// descriptors, layouts and heuristic of gemm.cu run only on a GPU.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include <vector>

#include "check.cuh"
#include "gemm_args.cuh"
#include "cplab_kernels.h"

struct cplab_gemm {
  void *workspace; // as gemm.cu's handle: device memory, freed by destroy
};

#define GEMM_HOST_WORKSPACE_BYTES ((size_t)1 << 20)

extern "C" size_t cplab_gemm_lib_version(void) { return 0; } // no cuBLASLt: the host stand-in

extern "C" int cplab_gemm_create(cplab_gemm **out, cplab_diag *d) {
  KCHECK_ARG(d, out, "cplab_gemm_create: NULL result pointer");
  *out = NULL;
  cplab_gemm *h = (cplab_gemm *)calloc(1, sizeof *h);
  if (!h) return cplab_diag_set(d, CPLAB_ENOMEM, "cplab_gemm_create: out of host memory");
  cudaError_t err = cudaMalloc(&h->workspace, GEMM_HOST_WORKSPACE_BYTES);
  if (err != cudaSuccess) {
    free(h);
    return cplab_diag_set(d, CPLAB_ENOMEM, "cplab_gemm_create: cudaMalloc(%zu bytes of workspace): %s",
                          GEMM_HOST_WORKSPACE_BYTES, cudaGetErrorString(err));
  }
  *out = h;
  return 0;
}

extern "C" int cplab_gemm_destroy(cplab_gemm *h, cplab_diag *d) {
  if (!h) return 0;
  cudaError_t err = cudaFree(h->workspace);
  free(h);
  if (err != cudaSuccess)
    return cplab_diag_set(d, CPLAB_ECUDA, "cplab_gemm_destroy: cudaFree(workspace): %s", cudaGetErrorString(err));
  return 0;
}

namespace {

struct gemm_call {
  const char *name;
  bool fp8;
  int64_t m, n, k;
  const void *A, *B;
  const float *a_scale, *b_scale;
  void *C;
};

int check_device(cplab_diag *d, const gemm_call *g, const char *what, const void *p, size_t bytes) {
  if (cuda_emu::is_device_range(p, bytes)) return 0;
  return cplab_diag_set(d, CPLAB_ECUDA, "%s: %s (%zu bytes at %p) is not device memory of the emulation", g->name,
                        what, bytes, p);
}

float element(const gemm_call *g, const void *M, int64_t i) {
  if (g->fp8) return cuda_emu_fp8_to_float(((const uint8_t *)M)[i], __NV_E4M3);
  return __bfloat162float(__ushort_as_bfloat16(((const uint16_t *)M)[i]));
}

int gemm_compute(const gemm_call *g, cplab_diag *d) {
  size_t es = g->fp8 ? 1 : 2;
  int rc = check_device(d, g, "A", g->A, (size_t)(g->m * g->k) * es);
  if (!rc) rc = check_device(d, g, "B", g->B, (size_t)(g->n * g->k) * es);
  if (!rc) rc = check_device(d, g, "C", g->C, (size_t)(g->m * g->n) * 2);
  if (!rc && g->fp8) rc = check_device(d, g, "a_scale", g->a_scale, 4);
  if (!rc && g->fp8) rc = check_device(d, g, "b_scale", g->b_scale, 4);
  if (rc) return rc;
  float scale = g->fp8 ? *g->a_scale * *g->b_scale : 1.0f;
  std::vector<float> a((size_t)g->k), b((size_t)(g->n * g->k));
  for (int64_t j = 0; j < g->n * g->k; j++) b[(size_t)j] = element(g, g->B, j);
  uint16_t *C = (uint16_t *)g->C;
  for (int64_t i = 0; i < g->m; i++) {
    for (int64_t l = 0; l < g->k; l++) a[(size_t)l] = element(g, g->A, i * g->k + l);
    for (int64_t j = 0; j < g->n; j++) {
      const float *bj = b.data() + j * g->k;
      float acc = 0.0f;
      for (int64_t l = 0; l < g->k; l++) acc = fmaf(a[(size_t)l], bj[l], acc);
      C[i * g->n + j] = __bfloat16_as_ushort(__float2bfloat16_rn(g->fp8 ? acc * scale : acc));
    }
  }
  return 0;
}

// gemm.cu's gemm_run: the shared checks, the empty cases, then the product.
int gemm_run(cplab_gemm *h, const gemm_call *g, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, h, "%s: NULL handle", g->name);
  KCHECK_ARG(d, g->m >= 0 && g->n >= 0 && g->k >= 0 && g->m <= INT32_MAX && g->n <= INT32_MAX && g->k <= INT32_MAX,
             "%s: sizes must be in [0, 2^31), got m=%lld n=%lld k=%lld", g->name, (long long)g->m, (long long)g->n,
             (long long)g->k);
  if (g->m == 0 || g->n == 0) return 0;
  KCHECK_ARG(d, g->C, "%s: NULL output", g->name);
  KCHECK_ARG(d, kaligned(g->C, 2), "%s: C must be 2-byte aligned", g->name);
  if (g->k == 0) {
    KCHECK_CUDA(d, cudaMemsetAsync(g->C, 0, (size_t)g->m * (size_t)g->n * 2, kstream(stream)));
    return 0;
  }
  KCHECK_ARG(d, g->A && g->B, "%s: NULL input matrix", g->name);
  return gemm_compute(g, d);
}

} // namespace

extern "C" int cplab_gemm_bf16(cplab_gemm *h, int64_t m, int64_t n, int64_t k, const uint16_t *A, const uint16_t *B,
                               uint16_t *C, void *stream, cplab_diag *d) {
  gemm_call g = {"cplab_gemm_bf16", false, m, n, k, A, B, NULL, NULL, C};
  int rc = gemm_bf16_args(A, B, d);
  return rc ? rc : gemm_run(h, &g, stream, d);
}

extern "C" int cplab_gemm_fp8(cplab_gemm *h, int64_t m, int64_t n, int64_t k, const uint8_t *A, const uint8_t *B,
                              const float *a_scale, const float *b_scale, uint16_t *C, void *stream, cplab_diag *d) {
  gemm_call g = {"cplab_gemm_fp8", true, m, n, k, A, B, a_scale, b_scale, C};
  if (m == 0 || n == 0) return gemm_run(h, &g, stream, d);
  int rc = gemm_fp8_args(m, n, k, A, B, a_scale, b_scale, C, d);
  if (rc) return rc;
  return gemm_run(h, &g, stream, d);
}
