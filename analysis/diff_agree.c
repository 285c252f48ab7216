/* Agreement of two runs of the same scenario (cplab-diff A B): plans exact;
 * integer tensors and quantised bytes exact; floats within the policy (abs,
 * rel, ULP, cosine per row, NaN/Inf positions exact); top-k sets equal modulo
 * ties (an index only one side picked must score within tie_eps of the
 * reference's k-th score; A is the reference). Two layouts of one scenario
 * compare what the layout does not decide: top-k, scores, attention and the
 * cache digests; plans, converted indices and workspace digests are the
 * layout's own and are skipped (counted under "layout-specific"). A tensor
 * that one file's schema version predates (topk_valid of 1.1 against a 1.0
 * file, the decode partials of 1.2 against an older one) is counted under
 * "newer-schema", not compared. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

typedef struct pair_ctx {
  int rank;
  size_t step;
  int layer;
  const cplab_rank_plan *plan; /* A's plan: gives tokens their meaning */
  const diff_policy *pol;
  diff_report *r;
  const int64_t *sampled; /* A's sampled_tokens of the layer, or NULL */
  int layouts_differ;     /* A and B ran different layouts */
  /* rows whose top-k sets differ by ties (compare_topk): their attention
   * read other keys, so it is not compared (counted as tie-swaps) */
  unsigned char *swapped;
  int64_t swapped_rows;
} pair_ctx;

/* "token 5 (request 2, position 37)" for row m of a layer: the local token
 * sampled[m] when the layer names its rows, else local token m. */
static void token_meaning(const cplab_rank_plan *p, const int64_t *sampled, int64_t m, char *out, size_t cap) {
  if (sampled) m = sampled[m];
  for (int i = 0; i < p->split.num_rows; i++) {
    const cplab_row *row = &p->split.rows[i];
    if (m >= row->token_offset && m < row->token_offset + row->len) {
      snprintf(out, cap, "token %lld (request %d, position %lld)", (long long)m, row->req,
               (long long)(row->start_pos + m - row->token_offset));
      return;
    }
  }
  snprintf(out, cap, "row %lld", (long long)m);
}

/* The comparison follows the tensor's type in the table (h5diff's dispatch
 * on the file's type): integers and stored bits (quantised caches, bf16
 * workspaces, digests) exactly, floats by tolerance. The top-k and its
 * conversion are integers too but are compared as sets modulo ties. */
static int is_exact(cplab_trace_tensor t) {
  return !cplab_trace_dtype_is_float(cplab_trace_tensor_info_of(t)->dtype) && t != CPLAB_TT_TOPK &&
         t != CPLAB_TT_TOPK_CONVERTED;
}

static size_t elem_size(cplab_trace_tensor t) { return cplab_trace_dtype_size(cplab_trace_tensor_info_of(t)->dtype); }

/* The JUnit classname of a dataset: what part of the computation it is. */
static const char *group_of(const char *name) {
  int t = cplab_trace_tensor_find(name);
  if (t >= 0) return cplab_trace_tensor_info_of((cplab_trace_tensor)t)->part;
  return strcmp(name, "plans") == 0 ? "plans" : strcmp(name, "newer-schema") == 0 ? "schema" : "layout";
}

/* What passing means for a dataset, with the policy's numbers, so that a CI
 * report's failure says which tolerance the values broke. */
static void criterion(const diff_policy *pol, const char *name, char *out, size_t cap) {
  int t = cplab_trace_tensor_find(name);
  if (t == CPLAB_TT_TOPK) {
    snprintf(out, cap,
             "the same sets modulo ties: an index only one side picked scores within %g + %g (the row's largest |score|) "
             "of A's k-th", pol->t[t].tie_eps, pol->t[t].row_rtol);
    return;
  }
  if (t < 0 || is_exact((cplab_trace_tensor)t) || t == CPLAB_TT_TOPK_CONVERTED) {
    snprintf(out, cap, "exact");
    return;
  }
  const diff_tolerance *tol = &pol->t[t];
  char ulp[40] = "", cosine[48] = "";
  if (tol->ulp > 0) snprintf(ulp, sizeof ulp, " or within %lld ulp", (long long)tol->ulp);
  if (tol->cosine > 0) snprintf(cosine, sizeof cosine, "; cosine of each row >= %g", tol->cosine);
  char row[64] = "";
  if (tol->row_rtol > 0) snprintf(row, sizeof row, " + %g (the row's largest |score|)", tol->row_rtol);
  snprintf(out, cap, "|a - b| <= %g + %g |a|%s%s%s; NaN and Inf positions exact", tol->atol, tol->rtol, row, ulp,
           cosine);
}

/* A row of the summary with its case: in agreement, one case per dataset. */
static diff_dataset *dataset(diff_report *r, const diff_policy *pol, const char *name) {
  diff_dataset *ds = diff_report_dataset(r, name);
  if (ds->c) return ds;
  diff_case *c = ds->c = diff_report_case(r, group_of(name), name);
  c->dataset = (int)(ds - r->datasets);
  if (strcmp(name, "layout-specific") == 0) {
    c->skip = "decided by each layout: counted, not compared";
    return ds;
  }
  if (strcmp(name, "newer-schema") == 0) {
    c->skip = "rows of tensors the other file's schema version predates: counted, not compared";
    return ds;
  }
  c->evaluated = 1;
  criterion(pol, name, c->criterion, sizeof c->criterion);
  return ds;
}

static void compare_exact(pair_ctx *x, cplab_trace_tensor t, const uint64_t *dims, int rank, const void *a,
                          const void *b, diff_dataset *ds) {
  size_t es = elem_size(t), n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
  ds->compared += (int64_t)n;
  x->r->compared_bytes += (int64_t)(2 * n * es);
  if (memcmp(a, b, n * es) == 0) return;
  size_t cols = rank > 1 ? (size_t)dims[rank - 1] : 1, first = n;
  int64_t diffs = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp((const char *)a + i * es, (const char *)b + i * es, es) != 0) {
      diffs++;
      if (first == n) first = i;
    }
  ds->differences += diffs;
  diff_report_add(x->r, ds->c, "%s: rank %d step %zu layer %d: %lld elements differ, first at row %zu column %zu",
                  cplab_trace_tensor_name(t), x->rank, x->step, x->layer, (long long)diffs, first / cols, first % cols);
}

static int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return llabs((long long)ia - (long long)ib);
}

/* Per-row tensors of [rows, heads, 512] (attention outputs) and of
 * [rows, heads] (their lse). */
/* [rows, heads, 512] tensors, and the attention's [rows, heads] LSEs. */
static int by_head(cplab_trace_tensor t) { return cplab_trace_tensor_info_of(t)->rank == 3; }
static int lse_by_head(cplab_trace_tensor t) {
  const cplab_trace_tensor_info *i = cplab_trace_tensor_info_of(t);
  return i->rank == 2 && strcmp(i->part, "attention") == 0;
}

/* "token 5 (request 2, position 37) head 3 column 17" for element (row, c)
 * of a per-row float tensor: attn_out rows are (sampled row, head) pairs,
 * attn_lse columns are heads (the partials' heads: block-major, SCHEMA.md). */
static void element_meaning(const pair_ctx *x, cplab_trace_tensor t, const uint64_t *dims, size_t row, size_t c,
                            char *out, size_t cap) {
  char tok[96];
  size_t m = by_head(t) ? row / (size_t)dims[1] : row;
  token_meaning(x->plan, x->sampled, (int64_t)m, tok, sizeof tok);
  if (by_head(t)) snprintf(out, cap, "%s head %zu column %zu", tok, row % (size_t)dims[1], c);
  else if (lse_by_head(t)) snprintf(out, cap, "%s head %zu", tok, c);
  else snprintf(out, cap, "%s column %zu", tok, c);
}

/* The largest finite |score| of each of A's top-k rows (dims [rows][k];
 * -1 entries skipped): the scale of the policy's row_rtol. NULL when out of
 * memory (row_rtol then counts as 0). */
static double *row_scales(const uint64_t *dims, const int32_t *idx, const float *scores) {
  int64_t t = (int64_t)dims[0], k = (int64_t)dims[1];
  double *s = calloc(t > 0 ? (size_t)t : 1, sizeof *s);
  for (int64_t m = 0; s && m < t; m++)
    for (int64_t j = 0; j < k; j++) {
      double v = fabs((double)scores[m * k + j]);
      if (idx[m * k + j] >= 0 && isfinite(v) && v > s[m]) s[m] = v;
    }
  return s;
}

/* Floats: elementwise tolerance, NaN/Inf positions exact, cosine per row.
 * row_scale (may be NULL): per row, what the policy's row_rtol multiplies. */
static void compare_float(pair_ctx *x, cplab_trace_tensor t, const uint64_t *dims, int rank, const float *a,
                          const float *b, const double *row_scale, diff_dataset *ds) {
  const diff_tolerance *tol = &x->pol->t[t];
  size_t cols = rank > 1 ? (size_t)dims[rank - 1] : 1, n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
  ds->compared += (int64_t)n;
  x->r->compared_bytes += (int64_t)(8 * n);
  /* attention: rows (of heads) of a token whose top-k sets differ by ties are skipped */
  int attn = by_head(t) || lse_by_head(t);
  size_t per_token = by_head(t) ? (size_t)dims[1] : 1;
  for (size_t row = 0; row * cols < n; row++) {
    size_t tok = row / per_token;
    if (attn && x->swapped && (int64_t)tok < x->swapped_rows && (int64_t)tok < (int64_t)dims[0] && x->swapped[tok]) {
      if (row % per_token == 0) ds->tie_swaps++;
      continue;
    }
    double dot = 0, na = 0, nb = 0;
    for (size_t c = 0; c < cols; c++) {
      size_t i = row * cols + c;
      float u = a[i], v = b[i];
      int special = isnan(u) || isnan(v) || isinf(u) || isinf(v);
      if (special) {
        int same = (isnan(u) && isnan(v)) || (isinf(u) && isinf(v) && (u > 0) == (v > 0));
        if (!same) {
          char where[160];
          element_meaning(x, t, dims, row, c, where, sizeof where);
          ds->differences++;
          diff_report_add(x->r, ds->c, "%s: rank %d step %zu layer %d %s: %g vs %g (NaN/Inf must match)",
                          cplab_trace_tensor_name(t), x->rank, x->step, x->layer, where, (double)u, (double)v);
        }
        continue;
      }
      double abs_err = fabs((double)u - (double)v), rel = u != 0 ? abs_err / fabs((double)u) : (abs_err ? INFINITY : 0);
      int64_t ulps = ulp_distance(u, v);
      if (abs_err > ds->max_abs) ds->max_abs = abs_err;
      if (rel > ds->max_rel && isfinite(rel)) ds->max_rel = rel;
      if (ulps > ds->max_ulp) ds->max_ulp = ulps;
      double allowed = tol->atol + tol->rtol * fabs((double)u) + (row_scale ? tol->row_rtol * row_scale[row] : 0);
      int ok = abs_err <= allowed || (tol->ulp > 0 && ulps <= tol->ulp);
      if (!ok) {
        char where[160];
        element_meaning(x, t, dims, row, c, where, sizeof where);
        ds->differences++;
        diff_report_add(x->r, ds->c, "%s: rank %d step %zu layer %d %s: %.9g vs %.9g (abs %.3g, rel %.3g, %lld ulp)",
                        cplab_trace_tensor_name(t), x->rank, x->step, x->layer, where, (double)u, (double)v, abs_err,
                        rel, (long long)ulps);
      }
      dot += (double)u * v, na += (double)u * u, nb += (double)v * v;
    }
    double cosine = na > 0 && nb > 0 ? dot / sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
    if (cosine < ds->min_cosine) ds->min_cosine = cosine;
    if (tol->cosine > 0 && cosine < tol->cosine) {
      ds->differences++;
      diff_report_add(x->r, ds->c, "%s: rank %d step %zu layer %d row %zu: cosine %.6f below %.6f", cplab_trace_tensor_name(t),
                      x->rank, x->step, x->layer, row, cosine, tol->cosine);
    }
  }
}

/* Is idx in row (k entries)? Returns its column or -1. */
static int64_t find_in_row(const int32_t *row, int64_t k, int32_t idx) {
  for (int64_t j = 0; j < k; j++)
    if (row[j] == idx) return j;
  return -1;
}

/* Top-k sets modulo ties; for indices both sides picked, the converted
 * entries must agree exactly and the scores within the topk_scores policy
 * (scores are compared by index, not by column: columns move with ties). */
static void compare_topk(pair_ctx *x, const uint64_t *dims, const int32_t *a, const int32_t *b, const int32_t *ca,
                         const int32_t *cb, const float *sa, const float *sb, const float *kth, const double *scale,
                         diff_dataset *ds) {
  int64_t t = (int64_t)dims[0], k = (int64_t)dims[1];
  double tie_eps = x->pol->t[CPLAB_TT_TOPK].tie_eps, tie_row = x->pol->t[CPLAB_TT_TOPK].row_rtol;
  diff_dataset *ds_scores = sa && sb ? dataset(x->r, x->pol, "topk_scores") : NULL;
  diff_dataset *ds_conv = ca && cb ? dataset(x->r, x->pol, "topk_converted") : NULL;
  ds->compared += t * k;
  x->r->compared_bytes += 8 * t * k;
  if (ds_scores) ds_scores->compared += t * k, x->r->compared_bytes += 8 * t * k;
  if (ds_conv) ds_conv->compared += t * k, x->r->compared_bytes += 8 * t * k;
  for (int64_t m = 0; m < t; m++) {
    const int32_t *ra = a + m * k, *rb = b + m * k;
    double eps = tie_eps + (scale ? tie_row * scale[m] : 0);
    int bad = 0;
    for (int side = 0; side < 2 && !bad; side++) {
      const int32_t *mine = side ? rb : ra, *other = side ? ra : rb;
      const float *my_scores = side ? sb : sa;
      for (int64_t j = 0; j < k && !bad; j++) {
        int32_t idx = mine[j];
        if (idx < 0 || find_in_row(other, k, idx) >= 0) continue;
        /* Only this side picked idx: a tie iff it scores like the k-th. */
        int tie = my_scores && kth && fabs((double)my_scores[m * k + j] - (double)kth[m]) <= eps;
        if (tie) ds->tie_swaps++;
        if (tie && x->swapped && m < x->swapped_rows) x->swapped[m] = 1;
        else bad = 1;
        if (!tie) {
          char what[96];
          token_meaning(x->plan, x->sampled, m, what, sizeof what);
          diff_report_add(x->r, ds->c, "topk: rank %d step %zu layer %d %s: index %d picked only by %s and not a tie%s",
                          x->rank, x->step, x->layer, what, idx, side ? "B" : "A",
                          my_scores ? "" : " (no scores stored to judge ties)");
        }
      }
    }
    ds->differences += bad;
    const diff_tolerance *st = &x->pol->t[CPLAB_TT_TOPK_SCORES];
    int bad_scores = 0, bad_conv = 0;
    for (int64_t j = 0; sa && sb && j < k && !bad_scores; j++) {
      int64_t jb = ra[j] >= 0 ? find_in_row(rb, k, ra[j]) : -1;
      if (jb < 0) continue; /* -1, or picked by A only (judged above) */
      float u = sa[m * k + j], v = sb[m * k + jb];
      double e = u == v ? 0 : fabs((double)u - (double)v);
      if (ds_scores && e > ds_scores->max_abs && isfinite(e)) ds_scores->max_abs = e;
      double allowed = st->atol + st->rtol * fabs((double)u) + (scale ? st->row_rtol * scale[m] : 0);
      int same = u == v || (isnan(u) && isnan(v)) || e <= allowed;
      if (!same) {
        char what[96];
        token_meaning(x->plan, x->sampled, m, what, sizeof what);
        diff_report_add(x->r, ds_scores->c, "topk_scores: rank %d step %zu layer %d %s: index %d scored %.9g vs %.9g", x->rank,
                        x->step, x->layer, what, ra[j], (double)u, (double)v);
        bad_scores = 1;
      }
    }
    for (int64_t j = 0; ca && cb && j < k && !bad_conv; j++) {
      int64_t jb = ra[j] >= 0 ? find_in_row(rb, k, ra[j]) : -1;
      if (jb >= 0 && ca[m * k + j] != cb[m * k + jb]) {
        char what[96];
        token_meaning(x->plan, x->sampled, m, what, sizeof what);
        diff_report_add(x->r, ds_conv->c, "topk_converted: rank %d step %zu layer %d %s: index %d converted to %d vs %d", x->rank,
                        x->step, x->layer, what, ra[j], ca[m * k + j], cb[m * k + jb]);
        bad_conv = 1;
      }
    }
    if (ds_scores) ds_scores->differences += bad_scores;
    if (ds_conv) ds_conv->differences += bad_conv;
  }
}

typedef struct tensor_pair {
  void *a, *b;
  uint64_t dims[3], dims_b[3];
  int present_a, present_b;
} tensor_pair;

static int load_pair(cplab_trace *ta, cplab_trace *tb, size_t step, int layer, cplab_trace_tensor t, tensor_pair *p,
                     cplab_diag *d) {
  memset(p, 0, sizeof *p);
  cplab_diag la = {0}, lb = {0};
  int ra = cplab_trace_read_tensor(ta, step, layer, t, p->dims, &p->a, &la);
  int rb = cplab_trace_read_tensor(tb, step, layer, t, p->dims_b, &p->b, &lb);
  if (ra && ra != CPLAB_ENOTFOUND) return cplab_diag_set(d, ra, "%s", la.msg);
  if (rb && rb != CPLAB_ENOTFOUND) return cplab_diag_set(d, rb, "%s", lb.msg);
  p->present_a = ra == 0, p->present_b = rb == 0;
  return 0;
}

static void free_pair(tensor_pair *p) {
  free(p->a);
  free(p->b);
}

/* A tensor only one side holds is no difference when the other side's
 * schema predates it (golden traces of 1.0 against a 1.1 writer). */
static int older_schema_lacks(cplab_trace *ta, cplab_trace *tb, int in_a, cplab_trace_tensor t) {
  return cplab_trace_schema_minor(in_a ? tb : ta) < cplab_trace_tensor_since_minor(t);
}

static int compare_layer(pair_ctx *x, cplab_trace *ta, cplab_trace *tb, cplab_diag *d) {
  tensor_pair p[CPLAB_TT_COUNT];
  double *scale = NULL; /* A's top-k rows' largest |score| (the top-k comes before the k-th scores) */
  int rc = 0, loaded = 0;
  for (; loaded < CPLAB_TT_COUNT && !rc; loaded++)
    rc = load_pair(ta, tb, x->step, x->layer, (cplab_trace_tensor)loaded, &p[loaded], d);
  if (!rc && p[CPLAB_TT_SAMPLED_TOKENS].present_a) x->sampled = p[CPLAB_TT_SAMPLED_TOKENS].a;
  x->swapped_rows = !rc && p[CPLAB_TT_TOPK].present_a ? (int64_t)p[CPLAB_TT_TOPK].dims[0] : 0;
  x->swapped = x->swapped_rows > 0 ? calloc((size_t)x->swapped_rows, 1) : NULL;
  for (int t = 0; !rc && t < CPLAB_TT_COUNT; t++) {
    const char *name = cplab_trace_tensor_name((cplab_trace_tensor)t);
    if (!p[t].present_a && !p[t].present_b) continue;
    if (p[t].present_a != p[t].present_b && older_schema_lacks(ta, tb, p[t].present_a, (cplab_trace_tensor)t)) {
      dataset(x->r, x->pol, "newer-schema")->compared += (int64_t)(p[t].present_a ? p[t].dims[0] : p[t].dims_b[0]);
      continue;
    }
    diff_dataset *ds = dataset(x->r, x->pol, name);
    if (p[t].present_a != p[t].present_b) {
      ds->differences++;
      diff_report_add(x->r, ds->c, "%s: rank %d step %zu layer %d: only in %s", name, x->rank, x->step, x->layer,
                      p[t].present_a ? "A" : "B");
      continue;
    }
    if (memcmp(p[t].dims, p[t].dims_b, sizeof p[t].dims) != 0) {
      ds->differences++;
      diff_report_add(x->r, ds->c, "%s: rank %d step %zu layer %d: shapes differ", name, x->rank, x->step, x->layer);
      continue;
    }
    int rank = cplab_trace_tensor_info_of((cplab_trace_tensor)t)->rank;
    if (t == CPLAB_TT_DIGESTS && x->layouts_differ && p[t].dims[0] > 2) {
      dataset(x->r, x->pol, "layout-specific")->compared += (int64_t)p[t].dims[0] - 2;
      p[t].dims[0] = 2; /* the caches; the workspaces are the layout's */
    }
    if (t == CPLAB_TT_TOPK) {
      const tensor_pair *c = &p[CPLAB_TT_TOPK_CONVERTED], *s = &p[CPLAB_TT_TOPK_SCORES], *k = &p[CPLAB_TT_KTH_SCORE];
      int conv = !x->layouts_differ && c->present_a && c->present_b && memcmp(c->dims, p[t].dims, sizeof c->dims) == 0;
      int scores = s->present_a && s->present_b && memcmp(s->dims, p[t].dims, sizeof s->dims) == 0 && k->present_a;
      scale = scores ? row_scales(p[t].dims, p[t].a, s->a) : NULL;
      compare_topk(x, p[t].dims, p[t].a, p[t].b, conv ? c->a : NULL, conv ? c->b : NULL, scores ? s->a : NULL,
                   scores ? s->b : NULL, scores ? k->a : NULL, scale, ds);
    } else if (t == CPLAB_TT_TOPK_CONVERTED || t == CPLAB_TT_TOPK_SCORES) {
      /* Compared by index with the top-k sets when those are there. */
      if (t == CPLAB_TT_TOPK_CONVERTED && x->layouts_differ)
        dataset(x->r, x->pol, "layout-specific")->compared += (int64_t)(p[t].dims[0] * p[t].dims[1]);
      else if (!p[CPLAB_TT_TOPK].present_a) {
        if (t == CPLAB_TT_TOPK_CONVERTED) compare_exact(x, (cplab_trace_tensor)t, p[t].dims, rank, p[t].a, p[t].b, ds);
        else compare_float(x, (cplab_trace_tensor)t, p[t].dims, rank, p[t].a, p[t].b, NULL, ds);
      }
    } else if (is_exact((cplab_trace_tensor)t)) {
      compare_exact(x, (cplab_trace_tensor)t, p[t].dims, rank, p[t].a, p[t].b, ds);
    } else {
      /* the k-th scores by their rows' scale (the top-k is compared first) */
      const double *rs = t == CPLAB_TT_KTH_SCORE && scale && p[CPLAB_TT_TOPK].dims[0] == p[t].dims[0] ? scale : NULL;
      compare_float(x, (cplab_trace_tensor)t, p[t].dims, rank, p[t].a, p[t].b, rs, ds);
    }
  }
  free(scale);
  free(x->swapped);
  x->swapped = NULL, x->swapped_rows = 0;
  for (int t = 0; t < loaded; t++) free_pair(&p[t]);
  return rc;
}

static int64_t plan_bytes(const cplab_rank_plan *p) {
  int64_t R = p->sched.num_requests, bytes = R * (8 * 4 + 1 + 4 * p->sched.max_blocks) + p->split.num_rows * 80;
  bytes += (int64_t)p->prefill.num_regions * 40 + (int64_t)p->indexer.num_regions * 48 + p->num_collectives * 40;
  if (p->slot_mapping) bytes += p->total_tokens * 12 + (int64_t)p->env.par.pcp * p->sched.padded_num_tokens * 5;
  return bytes;
}

int diff_agree(const char *path_a, const char *path_b, const diff_policy *pol, diff_report *r, cplab_diag *d) {
  cplab_trace *a = NULL, *b = NULL;
  cplab_scenario *sa = NULL, *sb = NULL;
  int layouts_differ = 0;
  int rc = cplab_trace_open(path_a, &a, d);
  if (!rc) rc = cplab_trace_open(path_b, &b, d);
  if (!rc && (strcmp(cplab_trace_get_info(a)->kind, "run") || strcmp(cplab_trace_get_info(b)->kind, "run")))
    rc = cplab_diag_set(d, CPLAB_EUSAGE, "agreement compares two run files (NAME.h5)");
  if (!rc) rc = cplab_trace_read_scenario(a, &sa, d);
  if (!rc) rc = cplab_trace_read_scenario(b, &sb, d);
  if (!rc) {
    const cplab_trace_info *ia = cplab_trace_get_info(a), *ib = cplab_trace_get_info(b);
    layouts_differ = strcmp(ia->layout, ib->layout) != 0;
    json_t *ja = cplab_scenario_to_json(sa, 1), *jb = cplab_scenario_to_json(sb, 1);
    json_object_del(ja, "layout"); /* two layouts of one scenario are comparable */
    json_object_del(jb, "layout");
    if (ia->world_size != ib->world_size || ia->num_steps != ib->num_steps || !json_equal(ja, jb))
      rc = cplab_diag_set(d, CPLAB_EINVAL, "not comparable: %s and %s are runs of different scenarios or layouts of ranks",
                          path_a, path_b);
    json_decref(ja);
    json_decref(jb);
  }
  int world = rc ? 0 : cplab_trace_get_info(a)->world_size;
  for (int k = 0; !rc && k < world; k++) {
    cplab_trace *ra = NULL, *rb = NULL;
    rc = cplab_trace_open_rank(a, k, &ra, d);
    if (!rc) rc = cplab_trace_open_rank(b, k, &rb, d);
    diff_dataset *plans = rc ? NULL : dataset(r, pol, layouts_differ ? "layout-specific" : "plans");
    for (size_t step = 0; !rc && step < sa->num_steps; step++) {
      cplab_rank_plan *pa = NULL, *pb = NULL;
      rc = cplab_trace_read_plan(ra, step, &pa, d);
      if (!rc) rc = cplab_trace_read_plan(rb, step, &pb, d);
      if (!rc && layouts_differ) plans->compared++;
      else if (!rc) {
        char what[128];
        plans->compared++;
        r->compared_bytes += 2 * plan_bytes(pa);
        if (!cplab_rank_plan_equal(pa, pb, what, sizeof what)) {
          plans->differences++;
          diff_report_add(r, plans->c, "plans: rank %d step %zu: %s differ", k, step, what);
        }
      }
      int *la = NULL, *lb = NULL, na = 0, nb = 0;
      if (!rc) rc = cplab_trace_list_layers(ra, step, &la, &na, d);
      if (!rc) rc = cplab_trace_list_layers(rb, step, &lb, &nb, d);
      for (int i = 0; !rc && i < na + nb; i++) {
        int layer = i < na ? la[i] : lb[i - na];
        if (i >= na) { /* layers only B has */
          int seen = 0;
          for (int j = 0; j < na; j++) seen |= la[j] == layer;
          if (seen) continue;
        }
        pair_ctx x = {k, step, layer, pa, pol, r, NULL, layouts_differ, NULL, 0};
        rc = compare_layer(&x, ra, rb, d);
      }
      free(la);
      free(lb);
      cplab_rank_plan_free(pa);
      cplab_rank_plan_free(pb);
    }
    cplab_trace_close(ra);
    cplab_trace_close(rb);
  }
  cplab_scenario_free(sa);
  cplab_scenario_free(sb);
  cplab_trace_close(a);
  cplab_trace_close(b);
  return rc;
}
