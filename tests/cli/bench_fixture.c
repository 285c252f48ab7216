/* tests/cli/bench_fixture.c: writes the results file bench_cli.sh renders
 * with cplab-bench --report (no GPU can make one here): the four columns of
 * the change's 4-GPU table, one prefill and one decode row, with samples
 * drawn from a seeded stream around hand-chosen medians. Test data, not a
 * measurement: meta.card says so. Usage: bench_fixture OUT.h5 */
#include <stdio.h>
#include <string.h>

#include "report.h"

static double jitter(uint64_t *s) { /* splitmix64 -> [-0.5, 0.5) */
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53 - 0.5;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: bench_fixture OUT.h5\n");
    return 2;
  }
  static const struct {
    int tp, pcp, dcp;
    double ttft, tpot;
  } cols[] = {{4, 1, 1, 5500, 18.6}, {1, 4, 1, 3300, 30.0}, {4, 1, 4, 5600, 28.4}, {1, 4, 4, 3320, 32.6}};
  cplab_bench_results r;
  cplab_diag d = {0};
  cplab_bench_results_init(&r);
  snprintf(r.meta.card, sizeof r.meta.card, "test fixture (no device)");
  snprintf(r.meta.date, sizeof r.meta.date, "2026-11-29T00:00:00Z");
  snprintf(r.meta.commit, sizeof r.meta.commit, "fixture");
  snprintf(r.meta.command, sizeof r.meta.command, "bench_fixture");
  snprintf(r.meta.preset, sizeof r.meta.preset, "glm-5");
  snprintf(r.meta.backend, sizeof r.meta.backend, "single");
  snprintf(r.meta.note, sizeof r.meta.note, "fixture samples for the report tests");
  r.meta.gpus = 1, r.meta.seed = 7, r.meta.resamples = 500, r.meta.layers = 2;
  uint64_t rng = 1;
  int rc = 0;
  for (size_t c = 0; c < sizeof cols / sizeof cols[0] && !rc; c++) {
    for (int decode = 0; decode < 2 && !rc; decode++) {
      double samples[20], median = decode ? cols[c].tpot : cols[c].ttft;
      for (int i = 0; i < 20; i++) samples[i] = median * (1 + 0.02 * jitter(&rng));
      cplab_bench_point p;
      memset(&p, 0, sizeof p);
      p.tp = cols[c].tp, p.pcp = cols[c].pcp, p.dcp = cols[c].dcp;
      snprintf(p.workload, sizeof p.workload, decode ? "decode" : "prefill");
      p.tokens = 32768, p.batch = 1, p.out_tokens = decode ? 16 : 1;
      snprintf(p.graph, sizeof p.graph, decode ? "full" : "eager");
      p.metric = decode ? CPLAB_BENCH_TPOT : CPLAB_BENCH_TTFT;
      p.n = 20, p.samples_ms = samples;
      for (int k = 0; k < CPLAB_BENCH_PHASES; k++) p.phase_ms[k] = median / CPLAB_BENCH_PHASES;
      rc = cplab_bench_results_add(&r, &p, &d);
    }
  }
  if (!rc) rc = cplab_bench_results_finish(&r, &d);
  if (!rc) rc = cplab_bench_write_h5(&r, argv[1], &d);
  cplab_bench_results_free(&r);
  if (rc) cplab_diag_report(stderr, "bench_fixture", &d);
  return rc ? 1 : 0;
}
