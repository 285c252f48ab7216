/* Atomic file writes: see include/cplab/atomic.h. */
#include "cplab/atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporary file, open for writing in *fd. */
static int begin_fd(const char *path, char **tmp, int *fd, cplab_diag *d) {
  size_t n = strlen(path) + 16;
  *tmp = malloc(n);
  if (!*tmp) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  snprintf(*tmp, n, "%s.tmp.XXXXXX", path);
  *fd = mkstemp(*tmp);
  int rc = 0;
  if (*fd < 0)
    rc = cplab_diag_set(d, CPLAB_EIO, "cannot create a temporary file beside '%s': %s", path, strerror(errno));
  else if (fchmod(*fd, 0644) != 0) {
    rc = cplab_diag_set(d, CPLAB_EIO, "cannot chmod '%s': %s", *tmp, strerror(errno));
    close(*fd);
    unlink(*tmp);
  }
  if (rc) {
    free(*tmp);
    *tmp = NULL;
    *fd = -1;
  }
  return rc;
}

int cplab_atomic_begin(const char *path, char **tmp, cplab_diag *d) {
  int fd, rc = begin_fd(path, tmp, &fd, d);
  if (!rc && close(fd) != 0) {
    rc = cplab_diag_set(d, CPLAB_EIO, "cannot close '%s': %s", *tmp, strerror(errno));
    unlink(*tmp);
    free(*tmp);
    *tmp = NULL;
  }
  return rc;
}

int cplab_atomic_commit(const char *tmp, const char *path, cplab_diag *d) {
  /* On disk before it gets its name: a rename can reach the disk before the
   * data it names. Any descriptor's fsync flushes the file's data. */
  int fd = open(tmp, O_RDONLY), rc = 0;
  if (fd < 0 || fsync(fd) != 0)
    rc = cplab_diag_set(d, CPLAB_EIO, "cannot flush '%s' to disk: %s", tmp, strerror(errno));
  if (fd >= 0) close(fd);
  if (!rc && rename(tmp, path) != 0)
    rc = cplab_diag_set(d, CPLAB_EIO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
  if (rc) unlink(tmp);
  return rc;
}

int cplab_atomic_write(const char *path, const void *data, size_t len, cplab_diag *d) {
  char *tmp;
  int fd, rc = begin_fd(path, &tmp, &fd, d);
  if (rc) return rc;
  const char *p = data;
  while (len > 0 && rc == 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) rc = cplab_diag_set(d, CPLAB_EIO, "cannot write '%s': %s", tmp, strerror(errno));
    else {
      p += w;
      len -= (size_t)w;
    }
  }
  if (close(fd) != 0 && rc == 0) rc = cplab_diag_set(d, CPLAB_EIO, "cannot close '%s': %s", tmp, strerror(errno));
  if (rc == 0) rc = cplab_atomic_commit(tmp, path, d);
  else unlink(tmp);
  free(tmp);
  return rc;
}
