/* json_locate.h (internal): where each value of a JSON text sits.
 *
 * jansson reports line:column only for syntax errors. Scenario validation must
 * also point at the offending key or value ("smoke.json:12:9: parallel.dcp: ..."),
 * so after jansson has accepted a text we scan it once more and record, for
 * every value, its path (a.b[2].c) and the line:column of its key and value.
 */
#ifndef CPLAB_JSON_LOCATE_H
#define CPLAB_JSON_LOCATE_H

#include <stddef.h>

typedef struct cplab_json_pos {
  int line, col; /* 1-based; 0 when unknown */
} cplab_json_pos;

typedef struct cplab_json_locator cplab_json_locator;

/* Index a text that jansson has already parsed successfully. Returns NULL on
 * allocation failure. */
cplab_json_locator *cplab_json_locator_alloc(const char *text, size_t len);
void cplab_json_locator_free(cplab_json_locator *loc);

/* Position of the value at path ("" = the root) or of its key (for members of
 * objects; the value's position otherwise). Unknown paths give {0, 0}. */
cplab_json_pos cplab_json_locate(const cplab_json_locator *loc, const char *path, int want_key);

#endif
