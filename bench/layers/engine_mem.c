/* The engine's device arena (engine_mem, engine_internal.h): allocations
 * that a rank's buffers, its index lists and the projections' weights share
 * and free together. Its own room, below engine_rank.c and engine_proj.c,
 * which both allocate from it (so neither needs the other's allocator). */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

int engine_mem_alloc(engine_mem *m, void *out, size_t bytes, cplab_diag *d) {
  if (m->n == m->cap) {
    int cap = m->cap ? 2 * m->cap : 64;
    void **p = realloc(m->p, sizeof *p * (size_t)cap);
    if (!p) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
    m->p = p, m->cap = cap;
  }
  void *dev = NULL;
  int rc = cplab_dev_alloc(&dev, bytes ? bytes : 16, d);
  if (!rc) m->p[m->n++] = dev;
  memcpy(out, &dev, sizeof dev); /* out is the address of any pointer type */
  return rc;
}

int engine_mem_put(engine_mem *m, void *out, const void *host, size_t bytes, cplab_diag *d) {
  int rc = engine_mem_alloc(m, out, bytes, d);
  void *dev;
  memcpy(&dev, out, sizeof dev);
  if (!rc && bytes) rc = cplab_dev_upload(dev, host, bytes, d);
  return rc;
}

void engine_mem_free(engine_mem *m) {
  cplab_diag ignore = {0};
  while (m->n > 0) cplab_dev_free(m->p[--m->n], &ignore);
  free(m->p);
  memset(m, 0, sizeof *m);
}
