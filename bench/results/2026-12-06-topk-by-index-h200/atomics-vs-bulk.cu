// A scratch test of call 1's guess (README.md): do shared-memory atomics slow
// down while a bulk copy (cp.async.bulk, the top-k's stage) writes the same
// SM's shared memory? Not run yet. Build and run on the node, from the tree's
// root:
//   nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O3 -Ikernels \
//     bench/results/2026-12-06-topk-by-index-h200/atomics-vs-bulk.cu -o avb && ./avb
// One 512-thread block an SM (as the top-k), 64 rounds: each thread makes 8
// shared accesses of one kind (atomicOr at scattered words, as the marking
// pass; or plain load + store) between two barriers, timed by thread 0's
// clock64; the 128 KiB copy (from an L2-resident buffer, as the stage after
// its L2 prefetch) issued before those accesses, after them, or not at all.
// Prints the mean cycles a round of the accesses for each (kind, copy).
#include <cstdint>
#include <cstdio>

#include <cuda_runtime.h>

#include "mma.cuh"

constexpr int kThreads = 512, kRounds = 64, kWords = 32768, kTargets = 2048;

__global__ void __launch_bounds__(kThreads, 1) avb(const uint32_t *src, int atomics, int copy, long long *cyc) {
  extern __shared__ uint4 sm[];
  uint64_t *bar = (uint64_t *)sm;
  uint32_t *tgt = (uint32_t *)(sm + 1), *row = tgt + kTargets;
  unsigned t = threadIdx.x, phase = 0;
  for (int i = t; i < kTargets; i += kThreads) tgt[i] = 0;
  if (t == 0) mbar_init(bar, 1);
  __syncthreads();
  long long total = 0;
  const uint32_t *from = src + (size_t)blockIdx.x * kWords;
  auto issue = [&]() {
    if (t == 0) {
      fence_proxy_async();
      mbar_arrive_expect_tx(bar, 4 * kWords);
      bulk_copy_g2s(row, from, 4 * kWords, bar);
    }
  };
  for (int r = 0; r < kRounds; r++) {
    if (copy == 1) issue();
    __syncthreads();
    long long t0 = clock64();
#pragma unroll
    for (int i = 0; i < 8; i++) {
      unsigned w = (t * 2654435761u + (unsigned)(i * 40503 + r * 977)) % kTargets;
      if (atomics) atomicOr(&tgt[w], 1u << (i & 31));
      else tgt[w] = tgt[(w + 7) % kTargets] + 1u;
    }
    __syncthreads();
    long long t1 = clock64();
    if (copy == 2) issue();
    if (copy) {
      mbar_wait(bar, phase & 1u);
      phase++;
    }
    __syncthreads();
    total += t1 - t0;
  }
  if (t == 0) cyc[blockIdx.x] = total;
}

#define CK(x)                                                                                                    \
  do {                                                                                                           \
    cudaError_t e_ = (x);                                                                                        \
    if (e_ != cudaSuccess) {                                                                                     \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                                                   \
      return 1;                                                                                                  \
    }                                                                                                            \
  } while (0)

int main(void) {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  size_t smem = 16 + 4 * (kTargets + kWords);
  CK(cudaFuncSetAttribute(avb, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  uint32_t *src = nullptr;
  long long *cyc = nullptr, *h = new long long[sms];
  CK(cudaMalloc(&src, (size_t)sms * kWords * 4));
  CK(cudaMemset(src, 0, (size_t)sms * kWords * 4));
  CK(cudaMalloc(&cyc, sizeof(long long) * sms));
  static const char *copies[] = {"no copy", "copy issued before", "copy issued after"};
  for (int rep = 0; rep < 2; rep++)
    for (int atomics = 1; atomics >= 0; atomics--)
      for (int copy = 0; copy < 3; copy++) {
        avb<<<sms, kThreads, smem>>>(src, atomics, copy, cyc);
        CK(cudaGetLastError());
        CK(cudaMemcpy(h, cyc, sizeof(long long) * sms, cudaMemcpyDeviceToHost));
        double mean = 0;
        for (int b = 0; b < sms; b++) mean += (double)h[b] / kRounds / sms;
        printf("rep %d  %-7s  %-20s  %8.0f cycles a round\n", rep, atomics ? "atomics" : "ld+st", copies[copy], mean);
      }
  cudaFree(src), cudaFree(cyc);
  delete[] h;
  return 0;
}
