/* The device arena of both engines (arena.h): allocations that are made
 * and freed together. The per-row pass (rank.c, single.c, nccl.c, output.c)
 * holds one per row or per gather, the batched engine (engine_rank.c,
 * engine_proj.c) one per rank and step; one type, so that a buffer's
 * lifetime reads the same in both. It grows as needed: the batched engine's
 * count depends on the plan (a few per prefill row). */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

#include "cplab_kernels.h"

int exec_arena_alloc(exec_arena *a, void *out, size_t bytes, cplab_diag *d) {
  if (a->n == a->cap) {
    int cap = a->cap ? 2 * a->cap : 64;
    void **p = realloc(a->p, sizeof *p * (size_t)cap);
    if (!p) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
    a->p = p, a->cap = cap;
  }
  void *dev = NULL;
  int rc = cplab_dev_alloc(&dev, bytes ? bytes : 16, d);
  if (!rc) a->p[a->n++] = dev;
  memcpy(out, &dev, sizeof dev); /* out is the address of any pointer type */
  return rc;
}

int exec_arena_put(exec_arena *a, void *out, const void *host, size_t bytes, cplab_diag *d) {
  int rc = exec_arena_alloc(a, out, bytes, d);
  void *dev;
  memcpy(&dev, out, sizeof dev);
  if (!rc && bytes) rc = cplab_dev_upload(dev, host, bytes, d);
  return rc;
}

void exec_arena_free(exec_arena *a) {
  cplab_diag ignore = {0};
  while (a->n > 0) cplab_dev_free(a->p[--a->n], &ignore);
  free(a->p);
  memset(a, 0, sizeof *a);
}
