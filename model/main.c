/* cplab-model: predicted TTFT and TPOT per set of parallel sizes, workload
 * and graph mode from measured kernels and links, without a GPU (issue 23);
 * --validate calibrates on part of the committed GPU results and predicts
 * the rest. The model: model/README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "cplab/model.h"
#include "link.h"
#include "dryrun.h"
#include "matrix.h"
#include "step.h"
#include "table.h"

#define PROG "cplab-model"
#define MAX_TABLES 16

static void usage(FILE *out) {
  fputs("Usage: " PROG " --table FILE [--table FILE...] --params FILE [OPTIONS]\n"
        "       " PROG " --validate MANIFEST [--check VALIDATION.json | -o FILE]\n"
        "Predicted TTFT (prefill N in / 1 out) and TPOT (decode 1 in / M out) of a sparse-MLA decoder per\n"
        "set of parallel sizes and CUDA-graph mode, from the plans' per-rank work (as cplab-bench\n"
        "--dry-run), measured kernel times (cost tables) and a link model. Needs no GPU.\n\n",
        out);
  fputs("Configurations (as cplab-bench):\n"
        "  --preset NAME         glm-5 (default) or deepseek-v3.2\n"
        "  --parallel LIST       sets of parallel sizes, e.g. tp4,pcp4,tp4dcp4,pcp4dcp4 (the default)\n"
        "                        (--layouts LIST: its deprecated name)\n"
        "  --prefill LIST        TTFT workloads: new tokens per request\n"
        "  --decode LIST         TPOT workloads: context lengths\n"
        "                        (neither: --prefill 32768 --decode 32768)\n"
        "  --batch N, --out-tokens M, --graphs LIST (eager,piecewise,full; default eager,full)\n\n"
        "Model:\n"
        "  --table FILE          a kernels.json of cplab-kernel-bench or a cost table (model/README.md);\n"
        "                        repeatable, a later file's kernels replace an earlier one's\n"
        "  --params FILE         calibrated parameters: a validation.json (its calibration.params)\n"
        "  --backend single|nccl single: cplab-bench's single-device backend (device copies);\n"
        "                        nccl (default): the link model\n"
        "  --link PRESET|FILE    h200 (default) or gb200, or a link file\n"
        "  --link-calibrate FILE calibrate the intra-node tier from a gather bench JSON (bench/run-gpu-gather.sh)\n"
        "  --layers N            decoder layers per step (default: the preset's)\n"
        "  --card h200|gb200     the card (default h200, the tables' card): kernel times and fitted lines\n"
        "                        scaled by its compute and bandwidth ratios, its memory, its link preset\n"
        "  --model-set F=V,...   model fields over the preset, e.g. max_position_embeddings=1048576\n"
        "  --weight-bytes B      0.5, 1 or 2 bytes a weight for the memory columns (default 1: fp8)\n"
        "  --extrapolate         allow shapes outside the tables' measured range (counted per row)\n"
        "  --head-pad auto|none|N  sparse MLA's query heads a rank runs, rounded up to a multiple of N\n"
        "                        (FlashMLA's blocks; the attention tables are read there); auto (default):\n"
        "                        64 on h200 (sm90), 128 on gb200 (sm100); none: the real heads\n\n"
        "Validation:\n"
        "  --validate MANIFEST   calibrate and predict as the manifest says; the validation document\n"
        "                        to stdout or -o FILE\n"
        "  --check FILE          with --validate: exit 1 when FILE differs from the recomputed document\n\n",
        out);
  cplab_cli_help_common(out);
  fputs("\nExit status: 0 done, 1 a validation drifted (--check), 2 error.\n\n"
        "Examples:\n"
        "  " PROG " --validate bench/results/2026-12-01-model-validation/manifest.json \\\n"
        "      --check bench/results/2026-12-01-model-validation/validation.json\n"
        "  " PROG " --params bench/results/2026-12-01-model-validation/validation.json \\\n"
        "      --table bench/results/2026-12-01-kernels-h200/kernels.json --table ... --extrapolate\n",
        out);
}

enum {
  OPT_PRESET = CPLAB_OPT_PROGRAM, OPT_PARALLEL, OPT_LAYOUTS, OPT_PREFILL, OPT_DECODE, OPT_BATCH, OPT_OUT_TOKENS,
  OPT_GRAPHS, OPT_TABLE, OPT_PARAMS, OPT_BACKEND, OPT_LINK, OPT_LINK_CAL, OPT_LAYERS, OPT_EXTRAPOLATE, OPT_VALIDATE,
  OPT_CHECK, OPT_CARD, OPT_MODEL_SET, OPT_WEIGHT_BYTES, OPT_HEAD_PAD
};

/* Cards by their parameters against the H200 the tables were measured on
 * (ESTIMATES from datasheets: dense bf16 989 TFLOPS and 4.8 TB/s HBM3e,
 * 141 GB; GB200's Blackwell GPU 2.5 PFLOPS and 8 TB/s, 186 GB), with the
 * link preset of the same name. */
typedef struct card {
  const char *name;
  double compute, memory, gb;
  int head_pad; /* --head-pad auto: FlashMLA's sparse blocks on the card's SM (cplab/heads.h) */
} card;
static const card cards[] = {{"h200", 1.0, 1.0, 141.0, CPLAB_HEAD_PAD_SM90},
                             {"gb200", 2500.0 / 989.0, 8.0 / 4.8, 186.0, CPLAB_HEAD_PAD_SM100}};

typedef struct args {
  const char *preset, *parallel, *prefill, *decode, *graphs, *params, *backend, *link, *link_cal, *validate, *check;
  const char *tables[MAX_TABLES];
  const char *model_set;
  const card *card;
  double weight_bytes;
  int num_tables, extrapolate;
  int64_t batch, out_tokens, layers;
  int64_t head_pad; /* CPLAB_HEAD_PAD_AUTO (the card's); 1: none */
  int old_layouts;  /* --layouts, --parallel's deprecated name, was given */
} args;

static int option(void *ctx, int opt, const char *arg, cplab_diag *d) {
  args *a = ctx;
  switch (opt) {
  case OPT_PRESET: a->preset = arg; return 0;
  case OPT_PARALLEL: a->parallel = arg; return 0;
  case OPT_LAYOUTS: /* the sizes' older name, as cplab-bench's: main says it is deprecated */
    a->parallel = arg, a->old_layouts = 1;
    return 0;
  case OPT_PREFILL: a->prefill = arg; return 0;
  case OPT_DECODE: a->decode = arg; return 0;
  case OPT_GRAPHS: a->graphs = arg; return 0;
  case OPT_PARAMS: a->params = arg; return 0;
  case OPT_LINK: a->link = arg; return 0;
  case OPT_LINK_CAL: a->link_cal = arg; return 0;
  case OPT_VALIDATE: a->validate = arg; return 0;
  case OPT_CHECK: a->check = arg; return 0;
  case OPT_EXTRAPOLATE: a->extrapolate = 1; return 0;
  case OPT_MODEL_SET: a->model_set = arg; return 0;
  case OPT_CARD:
    for (size_t i = 0; i < sizeof cards / sizeof *cards; i++)
      if (strcmp(arg, cards[i].name) == 0) return a->card = &cards[i], 0;
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--card %s: expected h200 or gb200", arg);
  case OPT_HEAD_PAD: {
    int pad, rc = cplab_head_pad_parse(arg, 1, &pad, d);
    /* The outputs write none as a multiple of 1 (model/README.md). */
    if (!rc) a->head_pad = pad == CPLAB_HEAD_PAD_NONE ? 1 : pad;
    return rc;
  }
  case OPT_WEIGHT_BYTES:
    if (strcmp(arg, "0.5") && strcmp(arg, "1") && strcmp(arg, "2"))
      CPLAB_FAIL(d, CPLAB_EUSAGE, "--weight-bytes %s: expected 0.5 (fp4), 1 (fp8) or 2 (bf16)", arg);
    a->weight_bytes = strtod(arg, NULL);
    return 0;
  case OPT_TABLE:
    if (a->num_tables == MAX_TABLES) CPLAB_FAIL(d, CPLAB_EUSAGE, "--table: at most %d", MAX_TABLES);
    a->tables[a->num_tables++] = arg;
    return 0;
  case OPT_BACKEND: a->backend = arg; return cplab_cli_parse_choice("--backend", arg, cplab_cli_backends, NULL, d);
  case OPT_BATCH: return cplab_cli_parse_int("--batch", arg, 1, 4096, &a->batch, d);
  case OPT_OUT_TOKENS: return cplab_cli_parse_int("--out-tokens", arg, 1, 4096, &a->out_tokens, d);
  case OPT_LAYERS: return cplab_cli_parse_int("--layers", arg, 1, 1000, &a->layers, d);
  default: CPLAB_FAIL(d, CPLAB_EINTERNAL, "option code %d has no handler", opt);
  }
}

static int parse(int argc, char **argv, cplab_cli *cli, args *a, cplab_diag *d) {
  static const struct option longopts[] = {
      CPLAB_CLI_COMMON_LONGOPTS,
      {"preset", required_argument, NULL, OPT_PRESET},       {"parallel", required_argument, NULL, OPT_PARALLEL},
      {"layouts", required_argument, NULL, OPT_LAYOUTS},
      {"prefill", required_argument, NULL, OPT_PREFILL},     {"decode", required_argument, NULL, OPT_DECODE},
      {"batch", required_argument, NULL, OPT_BATCH},         {"out-tokens", required_argument, NULL, OPT_OUT_TOKENS},
      {"graphs", required_argument, NULL, OPT_GRAPHS},       {"table", required_argument, NULL, OPT_TABLE},
      {"params", required_argument, NULL, OPT_PARAMS},       {"backend", required_argument, NULL, OPT_BACKEND},
      {"link", required_argument, NULL, OPT_LINK},           {"link-calibrate", required_argument, NULL, OPT_LINK_CAL},
      {"layers", required_argument, NULL, OPT_LAYERS},       {"extrapolate", no_argument, NULL, OPT_EXTRAPOLATE},
      {"validate", required_argument, NULL, OPT_VALIDATE},   {"check", required_argument, NULL, OPT_CHECK},
      {"card", required_argument, NULL, OPT_CARD},           {"model-set", required_argument, NULL, OPT_MODEL_SET},
      {"weight-bytes", required_argument, NULL, OPT_WEIGHT_BYTES}, {"head-pad", required_argument, NULL, OPT_HEAD_PAD},
      {NULL, 0, NULL, 0}};
  int rc = cplab_cli_parse(argc, argv, CPLAB_CLI_COMMON_SHORTOPTS, longopts, cli, option, a, NULL, d);
  if (rc || cli->help || cli->version) return rc;
  if (cli->scenario || cli->layout || cli->list_layouts || cli->list_scenarios)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "cplab-model builds its scenarios from --preset, --parallel and the workload options");
  if (a->check && !a->validate) CPLAB_FAIL(d, CPLAB_EUSAGE, "--check goes with --validate");
  if (a->validate && (a->num_tables || a->params))
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--validate takes its tables and calibration from the manifest; drop --table/--params");
  if (a->validate && a->check && cli->out) CPLAB_FAIL(d, CPLAB_EUSAGE, "--check compares; drop -o");
  if (a->validate) return 0;
  if (!a->num_tables) CPLAB_FAIL(d, CPLAB_EUSAGE, "give at least one --table FILE (a kernels.json or a cost table)");
  if (!a->params) CPLAB_FAIL(d, CPLAB_EUSAGE, "give --params FILE (a validation.json holds calibration.params)");
  cplab_model m;
  if (cplab_model_preset(a->preset, &m) != 0) CPLAB_FAIL(d, CPLAB_EUSAGE, "--preset %s: unknown preset", a->preset);
  if (!a->layers) a->layers = m.num_layers;
  if (a->head_pad < 0) a->head_pad = a->card->head_pad;
  return 0;
}

static int write_doc(json_t *doc, const char *path, cplab_diag *d) {
  char *s = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
  if (!s) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  size_t n = strlen(s);
  int rc = 0;
  if (path) {
    char *t = malloc(n + 2);
    if (!t) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    else memcpy(t, s, n), t[n] = '\n', rc = cplab_atomic_write(path, t, n + 1, d), free(t);
  } else if (fwrite(s, 1, n, stdout) != n || fputc('\n', stdout) == EOF) {
    rc = cplab_diag_set(d, CPLAB_EIO, "cannot write to standard output");
  }
  free(s);
  return rc;
}

/* --validate: 0, or 1 when --check finds a drift. */
static int validate(const args *a, const cplab_cli *cli, int *drift, cplab_diag *d) {
  json_t *doc = NULL, *old = NULL;
  int rc = cplab_model_validate(a->validate, &doc, d);
  if (!rc && a->check) {
    /* Round-trip through the written form, so the comparison sees what a file holds. */
    char *s = json_dumps(doc, JSON_REAL_PRECISION(12));
    json_t *now = s ? json_loads(s, 0, NULL) : NULL;
    json_error_t err;
    free(s);
    if (!(old = json_load_file(a->check, 0, &err)))
      rc = cplab_diag_set(d, CPLAB_EIO, "%s:%d:%d: %s", a->check, err.line, err.column, err.text);
    else if (!now) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
    else if (cplab_model_validation_compare(now, old, a->check, d) != 0) *drift = 1;
    json_decref(now);
  } else if (!rc) {
    rc = write_doc(doc, cli->out, d);
  }
  if (!rc && !*drift && !cli->quiet && a->check)
    fprintf(stderr, PROG ": %s: %lld predictions, median |error| %.3f, max %.3f: as committed (head pad %lld)\n",
            a->check, (long long)json_integer_value(json_object_get(doc, "predictions")),
            json_real_value(json_object_get(doc, "median_abs_error")), json_real_value(json_object_get(doc, "max_abs_error")),
            (long long)json_integer_value(json_object_get(doc, "head_pad")));
  json_decref(doc), json_decref(old);
  return rc;
}

typedef struct pctx {
  cplab_model_inputs in;
  const char *backend;
  json_t *rows;
} pctx;

static int predict_one(void *ctx, const cplab_bench_config *c, cplab_diag *d) {
  pctx *x = ctx;
  cplab_model_result r;
  int rc = cplab_model_predict(c->scenario, &x->in, &r, d);
  if (rc) {
    cplab_diag_prefix(d, "%s: ", c->title);
    return rc;
  }
  char wl[96];
  cplab_bench_workload_label(c->workload, wl, sizeof wl);
  json_t *ph = json_object();
  for (int k = 0; k < CPLAB_MODEL_PHASES; k++) json_object_set_new(ph, cplab_model_phase_name(k), json_real(r.phase_ms[k]));
  const char *metric = c->workload->kind == CPLAB_BENCH_PREFILL ? "TTFT" : "TPOT";
  int gpus = c->parallel->tp * c->parallel->pcp;
  /* Tokens a second per GPU: a prefill's new tokens over its TTFT, a decode step's rows over its TPOT. */
  double tokens = c->workload->kind == CPLAB_BENCH_PREFILL ? (double)(c->workload->tokens * c->workload->batch)
                                                           : (double)c->workload->batch;
  json_array_append_new(x->rows, json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:f, s:f, s:o, s:i, s:b, s:f, s:f, s:f}",
                                           "layout", c->parallel->label, "workload", wl, "graph",
                                           cplab_graph_mode_label(c->graph), "metric", metric, "gpus", gpus, "tokens",
                                           (json_int_t)c->workload->tokens, "batch", (json_int_t)c->workload->batch,
                                           "ms", r.step_ms, "tokens_per_s_per_gpu", tokens / (r.step_ms / 1e3) / gpus,
                                           "phases_ms", ph, "extrapolated", r.extrapolated, "moe_fast_path",
                                           r.moe_fast_path, "weights_gb_per_rank", r.weights_gb, "kv_gb_per_rank",
                                           r.kv_gb, "max_context", r.max_context));
  return 0;
}

static int predict(const args *a, const cplab_cli *cli, cplab_diag *d) {
  cplab_bench_matrix m;
  memset(&m, 0, sizeof m);
  snprintf(m.preset, sizeof m.preset, "%s", a->preset);
  m.seed = cli->has_seed ? cli->seed : 20261129, m.interleave = 1, m.block_size = 64;
  int none = !a->prefill && !a->decode;
  int rc = cplab_bench_parse_parallel(&m, a->parallel, d);
  if (!rc && a->model_set) rc = cplab_bench_parse_model_set(&m, a->model_set, d);
  if (!rc) rc = cplab_bench_parse_graphs(&m, a->graphs, d);
  if (!rc && (none || a->prefill))
    rc = cplab_bench_add_workloads(&m, CPLAB_BENCH_PREFILL, none ? "32768" : a->prefill, a->batch, a->out_tokens, d);
  if (!rc && (none || a->decode))
    rc = cplab_bench_add_workloads(&m, CPLAB_BENCH_DECODE, none ? "32768" : a->decode, a->batch, a->out_tokens, d);
  cplab_model_table *t = NULL;
  cplab_model_params params;
  cplab_model_link link;
  if (!rc) rc = cplab_model_table_alloc(&t, d);
  for (int i = 0; i < a->num_tables && !rc; i++) rc = cplab_model_table_load(t, a->tables[i], d);
  if (!rc) rc = cplab_model_params_load(a->params, &params, d);
  int nccl = !a->backend || strcmp(a->backend, "nccl") == 0;
  if (!rc) {
    const char *l = a->link ? a->link : a->card->name;
    rc = strchr(l, '/') || strstr(l, ".json") ? cplab_model_link_load(l, &link, d) : cplab_model_link_preset(l, &link, d);
  }
  if (!rc && a->link_cal) rc = cplab_model_link_calibrate(a->link_cal, &link, d);
  pctx x = {{t, nccl ? &link : NULL, t ? t->copy_gbps : 0, &params, (int)a->layers, a->extrapolate, a->card->compute,
             a->card->memory, a->card->gb, 0.9, a->weight_bytes, (int)a->head_pad},
            a->backend, json_array()};
  if (!rc) rc = cplab_bench_for_each(&m, predict_one, &x, d);
  json_t *tables = json_array();
  for (size_t i = 0; t && i < t->num_sources; i++) json_array_append_new(tables, json_string(t->sources[i]));
  if (!rc && cli->json) {
    json_t *doc = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:o, s:s, s:s, s:{s:f, s:f}, s:O}", "cplab_model", "1.0.0",
                            "preset", a->preset, "card", a->card->name, "layers", (int)a->layers, "head_pad",
                            (int)a->head_pad, "backend", nccl ? "nccl" : "single", "tables", tables,
                            "params", a->params, "link", nccl ? link.name : "device copies", "intra", "latency_us",
                            link.intra.latency_us, "busbw_gbps", link.intra.busbw_gbps, "predictions", x.rows);
    tables = NULL;
    rc = write_doc(doc, cli->out, d);
    json_decref(doc);
  } else if (!rc) {
    char pad[16] = "none";
    if (a->head_pad > 1) snprintf(pad, sizeof pad, "%d", (int)a->head_pad);
    printf("# cplab-model: %s, %d layers, card %s, head pad %s, %s backend%s%s\n# tables:", a->preset, (int)a->layers,
           a->card->name, pad, nccl ? "nccl" : "single-device", nccl ? ", link " : "", nccl ? link.name : "");
    for (size_t i = 0; i < t->num_sources; i++) printf(" %s", t->sources[i]);
    printf("\n# params: %s\n# %-10s %-44s %-9s %-6s %12s %12s %9s %9s %11s %12s\n", a->params, "layout", "workload",
           "graph", "metric", "ms", "tok/s/GPU", "weightGB", "kvGB", "max_ctx", "extrapolated");
    for (size_t i = 0; i < json_array_size(x.rows); i++) {
      const json_t *r = json_array_get(x.rows, i);
      printf("  %-10s %-44s %-9s %-6s %12.4f %12.1f %9.1f %9.2f %11.0f %12lld\n",
             json_string_value(json_object_get(r, "layout")), json_string_value(json_object_get(r, "workload")),
             json_string_value(json_object_get(r, "graph")), json_string_value(json_object_get(r, "metric")),
             json_real_value(json_object_get(r, "ms")), json_real_value(json_object_get(r, "tokens_per_s_per_gpu")),
             json_real_value(json_object_get(r, "weights_gb_per_rank")), json_real_value(json_object_get(r, "kv_gb_per_rank")),
             json_real_value(json_object_get(r, "max_context")),
             (long long)json_integer_value(json_object_get(r, "extrapolated")));
    }
  }
  json_decref(tables), json_decref(x.rows);
  cplab_model_table_free(t);
  return rc;
}

int main(int argc, char **argv) {
  cplab_cli cli;
  cplab_diag d = {0};
  args a = {.preset = "glm-5", .parallel = "tp4,pcp4,tp4dcp4,pcp4dcp4", .graphs = "eager,full", .batch = 1,
            .out_tokens = 16, .card = &cards[0], .weight_bytes = 1, .head_pad = CPLAB_HEAD_PAD_AUTO};
  cplab_cli_init(&cli, NULL);
  if (parse(argc, argv, &cli, &a, &d)) {
    cplab_cli_usage_error(PROG, &d);
    return CPLAB_EXIT_ERROR;
  }
  if (cplab_cli_answer_info(&cli, PROG, usage)) return CPLAB_EXIT_OK;
  /* cplab-bench's note, less its pointer to --layout: cplab-model takes no
   * layout by name (its scenarios run vllm's). */
  if (a.old_layouts) fputs(PROG ": note: --layouts is deprecated: it is --parallel now\n", stderr);
  int drift = 0;
  int rc = a.validate ? validate(&a, &cli, &drift, &d) : predict(&a, &cli, &d);
  if (rc || drift) cplab_diag_report(stderr, PROG, &d);
  return rc ? CPLAB_EXIT_ERROR : drift ? CPLAB_EXIT_DIFFERENT : CPLAB_EXIT_OK;
}
