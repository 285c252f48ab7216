// Top-k conversion (reference §5.2): request-relative tokens into rank-major
// workspace rows (prefill) or this rank's cache slots (decode). Contracts in
// cplab_kernels.h. Written from the rules, not from the C layout code: the
// two must agree independently.
//
// Design. The work is 4 bytes read and 4 written per entry; everything else
// (a row's region or request, its parameters, the decode block table) is a
// few bytes per row that L1 and L2 serve. At 85% of an H200's copy rate
// (~3.6 TB/s) that is ~450 G entries/s, which leaves an instruction budget of
// about 70 thread instructions per entry (132 SMs x 4 schedulers x 32 lanes x
// 1.98 GHz = 33 T/s). The first version, one thread per entry with four
// 64-bit divisions (e / k, t / I, % D, t / (I·D), each a software routine of
// ~70 instructions), was over that budget: the likely reason it ran at
// 1.2 TB/s (compute-bound; inferred from the instruction count, not profiled).
// So:
//   - every division is a multiply-high by a magic number the launcher
//     computes (conv_div32 / conv_div64 below, Granlund & Montgomery: exact
//     for the numerators used); t / I and (t / I) / D in 32 bits (t < 2^31:
//     t / (I·D) = (t / I) / D, no I·D product to overflow), the row of a
//     vector in 64 bits once per 4 entries; the results in 32-bit arithmetic
//     (the low 32 bits of the int64 formula are what the int32 result keeps,
//     so they are the same bits). About 15 instructions per entry;
//   - 16-byte accesses: when k % 4 == 0 and topk and out are 16-byte aligned
//     (production: k = 2048, cudaMalloc'd lists) a thread moves int4's of 4
//     entries, which never straddle a row; otherwise the same kernel moves
//     single entries (VW = 1), coalesced 4-byte accesses;
//   - bytes in flight: a thread issues all its CONVERT_VPT loads (64 bytes
//     in the int4 path) before it computes or stores anything, and the row
//     parameters (dependent loads: row -> region -> ws_start ...) are loaded
//     for all its vectors before the first store (a store could alias them,
//     so the compiler would not hoist them itself). ptxas (CUDA 13, sm_90a)
//     gives the int4 prefill kernel 40 registers: 6 blocks of 256 threads
//     per SM, 1536 x 64 B = 96 KiB of reads in flight per SM; the decode one
//     46 (its 16 block-table loads are in flight too, each entry's slot
//     computed as its load returns; 64 when it kept block word and offset
//     apart until the stores): 5 blocks, 80 KiB. HBM3e needs ~40-64 KiB per
//     SM to stay busy;
//   - a decode batch's lists are small (64 x 2048 entries: 512 KiB), so
//     the decode kernel takes one vector a thread where four would leave
//     SMs without a block (convert_decode_kernel's VPT): 64 x 2048 at dcp 4
//     went 5.8-6.0 -> 4.8-4.9 us on an H100 (bench/NOTES.md). Each block
//     also asking L2 for its share of the block table first, so that the
//     table's trip would overlap the list's, gained nothing there (4.9-5.1).
// The batched engine's decode rows (exec/engine_rank.c) no longer take this
// launch: the top-k (dcp 1) and the DCP merge write the slots with their
// lists (cache_slot.cuh holds the rule all three share); the per-row pass
// (exec/rank.c) and the benchmark still run it.
// Measured (H200, bench/NOTES.md): 4096 x 2048 entries (67 MB) 21.5 us,
// 8192 x 2048 37.7 us (89% and 94% of a copy of the same bytes); the decode
// rows are latency-bound (three dependent trips: list and request, block
// table, store; and the launch).
#include <cuda_runtime.h>

#include "cache_slot.cuh"
#include "check.cuh"
#include "cplab_kernels.h"

#define CONVERT_THREADS 256
#define CONVERT_VPT 4 // vectors (of VW entries) per thread
#define CONVERT_VEC_PER_BLOCK (CONVERT_THREADS * CONVERT_VPT)

// n / d for n < 2^31 and 1 <= d < 2^31: with l = ceil(log2 d) >= 1 and
// mul = ceil(2^(31+l) / d) (< 2^32), n / d = umulhi(n, mul) >> (l - 1)
// (Granlund & Montgomery 1994, Thm 4.2 with N = 31: mul·d - 2^(31+l) < d
// <= 2^l). d == 1 is mul == 0 (the shift would be -1).
typedef struct conv_div32 {
  uint32_t mul, shift;
} conv_div32;
// n / d for n < 2^63 and 1 <= d <= 2^32, the same with N = 63.
typedef struct conv_div64 {
  uint64_t mul;
  uint32_t shift;
} conv_div64;

static inline uint32_t conv_ceil_log2(uint64_t d) {
  uint32_t l = 0;
  while ((UINT64_C(1) << l) < d) l++;
  return l;
}

static conv_div32 conv_div32_make(uint32_t d) {
  conv_div32 r = {0, 0};
  if (d <= 1) return r;
  uint32_t l = conv_ceil_log2(d);
  r.mul = (uint32_t)(((UINT64_C(1) << (31 + l)) + d - 1) / d);
  r.shift = l - 1;
  return r;
}

static conv_div64 conv_div64_make(uint64_t d) {
  conv_div64 r = {0, 0};
  if (d <= 1) return r;
  uint32_t l = conv_ceil_log2(d), p = 63 + l;
  // floor(2^p / d) by long division (2^p does not fit in 64 bits; the
  // quotient does, and so does every partial one, a prefix of it).
  uint64_t q = 0, rem = 0;
  for (int b = (int)p; b >= 0; b--) {
    rem = rem * 2 + (b == (int)p);
    q = q * 2 + (rem >= d);
    if (rem >= d) rem -= d;
  }
  r.mul = q + (rem != 0);
  r.shift = l - 1;
  return r;
}

static __device__ __forceinline__ uint32_t conv_udiv32(uint32_t n, conv_div32 d) {
  return d.mul ? __umulhi(n, d.mul) >> d.shift : n;
}
static __device__ __forceinline__ uint64_t conv_udiv64(uint64_t n, conv_div64 d) {
  return d.mul ? __umul64hi(n, d.mul) >> d.shift : n;
}

// DCP ownership (reference §2.1) of request-relative position t, as bits:
// owner(t) = (t / I) mod D, local_idx(t) = (t / (I·D))·I + t mod I, for
// 0 <= t < 2^31 (other t give garbage that the callers discard).
typedef struct conv_layout {
  conv_div32 i_div, d_div;
  uint32_t I, D;
} conv_layout;

static __device__ __forceinline__ void conv_own(uint32_t t, const conv_layout &L, uint32_t *owner, uint32_t *local) {
  uint32_t q = conv_udiv32(t, L.i_div); // t / I
  uint32_t g = conv_udiv32(q, L.d_div); // t / (I·D)
  *owner = q - g * L.D;
  *local = g * L.I + (t - q * L.I);
}

// VW consecutive int32 at p + i·VW: an int4 (16-byte aligned) or one word.
template <int VW> static __device__ __forceinline__ void conv_load(const int32_t *p, int64_t i, int32_t (&x)[VW]) {
  if constexpr (VW == 4) {
    int4 q = ((const int4 *)p)[i];
    x[0] = q.x, x[1] = q.y, x[2] = q.z, x[3] = q.w;
  } else {
    x[0] = p[i];
  }
}
template <int VW> static __device__ __forceinline__ void conv_store(int32_t *p, int64_t i, const int32_t (&x)[VW]) {
  if constexpr (VW == 4) {
    ((int4 *)p)[i] = make_int4(x[0], x[1], x[2], x[3]);
  } else {
    p[i] = x[0];
  }
}

// A prefill row's parameters: the low 32 bits of ws_start and shard_rows, and
// lim: t is valid iff (uint32)t < lim (0: the row is all -1; 2^31: every
// t >= 0; a negative t is >= 2^31 as uint32, so one compare covers t >= 0,
// the extent guard and the region check).
typedef struct conv_prefill_row {
  uint32_t base, rows, lim;
} conv_prefill_row;

static __device__ __forceinline__ conv_prefill_row conv_prefill_params(int64_t row, const int32_t *row_region,
                                                                       const int64_t *ws_start,
                                                                       const int64_t *shard_rows,
                                                                       const int64_t *extent, int num_regions) {
  conv_prefill_row p = {0, 0, 0};
  int32_t r = row_region[row];
  if (r >= 0 && r < num_regions) {
    p.base = (uint32_t)ws_start[r];
    p.rows = (uint32_t)shard_rows[r];
    int64_t e = extent ? extent[r] : INT64_MAX;
    p.lim = e <= 0 ? 0u : e >= (INT64_C(1) << 31) ? (1u << 31) : (uint32_t)e;
  }
  return p;
}

template <int VW>
__global__ void __launch_bounds__(CONVERT_THREADS)
    convert_prefill_kernel(const int32_t *topk, int64_t nvec, conv_div64 kv_div, const int32_t *row_region,
                           const int64_t *ws_start, const int64_t *shard_rows, const int64_t *extent,
                           int num_regions, conv_layout L, int32_t *out) {
  const int64_t v0 = (int64_t)blockIdx.x * CONVERT_VEC_PER_BLOCK + threadIdx.x;
  int32_t t[CONVERT_VPT][VW];
  conv_prefill_row p[CONVERT_VPT];
#pragma unroll
  for (int i = 0; i < CONVERT_VPT; i++) {
    int64_t v = v0 + (int64_t)i * CONVERT_THREADS;
    for (int j = 0; j < VW; j++) t[i][j] = -1;
    if (v < nvec) conv_load<VW>(topk, v, t[i]);
  }
#pragma unroll
  for (int i = 0; i < CONVERT_VPT; i++) {
    int64_t v = v0 + (int64_t)i * CONVERT_THREADS;
    p[i] = conv_prefill_row{0, 0, 0};
    if (v < nvec)
      p[i] = conv_prefill_params((int64_t)conv_udiv64((uint64_t)v, kv_div), row_region, ws_start, shard_rows, extent,
                                 num_regions);
  }
#pragma unroll
  for (int i = 0; i < CONVERT_VPT; i++) {
    int64_t v = v0 + (int64_t)i * CONVERT_THREADS;
    if (v >= nvec) break;
    int32_t o[VW];
#pragma unroll
    for (int j = 0; j < VW; j++) {
      // Only -1 input (and the optional extent guard) invalidates a prefill
      // entry: no block-table bound, no ownership test (the bug the fix removed).
      uint32_t u = (uint32_t)t[i][j], owner, local;
      conv_own(u, L, &owner, &local);
      o[j] = u < p[i].lim ? (int32_t)(owner * p[i].rows + p[i].base + local) : -1;
    }
    conv_store<VW>(out, v, o);
  }
}

// Can the lists move as int4's (k % 4 == 0, both 16-byte aligned)?
static inline bool conv_vec4(const int32_t *topk, const int32_t *out, int k) {
  return k % 4 == 0 && kaligned(topk, 16) && kaligned(out, 16);
}

static conv_layout conv_layout_make(int dcp, int interleave) {
  conv_layout L;
  L.i_div = conv_div32_make((uint32_t)interleave);
  L.d_div = conv_div32_make((uint32_t)dcp);
  L.I = (uint32_t)interleave;
  L.D = (uint32_t)dcp;
  return L;
}

extern "C" int cplab_convert_prefill_topk(const cplab_convert_prefill_topk_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_convert_prefill_topk: NULL parameters");
  KCHECK_ARG(d, p->m >= 0 && p->k >= 0 && p->num_regions >= 0,
             "cplab_convert_prefill_topk: negative size (m %lld, k %d, regions %d)", (long long)p->m, p->k,
             p->num_regions);
  KCHECK_ARG(d, p->dcp >= 1 && p->interleave >= 1, "cplab_convert_prefill_topk: dcp %d and interleave %d must be >= 1",
             p->dcp, p->interleave);
  int64_t total = p->m * p->k;
  if (total == 0) return 0;
  KCHECK_ARG(d, p->topk && p->row_region && p->out && (p->num_regions == 0 || (p->ws_start && p->shard_rows)),
             "cplab_convert_prefill_topk: NULL argument");
  KCHECK_ARG(d, total / CONVERT_THREADS < KGRID_MAX_X, "cplab_convert_prefill_topk: %lld entries too many",
             (long long)total);
  conv_layout L = conv_layout_make(p->dcp, p->interleave);
  if (conv_vec4(p->topk, p->out, p->k)) {
    int64_t nvec = total / 4;
    convert_prefill_kernel<4><<<kblocks(nvec, CONVERT_VEC_PER_BLOCK), CONVERT_THREADS, 0, kstream(stream)>>>(
        p->topk, nvec, conv_div64_make((uint64_t)(p->k / 4)), p->row_region, p->ws_start, p->shard_rows, p->extent,
        p->num_regions, L, p->out);
  } else {
    convert_prefill_kernel<1><<<kblocks(total, CONVERT_VEC_PER_BLOCK), CONVERT_THREADS, 0, kstream(stream)>>>(
        p->topk, total, conv_div64_make((uint64_t)p->k), p->row_region, p->ws_start, p->shard_rows, p->extent,
        p->num_regions, L, p->out);
  }
  return kcheck_launch(d, "convert_prefill_kernel");
}

// VPT vectors a thread: 4 keeps 64 KiB of reads in flight an SM where the
// grid fills the SMs; small lists (a decode batch's, ~1 MB) take 1, so that
// their few vectors spread over every SM rather than a quarter of them.
template <int VW, int VPT>
__global__ void __launch_bounds__(CONVERT_THREADS)
    convert_decode_kernel(const int32_t *topk, int64_t nvec, conv_div64 kv_div, const int32_t *row_req,
                          const int32_t *block_table, int num_req, int max_blocks, int B, conv_div32 b_div,
                          int dcp_rank, conv_layout L, int32_t *out) {
  const int64_t v0 = (int64_t)blockIdx.x * (CONVERT_THREADS * VPT) + threadIdx.x;
  int32_t t[VPT][VW];
  const int32_t *table[VPT];
#pragma unroll
  for (int i = 0; i < VPT; i++) {
    int64_t v = v0 + (int64_t)i * CONVERT_THREADS;
    for (int j = 0; j < VW; j++) t[i][j] = -1;
    if (v < nvec) conv_load<VW>(topk, v, t[i]);
  }
#pragma unroll
  for (int i = 0; i < VPT; i++) {
    int64_t v = v0 + (int64_t)i * CONVERT_THREADS;
    table[i] = v < nvec ? cache_table_row(row_req, (int64_t)conv_udiv64((uint64_t)v, kv_div), block_table, num_req,
                                          max_blocks)
                        : NULL;
  }
  // The block-table loads of every entry, then the stores: all of a
  // thread's dependent loads in flight together.
  int32_t o[VPT][VW];
#pragma unroll
  for (int i = 0; i < VPT; i++)
#pragma unroll
    for (int j = 0; j < VW; j++) {
      uint32_t u = (uint32_t)t[i][j], owner, local;
      conv_own(u, L, &owner, &local);
      uint32_t b = conv_udiv32(local, b_div); // local < 2^31 for a valid t
      bool mine = table[i] && u < (1u << 31) && owner == (uint32_t)dcp_rank;
      o[i][j] = mine ? cache_slot(table[i], local, b, (uint32_t)B, max_blocks) : -1;
    }
#pragma unroll
  for (int i = 0; i < VPT; i++) {
    int64_t v = v0 + (int64_t)i * CONVERT_THREADS;
    if (v >= nvec) break;
    conv_store<VW>(out, v, o[i]);
  }
}

template <int VW, int VPT>
static void conv_decode_launch(const cplab_convert_decode_topk_params *p, unsigned blocks, int64_t nvec,
                               conv_div64 kv_div, conv_div32 b_div, conv_layout L, void *stream) {
  convert_decode_kernel<VW, VPT><<<blocks, CONVERT_THREADS, 0, kstream(stream)>>>(
      p->topk, nvec, kv_div, p->row_req, p->block_table, p->num_req, p->max_blocks, p->block_size, b_div, p->dcp_rank,
      L, p->out);
}

// The grid's vectors a thread: CONVERT_VPT where wide, else 1.
template <int VW>
static void conv_decode_launch_vw(bool wide, const cplab_convert_decode_topk_params *p, unsigned blocks, int64_t nvec,
                                  conv_div64 kv_div, conv_div32 b_div, conv_layout L, void *stream) {
  if (wide) conv_decode_launch<VW, CONVERT_VPT>(p, blocks, nvec, kv_div, b_div, L, stream);
  else conv_decode_launch<VW, 1>(p, blocks, nvec, kv_div, b_div, L, stream);
}

extern "C" int cplab_convert_decode_topk(const cplab_convert_decode_topk_params *p, void *stream, cplab_diag *d) {
  KCHECK_ARG(d, p, "cplab_convert_decode_topk: NULL parameters");
  KCHECK_ARG(d, p->m >= 0 && p->k >= 0 && p->num_req >= 0 && p->max_blocks >= 0,
             "cplab_convert_decode_topk: negative size (m %lld, k %d, requests %d, blocks %d)", (long long)p->m, p->k,
             p->num_req, p->max_blocks);
  KCHECK_ARG(d, p->dcp >= 1 && p->interleave >= 1 && p->block_size >= 1 && p->dcp_rank >= 0 && p->dcp_rank < p->dcp,
             "cplab_convert_decode_topk: bad layout (dcp %d, rank %d, interleave %d, block %d)", p->dcp, p->dcp_rank,
             p->interleave, p->block_size);
  int64_t total = p->m * p->k;
  if (total == 0) return 0;
  KCHECK_ARG(d, p->topk && p->row_req && p->out && (p->block_table || (int64_t)p->num_req * p->max_blocks == 0),
             "cplab_convert_decode_topk: NULL argument");
  KCHECK_ARG(d, total / CONVERT_THREADS < KGRID_MAX_X, "cplab_convert_decode_topk: %lld entries too many",
             (long long)total);
  cplab_device_facts f;
  int rc = cplab_device_facts_get(&f, d);
  if (rc) return rc;
  conv_layout L = conv_layout_make(p->dcp, p->interleave);
  conv_div32 b_div = conv_div32_make((uint32_t)p->block_size);
  bool v4 = conv_vec4(p->topk, p->out, p->k);
  int64_t nvec = v4 ? total / 4 : total;
  // 4 vectors a thread only where that grid still gives every SM two blocks.
  bool wide = kblocks(nvec, CONVERT_THREADS * CONVERT_VPT) >= 2u * (unsigned)f.sm_count;
  unsigned blocks = kblocks(nvec, CONVERT_THREADS * (wide ? CONVERT_VPT : 1));
  conv_div64 kv_div = conv_div64_make((uint64_t)(v4 ? p->k / 4 : p->k));
  if (v4) conv_decode_launch_vw<4>(wide, p, blocks, nvec, kv_div, b_div, L, stream);
  else conv_decode_launch_vw<1>(wide, p, blocks, nvec, kv_div, b_div, L, stream);
  return kcheck_launch(d, "convert_decode_kernel");
}
