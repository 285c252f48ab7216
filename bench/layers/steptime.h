/* bench/layers/steptime.h: a measured step's time from the event times of
 * its launch units (exec/engine.c measures them; this is the arithmetic alone,
 * kept apart so that it is tested without a GPU).
 *
 * A layer on a rank is CPLAB_BENCH_SEGMENTS segments between collectives
 * (exec/engine_internal.h lists them). Ranks meet at the collectives, so where
 * every rank ran on one device one after another, a segment lasts as long
 * as its slowest rank:
 *   total    = sum over layers and segments of the slowest rank's segment,
 *              plus the slowest rank's output gather;
 *   phase[p] = the same sum over the units of phase p (the output gather
 *              counts to communication, phase 4), or NAN where a graph
 *              merged phase p with another (mixed[p]), as a merged unit's
 *              time cannot be split. */
#ifndef CPLAB_BENCH_STEPTIME_H
#define CPLAB_BENCH_STEPTIME_H

#include "report.h"

enum { CPLAB_BENCH_SEGMENTS = 6 };

/* seg: [layers][world][CPLAB_BENCH_SEGMENTS][CPLAB_BENCH_PHASES + 1], per
 * layer, rank and segment the milliseconds of each phase's units and, last,
 * of all its units; out: [world] each rank's output gather. */
void cplab_bench_step_time(const double *seg, int layers, int world, const double *out,
                           const int mixed[CPLAB_BENCH_PHASES], double *total, double phase[CPLAB_BENCH_PHASES]);

#endif
