// kernels/mma.cuh: every tensor-core and asynchronous-copy instruction the
// kernels use, as small device functions: the only place with their inline
// PTX. Under the CPU emulation (tests/emu, CPLAB_CUDA_EMU) the same functions
// are the models of tests/emu/include/cuda_emu_mma.h, written from the PTX
// ISA's fragment layouts, so a kernel built on them runs in every
// `make check`. A new instruction gets its device function here and its
// model there, with a case in tests/emu/test_emu_self.cu.
//
// Fragment layouts (lane l: group g = l / 4, index t = l % 4; a word holds
// two bf16, the lower column in the low half):
//   mma_m16n8k16_bf16: A 16x16 row-major in a[4]: a0 = A[g][2t..], a1 =
//     A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]; B 16x8 in b[2]:
//     b0 = B[2t..][g], b1 = B[2t+8..][g]; D += A·B in d[4]: d0, d1 =
//     D[g][2t, 2t+1], d2, d3 = D[g+8][2t, 2t+1]; fp32 accumulation.
//   ldmatrix_x4: lanes 8i..8i+7 give the 16-byte-aligned shared-memory rows
//     of 8x8 matrix i; r[i] = that matrix's row g, elements 2t, 2t+1 (the A
//     and B fragments above are such matrices). _trans: elements (2t, g),
//     (2t+1, g) of the matrix as stored.
//   cp_async_16: 16 bytes global -> shared, bypassing L1 (.cg), or 16 zero
//     bytes when !valid; cp_async_commit closes a group of copies,
//     cp_async_wait<N> waits until at most N groups are still in flight
//     (then a barrier makes the data visible to the other threads).
// sm_80 and later: the build's sm_90 and sm_100 targets have them all.
#ifndef CPLAB_KERNELS_MMA_CUH
#define CPLAB_KERNELS_MMA_CUH

#include <cuda_runtime.h>

#include <stdint.h>

#ifdef CPLAB_CUDA_EMU
#include <cuda_emu_mma.h>
#else

static __device__ __forceinline__ void mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

static __device__ __forceinline__ uint32_t mma_smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(mma_smem_addr(row)));
}

static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(mma_smem_addr(row)));
}

static __device__ __forceinline__ void cp_async_16(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(mma_smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}

static __device__ __forceinline__ void cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }

template <int N> static __device__ __forceinline__ void cp_async_wait(void) {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

#endif
#endif
