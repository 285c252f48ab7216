/* The step-time arithmetic of steptime.h. */
#include "steptime.h"

#include <math.h>

void cplab_bench_step_time(const double *seg, int layers, int world, const double *out,
                           const int mixed[CPLAB_BENCH_PHASES], double *total, double phase[CPLAB_BENCH_PHASES]) {
  enum { ROW = CPLAB_BENCH_PHASES + 1 };
  *total = 0;
  for (int p = 0; p < CPLAB_BENCH_PHASES; p++) phase[p] = 0;
  for (int l = 0; l < layers; l++)
    for (int g = 0; g < CPLAB_BENCH_SEGMENTS; g++) {
      double slowest[ROW] = {0};
      for (int r = 0; r < world; r++) {
        const double *row = seg + (((size_t)l * (size_t)world + (size_t)r) * CPLAB_BENCH_SEGMENTS + (size_t)g) * ROW;
        for (int p = 0; p < ROW; p++) slowest[p] = fmax(slowest[p], row[p]);
      }
      *total += slowest[CPLAB_BENCH_PHASES];
      for (int p = 0; p < CPLAB_BENCH_PHASES; p++) phase[p] += slowest[p];
    }
  double out_max = 0;
  for (int r = 0; r < world; r++) out_max = fmax(out_max, out[r]);
  *total += out_max, phase[4] += out_max;
  for (int p = 0; p < CPLAB_BENCH_PHASES; p++)
    if (mixed[p]) phase[p] = NAN;
}
