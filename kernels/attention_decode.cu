// Sparse MLA decode attention on tensor cores over the fp8 cache (656-byte
// entries). Contracts in cplab_kernels.h (cplab_sparse_mla_decode, _split);
// what a block does with a tile is mla_tc.cuh's.
//
// A block (one query row, 64 heads, one split of the row's entries):
//   1. compacts the row's valid slots into shared memory, in list order (a
//      ballot scan 256 entries at a time), so a DCP rank's row, where the
//      other ranks' tokens are -1, costs tiles for its own entries only;
//   2. takes its share of the tiles of 64 compacted entries (split z of Z:
//      tiles [z·T/Z, (z+1)·T/Z) of T);
//   3. per tile: the raw entries come into a staging buffer by cp.async
//      (the next tile's while this one computes), and are dequantised into
//      the bf16 tile exactly as cplab_gather_mla does (kf_dequant8_bf16),
//      so decode and prefill see the same rows.
// With Z > 1 (cplab_sparse_mla_decode_split; Z from a wave model) each split
// writes its partial (out, lse) and dc_combine_kernel merges them: a small
// batch is spread over the entries.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "kformat.cuh"
#include "mla_tc.cuh"

#define DC_ENTRY CPLAB_MLA_ENTRY_BYTES        // 656 bytes, 41 16-byte chunks
#define DC_ENTRY_CHUNKS (DC_ENTRY / 16)
#define DC_NOPE_CHUNKS (CPLAB_MLA_NOPE_DIM / 16) // 32 chunks of 16 e4m3 values
#define DC_PER_THREAD 8                          // list entries a thread loads in one compaction pass
#define DC_PASS (DC_PER_THREAD * MT_THREADS)     // entries of one compaction pass
#define DC_MAX_K 8064                            // the compacted list must fit beside the tiles

#define DC_COMBINE_THREADS 128                   // 4 of the 512 columns each
#define DC_SMEM_OPTIN 232448                     // sm_90's (and sm_100's) most shared memory a block

static_assert(DC_ENTRY % 16 == 0, "entries are whole 16-byte chunks");

struct dc_smem {
  mt_core c;
  unsigned char kv[MT_TILE_BYTES];
  unsigned char staging[MT_TILE * DC_ENTRY];
  int warp_valid[MT_THREADS / 32]; // a compaction pass's valid entries per warp
  int count;                       // valid entries of the row
  int32_t list[DC_MAX_K];          // the row's valid slots, in list order (count of them)
};

struct dc_args {
  const uint16_t *q;
  int heads;
  const uint8_t *cache;
  int64_t slots;
  const int32_t *slot;
  int k;
  float scale_log2; // scale · log2 e
  float *out, *lse; // [splits][m][heads][512] and [splits][m][heads]
  int64_t m;
};

// Step 1: the row's valid slots -> s->list, s->count. Thread t takes the
// DC_PER_THREAD consecutive entries t·DC_PER_THREAD .. of each pass of
// DC_PASS entries (one pass for k <= 2048), all of a pass's loads issued
// before any is used; a block scan of the threads' counts places them. The
// first version scanned 256 entries at a time with a global load and three
// barriers each: eight load latencies in series for k = 2048.
static __device__ void dc_compact(const dc_args &a, const int32_t *row, dc_smem *s) {
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  int base = 0;
  for (int pos = 0; pos < a.k; pos += DC_PASS) {
    int32_t v[DC_PER_THREAD];
    int first = pos + (int)threadIdx.x * DC_PER_THREAD, n = 0;
#pragma unroll
    for (int j = 0; j < DC_PER_THREAD; j++) v[j] = first + j < a.k ? row[first + j] : -1;
#pragma unroll
    for (int j = 0; j < DC_PER_THREAD; j++) n += v[j] >= 0 && v[j] < a.slots;
    int incl = n; // inclusive scan over the warp, then over the warps
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      int u = __shfl_up_sync(0xFFFFFFFFu, incl, o);
      if (lane >= o) incl += u;
    }
    if (lane == 31) s->warp_valid[w] = incl;
    __syncthreads();
    int at = base + incl - n, total = 0;
#pragma unroll
    for (int u = 0; u < MT_THREADS / 32; u++) {
      if (u < w) at += s->warp_valid[u];
      total += s->warp_valid[u];
    }
#pragma unroll
    for (int j = 0; j < DC_PER_THREAD; j++)
      if (v[j] >= 0 && v[j] < a.slots) s->list[at++] = v[j];
    base += total;
    __syncthreads(); // warp_valid is read before the next pass writes it
  }
  if (threadIdx.x == 0) s->count = base;
  __syncthreads();
}

// Issue the copies of tile t's entries (compacted entries t·64 ..) into the
// staging buffer: four threads an entry, every fourth chunk.
static __device__ void dc_stage(const dc_args &a, dc_smem *s, int t) {
  int r = threadIdx.x / 4, e = t * MT_TILE + r;
  if (e >= s->count) return; // dc_dequant writes zeros for it
  const uint8_t *src = a.cache + (int64_t)s->list[e] * DC_ENTRY;
  unsigned char *dst = s->staging + r * DC_ENTRY;
  for (int ch = threadIdx.x % 4; ch < DC_ENTRY_CHUNKS; ch += 4) cp_async_16(dst + 16 * ch, src + 16 * ch, true);
}

// The staged tile -> bf16 rows of s->kv (zero rows past the row's count);
// returns the tile's validity bits. A thread converts 8 latent chunks of
// its entry (chunks part, part + 4, ..: all four tiles' scales): all loads
// first, then one choice of path for the 128 values (kf_dequant8_bf16_fast
// where every scale allows it and no byte is a NaN), so the loads are not
// split by a branch per chunk.
static __device__ unsigned long long dc_dequant(dc_smem *s, int t) {
  int r = threadIdx.x / 4, part = threadIdx.x % 4, n = min(MT_TILE, s->count - t * MT_TILE);
  const unsigned char *src = s->staging + r * DC_ENTRY;
  bool live = r < n;
  uint4 f8[DC_NOPE_CHUNKS / 4], rope[2];
  float scale[CPLAB_MLA_TILES];
  uint32_t mul2[CPLAB_MLA_TILES], fast = 1, nan = 0;
#pragma unroll
  for (int j = 0; j < DC_NOPE_CHUNKS / 4; j++)
    f8[j] = live ? *(const uint4 *)(src + CPLAB_MLA_NOPE_OFFSET + 16 * (part + 4 * j)) : make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int j = 0; j < 2; j++) // rope chunks: bf16 already
    rope[j] = live ? *(const uint4 *)(src + CPLAB_MLA_ROPE_OFFSET + 16 * (part + 4 * j)) : make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < CPLAB_MLA_TILES; i++) {
    scale[i] = live ? ((const float *)(src + CPLAB_MLA_SCALE_OFFSET))[i] : 1.0f;
    mul2[i] = kf_fast_mul2(scale[i]);
    fast &= mul2[i] != 0;
  }
#pragma unroll
  for (int j = 0; j < DC_NOPE_CHUNKS / 4; j++)
    nan |= kf_e4m3_nan4(f8[j].x) | kf_e4m3_nan4(f8[j].y) | kf_e4m3_nan4(f8[j].z) | kf_e4m3_nan4(f8[j].w);
  static_assert(DC_NOPE_CHUNKS / CPLAB_MLA_TILES == 8, "chunk part + 4j is in tile j / 2");
  if (fast && !nan) {
#pragma unroll
    for (int j = 0; j < DC_NOPE_CHUNKS / 4; j++) {
      int c = part + 4 * j;
      *(uint4 *)(s->kv + mt_off(r, 2 * c)) = kf_dequant8_bf16_fast(make_uint2(f8[j].x, f8[j].y), mul2[j / 2]);
      *(uint4 *)(s->kv + mt_off(r, 2 * c + 1)) = kf_dequant8_bf16_fast(make_uint2(f8[j].z, f8[j].w), mul2[j / 2]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < DC_NOPE_CHUNKS / 4; j++) {
      int c = part + 4 * j;
      uint2 b0 = kf_dequant4_bf16(f8[j].x, scale[j / 2]), b1 = kf_dequant4_bf16(f8[j].y, scale[j / 2]);
      uint2 b2 = kf_dequant4_bf16(f8[j].z, scale[j / 2]), b3 = kf_dequant4_bf16(f8[j].w, scale[j / 2]);
      *(uint4 *)(s->kv + mt_off(r, 2 * c)) = make_uint4(b0.x, b0.y, b1.x, b1.y);
      *(uint4 *)(s->kv + mt_off(r, 2 * c + 1)) = make_uint4(b2.x, b2.y, b3.x, b3.y);
    }
  }
#pragma unroll
  for (int j = 0; j < 2; j++) *(uint4 *)(s->kv + mt_off(r, 2 * DC_NOPE_CHUNKS + part + 4 * j)) = rope[j];
  return n >= MT_TILE ? ~0ull : (1ull << n) - 1;
}

__global__ void __launch_bounds__(MT_THREADS, 1) dc_kernel(dc_args a) {
  extern __shared__ uint4 dc_raw[];
  dc_smem *s = (dc_smem *)mma_align_smem(dc_raw, 1024);
  int64_t row = blockIdx.x;
  int h0 = blockIdx.y * MT_HEADS, w = threadIdx.x / 32, g = w / 4, q = w % 4;
  int split = blockIdx.z, splits = gridDim.z;
  // q's copies go out before the compaction's list loads, so the two latencies overlap: a DCP
  // rank's row has few tiles, and these fixed costs are most of its time.
  mt_load_q(&s->c, a.q, a.heads, row, h0);
  cp_async_commit();
  dc_compact(a, a.slot + row * a.k, s);
  int tiles = (s->count + MT_TILE - 1) / MT_TILE;
  int t0 = (int)((int64_t)split * tiles / splits), t1 = (int)((int64_t)(split + 1) * tiles / splits);
  if (t0 >= t1 && splits > 1) { // an empty split (a DCP rank's short row): the combine reads its lse alone
    for (int h = (int)threadIdx.x; h < MT_HEADS && h0 + h < a.heads; h += MT_THREADS)
      a.lse[((int64_t)split * a.m + row) * a.heads + h0 + h] = -INFINITY;
    cp_async_wait<0>(); // q's copies land before the block's shared memory is given back
    return;
  }
  mt_rows st;
  float o[32][4];
  mt_start(&st, o);
  if (t0 < t1) dc_stage(a, s, t0);
  cp_async_commit();
  for (int t = t0; t < t1; t++) {
    cp_async_wait<0>(); // this tile's entries (and q) have landed
    __syncthreads();    // ... for every thread; the previous tile's products are done with kv
    unsigned long long valid = dc_dequant(s, t);
    mma_smem_ready(); // the tile is visible to the products; the staging buffer is free
    if (t + 1 < t1) dc_stage(a, s, t + 1);
    cp_async_commit();
    float acc[4][4], corr[2];
    mt_scores(&s->c, s->kv, g, q, acc);
    mt_softmax(&s->c, valid, g, q, a.scale_log2, acc, &st, corr);
    mt_rescale(o, corr);
    mt_accumulate(&s->c, s->kv, g, q, o);
  }
  cp_async_wait<0>(); // a row with no valid entry ran no tile: q's copies still land before the block ends
  mt_store(a.out + (int64_t)split * a.m * a.heads * MT_DV, a.lse + (int64_t)split * a.m * a.heads, a.heads, row, h0,
           g, q, &st, o);
}

static_assert(sizeof(dc_smem) + 1008 <= DC_SMEM_OPTIN, "the block's shared memory fits an H200's");

// The splits' partial results of one (row, head) -> out and lse: weights
// exp(lse_z - M) / sum over the splits (M the largest lse; a split that saw
// no entry has lse -inf and weight 0, and its out is neither written nor
// read), lse = M + log(sum). Thread t owns
// columns 4t .. 4t + 3.
__global__ void __launch_bounds__(DC_COMBINE_THREADS)
    dc_combine_kernel(const float *part_out, const float *part_lse, int splits, int64_t mh, float *out, float *lse) {
  int64_t g = blockIdx.x;
  float mx = -INFINITY;
  for (int z = 0; z < splits; z++) mx = fmaxf(mx, part_lse[z * mh + g]);
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float sum = 0.0f;
  if (mx != -INFINITY) {
    for (int z = 0; z < splits; z++) {
      float wz = expf(part_lse[z * mh + g] - mx);
      if (wz == 0.0f) continue;
      float4 v = ((const float4 *)(part_out + (z * mh + g) * MT_DV))[threadIdx.x];
      sum += wz;
      acc.x += wz * v.x;
      acc.y += wz * v.y;
      acc.z += wz * v.z;
      acc.w += wz * v.w;
    }
  }
  float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  ((float4 *)(out + g * MT_DV))[threadIdx.x] = make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
  if (threadIdx.x == 0) lse[g] = sum > 0.0f ? mx + logf(sum) : -INFINITY;
}

// Splits of a row's entries: the Z that a wave model of the launch says is
// fastest. One block an SM (the block's shared memory); m · ceil(heads / 64)
// · Z blocks run in ceil(that / SMs) waves, each as long as its tiles
// (ceil(T / Z) of a full list of T) plus a block's fixed cost (compacting
// the list, loading q, storing: about DC_FIXED_CT hundredths of a tile);
// Z > 1 adds the merge kernel (a launch, and each partial read once).
// Measured on an H200 with Z = 4 for every batch (bench/NOTES.md, version
// 10): batch 1 and batch 128 x 128 heads both cost 51 us a wave of 8
// tiles, which puts a tile near 5.5 us and the fixed cost near 1.3 tiles.
// Z so depends on the batch, and so do a row's bits (a different Z rounds
// differently, within the bounds of the reference). Z from k alone kept
// them fixed at up to 2x the time: batch 1 ran on 4 blocks, and batch 128
// x 128 heads in 8 waves with 134 MB of partials where one split takes 2.
#define DC_FIXED_CT 130         // a block's fixed cost, hundredths of a tile
#define DC_MERGE_LAUNCH_CT 50   // the merge kernel's launch
#define DC_MERGE_PARTIAL_CT 1   // reading one partial (64 heads x 513 floats)
static int dc_splits(int64_t m, int heads, int k, int sms) {
  int64_t tiles = (k + MT_TILE - 1) / MT_TILE, blocks = m * ((heads + MT_HEADS - 1) / MT_HEADS);
  int best = 1;
  int64_t best_cost = -1;
  for (int64_t z = 1; z <= tiles; z++) {
    int64_t waves = (blocks * z + sms - 1) / sms;
    int64_t cost = waves * (100 * ((tiles + z - 1) / z) + DC_FIXED_CT);
    if (z > 1) cost += DC_MERGE_LAUNCH_CT + DC_MERGE_PARTIAL_CT * blocks * z;
    if (best_cost < 0 || cost < best_cost) best = (int)z, best_cost = cost;
  }
  return best;
}

// The device's SM count, for dc_splits.
static int dc_sms(int *sms, cplab_diag *d) {
  cplab_device_facts f;
  int rc = cplab_device_facts_get(&f, d);
  if (!rc) *sms = f.sm_count;
  return rc;
}

// mt_check_args, and the compacted list's limit; *run 0 for empty work.
static int dc_check(const cplab_sparse_mla_decode_params *p, int *run, cplab_diag *d, const char *name) {
  KCHECK_ARG(d, p, "%s: NULL parameters", name);
  int rc = mt_check_args(p->q, p->m, p->heads, p->kv_cache, p->num_slots, p->slot, p->k, p->out, p->lse, run, d, name,
                         "kv_cache");
  if (rc || !*run) return rc;
  if (p->k > DC_MAX_K)
    return cplab_diag_set(d, CPLAB_EUNSUPPORTED, "%s: k %d exceeds the kernel's %d entries a row", name, p->k,
                          DC_MAX_K);
  return 0;
}

// The kernel's arguments for p, results to out and lse.
static dc_args dc_args_of(const cplab_sparse_mla_decode_params *p, float *out, float *lse) {
  return dc_args{p->q, p->heads, p->kv_cache, p->num_slots, p->slot, p->k, p->scale * MT_LOG2E, out, lse, p->m};
}

static int dc_launch(const dc_args &a, int splits, void *stream, cplab_diag *d, const char *name) {
  size_t smem = sizeof(dc_smem) + 1008; // room to align the base to 1024 (it is 16-byte aligned)
  int rc = kset_smem(d, dc_kernel, smem, name);
  if (rc) return rc;
  dim3 grid((unsigned)a.m, (unsigned)((a.heads + MT_HEADS - 1) / MT_HEADS), (unsigned)splits);
  dc_kernel<<<grid, MT_THREADS, smem, kstream(stream)>>>(a);
  return kcheck_launch(d, name);
}

extern "C" int cplab_sparse_mla_decode(const cplab_sparse_mla_decode_params *p, void *stream, cplab_diag *d) {
  const char *name = "cplab_sparse_mla_decode";
  int run = 0, rc = dc_check(p, &run, d, name);
  if (rc || !run) return rc;
  return dc_launch(dc_args_of(p, p->out, p->lse), 1, stream, d, name);
}

// The split count a call runs with: `splits` where given (1 .. the row's
// tiles), else the model's.
static int dc_resolve_splits(int64_t m, int heads, int k, int splits, int *out, cplab_diag *d, const char *name) {
  int tiles = (k + MT_TILE - 1) / MT_TILE;
  KCHECK_ARG(d, splits >= 0 && (splits == 0 || splits <= (tiles > 1 ? tiles : 1)),
             "%s: %d splits asked for a row of %d tiles (0: the model's choice)", name, splits, tiles);
  if (splits > 0) return *out = splits, 0;
  int sms = 1, rc = dc_sms(&sms, d);
  if (!rc) *out = dc_splits(m, heads, k, sms);
  return rc;
}

extern "C" int cplab_sparse_mla_decode_splits(int64_t m, int heads, int k, int *splits, cplab_diag *d) {
  KCHECK_ARG(d, m >= 0 && heads >= 0 && k >= 0 && splits, "cplab_sparse_mla_decode_splits: bad arguments");
  return dc_resolve_splits(m, heads, k, 0, splits, d, "cplab_sparse_mla_decode_splits");
}

extern "C" int cplab_sparse_mla_decode_scratch(int64_t m, int heads, int k, int splits, size_t *bytes, cplab_diag *d) {
  const char *name = "cplab_sparse_mla_decode_scratch";
  KCHECK_ARG(d, m >= 0 && heads >= 0 && k >= 0 && bytes, "%s: bad arguments", name);
  *bytes = 0;
  if (m == 0 || heads == 0) return 0;
  int z = 1, rc = dc_resolve_splits(m, heads, k, splits, &z, d, name);
  if (rc) return rc;
  if (z > 1) *bytes = (size_t)z * (size_t)m * (size_t)heads * (MT_DV + 1) * sizeof(float);
  return 0;
}

extern "C" int cplab_sparse_mla_decode_split(const cplab_sparse_mla_decode_params *p, void *stream, cplab_diag *d) {
  const char *name = "cplab_sparse_mla_decode_split";
  int run = 0, rc = dc_check(p, &run, d, name);
  if (rc || !run) return rc;
  int z = 1;
  rc = dc_resolve_splits(p->m, p->heads, p->k, p->splits, &z, d, name);
  if (rc) return rc;
  size_t part = (size_t)p->m * (size_t)p->heads, need = z > 1 ? (size_t)z * part * (MT_DV + 1) * sizeof(float) : 0;
  KCHECK_ARG(d, p->scratch_bytes >= need && (need == 0 || (p->scratch && kaligned(p->scratch, 16))),
             "%s: %zu bytes of scratch given (16-byte aligned), %zu needed (cplab_sparse_mla_decode_scratch)", name,
             p->scratch_bytes, need);
  if (z == 1) return dc_launch(dc_args_of(p, p->out, p->lse), 1, stream, d, name);
  KCHECK_ARG(d, kaligned(p->out, 16), "%s: out must be 16-byte aligned when the entries are split", name);
  float *part_out = (float *)p->scratch, *part_lse = part_out + (size_t)z * part * MT_DV;
  rc = dc_launch(dc_args_of(p, part_out, part_lse), z, stream, d, name);
  if (rc) return rc;
  static_assert(MT_DV == 4 * DC_COMBINE_THREADS, "4 columns a thread");
  dc_combine_kernel<<<(unsigned)part, DC_COMBINE_THREADS, 0, kstream(stream)>>>(part_out, part_lse, z, (int64_t)part,
                                                                                 p->out, p->lse);
  return kcheck_launch(d, "dc_combine_kernel");
}
