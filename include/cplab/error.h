/* cplab/error.h: the one list of error codes and the one way to report them.
 *
 * Every failing cplab function returns a negative code from CPLAB_ERRNO_MAP and,
 * when the caller passed a cplab_diag, a message naming the problem
 * (file:line:column, the field, the rule). Set errors only through
 * cplab_diag_set() (or CPLAB_FAIL): it is the single place to break on in a
 * debugger. Programs print them only through cplab_diag_report().
 */
#ifndef CPLAB_ERROR_H
#define CPLAB_ERROR_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* XX(name, value, description). Values are stable: they appear in JSON output. */
#define CPLAB_ERRNO_MAP(XX)                                                      \
  XX(OK, 0, "success")                                                           \
  XX(EINVAL, -1, "invalid argument")                                             \
  XX(ENOMEM, -2, "out of memory")                                                \
  XX(EIO, -3, "input/output error")                                              \
  XX(ESYNTAX, -4, "malformed input syntax")                                      \
  XX(ESCHEMA, -5, "input does not follow the schema")                            \
  XX(ERANGE, -6, "value out of range")                                           \
  XX(EUNSUPPORTED, -7, "unsupported combination")                                \
  XX(ENOTFOUND, -8, "not found")                                                 \
  XX(EOVERFLOW, -9, "size overflow")                                             \
  XX(EUSAGE, -10, "bad command line")                                            \
  XX(EMPI, -11, "MPI call failed")                                               \
  XX(ECUDA, -12, "CUDA call failed")                                             \
  XX(ENCCL, -13, "NCCL call failed")                                             \
  XX(EHDF5, -14, "HDF5 call failed")                                             \
  XX(ENODEV, -15, "no usable GPU")                                               \
  XX(EINTERNAL, -16, "internal error (a cplab bug)")                             \
  XX(EDISAGREE, -17, "ranks disagree on a plan (a real run would hang)")         \
  XX(EMISMATCH, -18, "a computed result differs from its reference")

typedef enum cplab_errno {
#define CPLAB_ERRNO_ENUM_(name, value, desc) CPLAB_##name = (value),
  CPLAB_ERRNO_MAP(CPLAB_ERRNO_ENUM_)
#undef CPLAB_ERRNO_ENUM_
} cplab_errno;

/* "invalid argument" for CPLAB_EINVAL; "unknown error" for anything else. */
const char *cplab_strerror(int code);
/* "CPLAB_EINVAL" for CPLAB_EINVAL; "CPLAB_E?" for anything else. */
const char *cplab_err_name(int code);

#define CPLAB_DIAG_MSG_MAX 1024

/* What went wrong, for the caller to report. Caller-owned; zero-initialise. */
typedef struct cplab_diag {
  int code;                       /* 0 or a negative cplab_errno */
  char msg[CPLAB_DIAG_MSG_MAX];   /* one line, no trailing newline */
} cplab_diag;

/* Record an error in d (d may be NULL) and return code. The first error wins:
 * a later call does not overwrite a message already set, so the root cause
 * survives the unwinding through callers. */
int cplab_diag_set(cplab_diag *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Put context in front of the message already recorded ("step 3, rank 1: "
 * + message), for callers that know where the error happened. */
void cplab_diag_prefix(cplab_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clear d for reuse. */
void cplab_diag_clear(cplab_diag *d);

/* Return from the current function with code, recording the message. */
#define CPLAB_FAIL(diag, code, ...) return cplab_diag_set((diag), (code), __VA_ARGS__)

/* Print "PROG: error: MESSAGE [CPLAB_EXXX]" to stream: the one reporting path
 * of every program. */
void cplab_diag_report(FILE *stream, const char *prog, const cplab_diag *d);

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_ERROR_H */
