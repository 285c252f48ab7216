// Sparse MLA prefill attention on tensor cores over the bf16 gathered
// workspace. Contract in cplab_kernels.h (cplab_sparse_mla_prefill); what a
// block does with a tile is mla_tc.cuh's.
//
// A block (one query row, 64 heads) walks the row's index list in tiles of
// 64 consecutive entries; a tile without a valid entry is skipped (a
// prepass marks the non-empty tiles), the invalid entries of a tile are
// zero rows whose scores are -inf. While a tile computes, the next one's
// rows are on their way (cp.async into the other of two buffers; four
// threads a row, each with one index load).
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "mla_tc.cuh"

static_assert(MT_HEADS == CPLAB_MLA_HEAD_BLOCK, "the contract's head block");

#define PF_MASK_TILES 256 // tiles the prepass can mark (k up to 16384); later ones always run

struct pf_smem {
  mt_core c;
  unsigned char kv[2][MT_TILE_BYTES];
  unsigned long long valid[2];           // bit j: entry j of the buffer's tile is valid
  unsigned nonempty[PF_MASK_TILES / 32]; // bit t: tile t has a valid entry
};

struct pf_args {
  const uint16_t *q;
  int heads;
  const uint16_t *ws;
  int64_t rows;
  const int32_t *idx;
  int k;
  float scale_log2; // scale · log2 e
  float *out, *lse;
};

static __device__ __forceinline__ bool pf_valid(const pf_args &a, int64_t i) { return i >= 0 && i < a.rows; }

// The first tile >= t with a valid entry, or -1.
static __device__ int pf_next_tile(const pf_smem *s, int t, int tiles) {
  for (; t < tiles; t++)
    if (t >= PF_MASK_TILES || (s->nonempty[t / 32] >> (t % 32) & 1u)) return t;
  return -1;
}

// Issue the copies of tile t's rows into buffer b, and its validity bits:
// four threads a row, one index load each, every fourth chunk.
static __device__ void pf_load_tile(const pf_args &a, const int32_t *list, pf_smem *s, int t, int b) {
  static_assert(MT_THREADS == 4 * MT_TILE && MT_CHUNKS % 4 == 0, "four threads a row");
  int r = threadIdx.x / 4, e = t * MT_TILE + r;
  int64_t i = e < a.k ? (int64_t)list[e] : -1;
  bool ok = pf_valid(a, i);
  const uint16_t *src = ok ? a.ws + i * MT_DQK : a.ws;
  unsigned char *dst = s->kv[b];
#pragma unroll
  for (int ch = threadIdx.x % 4; ch < MT_CHUNKS; ch += 4) cp_async_16(dst + mt_off(r, ch), src + ch * 8, ok);
  unsigned bits = __ballot_sync(0xFFFFFFFFu, ok && threadIdx.x % 4 == 0);
  // Lane 4j's bit is row 8w + j of warp w: keep every fourth bit.
  unsigned rows8 = 0;
#pragma unroll
  for (int j = 0; j < 8; j++) rows8 |= (bits >> (4 * j) & 1u) << j;
  if (threadIdx.x % 32 == 0) ((unsigned char *)&s->valid[b])[threadIdx.x / 32] = (unsigned char)rows8;
}

// The prepass: mark the tiles that hold a valid entry.
static __device__ void pf_mark_tiles(const pf_args &a, const int32_t *list, pf_smem *s) {
  if (threadIdx.x < PF_MASK_TILES / 32) s->nonempty[threadIdx.x] = 0;
  __syncthreads();
  int marked = min(a.k, PF_MASK_TILES * MT_TILE);
  for (int e = threadIdx.x; e < marked; e += MT_THREADS)
    if (pf_valid(a, list[e])) atomicOr(&s->nonempty[e / MT_TILE / 32], 1u << (e / MT_TILE % 32));
  __syncthreads();
}

__global__ void __launch_bounds__(MT_THREADS, 1) pf_kernel(pf_args a) {
  extern __shared__ uint4 pf_raw[];
  pf_smem *s = (pf_smem *)mma_align_smem(pf_raw, 1024);
  int64_t row = blockIdx.x;
  int h0 = blockIdx.y * MT_HEADS, w = threadIdx.x / 32, g = w / 4, q = w % 4;
  const int32_t *list = a.idx + row * a.k;
  int tiles = (a.k + MT_TILE - 1) / MT_TILE;
  pf_mark_tiles(a, list, s);
  mt_rows st;
  float o[32][4];
  mt_start(&st, o);
  int cur = pf_next_tile(s, 0, tiles);
  if (cur >= 0) {
    mt_load_q(&s->c, a.q, a.heads, row, h0);
    pf_load_tile(a, list, s, cur, 0);
  }
  cp_async_commit();
  for (int it = 0; cur >= 0; it++) {
    int b = it & 1, next = pf_next_tile(s, cur + 1, tiles);
    cp_async_wait<0>(); // this tile's copies (and q's) have landed
    mma_smem_ready();
    // The other buffer's last readers (the previous tile's products) are done.
    if (next >= 0) pf_load_tile(a, list, s, next, b ^ 1);
    cp_async_commit();
    float acc[4][4], corr[2];
    mt_scores(&s->c, s->kv[b], g, q, acc);
    mt_softmax(&s->c, s->valid[b], g, q, a.scale_log2, acc, &st, corr);
    mt_rescale(o, corr);
    mt_accumulate(&s->c, s->kv[b], g, q, o);
    cur = next;
  }
  mt_store(a.out, a.lse, a.heads, row, h0, g, q, &st, o);
}

extern "C" int cplab_sparse_mla_prefill(const cplab_sparse_mla_prefill_params *p, void *stream, cplab_diag *d) {
  const char *name = "cplab_sparse_mla_prefill";
  KCHECK_ARG(d, p, "%s: NULL parameters", name);
  const uint16_t *q = p->q;
  int64_t m = p->m;
  int heads = p->heads, k = p->k;
  int run = 0, rc = mt_check_args(q, m, heads, p->workspace, p->rows, p->idx, k, p->out, p->lse, &run, d, name,
                                  "workspace");
  if (rc || !run) return rc;
  size_t smem = sizeof(pf_smem) + 1008; // room to align the base to 1024 (it is 16-byte aligned)
  rc = kset_smem(d, pf_kernel, smem, name);
  if (rc) return rc;
  pf_args a = {q, heads, p->workspace, p->rows, p->idx, k, p->scale * MT_LOG2E, p->out, p->lse};
  dim3 grid((unsigned)m, (unsigned)((heads + MT_HEADS - 1) / MT_HEADS));
  pf_kernel<<<grid, MT_THREADS, smem, kstream(stream)>>>(a);
  return kcheck_launch(d, name);
}
