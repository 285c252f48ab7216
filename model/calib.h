/* model/calib.h: calibration of cplab-model on part of the committed GPU
 * results, and its validation on the rest (a manifest says which is which).
 *
 * Manifest (JSON; paths relative to the manifest's folder):
 *   {"cplab_model_validation": "1.0.0",
 *    "calibration": {"results": [FILE, ...], "layouts": ["tp4", "pcp4"]},
 *    "link_calibration": GATHER_BENCH_JSON,
 *    "predict": [{"results": FILE, "tables": [KERNELS_JSON, ...],
 *                 "layouts": [...] (optional: only these),
 *                 "exclude": [{"layout": L, "workload": W, "reason": "..."}]}, ...],
 *    "nccl_from_single": [{"nccl": FILE, "single": FILE}, ...]}
 *
 * Calibration uses the eager points of the calibration layouts in the
 * calibration results (cplab-bench JSON, bf16 projections): the projection
 * and MoE lines on their measured phases against the plans' features
 * (step.h), the single-device copy latency on their comm phase, and the
 * graph modes' saving per layer as the median of eager minus graph time
 * over configurations measured in both whose MoE path the graph does not
 * change. The link's intra-node tier is calibrated on the gather bench.
 * Nothing is fitted on a predicted point.
 *
 * Predictions ("category"):
 *   model            every eager or graph point of a predict entry, from the
 *                    kernel tables listed with it (the kernel versions of
 *                    that run) and the calibrated parameters;
 *   nccl-from-single an eager point of a two-GPU NCCL run, from the
 *                    single-device run of the same commit: its measured time
 *                    less its measured comm phase, plus the link model's comm
 *                    of the plans' collectives.
 * Error = (predicted - measured) / measured; the summary gives the median
 * and the largest |error| over all predictions and per category.
 */
#ifndef CPLAB_MODEL_CALIB_H
#define CPLAB_MODEL_CALIB_H

#include <jansson.h>

#include "cplab/error.h"
#include "step.h"

/* Run the manifest: the validation document (caller json_decref's). Table
 * lookups outside the measured shapes are allowed and counted per entry
 * ("extrapolated"). */
int cplab_model_validate(const char *manifest, json_t **out, cplab_diag *d);

/* Compare a recomputed validation document with a committed one: 0 same
 * (numbers within a relative 1e-9), CPLAB_EMISMATCH naming the first field
 * that drifted. */
int cplab_model_validation_compare(const json_t *now, const json_t *committed, const char *committed_path,
                                   cplab_diag *d);

/* The calibrated parameters in a validation document's
 * calibration.params (or a file holding just that object under "params"). */
int cplab_model_params_load(const char *path, cplab_model_params *out, cplab_diag *d);

#endif
