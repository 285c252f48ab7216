/* The step's output path (rank.h): the PCP output all-gather and the restore
 * to global token order. Attention outputs exist only for the sampled rows,
 * so each local token carries a stand-in row that is a pure function of the
 * token (the first head of its generated MLA query, 576 bf16); after the
 * gather and the restore kernel, row g must be global token g's row, which
 * the executor generates directly in global order and compares bit for bit. */
#include <stdlib.h>
#include <string.h>

#include "cplab/kvformat.h"
#include "cplab_kernels.h"
#include "rank.h"

/* Device rows of the n tokens (req[i], pos[i]); tokens with req < 0 stay poison. */
static int token_rows(const cplab_step_input *in, const int32_t *req, const int32_t *pos, int64_t n, uint16_t *rows,
                      cplab_diag *d) {
  exec_arena a = {0};
  void *dreq, *dpos;
  int rc = cplab_poison_bf16(rows, (size_t)n * CPLAB_MLA_ROW_DIM, NULL, d);
  int64_t m = 0; /* the tokens before the first padding row (padding comes last) */
  while (m < n && req[m] >= 0) m++;
  if (!rc) rc = exec_arena_put(&a, &dreq, req, sizeof *req * (size_t)m, d);
  if (!rc) rc = exec_arena_put(&a, &dpos, pos, sizeof *pos * (size_t)m, d);
  if (!rc && m)
    rc = cplab_gen_mla_query(&(cplab_gen_mla_query_params){.seed = in->seed, .layer = 0, .req = dreq, .pos = dpos,
                                                           .m = m, .head0 = 0, .heads_local = 1, .q = rows}, NULL, d);
  if (!rc) rc = cplab_dev_sync(NULL, d);
  exec_arena_free(&a);
  return rc;
}

int exec_output_rows(const cplab_step_input *in, const cplab_rank_plan *rp, uint16_t *rows, cplab_diag *d) {
  int64_t padded = rp->sched.padded_num_tokens;
  int32_t *req = malloc(sizeof *req * (size_t)(padded ? padded : 1)), *pos = malloc(sizeof *pos * (size_t)(padded ? padded : 1));
  if (!req || !pos) {
    free(req), free(pos);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  }
  for (int64_t t = 0; t < padded; t++) {
    const cplab_row *row = cplab_split_row_of(&rp->split, t);
    req[t] = row ? (int32_t)in->step->requests[row->req].id : -1;
    pos[t] = row ? (int32_t)(row->start_pos + t - row->token_offset) : 0;
  }
  int rc = token_rows(in, req, pos, padded, rows, d);
  free(req), free(pos);
  return rc;
}

int exec_output_check(const cplab_step_input *in, const cplab_rank_plan *rp, const uint16_t *gathered,
                      int64_t gathered_rows, cplab_diag *d) {
  const cplab_schedule *s = &rp->sched;
  int64_t n = rp->total_tokens;
  size_t bytes = sizeof(uint16_t) * CPLAB_MLA_ROW_DIM * (size_t)(n ? n : 1);
  int32_t *req = malloc(sizeof *req * (size_t)(n ? n : 1)), *pos = malloc(sizeof *pos * (size_t)(n ? n : 1));
  uint16_t *got = malloc(bytes), *want = malloc(bytes);
  exec_arena a = {0};
  void *didx, *dout, *dwant;
  int rc = req && pos && got && want ? 0 : cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc && !rp->restore_idx) rc = cplab_diag_set(d, CPLAB_EINTERNAL, "the plan has no token maps");
  for (int g = 0; !rc && g < s->num_requests; g++)
    for (int64_t t = s->token_offset[g]; t < s->token_offset[g + 1]; t++)
      req[t] = (int32_t)in->step->requests[g].id,
      pos[t] = (int32_t)(in->step->requests[g].num_computed + t - s->token_offset[g]);
  if (!rc) rc = exec_arena_put(&a, &didx, rp->restore_idx, sizeof(int32_t) * (size_t)n, d);
  if (!rc) rc = exec_arena_alloc(&a, &dout, bytes, d);
  if (!rc) rc = exec_arena_alloc(&a, &dwant, bytes, d);
  if (!rc) rc = cplab_restore_rows(&(cplab_restore_rows_params){.gathered = gathered, .gathered_rows = gathered_rows,
                                                                .restore_idx = didx, .n = n,
                                                                .row_elems = CPLAB_MLA_ROW_DIM, .out = dout}, NULL, d);
  if (!rc) rc = token_rows(in, req, pos, n, dwant, d);
  if (!rc) rc = cplab_dev_download(got, dout, bytes, d);
  if (!rc) rc = cplab_dev_download(want, dwant, bytes, d);
  for (int64_t g = 0; !rc && g < n; g++)
    if (memcmp(got + g * CPLAB_MLA_ROW_DIM, want + g * CPLAB_MLA_ROW_DIM, sizeof(uint16_t) * CPLAB_MLA_ROW_DIM))
      rc = cplab_diag_set(d, CPLAB_EMISMATCH,
                          "output restore: rank %d, global token %lld (restore index %d) does not hold its own row "
                          "after the PCP all-gather",
                          rp->ids.rank, (long long)g, rp->restore_idx[g]);
  exec_arena_free(&a);
  free(req), free(pos), free(got), free(want);
  return rc;
}
