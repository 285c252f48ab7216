/* exec/arena.h: device allocations freed together, the one arena of both
 * engines (the per-row pass and the batched engine; arena.c). Zero-
 * initialise (exec_arena a = {0}), allocate any number, free all at once. */
#ifndef CPLAB_EXEC_ARENA_H
#define CPLAB_EXEC_ARENA_H

#include <stddef.h>

#include "cplab/error.h"

typedef struct exec_arena {
  void **p;
  int n, cap;
} exec_arena;

/* A device allocation of bytes (16 for 0) into *out, which is the address
 * of a pointer of any type (void **, uint16_t **, ...). */
int exec_arena_alloc(exec_arena *a, void *out, size_t bytes, cplab_diag *d);
/* The same, with host's bytes uploaded (synchronously). */
int exec_arena_put(exec_arena *a, void *out, const void *host, size_t bytes, cplab_diag *d);
/* Every allocation freed; a is empty (and reusable) after. */
void exec_arena_free(exec_arena *a);

#endif
