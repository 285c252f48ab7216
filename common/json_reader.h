/* json_reader.h (internal): typed, located access to a parsed JSON document.
 *
 * Every accessor checks presence, type and range, and on failure records one
 * diagnostic "ORIGIN:LINE:COL: PATH: RULE" in the reader's diag. Paths use
 * dots and brackets (workload.steps[3].requests[0].new_tokens). Every object
 * may carry a "comment" string, since JSON has no comments.
 */
#ifndef CPLAB_JSON_READER_H
#define CPLAB_JSON_READER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"
#include "json_locate.h"

#define CPLAB_PATH_MAX 256

typedef struct cplab_json_reader {
  const char *text; /* the parsed text, for positions */
  size_t len;
  const char *origin;       /* file path or builtin:NAME */
  cplab_json_locator *loc;  /* built on the first error only */
  cplab_diag *d;
} cplab_json_reader;

void cplab_json_reader_init(cplab_json_reader *r, const char *text, size_t len, const char *origin, cplab_diag *d);
void cplab_json_reader_fini(cplab_json_reader *r);

/* Record an error at path (the key's position when at_key). Returns code. */
int cplab_json_fail(cplab_json_reader *r, const char *path, int at_key, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Re-home a message of the form "FIELD: RULE" (from a check function) at
 * base.FIELD, or at base when that field is not in the text. */
int cplab_json_fail_field(cplab_json_reader *r, const char *base, const cplab_diag *local);

/* parent + "." + key (or key alone at the root). */
void cplab_json_child(char *out, const char *parent, const char *key);
void cplab_json_index(char *out, const char *parent, size_t index);

const char *cplab_json_type_name(const json_t *v);

int cplab_json_expect_object(cplab_json_reader *r, const json_t *v, const char *path);
int cplab_json_expect_array(cplab_json_reader *r, const json_t *v, const char *path, size_t min, size_t max);

/* The range rules of the accessors, for values that were not read from the
 * text (a scenario built in memory: the reader then has no text, and its
 * messages name the path alone). */
int cplab_json_check_count(cplab_json_reader *r, const char *path, size_t n, size_t min, size_t max);
int cplab_json_check_int(cplab_json_reader *r, const char *path, int64_t v, int64_t min, int64_t max);
int cplab_json_check_real(cplab_json_reader *r, const char *path, double v, double min, double max);

/* Reject keys not in allowed (NULL-terminated); "comment" is always allowed
 * and must be a string. */
int cplab_json_check_keys(cplab_json_reader *r, const json_t *obj, const char *path, const char *const *allowed);

/* Member key of obj: missing -> *out = def if !required else error. */
int cplab_json_get_int(cplab_json_reader *r, const json_t *obj, const char *path, const char *key, int required,
                       int64_t def, int64_t min, int64_t max, int64_t *out);
int cplab_json_get_real(cplab_json_reader *r, const json_t *obj, const char *path, const char *key, int required,
                        double def, double min, double max, double *out);
/* Copies into buf (cap bytes); rejects control characters and overlong text. */
int cplab_json_get_string(cplab_json_reader *r, const json_t *obj, const char *path, const char *key, int required,
                          const char *def, char *buf, size_t cap);

/* The whole text of the regular file at path (NUL-terminated, malloc'd) and
 * its length: CPLAB_EIO when it cannot be opened or read or is not a regular
 * file, CPLAB_ERANGE when it is larger than max_bytes ("KIND are limited to
 * N"), CPLAB_ENOMEM. */
int cplab_json_read_file(const char *path, size_t max_bytes, const char *kind, char **text, size_t *len,
                         cplab_diag *d);

#endif
