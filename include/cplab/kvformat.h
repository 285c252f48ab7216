/* cplab/kvformat.h: the quantised cache entries of sparse MLA, byte for byte.
 *
 * fp8_ds_mla KV entry, CPLAB_MLA_ENTRY_BYTES = 656 bytes per token and layer:
 *   bytes   0..511  512 e4m3 NoPE (latent) values, 4 tiles of 128; tile t
 *                   holds latent elements 128t .. 128t+127;
 *   bytes 512..527  4 fp32 scales, little-endian, scale t for tile t;
 *   bytes 528..655  64 bf16 RoPE values, little-endian, unquantised.
 * Indexer key entry, CPLAB_IDX_ENTRY_BYTES = 132 bytes per token and layer:
 *   bytes   0..127  128 e4m3 values (one tile);
 *   bytes 128..131  its fp32 scale, little-endian.
 * (In the paged indexer cache a block stores all value bytes of its tokens
 * first, then all scales; an entry here is the per-token view, as gathered.)
 *
 * Scales (cplab_kvformat_scale_exp): one power of two per 128-value tile,
 * scale = 2^k with k = ceil(log2(amax / 448)), amax the tile's largest
 * magnitude: the smallest power of two with amax / scale <= 448. Computed
 * exactly from the bits of amax (no libm, no rounded division):
 * amax = f * 2^E with f in [1, 2) gives k = E - 8 when f <= 1.75 and E - 7
 * when f > 1.75 (448 = 1.75 * 2^8). Edge rules:
 *   - amax == 0 (an all-zero tile, signed zeros included): k = 0, scale 1.0;
 *     any scale encodes the tile the same way (0x00 / 0x80 bytes);
 *   - k is at least CPLAB_KV_SCALE_EXP_MIN = -117, so every nonzero
 *     dequantised value (at least 2^-9 * 2^-117 = 2^-126) is a normal float
 *     and no flush-to-zero anywhere can change it; tiles with
 *     amax < 448 * 2^-117 simply do not reach 448 after scaling;
 *   - the largest finite amax (FLT_MAX) gives k = 120;
 *   - inputs must be finite: the quantisers fail with CPLAB_ERANGE on an
 *     infinity or NaN (cplab_kvformat_scale_exp returns
 *     CPLAB_KV_SCALE_EXP_INVALID for a non-finite amax).
 * Quantisation: byte = e4m3(x / scale), computed as x * 2^-k (a power of two
 * built from bits). For a power-of-two scale the quotient is exact unless it
 * leaves the normal float range: it cannot overflow (|x| / scale <= 448 by the
 * rule above) and an underflow (|x| / scale < 2^-126) rounds to 0 in e4m3
 * either way, so the only rounding is e4m3's own round-to-nearest-even;
 * saturation never triggers.
 * Dequantisation of a KV entry into the 576-wide bf16 workspace row:
 *   row[i]       = bf16(float(e4m3[i]) * scale[i / 128])   for i < 512,
 *   row[512 + j] = rope[j]                                 for j < 64;
 * the product is exact (3 significant bits times a power of two), so the
 * bf16 rounding is exact too, except that e4m3 values whose product exceeds
 * FLT_MAX (only with k = 120, from |x| >= 248 * 2^120) become +-inf.
 * Indexer entries dequantise into float: k[i] = float(e4m3[i]) * scale.
 *
 * Generators (cplab/philox.h keying, layer, request, position):
 *   - KV: the 512 latent values are the realistic row of tensor
 *     CPLAB_TENSOR_KV_NOPE, the 64 RoPE values the realistic row of
 *     CPLAB_TENSOR_KV_ROPE rounded to bf16 (RNE);
 *   - indexer key: the realistic row of CPLAB_TENSOR_INDEX_K at position
 *     cplab_kvformat_idx_source(...), i.e. 1/32 of the rows (those at
 *     position > 0) copy an earlier row of their request exactly: exact
 *     ties in the indexer logits.
 * These are functions of their arguments only (no state).
 */
#ifndef CPLAB_KVFORMAT_H
#define CPLAB_KVFORMAT_H

#include <limits.h>
#include <stdint.h>

#include "cplab/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CPLAB_KV_TILE 128          /* values per fp8 scale */
#define CPLAB_KV_SCALE_EXP_MIN (-117)
#define CPLAB_KV_SCALE_EXP_INVALID INT_MIN

#define CPLAB_MLA_NOPE_DIM 512
#define CPLAB_MLA_ROPE_DIM 64
#define CPLAB_MLA_TILES 4
#define CPLAB_MLA_ROW_DIM 576      /* workspace row: 512 latent + 64 rope, bf16 */
#define CPLAB_MLA_NOPE_OFFSET 0
#define CPLAB_MLA_SCALE_OFFSET 512
#define CPLAB_MLA_ROPE_OFFSET 528
#define CPLAB_MLA_ENTRY_BYTES 656

#define CPLAB_IDX_DIM 128
#define CPLAB_IDX_SCALE_OFFSET 128
#define CPLAB_IDX_ENTRY_BYTES 132

/* k with scale = 2^k for a tile whose largest magnitude is amax (sign
 * ignored); CPLAB_KV_SCALE_EXP_INVALID when amax is infinite or NaN. */
int cplab_kvformat_scale_exp(float amax);
/* 2^k as a float (built from bits), for k in [-126, 127]. */
float cplab_kvformat_pow2(int k);

/* Quantise one tile of n values (n <= CPLAB_KV_TILE) into n e4m3 bytes;
 * *scale receives the tile's scale. CPLAB_ERANGE on a non-finite value,
 * CPLAB_EINVAL on n out of range. */
int cplab_kvformat_quantize_tile(const float *x, int n, uint8_t *bytes, float *scale, cplab_diag *d);

/* Build a KV entry from 512 latent floats and 64 RoPE floats (rounded to
 * bf16). CPLAB_ERANGE (naming the element) if any input is not finite. */
int cplab_kvformat_mla_quantize(const float nope[CPLAB_MLA_NOPE_DIM], const float rope[CPLAB_MLA_ROPE_DIM],
                                uint8_t entry[CPLAB_MLA_ENTRY_BYTES], cplab_diag *d);
/* The entry as a bf16 workspace row (bit patterns). */
void cplab_kvformat_mla_dequantize(const uint8_t entry[CPLAB_MLA_ENTRY_BYTES], uint16_t row[CPLAB_MLA_ROW_DIM]);
/* Scale of tile t (0..3) of an entry. */
float cplab_kvformat_mla_scale(const uint8_t entry[CPLAB_MLA_ENTRY_BYTES], int t);
/* The generated inputs of (seed, layer, request, position), before quantisation. */
void cplab_kvformat_mla_values(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position,
                               float nope[CPLAB_MLA_NOPE_DIM], float rope[CPLAB_MLA_ROPE_DIM]);
/* The generated KV entry of (seed, layer, request, position). */
void cplab_kvformat_mla_generate(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position,
                                 uint8_t entry[CPLAB_MLA_ENTRY_BYTES]);

/* The absorbed MLA query of one head of the token at (request, position):
 * 576 bf16 bit patterns (RNE) of the realistic row of CPLAB_TENSOR_Q_MLA,
 * elements head·576 .. head·576 + 575 (head is the global head index, so
 * every TP layout sees the same query for the same head). */
void cplab_kvformat_mla_query(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position, uint32_t head,
                              uint16_t q[CPLAB_MLA_ROW_DIM]);

/* Build an indexer entry from 128 floats. CPLAB_ERANGE on a non-finite input. */
int cplab_kvformat_idx_quantize(const float k[CPLAB_IDX_DIM], uint8_t entry[CPLAB_IDX_ENTRY_BYTES], cplab_diag *d);
/* The entry as floats: e4m3 * scale. */
void cplab_kvformat_idx_dequantize(const uint8_t entry[CPLAB_IDX_ENTRY_BYTES], float k[CPLAB_IDX_DIM]);
/* Scale of an indexer entry. */
float cplab_kvformat_idx_scale(const uint8_t entry[CPLAB_IDX_ENTRY_BYTES]);
/* The position whose key the indexer key at `position` copies (itself if none). */
uint32_t cplab_kvformat_idx_source(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position);
/* The generated indexer key of (seed, layer, request, position), before quantisation. */
void cplab_kvformat_idx_values(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position,
                               float k[CPLAB_IDX_DIM]);
/* The generated indexer entry of (seed, layer, request, position). */
void cplab_kvformat_idx_generate(uint64_t seed, uint32_t layer, uint32_t request, uint32_t position,
                                 uint8_t entry[CPLAB_IDX_ENTRY_BYTES]);

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_KVFORMAT_H */
