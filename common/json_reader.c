/* Typed, located JSON access: see json_reader.h. */
#include "json_reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cplab_json_reader_init(cplab_json_reader *r, const char *text, size_t len, const char *origin, cplab_diag *d) {
  *r = (cplab_json_reader){text, len, origin, NULL, d};
}

void cplab_json_reader_fini(cplab_json_reader *r) {
  cplab_json_locator_free(r->loc);
  r->loc = NULL;
}

/* Position of path, or of its nearest ancestor present in the text. */
static cplab_json_pos locate_nearest(const cplab_json_locator *loc, const char *path, int at_key) {
  char buf[CPLAB_PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  for (;;) {
    cplab_json_pos pos = cplab_json_locate(loc, buf, at_key);
    if (pos.line || buf[0] == '\0') return pos;
    char *cut = strrchr(buf, '.');
    char *bracket = strrchr(buf, '[');
    if (bracket && (!cut || bracket > cut)) cut = bracket;
    if (cut) *cut = '\0';
    else buf[0] = '\0';
    at_key = 0;
  }
}

int cplab_json_fail(cplab_json_reader *r, const char *path, int at_key, int code, const char *fmt, ...) {
  char msg[CPLAB_DIAG_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!r->loc && r->text) r->loc = cplab_json_locator_alloc(r->text, r->len);
  cplab_json_pos pos = locate_nearest(r->loc, path, at_key);
  const char *shown = path[0] ? path : "(top level)";
  if (pos.line) return cplab_diag_set(r->d, code, "%s:%d:%d: %s: %s", r->origin, pos.line, pos.col, shown, msg);
  return cplab_diag_set(r->d, code, "%s: %s: %s", r->origin, shown, msg);
}

int cplab_json_fail_field(cplab_json_reader *r, const char *base, const cplab_diag *local) {
  const char *sep = strstr(local->msg, ": ");
  if (!sep) return cplab_json_fail(r, base, 0, local->code, "%s", local->msg);
  char field[CPLAB_PATH_MAX], path[CPLAB_PATH_MAX];
  size_t n = (size_t)(sep - local->msg);
  if (n >= sizeof field) n = sizeof field - 1;
  memcpy(field, local->msg, n);
  field[n] = '\0';
  cplab_json_child(path, base, field);
  return cplab_json_fail(r, path, 0, local->code, "%s", sep + 2);
}

void cplab_json_child(char *out, const char *parent, const char *key) {
  if (parent[0]) snprintf(out, CPLAB_PATH_MAX, "%s.%s", parent, key);
  else snprintf(out, CPLAB_PATH_MAX, "%s", key);
}

void cplab_json_index(char *out, const char *parent, size_t index) {
  snprintf(out, CPLAB_PATH_MAX, "%s[%zu]", parent, index);
}

const char *cplab_json_type_name(const json_t *v) {
  switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
  }
  return "an unknown value";
}

int cplab_json_expect_object(cplab_json_reader *r, const json_t *v, const char *path) {
  if (!json_is_object(v))
    return cplab_json_fail(r, path, 0, CPLAB_ESCHEMA, "expected an object, got %s", cplab_json_type_name(v));
  return 0;
}

int cplab_json_expect_array(cplab_json_reader *r, const json_t *v, const char *path, size_t min, size_t max) {
  if (!json_is_array(v))
    return cplab_json_fail(r, path, 0, CPLAB_ESCHEMA, "expected an array, got %s", cplab_json_type_name(v));
  return cplab_json_check_count(r, path, json_array_size(v), min, max);
}

int cplab_json_check_count(cplab_json_reader *r, const char *path, size_t n, size_t min, size_t max) {
  if (n < min || n > max)
    return cplab_json_fail(r, path, 0, CPLAB_ERANGE, "must have between %zu and %zu entries, got %zu", min, max, n);
  return 0;
}

int cplab_json_check_int(cplab_json_reader *r, const char *path, int64_t v, int64_t min, int64_t max) {
  if (v < min || v > max)
    return cplab_json_fail(r, path, 0, CPLAB_ERANGE, "must be in [%lld, %lld], got %lld", (long long)min,
                           (long long)max, (long long)v);
  return 0;
}

int cplab_json_check_real(cplab_json_reader *r, const char *path, double v, double min, double max) {
  if (!(v >= min && v <= max))
    return cplab_json_fail(r, path, 0, CPLAB_ERANGE, "must be in [%g, %g], got %g", min, max, v);
  return 0;
}

int cplab_json_check_keys(cplab_json_reader *r, const json_t *obj, const char *path, const char *const *allowed) {
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    char child[CPLAB_PATH_MAX];
    cplab_json_child(child, path, key);
    if (strcmp(key, "comment") == 0) {
      if (!json_is_string(v))
        return cplab_json_fail(r, child, 0, CPLAB_ESCHEMA, "expected a string, got %s", cplab_json_type_name(v));
      continue;
    }
    int known = 0;
    for (const char *const *a = allowed; *a && !known; a++) known = strcmp(*a, key) == 0;
    if (!known) {
      char list[512] = "";
      size_t used = 0;
      for (const char *const *a = allowed; *a && used < sizeof list; a++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", a == allowed ? "" : ", ", *a);
      return cplab_json_fail(r, child, 1, CPLAB_ESCHEMA, "unknown key '%s' (allowed here: %s)", key, list);
    }
  }
  return 0;
}

/* Member key of obj, checked for presence (when required) and type. Returns
 * NULL when absent (*rc = 0, or the missing-key error) or mistyped (*rc set);
 * child receives the member's path. */
static const json_t *typed_member(cplab_json_reader *r, const json_t *obj, const char *path, const char *key,
                                  int required, int (*has_type)(const json_t *), const char *type_word,
                                  char *child, int *rc) {
  *rc = 0;
  cplab_json_child(child, path, key);
  const json_t *v = json_object_get(obj, key);
  if (!v) {
    if (required) *rc = cplab_json_fail(r, path, 0, CPLAB_ESCHEMA, "missing required key '%s'", key);
    return NULL;
  }
  if (!has_type(v)) {
    *rc = cplab_json_fail(r, child, 0, CPLAB_ESCHEMA, "expected %s, got %s", type_word, cplab_json_type_name(v));
    return NULL;
  }
  return v;
}

/* jansson's type tests are macros; these give them addresses. */
static int is_integer(const json_t *v) { return json_is_integer(v); }
static int is_number(const json_t *v) { return json_is_number(v); }
static int is_string(const json_t *v) { return json_is_string(v); }

int cplab_json_get_int(cplab_json_reader *r, const json_t *obj, const char *path, const char *key, int required,
                       int64_t def, int64_t min, int64_t max, int64_t *out) {
  int rc;
  char child[CPLAB_PATH_MAX];
  const json_t *v = typed_member(r, obj, path, key, required, is_integer, "an integer", child, &rc);
  if (!v) {
    if (!rc) *out = def;
    return rc;
  }
  json_int_t x = json_integer_value(v);
  if ((rc = cplab_json_check_int(r, child, (int64_t)x, min, max))) return rc;
  *out = (int64_t)x;
  return 0;
}

int cplab_json_get_real(cplab_json_reader *r, const json_t *obj, const char *path, const char *key, int required,
                        double def, double min, double max, double *out) {
  int rc;
  char child[CPLAB_PATH_MAX];
  const json_t *v = typed_member(r, obj, path, key, required, is_number, "a number", child, &rc);
  if (!v) {
    if (!rc) *out = def;
    return rc;
  }
  double x = json_number_value(v);
  if ((rc = cplab_json_check_real(r, child, x, min, max))) return rc;
  *out = x;
  return 0;
}

int cplab_json_get_string(cplab_json_reader *r, const json_t *obj, const char *path, const char *key, int required,
                          const char *def, char *buf, size_t cap) {
  int rc;
  char child[CPLAB_PATH_MAX];
  const json_t *v = typed_member(r, obj, path, key, required, is_string, "a string", child, &rc);
  if (rc) return rc;
  const char *s = v ? json_string_value(v) : def;
  size_t n = strlen(s);
  if (n >= cap)
    return cplab_json_fail(r, child, 0, CPLAB_ERANGE, "must be shorter than %zu characters, got %zu", cap, n);
  for (const char *p = s; *p; p++)
    if ((unsigned char)*p < 0x20)
      return cplab_json_fail(r, child, 0, CPLAB_ESCHEMA, "must not contain control characters");
  memcpy(buf, s, n + 1);
  return 0;
}

int cplab_json_read_file(const char *path, size_t max_bytes, const char *kind, char **text, size_t *len,
                         cplab_diag *d) {
  struct stat st;
  *text = NULL, *len = 0;
  if (stat(path, &st) != 0) CPLAB_FAIL(d, CPLAB_EIO, "cannot open '%s': %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) CPLAB_FAIL(d, CPLAB_EIO, "'%s' is not a regular file", path);
  if ((size_t)st.st_size > max_bytes)
    CPLAB_FAIL(d, CPLAB_ERANGE, "'%s' is %lld bytes; %s are limited to %zu", path, (long long)st.st_size, kind,
               max_bytes);
  FILE *f = fopen(path, "rb");
  if (!f) CPLAB_FAIL(d, CPLAB_EIO, "cannot open '%s': %s", path, strerror(errno));
  char *buf = malloc((size_t)st.st_size + 1);
  if (!buf) {
    fclose(f);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory reading '%s'", path);
  }
  size_t n = fread(buf, 1, (size_t)st.st_size, f);
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    CPLAB_FAIL(d, CPLAB_EIO, "cannot read '%s'", path);
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return 0;
}
