// The argument rules of the GEMM launchers (cplab_kernels.h), shared by
// kernels/gemm.cu and its CPU stand-in tests/emu/gemm_host.cpp, so that the
// emulation refuses exactly what the device wrapper refuses. Each returns 0
// or CPLAB_EINVAL with the message in d. Needs check.cuh first.
#ifndef CPLAB_GEMM_ARGS_CUH
#define CPLAB_GEMM_ARGS_CUH

static inline int gemm_bf16_args(const void *A, const void *B, cplab_diag *d) {
  KCHECK_ARG(d, kaligned(A, 2) && kaligned(B, 2), "cplab_gemm_bf16: A and B must be 2-byte aligned");
  return 0;
}

// For m, n > 0 (an empty product needs no further check).
static inline int gemm_fp8_args(int64_t m, int64_t n, int64_t k, const void *A, const void *B, const float *a_scale,
                                const float *b_scale, const void *C, cplab_diag *d) {
  // cuBLASLt's fp8 kernels need every dimension a multiple of 16 and 16-byte
  // aligned matrices (the tensor-core requirements its documentation lists
  // for fp8); outside them the heuristic finds nothing, so say why here.
  KCHECK_ARG(d, m % 16 == 0 && n % 16 == 0 && k % 16 == 0,
             "cplab_gemm_fp8: m, n and k must be multiples of 16 (cuBLASLt fp8 kernels), got m=%lld n=%lld k=%lld",
             (long long)m, (long long)n, (long long)k);
  KCHECK_ARG(d, kaligned(A, 16) && kaligned(B, 16) && kaligned(C, 16),
             "cplab_gemm_fp8: A, B and C must be 16-byte aligned (cuBLASLt fp8 kernels)");
  KCHECK_ARG(d, a_scale && b_scale, "cplab_gemm_fp8: NULL scale pointer (per-tensor fp32 scales in device memory)");
  // cuBLASLt refuses every fp8 algorithm (NOT_SUPPORTED) when a scale sits
  // at a 4-byte offset (seen on an H200, CUDA 13): 16 bytes are asked here.
  KCHECK_ARG(d, kaligned(a_scale, 16) && kaligned(b_scale, 16),
             "cplab_gemm_fp8: a_scale and b_scale must be 16-byte aligned (cuBLASLt refuses the GEMM otherwise)");
  return 0;
}

#endif
