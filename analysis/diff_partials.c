/* partial-combine (cplab-diff --ranks, traces of schema 1.2): the combine
 * itself, diffed from the trace. For each DCP group and each row whose
 * attention is the LSE combine (cplab_row_dcp_combined), the D members'
 * stored partials of that row (attn_partial_out / attn_partial_lse, member
 * o's block of the receiving rank's heads) are combined again on the host in
 * double by the reference's rule (sim_lse_combine, sim_lse_merge: an lse
 * that is NaN or +inf counts as an empty shard, a factor that is NaN or 0
 * adds nothing), and the result must equal the rank's stored attn_out and
 * attn_lse. A peer's block taken for the wrong heads, a partial missing,
 * counted twice or weighted wrongly, and a stored partial other than the
 * one combined all show here. Rows the combine does not see must hold NaN.
 *
 * Tolerance (analysis/policy.json "partial_combine"), per head of a row with
 * recombined lse L, factors f_d = exp(lse_d - L) and element c:
 *   attn_out: |a - b| <= atol + rtol (1 + |L|) m_c,  m_c = sum_d f_d |out_d[c]|
 *   attn_lse: |a - b| <= atol + rtol (1 + |L|)
 * Why: the trace holds float32. The executor combines those very floats in
 * double and rounds once (kernels/combine.cu; its lse the same way,
 * exec_merged_lse), so it is within 2^-24 |b| of the host. The simulator
 * combines in double before rounding: each stored lse_d is off by up to
 * 2^-24 |lse_d| and each output by 2^-24 of itself, which moves a factor by
 * about 2^-24 (|lse_d| + |L|) relative; shards that weigh have lse_d within
 * a few units of L (a shard x below weighs e^-x), so the output moves by
 * about 2^-23 (1 + |L|) of the magnitude the combine averages (m_c, not the
 * result, which may cancel) and L by as much. rtol 1e-6 is 8 times 2^-23;
 * atol 1e-6 covers outputs whose inputs all round to tiny values. A wrong
 * partial moves the result by a share of the values themselves (0.1 to 1 in
 * these traces), orders of magnitude beyond. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/ranks.h"
#include "diff.h"
#include "reference.h"

/* The row of l that holds global token g under plan p, or -1. */
static int64_t row_of_token(const cplab_rank_plan *p, const diff_rank_layer *l, int64_t g) {
  for (int64_t j = 0; j < l->rows; j++) {
    const cplab_row *row = cplab_split_row_of(&p->split, l->tokens[j]);
    if (row && diff_global_token(p, row, l->tokens[j]) == g) return j;
  }
  return -1;
}

/* SCHEMA.md: rows the combine does not see store NaN partials. */
static int partial_row_is_nan(const diff_rank_layer *l, int64_t i) {
  size_t gh = (size_t)l->partial_heads;
  for (size_t c = 0; c < gh * SIM_MLA_V; c++)
    if (!isnan(l->partial_out[(size_t)i * gh * SIM_MLA_V + c])) return 0;
  for (size_t h = 0; h < gh; h++)
    if (!isnan(l->partial_lse[(size_t)i * gh + h])) return 0;
  return 1;
}

/* What one row's check works on: the members' partials of the rank's heads
 * ([D][H], [D][H][512]) and their combine ([H][512]). */
typedef struct combine_ws {
  int D, G, H;
  int *members; /* [D] the rank's DCP group */
  double *lse, *out, *fin;
} combine_ws;

/* The element that breaks the tolerance worst, if any. */
typedef struct verdict_at {
  int head, column; /* column -1: the lse */
  double got, want, allowed, err;
} verdict_at;

/* Gather member o's block of the rank's heads for global token g into ws;
 * the first member that lacks it, or -1. */
static int gather(combine_ws *ws, cplab_rank_plan *const *plans, const diff_rank_layer *L, int blk, int64_t g) {
  int H = ws->H, GH = ws->G * H;
  for (int o = 0; o < ws->D; o++) {
    const diff_rank_layer *lb = &L[ws->members[o]];
    int usable = lb->present && lb->partial_out && lb->partial_heads == GH;
    int64_t j = usable ? row_of_token(plans[ws->members[o]], lb, g) : -1;
    if (j < 0) return o;
    for (int h = 0; h < H; h++) {
      size_t src = (size_t)j * GH + (size_t)blk * H + (size_t)h;
      ws->lse[(size_t)o * H + h] = lb->partial_lse[src];
      for (int c = 0; c < SIM_MLA_V; c++)
        ws->out[((size_t)o * H + h) * SIM_MLA_V + c] = lb->partial_out[src * SIM_MLA_V + c];
    }
  }
  return -1;
}

static double combine_lse_of(double l) { return isnan(l) || l == INFINITY ? -INFINITY : l; }

/* Recombine ws and judge row i of l against it; the worst element in *at.
 * Returns whether every element passes. */
static int judge(combine_ws *ws, const diff_rank_layer *l, int64_t i, const diff_tolerance *tol, verdict_at *at) {
  int H = ws->H, D = ws->D, ok = 1;
  sim_lse_combine(D, H, ws->lse, ws->out, ws->fin);
  memset(at, 0, sizeof *at);
  at->err = -1;
  for (int h = 0; h < H; h++) {
    double L = sim_lse_merge(D, ws->lse + h, (size_t)H), s = isfinite(L) ? 1 + fabs(L) : 1;
    double got = l->lse[(size_t)i * H + h], e = got == L ? 0 : fabs(got - L), allowed = tol->atol + tol->rtol * s;
    int bad = !(e <= allowed);
    if (bad || e > at->err) *at = (verdict_at){h, -1, got, L, allowed, bad ? (e == e ? e : INFINITY) : e};
    ok &= !bad;
    for (int c = 0; c < SIM_MLA_V && ok; c++) {
      double m = 0;
      for (int o = 0; o < D && isfinite(L); o++) {
        double f = exp(combine_lse_of(ws->lse[(size_t)o * H + h]) - L);
        if (f == f && f != 0) m += f * fabs(ws->out[((size_t)o * H + h) * SIM_MLA_V + c]);
      }
      double want = ws->fin[(size_t)h * SIM_MLA_V + c];
      got = l->out[((size_t)i * H + h) * SIM_MLA_V + c];
      e = fabs(got - want), allowed = tol->atol + tol->rtol * s * m;
      bad = !(e <= allowed);
      if (bad || e > at->err) *at = (verdict_at){h, c, got, want, allowed, bad ? (e == e ? e : INFINITY) : e};
      ok &= !bad;
    }
    if (!ok) break;
  }
  return ok;
}

static void member_list(const combine_ws *ws, char *out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  for (int o = 0; o < ws->D && n + 12 < cap; o++)
    n += (size_t)snprintf(out + n, cap - n, o ? ",%d" : "%d", ws->members[o]);
}

/* Every combined row of rank a against its DCP group's partials. */
static int check_rank(diff_report *r, const cplab_step_input *in, int layer, cplab_rank_plan *const *plans,
                      const diff_rank_layer *L, int a, const diff_tolerance *tol, combine_ws *ws, diff_case *verdict,
                      cplab_diag *d) {
  const diff_rank_layer *la = &L[a];
  const cplab_rank_plan *p = plans[a];
  int rc = cplab_group_members(in->par, CPLAB_GROUP_DCP, a, ws->members, d);
  int blk = ws->G == 1 ? 0 : p->ids.dcp_rank;
  char who[64];
  member_list(ws, who, sizeof who);
  for (int64_t i = 0; !rc && i < la->rows; i++) {
    const cplab_row *row = cplab_split_row_of(&p->split, la->tokens[i]);
    if (!row) continue;
    int64_t g = diff_global_token(p, row, la->tokens[i]);
    if (!cplab_row_dcp_combined(in->par, row)) {
      if (la->partial_out && !partial_row_is_nan(la, i)) {
        diff_dataset *ds = diff_report_dataset(r, "partial combine");
        verdict->evaluated = 1;
        ds->compared++, ds->differences++;
        diff_report_add(r, verdict, "partial-combine: step %zu layer %d rank %d local token %lld (global token %lld): "
                        "the combine does not see this row, yet it holds a partial (NaN expected)",
                        in->step_index, layer, a, (long long)la->tokens[i], (long long)g);
      }
      continue;
    }
    verdict->evaluated = 1;
    diff_dataset *ds = diff_report_dataset(r, "partial combine");
    ds->compared++;
    int lacking = gather(ws, plans, L, blk, g);
    if (lacking >= 0) {
      ds->differences++;
      diff_report_add(r, verdict, "partial-combine: step %zu layer %d rank %d local token %lld (global token %lld): "
                      "DCP member rank %d stores no partial of this row for rank %d's heads",
                      in->step_index, layer, a, (long long)la->tokens[i], (long long)g, ws->members[lacking], a);
      continue;
    }
    verdict_at at;
    int ok = judge(ws, la, i, tol, &at);
    if (at.err > ds->max_abs) ds->max_abs = at.err;
    if (ok) continue;
    ds->differences++;
    char what[32] = "attn_lse";
    if (at.column >= 0) snprintf(what, sizeof what, "attn_out column %d", at.column);
    diff_report_add(r, verdict,
                    "partial-combine: step %zu layer %d rank %d local token %lld (global token %lld) head %d: "
                    "the LSE combine of DCP ranks %s's stored partials gives %.9g, %s holds %.9g (allowed %.3g)",
                    in->step_index, layer, a, (long long)la->tokens[i], (long long)g, at.head, who, at.want, what,
                    at.got, at.allowed);
  }
  return rc;
}

int diff_partials_check(diff_report *r, const cplab_step_input *in, int layer, cplab_rank_plan *const *plans,
                        const diff_rank_layer *L, int world, const diff_tolerance *tol, diff_case *verdict,
                        cplab_diag *d) {
  if (in->par->dcp < 2) return 0;
  combine_ws ws = {in->par->dcp, cplab_dcp_partial_blocks(in->par), 0, NULL, NULL, NULL, NULL};
  int rc = 0;
  for (int a = 0; a < world && !rc; a++) {
    /* Files older than 1.2 hold no partials: nothing to check there. */
    if (!L[a].present || L[a].schema_minor < cplab_trace_tensor_since_minor(CPLAB_TT_ATTN_PARTIAL_OUT)) continue;
    if (L[a].heads != ws.H) {
      free(ws.lse), free(ws.out), free(ws.fin);
      ws.H = L[a].heads;
      ws.lse = malloc(sizeof(double) * (size_t)ws.D * (size_t)ws.H);
      ws.out = malloc(sizeof(double) * (size_t)ws.D * (size_t)ws.H * SIM_MLA_V);
      ws.fin = malloc(sizeof(double) * (size_t)ws.H * SIM_MLA_V);
      if (!ws.members) ws.members = malloc(sizeof(int) * (size_t)ws.D);
      if (!ws.lse || !ws.out || !ws.fin || !ws.members) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    }
    if (!rc) rc = check_rank(r, in, layer, plans, L, a, tol, &ws, verdict, d);
  }
  free(ws.lse), free(ws.out), free(ws.fin), free(ws.members);
  return rc;
}
