/* GPU test: generated inputs and gathers, bit for bit against the C
 * generators (cplab/kvformat.h, sim/indexer_ref.h):
 *   - cplab_gen_cache: hundreds of (request, position) tokens through a slot
 *     list with skipped (-1) slots, incl. indexer-key ties; unwritten slots
 *     keep their poison bytes;
 *   - cplab_gather_mla / cplab_gather_idx: rows by slot, padding rows (-1 and
 *     out-of-range slots) NaN 0x7FC0 / zero bytes;
 *   - cplab_gen_mla_query: every bf16 of every (token, head);
 *   - cplab_gen_indexer_query: e4m3 bytes and scales exact, folded weights
 *     within 1e-6 relative of the double reference;
 *   - cplab_poison_bytes / cplab_poison_bf16;
 *   - last, cplab_gather_mla's and cplab_gather_idx's two paths (16-byte
 *     words when the cache and the rows are 16-byte aligned, else 4-byte
 *     entry words: caches at +4 and +8 bytes, rows at +8 / +4): a cache of 64-token
 *     blocks in shuffled order read through runs of consecutive tokens (the
 *     production pattern), padding slots (-1, -2, num_slots, INT64_MIN,
 *     INT64_MAX), row counts around the 4 rows of a warp and 32 of a block
 *     (1 .. 1536), and nothing written outside the rows (guard bytes);
 *   - cplab_gather_mla's conversion on every e4m3 byte (NaN bytes too) under
 *     every scale 2^k the format writes (k = -117 .. 15, where the kernels
 *     take their fast path) and scales they must not take it for (2^16 and
 *     above, 2^-118 and below, non-powers of two, negative, zero, subnormal,
 *     inf, NaN). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kvformat.h"
#include "cplab/stats.h"
#include "indexer_ref.h"
#include "kt.h"

#define POISON_BYTE 0xA5

typedef struct tokens {
  int n;
  int32_t *req, *pos;
  int64_t *slot;
} tokens;

/* n tokens: the first 200 are positions 0..199 of one request (so indexer
 * keys copy earlier rows: ties), the rest random; slots are distinct, a
 * random subset of [0, num_slots), every 9th token skipped (-1). */
static void make_tokens(uint64_t *rng, int n, int64_t num_slots, tokens *t) {
  static const int32_t reqs[] = {0, 1, 7, 123456, INT32_MAX};
  int64_t *perm = kt_host((size_t)num_slots * sizeof *perm);
  for (int64_t i = 0; i < num_slots; i++) perm[i] = i;
  for (int64_t i = num_slots - 1; i > 0; i--) {
    int64_t j = kt_int(rng, 0, i), x = perm[i];
    perm[i] = perm[j];
    perm[j] = x;
  }
  t->n = n;
  t->req = kt_host((size_t)n * sizeof *t->req);
  t->pos = kt_host((size_t)n * sizeof *t->pos);
  t->slot = kt_host((size_t)n * sizeof *t->slot);
  for (int i = 0; i < n; i++) {
    t->req[i] = i < 200 ? 3 : reqs[kt_int(rng, 0, 4)];
    t->pos[i] = i < 200 ? i : (int32_t)kt_int(rng, 0, 200000);
    t->slot[i] = i % 9 == 8 ? -1 : perm[i];
  }
  free(perm);
}

static void free_tokens(tokens *t) {
  free(t->req);
  free(t->pos);
  free(t->slot);
}

typedef struct caches {
  int64_t num_slots;
  uint8_t *kv, *idx;     /* host copies of the device caches */
  uint8_t *d_kv, *d_idx; /* device */
} caches;

static int all_bytes(const uint8_t *p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

/* Generate through the slot list and compare every written entry; unwritten
 * slots must keep the poison. */
static void check_gen_cache(uint64_t seed, uint32_t layer, const tokens *t, caches *c) {
  cplab_diag *d = kt_diag();
  size_t kv_bytes = (size_t)c->num_slots * CPLAB_MLA_ENTRY_BYTES, idx_bytes = (size_t)c->num_slots * CPLAB_IDX_ENTRY_BYTES;
  kt_ok(cplab_poison_bytes(c->d_kv, kv_bytes, POISON_BYTE, NULL, d), "cplab_poison_bytes");
  kt_ok(cplab_poison_bytes(c->d_idx, idx_bytes, POISON_BYTE, NULL, d), "cplab_poison_bytes");
  int32_t *d_req = kt_dev_from(t->req, (size_t)t->n * sizeof *t->req);
  int32_t *d_pos = kt_dev_from(t->pos, (size_t)t->n * sizeof *t->pos);
  int64_t *d_slot = kt_dev_from(t->slot, (size_t)t->n * sizeof *t->slot);
  kt_ok(cplab_gen_cache(&(cplab_gen_cache_params){.seed = seed, .layer = layer, .req = d_req, .pos = d_pos,
                                                  .slot = d_slot, .n = t->n, .kv_cache = c->d_kv, .idx_cache = c->d_idx,
                                                  .num_slots = c->num_slots}, NULL, d),
        "cplab_gen_cache");
  kt_sync();
  kt_down(c->kv, c->d_kv, kv_bytes);
  kt_down(c->idx, c->d_idx, idx_bytes);
  uint8_t *written = kt_host((size_t)c->num_slots);
  int bad = 0, skipped = 0, ties = 0, entries = 0;
  for (int i = 0; i < t->n; i++) {
    if (t->slot[i] < 0) {
      skipped++;
      continue;
    }
    uint8_t kv[CPLAB_MLA_ENTRY_BYTES], idx[CPLAB_IDX_ENTRY_BYTES];
    cplab_kvformat_mla_generate(seed, layer, (uint32_t)t->req[i], (uint32_t)t->pos[i], kv);
    cplab_kvformat_idx_generate(seed, layer, (uint32_t)t->req[i], (uint32_t)t->pos[i], idx);
    if (cplab_kvformat_idx_source(seed, layer, (uint32_t)t->req[i], (uint32_t)t->pos[i]) != (uint32_t)t->pos[i]) ties++;
    written[t->slot[i]] = 1;
    entries++;
    int ok = !memcmp(kv, c->kv + t->slot[i] * CPLAB_MLA_ENTRY_BYTES, sizeof kv) &&
             !memcmp(idx, c->idx + t->slot[i] * CPLAB_IDX_ENTRY_BYTES, sizeof idx);
    if (!ok && bad++ == 0)
      printf("# first mismatch: token %d (request %" PRId32 ", position %" PRId32 ", slot %" PRId64 ")\n", i,
             t->req[i], t->pos[i], t->slot[i]);
  }
  int untouched = 1;
  for (int64_t s = 0; s < c->num_slots; s++)
    if (!written[s])
      untouched &= all_bytes(c->kv + s * CPLAB_MLA_ENTRY_BYTES, CPLAB_MLA_ENTRY_BYTES, POISON_BYTE) &&
                   all_bytes(c->idx + s * CPLAB_IDX_ENTRY_BYTES, CPLAB_IDX_ENTRY_BYTES, POISON_BYTE);
  kt_check(bad == 0 && untouched && ties > 0,
           "gen_cache seed %" PRIu64 " layer %" PRIu32 ": %d KV + indexer entries bit-exact (%d mismatches), "
           "%d tokens skipped, %d indexer-key ties, unwritten slots untouched: %s",
           seed, layer, entries, bad, skipped, ties, untouched ? "yes" : "no");
  free(written);
  kt_free(d_req);
  kt_free(d_pos);
  kt_free(d_slot);
}

/* Gather rows by slot: valid slots, -1 and out-of-range slots. */
static int64_t *gather_slots(uint64_t *rng, int64_t rows, const tokens *t, int64_t num_slots) {
  int64_t *slot = kt_host((size_t)rows * sizeof *slot);
  for (int64_t r = 0; r < rows; r++) {
    int64_t u = kt_int(rng, 0, 99);
    if (u < 10) slot[r] = -1;
    else if (u < 14) slot[r] = num_slots + kt_int(rng, 0, 1000);
    else slot[r] = t->slot[kt_int(rng, 0, t->n - 1)]; /* may be -1 too */
  }
  return slot;
}

static void check_gathers(uint64_t *rng, const tokens *t, const caches *c) {
  cplab_diag *d = kt_diag();
  const int64_t rows = 500;
  int64_t *slot = gather_slots(rng, rows, t, c->num_slots);
  int64_t *d_slot = kt_dev_from(slot, (size_t)rows * sizeof *slot);
  uint16_t *d_out = kt_dev((size_t)rows * CPLAB_MLA_ROW_DIM * 2);
  uint8_t *d_keys = kt_dev((size_t)rows * CPLAB_IDX_ENTRY_BYTES);
  kt_ok(cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = c->d_kv, .num_slots = c->num_slots, .slot = d_slot,
                                                    .rows = rows, .out = d_out}, NULL, d), "cplab_gather_mla");
  kt_ok(cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = c->d_idx, .num_slots = c->num_slots, .slot = d_slot,
                                                    .rows = rows, .out = d_keys}, NULL, d), "cplab_gather_idx");
  kt_sync();
  uint16_t *out = kt_host((size_t)rows * CPLAB_MLA_ROW_DIM * 2);
  uint8_t *keys = kt_host((size_t)rows * CPLAB_IDX_ENTRY_BYTES);
  kt_down(out, d_out, (size_t)rows * CPLAB_MLA_ROW_DIM * 2);
  kt_down(keys, d_keys, (size_t)rows * CPLAB_IDX_ENTRY_BYTES);
  int bad_mla = 0, bad_idx = 0, padding = 0;
  for (int64_t r = 0; r < rows; r++) {
    uint16_t want[CPLAB_MLA_ROW_DIM];
    uint8_t want_key[CPLAB_IDX_ENTRY_BYTES];
    if (slot[r] < 0 || slot[r] >= c->num_slots) {
      padding++;
      for (int i = 0; i < CPLAB_MLA_ROW_DIM; i++) want[i] = CPLAB_BF16_POISON;
      memset(want_key, 0, sizeof want_key);
    } else {
      cplab_kvformat_mla_dequantize(c->kv + slot[r] * CPLAB_MLA_ENTRY_BYTES, want);
      memcpy(want_key, c->idx + slot[r] * CPLAB_IDX_ENTRY_BYTES, sizeof want_key);
    }
    bad_mla += memcmp(want, out + r * CPLAB_MLA_ROW_DIM, sizeof want) != 0;
    bad_idx += memcmp(want_key, keys + r * CPLAB_IDX_ENTRY_BYTES, sizeof want_key) != 0;
  }
  kt_check(bad_mla == 0, "gather_mla: %" PRId64 " rows (%d padding) equal cplab_kvformat_mla_dequantize / 0x7FC0, %d mismatched rows",
           rows, padding, bad_mla);
  kt_check(bad_idx == 0, "gather_idx: %" PRId64 " rows (%d padding) equal the cache entries / zeros, %d mismatched rows", rows,
           padding, bad_idx);
  free(slot);
  free(out);
  free(keys);
  kt_free(d_slot);
  kt_free(d_out);
  kt_free(d_keys);
}

static void random_rows(uint64_t *rng, int m, int32_t *req, int32_t *pos) {
  for (int i = 0; i < m; i++) {
    req[i] = (int32_t)kt_int(rng, 0, 1000);
    pos[i] = (int32_t)kt_int(rng, 0, 300000);
  }
}

static void check_mla_query(uint64_t *rng, uint64_t seed, uint32_t layer, int m, int head0, int heads) {
  int32_t *req = kt_host((size_t)m * sizeof *req), *pos = kt_host((size_t)m * sizeof *pos);
  random_rows(rng, m, req, pos);
  size_t count = (size_t)m * heads * CPLAB_MLA_ROW_DIM;
  int32_t *d_req = kt_dev_from(req, (size_t)m * sizeof *req), *d_pos = kt_dev_from(pos, (size_t)m * sizeof *pos);
  uint16_t *d_q = kt_dev(count * 2), *q = kt_host(count * 2);
  kt_ok(cplab_gen_mla_query(&(cplab_gen_mla_query_params){.seed = seed, .layer = layer, .req = d_req, .pos = d_pos,
                                                          .m = m, .head0 = head0, .heads_local = heads, .q = d_q},
                            NULL, kt_diag()), "cplab_gen_mla_query");
  kt_sync();
  kt_down(q, d_q, count * 2);
  size_t bad = 0;
  for (int i = 0; i < m; i++)
    for (int h = 0; h < heads; h++) {
      uint16_t want[CPLAB_MLA_ROW_DIM];
      cplab_kvformat_mla_query(seed, layer, (uint32_t)req[i], (uint32_t)pos[i], (uint32_t)(head0 + h), want);
      const uint16_t *got = q + ((size_t)i * heads + h) * CPLAB_MLA_ROW_DIM;
      for (int c = 0; c < CPLAB_MLA_ROW_DIM; c++) bad += got[c] != want[c];
    }
  kt_check(bad == 0, "gen_mla_query: %d tokens x heads %d..%d x 576: %zu bf16 values bit-exact, %zu mismatches", m,
           head0, head0 + heads - 1, count, bad);
  free(req);
  free(pos);
  free(q);
  kt_free(d_req);
  kt_free(d_pos);
  kt_free(d_q);
}

static void check_indexer_query(uint64_t *rng, uint64_t seed, uint32_t layer, int m, int heads) {
  int32_t *req = kt_host((size_t)m * sizeof *req), *pos = kt_host((size_t)m * sizeof *pos);
  random_rows(rng, m, req, pos);
  size_t nq = (size_t)m * heads * CPLAB_IDX_DIM, nh = (size_t)m * heads;
  int32_t *d_req = kt_dev_from(req, (size_t)m * sizeof *req), *d_pos = kt_dev_from(pos, (size_t)m * sizeof *pos);
  uint8_t *d_q = kt_dev(nq), *q = kt_host(nq);
  float *d_s = kt_dev(nh * 4), *d_w = kt_dev(nh * 4), *s = kt_host(nh * 4), *w = kt_host(nh * 4);
  kt_ok(cplab_gen_indexer_query(
      &(cplab_gen_indexer_query_params){.seed = seed, .layer = layer, .req = d_req, .pos = d_pos, .m = m,
                                        .heads = heads, .q = d_q, .scale = d_s, .weight = d_w}, NULL, kt_diag()),
        "cplab_gen_indexer_query");
  kt_sync();
  kt_down(q, d_q, nq);
  kt_down(s, d_s, nh * 4);
  kt_down(w, d_w, nh * 4);
  size_t bad_q = 0, bad_s = 0;
  double max_rel = 0;
  sim_indexer_query *ref = kt_host(sizeof *ref);
  for (int i = 0; i < m; i++) {
    kt_ok(sim_indexer_query_make(seed, layer, (uint32_t)req[i], (uint32_t)pos[i], heads, ref, kt_diag()),
          "sim_indexer_query_make");
    for (int h = 0; h < heads; h++) {
      size_t g = (size_t)i * heads + h;
      bad_q += memcmp(ref->q[h], q + g * CPLAB_IDX_DIM, CPLAB_IDX_DIM) != 0;
      bad_s += memcmp(&ref->scale[h], &s[g], sizeof(float)) != 0;
      double rel = fabs((double)w[g] - ref->weight[h]) / ref->weight[h];
      max_rel = cplab_stats_worst(max_rel, rel);
    }
  }
  kt_check(bad_q == 0 && bad_s == 0 && max_rel <= 1e-6,
           "gen_indexer_query: %d tokens x %d heads: e4m3 bytes exact (%zu bad heads), scales exact (%zu bad), "
           "weights max rel error %.3g (<= 1e-6)",
           m, heads, bad_q, bad_s, max_rel);
  free(ref);
  free(req);
  free(pos);
  free(q);
  free(s);
  free(w);
  kt_free(d_req);
  kt_free(d_pos);
  kt_free(d_q);
  kt_free(d_s);
  kt_free(d_w);
}

static void check_poison(void) {
  const size_t n = 4096, off = 3, count = 1001;
  uint16_t *d_buf = kt_dev(n * 2), *buf = kt_host(n * 2);
  kt_ok(cplab_poison_bytes(d_buf, n * 2, 0x11, NULL, kt_diag()), "cplab_poison_bytes");
  kt_ok(cplab_poison_bf16(d_buf + off, count, NULL, kt_diag()), "cplab_poison_bf16");
  kt_sync();
  kt_down(buf, d_buf, n * 2);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += buf[i] != (i >= off && i < off + count ? CPLAB_BF16_POISON : 0x1111u);
  kt_check(bad == 0, "poison: %zu bf16 set to 0x7FC0 inside a byte-filled buffer of %zu, %zu wrong values", count, n, bad);
  free(buf);
  kt_free(d_buf);
}

static void check_gather_paths(uint64_t *rng);
static void check_gather_every_byte(void);

int main(void) {
  uint64_t rng;
  kt_begin("test_gpu_gen", &rng);
  static const struct {
    uint64_t seed;
    uint32_t layer;
  } runs[] = {{1, 0}, {UINT64_C(0xFEDCBA9876543210), 77}};
  for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
    tokens t;
    caches c = {.num_slots = 900};
    make_tokens(&rng, 700, c.num_slots, &t);
    c.kv = kt_host((size_t)c.num_slots * CPLAB_MLA_ENTRY_BYTES);
    c.idx = kt_host((size_t)c.num_slots * CPLAB_IDX_ENTRY_BYTES);
    c.d_kv = kt_dev((size_t)c.num_slots * CPLAB_MLA_ENTRY_BYTES);
    c.d_idx = kt_dev((size_t)c.num_slots * CPLAB_IDX_ENTRY_BYTES);
    check_gen_cache(runs[r].seed, runs[r].layer, &t, &c);
    check_gathers(&rng, &t, &c);
    check_mla_query(&rng, runs[r].seed, runs[r].layer, 50, 8, 16);
    check_mla_query(&rng, runs[r].seed, runs[r].layer, 4, 0, 64);
    check_indexer_query(&rng, runs[r].seed, runs[r].layer, 40, 64);
    check_indexer_query(&rng, runs[r].seed, runs[r].layer, 40, 32);
    free_tokens(&t);
    free(c.kv);
    free(c.idx);
    kt_free(c.d_kv);
    kt_free(c.d_idx);
  }
  check_poison();
  check_gather_paths(&rng);
  check_gather_every_byte();
  return kt_end();
}

/* ---- gather_mla: both kernel paths -------------------------------------------- */

#define GP_BLOCKS 24 /* 64-token blocks of the cache */
#define GP_SLOTS (GP_BLOCKS * 64)
#define GP_GUARD 64 /* bytes before and after the output rows, filled with POISON_BYTE */

typedef struct gather_tally {
  long calls, rows, padding, bad_rows;
  size_t guard;
} gather_tally;

/* rows rows gathered from d_cache (the cache whose host copy is cache: MLA
 * entries, or indexer entries when idx) into rows out_off bytes after a
 * 256-byte aligned address, against the host's dequantisation (MLA) or the
 * entry's bytes (indexer). Runs of consecutive tokens start at a random
 * token, on a multiple of 4 tokens every other call (cplab_gather_idx's
 * 16-byte groups of four entries), with padding slots between. */
static void gather_paths_call(uint64_t *rng, const uint8_t *cache, const uint8_t *d_cache, int idx,
                              const int64_t *token_slot, int64_t rows, int out_off, gather_tally *t) {
  static const int64_t pad[] = {-1, -2, GP_SLOTS, GP_SLOTS + 5, INT64_MIN, INT64_MAX};
  const size_t row_bytes = idx ? CPLAB_IDX_ENTRY_BYTES : CPLAB_MLA_ROW_DIM * 2, out_bytes = (size_t)rows * row_bytes;
  const size_t buf_bytes = GP_GUARD + (size_t)out_off + out_bytes + GP_GUARD;
  int64_t *slot = kt_host((size_t)rows * sizeof *slot), first = kt_int(rng, 0, GP_SLOTS - 1);
  if (t->calls % 2 == 0) first -= first % 4;
  for (int64_t r = 0; r < rows; r++)
    slot[r] = kt_int(rng, 0, 11) ? token_slot[(first + r) % GP_SLOTS] : pad[kt_int(rng, 0, 5)];
  int64_t *d_slot = kt_dev_from(slot, (size_t)rows * sizeof *slot);
  uint8_t *d_buf = kt_dev(buf_bytes), *buf = kt_host(buf_bytes);
  kt_ok(cplab_poison_bytes(d_buf, buf_bytes, POISON_BYTE, NULL, kt_diag()), "cplab_poison_bytes");
  uint8_t *d_out = d_buf + GP_GUARD + out_off;
  if (idx)
    kt_ok(cplab_gather_idx(&(cplab_gather_idx_params){.idx_cache = d_cache, .num_slots = GP_SLOTS, .slot = d_slot,
                                                      .rows = rows, .out = d_out},
                           NULL, kt_diag()), "cplab_gather_idx");
  else
    kt_ok(cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = d_cache, .num_slots = GP_SLOTS, .slot = d_slot,
                                                      .rows = rows, .out = (uint16_t *)(void *)d_out}, NULL, kt_diag()),
          "cplab_gather_mla");
  kt_sync();
  kt_down(buf, d_buf, buf_bytes);
  const uint8_t *out = buf + GP_GUARD + out_off;
  for (int64_t r = 0; r < rows; r++) {
    uint16_t want[CPLAB_MLA_ROW_DIM];
    uint8_t *want_bytes = (uint8_t *)want;
    if (slot[r] < 0 || slot[r] >= GP_SLOTS) {
      t->padding++;
      if (idx) memset(want_bytes, 0, row_bytes);
      else
        for (int i = 0; i < CPLAB_MLA_ROW_DIM; i++) want[i] = CPLAB_BF16_POISON;
    } else if (idx) {
      memcpy(want_bytes, cache + slot[r] * CPLAB_IDX_ENTRY_BYTES, row_bytes);
    } else {
      cplab_kvformat_mla_dequantize(cache + slot[r] * CPLAB_MLA_ENTRY_BYTES, want);
    }
    if (memcmp(want_bytes, out + (size_t)r * row_bytes, row_bytes) && t->bad_rows++ == 0)
      printf("# gather_%s: %" PRId64 " rows, rows at +%d bytes: row %" PRId64 " (slot %" PRId64 ") differs\n",
             idx ? "idx" : "mla", rows, out_off, r, slot[r]);
  }
  for (size_t b = 0; b < buf_bytes; b++)
    if (b < GP_GUARD + (size_t)out_off || b >= GP_GUARD + (size_t)out_off + out_bytes) t->guard += buf[b] != POISON_BYTE;
  t->calls++;
  t->rows += rows;
  free(slot);
  free(buf);
  kt_free(d_slot);
  kt_free(d_buf);
}

/* One cache (MLA entries, or indexer entries when idx) at +0, +4 and +8
 * bytes, gathered into rows at +0 and +out_alt bytes: the kernels' 16-byte
 * paths where both are 16-byte aligned, the general ones elsewhere. */
static void check_gather_paths_of(uint64_t *rng, int idx, const int64_t *token_slot, int32_t *d_req, int32_t *d_pos,
                                  int64_t *d_tslot) {
  const size_t entry = idx ? CPLAB_IDX_ENTRY_BYTES : CPLAB_MLA_ENTRY_BYTES, bytes = (size_t)GP_SLOTS * entry;
  uint8_t *d_cache = kt_dev(bytes + 16), *cache = kt_host(bytes);
  kt_ok(cplab_gen_cache(&(cplab_gen_cache_params){.seed = 5, .layer = 3, .req = d_req, .pos = d_pos, .slot = d_tslot,
                                                  .n = GP_SLOTS, .kv_cache = idx ? NULL : d_cache,
                                                  .idx_cache = idx ? d_cache : NULL, .num_slots = GP_SLOTS},
                        NULL, kt_diag()),
        "cplab_gen_cache");
  kt_sync();
  kt_down(cache, d_cache, bytes);
  /* The same cache at +4 and +8 bytes (4- and 8-byte aligned, not 16). */
  uint8_t *d_c4 = kt_dev(bytes + 16), *d_c8 = kt_dev(bytes + 16);
  kt_ok(cplab_dev_upload(d_c4 + 4, cache, bytes, kt_diag()), "cplab_dev_upload");
  kt_ok(cplab_dev_upload(d_c8 + 8, cache, bytes, kt_diag()), "cplab_dev_upload");
  static const int64_t all_rows[] = {1, 3, 4, 5, 31, 32, 33, 127, 129, 255, 257, 1000, GP_SLOTS},
                       some_rows[] = {5, 33, 300, 1000};
  const int out_alt = idx ? 4 : 8; /* the output alignment each contract allows */
  for (int kv_off = 0; kv_off <= 8; kv_off += 4)
    for (int out_off = 0; out_off <= out_alt; out_off += out_alt) {
      const uint8_t *dk = kv_off == 0 ? d_cache : kv_off == 4 ? d_c4 + 4 : d_c8 + 8;
      int fast = kv_off % 16 == 0 && out_off % 16 == 0;
      gather_tally t = {0};
      const int64_t *rows = fast ? all_rows : some_rows;
      size_t n = fast ? sizeof all_rows / sizeof all_rows[0] : sizeof some_rows / sizeof some_rows[0];
      for (size_t i = 0; i < n; i++) gather_paths_call(rng, cache, dk, idx, token_slot, rows[i], out_off, &t);
      kt_check(t.bad_rows == 0 && t.guard == 0 && t.padding > 0,
               "gather_%s paths: cache at +%d bytes, rows at +%d bytes (%s): %ld calls, %ld rows (%ld padding) equal "
               "%s, %ld mismatched rows, %zu bytes written outside the rows",
               idx ? "idx" : "mla", kv_off, out_off, fast ? "16-byte path" : "general path", t.calls, t.rows,
               t.padding, idx ? "the cache entries / zeros" : "cplab_kvformat_mla_dequantize / 0x7FC0", t.bad_rows,
               t.guard);
    }
  free(cache);
  kt_free(d_cache);
  kt_free(d_c4);
  kt_free(d_c8);
}

static void check_gather_paths(uint64_t *rng) {
  /* Token i (request 11, position i) at slot perm[i / 64] · 64 + i mod 64. */
  int32_t *req = kt_host(GP_SLOTS * sizeof *req), *pos = kt_host(GP_SLOTS * sizeof *pos), perm[GP_BLOCKS];
  int64_t *token_slot = kt_host(GP_SLOTS * sizeof *token_slot);
  for (int b = 0; b < GP_BLOCKS; b++) perm[b] = b;
  for (int b = GP_BLOCKS - 1; b > 0; b--) {
    int j = (int)kt_int(rng, 0, b), x = perm[b];
    perm[b] = perm[j];
    perm[j] = x;
  }
  for (int i = 0; i < GP_SLOTS; i++) {
    req[i] = 11;
    pos[i] = i;
    token_slot[i] = (int64_t)perm[i / 64] * 64 + i % 64;
  }
  int32_t *d_req = kt_dev_from(req, GP_SLOTS * sizeof *req), *d_pos = kt_dev_from(pos, GP_SLOTS * sizeof *pos);
  int64_t *d_tslot = kt_dev_from(token_slot, GP_SLOTS * sizeof *token_slot);
  check_gather_paths_of(rng, 0, token_slot, d_req, d_pos, d_tslot);
  check_gather_paths_of(rng, 1, token_slot, d_req, d_pos, d_tslot);
  free(req);
  free(pos);
  free(token_slot);
  kt_free(d_req);
  kt_free(d_pos);
  kt_free(d_tslot);
}

/* ---- gather_mla: every byte under every scale -------------------------------- */

/* Tile pair p of the crafted cache: latent bytes 0..127 in its first tile and
 * 128..255 in its second, both under scale scales[p]. */
static void check_gather_every_byte(void) {
  float scales[200];
  int n = 0;
  for (int k = -125; k <= 20; k++) scales[n++] = ldexpf(1.0f, k);
  static const float odd[] = {0.75f, 3.0f, 1.0f / 3.0f, -2.0f, -0.5f, 0.0f, -0.0f, 1e-40f, 1e30f, INFINITY};
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) scales[n++] = odd[i];
  scales[n++] = nanf("");
  const int tiles = 2 * n, entries = (tiles + CPLAB_MLA_TILES - 1) / CPLAB_MLA_TILES;
  uint8_t *kv = kt_host((size_t)entries * CPLAB_MLA_ENTRY_BYTES);
  int64_t *slot = kt_host((size_t)entries * sizeof *slot);
  for (int e = 0; e < entries; e++) {
    uint8_t *entry = kv + (size_t)e * CPLAB_MLA_ENTRY_BYTES;
    for (int t = 0; t < CPLAB_MLA_TILES; t++) {
      int g = e * CPLAB_MLA_TILES + t, pair = g / 2 < n ? g / 2 : n - 1;
      for (int i = 0; i < CPLAB_KV_TILE; i++) entry[CPLAB_MLA_NOPE_OFFSET + t * CPLAB_KV_TILE + i] = (uint8_t)(128 * (g % 2) + i);
      memcpy(entry + CPLAB_MLA_SCALE_OFFSET + 4 * t, &scales[pair], 4);
    }
    for (int j = 0; j < 2 * CPLAB_MLA_ROPE_DIM; j++) entry[CPLAB_MLA_ROPE_OFFSET + j] = (uint8_t)(e + 7 * j);
    slot[e] = e;
  }
  uint8_t *d_kv = kt_dev_from(kv, (size_t)entries * CPLAB_MLA_ENTRY_BYTES);
  int64_t *d_slot = kt_dev_from(slot, (size_t)entries * sizeof *slot);
  const size_t row_bytes = CPLAB_MLA_ROW_DIM * 2;
  uint16_t *d_out = kt_dev((size_t)entries * row_bytes), *out = kt_host((size_t)entries * row_bytes);
  kt_ok(cplab_gather_mla(&(cplab_gather_mla_params){.kv_cache = d_kv, .num_slots = entries, .slot = d_slot,
                                                    .rows = entries, .out = d_out},
                         NULL, kt_diag()), "cplab_gather_mla");
  kt_sync();
  kt_down(out, d_out, (size_t)entries * row_bytes);
  long bad = 0;
  for (int e = 0; e < entries; e++) {
    uint16_t want[CPLAB_MLA_ROW_DIM];
    cplab_kvformat_mla_dequantize(kv + (size_t)e * CPLAB_MLA_ENTRY_BYTES, want);
    for (int i = 0; i < CPLAB_MLA_ROW_DIM; i++)
      if (want[i] != out[(size_t)e * CPLAB_MLA_ROW_DIM + i] && bad++ < 3)
        printf("# gather_mla of crafted entry %d, column %d (byte 0x%02x): 0x%04x, want 0x%04x\n", e, i,
               i < CPLAB_MLA_NOPE_DIM ? kv[(size_t)e * CPLAB_MLA_ENTRY_BYTES + i] : 0,
               out[(size_t)e * CPLAB_MLA_ROW_DIM + i], want[i]);
  }
  kt_check(bad == 0,
           "gather_mla: all 256 e4m3 bytes under %d scales (2^-125 .. 2^20 and 11 others), %d entries equal "
           "cplab_kvformat_mla_dequantize, %ld values differ",
           n, entries, bad);
  free(kv), free(slot), free(out);
  kt_free(d_kv), kt_free(d_slot), kt_free(d_out);
}
