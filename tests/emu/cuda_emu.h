// tests/emu/cuda_emu.h: an emulation of the CUDA execution model on the CPU,
// so that the kernels of kernels/*.cu run (and their GPU tests pass or fail)
// on a machine without a GPU. C++20 (g++ 12). Included by the fake CUDA
// headers of tests/emu/include/ (cuda_runtime.h, cuda_bf16.h, cuda_fp8.h);
// tools/cuda-emu/cu2emu.py rewrites each kernels/X.cu into a C++ file whose
// launches `k<<<grid, block, smem, stream>>>(args)` call cuda_emu::launch.
// The runtime behind it is tests/emu/cuda_emu.cpp; cuBLASLt is replaced by a
// host GEMM (tests/emu/gemm_host.cpp).
//
// How a launch runs
//   - Every CUDA thread of a block is a fiber (its own stack, a cooperative
//     user-level context) on the calling OS thread. A fiber runs until it
//     reaches a synchronisation point (__syncthreads*, a warp collective) or
//     returns; then the next runnable thread of the block runs. Blocks run one
//     after the other, in order of blockIdx (x fastest), threads of a block in
//     order of threadIdx; with CPLAB_EMU_ORDER=reverse, both in descending
//     order (the tests/emu wrappers run every test both ways). A launch with
//     thread-block clusters (kernels/cluster.cuh's cluster_launch) runs the
//     blocks of one cluster together instead: all their threads are fibers
//     of one schedule, swept block by block in order of rank (descending
//     with CPLAB_EMU_ORDER=reverse), clusters one after the other. These are
//     schedules a GPU may produce, so a race-free kernel gives the GPU's
//     results; a kernel that relies on an unsynchronised order (a missing
//     barrier) fails in one order or both, or may pass in both: the
//     emulation does not explore interleavings within a barrier interval.
//   - __syncthreads() / _count / _and / _or: a block barrier over the threads
//     that have not exited (exited threads count as arrived, as on sm_70+),
//     per block in a cluster too. cluster_sync: a barrier over every thread
//     of the cluster that has not exited (a launch without clusters has
//     clusters of one block); threads waiting at __syncthreads and at
//     cluster_sync with nothing left to run are a deadlock, reported as for
//     the block barrier.
//   - Warp collectives (__shfl*_sync, __ballot_sync, __any/__all_sync,
//     __syncwarp) wait for every lane named in the mask; every lane in the
//     mask must reach a collective of the same kind. A lane that exits or
//     waits at a block barrier while its warp waits for it is a deadlock: the
//     emulator prints the kernel, block and threads and aborts.
//   - Arguments are evaluated once per launch and converted to the kernel's
//     parameter types; every thread gets its own copy (CUDA's by-value
//     parameters).
//   - Launch configuration errors are reported by cudaGetLastError (and the
//     kernel does not run; cluster_launch also returns them), as on the
//     device: block size 0 or over 1024 threads (x, y <= 1024, z <= 64),
//     grid 0 or over 2^31-1 / 65535 / 65535,
//     dynamic shared memory over the kernel's limit (48 KiB unless raised by
//     cudaFuncSetAttribute(MaxDynamicSharedMemorySize), at most 227 KiB =
//     232448 bytes, sm_90's opt-in maximum); for a cluster launch,
//     cudaErrorInvalidClusterSize when grid.x is not a multiple of the
//     cluster's blocks, or they are 0, over 8 (the portable size) without
//     cudaFuncAttributeNonPortableClusterSizeAllowed, or over 16.
//   - Shared memory: static __shared__ variables are static storage (blocks do
//     not overlap); dynamic `extern __shared__` memory is one buffer per block
//     of the running cluster. Both are filled with 0xFF bytes (float NaN, int
//     -1) before each block (each cluster), so reading shared memory no thread
//     of the block wrote shows up. The blocks of a cluster run together, so
//     their static __shared__ variables would be one: cluster kernels use
//     dynamic shared memory only (a cluster launch of more than one block
//     aborts when its kernel wrote the static section, and cluster_map
//     aborts for memory outside the block's dynamic buffer).
//   - Distributed shared memory (cluster_map, cluster_ld/st/atomic_*): an
//     address names a block of the cluster and an offset into its dynamic
//     buffer; each access checks the rank, the range, the alignment, and
//     that the block has not exited (include/cuda_emu_cluster.h).
//   - Device memory is host memory (cudaMalloc: 256-byte aligned, exactly the
//     size asked, filled with 0xCB bytes, as device memory holds garbage).
//     The runtime tracks the allocations: cudaMemcpy/cudaMemset ranges
//     outside one, or cudaFree of an unknown pointer, return
//     cudaErrorInvalidValue. A kernel's own out-of-bounds access is a host
//     access: undetected in a plain build, reported by AddressSanitizer in a
//     --enable-sanitizers build (the emulated kernels are instrumented too;
//     UBSan checks them as well). Shared memory has no redzones: an access
//     past a shared array is not detected.
//   - Streams do not exist: every call runs to completion before it returns;
//     *Async calls are synchronous, synchronisation calls are no-ops.
//   - Atomics are plain read-modify-writes: nothing runs concurrently.
// Numerics
//   - float and double arithmetic is the host's IEEE arithmetic, without
//     contraction (g++ -ffp-contract=off is the C++ default; nvcc contracts
//     a*b+c into an FMA by default, so a kernel that writes a*b+c may differ
//     from the device in the last bit). fmaf/fma are the C library's fused
//     ones, as on the device.
//   - expf, logf, exp, sqrt, ... are the host's libm (correctly rounded or
//     within 1 ulp), not CUDA's (up to 2 ulp for expf): last-bit differences.
//   - The conversions (include/cuda_bf16.h, cuda_fp8.h) are written from
//     CUDA's rules as include/cplab/fp8.h states them, not from its code:
//     __float2bfloat16_rn rounds to nearest even, every NaN -> 0x7FFF;
//     __nv_cvt_float_to_fp8 rounds to nearest even with the saturation mode
//     given (E4M3 and E5M2); fp8 -> float/bf16 exact. test_emu_self and
//     test_emu_numeric_fp8 (tests/numeric/fp8_device.cu under emulation)
//     check them against cplab/fp8.h, which tests/numeric proved equal to
//     CUDA's on a GPU. E5M2 is checked by nothing (no kernel uses it).
// Compilation: the kernels are host C++20 compiled by g++, not nvcc: an
// intrinsic or API call this header lacks is a compile error, never a silent
// difference; nvcc-only syntax beyond launches and extern __shared__ (e.g.
// inline PTX) is not supported.
// Not emulated: concurrency between blocks or streams, memory fences and
// the memory model (cluster_sync's release/acquire included), cooperative
// groups, clusters along y or z, __cluster_dims__, a device's limit on the
// clusters that fit at once (cudaOccupancyMaxActiveClusters), textures,
// clock(), device-side
// assert and trap, cudaMemcpyToSymbol, cudaMallocHost/managed memory,
// multiple devices, dynamic parallelism (a launch inside a kernel aborts),
// launches from several host threads at once (the runtime is not
// thread-safe; the tests launch from one thread).
// printf in a kernel prints in the emulation's schedule order.
// Tensor-core instructions (mma.sync, ldmatrix, cp.async) are modelled from
// the PTX ISA's fragment layouts in include/cuda_emu_mma.h, behind the device
// functions of kernels/mma.cuh; see there for what the models check. The
// cluster instructions of kernels/cluster.cuh likewise in
// include/cuda_emu_cluster.h (cu2emu.py gives its cluster_launch calls the
// kernel's name).
#ifndef CPLAB_TESTS_EMU_CUDA_EMU_H
#define CPLAB_TESTS_EMU_CUDA_EMU_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

// Kernel headers that have an emulated path (kernels/mma.cuh) test this.
#define CPLAB_CUDA_EMU 1

// ---- qualifiers ------------------------------------------------------------------
// Only CUDA's own keywords, never a name the C or C++ library uses (libstdc++
// writes __attribute__((__noinline__)): a __noinline__ macro broke it).
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __constant__
// Static shared memory lives in its own section, so that the runtime can
// poison it before each block (__start_/__stop_cuda_emu_shared).
#define __shared__ __attribute__((section("cuda_emu_shared"))) static

// ---- vector types ------------------------------------------------------------------
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(16) ulonglong2 {
  unsigned long long x, y;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
static inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

// ---- built-in variables: the running fiber's ------------------------------------------
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
static constexpr int warpSize = 32;

// ---- runtime API types -----------------------------------------------------------------
typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorInvalidDevice = 101,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotSupported = 801,
  cudaErrorInvalidClusterSize = 912,
  cudaErrorUnknown = 999
} cudaError_t;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
  cudaFuncAttributeNonPortableClusterSizeAllowed = 14
};

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int major, minor;
  int multiProcessorCount;
};

// The sm_90 limits the launch checks use.
#define CUDA_EMU_MAX_THREADS 1024
#define CUDA_EMU_SMEM_DEFAULT 49152
#define CUDA_EMU_SMEM_OPTIN 232448
// Blocks in a thread-block cluster: 8 portable, 16 with the kernel's
// cudaFuncAttributeNonPortableClusterSizeAllowed.
#define CUDA_EMU_CLUSTER_PORTABLE 8
#define CUDA_EMU_CLUSTER_MAX 16

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int dev);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int dev);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaMalloc(void **ptr, size_t bytes);
template <class T> static inline cudaError_t cudaMalloc(T **ptr, size_t bytes) { return cudaMalloc((void **)ptr, bytes); }
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = nullptr);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t s = nullptr);
cudaError_t cudaMemset(void *ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t s = nullptr);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t err);
const char *cudaGetErrorName(cudaError_t err);

namespace cuda_emu {
// The runtime (cuda_emu.cpp).
cudaError_t func_set_max_dynamic_smem(const void *kernel, int bytes);
void *dynamic_shared(void);
typedef void (*thread_body)(void *ctx);
void launch_erased(const void *kernel, const char *name, dim3 grid, dim3 block, size_t smem, thread_body body,
                   void *ctx);
// A launch with thread-block clusters of cluster_x blocks along x (the
// models of kernels/cluster.cuh, include/cuda_emu_cluster.h): the error is
// also recorded for cudaGetLastError, as the device's cudaLaunchKernelEx does.
cudaError_t launch_cluster_erased(const void *kernel, const char *name, dim3 grid, dim3 block, size_t smem,
                                  unsigned cluster_x, thread_body body, void *ctx);
cudaError_t func_set_nonportable_cluster(const void *kernel, int allowed);
// The running thread's cluster: its block's rank, the number of blocks.
unsigned cluster_block_rank(void);
unsigned cluster_size(void);
// barrier.cluster: every thread of the cluster that has not exited.
void cluster_barrier(void);
// The shared::cluster address of p (in the calling block's dynamic shared
// memory) in block `rank`'s, and the host pointer behind such an address
// (range, alignment and rank checked; `what` names the instruction).
uint32_t cluster_map_shared(const void *p, unsigned rank);
void *cluster_shared_at(uint32_t addr, size_t bytes, const char *what);
// Warp and block collectives.
enum collective { COLL_SHFL_IDX, COLL_SHFL_XOR, COLL_SHFL_UP, COLL_SHFL_DOWN, COLL_BALLOT, COLL_SYNCWARP, COLL_GATHER };
uint64_t warp_collective(collective kind, unsigned mask, uint64_t value, int arg, int width);
enum block_reduce { BAR_PLAIN, BAR_COUNT, BAR_AND, BAR_OR };
int block_barrier(block_reduce kind, int pred);
// Is p inside a cudaMalloc'd allocation (bytes of it)?
bool is_device_range(const void *p, size_t bytes);
// Is p inside the block's shared memory (static or dynamic, bytes of it)?
bool is_shared_range(const void *p, size_t bytes);
// Every lane of mask gives a value and gets the array of all 32 lanes'
// values (lanes outside the mask: stale). The array stays valid until the
// calling lane's next warp collective; the warp-wide matrix instructions of
// cuda_emu_mma.h exchange their fragments through it.
const uint64_t *warp_gather(unsigned mask, uint64_t value);

// The parameters of kernel k from the launch's arguments, converted as a call
// converts them (the arguments are not deduced: NULL for a pointer works).
template <class... P> static inline std::tuple<P...> kparams(void (*)(P...), std::type_identity_t<P>... args) {
  return std::tuple<P...>(args...);
}

template <class... P> struct launch_ctx {
  void (*kernel)(P...);
  const std::tuple<P...> *params;
  static void run(void *p) {
    const launch_ctx *c = (const launch_ctx *)p;
    std::tuple<P...> mine = *c->params; // this thread's copy of the parameters
    std::apply(c->kernel, mine);
  }
};

// k<<<grid, block, smem, stream>>>(args) after tools/cuda-emu/cu2emu.py.
template <class... P>
static inline void launch(void (*kernel)(P...), const char *name, dim3 grid, dim3 block, size_t smem, cudaStream_t,
                          std::tuple<P...> params) {
  launch_ctx<P...> c = {kernel, &params};
  launch_erased(reinterpret_cast<const void *>(kernel), name, grid, block, smem, &launch_ctx<P...>::run, &c);
}

// kernels/cluster.cuh's cluster_launch (cudaLaunchKernelEx with a cluster
// dimension on the device).
template <class... P>
static inline cudaError_t launch_cluster(void (*kernel)(P...), const char *name, dim3 grid, dim3 block, size_t smem,
                                         cudaStream_t, unsigned cluster_x, std::tuple<P...> params) {
  launch_ctx<P...> c = {kernel, &params};
  return launch_cluster_erased(reinterpret_cast<const void *>(kernel), name, grid, block, smem, cluster_x,
                               &launch_ctx<P...>::run, &c);
}

template <class T> static inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffle of a type over 8 bytes");
  uint64_t u = 0;
  memcpy(&u, &v, sizeof v);
  return u;
}
template <class T> static inline T from_bits(uint64_t u) {
  T v;
  memcpy(&v, &u, sizeof v);
  return v;
}
} // namespace cuda_emu

template <class K> static inline cudaError_t cudaFuncSetAttribute(K kernel, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize)
    return cuda_emu::func_set_max_dynamic_smem(reinterpret_cast<const void *>(kernel), value);
  if (attr == cudaFuncAttributeNonPortableClusterSizeAllowed)
    return cuda_emu::func_set_nonportable_cluster(reinterpret_cast<const void *>(kernel), value);
  return cudaSuccess;
}

// ---- synchronisation and warp intrinsics ---------------------------------------------
static inline void __syncthreads(void) { cuda_emu::block_barrier(cuda_emu::BAR_PLAIN, 0); }
static inline int __syncthreads_count(int p) { return cuda_emu::block_barrier(cuda_emu::BAR_COUNT, p != 0); }
static inline int __syncthreads_and(int p) { return cuda_emu::block_barrier(cuda_emu::BAR_AND, p != 0); }
static inline int __syncthreads_or(int p) { return cuda_emu::block_barrier(cuda_emu::BAR_OR, p != 0); }
static inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) {
  cuda_emu::warp_collective(cuda_emu::COLL_SYNCWARP, mask, 0, 0, 32);
}
template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return cuda_emu::from_bits<T>(cuda_emu::warp_collective(cuda_emu::COLL_SHFL_IDX, mask, cuda_emu::to_bits(v), src, width));
}
template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return cuda_emu::from_bits<T>(
      cuda_emu::warp_collective(cuda_emu::COLL_SHFL_XOR, mask, cuda_emu::to_bits(v), lane_mask, width));
}
template <class T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return cuda_emu::from_bits<T>(
      cuda_emu::warp_collective(cuda_emu::COLL_SHFL_UP, mask, cuda_emu::to_bits(v), (int)delta, width));
}
template <class T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return cuda_emu::from_bits<T>(
      cuda_emu::warp_collective(cuda_emu::COLL_SHFL_DOWN, mask, cuda_emu::to_bits(v), (int)delta, width));
}
static inline unsigned __ballot_sync(unsigned mask, int p) {
  return (unsigned)cuda_emu::warp_collective(cuda_emu::COLL_BALLOT, mask, p != 0, 0, 32);
}
static inline int __any_sync(unsigned mask, int p) { return __ballot_sync(mask, p) != 0; }
static inline int __all_sync(unsigned mask, int p) { return (__ballot_sync(mask, p) & mask) == mask; }
static inline unsigned __activemask(void) { return 0xFFFFFFFFu; }

// ---- integer and bit intrinsics --------------------------------------------------------
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline unsigned __float_as_uint(float f) { return cuda_emu::from_bits<unsigned>(cuda_emu::to_bits(f)); }
static inline float __uint_as_float(unsigned u) { return cuda_emu::from_bits<float>(u); }
static inline int __float_as_int(float f) { return (int)__float_as_uint(f); }
static inline float __int_as_float(int i) { return __uint_as_float((unsigned)i); }
static inline long long __double_as_longlong(double d) { return cuda_emu::from_bits<long long>(cuda_emu::to_bits(d)); }
static inline double __longlong_as_double(long long u) { return cuda_emu::from_bits<double>((uint64_t)u); }

// min/max as CUDA's overloads: the usual arithmetic conversions of the two
// operands (int64 with int gives int64, unsigned with unsigned unsigned).
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
static inline std::common_type_t<A, B> min(A a, B b) {
  typedef std::common_type_t<A, B> T;
  return (T)b < (T)a ? (T)b : (T)a;
}
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
static inline std::common_type_t<A, B> max(A a, B b) {
  typedef std::common_type_t<A, B> T;
  return (T)a < (T)b ? (T)b : (T)a;
}

// ---- atomics: nothing runs concurrently, so a read-modify-write is atomic ------------
template <class T> static inline T atomicAdd(T *a, T v) {
  T old = *a;
  *a = old + v;
  return old;
}
template <class T> static inline T atomicSub(T *a, T v) {
  T old = *a;
  *a = old - v;
  return old;
}
template <class T> static inline T atomicOr(T *a, T v) {
  T old = *a;
  *a = old | v;
  return old;
}
template <class T> static inline T atomicAnd(T *a, T v) {
  T old = *a;
  *a = old & v;
  return old;
}
template <class T> static inline T atomicXor(T *a, T v) {
  T old = *a;
  *a = old ^ v;
  return old;
}
template <class T> static inline T atomicMax(T *a, T v) {
  T old = *a;
  *a = old < v ? v : old;
  return old;
}
template <class T> static inline T atomicMin(T *a, T v) {
  T old = *a;
  *a = v < old ? v : old;
  return old;
}
template <class T> static inline T atomicExch(T *a, T v) {
  T old = *a;
  *a = v;
  return old;
}
template <class T> static inline T atomicCAS(T *a, T cmp, T v) {
  T old = *a;
  if (old == cmp) *a = v;
  return old;
}
static inline void __threadfence(void) {}
static inline void __threadfence_block(void) {}

// ---- math: the host's (see the limits above) --------------------------------------------
// The _rn intrinsics: one IEEE operation rounded to nearest even, never
// contracted with another (a call each; the host's default rounding mode).
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); } // one rounding, as the GPU's
using std::isinf;
using std::isnan;
using std::isfinite;
using std::signbit;

#endif
