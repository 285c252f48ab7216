/* The layouts every program knows: the table generated from the files of
 * plan/layouts/ (a layout is one file there: docs/layouts.md). */
#include <string.h>

#include "cplab/layout.h"
#include "layout_table.h"

const cplab_layout *const *cplab_layouts(void) { return cplab_layout_table; }

const cplab_layout *cplab_layout_find(const char *name) {
  for (const cplab_layout *const *l = cplab_layout_table; *l; l++)
    if (strcmp((*l)->name, name) == 0) return *l;
  return NULL;
}

static const char *const catch_names[CPLAB_CATCH_COUNT] = {
    "cplab-sim",          "cplab-sim --check",           "cplab-diff --ranks",
    "cplab-diff vllm (plans)", "cplab-diff vllm (--numeric)", "cplab-exec --plans-only",
};

const char *cplab_layout_catch_name(cplab_layout_catch c) {
  return c >= 0 && c < CPLAB_CATCH_COUNT ? catch_names[c] : "?";
}

/* A field of the catalogue; tabs and newlines would break its lines. */
static void put_field(FILE *out, const char *text) {
  for (const char *p = text ? text : ""; *p; p++) fputc(*p == '\t' || *p == '\n' ? ' ' : *p, out);
}

int cplab_layout_catalogue_write(FILE *out) {
  fputs("# mutant\tbug\tbreaks\tneeds", out);
  for (int c = 0; c < CPLAB_CATCH_COUNT; c++) fprintf(out, "\t%s", catch_names[c]);
  fputc('\n', out);
  for (const cplab_layout *const *l = cplab_layout_table; *l; l++) {
    if (!(*l)->mutant) continue;
    fputs((*l)->name, out);
    const char *fields[3] = {(*l)->reproduces, (*l)->breaks, (*l)->needs};
    for (int f = 0; f < 3; f++) fputc('\t', out), put_field(out, fields[f]);
    for (int c = 0; c < CPLAB_CATCH_COUNT; c++) fputc('\t', out), put_field(out, (*l)->caught[c]);
    fputc('\n', out);
  }
  return ferror(out) ? CPLAB_EIO : 0;
}
