/* Leveled logging: see include/cplab/log.h. */
#include "cplab/log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/error.h"

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void cplab_log_init(cplab_log *log, const char *prog) {
  log->prog = prog;
  log->rank = -1;
  log->level = CPLAB_LOG_WARN;
  log->stream = stderr;
}

int cplab_log_level_parse(const char *text, cplab_log_level *out) {
  for (int i = 0; i < 4; i++) {
    if (strcmp(text, level_names[i]) == 0 || (text[0] == '0' + i && text[1] == '\0')) {
      *out = (cplab_log_level)i;
      return 0;
    }
  }
  return CPLAB_EINVAL;
}

void cplab_log_printf(const cplab_log *log, cplab_log_level level, const char *fmt, ...) {
  if (!log || level > log->level || level < CPLAB_LOG_ERROR) return;
  FILE *s = log->stream ? log->stream : stderr;
  /* Build the whole line first so concurrent ranks do not interleave mid-line. */
  char line[2048];
  int n;
  if (log->rank >= 0)
    n = snprintf(line, sizeof line, "%s[r%d] %s: ", log->prog, log->rank, level_names[level]);
  else
    n = snprintf(line, sizeof line, "%s: %s: ", log->prog, level_names[level]);
  if (n < 0) return;
  if ((size_t)n < sizeof line) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
  }
  fprintf(s, "%s\n", line);
  fflush(s);
}
