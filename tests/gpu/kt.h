/* tests/gpu/kt.h: what the kernel tests share (tests/gpu/test_gpu_*.c).
 *
 * Each test program checks one group of kernels of cplab_kernels.h against
 * the C references (cplab/kvformat.h, sim/, plan/layouts), prints one line
 * per check ("PASS: what: counts, max errors" or "FAIL: ..."), and exits 0
 * when every check passed, 1 otherwise, 77 (skip) when the process sees no
 * GPU. Setup failures (a launcher or CUDA error) end the program at once with
 * exit 1 and the message. Random cases come from a splitmix64 stream seeded
 * by CPLAB_TEST_SEED (default fixed), printed at start for replay. */
#ifndef CPLAB_TESTS_GPU_KT_H
#define CPLAB_TESTS_GPU_KT_H

#include <stddef.h>
#include <stdint.h>

#include "cplab_kernels.h"

/* Print the device; exit 77 when there is none. Seeds *rng. */
void kt_begin(const char *prog, uint64_t *rng);
/* 1 unless CPLAB_KT_SMALL=1: the cases at a model's real size (tens of GB
 * of generated weights) run only then. The CPU emulation of the kernels
 * (tests/emu) sets it; a GPU run leaves it unset. The skip is printed. */
int kt_model_size(const char *what);

/* Exit status of the program: 0 if every check passed, else 1. */
int kt_end(void);

/* A check: prints PASS/FAIL with the formatted detail, counts failures. */
void kt_check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Launcher results: a nonzero rc ends the program (exit 1) with d's message. */
void kt_ok(int rc, const char *what);

/* Device memory; any failure ends the program. */
void *kt_dev(size_t bytes);
void *kt_dev_from(const void *host, size_t bytes); /* allocate and upload */
void kt_down(void *host, const void *dev, size_t bytes);
void kt_sync(void);
void kt_free(void *dev);
/* Host memory (calloc); exits on failure. */
void *kt_host(size_t bytes);

/* The shared diag the tests pass to launchers. */
cplab_diag *kt_diag(void);

/* splitmix64 stream. */
uint64_t kt_next(uint64_t *s);
/* Uniform integer in [lo, hi]. */
int64_t kt_int(uint64_t *s, int64_t lo, int64_t hi);
/* Uniform double in [0, 1). */
double kt_unit(uint64_t *s);

/* bf16 bit pattern -> double, exact. */
double kt_bf16(uint16_t b);

#endif
