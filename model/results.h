/* model/results.h (internal): what calib.c and validate.c share: the
 * validation's inputs read with located messages (cplab-bench results
 * files, manifest lists), the scenario of a measured point and its
 * prediction, and the calibration's result. Not installed. */
#ifndef CPLAB_MODEL_RESULTS_H
#define CPLAB_MODEL_RESULTS_H

#include <jansson.h>

#include "cplab/error.h"
#include "json_reader.h"
#include "matrix.h"
#include "step.h"

#define MAX_FILES 32

/* A parsed JSON file with its reader (for located messages). */
typedef struct model_doc {
  char path[2048];
  char *text;
  json_t *root;
  cplab_json_reader r;
} model_doc;

/* One measured point of a cplab-bench results file. */
typedef struct model_point {
  cplab_bench_parallel parallel;
  cplab_bench_workload w;
  cplab_graph_mode graph;
  char workload[16], graph_name[16];
  double median, phase[CPLAB_MODEL_PHASES]; /* NAN: not measured */
  char path[CPLAB_PATH_MAX];
} model_point;

/* A results file's meta: preset, backend, layers, and whether its projections were fp8. */
typedef struct model_meta {
  char preset[32], backend[16];
  int64_t layers;
  int fp8;
} model_meta;

/* The calibration: parameters, points used, eager/graph pairs per mode and step kind. */
typedef struct model_calib_out {
  cplab_model_params params;
  int points, graph_pairs[3][2];
} model_calib_out;

/* rel under dir (or absolute) parsed into x; model_doc_close always. */
int model_doc_open(model_doc *x, const char *dir, const char *rel, cplab_diag *d);
void model_doc_close(model_doc *x);
int model_read_meta(model_doc *x, model_meta *m);
size_t model_num_points(model_doc *x);
int model_read_point(model_doc *x, size_t i, model_point *p, cplab_diag *d);
/* The scenario cplab-bench ran for a point, and the model's prediction of it. */
int model_scenario_of(const model_meta *m, const model_point *p, cplab_scenario **s, cplab_diag *d);
int model_predict_point(const model_meta *m, const model_point *p, const cplab_model_inputs *in, cplab_model_result *res,
                        cplab_diag *d);
/* A string array member (1..MAX_FILES items, optional unless required). */
int model_string_list(model_doc *x, const json_t *obj, const char *path, const char *key, int required, char out[][512],
                      int *n);
int model_in_list(char list[][512], int n, const char *s);
double model_median_of(double *v, int n); /* sorts v */
int model_same_config(const model_point *a, const model_point *b); /* all but the graph mode */

/* The manifest's calibration (calib.h); sources gets the files used. */
int model_calibrate(model_doc *man, const char *dir, double copy_gbps, model_calib_out *co, json_t *sources,
                    cplab_diag *d);
json_t *model_params_json(const model_calib_out *co);

#endif
