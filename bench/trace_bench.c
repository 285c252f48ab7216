/* cplab-trace-bench: write and read throughput of a 1 GiB trace against plain
 * fwrite/fread of the same bytes, on the same disk, in the same run.
 *
 * The trace: one rank file of the smoke scenario whose step 0 holds 16 layer
 * tensors kv_cache [102261, 656] uint8 (fp8-like bytes), 1.0 GiB in all,
 * contiguous and unfiltered (the schema's choice for high-entropy payloads), plus
 * one deflated tensor to show what compression would cost. Both writes end
 * durable on disk (the trace commit fsyncs before its rename; the plain file
 * gets fflush + fsync), since page-cache-only timings mostly measure the
 * kernel's dirty-page throttling. Timings are
 * CLOCK_MONOTONIC wall times of the whole operation (create .. commit; open
 * .. read everything), the median of --reps (sides alternate which goes
 * first); files live in --dir (default /tmp) and are removed after every
 * repetition. Page cache is not dropped, for either side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "cplab/stats.h"
#include "cplab/trace.h"

#define PROG "cplab-trace-bench"
#define LAYERS 16
#define ROWS 102261 /* 102261 · 656 B = 64.0 MiB */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double median(double *v, int n) { return cplab_stats_median(v, (size_t)n); }

typedef struct sizes {
  uint64_t dims[2];
  size_t bytes;
} sizes;

static int write_trace(const char *path, const cplab_scenario *s, const uint8_t *buf, const sizes *z, int layers,
                       int compress, double *secs, cplab_diag *d) {
  static const cplab_trace_provenance prov = {"sim", PROG, NULL, NULL, NULL, NULL, NULL};
  double t0 = now();
  cplab_trace_writer *w = NULL;
  int rc = cplab_trace_create(path, s, 0, &prov, &w, d);
  cplab_step_input in = {&s->steps[0], 0, s->seed, &s->par, &s->model, cplab_layout_find("vllm")};
  cplab_rank_plan *p = NULL;
  if (!rc) rc = cplab_rank_plan_derive(&in, 0, 0, &p, d);
  if (!rc) rc = cplab_trace_write_plan(w, 0, p, d);
  cplab_rank_plan_free(p);
  for (int l = 0; !rc && l < layers; l++)
    rc = cplab_trace_write_tensor(w, 0, l, CPLAB_TT_KV_CACHE, z->dims, buf, compress, d);
  if (!rc) rc = cplab_trace_commit(w, d);
  else cplab_trace_abort(w);
  *secs = now() - t0;
  return rc;
}

static int read_trace(const char *path, const uint8_t *buf, const sizes *z, double *secs, cplab_diag *d) {
  double t0 = now();
  cplab_trace *t = NULL;
  int rc = cplab_trace_open(path, &t, d);
  for (int l = 0; !rc && l < LAYERS; l++) {
    uint64_t dims[3];
    void *data = NULL;
    rc = cplab_trace_read_tensor(t, 0, l, CPLAB_TT_KV_CACHE, dims, &data, d);
    if (!rc && (dims[0] != z->dims[0] || (l == 0 && memcmp(data, buf, z->bytes) != 0)))
      rc = cplab_diag_set(d, CPLAB_EINTERNAL, "tensor %d read back differently", l);
    free(data);
  }
  cplab_trace_close(t);
  *secs = now() - t0;
  return rc;
}

static int plain_write(const char *path, const uint8_t *buf, const sizes *z, double *secs, cplab_diag *d) {
  double t0 = now();
  FILE *f = fopen(path, "wb");
  if (!f) CPLAB_FAIL(d, CPLAB_EIO, "cannot create %s", path);
  int ok = 1;
  for (int l = 0; l < LAYERS; l++) ok &= fwrite(buf, 1, z->bytes, f) == z->bytes;
  ok &= fflush(f) == 0 && fsync(fileno(f)) == 0; /* durable, as a committed trace is */
  ok &= fclose(f) == 0;
  *secs = now() - t0;
  return ok ? 0 : cplab_diag_set(d, CPLAB_EIO, "cannot write %s", path);
}

static int plain_read(const char *path, uint8_t *scratch, const sizes *z, double *secs, cplab_diag *d) {
  double t0 = now();
  FILE *f = fopen(path, "rb");
  if (!f) CPLAB_FAIL(d, CPLAB_EIO, "cannot open %s", path);
  int ok = 1;
  for (int l = 0; l < LAYERS; l++) {
    uint8_t *copy = malloc(z->bytes); /* the trace reader allocates per tensor too */
    ok &= copy && fread(copy, 1, z->bytes, f) == z->bytes;
    if (copy && l == 0) memcpy(scratch, copy, 64);
    free(copy);
  }
  fclose(f);
  *secs = now() - t0;
  return ok ? 0 : cplab_diag_set(d, CPLAB_EIO, "cannot read %s", path);
}

enum { OPT_REPS = CPLAB_OPT_PROGRAM, OPT_DIR };
typedef struct opts {
  int reps;
  const char *dir;
} opts;

static int bench_option(void *ctx, int opt, const char *arg, cplab_diag *d) {
  opts *o = ctx;
  if (opt == OPT_DIR) {
    o->dir = arg;
    return 0;
  }
  uint64_t v;
  if (cplab_parse_u64(arg, &v) != 0 || v == 0 || v > 50) CPLAB_FAIL(d, CPLAB_EUSAGE, "--reps: expected 1..50, got '%s'", arg);
  o->reps = (int)v;
  return 0;
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {CPLAB_CLI_COMMON_LONGOPTS, {"reps", required_argument, NULL, OPT_REPS},
                                           {"dir", required_argument, NULL, OPT_DIR}, {NULL, 0, NULL, 0}};
  cplab_cli cli;
  cplab_diag d = {0};
  opts o = {5, "/tmp"};
  cplab_cli_init(&cli, "smoke");
  if (cplab_cli_parse(argc, argv, CPLAB_CLI_COMMON_SHORTOPTS, longopts, &cli, bench_option, &o, NULL, &d) != 0) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  if (cli.help) {
    printf("Usage: " PROG " [--reps N] [--dir DIR] [--json] [-o FILE]\n"
           "Write/read throughput of a 1 GiB trace against fwrite/fread of the same bytes.\n");
    cplab_cli_help_common(stdout);
    return CPLAB_EXIT_OK;
  }
  sizes z = {{ROWS, 656}, (size_t)ROWS * 656};
  uint8_t *buf = malloc(z.bytes), scratch[64];
  uint64_t x = 88172645463325252ULL;
  for (size_t i = 0; i < z.bytes; i++) { /* fp8-like: mostly mid-range codes */
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    buf[i] = (uint8_t)(0x30 + (x % 0x50) + ((x >> 40) % 23 == 0 ? 0x80 : 0));
  }
  cplab_scenario *s = NULL;
  int rc = buf ? cplab_scenario_load("smoke", NULL, &s, &d) : cplab_diag_set(&d, CPLAB_ENOMEM, "out of memory");
  char tpath[512], ppath[512], cpath[512];
  snprintf(tpath, sizeof tpath, "%s/cplab-trace-bench.%d.h5", o.dir, (int)getpid());
  snprintf(ppath, sizeof ppath, "%s/cplab-trace-bench.%d.bin", o.dir, (int)getpid());
  snprintf(cpath, sizeof cpath, "%s/cplab-trace-bench.%d.z.h5", o.dir, (int)getpid());
  double tw[50], tr[50], pw[50], pr[50], cz = 0;
  /* Alternate which side goes first, and drop both files after each
   * repetition, so that neither side inherits the other's dirty pages. */
  for (int i = 0; !rc && i < o.reps; i++) {
    if (i % 2 == 0) {
      rc = write_trace(tpath, s, buf, &z, LAYERS, 0, &tw[i], &d);
      if (!rc) rc = plain_write(ppath, buf, &z, &pw[i], &d);
      if (!rc) rc = read_trace(tpath, buf, &z, &tr[i], &d);
      if (!rc) rc = plain_read(ppath, scratch, &z, &pr[i], &d);
    } else {
      rc = plain_write(ppath, buf, &z, &pw[i], &d);
      if (!rc) rc = write_trace(tpath, s, buf, &z, LAYERS, 0, &tw[i], &d);
      if (!rc) rc = plain_read(ppath, scratch, &z, &pr[i], &d);
      if (!rc) rc = read_trace(tpath, buf, &z, &tr[i], &d);
    }
    unlink(tpath), unlink(ppath);
  }
  if (!rc) rc = write_trace(cpath, s, buf, &z, 1, 1, &cz, &d);
  unlink(tpath), unlink(ppath), unlink(cpath);
  if (rc) {
    cplab_diag_report(stderr, PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  double gib = (double)z.bytes * LAYERS / (1 << 30), mtw = median(tw, o.reps), mpw = median(pw, o.reps);
  double mtr = median(tr, o.reps), mpr = median(pr, o.reps);
  printf("# 1 trace of %.3f GiB (16 x kv_cache [%d, 656] uint8) vs fwrite/fread, median of %d, dir %s\n", gib, ROWS,
         o.reps, o.dir);
  printf("  write: trace %.2f s (%.0f MB/s), fwrite %.2f s (%.0f MB/s): %.0f%%\n", mtw, gib * 1073.741824 / mtw, mpw,
         gib * 1073.741824 / mpw, 100 * mpw / mtw);
  printf("  read:  trace %.2f s (%.0f MB/s), fread %.2f s (%.0f MB/s): %.0f%%\n", mtr, gib * 1073.741824 / mtr, mpr,
         gib * 1073.741824 / mpr, 100 * mpr / mtr);
  printf("  deflated (shuffle + deflate 4) tensor of 64 MiB: %.2f s (%.0f MB/s)\n", cz, 67.108864 / cz);
  if (cli.json || cli.out) {
    json_t *j = json_pack("{s:s, s:f, s:i, s:s, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:f}", "bench", "trace_io",
                          "gib", gib, "reps", o.reps, "dir", o.dir, "write", "trace_s", mtw, "fwrite_s", mpw,
                          "ratio", mpw / mtw, "read", "trace_s", mtr, "fread_s", mpr, "ratio", mpr / mtr,
                          "deflate_64mib_s", cz);
    char *text = json_dumps(j, JSON_INDENT(2));
    if (cli.out) rc = cplab_atomic_write(cli.out, text, strlen(text), &d);
    if (cli.json) printf("%s\n", text);
    free(text);
    json_decref(j);
  }
  cplab_scenario_free(s);
  free(buf);
  return rc ? CPLAB_EXIT_ERROR : CPLAB_EXIT_OK;
}
