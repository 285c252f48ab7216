/* cplab/log.h: leveled logging with a program and rank prefix.
 *
 * A cplab_log is caller-owned (no global logger): main() sets it up, and code
 * that needs to log receives it. Lines look like
 *   cplab-sim[r3] warn: message
 * (the [rN] part only once a rank is known).
 */
#ifndef CPLAB_LOG_H
#define CPLAB_LOG_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cplab_log_level {
  CPLAB_LOG_QUIET = -1, /* nothing, not even errors (use with care) */
  CPLAB_LOG_ERROR = 0,
  CPLAB_LOG_WARN = 1,
  CPLAB_LOG_INFO = 2,
  CPLAB_LOG_DEBUG = 3,
} cplab_log_level;

typedef struct cplab_log {
  const char *prog;      /* program name, e.g. "cplab-sim" */
  int rank;              /* global rank, or -1 when not known/meaningful */
  cplab_log_level level; /* messages above this level are dropped */
  FILE *stream;          /* usually stderr */
} cplab_log;

/* Defaults: level WARN, rank -1, stream stderr. */
void cplab_log_init(cplab_log *log, const char *prog);

/* Parse "error", "warn", "info", "debug" (or 0..3); returns 0 or CPLAB_EINVAL. */
int cplab_log_level_parse(const char *text, cplab_log_level *out);

void cplab_log_printf(const cplab_log *log, cplab_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define cplab_log_error(log, ...) cplab_log_printf((log), CPLAB_LOG_ERROR, __VA_ARGS__)
#define cplab_log_warn(log, ...) cplab_log_printf((log), CPLAB_LOG_WARN, __VA_ARGS__)
#define cplab_log_info(log, ...) cplab_log_printf((log), CPLAB_LOG_INFO, __VA_ARGS__)
#define cplab_log_debug(log, ...) cplab_log_printf((log), CPLAB_LOG_DEBUG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_LOG_H */
