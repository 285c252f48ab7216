/* kernels/cplab_kernels.h: extern "C" launchers of cplab's CUDA kernels.
 * Host code includes only this header; every launcher checks its CUDA calls
 * and returns 0 or a negative cplab error code with a message in d.
 *
 * Conventions of the launchers below:
 *   - pointers named dev_* / all tensor pointers are device memory; sizes are
 *     element counts unless named *_bytes;
 *   - `stream` is a cudaStream_t passed as void * (NULL: the legacy default
 *     stream), so that C callers need no CUDA headers; the launchers are
 *     asynchronous: errors of the kernel's execution surface at the caller's
 *     next synchronising call (cplab_dev_sync);
 *   - bf16 tensors are uint16_t bit patterns, e4m3 tensors uint8_t bytes,
 *     KV cache entries the 656-byte fp8_ds_mla form and indexer entries the
 *     132-byte form of cplab/kvformat.h, one entry per slot
 *     (cache + slot · entry bytes);
 *   - zero-sized work (m == 0, n == 0 ...) launches nothing and returns 0;
 *   - row strides are the dense ones given by the shapes; the kernels load
 *     and store whole words, so caches and e4m3 tensors must be 4-byte, bf16
 *     outputs and fp32 attention outputs 8-byte, the prefill workspace, the
 *     decode attention's cache, the prefill attention's q and the combine's buffers 16-byte aligned
 *     (cudaMalloc gives 256);
 *   - launchers of many arguments take them in a `cplab_<name>_params`
 *     struct declared above them (fields documented there; callers fill it
 *     with designated initializers), then stream and diag; a NULL struct is
 *     CPLAB_EINVAL;
 *   - CPLAB_EINVAL for bad sizes, NULL pointers or misaligned tensors,
 *     CPLAB_ECUDA for a failed CUDA call, CPLAB_EUNSUPPORTED for shapes beyond
 *     the kernels' limits (e.g. more shared memory than the device has).
 * Indices and slots that a correct plan never produces (a slot >= num_slots,
 * a workspace row >= rows) are treated like -1 (nothing written / nothing
 * read) so that a wrong plan cannot corrupt memory; the diff against the
 * simulator is what reports it. */
#ifndef CPLAB_KERNELS_H
#define CPLAB_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cplab_gpu_info {
  int device_count;
  char name[256];
  int cc_major, cc_minor;
  int sm_count;
  unsigned long long global_mem_bytes;
  int runtime_version, driver_version;
} cplab_gpu_info;

/* Describe device 0. CPLAB_ENODEV when the process sees no GPU (or no
 * driver): callers that are tests turn that into a skip. */
int cplab_gpu_query(cplab_gpu_info *info, cplab_diag *d);

/* What the launchers size their work by, of the current device
 * (kernels/devinfo.cu): the one place that asks the driver. sm_count >= 1. */
typedef struct cplab_device_facts {
  int device;     /* cudaGetDevice */
  int sm_count;   /* streaming multiprocessors */
  int smem_optin; /* bytes of shared memory a block can opt in to */
} cplab_device_facts;
int cplab_device_facts_get(cplab_device_facts *f, cplab_diag *d);

/* Toolchain probe: runs a kernel over n elements (out[i] = 3i + 1 computed on
 * the device), copies back and checks every element. Proves that this build's
 * device code matches the card (right SASS or PTX) and that launches work. */
int cplab_gpu_selftest(int n, cplab_diag *d);

/* ---- device memory (kernels/devmem.cu) -------------------------------- */

/* cudaMalloc of bytes (bytes == 0 gives *ptr = NULL). */
int cplab_dev_alloc(void **ptr, size_t bytes, cplab_diag *d);
/* cudaFree; NULL is a no-op. */
int cplab_dev_free(void *ptr, cplab_diag *d);
/* Synchronous copies host -> device and device -> host: on return the data
 * is in place for work on any stream (an upload waits for the device, since
 * cudaMemcpy from pageable memory may return before its DMA lands, and a
 * non-blocking stream, as cplab_stream_create makes, does not wait for it). */
int cplab_dev_upload(void *dev, const void *host, size_t bytes, cplab_diag *d);
int cplab_dev_download(void *host, const void *dev, size_t bytes, cplab_diag *d);
/* Synchronous device -> device copy (the single-device backend's collectives). */
int cplab_dev_copy(void *dst, const void *src, size_t bytes, cplab_diag *d);
/* Wait for the stream (NULL: the legacy default stream) and report any error
 * of the kernels it ran. */
int cplab_dev_sync(void *stream, cplab_diag *d);

/* ---- poison (kernels/poison.cu) ---------------------------------------- */

/* The bf16 pattern unused workspace rows hold: a quiet NaN that no
 * conversion produces (CUDA's float -> bf16 gives 0x7FFF for NaN). */
#define CPLAB_BF16_POISON 0x7FC0u

/* bytes bytes of buf set to value. */
int cplab_poison_bytes(void *buf, size_t bytes, uint8_t value, void *stream, cplab_diag *d);
/* count bf16 values of buf set to CPLAB_BF16_POISON (buf 2-byte aligned). */
int cplab_poison_bf16(uint16_t *buf, size_t count, void *stream, cplab_diag *d);

/* ---- generated inputs (kernels/gen.cu) ---------------------------------- */

/* Write the generated cache entries of n tokens through a slot list: token i
 * is (req[i], pos[i]) (both >= 0, as uint32 in cplab/philox.h keying); for
 * 0 <= slot[i] < num_slots, kv_cache + slot[i]·656 receives
 * cplab_kvformat_mla_generate(seed, layer, req[i], pos[i]) and
 * idx_cache + slot[i]·132 receives cplab_kvformat_idx_generate(...), byte for
 * byte; slot[i] < 0 (a token another rank owns) writes nothing. Either cache
 * may be NULL (not written). Slots must be distinct where they are written. */
typedef struct cplab_gen_cache_params {
  uint64_t seed;           /* the generation's seed */
  uint32_t layer;          /* the layer keyed into every entry */
  const int32_t *req;      /* [n] token i's request (>= 0) */
  const int32_t *pos;      /* [n] token i's position (>= 0) */
  const int64_t *slot;     /* [n] token i's slot; < 0: another rank's token, nothing written */
  int64_t n;               /* tokens */
  uint8_t *kv_cache;       /* 656-byte MLA entries, or NULL: not written */
  uint8_t *idx_cache;      /* 132-byte indexer entries, or NULL: not written */
  int64_t num_slots;       /* entries of each cache; slots >= num_slots write nothing */
} cplab_gen_cache_params;
int cplab_gen_cache(const cplab_gen_cache_params *p, void *stream, cplab_diag *d);

/* Absorbed MLA queries of m tokens: q[i][h][c], bf16 [m][heads_local][576],
 * equals cplab_kvformat_mla_query(seed, layer, req[i], pos[i], head0 + h)[c]
 * (the global head index, so every TP layout sees the same query). */
typedef struct cplab_gen_mla_query_params {
  uint64_t seed;       /* the generation's seed */
  uint32_t layer;      /* the layer keyed into every query */
  const int32_t *req;  /* [m] token i's request */
  const int32_t *pos;  /* [m] token i's position */
  int64_t m;           /* tokens */
  int head0;           /* global index of the first head generated */
  int heads_local;     /* heads generated, head0 .. head0 + heads_local - 1 */
  uint16_t *q;         /* bf16 [m][heads_local][576], 8-byte aligned */
} cplab_gen_mla_query_params;
int cplab_gen_mla_query(const cplab_gen_mla_query_params *p, void *stream, cplab_diag *d);

/* Indexer queries of m tokens, sim_indexer_query_make semantics, heads index
 * heads (1..128): q e4m3 [m][heads][128] and scale fp32 [m][heads] (bytes and
 * power-of-two scales bit-exact), weight fp32 [m][heads] the folded w'. The
 * weight is computed in float from the same integer draw u as the reference:
 *   w  = float((u >> 8) + 1) · 2^-24                     (exact)
 *   w' = (w · s_q) · c,  c = float(1 / sqrt(128 · heads)) rounded once from
 *        double on the host                              (w · s_q exact)
 * so w' is within about 1.5 ulp of the reference's double value. */
typedef struct cplab_gen_indexer_query_params {
  uint64_t seed;       /* the generation's seed */
  uint32_t layer;      /* the layer keyed into every query */
  const int32_t *req;  /* [m] token i's request */
  const int32_t *pos;  /* [m] token i's position */
  int64_t m;           /* tokens */
  int heads;           /* indexer heads, 1..128 */
  uint8_t *q;          /* e4m3 [m][heads][128], 4-byte aligned */
  float *scale;        /* fp32 [m][heads]: q's power-of-two scales */
  float *weight;       /* fp32 [m][heads]: the folded w' */
} cplab_gen_indexer_query_params;
int cplab_gen_indexer_query(const cplab_gen_indexer_query_params *p, void *stream, cplab_diag *d);

/* Generated bf16 values for benchmark weights and hidden states (not a
 * reference format): out[i] = cplab_gen_bf16_host(seed, tensor, i, scale) for
 * 0 <= i < count, where, with
 *   h = splitmix64-style hash of (seed, tensor, i),
 *   u = the top 24 bits of h, v = (2u + 1 - 2^24) · 2^-24 (an odd multiple of
 *       2^-24 in (-1, 1): uniform, zero mean, exact in float),
 * the value is bf16(scale · v) (the float product, then round to nearest
 * even), so |value| <= |scale| rounded up to bf16. The same
 * __host__ __device__ code runs on both sides: bit-identical values.
 * Asynchronous on stream; scale finite (CPLAB_EINVAL otherwise), count >= 0,
 * out 2-byte aligned. */
int cplab_gen_bf16(uint64_t seed, uint32_t tensor, uint16_t *out, int64_t count, float scale, void *stream,
                   cplab_diag *d);
/* One value of cplab_gen_bf16, computed on the host (no CUDA call). */
uint16_t cplab_gen_bf16_host(uint64_t seed, uint32_t tensor, int64_t i, float scale);
/* The same values as e4m3 bytes (fp8 weights and inputs of the benchmark's
 * fp8 GEMMs): out[i] = e4m3(cplab_gen_uniform_host(seed, tensor, i, scale)),
 * round to nearest even, saturating at ±448 (cplab_e4m3_from_f32's rule).
 * Same argument rules as cplab_gen_bf16 (no alignment needed). */
int cplab_gen_e4m3(uint64_t seed, uint32_t tensor, uint8_t *out, int64_t count, float scale, void *stream,
                   cplab_diag *d);
/* scale · v of the rules above, as a float (exact), on the host. */
float cplab_gen_uniform_host(uint64_t seed, uint32_t tensor, int64_t i, float scale);

/* ---- activation quantisation (kernels/quant.cu) --------------------------- */

/* out[i] = e4m3(in[i] · inv_scale) for fp32 or bf16 inputs, round to nearest
 * even and saturating at ±448 (NaN stays NaN): the per-tensor quantisation
 * of an fp8 GEMM's activations (the GEMM's a_scale is then 1 / inv_scale).
 * count >= 0, inv_scale finite, bf16 input 2-byte aligned. */
int cplab_f32_to_e4m3(const float *in, int64_t count, float inv_scale, uint8_t *out, void *stream, cplab_diag *d);
int cplab_bf16_to_e4m3(const uint16_t *in, int64_t count, float inv_scale, uint8_t *out, void *stream,
                       cplab_diag *d);

/* ---- gathers (kernels/gather.cu) ---------------------------------------- */

/* Gather + upconvert: for each of `rows` rows, out[row] (bf16 [rows][576])
 * is the workspace row of the KV entry at slot[row] (cplab/kvformat.h
 * dequantisation: bf16(e4m3 · scale of its tile) for the 512 latent columns,
 * the stored bf16 RoPE for the last 64), bit-exact with
 * cplab_kvformat_mla_dequantize. slot[row] == -1 (or outside
 * [0, num_slots)) is padding: all 576 columns CPLAB_BF16_POISON.
 * Speed: with kv_cache and out both 16-byte aligned (cudaMalloc'd buffers,
 * and any whole number of rows or entries into them) it moves 16-byte words,
 * 4 rows a warp; the 4-/8-byte alignments allowed above take a slower path
 * with the same results. */
typedef struct cplab_gather_mla_params {
  const uint8_t *kv_cache; /* 656-byte entries, one a slot (may be NULL when num_slots == 0) */
  int64_t num_slots;       /* entries of kv_cache */
  const int64_t *slot;     /* [rows] the entry of each row; -1: padding */
  int64_t rows;            /* rows gathered */
  uint16_t *out;           /* bf16 [rows][576] */
} cplab_gather_mla_params;
int cplab_gather_mla(const cplab_gather_mla_params *p, void *stream, cplab_diag *d);

/* Indexer-key gather: out + row·132 receives the 132-byte entry at
 * idx_cache + slot[row]·132; padding rows (slot -1 or outside
 * [0, num_slots)) are all-zero bytes (scale 0, so their logits are 0). */
typedef struct cplab_gather_idx_params {
  const uint8_t *idx_cache; /* 132-byte entries, one a slot (may be NULL when num_slots == 0) */
  int64_t num_slots;        /* entries of idx_cache */
  const int64_t *slot;      /* [rows] the entry of each row; -1: padding */
  int64_t rows;             /* rows gathered */
  uint8_t *out;             /* [rows][132] */
} cplab_gather_idx_params;
int cplab_gather_idx(const cplab_gather_idx_params *p, void *stream, cplab_diag *d);

/* ---- indexer (kernels/indexer.cu, indexer_decode.cu, topk.cu) -------------- */

/* Indexer logits of m query rows over n gathered key entries (132-byte
 * entries, contiguous, keys + j·132): with q e4m3 [m][heads][128], weight
 * fp32 [m][heads] (the folded w', q scales included) and the key scale s_k
 * (fp32 in bytes 128..131 of the entry),
 *   logits[i][j] = (sum_h w'[i][h] · ReLU(q̂[i][h] · k̂[j])) · s_k[j]   for ks[i] <= j < ke[i]
 *               = -inf                                               otherwise,
 * fp32 [m][n]. The dot products run on fp8 tensor cores (exact products,
 * added in the hardware's order and internal precision: a logit within 2e-3
 * of its magnitude sum |s_k[j]| · sum_h |w'[i][h]| · sum |q̂ · k̂| of the exact
 * value, 4.3e-4 seen on an H100: tests/gpu/test_gpu_indexer.c); the head sum
 * is fp32 in a fixed order. Every key
 * goes through the same instructions wherever it sits, so identical key
 * entries give bit-identical logits (exact ties). heads 1..128 (padded to
 * the next power of two >= 8 inside: 48 heads cost what 64 do). */
typedef struct cplab_indexer_logits_params {
  const uint8_t *q;      /* e4m3 [m][heads][128], 4-byte aligned */
  const float *weight;   /* fp32 [m][heads]: the folded w', q scales included */
  int64_t m;             /* query rows */
  int heads;             /* 1..128 */
  const uint8_t *keys;   /* [n] 132-byte key entries, contiguous, 4-byte aligned */
  int64_t n;             /* keys (below 2^31) */
  const int32_t *ks;     /* [m] first key of row i's range */
  const int32_t *ke;     /* [m] end (exclusive) of row i's range */
  float *logits;         /* fp32 [m][n]; -inf outside [ks[i], ke[i]) */
} cplab_indexer_logits_params;
int cplab_indexer_logits(const cplab_indexer_logits_params *p, void *stream, cplab_diag *d);

/* Decode indexer logits straight from the paged indexer cache (132-byte
 * entries, one a slot), as cplab_gather_idx of the row's keys followed by
 * cplab_indexer_logits over them: row i (of m) has q e4m3 [m][heads][128]
 * and weight fp32 [m][heads] as there, and row_keys[i] keys, local index l
 * at slot block_table[row_req[i]][l / block_size] · block_size +
 * l mod block_size (block_table int32 [num_req][max_blocks]: under DCP the
 * rank's own table and l its local index, so only its keys are read);
 *   logits[i][l] = the logit of that key  for l < min(row_keys[i], n)
 *               = -inf                    for the other l < n
 * fp32 [m][n]. A key whose block index is >= max_blocks, whose table entry
 * is negative or whose slot is >= num_slots is a zero entry (logit 0); a
 * row whose row_req is outside [0, num_req) is all -inf. The same numerics
 * as cplab_indexer_logits (not bit-identical to it: another instruction
 * order; identical keys give identical logits). heads 1..128. */
typedef struct cplab_indexer_logits_decode_params {
  const uint8_t *q;           /* e4m3 [m][heads][128], 4-byte aligned */
  const float *weight;        /* fp32 [m][heads]: the folded w' */
  int64_t m;                  /* query rows */
  int heads;                  /* 1..128 */
  const uint8_t *idx_cache;   /* 132-byte entries, one a slot, 4-byte aligned */
  int64_t num_slots;          /* entries of idx_cache */
  const int32_t *block_table; /* int32 [num_req][max_blocks]: the rank's own table under DCP */
  int num_req;                /* rows of block_table */
  int max_blocks;             /* columns of block_table */
  int block_size;             /* slots a block (>= 1) */
  const int32_t *row_req;     /* [m] row i's block-table row */
  const int32_t *row_keys;    /* [m] row i's keys (local indices 0 .. row_keys[i] - 1) */
  int64_t n;                  /* columns of logits (below 2^31 - 64) */
  float *logits;              /* fp32 [m][n] */
} cplab_indexer_logits_decode_params;
int cplab_indexer_logits_decode(const cplab_indexer_logits_decode_params *p, void *stream, cplab_diag *d);

/* The largest k supported by cplab_topk. */
#define CPLAB_TOPK_MAX 4096

/* A top-k list converted in the same launch into one DCP rank's cache
 * slots (the `convert` of cplab_topk, cplab_topk_split and cplab_topk_merge,
 * where given): out receives, for the launch's idx, what
 * cplab_convert_decode_topk with these fields gives, bit for bit; for the
 * top-k with dcp = 1 (dcp_rank 0: its indices are the request's own keys,
 * where owner and local index are the index itself), for the merge with
 * dcp = D and its interleave. Decode rows so need no conversion launch of
 * their own: a key's table entry is loaded as its place is written (the
 * merge: while its place is searched), not after the list reaches memory.
 * Arguments as cplab_convert_decode_topk's. */
typedef struct cplab_topk_convert {
  const int32_t *row_req;     /* [m] row i's block-table row */
  const int32_t *block_table; /* int32 [num_req][max_blocks]: this DCP rank's table */
  int num_req;                /* rows of block_table */
  int max_blocks;             /* columns of block_table */
  int block_size;             /* B >= 1 */
  int dcp_rank;               /* this rank: 0 .. D - 1 for the merge, 0 for the top-k */
  int32_t *out;               /* int32 [m][k]: slots of the rank's cache, -1 for another rank's keys */
} cplab_topk_convert;

/* Top-k of each row of logits fp32 [m][n] over its columns [ks[i], ke[i])
 * (clamped to [0, n)): idx int32 [m][k] holds request-relative indices
 * (column - ks[i]), best first: a higher logit first, equal logits by the
 * lower index (sim_indexer_topk's rule; -0 equals +0), exact on the fp32
 * values. Fewer than k columns in range: the remaining entries are -1 with
 * score -inf. score fp32 [m][k] (may be NULL) receives the logit of each
 * selected entry. 1 <= k <= CPLAB_TOPK_MAX. (NaN logits, which the logits
 * kernel never produces, order by their bit patterns: +NaN first, -NaN last.) */
typedef struct cplab_topk_params {
  const float *logits;  /* fp32 [m][n] */
  int64_t m;            /* rows */
  int64_t n;            /* columns */
  const int32_t *ks;    /* [m] first column of row i's range */
  const int32_t *ke;    /* [m] end (exclusive) of row i's range */
  int k;                /* 1 .. CPLAB_TOPK_MAX */
  int32_t *idx;         /* int32 [m][k]: request-relative indices, best first, -1 after the valid ones */
  float *score;         /* fp32 [m][k]: their logits, or NULL */
  void *scratch;        /* cplab_topk_split only (cplab_topk ignores it): see there */
  size_t scratch_bytes; /* cplab_topk_split only: bytes of scratch */
  const cplab_topk_convert *convert; /* decode rows: idx's slots too (dcp 1, dcp_rank 0), or NULL */
} cplab_topk_params;
int cplab_topk(const cplab_topk_params *p, void *stream, cplab_diag *d);
/* Cost: one persistent 512-thread block per SM takes the rows in turn. A
 * row's range is read from global memory once and staged in shared memory
 * when it fits (up to about 43000 columns at k <= 2048, 39000 at k = 4096,
 * with sm_90's 227 KiB a block), the next row's range loading while this
 * one is ranked; a longer row is read from global memory once per pass
 * (three for real logits). On an H200, 4096 staged rows of 32768 real
 * logits take ~350 us at k = 2048 (bench/NOTES.md). Few long rows leave
 * most SMs idle and read slowly: cplab_topk_split below spreads them. */

/* The same result, with few long rows spread over the GPU: a row's range is
 * cut into chunks of 16384 columns (32768 for k > 2048); one kernel selects
 * each chunk's exact top-k into scratch (a row's top-k is within the union of
 * its chunks'), a second one each row's top-k from its chunks' candidates,
 * sorted. Where there are at most 8 chunks and either one row or few enough
 * rows that all their chunks run at once (m · chunks <= the SM count), one
 * kernel does both instead: one row a thread-block cluster of chunks blocks,
 * which share the row's floors, histogram and winners through distributed
 * shared memory (sm_90; the scratch is asked for and not used; a device
 * that refuses the cluster takes the two kernels). Same result either way.
 * It splits when the rows are too long to be staged (above) and
 * m <= 4 · the device's SM count. Rows that could be staged take the
 * cluster path too where one row or few rows (m · slices <= the SM count)
 * have at least two slices of max(8192, 2k) columns (up to 8 a row);
 * otherwise it runs cplab_topk (scratch unused, may be NULL).
 * cplab_topk_scratch gives in *bytes the scratch for (m, n, k) on the
 * current device: m · ceil(n / chunk) · k · 8 when it splits, else 0.
 * scratch: device memory of at least that, 16-byte aligned (CPLAB_EINVAL
 * otherwise), for the call's duration on its stream. */
int cplab_topk_scratch(int64_t m, int64_t n, int k, size_t *bytes, cplab_diag *d);
int cplab_topk_split(const cplab_topk_params *p, void *stream, cplab_diag *d);

/* The path cplab_topk_split takes for (m, n, k) on a device of `sms` SMs
 * and `smem_optin` bytes of shared memory a block (cplab_device_facts), for
 * a benchmark's record and the tests: computed on the host, touching no
 * device. CPLAB_EINVAL for a NULL route or arguments outside the launchers'
 * (m, n >= 0, n <= INT32_MAX, k 1..CPLAB_TOPK_MAX, sms >= 1). */
typedef enum {
  CPLAB_TOPK_PATH_ROWS = 0,    /* cplab_topk: one block a row */
  CPLAB_TOPK_PATH_CLUSTER = 1, /* one row a thread-block cluster */
  CPLAB_TOPK_PATH_CHUNKS = 2   /* the chunks' kernel, then the rows' merge */
} cplab_topk_path;
typedef struct cplab_topk_route {
  cplab_topk_path path;    /* the path tried first */
  cplab_topk_path refused; /* the path taken where the device refuses the cluster (path otherwise) */
  int blocks;              /* blocks a row: the cluster's, the chunks, or 1 (ROWS) */
  int64_t chunk, chunks;   /* the split's columns a chunk and chunks a row (refused CHUNKS), else 0 */
  size_t scratch_bytes;    /* what cplab_topk_scratch gives on such a device */
} cplab_topk_route;
int cplab_topk_split_route(int64_t m, int64_t n, int k, int sms, int smem_optin, cplab_topk_route *r,
                           cplab_diag *d);

/* The exact top-k of rows whose keys are split among D owners (DCP):
 * cand_idx int32 [D][m][k] and cand_score fp32 [D][m][k] hold each owner's
 * cplab_topk of the row over its own keys (owner o's local index l being the
 * row's key at position cplab_kv_position(l, o, interleave, D) of kv.h).
 * idx int32 [m][k] receives the row's top-k over all its keys as positions,
 * best first (a higher logit, then the lower position), -1 after the valid
 * ones, and score (may be NULL) their logits: exactly what cplab_topk over
 * every key in position order gives. 1 <= D, interleave >= 1,
 * 1 <= k <= CPLAB_TOPK_MAX; positions below 2^31 (they are written as int32). */
typedef struct cplab_topk_merge_params {
  const int32_t *cand_idx;  /* int32 [D][m][k]: each owner's cplab_topk over its own keys */
  const float *cand_score;  /* fp32 [D][m][k]: their logits */
  int D;                    /* owners (DCP ranks), >= 1 */
  int64_t m;                /* rows */
  int k;                    /* 1 .. CPLAB_TOPK_MAX */
  int interleave;           /* the layout's interleave (>= 1) */
  int32_t *idx;             /* int32 [m][k]: positions, best first, -1 after the valid ones */
  float *score;             /* fp32 [m][k]: their logits, or NULL */
  const cplab_topk_convert *convert; /* the merged list's slots for one rank too, or NULL */
} cplab_topk_merge_params;
int cplab_topk_merge(const cplab_topk_merge_params *p, void *stream, cplab_diag *d);

/* ---- top-k conversion (kernels/convert.cu) -------------------------------- */

/* Prefill rows (reference §5.2 after the fix, as
 * cplab_layout_vllm_convert_prefill): m rows of k request-relative tokens t
 * (topk int32 [m][k]); row i belongs to region r = row_region[i] of the
 * FlashMLA chunk, whose parameters are ws_start[r] (workspace_start),
 * shard_rows[r] (shard_rows of r's chunk) and, optionally, extent[r]. With
 * D = dcp, I = interleave:
 *   out = owner(t)·shard_rows[r] + ws_start[r] + local_idx(t)   (int32)
 *   owner(t) = (t / I) mod D,  local_idx(t) = (t / (I·D))·I + t mod I
 * and out = -1 where t < 0 (only there: remote tokens stay valid, they sit
 * in other ranks' slices of the rank-major workspace). extent may be NULL
 * (the vLLM rule exactly); when given, t >= extent[r] also gives -1 (a
 * stricter guard; a correct indexer never produces such t). A row whose
 * region is outside [0, num_regions) is all -1.
 * Speed (both conversions): with k % 4 == 0 and topk and out 16-byte aligned
 * the lists move as 16-byte words; any other k or alignment (4 bytes, as
 * int32 needs) takes a slower path with the same results. */
typedef struct cplab_convert_prefill_topk_params {
  const int32_t *topk;       /* int32 [m][k]: request-relative tokens t */
  int64_t m;                 /* rows */
  int k;                     /* entries a row */
  const int32_t *row_region; /* [m] region r of row i */
  const int64_t *ws_start;   /* [num_regions] workspace_start of region r */
  const int64_t *shard_rows; /* [num_regions] shard_rows of r's chunk */
  const int64_t *extent;     /* [num_regions] or NULL: t >= extent[r] gives -1 too */
  int num_regions;           /* regions of the chunk */
  int dcp;                   /* D >= 1 */
  int interleave;            /* I >= 1 */
  int32_t *out;              /* int32 [m][k]: workspace rows */
} cplab_convert_prefill_topk_params;
int cplab_convert_prefill_topk(const cplab_convert_prefill_topk_params *p, void *stream, cplab_diag *d);

/* Decode rows (as cplab_layout_vllm_convert_decode): row i uses block-table
 * row row_req[i] of block_table int32 [num_req][max_blocks] (this DCP rank's
 * table); t -> -1 if t < 0, if owner(t) != dcp_rank or if
 * local_idx(t) / block_size >= max_blocks; else
 *   block_table[row_req[i]][local_idx(t) / B] · B + local_idx(t) mod B.
 * A row whose row_req is outside [0, num_req) is all -1. */
typedef struct cplab_convert_decode_topk_params {
  const int32_t *topk;        /* int32 [m][k]: request-relative tokens t */
  int64_t m;                  /* rows */
  int k;                      /* entries a row */
  const int32_t *row_req;     /* [m] row i's block-table row */
  const int32_t *block_table; /* int32 [num_req][max_blocks]: this DCP rank's table */
  int num_req;                /* rows of block_table */
  int max_blocks;             /* columns of block_table */
  int block_size;             /* B >= 1 */
  int dcp;                    /* D >= 1 */
  int dcp_rank;               /* this rank, 0 .. dcp - 1 */
  int interleave;             /* I >= 1 */
  int32_t *out;               /* int32 [m][k]: slots of the local cache */
} cplab_convert_decode_topk_params;
int cplab_convert_decode_topk(const cplab_convert_decode_topk_params *p, void *stream, cplab_diag *d);

/* ---- sparse MLA attention (kernels/attention_prefill.cu, attention_decode.cu) -- */

/* The heads one block of the sparse MLA kernels (prefill, decode) runs: a
 * call's heads are taken in blocks of this many, the heads past the call's
 * count in the last block zero rows whose results are never stored, so a
 * call of h heads costs what ceil(h / 64) · 64 heads cost (the padding
 * FlashMLA asks of its callers on sm90, done inside). */
#define CPLAB_MLA_HEAD_BLOCK 64

/* Prefill over a bf16 workspace: q bf16 [m][heads][576], workspace bf16
 * [rows][576], idx int32 [m][k] (workspace rows; -1 = skip). For each row i
 * and head h, over the selected rows j (values = their first 512 columns):
 *   s_j = scale · q[i][h] · ws[j],  out[i][h] = sum_j softmax(s)_j · ws[j][0..512),
 *   lse[i][h] = log(sum_j exp(s_j))   (natural log)
 * out fp32 [m][heads][512], lse fp32 [m][heads]. Tensor cores: bf16
 * products, fp32 accumulation, the softmax weights rounded to bf16 before
 * they multiply the values (as FlashMLA does), online softmax over tiles
 * of 64 consecutive list entries. Agreement with the double-precision
 * reference is within analysis/policy.json's attn_out / attn_lse
 * tolerances (tests/gpu/test_gpu_attention.c states the bounds it checks),
 * not bit for bit with the decode kernel. A row with no valid index:
 * lse = -inf, out = 0. Duplicate indices count as often as they appear.
 * A row's results do not depend on the other rows of the call, nor on the
 * head count: the same bits whether it runs alone or in any batch.
 * q and the workspace 16-byte aligned (they are copied in 16-byte chunks). */
typedef struct cplab_sparse_mla_prefill_params {
  const uint16_t *q;         /* bf16 [m][heads][576], 16-byte aligned */
  int64_t m;                 /* query rows */
  int heads;                 /* query heads of a row */
  const uint16_t *workspace; /* bf16 [rows][576], 16-byte aligned */
  int64_t rows;              /* the workspace's rows */
  const int32_t *idx;        /* int32 [m][k]: workspace rows, -1 = skip */
  int k;                     /* list entries a row */
  float scale;               /* the softmax scale */
  float *out;                /* fp32 [m][heads][512] */
  float *lse;                /* fp32 [m][heads], natural log */
} cplab_sparse_mla_prefill_params;
int cplab_sparse_mla_prefill(const cplab_sparse_mla_prefill_params *p, void *stream, cplab_diag *d);

/* Decode over the local fp8 cache: as cplab_sparse_mla_prefill, with the rows
 * read from kv_cache (656-byte entries) at slot[i][j] (int32 [m][k], -1 =
 * skip, e.g. tokens another DCP rank owns; a slot >= num_slots too) and
 * dequantised on the fly exactly as cplab_gather_mla does. Tensor cores as
 * the prefill kernel (the same bounds against the reference), over tiles
 * of the next 64 valid entries in list order, so a DCP rank's row costs
 * its own entries only. Batch invariant as the prefill kernel. q and
 * kv_cache 16-byte aligned; k at most 8064 (CPLAB_EUNSUPPORTED beyond). One
 * block per (row, 64 heads): a small batch leaves most of the GPU idle;
 * _split below spreads it. */
typedef struct cplab_sparse_mla_decode_params {
  const uint16_t *q;        /* bf16 [m][heads][576], 16-byte aligned */
  int64_t m;                /* query rows */
  int heads;                /* query heads of a row */
  const uint8_t *kv_cache;  /* num_slots 656-byte entries, 16-byte aligned */
  int64_t num_slots;
  const int32_t *slot;      /* int32 [m][k]: cache slots, -1 (or >= num_slots) = skip */
  int k;                    /* list entries a row, at most 8064 */
  float scale;              /* the softmax scale */
  float *out;               /* fp32 [m][heads][512] (16-byte aligned when split) */
  float *lse;               /* fp32 [m][heads], natural log */
  int splits;               /* _split only: 0 for the model's choice, else 1 .. the row's 64-entry tiles */
  void *scratch;            /* _split only: the splits' partials (cplab_sparse_mla_decode_scratch) */
  size_t scratch_bytes;
} cplab_sparse_mla_decode_params;
int cplab_sparse_mla_decode(const cplab_sparse_mla_decode_params *p, void *stream, cplab_diag *d);

/* The same result with each row's entries split over several blocks, the
 * splits' partial (out, lse) merged by a second kernel (weights
 * exp(lse_z - max), in fp32), so a small batch spreads over the GPU. The
 * number of splits comes from a wave model of (m, heads, k, the device's
 * SMs): up to one per 64-entry tile for a single row, none for a batch
 * that fills the GPU. NOT batch invariant: a row's rounding depends on the
 * split count, hence on m (within the bounds of the reference, as the
 * unsplit call's; cplab-bench --check compares it to cplab-exec's
 * row-by-row results by those bounds). `splits`: 0 for the model's choice
 * (cplab_sparse_mla_decode_splits says which), else that many (1 .. the
 * row's 64-entry tiles; CPLAB_EINVAL beyond). scratch: device memory of at
 * least *bytes from cplab_sparse_mla_decode_scratch for the same (m, heads,
 * k, splits) (0 when the call runs unsplit: scratch may then be NULL),
 * 16-byte aligned; out 16-byte aligned when split. */
int cplab_sparse_mla_decode_splits(int64_t m, int heads, int k, int *splits, cplab_diag *d);
int cplab_sparse_mla_decode_scratch(int64_t m, int heads, int k, int splits, size_t *bytes, cplab_diag *d);
int cplab_sparse_mla_decode_split(const cplab_sparse_mla_decode_params *p, void *stream, cplab_diag *d);

/* ---- restore to global order (kernels/restore.cu) -------------------------- */

/* The PCP output all-gather holds each PCP rank's padded local tokens,
 * rank-major (gathered_rows rows of row_elems bf16). out[g] = gathered
 * [restore_idx[g]] for the n global tokens of the step (the plan's restore
 * map); an index outside [0, gathered_rows) gives a CPLAB_BF16_POISON row.
 * row_elems even. Speed: with row_elems % 8 == 0 and both buffers 16-byte
 * aligned the rows move as 16-byte words; otherwise (the 4-byte words the
 * contract's alignment allows) a slower path with the same results. */
typedef struct cplab_restore_rows_params {
  const uint16_t *gathered;   /* bf16 [gathered_rows][row_elems]: the all-gather, rank-major */
  int64_t gathered_rows;      /* rows of gathered */
  const int32_t *restore_idx; /* [n] the plan's restore map */
  int64_t n;                  /* global tokens of the step */
  int row_elems;              /* bf16 a row, even */
  uint16_t *out;              /* bf16 [n][row_elems] */
} cplab_restore_rows_params;
int cplab_restore_rows(const cplab_restore_rows_params *p, void *stream, cplab_diag *d);

/* ---- DCP combine (kernels/combine.cu) ------------------------------------- */

/* LSE combine of D partial results (reference §7, sim_lse_combine's rules):
 * lse fp32 [D][m][heads], out fp32 [D][m][heads][512] -> final fp32
 * [m][heads][512]. Per (row, head): an lse that is NaN or +inf counts as
 * -inf; M = max lse (0 when all are -inf); the factor of rank d is
 * f_d = exp(lse_d - M) / sum_r exp(lse_r - M) (= exp(lse_d - L) with
 * L = logsumexp), computed in double; a NaN factor becomes 0 and where the
 * factor is 0 the rank's output is skipped (NaN outputs of empty shards
 * included); final = sum_d f_d · out_d accumulated in double, rounded once.
 * D <= 4096. */
typedef struct cplab_lse_combine_params {
  const float *lse; /* fp32 [D][m][heads] */
  const float *out; /* fp32 [D][m][heads][512], 16-byte aligned */
  int D;            /* partial results, 1..4096 */
  int64_t m;        /* rows */
  int heads;        /* heads a row */
  float *final;     /* fp32 [m][heads][512], 16-byte aligned */
} cplab_lse_combine_params;
int cplab_lse_combine(const cplab_lse_combine_params *p, void *stream, cplab_diag *d);

/* ---- GEMM (kernels/gemm.cu, cuBLASLt) ---------------------------------------- */

/* A cuBLASLt handle and its 64 MiB device workspace. One handle serves one
 * stream at a time: calls on different streams that may overlap need one
 * handle each (they share the workspace). */
typedef struct cplab_gemm cplab_gemm;

/* *h = a new handle on the current device (CPLAB_ENOMEM, CPLAB_ECUDA). */
int cplab_gemm_create(cplab_gemm **h, cplab_diag *d);
/* Free the handle (NULL: no-op); waits for the device first (cudaFree). */
int cplab_gemm_destroy(cplab_gemm *h, cplab_diag *d);
/* cuBLASLt's version number (cublasLtGetVersion: major·10000 + minor·100 + patch). */
size_t cplab_gemm_lib_version(void);

/* C[m][n] = A[m][k] · B[n][k]^T, all bf16 row-major (B as a Linear layer's
 * weight [out][in]), fp32 accumulation, the result rounded once to bf16;
 * asynchronous on stream. k == 0 gives C = 0; m or n == 0 does nothing.
 * Sizes below 2^31; pointers 2-byte aligned (the algorithm is chosen for the
 * actual alignment, faster at 16 and above). CPLAB_EUNSUPPORTED when cuBLASLt
 * has no algorithm for the problem. */
int cplab_gemm_bf16(cplab_gemm *h, int64_t m, int64_t n, int64_t k, const uint16_t *A, const uint16_t *B,
                    uint16_t *C, void *stream, cplab_diag *d);

/* C[m][n] = (a_scale · A[m][k]) · (b_scale · B[n][k])^T with A and B e4m3
 * row-major (k contiguous in both: the "TN" form Hopper's fp8 kernels need),
 * a_scale and b_scale per-tensor fp32 scales in device memory (read when the
 * GEMM runs), C bf16 row-major; fp32 accumulation with cuBLASLt's fast
 * accumulation off. m, n and k multiples of 16 and A, B, C 16-byte aligned
 * (cuBLASLt's fp8 requirements), else CPLAB_EINVAL saying so. */
int cplab_gemm_fp8(cplab_gemm *h, int64_t m, int64_t n, int64_t k, const uint8_t *A, const uint8_t *B,
                   const float *a_scale, const float *b_scale, uint16_t *C, void *stream, cplab_diag *d);

#ifdef __cplusplus
}
#endif
#endif
