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
//   mma_m16n8k32_e4m3: the same with bytes: A 16x32 e4m3 row-major, a0 =
//     A[g][4t..4t+3], a1 = A[g+8][4t..], a2 = A[g][4t+16..], a3 =
//     A[g+8][4t+16..]; B 32x8 (stored N rows of K bytes) b0 = B[4t..4t+3][g],
//     b1 = B[4t+16..][g]; D as above. ldmatrix_x4 of K-major byte rows gives
//     both (a b16 pair is 2 bytes: register i = bytes 4t..4t+3 of row g).
//   ldmatrix_x4: lanes 8i..8i+7 give the 16-byte-aligned shared-memory rows
//     of 8x8 matrix i; r[i] = that matrix's row g, elements 2t, 2t+1 (the A
//     and B fragments above are such matrices). _trans: elements (2t, g),
//     (2t+1, g) of the matrix as stored.
//   cp_async_16: 16 bytes global -> shared, bypassing L1 (.cg), or 16 zero
//     bytes when !valid; cp_async_commit closes a group of copies,
//     cp_async_wait<N> waits until at most N groups are still in flight
//     (then a barrier makes the data visible to the other threads).
//     cp_async_4: the same for 4 bytes (4-byte aligned), through L1 (.ca:
//     the only form of the small sizes).
//   bulk_copy_g2s (cp.async.bulk, sm_90+): one thread copies `bytes`
//     (a multiple of 16, both addresses 16-byte aligned, < 2^20) global ->
//     shared; the copy completes on an mbarrier's transaction count.
//     mbar_init(bar, 1) once (then a barrier); per copy the issuing thread
//     calls mbar_arrive_expect_tx(bar, bytes) and bulk_copy_g2s; readers
//     call mbar_wait(bar, parity), parity 0 for the barrier's first
//     completed phase, 1 for the second, and so on.
//   bulk_prefetch_l2 (cp.async.bulk.prefetch.L2, sm_90+): a hint that
//     `bytes` (a multiple of 16, 16-byte aligned, < 2^20) of global memory
//     will be read soon: they are brought into L2; nothing completes, nothing
//     to wait for.
// sm_80 and later: the build's sm_90 and sm_100 targets have them all. But
// Hopper has no fp8 mma.sync in hardware: ptxas lowers mma_m16n8k32_e4m3 on
// sm_90 to f16 HMMA pairs behind byte conversions (~5x the instructions;
// ncu of the decode logits kernel, bench/NOTES.md), so sm_90a kernels take
// wgmma for fp8 (below) and keep mma.sync for the other targets.
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

static __device__ __forceinline__ void mma_m16n8k32_e4m3(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

static __device__ __forceinline__ uint32_t mma_smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// p rounded up to the next multiple of `align` (a power of two) in the
// shared address space (wgmma's swizzle atoms are aligned there).
static __device__ __forceinline__ unsigned char *mma_align_smem(void *p, uint32_t align) {
  uint32_t a = mma_smem_addr(p);
  return (unsigned char *)p + ((align - (a & (align - 1))) & (align - 1));
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

static __device__ __forceinline__ void cp_async_4(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(mma_smem_addr(dst)), "l"(src), "r"(valid ? 4 : 0));
}

static __device__ __forceinline__ void cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }

template <int N> static __device__ __forceinline__ void cp_async_wait(void) {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

static __device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(mma_smem_addr(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

static __device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(mma_smem_addr(bar)), "r"(bytes)
               : "memory");
}

static __device__ __forceinline__ void bulk_copy_g2s(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   mma_smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(mma_smem_addr(bar))
               : "memory");
}

static __device__ __forceinline__ void bulk_prefetch_l2(const void *src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}

// Shared memory written (or read) by ordinary accesses or cp.async, then
// accessed by the async proxy (wgmma reads, bulk copies' writes): each such
// thread fences before the barrier that orders them (sm_90+).
static __device__ __forceinline__ void fence_proxy_async(void) {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

static __device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "MBAR_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra MBAR_WAIT;\n"
               "}\n" ::"r"(mma_smem_addr(bar)),
               "r"(parity)
               : "memory");
}

#endif

// ---- Hopper's warpgroup MMA (sm_90a only; not emulated) -------------------------
// CPLAB_HAVE_WGMMA is defined where the device code is built for sm_90a
// (nvcc defines __CUDA_ARCH_FEAT_SM90_ALL there); kernels keep an mma.sync
// path for every other target, the emulation included, with the same
// fragment ownership: a warpgroup's m64nN accumulator is, warp by warp, the
// m16nN of mma_m16n8k16_bf16's layout (warp w of the group holds rows
// 16w..16w+15; d[i][0..3] is its n8 tile i). What runs only here is tested
// on the GPU only (tests/gpu/test_gpu_attention.c on an H200).
//
// Operands in shared memory are read through 64-bit descriptors. Both forms
// used here are 128-byte swizzled: rows of 128 bytes (64 bf16), 8 rows an
// atom of 1024 bytes (atoms 1024-byte aligned), 16-byte chunk c of row r of
// an atom stored at chunk c ^ (r % 8):
//   K-major (the K dimension along the 128-byte row): atoms stacked along
//     M/N every sbo bytes; a k16 step further along the row is the start
//     address + 32 bytes;
//   MN-major (M/N along the row, imm-trans 1): K rows within an atom, atoms
//     stacked along K every sbo bytes and along M/N (64 elements further)
//     every lbo bytes.
#if !defined(CPLAB_CUDA_EMU) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CPLAB_HAVE_WGMMA 1

static __device__ __forceinline__ uint64_t wgmma_desc(const void *smem, uint32_t lbo, uint32_t sbo) {
  uint64_t addr = mma_smem_addr(smem);
  return ((addr & 0x3FFFFu) >> 4) | (uint64_t)((lbo >> 4) & 0x3FFFu) << 16 | (uint64_t)((sbo >> 4) & 0x3FFFu) << 32 |
         1ull << 62; // 128-byte swizzle
}

static __device__ __forceinline__ void wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
static __device__ __forceinline__ void wgmma_commit(void) {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> static __device__ __forceinline__ void wgmma_wait(void) {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// After wgmma_wait: pins an accumulator so that no read of it moves above
// the wait (the asm statements that wrote it are asynchronous).
static __device__ __forceinline__ void wgmma_fence_operand(float &r) { asm volatile("" : "+f"(r)::"memory"); }

// d += A · B, A 64 x 16 and B 16 x N bf16 from their descriptors, fp32 d;
// TRANS_B 1: B MN-major.
template <int TRANS_B>
static __device__ __forceinline__ void wgmma_m64n32k16_bf16(float d[4][4], uint64_t desc_a, uint64_t desc_b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
               "}, %16, %17, p, 1, 1, 0, %19;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                 "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
               : "l"(desc_a), "l"(desc_b), "r"(1), "n"(TRANS_B));
}

// The 128 accumulator registers of an m64n256 wgmma: their operand numbers
// in the instruction text, and the operands (d[32][4] of each thread).
#define WGMMA_N256_REGS \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WGMMA_N256_D(d) \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), \
  "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), \
  "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
  "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), \
  "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), \
  "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), \
  "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), \
  "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), \
  "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), \
  "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), \
  "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), \
  "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), \
  "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]), \
  "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]), \
  "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), \
  "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3])

template <int TRANS_B>
static __device__ __forceinline__ void wgmma_m64n256k16_bf16(float d[32][4], uint64_t desc_a, uint64_t desc_b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
               WGMMA_N256_REGS
               "}, %128, %129, p, 1, 1, 0, %131;\n}\n"
               : WGMMA_N256_D(d)
               : "l"(desc_a), "l"(desc_b), "r"(1), "n"(TRANS_B));
}

// d += A · B, A 64 x 32 and B 32 x 256 e4m3 from their descriptors (both
// K-major: fp8 wgmma has no transposed form), fp32 d.
static __device__ __forceinline__ void wgmma_m64n256k32_e4m3(float d[32][4], uint64_t desc_a, uint64_t desc_b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
               WGMMA_N256_REGS
               "}, %128, %129, p, 1, 1;\n}\n"
               : WGMMA_N256_D(d)
               : "l"(desc_a), "l"(desc_b), "r"(1));
}

// d += A · B, A 64 x 32 e4m3 from registers (a[0..3] of each thread: the
// fragment of mma_m16n8k32_e4m3's A, warp w holding rows 16w..16w+15) and B
// 32 x 8·NT e4m3 K-major from its descriptor, fp32 d[NT][4]. The registers
// must be written before the wgmma_fence that precedes the call.
static __device__ __forceinline__ void wgmma_m64n16k32_e4m3_ra(float (&d)[2][4], const uint32_t a[4], uint64_t desc_b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7}, "
               "{%8, %9, %10, %11}, %12, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
static __device__ __forceinline__ void wgmma_m64n32k32_e4m3_ra(float (&d)[4][4], const uint32_t a[4], uint64_t desc_b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
               "{%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
static __device__ __forceinline__ void wgmma_m64n64k32_e4m3_ra(float (&d)[8][4], const uint32_t a[4], uint64_t desc_b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
               "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
static __device__ __forceinline__ void wgmma_m64n128k32_e4m3_ra(float (&d)[16][4], const uint32_t a[4], uint64_t desc_b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
               "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
template <int NT>
static __device__ __forceinline__ void wgmma_e4m3_ra(float (&d)[NT][4], const uint32_t a[4], uint64_t desc_b) {
  static_assert(NT == 2 || NT == 4 || NT == 8 || NT == 16, "N = 16, 32, 64 or 128");
  if constexpr (NT == 2) wgmma_m64n16k32_e4m3_ra(d, a, desc_b);
  else if constexpr (NT == 4) wgmma_m64n32k32_e4m3_ra(d, a, desc_b);
  else if constexpr (NT == 8) wgmma_m64n64k32_e4m3_ra(d, a, desc_b);
  else wgmma_m64n128k32_e4m3_ra(d, a, desc_b);
}
#endif

// What the block's threads wrote to shared memory (ordinary stores, or
// cp.async copies each thread waited for) is visible to every thread and to
// the next products (wgmma reads through the async proxy: each writer
// fences before the barrier).
static __device__ __forceinline__ void mma_smem_ready(void) {
#ifdef CPLAB_HAVE_WGMMA
  fence_proxy_async();
#endif
  __syncthreads();
}

#endif
