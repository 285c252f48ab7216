/* include/cplab/atomic.h: atomic file writes, the one home of the rule
 * "write beside the target, flush, then rename over it" (DESIGN.md,
 * Traces: writes are atomic). After a crash the target holds the old file
 * or the complete new one, never a partial one. Plain text, HDF5 files
 * and gnuplot's images all go through these. */
#ifndef CPLAB_ATOMIC_H
#define CPLAB_ATOMIC_H

#include <stddef.h>

#include "cplab/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Create an empty temporary file beside path (path.tmp.XXXXXX, mode 0644:
 * an ordinary shareable file, not mkstemp's 0600) for the caller to fill
 * by name (HDF5 opens it itself). *tmp is malloc'd; the caller frees it.
 * On failure nothing is left on disk and *tmp is NULL. */
int cplab_atomic_begin(const char *path, char **tmp, cplab_diag *d);

/* Flush the finished file tmp to disk and rename it to path. On failure tmp
 * is removed and path is untouched. */
int cplab_atomic_commit(const char *tmp, const char *path, cplab_diag *d);

/* Write len bytes to path atomically (begin, write, commit). */
int cplab_atomic_write(const char *path, const void *data, size_t len, cplab_diag *d);

#ifdef __cplusplus
}
#endif

#endif
