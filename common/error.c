/* Error codes and diagnostics: see include/cplab/error.h. */
#include "cplab/error.h"

#include <stdarg.h>
#include <string.h>

const char *cplab_strerror(int code) {
  switch (code) {
#define CPLAB_ERRNO_DESC_(name, value, desc) \
  case (value):                              \
    return (desc);
    CPLAB_ERRNO_MAP(CPLAB_ERRNO_DESC_)
#undef CPLAB_ERRNO_DESC_
  }
  return "unknown error";
}

const char *cplab_err_name(int code) {
  switch (code) {
#define CPLAB_ERRNO_NAME_(name, value, desc) \
  case (value):                              \
    return "CPLAB_" #name;
    CPLAB_ERRNO_MAP(CPLAB_ERRNO_NAME_)
#undef CPLAB_ERRNO_NAME_
  }
  return "CPLAB_E?";
}

void cplab_diag_clear(cplab_diag *d) {
  if (d) {
    d->code = 0;
    d->msg[0] = '\0';
  }
}

/* Break here to stop at the first error any cplab function detects. */
int cplab_diag_set(cplab_diag *d, int code, const char *fmt, ...) {
  if (!d || d->code != 0) return code;
  d->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
  va_end(ap);
  /* One line only: a message must not forge further report lines. */
  for (char *p = d->msg; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  return code;
}

void cplab_diag_prefix(cplab_diag *d, const char *fmt, ...) {
  if (!d || d->code == 0) return;
  char both[2 * CPLAB_DIAG_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(both, CPLAB_DIAG_MSG_MAX, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t used = (size_t)n < CPLAB_DIAG_MSG_MAX ? (size_t)n : CPLAB_DIAG_MSG_MAX - 1;
  size_t len = strlen(d->msg);
  memcpy(both + used, d->msg, len + 1);
  size_t total = used + len;
  if (total >= CPLAB_DIAG_MSG_MAX) total = CPLAB_DIAG_MSG_MAX - 1;
  memcpy(d->msg, both, total);
  d->msg[total] = '\0';
}

void cplab_diag_report(FILE *stream, const char *prog, const cplab_diag *d) {
  const char *msg = (d && d->msg[0]) ? d->msg : cplab_strerror(d ? d->code : CPLAB_EINTERNAL);
  fprintf(stream, "%s: error: %s [%s]\n", prog, msg, cplab_err_name(d ? d->code : CPLAB_EINTERNAL));
}
