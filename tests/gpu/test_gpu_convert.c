/* GPU test: top-k conversion against the vLLM layout's C functions
 * (cplab_layout_vllm_convert_prefill / _decode), exactly, over random plans:
 * dcp 1..8, interleave dividing the block size, several regions per chunk and
 * several chunks, tokens in and out of range (negative, -1, past the extent,
 * past the block table), remote owners. The optional extent guard of the
 * prefill launcher is checked against the same function bounded by hand.
 * Then both paths of the kernels (int4 words when k % 4 == 0 and both lists
 * are 16-byte aligned, single entries otherwise: misaligned lists, k not a
 * multiple of 4) over fixed shapes: k = 2048 as production runs it, tiny k
 * (rows of 1..3 int4's, so several rows per warp), row counts that leave the
 * grid's last block partial, tokens over the whole int32 range (near
 * INT32_MAX, INT32_MIN), interleave and dcp that are not powers of two (up
 * to 100003), block sizes 1..1000, block-table entries and workspace
 * offsets whose products wrap the int32 result, rows of invalid regions /
 * requests (-1, num, INT32_MIN, INT32_MAX), extents at the int32 limits;
 * against the same C functions (extent guard and invalid rows by hand), and
 * nothing written outside the output (guard words keep their fill). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/kv.h"
#include "cplab/layout.h"
#include "cplab/plan.h"
#include "kt.h"

#define TRIALS 60

typedef struct layout_case {
  cplab_layout_env env;
  int D, I, B;
} layout_case;

static void random_layout(uint64_t *rng, layout_case *lc) {
  static const int dcps[] = {1, 2, 3, 4, 8}, blocks[] = {16, 64};
  memset(lc, 0, sizeof *lc);
  lc->D = dcps[kt_int(rng, 0, 4)];
  lc->B = blocks[kt_int(rng, 0, 1)];
  do lc->I = 1 << kt_int(rng, 0, 6);
  while (lc->B % lc->I); /* B mod I == 0 */
  lc->env.par.dcp = lc->D;
  lc->env.par.interleave = lc->I;
  lc->env.par.block_size = lc->B;
}

/* A prefill plan of K regions packed into chunks of random sizes, with the
 * layout's rows_per_rank (rank 0's local length) and rebased starts. */
typedef struct plan_case {
  cplab_prefill_plan plan;
  int64_t extent[8], ws_start[8], rows_per_rank[8], shard_rows_of_region[8];
  int32_t region_chunk[8];
  cplab_prefill_chunk chunks[8];
} plan_case;

static void random_plan(uint64_t *rng, const layout_case *lc, plan_case *pc) {
  memset(pc, 0, sizeof *pc);
  int K = (int)kt_int(rng, 1, 8), chunk = 0;
  int64_t start = 0;
  for (int r = 0; r < K; r++) {
    if (r > 0 && kt_int(rng, 0, 2) == 0) { /* close the chunk */
      chunk++;
      start = 0;
    }
    pc->extent[r] = kt_int(rng, 1, 3000);
    pc->rows_per_rank[r] = cplab_kv_local_len(pc->extent[r], 0, lc->I, lc->D);
    pc->ws_start[r] = start;
    pc->region_chunk[r] = chunk;
    start += pc->rows_per_rank[r];
    pc->chunks[chunk].shard_rows = start;
  }
  for (int r = 0; r < K; r++) pc->shard_rows_of_region[r] = pc->chunks[pc->region_chunk[r]].shard_rows;
  pc->plan.active = 1;
  pc->plan.W = lc->D;
  pc->plan.num_regions = K;
  pc->plan.extent = pc->extent;
  pc->plan.rows_per_rank = pc->rows_per_rank;
  pc->plan.workspace_start = pc->ws_start;
  pc->plan.region_chunk = pc->region_chunk;
  pc->plan.num_chunks = chunk + 1;
  pc->plan.chunks = pc->chunks;
}

/* Request-relative tokens: mostly in [0, limit), some -1, some other
 * negatives, some past limit. */
static int32_t random_token(uint64_t *rng, int64_t limit) {
  int64_t u = kt_int(rng, 0, 99);
  if (u < 8) return -1;
  if (u < 10) return (int32_t)kt_int(rng, -5, -2);
  if (u < 18) return (int32_t)kt_int(rng, limit, limit + 200);
  return (int32_t)kt_int(rng, 0, limit - 1);
}

typedef struct tally {
  long entries, bad, minus1, out_of_range;
} tally;

static void prefill_trial(uint64_t *rng, tally *plain, tally *guarded) {
  layout_case lc;
  plan_case pc;
  random_layout(rng, &lc);
  random_plan(rng, &lc, &pc);
  int m = (int)kt_int(rng, 1, 24), k = (int)kt_int(rng, 1, 300), K = pc.plan.num_regions;
  int32_t *region = kt_host((size_t)m * sizeof *region), *topk = kt_host((size_t)m * k * sizeof *topk);
  int32_t *out = kt_host((size_t)m * k * sizeof *out);
  for (int i = 0; i < m; i++) {
    region[i] = (int32_t)kt_int(rng, 0, K - 1);
    for (int j = 0; j < k; j++) topk[(size_t)i * k + j] = random_token(rng, pc.extent[region[i]]);
  }
  int32_t *d_region = kt_dev_from(region, (size_t)m * sizeof *region);
  int32_t *d_topk = kt_dev_from(topk, (size_t)m * k * sizeof *topk), *d_out = kt_dev((size_t)m * k * sizeof *out);
  int64_t *d_ws = kt_dev_from(pc.ws_start, (size_t)K * 8), *d_sr = kt_dev_from(pc.shard_rows_of_region, (size_t)K * 8);
  int64_t *d_ext = kt_dev_from(pc.extent, (size_t)K * 8);
  for (int pass = 0; pass < 2; pass++) {
    tally *t = pass ? guarded : plain;
    kt_ok(cplab_convert_prefill_topk(
        &(cplab_convert_prefill_topk_params){.topk = d_topk, .m = m, .k = k, .row_region = d_region, .ws_start = d_ws,
                                             .shard_rows = d_sr, .extent = pass ? d_ext : NULL, .num_regions = K,
                                             .dcp = lc.D, .interleave = lc.I, .out = d_out}, NULL, kt_diag()),
          "cplab_convert_prefill_topk");
    kt_sync();
    kt_down(out, d_out, (size_t)m * k * sizeof *out);
    for (int i = 0; i < m; i++)
      for (int j = 0; j < k; j++) {
        int32_t tok = topk[(size_t)i * k + j], got = out[(size_t)i * k + j];
        int32_t want = cplab_layout_vllm_convert_prefill(&lc.env, &pc.plan, region[i], tok, 0);
        int past = tok >= pc.extent[region[i]];
        if (pass && past) want = -1;
        t->entries++;
        t->minus1 += want == -1;
        t->out_of_range += past;
        if (got != want && t->bad++ == 0)
          printf("# prefill%s: D %d I %d region %d token %" PRId32 ": got %" PRId32 ", want %" PRId32 "\n",
                 pass ? " (extent guard)" : "", lc.D, lc.I, region[i], tok, got, want);
      }
  }
  free(region);
  free(topk);
  free(out);
  kt_free(d_region);
  kt_free(d_topk);
  kt_free(d_out);
  kt_free(d_ws);
  kt_free(d_sr);
  kt_free(d_ext);
}

static void decode_trial(uint64_t *rng, tally *t) {
  layout_case lc;
  random_layout(rng, &lc);
  int R = (int)kt_int(rng, 1, 6), max_blocks = (int)kt_int(rng, 1, 20), rank = (int)kt_int(rng, 0, lc.D - 1);
  int m = (int)kt_int(rng, 1, 24), k = (int)kt_int(rng, 1, 300);
  int64_t span = (int64_t)max_blocks * lc.B * lc.D; /* tokens the table covers */
  int32_t *table = kt_host((size_t)R * max_blocks * sizeof *table), *row_req = kt_host((size_t)m * sizeof *row_req);
  int32_t *topk = kt_host((size_t)m * k * sizeof *topk), *out = kt_host((size_t)m * k * sizeof *out);
  for (int i = 0; i < R * max_blocks; i++) table[i] = (int32_t)kt_int(rng, 0, 5000);
  for (int i = 0; i < m; i++) {
    row_req[i] = (int32_t)kt_int(rng, 0, R - 1);
    for (int j = 0; j < k; j++) topk[(size_t)i * k + j] = random_token(rng, span);
  }
  int32_t *d_table = kt_dev_from(table, (size_t)R * max_blocks * sizeof *table);
  int32_t *d_req = kt_dev_from(row_req, (size_t)m * sizeof *row_req);
  int32_t *d_topk = kt_dev_from(topk, (size_t)m * k * sizeof *topk), *d_out = kt_dev((size_t)m * k * sizeof *out);
  kt_ok(cplab_convert_decode_topk(
      &(cplab_convert_decode_topk_params){.topk = d_topk, .m = m, .k = k, .row_req = d_req, .block_table = d_table,
                                          .num_req = R, .max_blocks = max_blocks, .block_size = lc.B, .dcp = lc.D,
                                          .dcp_rank = rank, .interleave = lc.I, .out = d_out}, NULL, kt_diag()),
        "cplab_convert_decode_topk");
  kt_sync();
  kt_down(out, d_out, (size_t)m * k * sizeof *out);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < k; j++) {
      int32_t tok = topk[(size_t)i * k + j], got = out[(size_t)i * k + j];
      int32_t want = cplab_layout_vllm_convert_decode(&lc.env, table + (size_t)row_req[i] * max_blocks, max_blocks,
                                                      tok, rank);
      t->entries++;
      t->minus1 += want == -1;
      t->out_of_range += tok >= span;
      if (got != want && t->bad++ == 0)
        printf("# decode: D %d rank %d I %d B %d token %" PRId32 ": got %" PRId32 ", want %" PRId32 "\n", lc.D, rank,
               lc.I, lc.B, tok, got, want);
    }
  free(table);
  free(row_req);
  free(topk);
  free(out);
  kt_free(d_table);
  kt_free(d_req);
  kt_free(d_topk);
  kt_free(d_out);
}

/* ---- both kernel paths over fixed shapes ---------------------------------- */

typedef struct vec_case {
  int64_t m;
  int k, topk_off, out_off, D, I; /* offsets in int32 from a 256-byte aligned address */
} vec_case;

static const vec_case vec_cases[] = {
    {37, 2048, 0, 0, 4, 1},      {5, 2048, 0, 0, 8, 1},        {2, 2048, 0, 0, 2, 1}, /* one full block */
    {9, 12, 0, 0, 3, 5},         {3, 4, 0, 0, 7, 3},           {257, 8, 0, 0, 1, 1},
    {40, 1028, 0, 0, 2, 64},     {3, 2048, 0, 0, 65537, 100003}, {6, 256, 4, 4, 8, 2}, /* 16-byte, not 256 */
    {11, 2048, 1, 0, 4, 1},      {11, 2048, 0, 2, 4, 1},       {6, 256, 3, 3, 8, 2}, /* misaligned */
    {13, 2047, 0, 0, 3, 1},      {300, 3, 0, 0, 2, 1},         {1, 1, 0, 0, 1, 1},
    {4, 2050, 0, 0, 5, 7},
};

#define GUARD_WORDS 16 /* before and after the output list, filled with 0x7F7F7F7F */

/* Tokens over the whole int32 range: -1, other negatives down to INT32_MIN,
 * values near INT32_MAX, any non-negative value, and mostly [0, limit). */
static int32_t wide_token(uint64_t *rng, int64_t limit) {
  int64_t u = kt_int(rng, 0, 99);
  if (u < 6) return -1;
  if (u < 8) return INT32_MIN;
  if (u < 10) return (int32_t)kt_int(rng, INT32_MIN, -2);
  if (u < 14) return INT32_MAX - (int32_t)kt_int(rng, 0, 3);
  if (u < 30) return (int32_t)kt_int(rng, 0, INT32_MAX);
  return (int32_t)kt_int(rng, 0, limit - 1);
}

static int32_t invalid_row(uint64_t *rng, int32_t num) {
  static const int32_t bad[] = {-1, INT32_MIN, INT32_MAX};
  return kt_int(rng, 0, 3) == 0 ? num : bad[kt_int(rng, 0, 2)];
}

/* topk uploaded at its offset; out poisoned with guard words around it. */
typedef struct vec_lists {
  size_t n;
  int32_t *d_topk_buf, *d_out_buf, *d_topk, *d_out, *got;
} vec_lists;

static void vec_lists_make(const vec_case *c, const int32_t *topk, vec_lists *v) {
  v->n = (size_t)c->m * c->k;
  size_t out_words = GUARD_WORDS + (size_t)c->out_off + v->n + GUARD_WORDS;
  v->d_topk_buf = kt_dev((v->n + (size_t)c->topk_off) * 4);
  v->d_out_buf = kt_dev(out_words * 4);
  v->d_topk = v->d_topk_buf + c->topk_off;
  v->d_out = v->d_out_buf + GUARD_WORDS + c->out_off;
  v->got = kt_host(out_words * 4);
  kt_ok(cplab_dev_upload(v->d_topk, topk, v->n * 4, kt_diag()), "cplab_dev_upload");
}

/* Download; the count of guard words that changed. */
static long vec_lists_fetch(const vec_case *c, vec_lists *v) {
  size_t out_words = GUARD_WORDS + (size_t)c->out_off + v->n + GUARD_WORDS, first = GUARD_WORDS + (size_t)c->out_off;
  kt_sync();
  kt_down(v->got, v->d_out_buf, out_words * 4);
  long changed = 0;
  for (size_t i = 0; i < out_words; i++)
    if (i < first || i >= first + v->n) changed += v->got[i] != 0x7F7F7F7F;
  return changed;
}

static void vec_lists_poison(const vec_case *c, vec_lists *v) {
  size_t out_words = GUARD_WORDS + (size_t)c->out_off + v->n + GUARD_WORDS;
  kt_ok(cplab_poison_bytes(v->d_out_buf, out_words * 4, 0x7F, NULL, kt_diag()), "cplab_poison_bytes");
}

static void vec_lists_free(vec_lists *v) {
  kt_free(v->d_topk_buf);
  kt_free(v->d_out_buf);
  free(v->got);
}

static int vec_fast(const vec_case *c) { return c->k % 4 == 0 && c->topk_off % 4 == 0 && c->out_off % 4 == 0; }

typedef struct vec_tally {
  long cases, fast, entries, valid, bad, guard;
} vec_tally;

static void vec_prefill(uint64_t *rng, const vec_case *c, vec_tally *t) {
  enum { K = 4 };
  static const int64_t extents[] = {INT64_MAX, INT64_C(1) << 31, INT32_MAX, 0, -5};
  int64_t extent[K], ws_start[K], shard_rows[K];
  int32_t region_chunk[K];
  cplab_prefill_chunk chunks[K];
  cplab_prefill_plan plan;
  cplab_layout_env env;
  memset(&plan, 0, sizeof plan);
  memset(&env, 0, sizeof env);
  memset(chunks, 0, sizeof chunks);
  for (int r = 0; r < K; r++) {
    int64_t u = kt_int(rng, 0, 9);
    extent[r] = u < 5 ? extents[u] : kt_int(rng, 1, INT32_MAX);
    ws_start[r] = kt_int(rng, 0, 1) ? kt_int(rng, 0, 5000) : kt_int(rng, 0, INT64_C(1) << 40);
    chunks[r].shard_rows = shard_rows[r] = kt_int(rng, 0, 1) ? kt_int(rng, 0, 5000) : kt_int(rng, 0, INT64_C(1) << 40);
    region_chunk[r] = r;
  }
  plan.active = 1;
  plan.W = c->D;
  plan.num_regions = K;
  plan.extent = extent;
  plan.workspace_start = ws_start;
  plan.region_chunk = region_chunk;
  plan.num_chunks = K;
  plan.chunks = chunks;
  env.par.dcp = c->D;
  env.par.interleave = c->I;
  int32_t *region = kt_host((size_t)c->m * 4), *topk = kt_host((size_t)c->m * c->k * 4);
  for (int64_t i = 0; i < c->m; i++) {
    region[i] = kt_int(rng, 0, 7) ? (int32_t)kt_int(rng, 0, K - 1) : invalid_row(rng, K);
    for (int j = 0; j < c->k; j++) topk[i * c->k + j] = wide_token(rng, 100000);
  }
  vec_lists v;
  vec_lists_make(c, topk, &v);
  int32_t *d_region = kt_dev_from(region, (size_t)c->m * 4);
  int64_t *d_ws = kt_dev_from(ws_start, sizeof ws_start), *d_sr = kt_dev_from(shard_rows, sizeof shard_rows);
  int64_t *d_ext = kt_dev_from(extent, sizeof extent);
  for (int pass = 0; pass < 2; pass++) {
    vec_lists_poison(c, &v);
    kt_ok(cplab_convert_prefill_topk(
        &(cplab_convert_prefill_topk_params){.topk = v.d_topk, .m = c->m, .k = c->k, .row_region = d_region,
                                             .ws_start = d_ws, .shard_rows = d_sr, .extent = pass ? d_ext : NULL,
                                             .num_regions = K, .dcp = c->D, .interleave = c->I, .out = v.d_out},
        NULL, kt_diag()),
          "cplab_convert_prefill_topk");
    t->guard += vec_lists_fetch(c, &v);
    const int32_t *got = v.got + GUARD_WORDS + c->out_off;
    for (int64_t i = 0; i < c->m; i++)
      for (int j = 0; j < c->k; j++) {
        int32_t tok = topk[i * c->k + j], r = region[i], want = -1;
        if (r >= 0 && r < K && !(pass && tok >= extent[r]))
          want = cplab_layout_vllm_convert_prefill(&env, &plan, r, tok, 0);
        t->entries++;
        t->valid += want != -1;
        if (got[i * c->k + j] != want && t->bad++ == 0)
          printf("# prefill m %lld k %d offsets %d/%d D %d I %d%s: row %lld (region %d) token %" PRId32
                 ": got %" PRId32 ", want %" PRId32 "\n",
                 (long long)c->m, c->k, c->topk_off, c->out_off, c->D, c->I, pass ? " (extent guard)" : "",
                 (long long)i, r, tok, got[i * c->k + j], want);
      }
  }
  t->cases++;
  t->fast += vec_fast(c);
  vec_lists_free(&v);
  kt_free(d_region);
  kt_free(d_ws);
  kt_free(d_sr);
  kt_free(d_ext);
  free(region);
  free(topk);
}

static void vec_decode(uint64_t *rng, const vec_case *c, vec_tally *t) {
  static const int blocks[] = {1, 3, 16, 48, 64, 1000}, tables[] = {0, 1, 5, 40};
  int R = 3, B = blocks[kt_int(rng, 0, 5)], max_blocks = tables[kt_int(rng, 0, 3)];
  int rank = (int)kt_int(rng, 0, c->D - 1);
  cplab_layout_env env;
  memset(&env, 0, sizeof env);
  env.par.dcp = c->D;
  env.par.interleave = c->I;
  env.par.block_size = B;
  int32_t *table = kt_host((size_t)(R * max_blocks + 1) * 4), *row_req = kt_host((size_t)c->m * 4);
  int32_t *topk = kt_host((size_t)c->m * c->k * 4);
  for (int i = 0; i < R * max_blocks; i++)
    table[i] = kt_int(rng, 0, 1) ? (int32_t)kt_int(rng, 0, 5000) : (int32_t)kt_int(rng, INT32_MIN, INT32_MAX);
  int64_t span = (int64_t)(max_blocks + 1) * B * c->D + c->I; /* past the table, a little */
  if (span > INT32_MAX) span = INT32_MAX;
  for (int64_t i = 0; i < c->m; i++) {
    row_req[i] = kt_int(rng, 0, 7) ? (int32_t)kt_int(rng, 0, R - 1) : invalid_row(rng, R);
    for (int j = 0; j < c->k; j++) topk[i * c->k + j] = wide_token(rng, span);
  }
  vec_lists v;
  vec_lists_make(c, topk, &v);
  int32_t *d_table = max_blocks ? kt_dev_from(table, (size_t)R * max_blocks * 4) : NULL; /* NULL: an empty table */
  int32_t *d_req = kt_dev_from(row_req, (size_t)c->m * 4);
  vec_lists_poison(c, &v);
  kt_ok(cplab_convert_decode_topk(
      &(cplab_convert_decode_topk_params){.topk = v.d_topk, .m = c->m, .k = c->k, .row_req = d_req,
                                          .block_table = d_table, .num_req = R, .max_blocks = max_blocks,
                                          .block_size = B, .dcp = c->D, .dcp_rank = rank, .interleave = c->I,
                                          .out = v.d_out}, NULL, kt_diag()),
        "cplab_convert_decode_topk");
  t->guard += vec_lists_fetch(c, &v);
  const int32_t *got = v.got + GUARD_WORDS + c->out_off;
  for (int64_t i = 0; i < c->m; i++)
    for (int j = 0; j < c->k; j++) {
      int32_t tok = topk[i * c->k + j], q = row_req[i], want = -1;
      if (q >= 0 && q < R)
        want = cplab_layout_vllm_convert_decode(&env, table + (size_t)q * max_blocks, max_blocks, tok, rank);
      t->entries++;
      t->valid += want != -1;
      if (got[i * c->k + j] != want && t->bad++ == 0)
        printf("# decode m %lld k %d offsets %d/%d D %d rank %d I %d B %d blocks %d: row %lld (request %d) token "
               "%" PRId32 ": got %" PRId32 ", want %" PRId32 "\n",
               (long long)c->m, c->k, c->topk_off, c->out_off, c->D, rank, c->I, B, max_blocks, (long long)i, q, tok,
               got[i * c->k + j], want);
    }
  t->cases++;
  t->fast += vec_fast(c);
  vec_lists_free(&v);
  if (d_table) kt_free(d_table);
  kt_free(d_req);
  free(table);
  free(row_req);
  free(topk);
}

static void vec_paths(uint64_t *rng) {
  vec_tally p = {0}, dc = {0};
  for (size_t i = 0; i < sizeof vec_cases / sizeof vec_cases[0]; i++) {
    vec_prefill(rng, &vec_cases[i], &p);
    vec_decode(rng, &vec_cases[i], &dc);
  }
  kt_check(p.bad == 0 && p.guard == 0 && p.fast > 0 && p.fast < p.cases,
           "convert_prefill paths: %ld shapes (%ld int4, %ld single-entry), %ld entries with and without the extent "
           "guard (%ld valid) equal cplab_layout_vllm_convert_prefill, %ld mismatches, %ld guard words written",
           p.cases, p.fast, p.cases - p.fast, p.entries, p.valid, p.bad, p.guard);
  kt_check(dc.bad == 0 && dc.guard == 0 && dc.fast > 0 && dc.fast < dc.cases,
           "convert_decode paths: %ld shapes (%ld int4, %ld single-entry), %ld entries (%ld valid) equal "
           "cplab_layout_vllm_convert_decode, %ld mismatches, %ld guard words written",
           dc.cases, dc.fast, dc.cases - dc.fast, dc.entries, dc.valid, dc.bad, dc.guard);
}

int main(void) {
  uint64_t rng;
  kt_begin("test_gpu_convert", &rng);
  tally plain = {0}, guarded = {0}, dec = {0};
  for (int trial = 0; trial < TRIALS; trial++) {
    prefill_trial(&rng, &plain, &guarded);
    decode_trial(&rng, &dec);
  }
  kt_check(plain.bad == 0,
           "convert_prefill (vLLM rule, no extent): %d plans, %ld entries equal cplab_layout_vllm_convert_prefill "
           "(%ld -1, %ld past the extent kept valid), %ld mismatches",
           TRIALS, plain.entries, plain.minus1, plain.out_of_range, plain.bad);
  kt_check(guarded.bad == 0 && guarded.out_of_range > 0,
           "convert_prefill (extent guard): %ld entries, %ld past the extent -> -1, %ld mismatches", guarded.entries,
           guarded.out_of_range, guarded.bad);
  kt_check(dec.bad == 0, "convert_decode: %d block tables, %ld entries equal cplab_layout_vllm_convert_decode (%ld -1, "
           "%ld past the table), %ld mismatches",
           TRIALS, dec.entries, dec.minus1, dec.out_of_range, dec.bad);
  vec_paths(&rng);
  return kt_end();
}
