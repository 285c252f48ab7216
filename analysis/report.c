/* Divergence reports of cplab-diff: see diff.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

int diff_report_init(diff_report *r, int keep) {
  memset(r, 0, sizeof *r);
  r->keep = keep;
  r->lost.dataset = -1;
  snprintf(r->lost.name, sizeof r->lost.name, "(cases lost: out of memory)");
  r->first = calloc((size_t)(keep > 0 ? keep : 1), sizeof *r->first);
  return r->first ? 0 : CPLAB_ENOMEM;
}

static void case_free(diff_case *c) {
  for (int i = 0; i < c->kept; i++) free(c->first[i]);
  free(c->first);
}

void diff_report_free(diff_report *r) {
  for (int i = 0; i < r->kept; i++) free(r->first[i]);
  free(r->first);
  for (int i = 0; i < r->num_cases; i++) {
    case_free(r->cases[i]);
    free(r->cases[i]);
  }
  free(r->cases);
  case_free(&r->lost);
  memset(r, 0, sizeof *r);
}

/* A case keeps as many divergences as the report (-n), allocated when its
 * first one comes: most cases never fail. */
static void keep_in_case(const diff_report *r, diff_case *c, const char *text) {
  if (!c->first) c->first = calloc((size_t)r->keep, sizeof *c->first);
  if (c->first && (c->first[c->kept] = strdup(text))) c->kept++;
}

void diff_report_add(diff_report *r, diff_case *c, const char *fmt, ...) {
  r->differences++;
  if (c) c->failures++;
  int in_report = r->kept < r->keep, in_case = c && c->kept < r->keep;
  if (!in_report && !in_case) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (in_report && (r->first[r->kept] = strdup(buf))) r->kept++;
  if (in_case) keep_in_case(r, c, buf);
}

void diff_report_count(diff_report *r, diff_case *c, int64_t n) {
  if (n <= 0) return;
  r->differences += n;
  if (c) c->failures += n;
}

diff_case *diff_report_case(diff_report *r, const char *group, const char *name) {
  for (int i = 0; i < r->num_cases; i++)
    if (strcmp(r->cases[i]->group, group) == 0 && strcmp(r->cases[i]->name, name) == 0) return r->cases[i];
  if (r->num_cases == r->cap_cases) {
    int cap = r->cap_cases ? 2 * r->cap_cases : 32;
    diff_case **grown = realloc(r->cases, (size_t)cap * sizeof *grown);
    if (!grown) return r->cases_lost = 1, &r->lost;
    r->cases = grown, r->cap_cases = cap;
  }
  diff_case *c = calloc(1, sizeof *c);
  if (!c) return r->cases_lost = 1, &r->lost;
  snprintf(c->group, sizeof c->group, "%s", group);
  snprintf(c->name, sizeof c->name, "%s", name);
  c->dataset = -1;
  r->cases[r->num_cases++] = c;
  return c;
}

diff_dataset *diff_report_dataset(diff_report *r, const char *name) {
  for (int i = 0; i < r->num_datasets; i++)
    if (strcmp(r->datasets[i].name, name) == 0) return &r->datasets[i];
  if (r->num_datasets == 64) return &r->datasets[63];
  diff_dataset *ds = &r->datasets[r->num_datasets++];
  memset(ds, 0, sizeof *ds);
  snprintf(ds->name, sizeof ds->name, "%s", name);
  ds->min_cosine = 1.0;
  return ds;
}

json_t *diff_report_json(const diff_report *r, const char *mode) {
  json_t *first = json_array(), *sets = json_array();
  for (int i = 0; i < r->kept; i++) json_array_append_new(first, json_string(r->first[i]));
  for (int i = 0; i < r->num_datasets; i++) {
    const diff_dataset *s = &r->datasets[i];
    json_array_append_new(sets, json_pack("{s:s, s:I, s:I, s:I, s:f, s:f, s:I, s:f}", "dataset", s->name, "compared",
                                          (json_int_t)s->compared, "differences", (json_int_t)s->differences,
                                          "tie_swaps", (json_int_t)s->tie_swaps, "max_abs", s->max_abs, "max_rel",
                                          s->max_rel, "max_ulp", (json_int_t)s->max_ulp, "min_cosine", s->min_cosine));
  }
  return json_pack("{s:s, s:I, s:I, s:o, s:o}", "mode", mode, "differences", (json_int_t)r->differences,
                   "compared_bytes", (json_int_t)r->compared_bytes, "datasets", sets, "first", first);
}
