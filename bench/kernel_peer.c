/* The PyTorch peer's results file: see kernel_peer.h. */
#include "kernel_peer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"

#define MAX_PEER_BYTES ((size_t)16 << 20)
#define MAX_PEER_ENTRIES 4096

/* The case named name of kernel kname, or an error located at path. */
static int find_case(cplab_json_reader *r, const char *path, const char *kname, const char *cname,
                     const cplab_kb_kernel *const *kernels, int nk, cplab_kb_peer *e) {
  char at[CPLAB_PATH_MAX];
  const cplab_kb_kernel *k = NULL;
  for (int i = 0; i < nk && !k; i++)
    if (!strcmp(kernels[i]->name, kname)) k = kernels[i];
  if (!k) {
    cplab_json_child(at, path, "kernel");
    return cplab_json_fail(r, at, 0, CPLAB_ENOTFOUND, "unknown kernel '%s' (--list shows the kernels)", kname);
  }
  for (int i = 0; i < k->ncases; i++)
    if (!strcmp(k->cases[i].name, cname)) {
      e->kernel = k, e->kcase = &k->cases[i];
      return 0;
    }
  cplab_json_child(at, path, "case");
  return cplab_json_fail(r, at, 0, CPLAB_ENOTFOUND, "kernel %s has no case '%s' (--list shows the cases)", kname,
                         cname);
}

static int parse_entry(cplab_json_reader *r, const json_t *v, const char *path, const cplab_kb_kernel *const *kernels,
                       int nk, cplab_kb_peer *e) {
  static const char *const keys[] = {"kernel", "case", "name", "median_us", "p10_us", "p90_us", "sets", "shape",
                                     "check", "error", NULL};
  char kname[64], cname[96], at[CPLAB_PATH_MAX];
  int rc = cplab_json_expect_object(r, v, path);
  if (!rc) rc = cplab_json_check_keys(r, v, path, keys);
  if (!rc) rc = cplab_json_get_string(r, v, path, "kernel", 1, NULL, kname, sizeof kname);
  if (!rc) rc = cplab_json_get_string(r, v, path, "case", 1, NULL, cname, sizeof cname);
  if (!rc) rc = cplab_json_get_string(r, v, path, "name", 1, NULL, e->name, sizeof e->name);
  if (!rc) rc = find_case(r, path, kname, cname, kernels, nk, e);
  if (rc) return rc;
  const json_t *shape = json_object_get(v, "shape");
  if (shape) {
    json_t *want = e->kernel->shape_json(e->kcase->shape);
    int same = json_equal((json_t *)shape, want);
    char *text = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(want);
    cplab_json_child(at, path, "shape");
    if (!same) {
      rc = cplab_json_fail(r, at, 0, CPLAB_ESCHEMA, "differs from case %s's shape %s: the file is from another case "
                           "table (run bench/kernel_peer.py again)", cname, text ? text : "");
    }
    free(text);
    if (rc) return rc;
  }
  int has_error = json_object_get(v, "error") != NULL, has_time = json_object_get(v, "median_us") != NULL;
  if (has_error == has_time)
    return cplab_json_fail(r, path, 0, CPLAB_ESCHEMA, "needs either median_us (the peer's time) or error (why it "
                           "has none), %s", has_time ? "not both" : "found neither");
  if (has_error) return cplab_json_get_string(r, v, path, "error", 1, NULL, e->error, sizeof e->error);
  e->has_time = 1;
  rc = cplab_json_get_real(r, v, path, "median_us", 1, 0, 1e-3, 1e12, &e->median_us);
  if (!rc) rc = cplab_json_get_real(r, v, path, "p10_us", 0, e->median_us, 1e-3, 1e12, &e->p10_us);
  if (!rc) rc = cplab_json_get_real(r, v, path, "p90_us", 0, e->median_us, 1e-3, 1e12, &e->p90_us);
  if (!rc && !(e->p10_us <= e->median_us && e->median_us <= e->p90_us))
    rc = cplab_json_fail(r, path, 0, CPLAB_ERANGE, "p10_us %g, median_us %g and p90_us %g are not in order", e->p10_us,
                         e->median_us, e->p90_us);
  int64_t sets;
  if (!rc) rc = cplab_json_get_int(r, v, path, "sets", 0, 1, 1, 1 << 20, &sets);
  const json_t *check = json_object_get(v, "check");
  if (!rc && check) {
    static const char *const ckeys[] = {"max_rel_l2", "max_lse_abs", NULL};
    cplab_json_child(at, path, "check");
    rc = cplab_json_expect_object(r, check, at);
    if (!rc) rc = cplab_json_check_keys(r, check, at, ckeys);
    if (!rc) rc = cplab_json_get_real(r, check, at, "max_rel_l2", 1, 0, 0, 1e300, &e->max_rel_l2);
    if (!rc) rc = cplab_json_get_real(r, check, at, "max_lse_abs", 1, 0, 0, 1e300, &e->max_lse_abs);
    e->has_check = !rc;
  }
  return rc;
}

static int parse_root(cplab_json_reader *r, const json_t *root, const cplab_kb_kernel *const *kernels, int nk,
                      cplab_kb_peers *p) {
  static const char *const keys[] = {"peer", "version", "device", "date", "command", "reps", "warmup", "entries",
                                     NULL};
  char scratch[256];
  int64_t n;
  int rc = cplab_json_expect_object(r, root, "");
  if (!rc) rc = cplab_json_check_keys(r, root, "", keys);
  if (!rc) rc = cplab_json_get_string(r, root, "", "peer", 1, NULL, p->source, sizeof p->source);
  if (!rc) rc = cplab_json_get_string(r, root, "", "version", 0, "", p->version, sizeof p->version);
  if (!rc) rc = cplab_json_get_string(r, root, "", "device", 0, "", scratch, sizeof scratch);
  if (!rc) rc = cplab_json_get_string(r, root, "", "date", 0, "", scratch, sizeof scratch);
  if (!rc) rc = cplab_json_get_int(r, root, "", "reps", 0, 1, 1, 1000000, &n);
  if (!rc) rc = cplab_json_get_int(r, root, "", "warmup", 0, 0, 0, 1000000, &n);
  const json_t *cmd = json_object_get(root, "command");
  if (!rc && cmd && !json_is_string(cmd)) rc = cplab_json_fail(r, "command", 0, CPLAB_ESCHEMA, "must be a string");
  const json_t *entries = rc ? NULL : json_object_get(root, "entries");
  if (!rc && !entries) rc = cplab_json_fail(r, "", 0, CPLAB_ESCHEMA, "missing required key 'entries'");
  if (!rc) rc = cplab_json_expect_array(r, entries, "entries", 0, MAX_PEER_ENTRIES);
  if (rc) return rc;
  p->n = json_array_size(entries);
  p->e = calloc(p->n ? p->n : 1, sizeof *p->e);
  if (!p->e) CPLAB_FAIL(r->d, CPLAB_ENOMEM, "out of memory for %zu peer entries", p->n);
  for (size_t i = 0; i < p->n; i++) {
    char at[CPLAB_PATH_MAX];
    cplab_json_index(at, "entries", i);
    if ((rc = parse_entry(r, json_array_get(entries, i), at, kernels, nk, &p->e[i])) != 0) return rc;
    for (size_t j = 0; j < i; j++)
      if (p->e[j].kcase == p->e[i].kcase) {
        char c[CPLAB_PATH_MAX];
        cplab_json_child(c, at, "case");
        return cplab_json_fail(r, c, 0, CPLAB_ESCHEMA, "case '%s' appears twice (also entries[%zu])",
                               p->e[i].kcase->name, j);
      }
  }
  return 0;
}

int cplab_kb_peers_load(const char *path, const cplab_kb_kernel *const *kernels, int nkernels, cplab_kb_peers *out,
                        cplab_diag *d) {
  char *text;
  size_t len = 0;
  memset(out, 0, sizeof *out);
  int rc = cplab_json_read_file(path, MAX_PEER_BYTES, "peer files", &text, &len, d);
  if (rc) {
    cplab_diag_prefix(d, "peer file: ");
    return rc;
  }
  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  if (!root) {
    rc = cplab_diag_set(d, CPLAB_ESYNTAX, "%s:%d:%d: JSON syntax: %s", path, err.line, err.column, err.text);
  } else {
    cplab_json_reader r;
    cplab_json_reader_init(&r, text, len, path, d);
    rc = parse_root(&r, root, kernels, nkernels, out);
    cplab_json_reader_fini(&r);
    json_decref(root);
  }
  free(text);
  if (rc) cplab_kb_peers_free(out);
  return rc;
}

const cplab_kb_peer *cplab_kb_peers_find(const cplab_kb_peers *p, const cplab_kb_case *c) {
  for (size_t i = 0; p && i < p->n; i++)
    if (p->e[i].kcase == c) return &p->e[i];
  return NULL;
}

void cplab_kb_peers_free(cplab_kb_peers *p) {
  free(p->e);
  memset(p, 0, sizeof *p);
}
