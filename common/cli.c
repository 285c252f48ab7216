/* Shared command-line options: see include/cplab/cli.h. */
#include "cplab/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cplab/layout.h"
#include "cplab/scenario.h"

void cplab_cli_init(cplab_cli *cli, const char *default_scenario) {
  memset(cli, 0, sizeof *cli);
  cli->scenario = default_scenario;
  cli->log_level = CPLAB_LOG_WARN;
}

int cplab_parse_u64(const char *text, uint64_t *out) {
  if (!text || !*text) return CPLAB_EINVAL;
  uint64_t v = 0;
  for (const char *p = text; *p; p++) {
    if (*p < '0' || *p > '9') return CPLAB_EINVAL;
    uint64_t digit = (uint64_t)(*p - '0');
    if (v > (UINT64_MAX - digit) / 10) return CPLAB_EOVERFLOW;
    v = v * 10 + digit;
  }
  *out = v;
  return 0;
}

int cplab_cli_handle(cplab_cli *cli, int opt, const char *arg, cplab_diag *d) {
  switch (opt) {
    case CPLAB_OPT_SCENARIO: cli->scenario = arg; return 1;
    case CPLAB_OPT_LAYOUT:
      if (!cplab_layout_find(arg))
        CPLAB_FAIL(d, CPLAB_EUSAGE, "--layout: unknown layout '%s' (see --list-layouts)", arg);
      cli->layout = arg;
      return 1;
    case CPLAB_OPT_SEED:
      if (cplab_parse_u64(arg, &cli->seed) != 0 || cli->seed > CPLAB_MAX_SEED)
        CPLAB_FAIL(d, CPLAB_EUSAGE, "--seed: expected an integer in [0, %llu], got '%s'",
                   (unsigned long long)CPLAB_MAX_SEED, arg);
      cli->has_seed = 1;
      return 1;
    case 'o':
      if (!*arg) CPLAB_FAIL(d, CPLAB_EUSAGE, "-o/--out: empty path");
      cli->out = arg;
      return 1;
    case 'q': cli->quiet = 1; return 1;
    case 'v':
      if (cli->log_level < CPLAB_LOG_DEBUG) cli->log_level++;
      return 1;
    case CPLAB_OPT_JSON: cli->json = 1; return 1;
    case CPLAB_OPT_LIST_SCENARIOS: cli->list_scenarios = 1; return 1;
    case CPLAB_OPT_LIST_LAYOUTS: cli->list_layouts = 1; return 1;
    case CPLAB_OPT_LOG_LEVEL:
      if (cplab_log_level_parse(arg, &cli->log_level) != 0)
        CPLAB_FAIL(d, CPLAB_EUSAGE, "--log-level: expected error, warn, info or debug, got '%s'", arg);
      return 1;
    case 'h': cli->help = 1; return 1;
    case 'V': cli->version = 1; return 1;
    default: return 0;
  }
}

int cplab_cli_under_mpirun(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

int cplab_cli_pick_gpu(int node_rank, int device_count, int *device, cplab_diag *d) {
  if (device_count < 1) CPLAB_FAIL(d, CPLAB_ENODEV, "no CUDA device visible");
  uint64_t local = node_rank < 0 ? 0 : (uint64_t)node_rank;
  const char *env = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (env && cplab_parse_u64(env, &local) != 0)
    CPLAB_FAIL(d, CPLAB_EINVAL, "OMPI_COMM_WORLD_LOCAL_RANK='%s' is not a number", env);
  *device = (int)(local % (uint64_t)device_count);
  return 0;
}

int cplab_cli_getopt_error(char **argv, const char *shortopts, cplab_diag *d) {
  if (optopt > 0 && optopt < 0x100 && strchr(shortopts, optopt))
    CPLAB_FAIL(d, CPLAB_EUSAGE, "option '-%c' needs an argument", optopt);
  if (optopt > 0 && optopt < 0x100) CPLAB_FAIL(d, CPLAB_EUSAGE, "unknown option '-%c'", optopt);
  if (optopt >= 0x100) CPLAB_FAIL(d, CPLAB_EUSAGE, "option '%s' needs an argument", argv[optind - 1]);
  CPLAB_FAIL(d, CPLAB_EUSAGE, "unknown option '%s'", argv[optind - 1]);
}

int cplab_cli_parse_int(const char *name, const char *arg, int64_t lo, int64_t hi, int64_t *out, cplab_diag *d) {
  uint64_t v;
  if (cplab_parse_u64(arg, &v) != 0 || v < (uint64_t)lo || v > (uint64_t)hi)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "%s: expected an integer in [%lld, %lld], got '%s'", name, (long long)lo, (long long)hi,
               arg);
  *out = (int64_t)v;
  return 0;
}

const char *const cplab_cli_backends[] = {"single", "nccl", NULL};

int cplab_cli_parse_choice(const char *name, const char *arg, const char *const *choices, int *index, cplab_diag *d) {
  int n = 0;
  for (; choices[n]; n++)
    if (strcmp(arg, choices[n]) == 0) {
      if (index) *index = n;
      return 0;
    }
  char list[256];
  size_t used = 0;
  list[0] = '\0';
  for (int i = 0; i < n && used < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                             choices[i]);
  CPLAB_FAIL(d, CPLAB_EUSAGE, "%s %s: expected %s", name, arg, list);
}

int cplab_cli_parse(int argc, char **argv, const char *shortopts, const struct option *longopts, cplab_cli *cli,
                    cplab_cli_option_fn program_opt, void *ctx, int *first_arg, cplab_diag *d) {
  opterr = 0; /* getopt must not print: errors go through cplab_cli_usage_error */
  optind = 0; /* 0, not 1: makes glibc reinitialise its scanner state too */
  int opt;
  while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    if (opt == '?') return cplab_cli_getopt_error(argv, shortopts, d);
    int rc = cplab_cli_handle(cli, opt, optarg, d);
    if (rc < 0) return rc;
    if (rc == 1) continue;
    if (!program_opt) CPLAB_FAIL(d, CPLAB_EINTERNAL, "option code %d has no handler", opt);
    if ((rc = program_opt(ctx, opt, optarg, d)) != 0) return rc;
  }
  if (!first_arg && optind < argc) CPLAB_FAIL(d, CPLAB_EUSAGE, "unexpected argument '%s'", argv[optind]);
  if (first_arg) *first_arg = optind;
  return 0;
}

void cplab_cli_help_common(FILE *out) {
  fputs("Common options (the same in every cplab program):\n"
        "  --scenario NAME|FILE  built-in scenario name or JSON file (see --list-scenarios)\n"
        "  --list-scenarios      list the built-in scenarios and exit\n"
        "  --layout NAME         layout plugin, overriding the scenario's\n"
        "  --list-layouts        list the layouts (mutants are flagged) and exit\n"
        "  --seed N              seed, overriding the scenario's (0 .. 2^53-1)\n"
        "  -o, --out PATH        write the output to PATH (atomically)\n"
        "  --json                print JSON instead of text\n"
        "  -q, --quiet           print nothing on success\n"
        "  -v, --verbose         more log output (repeatable)\n"
        "  --log-level LEVEL     error, warn (default), info or debug\n"
        "  -h, --help            this help\n"
        "  -V, --version         version and build information\n"
        "Exit status: 0 ok, 1 a difference or failed check, 2 an error.\n",
        out);
}

void cplab_cli_version(FILE *out, const char *prog) {
  fprintf(out, "%s (cplab) %s\n", prog, PACKAGE_VERSION);
#ifdef HAVE_CUDA
  fputs("built with CUDA kernels", out);
#ifdef HAVE_NCCL
  fputs(" and NCCL", out);
#endif
  fputs("\n", out);
#else
  fputs("built without CUDA\n", out);
#endif
}

void cplab_cli_list_layouts(FILE *out) {
  for (const cplab_layout *const *l = cplab_layouts(); *l; l++)
    fprintf(out, "%-28s %s%s\n", (*l)->name, (*l)->mutant ? "[mutant] " : "", (*l)->summary);
}

int cplab_cli_list_scenarios(FILE *out, cplab_diag *d) {
  for (const char *const *n = cplab_scenario_builtin_names(); *n; n++) {
    cplab_scenario *s;
    int rc = cplab_scenario_load(*n, NULL, &s, d);
    if (rc) return rc;
    fprintf(out, "%-12s %s\n", s->name, s->description);
    cplab_scenario_free(s);
  }
  return 0;
}

int cplab_cli_answer_info(const cplab_cli *cli, const char *prog, void (*usage)(FILE *out)) {
  if (cli->help) usage(stdout);
  else if (cli->version) cplab_cli_version(stdout, prog);
  return cli->help || cli->version;
}

void cplab_cli_usage_error(const char *prog, const cplab_diag *d) {
  cplab_diag_report(stderr, prog, d);
  fprintf(stderr, "Try '%s --help'.\n", prog);
}

int cplab_cli_parse_layers(const char *text, int64_t num_layers, cplab_layer_list *o, cplab_diag *d) {
  o->count = 0;
  if (!text) text = "0";
  for (const char *p = text; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || (*end && *end != ',') || v < 0)
      CPLAB_FAIL(d, CPLAB_EUSAGE, "--layers %s: expected layer indices separated by commas", text);
    if (v >= num_layers)
      CPLAB_FAIL(d, CPLAB_EUSAGE, "--layers %s: layer %ld does not exist (the model has %lld layers)", text, v,
                 (long long)num_layers);
    for (int i = 0; i < o->count; i++)
      if (o->layers[i] == v) CPLAB_FAIL(d, CPLAB_EUSAGE, "--layers %s: layer %ld is listed twice", text, v);
    if (o->count == CPLAB_MAX_LAYERS)
      CPLAB_FAIL(d, CPLAB_EUSAGE, "--layers %s: at most %d layers", text, CPLAB_MAX_LAYERS);
    int at = o->count++;
    while (at > 0 && o->layers[at - 1] > v) o->layers[at] = o->layers[at - 1], at--;
    o->layers[at] = (int)v;
    p = *end ? end + 1 : end;
    if (*end && !*p) CPLAB_FAIL(d, CPLAB_EUSAGE, "--layers %s: trailing comma", text);
  }
  return 0;
}
