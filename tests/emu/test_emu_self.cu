// tests/emu/test_emu_self.cu: tests of the CPU emulation itself (cuda_emu.h),
// built through the same pipeline as the kernels (tools/cuda-emu/cu2emu.py,
// then g++ against tests/emu/include). Without these, a kernel test that
// passes under emulation might only show an emulator that agrees with itself.
//   - conversions: __float2bfloat16_rn and __nv_cvt_float_to_fp8(SATFINITE,
//     E4M3) against cplab/fp8.h (bit-exact with CUDA's, proved on a GPU by
//     tests/numeric) over every bf16 pattern, every e4m3 byte, every float
//     of the e4m3 rounding region's mantissa patterns and a strided sweep of
//     all 2^32 float patterns;
//   - indices: multi-dimensional grids and blocks;
//   - barriers and warp collectives against host-computed results;
//   - shared memory: static and dynamic, poisoned before each block;
//   - by-value parameters, launch errors, memory range checks;
//   - a warp collective a lane never reaches aborts (deadlock), in a child;
//   - the tensor-core models of kernels/mma.cuh: a 16x16 · 16x16 product
//     through ldmatrix (A and a K-major B) and through ldmatrix .trans (an
//     MN-major B, as the attention kernels load V), accumulating onto d,
//     against the host's product of small integers (exact, so bit for bit);
//     cp.async copies and zero fills; the e4m3 form (m16n8k32) the same way
//     over K-major byte rows copied by cp_async_4; cp.async.bulk on an
//     mbarrier over two phases, and a wait for a phase not yet completed
//     aborting (in a child);
//   - thread-block clusters (kernels/cluster.cuh through cluster_launch):
//     clusters of 4, 8 and 16 blocks (and the implicit one-block clusters
//     of a plain launch) exchanging 32- and 64-bit values through each
//     other's dynamic shared memory and counting into block 0's with
//     atomics, checked value by value against the host; the launch errors;
//     misuses that abort (in a child): a map of memory not dynamic shared,
//     a rank outside the cluster, an access past the memory, an exited
//     block's memory, static __shared__ written, a deadlock between
//     __syncthreads and cluster_sync.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "cluster.cuh"
#include "cplab/fp8.h"
#include "mma.cuh"
extern "C" {
#include "kt.h"
}

// ---- conversions --------------------------------------------------------------------

static void check_conversions(void) {
  long bad_bf16 = 0, bad_e4m3 = 0, n_bf16 = 0, n_e4m3 = 0;
  auto one = [&](uint32_t u) {
    float f = __uint_as_float(u);
    n_bf16++, n_e4m3++;
    if (__bfloat16_as_ushort(__float2bfloat16_rn(f)) != cplab_bf16_from_f32(f)) {
      if (bad_bf16++ < 3) printf("# bf16 of 0x%08x: 0x%04x, cplab 0x%04x\n", u, __bfloat16_as_ushort(__float2bfloat16_rn(f)), cplab_bf16_from_f32(f));
    }
    if (__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3) != cplab_e4m3_from_f32(f)) {
      if (bad_e4m3++ < 3)
        printf("# e4m3 of 0x%08x: 0x%02x, cplab 0x%02x\n", u, __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3),
               cplab_e4m3_from_f32(f));
    }
  };
  for (uint32_t h = 0; h < 0x10000u; h++) one(h << 16);                       // every bf16 value
  for (uint64_t u = 0; u < 0x100000000ull; u += 251) one((uint32_t)u);        // a sweep of all floats
  // Every sign and exponent with the mantissas at the rounding boundaries
  // e4m3 looks at (the bits below 3, 4, ..., 9 kept bits: shifts 20..26).
  static const uint32_t low[] = {0, 1, 2, 0x3FFFF, 0x40000, 0x40001, 0x7FFFF, 0x80000, 0x80001, 0xFFFFF, 0x100000,
                                 0x100001, 0x17FFFF, 0x180000, 0x180001, 0x1FFFFF, 0x200000, 0x200001, 0x3FFFFF,
                                 0x400000, 0x400001, 0x5FFFFF, 0x600000, 0x600001, 0x7FFFFF};
  for (uint32_t se = 0; se < 512; se++)
    for (uint32_t l : low) one((se << 23) | l);
  // Around e4m3's range (2^-27 .. 2^13, both signs): every pattern of the
  // top 19 mantissa bits, the low 4 bits varied with them.
  for (uint32_t e = 100; e < 140; e++)
    for (uint32_t m = 0; m < (1u << 19); m++) one(((m & 1u) << 31) | (e << 23) | (m << 4) | ((m * 7u) & 0xFu));
  kt_check(bad_bf16 == 0, "__float2bfloat16_rn vs cplab_bf16_from_f32: %ld floats, %ld differ", n_bf16, bad_bf16);
  kt_check(bad_e4m3 == 0, "__nv_cvt_float_to_fp8(SATFINITE, E4M3) vs cplab_e4m3_from_f32: %ld floats, %ld differ",
           n_e4m3, bad_e4m3);
  long bad_back = 0;
  for (int b = 0; b < 256; b++) {
    __nv_fp8_e4m3 e;
    e.__x = (__nv_fp8_storage_t)b;
    bad_back += __float_as_uint(static_cast<float>(e)) != cplab_f32_bits(cplab_e4m3_to_f32((uint8_t)b));
  }
  kt_check(bad_back == 0, "float(__nv_fp8_e4m3) vs cplab_e4m3_to_f32: 256 bytes, %ld differ", bad_back);
}

// ---- indices ----------------------------------------------------------------------------

__global__ void index_kernel(uint32_t *out) {
  unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  out[bx * nthreads + tx] = (blockIdx.z << 24) | (blockIdx.y << 16) | (blockIdx.x << 12) | (threadIdx.z << 8) |
                            (threadIdx.y << 4) | threadIdx.x;
}

static void check_indices(void) {
  dim3 grid(3, 2, 2), block(8, 4, 2);
  size_t n = 12 * 64;
  uint32_t *d = (uint32_t *)kt_dev(n * 4);
  index_kernel<<<grid, block>>>(d);
  cudaError_t err = cudaGetLastError();
  std::vector<uint32_t> h(n);
  kt_down(h.data(), d, n * 4);
  long bad = 0;
  for (unsigned bz = 0; bz < 2; bz++)
    for (unsigned by = 0; by < 2; by++)
      for (unsigned bx = 0; bx < 3; bx++)
        for (unsigned tz = 0; tz < 2; tz++)
          for (unsigned ty = 0; ty < 4; ty++)
            for (unsigned tx = 0; tx < 8; tx++) {
              size_t i = ((bz * 2 + by) * 3 + bx) * 64 + (tz * 4 + ty) * 8 + tx;
              bad += h[i] != ((bz << 24) | (by << 16) | (bx << 12) | (tz << 8) | (ty << 4) | tx);
            }
  kt_check(err == cudaSuccess && bad == 0, "grid (3,2,2) x block (8,4,2): every thread's indices, %ld wrong", bad);
  kt_free(d);
}

// ---- barriers and warp collectives ---------------------------------------------------

#define COLL_THREADS 128

__global__ void collective_kernel(const uint32_t *in, uint32_t *out) {
  __shared__ uint32_t s[COLL_THREADS];
  unsigned t = threadIdx.x, lane = t % 32;
  uint32_t v = in[blockIdx.x * COLL_THREADS + t];
  uint32_t *o = out + (blockIdx.x * COLL_THREADS + t) * 10;
  s[t] = v;
  __syncthreads();
  o[0] = s[(t + 1) % COLL_THREADS]; // a neighbour's value: needs the barrier
  o[1] = __shfl_xor_sync(0xFFFFFFFFu, v, 5);
  o[2] = __shfl_sync(0xFFFFFFFFu, v, 7);
  o[3] = __shfl_up_sync(0xFFFFFFFFu, v, 3);
  o[4] = __shfl_down_sync(0xFFFFFFFFu, v, 3);
  o[5] = __ballot_sync(0xFFFFFFFFu, v & 1u);
  o[6] = (uint32_t)__syncthreads_count(v & 1u);
  o[7] = (uint32_t)__syncthreads_or(v == 12345u);
  o[8] = (uint32_t)__syncthreads_and(v != 12345u);
  uint64_t w = ((uint64_t)v << 32) | lane; // 64-bit shuffle (as moe.cu's keys)
  o[9] = (uint32_t)(__shfl_xor_sync(0xFFFFFFFFu, w, 16) >> 32);
}

static void check_collectives(uint64_t *rng) {
  const int blocks = 3, n = blocks * COLL_THREADS;
  std::vector<uint32_t> in(n), out((size_t)n * 10);
  for (int i = 0; i < n; i++) in[i] = (uint32_t)kt_next(rng);
  in[COLL_THREADS + 77] = 12345u; // block 1 only
  uint32_t *d_in = (uint32_t *)kt_dev_from(in.data(), (size_t)n * 4), *d_out = (uint32_t *)kt_dev((size_t)n * 40);
  collective_kernel<<<blocks, COLL_THREADS>>>(d_in, d_out);
  cudaError_t err = cudaGetLastError();
  kt_down(out.data(), d_out, (size_t)n * 40);
  long bad[10] = {0};
  for (int b = 0; b < blocks; b++) {
    const uint32_t *x = in.data() + b * COLL_THREADS;
    int count = 0, any = 0;
    for (int t = 0; t < COLL_THREADS; t++) count += x[t] & 1u, any |= x[t] == 12345u;
    for (int t = 0; t < COLL_THREADS; t++) {
      const uint32_t *o = out.data() + ((size_t)b * COLL_THREADS + t) * 10;
      int lane = t % 32, w0 = t - lane;
      uint32_t ballot = 0;
      for (int l = 0; l < 32; l++) ballot |= (x[w0 + l] & 1u) << l;
      uint32_t want[10] = {x[(t + 1) % COLL_THREADS], x[w0 + (lane ^ 5)], x[w0 + 7],
                           x[lane >= 3 ? t - 3 : t], x[lane + 3 < 32 ? t + 3 : t], ballot, (uint32_t)count,
                           (uint32_t)any, (uint32_t)!any, x[w0 + (lane ^ 16)]};
      for (int i = 0; i < 10; i++) bad[i] += o[i] != want[i];
    }
  }
  long total = 0;
  for (int i = 0; i < 10; i++) total += bad[i];
  kt_check(err == cudaSuccess && total == 0,
           "barrier, shfl_xor/idx/up/down, ballot, syncthreads_count/or/and, 64-bit shuffle over %d threads: "
           "%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld wrong",
           n, bad[0], bad[1], bad[2], bad[3], bad[4], bad[5], bad[6], bad[7], bad[8], bad[9]);
  kt_free(d_in);
  kt_free(d_out);
}

// Threads that exit count as arrived at a later __syncthreads.
__global__ void early_exit_kernel(int *out) {
  __shared__ int s;
  if (threadIdx.x >= 64) return;
  if (threadIdx.x == 0) s = 41;
  __syncthreads();
  out[threadIdx.x] = s + 1;
}

static void check_early_exit(void) {
  int *d = (int *)kt_dev(64 * 4);
  early_exit_kernel<<<2, 256>>>(d);
  int h[64];
  kt_down(h, d, sizeof h);
  int bad = 0;
  for (int i = 0; i < 64; i++) bad += h[i] != 42;
  kt_check(cudaGetLastError() == cudaSuccess && bad == 0,
           "__syncthreads after 192 of 256 threads exited: no deadlock, %d wrong", bad);
  kt_free(d);
}

// ---- shared memory and parameters -------------------------------------------------------

__global__ void shared_kernel(uint32_t *out, int words, int n) {
  __shared__ uint32_t stat[4];
  extern __shared__ uint32_t dyn[];
  if (threadIdx.x == 0) {
    // what a block finds before writing: the poison
    out[blockIdx.x * 4 + 0] = stat[3];
    out[blockIdx.x * 4 + 1] = dyn[words - 1];
    stat[3] = 7;
    dyn[words - 1] = 9;
  }
  n += (int)threadIdx.x; // a by-value parameter: this thread's copy only
  __syncthreads();
  if (threadIdx.x == 1) out[blockIdx.x * 4 + 2] = (uint32_t)n;
  if (threadIdx.x == 0) out[blockIdx.x * 4 + 3] = stat[3] + dyn[words - 1];
}

static void check_shared(void) {
  const int words = 60000 / 4;
  uint32_t *d = (uint32_t *)kt_dev(2 * 4 * 4);
  cudaError_t e0 = cudaFuncSetAttribute(shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 60000);
  shared_kernel<<<2, 64, words * 4>>>(d, words, 100);
  cudaError_t e1 = cudaGetLastError();
  uint32_t h[8];
  kt_down(h, d, sizeof h);
  int ok = 1;
  for (int b = 0; b < 2; b++)
    ok &= h[4 * b] == 0xFFFFFFFFu && h[4 * b + 1] == 0xFFFFFFFFu && h[4 * b + 2] == 101 && h[4 * b + 3] == 16;
  kt_check(e0 == cudaSuccess && e1 == cudaSuccess && ok,
           "static and 60000-byte dynamic shared memory poisoned (0xFF) before each block, by-value parameters: "
           "%08x %08x %u %u / %08x %08x %u %u",
           h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]);
  kt_free(d);
}

// ---- launch errors and memory checks ----------------------------------------------------

__global__ void mark_kernel(int *out) { out[0] = 1; }

static void check_errors(void) {
  int *d = (int *)kt_dev(4);
  int h = 0;
  cudaMemset(d, 0, 4);
  mark_kernel<<<1, 1025>>>(d);
  cudaError_t e_threads = cudaGetLastError(), e_cleared = cudaGetLastError();
  mark_kernel<<<1, dim3(32, 32, 2)>>>(d);
  cudaError_t e_dims = cudaGetLastError();
  mark_kernel<<<0, 32>>>(d);
  cudaError_t e_grid = cudaGetLastError();
  mark_kernel<<<dim3(1, 65536), 32>>>(d);
  cudaError_t e_grid_y = cudaGetLastError();
  mark_kernel<<<1, 32, 49153>>>(d); // over 48 KiB without the attribute
  cudaError_t e_smem = cudaGetLastError();
  cudaError_t e_attr = cudaFuncSetAttribute(mark_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 232449);
  cudaGetLastError();
  kt_down(&h, d, 4);
  kt_check(e_threads == cudaErrorInvalidConfiguration && e_cleared == cudaSuccess &&
               e_dims == cudaErrorInvalidConfiguration && e_grid == cudaErrorInvalidConfiguration &&
               e_grid_y == cudaErrorInvalidConfiguration && e_smem == cudaErrorInvalidValue &&
               e_attr == cudaErrorInvalidValue && h == 0,
           "launch errors: 1025 threads %s, (32,32,2) %s, grid 0 %s, grid.y 65536 %s, 49153 B dynamic shared %s, "
           "attribute 232449 B %s; error cleared by cudaGetLastError; no kernel ran: %s",
           cudaGetErrorName(e_threads), cudaGetErrorName(e_dims), cudaGetErrorName(e_grid),
           cudaGetErrorName(e_grid_y), cudaGetErrorName(e_smem), cudaGetErrorName(e_attr), h == 0 ? "yes" : "no");
  mark_kernel<<<1, 1024, 232448>>>(d);
  cudaError_t e_big = cudaGetLastError();
  cudaFuncSetAttribute(mark_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 232448);
  mark_kernel<<<1, 1024, 232448>>>(d);
  cudaError_t e_ok = cudaGetLastError();
  kt_down(&h, d, 4);
  kt_check(e_big == cudaErrorInvalidValue && e_ok == cudaSuccess && h == 1,
           "232448 B dynamic shared: %s before the opt-in, %s after, kernel ran: %s", cudaGetErrorName(e_big),
           cudaGetErrorName(e_ok), h == 1 ? "yes" : "no");
  char host[16];
  cudaError_t m1 = cudaMemcpy(host, d, 8, cudaMemcpyDeviceToHost); // 8 bytes of a 4-byte allocation
  cudaError_t m2 = cudaMemset(d, 0, 5);
  cudaError_t m3 = cudaFree(host);
  cudaError_t m4 = cudaMemcpy(d, host, 4, cudaMemcpyHostToDevice);
  cudaGetLastError();
  kt_check(m1 == cudaErrorInvalidValue && m2 == cudaErrorInvalidValue && m3 == cudaErrorInvalidValue &&
               m4 == cudaSuccess,
           "memory checks: copy past an allocation %s, memset past it %s, cudaFree of host memory %s, a copy inside "
           "%s",
           cudaGetErrorName(m1), cudaGetErrorName(m2), cudaGetErrorName(m3), cudaGetErrorName(m4));
  kt_free(d);
}

// ---- deadlock detection ---------------------------------------------------------------

__global__ void deadlock_kernel(int *out) {
  if (threadIdx.x == 3) return; // lane 3 never reaches the shuffle
  out[threadIdx.x] = __shfl_xor_sync(0xFFFFFFFFu, (int)threadIdx.x, 1);
}

static void check_deadlock(void) {
  int *d = (int *)kt_dev(32 * 4);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY); // the child's report is expected: keep the log clean
    if (fd >= 0) dup2(fd, 2);
    deadlock_kernel<<<1, 32>>>(d);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  kt_check(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
           "a warp shuffle lane 3 never reaches: the emulator aborts (deadlock report) instead of hanging: %s",
           WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
  kt_free(d);
}

// ---- tensor-core models ----------------------------------------------------------------

// One warp: A [16][16], B as Bt [n 16][k 16] (K-major) and as Bv [k 16][n 16]
// (MN-major), all bf16, through cp.async into shared memory; out_k and
// out_t [16][16] fp32 = init + A·B from the two loads of B; zero [8] words:
// a zero-filled cp.async chunk.
__global__ void mma_kernel(const uint16_t *a, const uint16_t *bt, const uint16_t *bv, const float *init, float *out_k,
                           float *out_t, uint32_t *zero) {
  __shared__ uint4 raw[3 * 32 + 1]; // 16-byte aligned, as ldmatrix and cp.async need
  uint16_t *sa = (uint16_t *)raw, *sbt = sa + 256, *sbv = sbt + 256;
  uint32_t *sz = (uint32_t *)(raw + 3 * 32);
  int lane = threadIdx.x;
  for (int c = lane; c < 32; c += 32) {
    cp_async_16(sa + 8 * c, a + 8 * c, true);
    cp_async_16(sbt + 8 * c, bt + 8 * c, true);
    cp_async_16(sbv + 8 * c, bv + 8 * c, true);
  }
  if (lane == 0) cp_async_16(sz, a, false);
  cp_async_commit();
  cp_async_wait<0>();
  __syncwarp();
  uint32_t af[4], bk[4], bt4[4];
  ldmatrix_x4(af, sa + 16 * (lane % 16) + 8 * (lane / 16));
  ldmatrix_x4(bk, sbt + 16 * (lane % 8 + 8 * (lane / 16)) + 8 * ((lane / 8) % 2));
  ldmatrix_x4_trans(bt4, sbv + 16 * (lane % 8 + 8 * ((lane / 8) % 2)) + 8 * (lane / 16));
  int g = lane / 4, t = lane % 4;
  for (int which = 0; which < 2; which++) {
    const uint32_t *b = which ? bt4 : bk;
    float *out = which ? out_t : out_k;
    for (int n = 0; n < 2; n++) {
      float d[4];
      for (int e = 0; e < 4; e++) d[e] = init[(g + 8 * (e / 2)) * 16 + 8 * n + 2 * t + e % 2];
      mma_m16n8k16_bf16(d, af, b + 2 * n);
      for (int e = 0; e < 4; e++) out[(g + 8 * (e / 2)) * 16 + 8 * n + 2 * t + e % 2] = d[e];
    }
  }
  if (lane < 4) zero[lane] = sz[lane];
}

static void check_mma(uint64_t *rng) {
  uint16_t a[256], bt[256], bv[256];
  float init[256], want[256], got_k[256], got_t[256];
  uint32_t zero[4];
  double B[16][16]; // B[k][n]
  for (int i = 0; i < 256; i++) a[i] = cplab_bf16_from_f32((float)kt_int(rng, -8, 8));
  for (int k = 0; k < 16; k++)
    for (int n = 0; n < 16; n++) {
      B[k][n] = (double)kt_int(rng, -8, 8);
      bt[n * 16 + k] = bv[k * 16 + n] = cplab_bf16_from_f32((float)B[k][n]);
    }
  for (int i = 0; i < 256; i++) init[i] = (float)kt_int(rng, -100, 100) / 4.0f;
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      double acc = init[m * 16 + n];
      for (int k = 0; k < 16; k++) acc += cplab_bf16_to_f32(a[m * 16 + k]) * B[k][n];
      want[m * 16 + n] = (float)acc;
    }
  uint16_t *da = (uint16_t *)kt_dev_from(a, sizeof a), *dbt = (uint16_t *)kt_dev_from(bt, sizeof bt);
  uint16_t *dbv = (uint16_t *)kt_dev_from(bv, sizeof bv);
  float *dinit = (float *)kt_dev_from(init, sizeof init), *dk = (float *)kt_dev(sizeof got_k), *dt = (float *)kt_dev(sizeof got_t);
  uint32_t *dz = (uint32_t *)kt_dev(sizeof zero);
  mma_kernel<<<1, 32>>>(da, dbt, dbv, dinit, dk, dt, dz);
  cudaError_t err = cudaGetLastError();
  kt_down(got_k, dk, sizeof got_k);
  kt_down(got_t, dt, sizeof got_t);
  kt_down(zero, dz, sizeof zero);
  int bad_k = 0, bad_t = 0;
  for (int i = 0; i < 256; i++) bad_k += got_k[i] != want[i], bad_t += got_t[i] != want[i];
  kt_check(err == cudaSuccess && bad_k == 0,
           "mma_m16n8k16_bf16 over ldmatrix_x4 fragments (A, K-major B): init + A·B, 256 elements, %d wrong", bad_k);
  kt_check(err == cudaSuccess && bad_t == 0,
           "mma_m16n8k16_bf16 over ldmatrix_x4_trans fragments (MN-major B): init + A·B, 256 elements, %d wrong", bad_t);
  kt_check(zero[0] == 0 && zero[1] == 0 && zero[2] == 0 && zero[3] == 0, "cp_async_16 with !valid writes 16 zero bytes");
  kt_free(da), kt_free(dbt), kt_free(dbv), kt_free(dinit), kt_free(dk), kt_free(dt), kt_free(dz);
}

// One warp: A [16][32] and Bt [n 16][k 32] e4m3 bytes, copied 4 bytes at a
// time (cp_async_4) into shared memory, through ldmatrix_x4 (a b16 pair is
// two bytes) into mma_m16n8k32_e4m3: out [16][16] = init + A·B; zero [1]: a
// zero-filled cp_async_4 word.
__global__ void mma8_kernel(const uint8_t *a, const uint8_t *bt, const float *init, float *out, uint32_t *zero) {
  __shared__ uint4 raw[2 * 32 + 1];
  uint8_t *sa = (uint8_t *)raw, *sb = sa + 512;
  uint32_t *sz = (uint32_t *)(raw + 2 * 32);
  int lane = threadIdx.x;
  for (int w = lane; w < 128; w += 32) {
    cp_async_4(sa + 4 * w, a + 4 * w, true);
    cp_async_4(sb + 4 * w, bt + 4 * w, true);
  }
  if (lane == 0) cp_async_4(sz, a, false);
  cp_async_commit();
  cp_async_wait<0>();
  __syncwarp();
  uint32_t af[4], bf[4];
  int i = lane / 8, r = lane % 8;
  ldmatrix_x4(af, sa + 32 * (r + 8 * (i % 2)) + 16 * (i / 2)); // matrices: rows 0-7 / 8-15 x bytes 0-15 / 16-31
  ldmatrix_x4(bf, sb + 32 * (r + 8 * (i / 2)) + 16 * (i % 2)); // n8 tile i / 2, bytes (i % 2) * 16 ..
  int g = lane / 4, t = lane % 4;
  for (int n = 0; n < 2; n++) {
    float d[4];
    for (int e = 0; e < 4; e++) d[e] = init[(g + 8 * (e / 2)) * 16 + 8 * n + 2 * t + e % 2];
    mma_m16n8k32_e4m3(d, af, bf + 2 * n);
    for (int e = 0; e < 4; e++) out[(g + 8 * (e / 2)) * 16 + 8 * n + 2 * t + e % 2] = d[e];
  }
  if (lane == 0) zero[0] = sz[0];
}

static void check_mma_e4m3(uint64_t *rng) {
  uint8_t a[512], bt[512];
  float init[256], want[256], got[256];
  uint32_t zero = 1;
  for (int i = 0; i < 512; i++) a[i] = cplab_e4m3_from_f32((float)kt_int(rng, -8, 8) / 4.0f);
  for (int i = 0; i < 512; i++) bt[i] = cplab_e4m3_from_f32((float)kt_int(rng, -8, 8));
  for (int i = 0; i < 256; i++) init[i] = (float)kt_int(rng, -100, 100) / 4.0f;
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      double acc = init[m * 16 + n];
      for (int k = 0; k < 32; k++) acc += (double)cplab_e4m3_to_f32(a[m * 32 + k]) * cplab_e4m3_to_f32(bt[n * 32 + k]);
      want[m * 16 + n] = (float)acc;
    }
  uint8_t *da = (uint8_t *)kt_dev_from(a, sizeof a), *db = (uint8_t *)kt_dev_from(bt, sizeof bt);
  float *dinit = (float *)kt_dev_from(init, sizeof init), *dout = (float *)kt_dev(sizeof got);
  uint32_t *dz = (uint32_t *)kt_dev(sizeof zero);
  mma8_kernel<<<1, 32>>>(da, db, dinit, dout, dz);
  cudaError_t err = cudaGetLastError();
  kt_down(got, dout, sizeof got);
  kt_down(&zero, dz, sizeof zero);
  int bad = 0;
  for (int i = 0; i < 256; i++) bad += got[i] != want[i];
  kt_check(err == cudaSuccess && bad == 0,
           "mma_m16n8k32_e4m3 over ldmatrix_x4 fragments of K-major byte rows: init + A·B, 256 elements, %d wrong", bad);
  kt_check(zero == 0, "cp_async_4 with !valid writes 4 zero bytes");
  kt_free(da), kt_free(db), kt_free(dinit), kt_free(dout), kt_free(dz);
}

// Two bulk copies into one buffer through one mbarrier (phases 0 and 1),
// the second after every thread has read the first. bad: a wait for phase
// 1 before its copy is issued (the emulator aborts).
__global__ void bulk_kernel(const uint4 *src, uint32_t *out, int bad) {
  __shared__ uint64_t bar;
  __shared__ uint4 buf[64];
  if (threadIdx.x == 0) mbar_init(&bar, 1);
  __syncthreads();
  for (int round = 0; round < 2; round++) {
    if (threadIdx.x == 0 && !(bad && round == 1)) {
      mbar_arrive_expect_tx(&bar, sizeof buf);
      bulk_copy_g2s(buf, src + 64 * round, sizeof buf, &bar);
    }
    __syncthreads();
    mbar_wait(&bar, (unsigned)round);
    out[64 * round + threadIdx.x] = buf[threadIdx.x].x + buf[threadIdx.x].w;
    __syncthreads(); // every read of buf is over before the next copy
  }
}

// The L2 prefetch's contract: a 16-byte aligned range of device memory
// (bad 1: misaligned, 2: a size not a multiple of 16, 3: host memory).
__global__ void prefetch_kernel(const uint4 *src, int bad, uint32_t *out) {
  static uint4 host[4];
  const char *p = (const char *)src + (bad == 1 ? 4 : 0);
  if (bad == 3) p = (const char *)host;
  bulk_prefetch_l2(p, bad == 2 ? 40u : 48u);
  out[threadIdx.x] = 1;
}

static void check_prefetch(void) {
  uint4 *dsrc = (uint4 *)kt_dev(64 * sizeof(uint4));
  uint32_t *dout = (uint32_t *)kt_dev(sizeof(uint32_t)), got = 0;
  prefetch_kernel<<<1, 1>>>(dsrc, 0, dout);
  cudaError_t err = cudaGetLastError();
  kt_down(&got, dout, sizeof got);
  kt_check(err == cudaSuccess && got == 1, "bulk_prefetch_l2 of 48 aligned bytes of device memory runs");
  for (int bad = 1; bad <= 3; bad++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open("/dev/null", O_WRONLY);
      if (fd >= 0) dup2(fd, 2), dup2(fd, 1);
      prefetch_kernel<<<1, 1>>>(dsrc, bad, dout);
      _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    kt_check(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "bulk_prefetch_l2 %s aborts: %s",
             bad == 1 ? "of a misaligned address" : bad == 2 ? "of 40 bytes" : "of host memory",
             WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exited");
  }
  kt_free(dsrc), kt_free(dout);
}

static void check_bulk(void) {
  uint4 src[128];
  uint32_t got[128];
  for (uint32_t i = 0; i < 128; i++) src[i] = make_uint4(i, 7 * i, 0, 1000 * i);
  uint4 *dsrc = (uint4 *)kt_dev_from(src, sizeof src);
  uint32_t *dout = (uint32_t *)kt_dev(sizeof got);
  bulk_kernel<<<1, 64>>>(dsrc, dout, 0);
  cudaError_t err = cudaGetLastError();
  kt_down(got, dout, sizeof got);
  int bad = 0;
  for (uint32_t i = 0; i < 128; i++) bad += got[i] != 1001 * i;
  kt_check(err == cudaSuccess && bad == 0, "bulk_copy_g2s through an mbarrier, phases 0 and 1: 128 words, %d wrong", bad);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) dup2(fd, 2), dup2(fd, 1);
    bulk_kernel<<<1, 64>>>(dsrc, dout, 1);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  kt_check(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "mbar_wait for a phase whose copy was never issued aborts: %s",
           WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exited");
  kt_free(dsrc), kt_free(dout);
}

// ---- thread-block clusters -------------------------------------------------------------

#define CL_THREADS 96 // three warps: not a power of two of them
// The kernel's dynamic shared memory: mine32[T], mine64[T], inbox32[T],
// inbox64[T], counters[4] (block 0's: sum, max, min).
#define CL_SMEM ((size_t)CL_THREADS * (4 + 8 + 4 + 8) + 16)
// Words of output a block: peer32[T], peer32 by address arithmetic[T],
// peer64[2T], inbox32[T], inbox64[2T], counters and the block's facts [8].
#define CL_OUT (7 * CL_THREADS + 8)

// The values of thread t of block `rank` in cluster c (host and device).
static inline uint32_t cl_value32(unsigned c, unsigned rank, unsigned t) {
  return ((c * 16 + rank) * CL_THREADS + t + 1) * 2654435761u ^ 0x5bd1e995u;
}
static inline uint64_t cl_value64(unsigned c, unsigned rank, unsigned t) {
  return (uint64_t)cl_value32(c, rank, t) << 32 | (((c * 16 + rank) * CL_THREADS + t) * 40503u + 17u);
}
static inline uint32_t cl_sent32(unsigned c, unsigned rank, unsigned t) { return cl_value32(c, rank, t) * 3u + 1u; }
static inline uint64_t cl_sent64(unsigned c, unsigned rank, unsigned t) { return ~cl_value64(c, rank, t); }

// Each block publishes its values, then (after cluster_sync) reads its
// right neighbour's (rank + 1), stores into its left neighbour's inbox
// (rank - 1), and counts into block 0's counters; after a second
// cluster_sync every block writes what it holds. A last cluster_sync keeps
// every block alive until the others' accesses are over.
__global__ void cluster_kernel(uint32_t *out) {
  extern __shared__ uint64_t cl_smem[];
  uint64_t *mine64 = cl_smem, *inbox64 = cl_smem + CL_THREADS;
  uint32_t *mine32 = (uint32_t *)(cl_smem + 2 * CL_THREADS), *inbox32 = mine32 + CL_THREADS;
  uint32_t *counters = inbox32 + CL_THREADS;
  unsigned t = threadIdx.x, rank = cluster_rank(), n = cluster_blocks();
  unsigned c = blockIdx.y * (gridDim.x / n) + blockIdx.x / n; // the cluster's index
  mine32[t] = cl_value32(c, rank, t);
  mine64[t] = cl_value64(c, rank, t);
  if (rank == 0 && t == 0) counters[0] = 0, counters[1] = 0, counters[2] = 0xFFFFFFFFu;
  cluster_sync();
  unsigned right = (rank + 1) % n, left = (rank + n - 1) % n, i = (t * 7 + 3) % CL_THREADS;
  uint32_t *o = out + (size_t)(blockIdx.y * gridDim.x + blockIdx.x) * CL_OUT;
  o[t] = cluster_ld_u32(cluster_map(&mine32[i], right));
  o[CL_THREADS + t] = cluster_ld_u32(cluster_map(mine32, right) + 4 * (CL_THREADS - 1 - t));
  uint64_t v = cluster_ld_u64(cluster_map(mine64, right) + 8 * i);
  o[2 * CL_THREADS + 2 * t] = (uint32_t)v, o[2 * CL_THREADS + 2 * t + 1] = (uint32_t)(v >> 32);
  cluster_st_u32(cluster_map(&inbox32[t], left), cl_sent32(c, rank, t));
  cluster_st_u64(cluster_map(inbox64, left) + 8 * t, cl_sent64(c, rank, t));
  uint32_t counters0 = cluster_map(counters, 0);
  cluster_atomic_add_u32(counters0, cl_value32(c, rank, t) % 1000u + 1u);
  cluster_atomic_max_u32(counters0 + 4, cl_value32(c, rank, t));
  cluster_atomic_min_u32(counters0 + 8, cl_value32(c, rank, t));
  cluster_sync();
  o[4 * CL_THREADS + t] = inbox32[t];
  o[5 * CL_THREADS + 2 * t] = (uint32_t)inbox64[t], o[5 * CL_THREADS + 2 * t + 1] = (uint32_t)(inbox64[t] >> 32);
  if (t == 0) {
    uint32_t *facts = o + 7 * CL_THREADS;
    if (rank == 0) facts[0] = counters[0], facts[1] = counters[1], facts[2] = counters[2];
    facts[3] = rank, facts[4] = n;
  }
  cluster_sync();
}

// Every word cluster_kernel wrote for a grid in clusters of n: wrong ones counted.
static long cluster_wrong(const std::vector<uint32_t> &h, dim3 grid, unsigned n) {
  long bad = 0;
  for (unsigned by = 0; by < grid.y; by++)
    for (unsigned bx = 0; bx < grid.x; bx++) {
      const uint32_t *o = h.data() + (size_t)(by * grid.x + bx) * CL_OUT;
      unsigned rank = bx % n, c = by * (grid.x / n) + bx / n, right = (rank + 1) % n, from = (rank + 1) % n;
      for (unsigned t = 0; t < CL_THREADS; t++) {
        unsigned i = (t * 7 + 3) % CL_THREADS;
        uint64_t peer64 = cl_value64(c, right, i), in64 = cl_sent64(c, from, t);
        bad += o[t] != cl_value32(c, right, i);
        bad += o[CL_THREADS + t] != cl_value32(c, right, CL_THREADS - 1 - t);
        bad += o[2 * CL_THREADS + 2 * t] != (uint32_t)peer64 ||
               o[2 * CL_THREADS + 2 * t + 1] != (uint32_t)(peer64 >> 32);
        bad += o[4 * CL_THREADS + t] != cl_sent32(c, from, t); // the right neighbour stores into my inbox
        bad += o[5 * CL_THREADS + 2 * t] != (uint32_t)in64 || o[5 * CL_THREADS + 2 * t + 1] != (uint32_t)(in64 >> 32);
      }
      const uint32_t *facts = o + 7 * CL_THREADS;
      if (rank == 0) {
        uint32_t sum = 0, most = 0, least = 0xFFFFFFFFu;
        for (unsigned r = 0; r < n; r++)
          for (unsigned t = 0; t < CL_THREADS; t++) {
            uint32_t v = cl_value32(c, r, t);
            sum += v % 1000u + 1u, most = v > most ? v : most, least = v < least ? v : least;
          }
        bad += (facts[0] != sum) + (facts[1] != most) + (facts[2] != least);
      }
      bad += (facts[3] != rank) + (facts[4] != n);
    }
  return bad;
}

// One launch of cluster_kernel over grid in clusters of n (0: a plain
// launch, without clusters): its error and the number of wrong words.
static long cluster_case(dim3 grid, unsigned n, cudaError_t *err) {
  size_t words = (size_t)grid.x * grid.y * CL_OUT;
  uint32_t *d = (uint32_t *)kt_dev(words * 4);
  cudaMemset(d, 0, words * 4);
  if (n) {
    *err = cluster_launch(cluster_kernel, grid, dim3(CL_THREADS), CL_SMEM, (cudaStream_t)0, n, d);
  } else {
    cluster_kernel<<<grid, CL_THREADS, CL_SMEM>>>(d);
    *err = cudaGetLastError();
  }
  std::vector<uint32_t> h(words);
  kt_down(h.data(), d, words * 4);
  kt_free(d);
  return cluster_wrong(h, grid, n ? n : 1);
}

// The misuses, one a child each; mode says which.
__global__ void cluster_misuse_kernel(uint32_t *global, int mode) {
  __shared__ uint32_t static_word;
  extern __shared__ uint32_t dyn[];
  unsigned rank = cluster_rank(), n = cluster_blocks();
  dyn[threadIdx.x] = rank;
  cluster_sync();
  switch (mode) {
  case 0: cluster_ld_u32(cluster_map(global, 0)); break;                  // not shared memory
  case 1: cluster_ld_u32(cluster_map(&static_word, 0)); break;            // static shared memory
  case 2: cluster_ld_u32(cluster_map(dyn, n)); break;                     // no such rank
  case 3: cluster_ld_u32(cluster_map(dyn, 0) + 4 * blockDim.x); break;    // past the dynamic memory
  case 4: cluster_st_u32(cluster_map(dyn, (rank + 1) % n), 1); return;    // no cluster_sync before exiting
  case 5: static_word = rank; break;                                      // static shared in a cluster
  case 6:                                                                 // block 0 waits at __syncthreads
    if (rank == 0 && threadIdx.x == 0) cluster_sync();
    else if (rank == 0) __syncthreads();
    else cluster_sync();
    return;
  }
  cluster_sync();
}

static const char *const cluster_misuse_names[] = {
    "cluster_map of global memory", "cluster_map of a static __shared__ variable", "cluster_map to rank n",
    "cluster_ld_u32 past the dynamic shared memory", "cluster_st_u32 into a block that has exited",
    "a cluster kernel writing static __shared__", "threads of a block at __syncthreads and at cluster_sync"};

static void check_clusters(void) {
  cudaError_t e4, e8, e16, e1, e_plain;
  long bad4 = cluster_case(dim3(16), 4, &e4), bad8 = cluster_case(dim3(8, 2), 8, &e8);
  kt_check(e4 == cudaSuccess && bad4 == 0,
           "clusters of 4 (grid 16): neighbours' u32/u64 through cluster_map, stores into their inboxes, atomic "
           "add/max/min into block 0's: %ld words wrong (%s)",
           bad4, cudaGetErrorName(e4));
  kt_check(e8 == cudaSuccess && bad8 == 0, "clusters of 8 (grid (8, 2)): %ld words wrong (%s)", bad8,
           cudaGetErrorName(e8));
  long bad1 = cluster_case(dim3(3), 1, &e1), bad_plain = cluster_case(dim3(2), 0, &e_plain);
  kt_check(e1 == cudaSuccess && bad1 == 0 && e_plain == cudaSuccess && bad_plain == 0,
           "clusters of 1, and a launch without clusters (rank 0 of 1): %ld, %ld words wrong (%s, %s)", bad1, bad_plain,
           cudaGetErrorName(e1), cudaGetErrorName(e_plain));

  // Launch errors: returned and kept for cudaGetLastError, nothing run.
  uint32_t *d = (uint32_t *)kt_dev(32 * CL_OUT * 4);
  cudaMemset(d, 0, 32 * CL_OUT * 4);
  cudaError_t e_multiple = cluster_launch(cluster_kernel, dim3(6), dim3(CL_THREADS), CL_SMEM, 0, 4, d);
  cudaError_t e_last = cudaGetLastError(), e_cleared = cudaGetLastError();
  cudaError_t e_zero = cluster_launch(cluster_kernel, dim3(8), dim3(CL_THREADS), CL_SMEM, 0, 0, d);
  cudaError_t e_np = cluster_launch(cluster_kernel, dim3(16), dim3(CL_THREADS), CL_SMEM, 0, 16, d);
  cudaError_t e_32 = cluster_launch(cluster_kernel, dim3(32), dim3(CL_THREADS), CL_SMEM, 0, 32, d);
  cudaError_t e_threads = cluster_launch(cluster_kernel, dim3(8), dim3(1025), CL_SMEM, 0, 4, d);
  cudaGetLastError();
  std::vector<uint32_t> h(32 * CL_OUT);
  kt_down(h.data(), d, h.size() * 4);
  long written = 0;
  for (uint32_t w : h) written += w != 0;
  kt_check(e_multiple == cudaErrorInvalidClusterSize && e_last == cudaErrorInvalidClusterSize &&
               e_cleared == cudaSuccess && e_zero == cudaErrorInvalidClusterSize &&
               e_np == cudaErrorInvalidClusterSize && e_32 == cudaErrorInvalidClusterSize &&
               e_threads == cudaErrorInvalidConfiguration && written == 0,
           "cluster launch errors: grid 6 in clusters of 4 %s (cudaGetLastError %s, then %s), cluster 0 %s, 16 without "
           "the non-portable attribute %s, 32 %s, 1025 threads %s; words written %ld",
           cudaGetErrorName(e_multiple), cudaGetErrorName(e_last), cudaGetErrorName(e_cleared),
           cudaGetErrorName(e_zero), cudaGetErrorName(e_np), cudaGetErrorName(e_32), cudaGetErrorName(e_threads),
           written);
  kt_free(d);
  cudaError_t e_attr = cudaFuncSetAttribute(cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  long bad16 = cluster_case(dim3(32), 16, &e16);
  kt_check(e_attr == cudaSuccess && e16 == cudaSuccess && bad16 == 0,
           "clusters of 16 (grid 32) after cudaFuncAttributeNonPortableClusterSizeAllowed: %ld words wrong (%s)", bad16,
           cudaGetErrorName(e16));

  uint32_t *g = (uint32_t *)kt_dev(64);
  for (int mode = 0; mode < 7; mode++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open("/dev/null", O_WRONLY); // the child's report is expected: keep the log clean
      if (fd >= 0) dup2(fd, 2), dup2(fd, 1);
      cluster_launch(cluster_misuse_kernel, dim3(8), dim3(64), 64 * 4, 0, 4, g, mode);
      _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    kt_check(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: the emulator aborts: %s", cluster_misuse_names[mode],
             WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exited");
  }
  kt_free(g);
}

int main(void) {
  uint64_t rng;
  kt_begin("test_emu_self", &rng);
  check_conversions();
  check_indices();
  check_collectives(&rng);
  check_early_exit();
  check_shared();
  check_errors();
  check_deadlock();
  check_mma(&rng);
  check_mma_e4m3(&rng);
  check_bulk();
  check_prefetch();
  check_clusters();
  return kt_end();
}
