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

enum fstate { RUNNABLE, AT_BARRIER, AT_WARP, AT_CLUSTER, DONE };

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

// One block of the running cluster: its barrier, its warps, its dynamic
// shared memory.
struct block_state {
  uint3 idx = {0, 0, 0};
  int at_barrier = 0, done = 0;
  cuda_emu::block_reduce bar_kind = cuda_emu::BAR_PLAIN;
  int bar_acc = 0, bar_result = 0;
  std::vector<warp_state> warps;
  std::vector<unsigned char> dyn_storage; // dyn_bytes + 256: room to align
  unsigned char *dyn_smem = nullptr;
};

// A launch runs cluster after cluster; a launch without clusters is one of
// one block each (as on the device: %cluster_nctarank is 1 there). The
// fibers of the running cluster are block-major: fiber f is thread
// f % nthreads of the block of rank f / nthreads.
struct launch_state {
  const char *name = "";
  cuda_emu::thread_body body = nullptr;
  void *ctx = nullptr;
  int nthreads = 0, current = -1; // threads a block; the running fiber
  int cluster_blocks = 1;
  std::vector<block_state> blocks; // by rank
  size_t dyn_bytes = 0;
  int cluster_at_barrier = 0, cluster_done = 0; // over every block of the cluster
};

std::vector<fiber> fibers;
launch_state L;

block_state &block_of(int f) { return L.blocks[f / L.nthreads]; }
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
void barrier_try_release(int rank);
void cluster_barrier_try_release();

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
  blockIdx = block_of(t).idx;
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
  block_of(L.current).done++;
  L.cluster_done++;
  barrier_try_release(L.current / L.nthreads); // the others may wait for this thread only
  cluster_barrier_try_release();
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
__attribute__((no_sanitize_address)) void poison_static_shared() {
  for (volatile unsigned char *p = __start_cuda_emu_shared; p < __stop_cuda_emu_shared; p++) *p = 0xFF;
}

// Static __shared__ variables are one storage for every block: the blocks
// of a cluster, which run together, would share them. What a cluster's
// kernel wrote there (any byte no longer the poison) is reported.
__attribute__((no_sanitize_address)) bool static_shared_written() {
  for (volatile unsigned char *p = __start_cuda_emu_shared; p < __stop_cuda_emu_shared; p++)
    if (*p != 0xFF) return true;
  return false;
}

const char *wait_name(fstate s) {
  switch (s) {
  case AT_WARP: return "a warp collective";
  case AT_BARRIER: return "__syncthreads";
  case AT_CLUSTER: return "cluster_sync";
  default: return "";
  }
}

void describe_and_abort(const char *what) {
  if (L.cluster_blocks == 1) {
    fprintf(stderr, "cuda_emu: %s in kernel %s, block (%u, %u, %u) of (%u, %u, %u), %d threads:\n", what, L.name,
            L.blocks[0].idx.x, L.blocks[0].idx.y, L.blocks[0].idx.z, gridDim.x, gridDim.y, gridDim.z, L.nthreads);
  } else {
    const uint3 &b0 = L.blocks[0].idx;
    fprintf(stderr,
            "cuda_emu: %s in kernel %s, the cluster of blocks (%u..%u, %u, %u) of (%u, %u, %u), %d threads a block:\n",
            what, L.name, b0.x, b0.x + L.cluster_blocks - 1, b0.y, b0.z, gridDim.x, gridDim.y, gridDim.z, L.nthreads);
  }
  int shown = 0, at_block_barriers = 0;
  for (int f = 0; f < L.nthreads * L.cluster_blocks; f++) {
    const fiber &th = fibers[f];
    const block_state &b = block_of(f);
    int t = f % L.nthreads;
    if (t == 0) at_block_barriers += b.at_barrier;
    if (th.state != AT_WARP && th.state != AT_BARRIER && th.state != AT_CLUSTER) continue;
    if (shown++ >= 16) continue;
    if (L.cluster_blocks > 1)
      fprintf(stderr, "  block rank %d, thread %d waits at %s", f / L.nthreads, t, wait_name(th.state));
    else
      fprintf(stderr, "  thread %d waits at %s", t, wait_name(th.state));
    if (th.state == AT_WARP) {
      const warp_state &w = b.warps[t / 32];
      fprintf(stderr, " (mask 0x%08x, lanes arrived 0x%08x)", w.mask, w.arrived);
    }
    fprintf(stderr, "\n");
  }
  fprintf(stderr, "  (%d threads exited, %d at block barriers", L.cluster_done, at_block_barriers);
  if (L.cluster_blocks > 1) fprintf(stderr, ", %d at the cluster barrier", L.cluster_at_barrier);
  fprintf(stderr, ")\n");
  fflush(stderr);
  abort();
}

// A misuse found in a running thread (a cluster model's check).
[[noreturn]] __attribute__((format(printf, 1, 2))) void thread_fatal(const char *fmt, ...) {
  fprintf(stderr, "cuda_emu: kernel %s, block (%u, %u, %u) (cluster rank %d of %d), thread (%u, %u, %u): ", L.name,
          blockIdx.x, blockIdx.y, blockIdx.z, L.current / L.nthreads, L.cluster_blocks, threadIdx.x, threadIdx.y,
          threadIdx.z);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  fflush(stderr);
  abort();
}

// CPLAB_EMU_ORDER=reverse: clusters, the blocks of a cluster and the
// threads of a block in descending order (another legal schedule: a kernel
// whose result depends on the order, e.g. a missing barrier, may give a
// different result).
bool reverse_order() {
  static int r = -1;
  if (r < 0) {
    const char *e = getenv("CPLAB_EMU_ORDER");
    r = e && !strcmp(e, "reverse");
  }
  return r;
}

// Run one cluster (L.blocks' indices set) to the end: every thread of
// every block is a fiber of one schedule, swept block by block.
void run_cluster() {
  int total = L.nthreads * L.cluster_blocks;
  for (int f = 0; f < total; f++) fiber_reset(fibers[f]);
  for (auto &b : L.blocks) {
    for (auto &w : b.warps) w.arrived = 0;
    b.at_barrier = b.done = 0;
    b.bar_acc = 0;
    if (L.dyn_bytes) memset(b.dyn_smem, 0xFF, L.dyn_bytes);
  }
  L.cluster_at_barrier = L.cluster_done = 0;
  poison_static_shared();
  bool rev = reverse_order();
  for (;;) {
    bool ran = false;
    for (int i = 0; i < total; i++) {
      // descending: the blocks' order and the threads' order within each
      int f = rev ? total - 1 - i : i;
      if (fibers[f].state == RUNNABLE) {
        to_fiber(f);
        ran = true;
      }
    }
    if (L.cluster_done == total) break;
    if (!ran) describe_and_abort("deadlock");
  }
  if (L.cluster_blocks > 1 && static_shared_written())
    fatal("kernel %s wrote static __shared__ memory in a launch with clusters of %d blocks: the emulation has one "
          "storage for it, shared by the blocks of a cluster; a cluster kernel uses dynamic (extern __shared__) "
          "memory only",
          L.name, L.cluster_blocks);
}

// Complete block `rank`'s barrier when every thread of it not exited has arrived.
void barrier_try_release(int rank) {
  block_state &b = L.blocks[rank];
  if (b.at_barrier == 0 || b.at_barrier + b.done < L.nthreads) return;
  switch (b.bar_kind) {
  case cuda_emu::BAR_PLAIN: b.bar_result = 0; break;
  case cuda_emu::BAR_COUNT: b.bar_result = b.bar_acc; break;
  case cuda_emu::BAR_AND: b.bar_result = b.bar_acc == b.at_barrier; break;
  case cuda_emu::BAR_OR: b.bar_result = b.bar_acc > 0; break;
  }
  b.bar_acc = 0;
  b.at_barrier = 0;
  for (int f = rank * L.nthreads; f < (rank + 1) * L.nthreads; f++)
    if (fibers[f].state == AT_BARRIER) fibers[f].state = RUNNABLE;
}

// Complete the cluster barrier when every thread of the cluster not exited
// has arrived (barrier.cluster.wait: "all non-exited threads").
void cluster_barrier_try_release() {
  int total = L.nthreads * L.cluster_blocks;
  if (L.cluster_at_barrier == 0 || L.cluster_at_barrier + L.cluster_done < total) return;
  L.cluster_at_barrier = 0;
  for (int f = 0; f < total; f++)
    if (fibers[f].state == AT_CLUSTER) fibers[f].state = RUNNABLE;
}

} // namespace

namespace cuda_emu {

bool is_device_range(const void *p, size_t bytes) { return in_allocation(p, bytes); }

int block_barrier(block_reduce kind, int pred) {
  if (!in_launch || L.current < 0) fatal("__syncthreads outside a kernel");
  fiber &f = fibers[L.current];
  block_state &b = block_of(L.current);
  if (b.at_barrier == 0) b.bar_kind = kind;
  else if (b.bar_kind != kind) describe_and_abort("threads at different kinds of __syncthreads*");
  b.bar_acc += pred;
  b.at_barrier++;
  f.state = AT_BARRIER;
  barrier_try_release(L.current / L.nthreads);
  if (f.state == AT_BARRIER) to_scheduler();
  return b.bar_result;
}

void cluster_barrier(void) {
  if (!in_launch || L.current < 0) fatal("cluster_sync outside a kernel");
  fiber &f = fibers[L.current];
  L.cluster_at_barrier++;
  f.state = AT_CLUSTER;
  cluster_barrier_try_release();
  if (f.state == AT_CLUSTER) to_scheduler();
}

unsigned cluster_block_rank(void) {
  if (!in_launch || L.current < 0) fatal("cluster_rank outside a kernel");
  return (unsigned)(L.current / L.nthreads);
}

unsigned cluster_size(void) {
  if (!in_launch || L.current < 0) fatal("cluster_blocks outside a kernel");
  return (unsigned)L.cluster_blocks;
}

// The shared::cluster address: a tag in bits 28..31 (so that an address
// not made by cluster_map is caught), the rank in 24..27, the offset into
// that block's dynamic shared memory in 0..23. Adding to it moves within
// the block's memory, as on the device.
#define CLUSTER_ADDR_TAG 0xC0000000u

uint32_t cluster_map_shared(const void *p, unsigned rank) {
  if (!in_launch || L.current < 0) fatal("cluster_map outside a kernel");
  const block_state &me = block_of(L.current);
  const unsigned char *c = (const unsigned char *)p;
  if (!me.dyn_smem || c < me.dyn_smem || c > me.dyn_smem + L.dyn_bytes)
    thread_fatal("cluster_map of %p: not in this block's dynamic shared memory (%p, %zu bytes); static __shared__ "
                 "variables are one storage for all blocks in the emulation, so a cluster kernel maps dynamic "
                 "(extern __shared__) memory only",
                 p, (void *)me.dyn_smem, L.dyn_bytes);
  if (rank >= (unsigned)L.cluster_blocks)
    thread_fatal("cluster_map to rank %u of a cluster of %d blocks", rank, L.cluster_blocks);
  return CLUSTER_ADDR_TAG | rank << 24 | (uint32_t)(c - me.dyn_smem);
}

void *cluster_shared_at(uint32_t addr, size_t bytes, const char *what) {
  if (!in_launch || L.current < 0) fatal("%s outside a kernel", what);
  if ((addr & 0xF0000000u) != CLUSTER_ADDR_TAG)
    thread_fatal("%s at 0x%08x: not a shared::cluster address (cluster_map makes them)", what, addr);
  unsigned rank = addr >> 24 & 0xFu, offset = addr & 0xFFFFFFu;
  if (rank >= (unsigned)L.cluster_blocks)
    thread_fatal("%s at 0x%08x: rank %u of a cluster of %d blocks", what, addr, rank, L.cluster_blocks);
  if (offset % bytes) thread_fatal("%s at 0x%08x: offset %u not %zu-byte aligned", what, addr, offset, bytes);
  if (offset + bytes > L.dyn_bytes)
    thread_fatal("%s at 0x%08x: bytes %u..%zu past the %zu bytes of dynamic shared memory", what, addr, offset,
                 offset + bytes - 1, L.dyn_bytes);
  block_state &target = L.blocks[rank];
  if (target.done == L.nthreads)
    thread_fatal("%s at 0x%08x: block rank %u has exited, its shared memory is gone (a cluster_sync before exiting "
                 "keeps every block until the others' accesses are over)",
                 what, addr, rank);
  return target.dyn_smem + offset;
}

uint64_t warp_collective(collective kind, unsigned mask, uint64_t value, int arg, int width) {
  if (!in_launch || L.current < 0) fatal("warp collective outside a kernel");
  int block_first = L.current / L.nthreads * L.nthreads; // the block's first fiber
  int t = L.current - block_first, lane = t % 32;
  if (!(mask >> lane & 1u)) describe_and_abort("a lane calls a warp collective with a mask that leaves it out");
  if (width < 1 || width > 32 || (width & (width - 1))) describe_and_abort("shuffle width not a power of two <= 32");
  warp_state &w = block_of(L.current).warps[t / 32];
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
  fiber &f = fibers[L.current];
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
    if ((w.mask >> l & 1u) && u != t && u < L.nthreads && fibers[block_first + u].state == AT_WARP)
      fibers[block_first + u].state = RUNNABLE;
  }
  return w.result[lane];
}

void *dynamic_shared(void) { return in_launch && L.current >= 0 ? block_of(L.current).dyn_smem : nullptr; }

const uint64_t *warp_gather(unsigned mask, uint64_t value) {
  return (const uint64_t *)(uintptr_t)warp_collective(COLL_GATHER, mask, value, 0, 32);
}

bool is_shared_range(const void *p, size_t bytes) {
  const unsigned char *c = (const unsigned char *)p;
  const unsigned char *dyn = (const unsigned char *)dynamic_shared();
  if (dyn && c >= dyn && c + bytes <= dyn + L.dyn_bytes) return true;
  return c >= __start_cuda_emu_shared && c + bytes <= __stop_cuda_emu_shared;
}

namespace {
std::map<const void *, int> &smem_limits() {
  static std::map<const void *, int> m;
  return m;
}
std::map<const void *, bool> &nonportable_cluster() {
  static std::map<const void *, bool> m;
  return m;
}
} // namespace

cudaError_t func_set_max_dynamic_smem(const void *kernel, int bytes) {
  if (!kernel || bytes < 0 || bytes > CUDA_EMU_SMEM_OPTIN) return record(cudaErrorInvalidValue);
  smem_limits()[kernel] = bytes;
  return cudaSuccess;
}

cudaError_t func_set_nonportable_cluster(const void *kernel, int allowed) {
  if (!kernel || (allowed != 0 && allowed != 1)) return record(cudaErrorInvalidValue);
  nonportable_cluster()[kernel] = allowed;
  return cudaSuccess;
}

namespace {

// cluster_x 0: a launch without clusters (each block a cluster of one).
cudaError_t launch_any(const void *kernel, const char *name, dim3 grid, dim3 block, size_t smem, unsigned cluster_x,
                       thread_body body, void *ctx) {
  if (in_launch) fatal("a launch from inside a kernel (dynamic parallelism is not emulated)");
  uint64_t threads = (uint64_t)block.x * block.y * block.z;
  if (threads == 0 || threads > CUDA_EMU_MAX_THREADS || block.x > 1024 || block.y > 1024 || block.z > 64 ||
      grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
    return record(cudaErrorInvalidConfiguration);
  auto it = smem_limits().find(kernel);
  size_t limit = it == smem_limits().end() ? CUDA_EMU_SMEM_DEFAULT : (size_t)it->second;
  if (smem > limit) return record(cudaErrorInvalidValue);
  int cluster_blocks = 1;
  if (cluster_x) {
    auto np = nonportable_cluster().find(kernel);
    unsigned most = np != nonportable_cluster().end() && np->second ? CUDA_EMU_CLUSTER_MAX : CUDA_EMU_CLUSTER_PORTABLE;
    if (cluster_x > most || grid.x % cluster_x) return record(cudaErrorInvalidClusterSize);
    cluster_blocks = (int)cluster_x;
  }
  L = launch_state();
  L.name = name;
  L.body = body;
  L.ctx = ctx;
  L.nthreads = (int)threads;
  L.cluster_blocks = cluster_blocks;
  L.dyn_bytes = smem;
  L.blocks.resize(cluster_blocks);
  for (auto &b : L.blocks) {
    b.warps.resize((threads + 31) / 32);
    if (smem) {
      b.dyn_storage.resize(smem + 256);
      b.dyn_smem = (unsigned char *)(((uintptr_t)b.dyn_storage.data() + 255) & ~(uintptr_t)255);
    }
  }
  size_t nfibers = threads * cluster_blocks;
  if (fibers.size() < nfibers) fibers.resize(nfibers);
  for (size_t f = 0; f < nfibers; f += threads)
    for (unsigned z = 0, t = 0; z < block.z; z++)
      for (unsigned y = 0; y < block.y; y++)
        for (unsigned x = 0; x < block.x; x++, t++) fibers[f + t].tid = {x, y, z};
  gridDim = grid;
  blockDim = block;
  in_launch = true;
  bool rev = reverse_order();
  unsigned clusters_x = grid.x / cluster_blocks;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned cx = 0; cx < clusters_x; cx++) {
        uint3 c = rev ? uint3{clusters_x - 1 - cx, grid.y - 1 - by, grid.z - 1 - bz} : uint3{cx, by, bz};
        for (int r = 0; r < cluster_blocks; r++) L.blocks[r].idx = {c.x * cluster_blocks + r, c.y, c.z};
        run_cluster();
      }
  in_launch = false;
  L.blocks.clear();
  L.dyn_bytes = 0;
  return cudaSuccess;
}

} // namespace

void launch_erased(const void *kernel, const char *name, dim3 grid, dim3 block, size_t smem, thread_body body,
                   void *ctx) {
  launch_any(kernel, name, grid, block, smem, 0, body, ctx);
}

cudaError_t launch_cluster_erased(const void *kernel, const char *name, dim3 grid, dim3 block, size_t smem,
                                  unsigned cluster_x, thread_body body, void *ctx) {
  if (cluster_x == 0) return record(cudaErrorInvalidClusterSize);
  return launch_any(kernel, name, grid, block, smem, cluster_x, body, ctx);
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
  case cudaErrorInvalidClusterSize: return "cudaErrorInvalidClusterSize";
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
  case cudaErrorInvalidClusterSize: return "cluster misconfiguration";
  default: return "unknown error";
  }
}
