/* The tolerance policy: defaults from analysis/policy.json (compiled in),
 * fields overridden by --policy FILE. Keys: the float tensors of the trace
 * schema (agreement), and partial_combine (--ranks, diff_partials.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "diff.h"
#include "policy_text.h"

static int apply(const json_t *root, const char *origin, diff_policy *p, cplab_diag *d) {
  if (!json_is_object(root)) CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: the policy must be a JSON object", origin);
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)root, key, v) {
    if (strcmp(key, "comment") == 0) continue;
    int k = cplab_trace_tensor_find(key), combine = strcmp(key, "partial_combine") == 0;
    if ((k < 0 && !combine) || !json_is_object(v))
      CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: '%s' is neither a tensor of the trace schema nor partial_combine", origin, key);
    const char *f;
    json_t *x;
    json_object_foreach(v, f, x) {
      if (!json_is_number(x) || json_number_value(x) < 0)
        CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: %s.%s must be a non-negative number", origin, key, f);
      double val = json_number_value(x);
      diff_tolerance *t = combine ? &p->combine : &p->t[k];
      if (strcmp(f, "atol") == 0) t->atol = val;
      else if (strcmp(f, "rtol") == 0) t->rtol = val;
      else if (strcmp(f, "cosine") == 0) t->cosine = val;
      else if (strcmp(f, "tie_eps") == 0) t->tie_eps = val;
      else if (strcmp(f, "row_rtol") == 0) t->row_rtol = val;
      else if (strcmp(f, "ulp") == 0) t->ulp = (int64_t)val;
      else CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: unknown field %s.%s (atol, rtol, ulp, cosine, tie_eps, row_rtol)", origin, key, f);
    }
  }
  return 0;
}

int diff_policy_load(const char *override_path, diff_policy *out, cplab_diag *d) {
  memset(out, 0, sizeof *out);
  json_error_t err;
  json_t *root = json_loads(cplab_default_policy_json, JSON_REJECT_DUPLICATES, &err);
  if (!root) CPLAB_FAIL(d, CPLAB_EINTERNAL, "built-in policy: %s", err.text);
  int rc = apply(root, "analysis/policy.json", out, d);
  json_decref(root);
  if (rc || !override_path) return rc;
  /* A file that cannot be read is an I/O error with no position; only what
   * jansson parses has a line and a column. */
  struct stat st;
  if (stat(override_path, &st) != 0)
    CPLAB_FAIL(d, CPLAB_EIO, "cannot open '%s': %s", override_path, strerror(errno));
  if (!S_ISREG(st.st_mode)) CPLAB_FAIL(d, CPLAB_EIO, "'%s' is not a regular file", override_path);
  FILE *f = fopen(override_path, "rb");
  if (!f) CPLAB_FAIL(d, CPLAB_EIO, "cannot open '%s': %s", override_path, strerror(errno));
  root = json_loadf(f, JSON_REJECT_DUPLICATES, &err);
  int bad = ferror(f);
  fclose(f);
  if (!root && (bad || err.line < 1)) CPLAB_FAIL(d, CPLAB_EIO, "cannot read '%s': %s", override_path, err.text);
  if (!root) CPLAB_FAIL(d, CPLAB_ESYNTAX, "%s:%d:%d: %s", override_path, err.line, err.column, err.text);
  rc = apply(root, override_path, out, d);
  json_decref(root);
  return rc;
}
