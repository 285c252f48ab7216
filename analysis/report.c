/* Divergence reports of cplab-diff: see diff.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

int diff_report_init(diff_report *r, int keep) {
  memset(r, 0, sizeof *r);
  r->keep = keep;
  r->first = calloc((size_t)(keep > 0 ? keep : 1), sizeof *r->first);
  return r->first ? 0 : CPLAB_ENOMEM;
}

void diff_report_free(diff_report *r) {
  for (int i = 0; i < r->kept; i++) free(r->first[i]);
  free(r->first);
  memset(r, 0, sizeof *r);
}

void diff_report_add(diff_report *r, const char *fmt, ...) {
  r->differences++;
  if (r->kept >= r->keep) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if ((r->first[r->kept] = strdup(buf))) r->kept++;
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
