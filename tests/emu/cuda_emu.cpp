// tests/emu/cuda_emu.cpp: the runtime of the CUDA emulation (cuda_emu.h says
// what is emulated and how): device memory, errors, the device's properties,
// and launches, each CUDA thread a fiber on the calling OS thread.
#include "cuda_emu.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

// At least one object in the static shared-memory section, so that the
// linker defines its bounds.
__attribute__((section("cuda_emu_shared"), used)) static unsigned char cuda_emu_shared_anchor[16];
extern "C" unsigned char __start_cuda_emu_shared[], __stop_cuda_emu_shared[];

namespace {

// ---- errors -------------------------------------------------------------------------

cudaError_t last_error = cudaSuccess;

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) last_error = e;
  return e;
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "cuda_emu: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  fflush(stderr);
  abort();
}

// ---- device memory -----------------------------------------------------------------------

std::map<uintptr_t, size_t> &allocations() {
  static std::map<uintptr_t, size_t> m;
  return m;
}

// Is [p, p + n) inside one allocation?
bool in_allocation(const void *p, size_t n) {
  uintptr_t a = (uintptr_t)p;
  auto &m = allocations();
  auto it = m.upper_bound(a);
  if (it == m.begin()) return false;
  --it;
  return a >= it->first && n <= it->second && a - it->first <= it->second - n;
}

// ---- fibers ------------------------------------------------------------------------------

#define STACK_BYTES ((size_t)256 << 10)

enum fstate { RUNNABLE, AT_BARRIER, AT_WARP, DONE };

struct fiber {
#if defined(__x86_64__)
  void *sp = nullptr;
#else
  ucontext_t ctx;
#endif
  char *stack = nullptr; // STACK_BYTES, the lowest page a guard
  fstate state = DONE;
  uint3 tid = {0, 0, 0};
};

struct warp_state {
  unsigned arrived = 0, mask = 0;
  cuda_emu::collective kind = cuda_emu::COLL_SYNCWARP;
  int width = 32;
  uint64_t value[32], result[32];
  int arg[32];
  // COLL_GATHER: every lane's value as the last lane found them. Written only
  // when a gather completes, which needs every lane of the mask, so no lane
  // can still be reading the previous one.
  uint64_t gathered[32];
};

struct launch_state {
  const char *name = "";
  cuda_emu::thread_body body = nullptr;
  void *ctx = nullptr;
  int nthreads = 0, current = -1;
  int at_barrier = 0, done = 0;
  cuda_emu::block_reduce bar_kind = cuda_emu::BAR_PLAIN;
  int bar_acc = 0, bar_result = 0;
  std::vector<warp_state> warps;
  unsigned char *dyn_smem = nullptr;
  size_t dyn_bytes = 0;
};

std::vector<fiber> fibers;
launch_state L;
bool in_launch = false;
#if defined(__x86_64__)
void *sched_sp = nullptr;
#else
ucontext_t sched_ctx;
#endif
#if defined(__SANITIZE_ADDRESS__)
void *sched_fake_stack = nullptr;
const void *sched_stack_bottom = nullptr;
size_t sched_stack_size = 0;
#endif

#if defined(__x86_64__)
// cuda_emu_switch(&save_sp, new_sp): save the callee-saved registers on the
// current stack, switch stacks, restore the other context's.
extern "C" void cuda_emu_switch(void **save, void *to);
asm(R"(
.pushsection .text
.p2align 4
.type cuda_emu_switch,@function
cuda_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size cuda_emu_switch, .-cuda_emu_switch
.popsection
)");
#endif

void fiber_main();
void barrier_try_release();

#if defined(__x86_64__)
extern "C" void cuda_emu_fiber_entry(void) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(nullptr, &sched_stack_bottom, &sched_stack_size);
#endif
  fiber_main();
}
#endif

void to_scheduler() {
  fiber &f = fibers[L.current];
#if defined(__SANITIZE_ADDRESS__)
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(f.state == DONE ? nullptr : &fake, sched_stack_bottom, sched_stack_size);
#endif
#if defined(__x86_64__)
  cuda_emu_switch(&f.sp, sched_sp);
#else
  swapcontext(&f.ctx, &sched_ctx);
#endif
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake, &sched_stack_bottom, &sched_stack_size);
#endif
}

void to_fiber(int t) {
  fiber &f = fibers[t];
  L.current = t;
  threadIdx = f.tid;
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(&sched_fake_stack, f.stack, STACK_BYTES);
#endif
#if defined(__x86_64__)
  cuda_emu_switch(&sched_sp, f.sp);
#else
  swapcontext(&sched_ctx, &f.ctx);
#endif
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(sched_fake_stack, nullptr, nullptr);
#endif
  L.current = -1;
}

void fiber_main() {
  L.body(L.ctx);
  fiber &f = fibers[L.current];
  f.state = DONE;
  L.done++;
  barrier_try_release(); // the others may wait for this thread only
  to_scheduler();
  fatal("a finished thread was resumed");
}

#if !defined(__x86_64__)
void fiber_entry_uc() {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(nullptr, &sched_stack_bottom, &sched_stack_size);
#endif
  fiber_main();
}
#endif

void fiber_reset(fiber &f) {
  if (!f.stack) {
    void *p = mmap(nullptr, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) fatal("cannot map a %zu-byte fiber stack", STACK_BYTES);
    mprotect(p, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE); // overflow faults instead of corrupting
    f.stack = (char *)p;
  }
#if defined(__SANITIZE_ADDRESS__)
  // A finished fiber never returned from its entry: its frames' redzones
  // are still poisoned; the stack starts afresh.
  ASAN_UNPOISON_MEMORY_REGION(f.stack, STACK_BYTES);
#endif
#if defined(__x86_64__)
  uintptr_t top = ((uintptr_t)f.stack + STACK_BYTES) & ~(uintptr_t)15;
  void **sp = (void **)top;
  *--sp = nullptr;                          // the entry's return address: it never returns
  *--sp = (void *)&cuda_emu_fiber_entry;    // popped by the switch's ret
  for (int i = 0; i < 6; i++) *--sp = nullptr; // rbp rbx r12 r13 r14 r15
  f.sp = sp;
#else
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = f.stack;
  f.ctx.uc_stack.ss_size = STACK_BYTES;
  f.ctx.uc_link = nullptr;
  makecontext(&f.ctx, fiber_entry_uc, 0);
#endif
  f.state = RUNNABLE;
}

// Byte by byte and uninstrumented: under ASan the section may hold redzones
// between the variables (writing their bytes is harmless; ASan's state is in
// its shadow memory).
__attribute__((no_sanitize_address)) void poison_shared() {
  for (volatile unsigned char *p = __start_cuda_emu_shared; p < __stop_cuda_emu_shared; p++) *p = 0xFF;
  if (L.dyn_bytes) memset(L.dyn_smem, 0xFF, L.dyn_bytes);
}

void describe_and_abort(const char *what) {
  fprintf(stderr, "cuda_emu: %s in kernel %s, block (%u, %u, %u) of (%u, %u, %u), %d threads:\n", what, L.name,
          blockIdx.x, blockIdx.y, blockIdx.z, gridDim.x, gridDim.y, gridDim.z, L.nthreads);
  int shown = 0;
  for (int t = 0; t < L.nthreads && shown < 16; t++) {
    const fiber &f = fibers[t];
    if (f.state == AT_WARP) {
      const warp_state &w = L.warps[t / 32];
      fprintf(stderr, "  thread %d waits at a warp collective (mask 0x%08x, lanes arrived 0x%08x)\n", t, w.mask,
              w.arrived);
      shown++;
    } else if (f.state == AT_BARRIER) {
      fprintf(stderr, "  thread %d waits at __syncthreads\n", t);
      shown++;
    }
  }
  fprintf(stderr, "  (%d threads exited, %d at the block barrier)\n", L.done, L.at_barrier);
  fflush(stderr);
  abort();
}

// CPLAB_EMU_ORDER=reverse: blocks and the threads of a block in descending
// order (another legal schedule: a kernel whose result depends on the order,
// e.g. a missing barrier, may give a different result).
bool reverse_order() {
  static int r = -1;
  if (r < 0) {
    const char *e = getenv("CPLAB_EMU_ORDER");
    r = e && !strcmp(e, "reverse");
  }
  return r;
}

// Run one block to the end.
void run_block() {
  for (int t = 0; t < L.nthreads; t++) fiber_reset(fibers[t]);
  for (auto &w : L.warps) w.arrived = 0;
  L.at_barrier = L.done = 0;
  L.bar_acc = 0;
  poison_shared();
  for (;;) {
    bool ran = false;
    for (int i = 0; i < L.nthreads; i++) {
      int t = reverse_order() ? L.nthreads - 1 - i : i;
      if (fibers[t].state == RUNNABLE) {
        to_fiber(t);
        ran = true;
      }
    }
    if (L.done == L.nthreads) return;
    if (!ran) describe_and_abort("deadlock");
  }
}

// Complete the block barrier when every thread not exited has arrived.
void barrier_try_release() {
  if (L.at_barrier == 0 || L.at_barrier + L.done < L.nthreads) return;
  switch (L.bar_kind) {
  case cuda_emu::BAR_PLAIN: L.bar_result = 0; break;
  case cuda_emu::BAR_COUNT: L.bar_result = L.bar_acc; break;
  case cuda_emu::BAR_AND: L.bar_result = L.bar_acc == L.at_barrier; break;
  case cuda_emu::BAR_OR: L.bar_result = L.bar_acc > 0; break;
  }
  L.bar_acc = 0;
  L.at_barrier = 0;
  for (int t = 0; t < L.nthreads; t++)
    if (fibers[t].state == AT_BARRIER) fibers[t].state = RUNNABLE;
}

} // namespace

namespace cuda_emu {

bool is_device_range(const void *p, size_t bytes) { return in_allocation(p, bytes); }

int block_barrier(block_reduce kind, int pred) {
  if (!in_launch || L.current < 0) fatal("__syncthreads outside a kernel");
  fiber &f = fibers[L.current];
  if (L.at_barrier == 0) L.bar_kind = kind;
  else if (L.bar_kind != kind) describe_and_abort("threads at different kinds of __syncthreads*");
  L.bar_acc += pred;
  L.at_barrier++;
  f.state = AT_BARRIER;
  barrier_try_release();
  if (f.state == AT_BARRIER) to_scheduler();
  return L.bar_result;
}

uint64_t warp_collective(collective kind, unsigned mask, uint64_t value, int arg, int width) {
  if (!in_launch || L.current < 0) fatal("warp collective outside a kernel");
  int t = L.current, lane = t % 32;
  if (!(mask >> lane & 1u)) describe_and_abort("a lane calls a warp collective with a mask that leaves it out");
  if (width < 1 || width > 32 || (width & (width - 1))) describe_and_abort("shuffle width not a power of two <= 32");
  warp_state &w = L.warps[t / 32];
  // A warp of a partial block: lanes beyond the block do not exist.
  if (w.arrived == 0) {
    w.kind = kind;
    w.mask = mask;
    w.width = width;
  } else if (w.kind != kind || w.mask != mask || w.width != width) {
    describe_and_abort("lanes of one warp at different warp collectives");
  }
  w.value[lane] = value;
  w.arg[lane] = arg;
  w.arrived |= 1u << lane;
  fiber &f = fibers[t];
  if (w.arrived != w.mask) {
    f.state = AT_WARP;
    to_scheduler();
    return w.result[lane];
  }
  // The last lane: every lane's result, then release the others.
  if (w.kind == COLL_GATHER) memcpy(w.gathered, w.value, sizeof w.gathered);
  for (int l = 0; l < 32; l++) {
    if (!(w.mask >> l & 1u)) continue;
    int base = l & ~(w.width - 1), src = l;
    switch (w.kind) {
    case COLL_SHFL_IDX: src = base + (w.arg[l] & (w.width - 1)); break;
    case COLL_SHFL_XOR: src = l ^ w.arg[l]; break;
    case COLL_SHFL_UP: src = l - w.arg[l] >= base ? l - w.arg[l] : l; break;
    case COLL_SHFL_DOWN: src = l + w.arg[l] < base + w.width ? l + w.arg[l] : l; break;
    default: break;
    }
    if (w.kind == COLL_SHFL_XOR && (src < base || src >= base + w.width)) src = l;
    if (w.kind == COLL_GATHER) {
      w.result[l] = (uint64_t)(uintptr_t)w.gathered;
    } else if (w.kind == COLL_BALLOT) {
      unsigned b = 0;
      for (int j = 0; j < 32; j++)
        if ((w.mask >> j & 1u) && w.value[j]) b |= 1u << j;
      w.result[l] = b;
    } else if (w.kind == COLL_SYNCWARP) {
      w.result[l] = 0;
    } else {
      // A source lane outside the mask: undefined on the device; its own value here.
      w.result[l] = (w.mask >> src & 1u) ? w.value[src] : w.value[l];
    }
  }
  w.arrived = 0;
  for (int l = 0; l < 32; l++) {
    int u = (t & ~31) + l;
    if ((w.mask >> l & 1u) && u != t && u < L.nthreads && fibers[u].state == AT_WARP) fibers[u].state = RUNNABLE;
  }
  return w.result[lane];
}

void *dynamic_shared(void) { return L.dyn_smem; }

const uint64_t *warp_gather(unsigned mask, uint64_t value) {
  return (const uint64_t *)(uintptr_t)warp_collective(COLL_GATHER, mask, value, 0, 32);
}

bool is_shared_range(const void *p, size_t bytes) {
  const unsigned char *c = (const unsigned char *)p;
  if (L.dyn_smem && c >= L.dyn_smem && c + bytes <= L.dyn_smem + L.dyn_bytes) return true;
  return c >= __start_cuda_emu_shared && c + bytes <= __stop_cuda_emu_shared;
}

namespace {
std::map<const void *, int> &smem_limits() {
  static std::map<const void *, int> m;
  return m;
}
} // namespace

cudaError_t func_set_max_dynamic_smem(const void *kernel, int bytes) {
  if (!kernel || bytes < 0 || bytes > CUDA_EMU_SMEM_OPTIN) return record(cudaErrorInvalidValue);
  smem_limits()[kernel] = bytes;
  return cudaSuccess;
}

void launch_erased(const void *kernel, const char *name, dim3 grid, dim3 block, size_t smem, thread_body body,
                   void *ctx) {
  if (in_launch) fatal("a launch from inside a kernel (dynamic parallelism is not emulated)");
  uint64_t threads = (uint64_t)block.x * block.y * block.z;
  if (threads == 0 || threads > CUDA_EMU_MAX_THREADS || block.x > 1024 || block.y > 1024 || block.z > 64 ||
      grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) {
    record(cudaErrorInvalidConfiguration);
    return;
  }
  auto it = smem_limits().find(kernel);
  size_t limit = it == smem_limits().end() ? CUDA_EMU_SMEM_DEFAULT : (size_t)it->second;
  if (smem > limit) {
    record(cudaErrorInvalidValue);
    return;
  }
  L = launch_state();
  L.name = name;
  L.body = body;
  L.ctx = ctx;
  L.nthreads = (int)threads;
  L.warps.resize((threads + 31) / 32);
  std::vector<unsigned char> dyn;
  if (smem) {
    dyn.resize(smem + 256);
    uintptr_t a = ((uintptr_t)dyn.data() + 255) & ~(uintptr_t)255;
    L.dyn_smem = (unsigned char *)a;
    L.dyn_bytes = smem;
  }
  if (fibers.size() < threads) fibers.resize(threads);
  for (unsigned z = 0, t = 0; z < block.z; z++)
    for (unsigned y = 0; y < block.y; y++)
      for (unsigned x = 0; x < block.x; x++, t++) fibers[t].tid = {x, y, z};
  gridDim = grid;
  blockDim = block;
  in_launch = true;
  bool rev = reverse_order();
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        blockIdx = rev ? uint3{grid.x - 1 - bx, grid.y - 1 - by, grid.z - 1 - bz} : uint3{bx, by, bz};
        run_block();
      }
  in_launch = false;
  L.dyn_smem = nullptr;
  L.dyn_bytes = 0;
}

} // namespace cuda_emu

// ---- the runtime API ------------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count) return record(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev) {
  if (!dev) return record(cudaErrorInvalidValue);
  *dev = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) { return dev == 0 ? cudaSuccess : record(cudaErrorInvalidDevice); }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev) {
  if (!p) return record(cudaErrorInvalidValue);
  if (dev != 0) return record(cudaErrorInvalidDevice);
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "CPU emulation (tests/emu)");
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  p->totalGlobalMem = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
  p->sharedMemPerBlock = CUDA_EMU_SMEM_DEFAULT;
  p->sharedMemPerBlockOptin = CUDA_EMU_SMEM_OPTIN;
  p->warpSize = 32;
  p->maxThreadsPerBlock = CUDA_EMU_MAX_THREADS;
  p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int dev) {
  if (!v) return record(cudaErrorInvalidValue);
  if (dev != 0) return record(cudaErrorInvalidDevice);
  switch (attr) {
  case cudaDevAttrMaxThreadsPerBlock: *v = CUDA_EMU_MAX_THREADS; break;
  case cudaDevAttrMaxSharedMemoryPerBlock: *v = CUDA_EMU_SMEM_DEFAULT; break;
  case cudaDevAttrWarpSize: *v = 32; break;
  case cudaDevAttrMultiProcessorCount: *v = 1; break;
  case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
  case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
  case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = CUDA_EMU_SMEM_OPTIN; break;
  default: return record(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v) {
  if (!v) return record(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) {
  if (!v) return record(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **ptr, size_t bytes) {
  if (!ptr) return record(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  void *p = nullptr; // 256-byte aligned as cudaMalloc's, and exactly `bytes` long: ASan sees an overrun
  if (posix_memalign(&p, 256, bytes) != 0) return record(cudaErrorMemoryAllocation);
  memset(p, 0xCB, bytes); // device memory starts as garbage
  allocations()[(uintptr_t)p] = bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void *ptr) {
  if (!ptr) return cudaSuccess;
  auto &m = allocations();
  auto it = m.find((uintptr_t)ptr);
  if (it == m.end()) return record(cudaErrorInvalidValue);
  m.erase(it);
  free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (!dst || !src) return record(cudaErrorInvalidValue);
  bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyDefault) dst_dev = in_allocation(dst, 1), src_dev = in_allocation(src, 1);
  if (kind > cudaMemcpyDefault) return record(cudaErrorInvalidMemcpyDirection);
  if ((dst_dev && !in_allocation(dst, bytes)) || (src_dev && !in_allocation(src, bytes)))
    return record(cudaErrorInvalidValue);
  memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}

// Row by row through cudaMemcpy (its range checks per row), after CUDA's
// check of the pitches (cudaErrorInvalidPitchValue there, InvalidValue here).
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t) {
  if (width > dpitch || width > spitch) return record(cudaErrorInvalidValue);
  for (size_t i = 0; i < height; i++) {
    cudaError_t e = cudaMemcpy((char *)dst + i * dpitch, (const char *)src + i * spitch, width, kind);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t cudaMemset(void *ptr, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!in_allocation(ptr, bytes)) return record(cudaErrorInvalidValue);
  memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t) { return cudaMemset(ptr, value, bytes); }

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaStreamCreate(cudaStream_t *s) {
  if (!s) return record(cudaErrorInvalidValue);
  static int streams;
  *s = (cudaStream_t)(uintptr_t)(0x1000 + 16 * ++streams); // a distinct non-NULL handle, never dereferenced
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return last_error; }

const char *cudaGetErrorName(cudaError_t err) {
  switch (err) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorInitializationError: return "cudaErrorInitializationError";
  case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
  case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
  case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
  case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
  case cudaErrorNoDevice: return "cudaErrorNoDevice";
  case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
  case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
  case cudaErrorNotSupported: return "cudaErrorNotSupported";
  default: return "cudaErrorUnknown";
  }
}

const char *cudaGetErrorString(cudaError_t err) {
  switch (err) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInitializationError: return "initialization error";
  case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  case cudaErrorInvalidDevicePointer: return "invalid device pointer";
  case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
  case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  case cudaErrorInvalidResourceHandle: return "invalid resource handle";
  case cudaErrorNotSupported: return "operation not supported";
  default: return "unknown error";
  }
}
