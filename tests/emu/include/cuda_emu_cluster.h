// tests/emu/include/cuda_emu_cluster.h: CPU models of the thread-block
// cluster instructions behind kernels/cluster.cuh (the only header that
// includes this one). Same names and signatures as cluster.cuh's device
// path; the state lives in the runtime (cuda_emu.cpp), which runs the blocks
// of a cluster together, every thread a fiber of one schedule.
//
// A shared::cluster address here is 0xC0000000 | rank << 24 | the offset
// into block `rank`'s dynamic shared memory (the device's encoding is
// another; kernels only add byte offsets to what cluster_map returns, which
// works in both). Checked in every access, aborting with the kernel, block
// and thread: an address cluster_map did not make, a rank outside the
// cluster, an offset not aligned to the access's size or past the dynamic
// shared memory, a block that has already exited (its memory is gone on the
// device: a kernel ends with a cluster_sync when other blocks may still
// access its memory). cluster_map aborts for a pointer outside the calling
// block's dynamic shared memory: static __shared__ variables are one storage
// for every block in the emulation (a cluster launch whose kernel writes
// them aborts at the cluster's end).
//
// Nothing runs concurrently: a load sees every store before it in the
// schedule, an atomic is a plain read-modify-write, cluster_sync's release
// and acquire are implied. A kernel that reads another block's memory
// without a cluster_sync between the write and the read is therefore not
// caught here, unless the schedule (CPLAB_EMU_ORDER=reverse runs the blocks
// of a cluster in the other order) puts the read first.
#ifndef CPLAB_TESTS_EMU_CUDA_EMU_CLUSTER_H
#define CPLAB_TESTS_EMU_CUDA_EMU_CLUSTER_H
#include "../cuda_emu.h"

#include <utility>

static __device__ __forceinline__ unsigned cluster_rank(void) { return cuda_emu::cluster_block_rank(); }
static __device__ __forceinline__ unsigned cluster_blocks(void) { return cuda_emu::cluster_size(); }
static __device__ __forceinline__ void cluster_sync(void) { cuda_emu::cluster_barrier(); }

static __device__ __forceinline__ uint32_t cluster_map(const void *smem, unsigned rank) {
  return cuda_emu::cluster_map_shared(smem, rank);
}

static __device__ __forceinline__ uint32_t cluster_ld_u32(uint32_t addr) {
  uint32_t v;
  memcpy(&v, cuda_emu::cluster_shared_at(addr, 4, "cluster_ld_u32"), 4);
  return v;
}

static __device__ __forceinline__ uint64_t cluster_ld_u64(uint32_t addr) {
  uint64_t v;
  memcpy(&v, cuda_emu::cluster_shared_at(addr, 8, "cluster_ld_u64"), 8);
  return v;
}

static __device__ __forceinline__ void cluster_st_u32(uint32_t addr, uint32_t v) {
  memcpy(cuda_emu::cluster_shared_at(addr, 4, "cluster_st_u32"), &v, 4);
}

static __device__ __forceinline__ void cluster_st_u64(uint32_t addr, uint64_t v) {
  memcpy(cuda_emu::cluster_shared_at(addr, 8, "cluster_st_u64"), &v, 8);
}

static __device__ __forceinline__ uint32_t cluster_atomic_add_u32(uint32_t addr, uint32_t v) {
  uint32_t *p = (uint32_t *)cuda_emu::cluster_shared_at(addr, 4, "cluster_atomic_add_u32");
  uint32_t old = *p;
  *p = old + v;
  return old;
}

static __device__ __forceinline__ uint32_t cluster_atomic_max_u32(uint32_t addr, uint32_t v) {
  uint32_t *p = (uint32_t *)cuda_emu::cluster_shared_at(addr, 4, "cluster_atomic_max_u32");
  uint32_t old = *p;
  *p = old < v ? v : old;
  return old;
}

static __device__ __forceinline__ uint32_t cluster_atomic_min_u32(uint32_t addr, uint32_t v) {
  uint32_t *p = (uint32_t *)cuda_emu::cluster_shared_at(addr, 4, "cluster_atomic_min_u32");
  uint32_t old = *p;
  *p = v < old ? v : old;
  return old;
}

// cluster_launch with the kernel's name for the emulator's messages:
// tools/cuda-emu/cu2emu.py rewrites `cluster_launch(kernel, ...)` into
// `cluster_launch_named("kernel", kernel, ...)`.
template <class... P, class... A>
static inline cudaError_t cluster_launch_named(const char *name, void (*k)(P...), dim3 grid, dim3 block, size_t smem,
                                               cudaStream_t stream, unsigned cluster_x, A &&...args) {
  return cuda_emu::launch_cluster(k, name, grid, block, smem, stream, cluster_x,
                                  cuda_emu::kparams(k, std::forward<A>(args)...));
}

#endif
