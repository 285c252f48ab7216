// tests/emu/include/cuda_emu_mma.h: CPU models of the warp-wide tensor-core
// instructions behind kernels/mma.cuh (the only header that includes this
// one), written from the PTX ISA's fragment layouts ("Warp-level matrix
// fragment mma.m16n8k16", "ldmatrix", "cp.async"). Same names and
// signatures as mma.cuh's device path.
//
// Fragments: lane l is in group g = l / 4 with index t = l % 4 in its group.
//   A (16 x 16 bf16, row-major), 4 words a0..a3 of two bf16 (low half first):
//     a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1],
//     a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9];
//   B (16 x 8 bf16, "col"), 2 words: b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g];
//   C, D (16 x 8 fp32): c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1].
//   The e4m3 form (m16n8k32) has the same shapes in bytes: a0 = A[g][4t..4t+3],
//     a1 = A[g+8][4t..], a2 = A[g][4t+16..], a3 = A[g+8][4t+16..] (the lower
//     column in the low byte); b0 = B[4t..4t+3][g], b1 = B[4t+16..][g].
//   ldmatrix .x4: lanes 8i .. 8i+7 give the row addresses of 8x8 matrix i
//     (16 bytes a row, 16-byte aligned, in shared memory); register i of
//     lane l = matrix i's row g, elements 2t, 2t+1; with .trans, elements
//     (2t, g) and (2t+1, g) of the matrix as stored (its transpose's row g).
// The models exchange the lanes' fragments through cuda_emu::warp_gather:
// every lane of the warp must call with the full mask, as on the device
// (.aligned), else the emulator reports the warp as divergent or deadlocked.
//
// Numerics: mma's products of bf16 (and of e4m3) are exact; the model adds the 16 products
// and c in double and rounds once to fp32. The hardware's order and internal
// rounding differ (its result is within a few fp32 ulps of this), so tests of
// kernels built on it compare against a reference with a tolerance, not bits.
//
// cp.async (16 bytes, or 4 bytes: cp_async_4) completes at once in the model (the copy or the zero fill happens
// in the call); commit and wait are no-ops. A kernel that reads a
// destination before waiting for it is therefore not caught here: that
// ordering is checked on the GPU only (tests/gpu, compute-sanitizer's
// racecheck).
//
// cp.async.bulk (bulk_copy_g2s) likewise completes in the call; its L2
// prefetch (bulk_prefetch_l2) only checks its arguments. The
// mbarrier's state lives in its 64 bits: bit 63 the phase's parity, bits
// 48..62 the arrival count, 32..47 the arrivals pending, 0..31 the
// transaction bytes pending (signed); a phase completes when both pending
// counts are 0. mbar_wait aborts where the phase it waits for has not
// completed: copies complete at their issue here, so such a wait is not
// ordered after the arrive and the copy (a missing barrier), or waits for
// the wrong parity.
//
// Checked in every call, aborting with the kernel's name: ldmatrix row and
// cp.async addresses 16-byte aligned, ldmatrix and cp.async destinations in
// shared memory, cp.async sources in device memory (unless zero-filled).
#ifndef CPLAB_TESTS_EMU_CUDA_EMU_MMA_H
#define CPLAB_TESTS_EMU_CUDA_EMU_MMA_H
#include "../cuda_emu.h"
#include "cuda_fp8.h"

#include <cstdio>
#include <cstdlib>

namespace cuda_emu {

[[noreturn]] static inline void mma_fail(const char *what) {
  fprintf(stderr, "cuda_emu: %s (thread %u of block %u,%u)\n", what, threadIdx.x, blockIdx.x, blockIdx.y);
  abort();
}

static inline double mma_bf16_lo(uint32_t w) { return (double)__uint_as_float(w << 16); }
static inline double mma_bf16_hi(uint32_t w) { return (double)__uint_as_float(w & 0xFFFF0000u); }

// One lane's fragment words, as the warp gather hands them to the others.
struct mma_a_frag {
  uint32_t a[4];
};
struct mma_b_frag {
  uint32_t b[2];
};

// The element `part` of a fragment word: bf16 (two a word, the lower column
// in the low half) or e4m3 (four a word, the lower column in the low byte).
struct mma_bf16_word {
  static constexpr int per_word = 2;
  static double elem(uint32_t w, int part) { return part ? mma_bf16_hi(w) : mma_bf16_lo(w); }
};

// e4m3 byte -> double through a table made once from the conversion itself
// (the models decode every fragment byte they read: a table keeps the
// emulated fp8 kernels' tests fast, under the sanitizers too).
struct mma_e4m3_word {
  static constexpr int per_word = 4;
  static double elem(uint32_t w, int part) {
    static const struct table {
      double v[256];
      table() {
        for (int b = 0; b < 256; b++) {
          __nv_fp8_e4m3 e;
          e.__x = (__nv_fp8_storage_t)b;
          v[b] = (double)static_cast<float>(e);
        }
      }
    } t;
    return t.v[(w >> (8 * part)) & 0xFFu];
  }
};

// One lane's part in an mma: its fragments, its accumulators in, and its
// results out once the warp's product is made.
struct mma_lane {
  mma_a_frag a;
  mma_b_frag b;
  float d[4];
  bool done;
};

// D = A · B + C for the whole warp, from the 32 lanes' parts (K = 8 words'
// worth of elements; E elements a word). Element k of row r of A is in lane
// 4·(r mod 8) + (k mod K/2) / E, register (r >= 8) + 2·(k >= K/2), part
// k mod E; element (k, n) of B in lane 4·n + (k mod K/2) / E, register
// k >= K/2, part k mod E. Each sum runs in k order in double, from c.
template <class Word>
static inline void mma_warp(mma_lane *const lanes[32]) {
  constexpr int E = Word::per_word, K = 8 * E;
  double A[16][K], B[8][K];
  for (int r = 0; r < 16; r++)
    for (int h = 0; h < 2; h++)
      for (int q = 0; q < 4; q++)
        for (int p = 0; p < E; p++) A[r][h * K / 2 + q * E + p] = Word::elem(lanes[4 * (r % 8) + q]->a.a[(r >= 8) + 2 * h], p);
  for (int n = 0; n < 8; n++)
    for (int h = 0; h < 2; h++)
      for (int q = 0; q < 4; q++)
        for (int p = 0; p < E; p++) B[n][h * K / 2 + q * E + p] = Word::elem(lanes[4 * n + q]->b.b[h], p);
  for (int l = 0; l < 32; l++) {
    int g = l / 4, t = l % 4;
    for (int e = 0; e < 4; e++) {
      const double *a = A[g + 8 * (e / 2)], *b = B[2 * t + e % 2];
      double s = lanes[l]->d[e];
      for (int k = 0; k < K; k++) s += a[k] * b[k];
      lanes[l]->d[e] = (float)s;
    }
    lanes[l]->done = true;
  }
}

// d += A · B for one warp-wide tile. The lanes hand each other their parts
// (on their fiber stacks) through the warp gather; the lane that resumes
// first (the last to arrive: the others are still waiting in the gather, so
// every part is alive) makes the warp's product into every part; the others
// find theirs done.
template <class Word>
static inline void mma_tile(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  mma_lane mine = {{{a[0], a[1], a[2], a[3]}}, {{b[0], b[1]}}, {d[0], d[1], d[2], d[3]}, false};
  const uint64_t *all = warp_gather(0xFFFFFFFFu, (uint64_t)(uintptr_t)&mine);
  if (!mine.done) {
    mma_lane *lanes[32];
    for (int l = 0; l < 32; l++) lanes[l] = (mma_lane *)(uintptr_t)all[l];
    mma_warp<Word>(lanes);
  }
  for (int e = 0; e < 4; e++) d[e] = mine.d[e];
}

} // namespace cuda_emu

// d += A · B for one m16n8k16 tile (bf16 in, fp32 accumulate).
static inline void mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  cuda_emu::mma_tile<cuda_emu::mma_bf16_word>(d, a, b);
}

// d += A · B for one m16n8k32 tile (e4m3 in, fp32 accumulate).
static inline void mma_m16n8k32_e4m3(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  cuda_emu::mma_tile<cuda_emu::mma_e4m3_word>(d, a, b);
}

namespace cuda_emu {
// The 32 row addresses of an ldmatrix .x4, checked.
static inline void ldmatrix_rows(const void *row, const unsigned char *rows[32]) {
  if ((uintptr_t)row % 16) mma_fail("ldmatrix: a row address not 16-byte aligned");
  if (!is_shared_range(row, 16)) mma_fail("ldmatrix: a row address outside shared memory");
  const uint64_t *all = warp_gather(0xFFFFFFFFu, (uint64_t)(uintptr_t)row);
  for (int l = 0; l < 32; l++) rows[l] = (const unsigned char *)(uintptr_t)all[l];
}
static inline uint32_t ldmatrix_u16(const unsigned char *row, int col) {
  uint16_t v;
  memcpy(&v, row + 2 * col, 2);
  return v;
}
} // namespace cuda_emu

// Four 8x8 b16 matrices; this lane gives the address of row (lane % 8) of
// matrix lane / 8.
static inline void ldmatrix_x4(uint32_t r[4], const void *row) {
  const unsigned char *rows[32];
  cuda_emu::ldmatrix_rows(row, rows);
  int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  uint32_t v[4];
  for (int i = 0; i < 4; i++) {
    const unsigned char *p = rows[8 * i + g];
    v[i] = cuda_emu::ldmatrix_u16(p, 2 * t) | cuda_emu::ldmatrix_u16(p, 2 * t + 1) << 16;
  }
  __syncwarp();
  for (int i = 0; i < 4; i++) r[i] = v[i];
}

// As ldmatrix_x4, each matrix transposed.
static inline void ldmatrix_x4_trans(uint32_t r[4], const void *row) {
  const unsigned char *rows[32];
  cuda_emu::ldmatrix_rows(row, rows);
  int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  uint32_t v[4];
  for (int i = 0; i < 4; i++)
    v[i] = cuda_emu::ldmatrix_u16(rows[8 * i + 2 * t], g) | cuda_emu::ldmatrix_u16(rows[8 * i + 2 * t + 1], g) << 16;
  __syncwarp();
  for (int i = 0; i < 4; i++) r[i] = v[i];
}

// p rounded up to a multiple of align (host addresses stand for shared ones).
static inline unsigned char *mma_align_smem(void *p, uint32_t align) {
  return (unsigned char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
}

// 16 bytes global -> shared, or 16 zero bytes when !valid (src not read).
static inline void cp_async_16(void *dst, const void *src, bool valid) {
  if ((uintptr_t)dst % 16 || (valid && (uintptr_t)src % 16)) cuda_emu::mma_fail("cp.async: address not 16-byte aligned");
  if (!cuda_emu::is_shared_range(dst, 16)) cuda_emu::mma_fail("cp.async: destination outside shared memory");
  if (valid && !cuda_emu::is_device_range(src, 16)) cuda_emu::mma_fail("cp.async: source outside device memory");
  if (valid) memcpy(dst, src, 16);
  else memset(dst, 0, 16);
}
// 4 bytes global -> shared, or 4 zero bytes when !valid.
static inline void cp_async_4(void *dst, const void *src, bool valid) {
  if ((uintptr_t)dst % 4 || (valid && (uintptr_t)src % 4)) cuda_emu::mma_fail("cp.async: address not 4-byte aligned");
  if (!cuda_emu::is_shared_range(dst, 4)) cuda_emu::mma_fail("cp.async: destination outside shared memory");
  if (valid && !cuda_emu::is_device_range(src, 4)) cuda_emu::mma_fail("cp.async: source outside device memory");
  if (valid) memcpy(dst, src, 4);
  else memset(dst, 0, 4);
}
static inline void cp_async_commit(void) {}

static inline void fence_proxy_async(void) {} // one memory, one proxy here

static inline void mbar_check(const uint64_t *bar) {
  if ((uintptr_t)bar % 8 || !cuda_emu::is_shared_range(bar, 8)) cuda_emu::mma_fail("mbarrier: not 8 aligned bytes of shared memory");
}
// A phase completes when no arrival and no byte is pending.
static inline void mbar_settle(uint64_t *bar) {
  uint64_t v = *bar;
  if ((v >> 32 & 0xFFFFu) == 0 && (uint32_t)v == 0) {
    uint64_t count = v >> 48 & 0x7FFFu;
    *bar = ((v ^ 1ull << 63) & 1ull << 63) | count << 48 | count << 32;
  }
}
static inline void mbar_init(uint64_t *bar, unsigned count) {
  mbar_check(bar);
  if (count == 0 || count > 0x7FFFu) cuda_emu::mma_fail("mbarrier.init: count out of range");
  *bar = (uint64_t)count << 48 | (uint64_t)count << 32;
}
static inline void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
  mbar_check(bar);
  uint64_t v = *bar;
  if ((v >> 32 & 0xFFFFu) == 0) cuda_emu::mma_fail("mbarrier.arrive: no arrival pending");
  uint32_t tx = (uint32_t)v + bytes;
  *bar = (v & ~0xFFFFFFFFull) - (1ull << 32) + tx;
  mbar_settle(bar);
}
// bytes global -> shared at once; the barrier's transaction count drops by bytes.
static inline void bulk_copy_g2s(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
  mbar_check(bar);
  if ((uintptr_t)dst % 16 || (uintptr_t)src % 16 || bytes % 16 || bytes == 0 || bytes >= 1u << 20)
    cuda_emu::mma_fail("cp.async.bulk: addresses or size not 16-byte multiples (or size 0, or >= 2^20)");
  if (!cuda_emu::is_shared_range(dst, bytes)) cuda_emu::mma_fail("cp.async.bulk: destination outside shared memory");
  if (!cuda_emu::is_device_range(src, bytes)) cuda_emu::mma_fail("cp.async.bulk: source outside device memory");
  memcpy(dst, src, bytes);
  uint64_t v = *bar;
  *bar = (v & ~0xFFFFFFFFull) | (uint32_t)((uint32_t)v - bytes);
  mbar_settle(bar);
}
// A hint with nothing to model but its contract.
static inline void bulk_prefetch_l2(const void *src, uint32_t bytes) {
  if ((uintptr_t)src % 16 || bytes % 16 || bytes == 0 || bytes >= 1u << 20)
    cuda_emu::mma_fail("cp.async.bulk.prefetch: address or size not 16-byte multiples (or size 0, or >= 2^20)");
  if (!cuda_emu::is_device_range(src, bytes)) cuda_emu::mma_fail("cp.async.bulk.prefetch: source outside device memory");
}
static inline void mbar_wait(uint64_t *bar, unsigned parity) {
  mbar_check(bar);
  if ((unsigned)(*bar >> 63) == (parity & 1u))
    cuda_emu::mma_fail("mbarrier wait: the phase has not completed (not ordered after its arrive and copy?)");
}
template <int N> static inline void cp_async_wait(void) {}

#endif
