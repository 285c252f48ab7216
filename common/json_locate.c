/* JSON value positions: see json_locate.h. The text is known to be valid JSON,
 * so the scanner only needs to track structure, strings and positions. */
#include "json_locate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  char *path;
  cplab_json_pos key, value;
} entry;

struct cplab_json_locator {
  entry *items;
  size_t count, cap;
};

typedef struct scanner {
  const char *s;
  size_t len, i;
  int line, col;
  cplab_json_locator *loc;
  int failed;
} scanner;

static void advance(scanner *sc) {
  if (sc->i >= sc->len) return;
  unsigned char c = (unsigned char)sc->s[sc->i++];
  if (c == '\n') {
    sc->line++;
    sc->col = 1;
  } else if ((c & 0xC0) != 0x80) { /* count characters, not UTF-8 continuation bytes */
    sc->col++;
  }
}

static void skip_ws(scanner *sc) {
  while (sc->i < sc->len && strchr(" \t\r\n", sc->s[sc->i]) && sc->s[sc->i] != '\0') advance(sc);
}

static cplab_json_pos here(const scanner *sc) { return (cplab_json_pos){sc->line, sc->col}; }

static int record(scanner *sc, const char *path, cplab_json_pos key, cplab_json_pos value) {
  cplab_json_locator *loc = sc->loc;
  if (loc->count == loc->cap) {
    size_t cap = loc->cap ? 2 * loc->cap : 64;
    entry *n = realloc(loc->items, cap * sizeof *n);
    if (!n) return -1;
    loc->items = n;
    loc->cap = cap;
  }
  char *p = strdup(path);
  if (!p) return -1;
  loc->items[loc->count++] = (entry){p, key, value};
  return 0;
}

/* Skip a string starting at '"'; copy its raw contents into out (may be NULL). */
static void scan_string(scanner *sc, char *out, size_t cap) {
  size_t n = 0;
  advance(sc); /* opening quote */
  while (sc->i < sc->len && sc->s[sc->i] != '"') {
    if (sc->s[sc->i] == '\\') {
      if (out && n + 1 < cap) out[n++] = sc->s[sc->i];
      advance(sc);
    }
    if (out && n + 1 < cap && sc->i < sc->len) out[n++] = sc->s[sc->i];
    advance(sc);
  }
  advance(sc); /* closing quote */
  if (out) out[n] = '\0';
}

static void scan_value(scanner *sc, const char *path, cplab_json_pos key);

static void scan_child(scanner *sc, const char *child, cplab_json_pos key) {
  skip_ws(sc);
  scan_value(sc, child, key);
  skip_ws(sc);
}

static void scan_value(scanner *sc, const char *path, cplab_json_pos key) {
  cplab_json_pos vpos = here(sc);
  if (record(sc, path, key.line ? key : vpos, vpos) != 0) {
    sc->failed = 1;
    return;
  }
  size_t plen = strlen(path);
  char c = sc->i < sc->len ? sc->s[sc->i] : '\0';
  if (c == '{') {
    advance(sc);
    skip_ws(sc);
    while (!sc->failed && sc->i < sc->len && sc->s[sc->i] != '}') {
      char name[256];
      cplab_json_pos kpos = here(sc);
      scan_string(sc, name, sizeof name);
      skip_ws(sc);
      advance(sc); /* ':' */
      char *child = malloc(plen + strlen(name) + 2);
      if (!child) {
        sc->failed = 1;
        return;
      }
      sprintf(child, plen ? "%s.%s" : "%s%s", path, name);
      scan_child(sc, child, kpos);
      free(child);
      if (sc->i < sc->len && sc->s[sc->i] == ',') {
        advance(sc);
        skip_ws(sc);
      }
    }
    advance(sc);
  } else if (c == '[') {
    advance(sc);
    skip_ws(sc);
    for (size_t idx = 0; !sc->failed && sc->i < sc->len && sc->s[sc->i] != ']'; idx++) {
      char *child = malloc(plen + 24);
      if (!child) {
        sc->failed = 1;
        return;
      }
      sprintf(child, "%s[%zu]", path, idx);
      scan_child(sc, child, (cplab_json_pos){0, 0});
      free(child);
      if (sc->i < sc->len && sc->s[sc->i] == ',') {
        advance(sc);
        skip_ws(sc);
      }
    }
    advance(sc);
  } else if (c == '"') {
    scan_string(sc, NULL, 0);
  } else {
    while (sc->i < sc->len && !strchr(",]} \t\r\n", sc->s[sc->i])) advance(sc);
  }
}

cplab_json_locator *cplab_json_locator_alloc(const char *text, size_t len) {
  cplab_json_locator *loc = calloc(1, sizeof *loc);
  if (!loc) return NULL;
  scanner sc = {text, len, 0, 1, 1, loc, 0};
  skip_ws(&sc);
  scan_value(&sc, "", (cplab_json_pos){0, 0});
  if (sc.failed) {
    cplab_json_locator_free(loc);
    return NULL;
  }
  return loc;
}

void cplab_json_locator_free(cplab_json_locator *loc) {
  if (!loc) return;
  for (size_t i = 0; i < loc->count; i++) free(loc->items[i].path);
  free(loc->items);
  free(loc);
}

cplab_json_pos cplab_json_locate(const cplab_json_locator *loc, const char *path, int want_key) {
  if (loc)
    for (size_t i = 0; i < loc->count; i++)
      if (strcmp(loc->items[i].path, path) == 0) return want_key ? loc->items[i].key : loc->items[i].value;
  return (cplab_json_pos){0, 0};
}
