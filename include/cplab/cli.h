/* cplab/cli.h: the options every cplab program shares, so that each means the
 * same thing everywhere, and the exit-code contract (h5diff's):
 *   0 ok / same / holds, 1 a difference or failed check, 2 an error.
 *
 * A program lists CPLAB_CLI_COMMON_LONGOPTS in its getopt_long table, adds its
 * own options with codes >= CPLAB_OPT_PROGRAM, and passes every option it gets
 * to cplab_cli_handle() first.
 */
#ifndef CPLAB_CLI_H
#define CPLAB_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "cplab/error.h"
#include "cplab/log.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CPLAB_EXIT_OK = 0, CPLAB_EXIT_DIFFERENT = 1, CPLAB_EXIT_ERROR = 2 };

enum {
  CPLAB_OPT_SCENARIO = 0x100,
  CPLAB_OPT_LAYOUT,
  CPLAB_OPT_SEED,
  CPLAB_OPT_JSON,
  CPLAB_OPT_LIST_SCENARIOS,
  CPLAB_OPT_LIST_LAYOUTS,
  CPLAB_OPT_LOG_LEVEL,
  CPLAB_OPT_PROGRAM = 0x200 /* first code free for program-specific options */
};

#define CPLAB_CLI_COMMON_SHORTOPTS "o:qvhV"
#define CPLAB_CLI_COMMON_LONGOPTS                                   \
  {"scenario", required_argument, NULL, CPLAB_OPT_SCENARIO},        \
      {"layout", required_argument, NULL, CPLAB_OPT_LAYOUT},        \
      {"seed", required_argument, NULL, CPLAB_OPT_SEED},            \
      {"out", required_argument, NULL, 'o'},                        \
      {"quiet", no_argument, NULL, 'q'},                            \
      {"json", no_argument, NULL, CPLAB_OPT_JSON},                  \
      {"list-scenarios", no_argument, NULL, CPLAB_OPT_LIST_SCENARIOS}, \
      {"list-layouts", no_argument, NULL, CPLAB_OPT_LIST_LAYOUTS},     \
      {"log-level", required_argument, NULL, CPLAB_OPT_LOG_LEVEL},  \
      {"verbose", no_argument, NULL, 'v'},                          \
      {"help", no_argument, NULL, 'h'},                             \
      {"version", no_argument, NULL, 'V'}

typedef struct cplab_cli {
  const char *scenario; /* NAME or FILE; the program's default until set */
  const char *layout;   /* NULL: the scenario's */
  int has_seed;
  uint64_t seed;
  const char *out; /* -o PATH, NULL: none */
  int quiet, json, list_scenarios, list_layouts, help, version;
  cplab_log_level log_level;
} cplab_cli;

void cplab_cli_init(cplab_cli *cli, const char *default_scenario);

/* 1: opt was a common option and is applied; 0: not a common option;
 * negative: a bad argument (message in d). '?' (getopt's own error) gives
 * CPLAB_EUSAGE. */
int cplab_cli_handle(cplab_cli *cli, int opt, const char *arg, cplab_diag *d);

/* Handles a program's own option (code >= CPLAB_OPT_PROGRAM or its own short
 * letter): 0 ok, negative with a message in d. */
typedef int (*cplab_cli_option_fn)(void *ctx, int opt, const char *arg, cplab_diag *d);

/* The whole getopt_long loop: common options into cli, the others to
 * program_opt (may be NULL when there are none). Positional arguments are
 * left at argv[*first_arg..argc); with first_arg NULL the program takes
 * none and one is a usage error. shortopts must start with
 * CPLAB_CLI_COMMON_SHORTOPTS. Errors are CPLAB_EUSAGE with a message. */
/* A --layers list: distinct layer indices, ascending. */
#define CPLAB_MAX_LAYERS 64
typedef struct cplab_layer_list {
  int count;
  int layers[CPLAB_MAX_LAYERS];
} cplab_layer_list;
/* Parse "0,3,5" (NULL: layer 0) into o; each index below num_layers, none
 * twice. CPLAB_EUSAGE with a message naming the problem. */
int cplab_cli_parse_layers(const char *text, int64_t num_layers, cplab_layer_list *o, cplab_diag *d);

int cplab_cli_parse(int argc, char **argv, const char *shortopts, const struct option *longopts, cplab_cli *cli,
                    cplab_cli_option_fn program_opt, void *ctx, int *first_arg, cplab_diag *d);

/* Help text of the common options (two-space indented lines). */
void cplab_cli_help_common(FILE *out);
void cplab_cli_version(FILE *out, const char *prog);
/* One line per layout: name, [mutant], summary. */
void cplab_cli_list_layouts(FILE *out);
/* One line per built-in scenario: name and description. */
int cplab_cli_list_scenarios(FILE *out, cplab_diag *d);
/* The informational options every program answers the same way: -h prints
 * usage(stdout), -V the version. Returns 1 when one of them was answered (the
 * program then exits 0), else 0. */
int cplab_cli_answer_info(const cplab_cli *cli, const char *prog, void (*usage)(FILE *out));

/* Report a usage error the standard way ("PROG: error: ...", "Try 'PROG --help'."). */
void cplab_cli_usage_error(const char *prog, const cplab_diag *d);

/* Strict decimal parse: digits only, no sign, no overflow. */
int cplab_parse_u64(const char *text, uint64_t *out);
/* An option's integer argument in [lo, hi] (lo >= 0): CPLAB_EUSAGE
 * "NAME: expected an integer in [lo, hi], got 'ARG'" otherwise. */
int cplab_cli_parse_int(const char *name, const char *arg, int64_t lo, int64_t hi, int64_t *out, cplab_diag *d);
/* An option's argument that must be one of choices (NULL-terminated, at
 * least one): *index (where index is not NULL) its position; CPLAB_EUSAGE
 * "NAME ARG: expected A, B or C" otherwise (*index untouched). */
int cplab_cli_parse_choice(const char *name, const char *arg, const char *const *choices, int *index, cplab_diag *d);
/* --backend's choices (cplab-exec, cplab-bench, cplab-model): the
 * single-device backend, then NCCL. */
extern const char *const cplab_cli_backends[];
/* 1 when an MPI launcher started this process (Open MPI's mpirun or a PMI
 * launcher set its variables): the programs then call MPI_Init; 0 for a
 * plain start, which must not (a singleton MPI start needs no launcher, but
 * the programs run without MPI there). */
int cplab_cli_under_mpirun(void);
/* The one GPU pick rule of the MPI programs (one rank per GPU): the rank's
 * index on its node modulo the visible devices. The index is the launcher's
 * OMPI_COMM_WORLD_LOCAL_RANK where set, else node_rank (the caller's
 * fallback: its rank in MPI_COMM_TYPE_SHARED, or its world rank on one node).
 * CPLAB_ENODEV for no device, CPLAB_EINVAL for a local rank that is not a
 * number; the message says which. */
int cplab_cli_pick_gpu(int node_rank, int device_count, int *device, cplab_diag *d);
/* For programs with their own getopt_long loop (opterr = 0): the usage
 * error of getopt's '?' (an unknown option, or one missing its argument). */
int cplab_cli_getopt_error(char **argv, const char *shortopts, cplab_diag *d);

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_CLI_H */
