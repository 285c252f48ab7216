/* GPU test: top-k conversion against the vLLM layout's C functions
 * (cplab_layout_vllm_convert_prefill / _decode), exactly, over random plans:
 * dcp 1..8, interleave dividing the block size, several regions per chunk and
 * several chunks, tokens in and out of range (negative, -1, past the extent,
 * past the block table), remote owners. The optional extent guard of the
 * prefill launcher is checked against the same function bounded by hand. */
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
    kt_ok(cplab_convert_prefill_topk(d_topk, m, k, d_region, d_ws, d_sr, pass ? d_ext : NULL, K, lc.D, lc.I, d_out,
                                     NULL, kt_diag()),
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
  kt_ok(cplab_convert_decode_topk(d_topk, m, k, d_req, d_table, R, max_blocks, lc.B, lc.D, rank, lc.I, d_out, NULL,
                                  kt_diag()),
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
  return kt_end();
}
