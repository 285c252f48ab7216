/* The benchmarks' shared output: see bench_out.h. */
#include "bench_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cplab/atomic.h"

void cplab_bench_date(char *buf, size_t cap) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

char *cplab_bench_command(int argc, char **argv) {
  size_t len = 1;
  for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
  char *cmd = malloc(len), *p = cmd;
  if (!cmd) return NULL;
  *cmd = '\0';
  for (int i = 0; i < argc; i++) p += sprintf(p, i ? " %s" : "%s", argv[i]);
  return cmd;
}

json_t *cplab_bench_card_json(const cplab_gpu_info *g, size_t l2_bytes) {
  char rt[16], drv[16], cc[16];
  snprintf(rt, sizeof rt, "%d.%d", g->runtime_version / 1000, g->runtime_version % 1000 / 10);
  snprintf(drv, sizeof drv, "%d.%d", g->driver_version / 1000, g->driver_version % 1000 / 10);
  snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
  return json_pack("{s:s, s:i, s:i, s:I, s:I, s:s, s:s, s:s}", "name", g->name, "count", g->device_count, "sm_count",
                   g->sm_count, "l2_bytes", (json_int_t)l2_bytes, "memory_bytes", (json_int_t)g->global_mem_bytes,
                   "compute_capability", cc, "cuda_runtime_version", rt, "cuda_driver_version", drv);
}

json_t *cplab_bench_spread_json(const cplab_spread *s) {
  return json_pack("{s:f, s:f, s:f, s:f, s:f}", "median", 1e6 * s->median, "min", 1e6 * s->min, "max", 1e6 * s->max,
                   "p10", 1e6 * s->p10, "p90", 1e6 * s->p90);
}

int cplab_bench_write_json(const char *path, const json_t *doc, cplab_diag *d) {
  char *text = json_dumps(doc, JSON_INDENT(2));
  if (!text) CPLAB_FAIL(d, CPLAB_ENOMEM, "cannot serialise the JSON document");
  size_t n = strlen(text);
  char *withnl = realloc(text, n + 2);
  if (!withnl) {
    free(text);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of host memory");
  }
  withnl[n] = '\n', withnl[n + 1] = '\0';
  int rc = cplab_atomic_write(path, withnl, n + 1, d);
  free(withnl);
  return rc;
}
