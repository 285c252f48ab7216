// kernels/cluster.cuh: thread-block clusters and distributed shared memory
// (sm_90+): every cluster instruction the kernels use, as small device
// functions, the only place with their inline PTX, and cluster_launch, the
// launch with a cluster dimension. Under the CPU emulation (tests/emu,
// CPLAB_CUDA_EMU) the same functions are the models of
// tests/emu/include/cuda_emu_cluster.h, so a cluster kernel runs in every
// `make check` (tests/emu/test_emu_self.cu checks the models). A new
// instruction gets its device function here and its model there.
//
//   cluster_rank, cluster_blocks: %cluster_ctarank, %cluster_nctarank (0 and
//     1 in a launch without clusters).
//   cluster_sync: barrier.cluster arrive (release) + wait (acquire), by every
//     thread of every block of the cluster (.aligned: all threads of a warp
//     together); the shared-memory writes before it, in any block, are
//     visible to the reads after it in every block. Exited threads count as
//     arrived.
//   cluster_map(p, rank): the shared::cluster address of the bytes at p (in
//     this block's shared memory) in block `rank`'s shared memory (mapa).
//     Adding a byte offset to it addresses the bytes that far from p there.
//   cluster_ld/st_u32/u64, cluster_atomic_add/max/min_u32: accesses through
//     such an address (naturally aligned); the atomics are relaxed and
//     return the old value.
// A block's shared memory exists while the block runs: a block whose memory
// other blocks access ends with a cluster_sync after their last access.
//
// Emulation limits (see cuda_emu_cluster.h): cluster kernels use dynamic
// (extern __shared__) shared memory only (static __shared__ variables are
// one storage for all blocks there; the emulator aborts when a cluster
// kernel writes them or maps them), and no memory ordering is emulated.
//
// cluster_launch(k, grid, block, smem, stream, cluster_x, args...):
// k<<<grid, block, smem, stream>>>(args...) with clusters of cluster_x
// blocks along x; the rank of a block is blockIdx.x % cluster_x. Errors
// returned (and kept for cudaGetLastError), the kernel not run, when grid.x
// is not a multiple of cluster_x, cluster_x is 0, or over 8 (the portable
// size) without cudaFuncSetAttribute(k,
// cudaFuncAttributeNonPortableClusterSizeAllowed, 1), or over 16 (sm_90's
// most): cudaErrorInvalidClusterSize in the emulation (the device's runtime
// may name another error for some of them). A device may still refuse a
// legal size whose blocks do not fit on one GPC at once
// (cudaOccupancyMaxActiveClusters); the emulation has no such limit.
//
// sm_90 and later (the build's sm_90a and sm_100 targets and their PTX);
// compiled for an older target, the device functions trap.
#ifndef CPLAB_KERNELS_CLUSTER_CUH
#define CPLAB_KERNELS_CLUSTER_CUH

#include <cuda_runtime.h>

#include <stdint.h>

#include <utility>

#ifdef CPLAB_CUDA_EMU
#include <cuda_emu_cluster.h>

template <class... P, class... A>
static inline cudaError_t cluster_launch(void (*k)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                         unsigned cluster_x, A &&...args) {
  return cluster_launch_named("(a cluster_launch kernel)", k, grid, block, smem, stream, cluster_x,
                              std::forward<A>(args)...);
}
#else

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define CPLAB_CLUSTER_ASM(...) __trap()
#else
#define CPLAB_CLUSTER_ASM(...) asm volatile(__VA_ARGS__)
#endif

static __device__ __forceinline__ unsigned cluster_rank(void) {
  unsigned r = 0;
  CPLAB_CLUSTER_ASM("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

static __device__ __forceinline__ unsigned cluster_blocks(void) {
  unsigned n = 1;
  CPLAB_CLUSTER_ASM("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
  return n;
}

static __device__ __forceinline__ void cluster_sync(void) {
  CPLAB_CLUSTER_ASM("barrier.cluster.arrive.release.aligned;\n"
                    "barrier.cluster.wait.acquire.aligned;\n" ::
                        : "memory");
}

static __device__ __forceinline__ uint32_t cluster_map(const void *smem, unsigned rank) {
  uint32_t local = (uint32_t)__cvta_generic_to_shared(smem), remote = 0;
  CPLAB_CLUSTER_ASM("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}

// The accesses clobber "memory": the compiler keeps them in program order
// with the barriers and with this thread's other shared-memory accesses.
static __device__ __forceinline__ uint32_t cluster_ld_u32(uint32_t addr) {
  uint32_t v = 0;
  CPLAB_CLUSTER_ASM("ld.shared::cluster.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

static __device__ __forceinline__ uint64_t cluster_ld_u64(uint32_t addr) {
  uint64_t v = 0;
  CPLAB_CLUSTER_ASM("ld.shared::cluster.u64 %0, [%1];\n" : "=l"(v) : "r"(addr) : "memory");
  return v;
}

static __device__ __forceinline__ void cluster_st_u32(uint32_t addr, uint32_t v) {
  CPLAB_CLUSTER_ASM("st.shared::cluster.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}

static __device__ __forceinline__ void cluster_st_u64(uint32_t addr, uint64_t v) {
  CPLAB_CLUSTER_ASM("st.shared::cluster.u64 [%0], %1;\n" ::"r"(addr), "l"(v) : "memory");
}

static __device__ __forceinline__ uint32_t cluster_atomic_add_u32(uint32_t addr, uint32_t v) {
  uint32_t old = 0;
  CPLAB_CLUSTER_ASM("atom.shared::cluster.add.u32 %0, [%1], %2;\n" : "=r"(old) : "r"(addr), "r"(v) : "memory");
  return old;
}

static __device__ __forceinline__ uint32_t cluster_atomic_max_u32(uint32_t addr, uint32_t v) {
  uint32_t old = 0;
  CPLAB_CLUSTER_ASM("atom.shared::cluster.max.u32 %0, [%1], %2;\n" : "=r"(old) : "r"(addr), "r"(v) : "memory");
  return old;
}

static __device__ __forceinline__ uint32_t cluster_atomic_min_u32(uint32_t addr, uint32_t v) {
  uint32_t old = 0;
  CPLAB_CLUSTER_ASM("atom.shared::cluster.min.u32 %0, [%1], %2;\n" : "=r"(old) : "r"(addr), "r"(v) : "memory");
  return old;
}

#undef CPLAB_CLUSTER_ASM

template <class... P, class... A>
static cudaError_t cluster_launch(void (*k)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                  unsigned cluster_x, A &&...args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster_x;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, k, std::forward<A>(args)...);
}

#endif
#endif
