/* cplab-kernel-bench: each kernel of cplab's attention path and of its
 * indexer path, alone, over a table of shapes, against the card's ceilings
 * and a PyTorch peer measured in the same run. The driver (this file):
 * the command line, the selection of cases, the ceilings (bench/ceilings.c,
 * which also backs the ceiling_* cases of bench/kernel_ceilings.c), then for
 * every selected case: set-up
 * (input sets generated on the device, enough of them to span 4x the L2),
 * the check against the double-precision reference on poisoned outputs,
 * timing (CUDA events, warm-up, repetitions enqueued back to back over the
 * rotating sets: median, p10, p90), the table line, the kernels.json entry.
 * The kernels and their case tables: kernel_bench.h says how to add one.
 * The output every benchmark writes alike (date, command, card, JSON file)
 * is bench/bench_out.c's.
 * The driver is a job (bench/kb_job.c): built with MPI and NCCL it runs
 * under mpirun, one rank per GPU, every rank running every selected case
 * and rank 0 alone printing and writing; the ranked kernels (the DCP gather
 * against NCCL's all-gather, the MoE block's PCP paths) need the job's NCCL
 * communicator and are timed by the collective method (time_collective).
 * Under more than one rank only ranked kernels run; under one, both kinds.
 * Exit 0 ok, 1 a check failed (that case is not timed; the others run),
 * 2 bad usage or an error (an unreadable or malformed peer file, no GPU, a
 * failed call: a case that fails is recorded and the others still run; under
 * more than one rank, an error on any rank ends the whole job). */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ceilings.h"
#include "config.h"
#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "cplab_kernels.h"
#include "cplab_stream.h"
#include "kb_job.h"
#include "kernel_bench.h"
#include "kernel_peer.h"

#define PROG "cplab-kernel-bench"

/* The kernels, in table order: the attention path (bench/kernel_attention.c), then the indexer path: logits
 * (bench/kernel_indexer.c; decode: bench/kernel_indexer_decode.c), top-k (bench/kernel_topk.c), the conversion of its lists and the row movers
 * (bench/kernel_convert.c), the DCP decode rows' combine (bench/kernel_combine.c); last the card's ceilings as cases
 * (bench/kernel_ceilings.c, family "ceilings": what cplab-ceilings-bench measured). */
static const cplab_kb_kernel *const kernels[] = {
    &cplab_kb_sparse_mla_prefill,
    &cplab_kb_sparse_mla_decode_fp8,
    &cplab_kb_indexer_logits_prefill,
    &cplab_kb_indexer_logits_decode,
    &cplab_kb_indexer_topk_decode,
    &cplab_kb_topk_prefill,
    &cplab_kb_topk_decode,
    &cplab_kb_topk_decode_convert,
    &cplab_kb_topk_merge,
    &cplab_kb_topk_merge_convert,
    &cplab_kb_convert,
    &cplab_kb_gather_upconvert,
    &cplab_kb_gather_idx,
    &cplab_kb_restore,
    &cplab_kb_lse_combine,
    &cplab_kb_ceiling_copy,
    &cplab_kb_ceiling_gemm_bf16,
    &cplab_kb_ceiling_gemm_fp8,
#if defined(CPLAB_KB_RANKED) && CPLAB_KB_RANKED
    /* Ranked: MPI and NCCL builds only (bench/kernel_gather_nccl.c, bench/kernel_moe_paths.c). */
    &cplab_kb_gather_nccl,
    &cplab_kb_moe_paths,
#endif
};
#define NKERNELS ((int)(sizeof kernels / sizeof kernels[0]))
#define MAX_CASES 1024

typedef struct opts {
  const char *kernel_list, *case_list, *peer, *json, *list_json, *commit;
  int all, list, reps, warmup, check_rows, max_sets, ceilings, settle_ms, lead_us, quiet, help, version;
  size_t mem_budget, copy_bytes;
  uint64_t seed;
  cplab_ceil_shape gemm;
} opts;

/* The selected cases, in table order. */
typedef struct selection {
  int n;
  const cplab_kb_kernel *k[MAX_CASES];
  const cplab_kb_case *c[MAX_CASES];
} selection;

/* ---- options ------------------------------------------------------------------- */

static void usage(FILE *f) {
  fputs("Usage: " PROG " [--kernel LIST] [--case LIST] [--all] [--list] [--list-json FILE] [--peer FILE]\n"
        "       [--json FILE] [--reps N] [--warmup N] [--check-rows N] [--seed N] [--max-sets N] [--mem-gib N]\n"
        "       [--no-ceilings] [--copy-mib N] [--gemm MxNxK] [--settle-ms N] [--lead-us N] [--commit ID] [-q]\n"
        "Times cplab's kernels alone over a table of shapes (FlashMLA's and cplab-bench's per-rank shapes):\n"
        "each case's inputs generated on the device and rotated over 4x the L2, its output checked against\n"
        "the double-precision reference before it is timed (CUDA events, warm-up, median / p10 / p90), set\n"
        "against the card's ceilings measured in the same run (copy bandwidth, cuBLASLt bf16 and fp8 GEMM)\n"
        "and against a PyTorch peer (bench/kernel_peer.py's file, --peer).\n"
        "Built with MPI and NCCL, it also runs under 'mpirun -np N', one rank per GPU: every rank runs every case,\n"
        "rank 0 prints and writes; there only the ranked kernels run (" CPLAB_KB_RANKED_NAMES ": collectives over\n"
        "the ranks, timed with the stream drained and the ranks at a barrier before each operation, the slowest\n"
        "rank's time), and without --kernel or --case their default cases are the selection.\n"
        "  --kernel LIST     only these kernels (comma-separated names; --list shows them), or a family:\n"
        "                    'ceilings' = ceiling_copy, ceiling_gemm_bf16, ceiling_gemm_fp8 (the card's copy\n"
        "                    bandwidth and cuBLASLt GEMMs as cases, not in the default set); the ranked kernels\n"
        "                    (" CPLAB_KB_RANKED_NAMES ") run only when named here or by --case, or under mpirun\n"
        "  --case LIST       exactly these cases (comma-separated names or shell patterns, e.g. 'dcp4-*')\n"
        "  --all             every case of the table (default: the cases marked * in --list)\n"
        "  --list            print the case table (* default, > selected by the other options) and exit\n"
        "  --list-json FILE  write the selected cases as JSON (bench/kernel_peer.py's input) and exit\n"
        "  --peer FILE       the PyTorch peer's results (bench/kernel_peer.py -o FILE), put beside each case\n"
        "  --json FILE       write kernels.json to FILE (also -o FILE)\n"
        "  --reps N          timed repetitions per case (default 30; results want >= 20)\n"
        "  --warmup N        untimed runs before them (default 5)\n"
        "  --check-rows N    rows compared with the reference, spread over the call (default 8)\n"
        "  --seed N          seed of the generated inputs (default 1)\n"
        "  --max-sets N      at most N rotating input sets per case (default 256)\n"
        "  --mem-gib N       and at most N GiB of them (default 48)\n"
        "  --no-ceilings     do not measure the ceilings (no ratios then)\n"
        "  --copy-mib N      the ceilings' copy size in MiB (default 1024)\n"
        "  --gemm MxNxK      the ceilings' GEMM shape (default 8192x8192x8192)\n"
        "  --settle-ms N     an idle pause of N ms after the ceilings, before the first case (default 1000:\n"
        "                    right after the ceilings' GEMMs a case ran ~3% slow, after the pause ~1%)\n"
        "  --lead-us N       before each case's runs the GPU waits N us a run (default 50; at most 0.2 s in all)\n"
        "                    while the host queues them, so no run's time holds the host's launch time;\n"
        "                    0: no wait (then a run the host launches more slowly than the GPU runs it does)\n"
        "  --commit ID       the commit to record (default: the one configure saw)\n"
        "  -q, --quiet       no progress lines on stderr\n"
        "  -h, --help        this help\n"
        "  -V, --version     the version\n"
        "Output: the table on stdout (progress on stderr). Exit status: 0 ok, 1 a check failed (that case is\n"
        "not timed), 2 bad usage or an error (no GPU, an unreadable or malformed peer file, a failed call).\n",
        f);
}

static int parse_int_opt(const char *arg, const char *name, int64_t lo, int64_t hi, int64_t *out, cplab_diag *d) {
  return cplab_cli_parse_int(name, arg, lo, hi, out, d);
}

static int parse_opts(int argc, char **argv, opts *o, cplab_diag *d) {
  enum {
    OPT_KERNEL = CPLAB_OPT_PROGRAM, OPT_CASE, OPT_ALL, OPT_LIST, OPT_LIST_JSON, OPT_PEER, OPT_JSON, OPT_REPS,
    OPT_WARMUP, OPT_CHECK_ROWS, OPT_SEED, OPT_MAX_SETS, OPT_MEM_GIB, OPT_NO_CEILINGS, OPT_COPY_MIB, OPT_GEMM,
    OPT_SETTLE_MS, OPT_LEAD_US, OPT_COMMIT
  };
  static const struct option longopts[] = {
      {"kernel", required_argument, NULL, OPT_KERNEL}, {"case", required_argument, NULL, OPT_CASE},
      {"all", no_argument, NULL, OPT_ALL}, {"list", no_argument, NULL, OPT_LIST},
      {"list-json", required_argument, NULL, OPT_LIST_JSON}, {"peer", required_argument, NULL, OPT_PEER},
      {"json", required_argument, NULL, OPT_JSON}, {"out", required_argument, NULL, 'o'},
      {"reps", required_argument, NULL, OPT_REPS}, {"warmup", required_argument, NULL, OPT_WARMUP},
      {"check-rows", required_argument, NULL, OPT_CHECK_ROWS}, {"seed", required_argument, NULL, OPT_SEED},
      {"max-sets", required_argument, NULL, OPT_MAX_SETS}, {"mem-gib", required_argument, NULL, OPT_MEM_GIB},
      {"no-ceilings", no_argument, NULL, OPT_NO_CEILINGS}, {"copy-mib", required_argument, NULL, OPT_COPY_MIB},
      {"gemm", required_argument, NULL, OPT_GEMM}, {"settle-ms", required_argument, NULL, OPT_SETTLE_MS},
      {"lead-us", required_argument, NULL, OPT_LEAD_US}, {"commit", required_argument, NULL, OPT_COMMIT},
      {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  *o = (opts){.reps = 30, .warmup = 5, .check_rows = 8, .max_sets = 256, .ceilings = 1, .settle_ms = 1000, .lead_us = 50,
              .seed = 1, .mem_budget = (size_t)48 << 30, .copy_bytes = (size_t)1024 << 20, .commit = CPLAB_GIT_COMMIT,
              .gemm = {8192, 8192, 8192}};
  opterr = 0;
  int opt, rc = 0, n;
  int64_t v;
  while (!rc && (opt = getopt_long(argc, argv, "o:qhV", longopts, NULL)) != -1) {
    switch (opt) {
      case OPT_KERNEL: o->kernel_list = optarg; break;
      case OPT_CASE: o->case_list = optarg; break;
      case OPT_ALL: o->all = 1; break;
      case OPT_LIST: o->list = 1; break;
      case OPT_LIST_JSON: o->list_json = optarg; break;
      case OPT_PEER: o->peer = optarg; break;
      case OPT_JSON:
      case 'o': o->json = optarg; break;
      case OPT_REPS:
        if (!(rc = parse_int_opt(optarg, "--reps", 1, 100000, &v, d))) o->reps = (int)v;
        break;
      case OPT_WARMUP:
        if (!(rc = parse_int_opt(optarg, "--warmup", 0, 10000, &v, d))) o->warmup = (int)v;
        break;
      case OPT_CHECK_ROWS:
        if (!(rc = parse_int_opt(optarg, "--check-rows", 1, 64, &v, d))) o->check_rows = (int)v;
        break;
      case OPT_SEED:
        if (cplab_parse_u64(optarg, &o->seed) != 0)
          rc = cplab_diag_set(d, CPLAB_EUSAGE, "--seed: expected a non-negative integer, got '%s'", optarg);
        break;
      case OPT_MAX_SETS:
        if (!(rc = parse_int_opt(optarg, "--max-sets", 2, 256, &v, d))) o->max_sets = (int)v;
        break;
      case OPT_MEM_GIB:
        if (!(rc = parse_int_opt(optarg, "--mem-gib", 1, 4096, &v, d))) o->mem_budget = (size_t)v << 30;
        break;
      case OPT_NO_CEILINGS: o->ceilings = 0; break;
      case OPT_COPY_MIB:
        if (!(rc = parse_int_opt(optarg, "--copy-mib", 1, 16384, &v, d))) o->copy_bytes = (size_t)v << 20;
        break;
      case OPT_GEMM: rc = cplab_ceil_parse_shapes("--gemm", optarg, &o->gemm, 1, &n, d); break;
      case OPT_SETTLE_MS:
        if (!(rc = parse_int_opt(optarg, "--settle-ms", 0, 60000, &v, d))) o->settle_ms = (int)v;
        break;
      case OPT_LEAD_US:
        if (!(rc = parse_int_opt(optarg, "--lead-us", 0, 10000, &v, d))) o->lead_us = (int)v;
        break;
      case OPT_COMMIT: o->commit = optarg; break;
      case 'q': o->quiet = 1; break;
      case 'h': o->help = 1; break;
      case 'V': o->version = 1; break;
      default: rc = cplab_cli_getopt_error(argv, "o:qhV", d);
    }
  }
  if (!rc && optind < argc) rc = cplab_diag_set(d, CPLAB_EUSAGE, "unexpected argument '%s'", argv[optind]);
  return rc;
}

/* The hold before a timing loop of nops operations (--lead-us a run). */
static unsigned lead_us(const opts *o, int nops) {
  return cplab_bench_lead_us((unsigned)o->lead_us, nops, o->reps, o->warmup);
}

/* ---- selection ----------------------------------------------------------------------- */

/* Item i of a comma-separated list into buf; 0 when there is none. */
static int list_item(const char *list, int i, char *buf, size_t cap) {
  const char *p = list;
  for (; i > 0 && p; i--) p = (p = strchr(p, ',')) ? p + 1 : NULL;
  if (!p) return 0;
  size_t n = strcspn(p, ",");
  if (n >= cap) n = cap - 1;
  memcpy(buf, p, n);
  buf[n] = '\0';
  return 1;
}

/* Whether k's cases are candidates: the kernels --kernel names; without it,
 * the single-GPU kernels in a world of one rank (a ranked kernel there only
 * when named: it is no kernel alone) and the ranked ones under mpirun with
 * more. */
static int kernel_wanted(const opts *o, const cplab_kb_kernel *k, int world) {
  char item[128];
  if (!o->kernel_list) return world > 1 ? k->ranked : !k->ranked;
  for (int i = 0; list_item(o->kernel_list, i, item, sizeof item); i++)
    if (!strcmp(item, k->name) || (k->family && !strcmp(item, k->family))) return 1;
  return 0;
}

/* Whether name is a ranked kernel this build lacks (no MPI and NCCL). */
static int ranked_missing(const char *name) {
  char item[128];
  if (cplab_kb_job_ranked_build()) return 0;
  for (int i = 0; list_item(CPLAB_KB_RANKED_NAMES, i, item, sizeof item); i++)
    if (!strcmp(name, item + strspn(item, " "))) return 1;
  return 0;
}

static int select_cases(const opts *o, int world, selection *s, cplab_diag *d) {
  char item[128];
  s->n = 0;
  for (int i = 0; o->kernel_list && list_item(o->kernel_list, i, item, sizeof item); i++) {
    int known = 0;
    for (int k = 0; k < NKERNELS; k++)
      known |= !strcmp(item, kernels[k]->name) || (kernels[k]->family && !strcmp(item, kernels[k]->family));
    if (!known && ranked_missing(item))
      CPLAB_FAIL(d, CPLAB_EUSAGE,
                 "--kernel: '%s' is a ranked kernel (NCCL collectives over MPI ranks): this build has no NCCL and no "
                 "MPI (the CPU emulation, or configured without --with-nccl)", item);
    if (!known) {
      char names[512] = "";
      for (int k = 0; k < NKERNELS; k++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", kernels[k]->name);
      CPLAB_FAIL(d, CPLAB_EUSAGE, "--kernel: unknown kernel '%s' (kernels: %s; families: ceilings)", item, names);
    }
  }
  for (int i = 0; o->case_list && list_item(o->case_list, i, item, sizeof item); i++) {
    int here = 0;
    const cplab_kb_kernel *other = NULL; /* a kernel of a matching case that is not wanted */
    if (!item[0]) CPLAB_FAIL(d, CPLAB_EUSAGE, "--case: empty item in '%s'", o->case_list);
    for (int k = 0; k < NKERNELS; k++)
      for (int c = 0; c < kernels[k]->ncases; c++)
        if (!fnmatch(item, kernels[k]->cases[c].name, 0)) {
          if (kernel_wanted(o, kernels[k], world)) here = 1;
          else if (!other) other = kernels[k];
        }
    if (!here && !other) CPLAB_FAIL(d, CPLAB_EUSAGE, "--case: no case matches '%s' (--list --all shows the cases)", item);
    if (!here && o->kernel_list)
      CPLAB_FAIL(d, CPLAB_EUSAGE, "--case: '%s' matches no case of the kernels --kernel selects", item);
    if (!here && world > 1)
      CPLAB_FAIL(d, CPLAB_EUSAGE,
                 "--case: '%s' is a case of kernel '%s', which is not ranked: under mpirun with %d ranks only the "
                 "ranked kernels run (%s)", item, other->name, world, CPLAB_KB_RANKED_NAMES);
    if (!here)
      CPLAB_FAIL(d, CPLAB_EUSAGE, "--case: '%s' is a case of the ranked kernel '%s': name it (--kernel %s)", item,
                 other->name, other->name);
  }
  for (int k = 0; k < NKERNELS; k++) {
    if (!kernel_wanted(o, kernels[k], world)) continue;
    for (int c = 0; c < kernels[k]->ncases; c++) {
      const cplab_kb_case *kc = &kernels[k]->cases[c];
      int want = o->all || kc->in_default;
      if (o->case_list) {
        want = 0;
        for (int i = 0; !want && list_item(o->case_list, i, item, sizeof item); i++) want = !fnmatch(item, kc->name, 0);
      }
      if (!want) continue;
      if (s->n == MAX_CASES) CPLAB_FAIL(d, CPLAB_EINTERNAL, "more than %d cases selected", MAX_CASES);
      s->k[s->n] = kernels[k], s->c[s->n++] = kc;
    }
  }
  if (s->n == 0) CPLAB_FAIL(d, CPLAB_EUSAGE, "no case selected");
  /* A single-GPU kernel under several ranks would run the same case P times, each timing its own GPU. */
  for (int i = 0; world > 1 && i < s->n; i++)
    if (!s->k[i]->ranked)
      CPLAB_FAIL(d, CPLAB_EUSAGE,
                 "kernel '%s' (case %s) is not ranked: under mpirun with %d ranks only the ranked kernels run (%s); "
                 "run it without mpirun", s->k[i]->name, s->c[i]->name, world, CPLAB_KB_RANKED_NAMES);
  return 0;
}

static int selected(const selection *s, const cplab_kb_case *c) {
  for (int i = 0; i < s->n; i++)
    if (s->c[i] == c) return 1;
  return 0;
}

static void list_cases(const opts *o, int world, const selection *s, const cplab_kb_peers *peers) {
  char text[160];
  for (int k = 0; k < NKERNELS; k++) {
    if (!kernel_wanted(o, kernels[k], world)) continue;
    printf("# kernel %s: %s\n#   %-24s %-46s %s%s\n", kernels[k]->name, kernels[k]->summary, "case", "shape",
           peers ? "peer_us  " : "", "note");
    for (int c = 0; c < kernels[k]->ncases; c++) {
      const cplab_kb_case *kc = &kernels[k]->cases[c];
      kernels[k]->shape_text(kc->shape, text, sizeof text);
      printf("%c%c %-24s %-46s ", selected(s, kc) ? '>' : ' ', kc->in_default ? '*' : ' ', kc->name, text);
      if (peers) {
        const cplab_kb_peer *p = cplab_kb_peers_find(peers, kc);
        if (p && p->has_time) printf("%-9.1f", p->median_us);
        else printf("%-9s", p ? "error" : "-");
      }
      printf("%s\n", kc->note);
    }
  }
  printf("# %d of the cases selected (>); * the default set\n", s->n);
}

static json_t *case_json(const cplab_kb_kernel *k, const cplab_kb_case *c) {
  json_t *shape = k->shape_json(c->shape);
  return json_pack("{s:s, s:s, s:b, s:s, s:o}", "kernel", k->name, "case", c->name, "default", c->in_default, "note",
                   c->note, "shape", shape);
}

static int write_case_list(const char *path, const selection *s, int argc, char **argv, cplab_diag *d) {
  json_t *cases = json_array();
  for (int i = 0; i < s->n; i++) json_array_append_new(cases, case_json(s->k[i], s->c[i]));
  char *cmd = cplab_bench_command(argc, argv);
  json_t *doc = json_pack("{s:s, s:s, s:s, s:o}", "program", PROG, "command", cmd ? cmd : "", "version",
                          PACKAGE_VERSION, "cases", cases);
  free(cmd);
  int rc = cplab_bench_write_json(path, doc, d);
  json_decref(doc);
  return rc;
}

/* ---- the ceilings ------------------------------------------------------------------- */

typedef struct ceilings {
  int measured;
  double copy_gbps, bf16_tflops, fp8_tflops, busy;
  json_t *json;
} ceilings;

static int measure_ceilings(const opts *o, size_t l2, void *stream, ceilings *out, cplab_diag *d) {
  cplab_ceil_op ops[3];
  double *t[3] = {NULL, NULL, NULL}, rate[3];
  void *ctx[3] = {&ops[0], &ops[1], &ops[2]};
  cplab_gemm *g = NULL;
  uint64_t rng = o->seed ^ 0x6365696c696e6773ULL;
  memset(ops, 0, sizeof ops);
  int rc = cplab_gemm_create(&g, d);
  if (!rc) rc = cplab_ceil_setup_copy(&ops[0], o->copy_bytes, 4 * l2, d);
  if (!rc) rc = cplab_ceil_setup_gemm(&ops[1], o->gemm, 0, g, l2, &rng, d);
  if (!rc) rc = cplab_ceil_setup_gemm(&ops[2], o->gemm, 1, g, l2, &rng, d);
  for (int i = 0; !rc && i < 3; i++) {
    cplab_ceil_verdict v;
    if (!(rc = cplab_ceil_check(&ops[i], stream, &rng, &v, d)) && !v.ok)
      rc = cplab_diag_set(d, CPLAB_EMISMATCH, "%s", v.detail); /* no ratio against a wrong operation */
    if (!rc && ops[i].gemm) printf("# check %s\n", v.detail);
  }
  for (int i = 0; !rc && i < 3; i++)
    if (!(t[i] = malloc((size_t)o->reps * sizeof **t))) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory");
  cplab_bench_loop loop = {0};
  if (!rc) rc = cplab_bench_time(3, cplab_ceil_run, ctx, o->reps, o->warmup, lead_us(o, 3), stream, t, &loop, d);
  out->busy = loop.busy;
  if (!rc) {
    json_t *results = json_array();
    for (int i = 0; i < 3; i++) {
      cplab_spread st = cplab_stats_spread(t[i], (size_t)o->reps);
      double work, unit;
      cplab_ceil_work(&ops[i], &work, &unit);
      rate[i] = work / st.median / unit;
      json_array_append_new(results, cplab_ceil_json(&ops[i], &st));
    }
    out->measured = 1, out->copy_gbps = rate[0], out->bf16_tflops = rate[1], out->fp8_tflops = rate[2];
    out->json = json_pack("{s:f, s:f, s:f, s:f, s:s, s:o}", "copy_gbps", rate[0], "bf16_tflops", rate[1],
                          "fp8_tflops", rate[2], "gpu_busy_fraction", out->busy, "conventions",
                          "copy: GB/s = 2 x bytes (read + write) / time / 1e9; GEMM: TFLOPS = 2 M N K / time / 1e12; "
                          "rates at the median time (bench/ceilings.h)",
                          "results", results);
    json_object_set_new(out->json, "lead_us", json_integer(lead_us(o, 3)));
    json_object_set_new(out->json, "host_queue_us", json_real(1e6 * loop.queue_s));
    printf("# ceilings (%d repetitions, interleaved): copy %.4g GB/s (read + write, %s), bf16 GEMM %.4g TFLOPS, "
           "fp8 GEMM %.4g TFLOPS (%s)\n",
           o->reps, rate[0], ops[0].name, rate[1], rate[2], ops[1].name + 5);
  }
  for (int i = 0; i < 3; i++) cplab_ceil_free(&ops[i]), free(t[i]);
  cplab_diag scratch = {0};
  if (g) cplab_gemm_destroy(g, rc ? &scratch : d);
  return rc;
}

/* ---- one case --------------------------------------------------------------------- */

typedef struct outcome {
  int failed_check, error;
} outcome;

static double elapsed(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

/* The table's columns: the rates (the GEMM ceiling's column names the one the kernel's rate is set
 * against) and the check's two error columns, by the kernel's kinds. */
static void table_header(const cplab_kb_kernel *k) {
  static const char *const err1[] = {"rel_l2", "rel_err", "rel_err"}, *const err2[] = {"lse_abs", "wrong", "wrong"};
  printf("# %s: %s\n", k->name, k->summary);
  printf("#%-23s %-46s %4s %10s %10s %10s %7s %7s %7s %6s %6s %6s %8s %8s %10s %7s\n", "case", "shape", "sets",
         "median_us", "p10_us", "p90_us", "TFLOPS", "valid", "GB/s", k->rate == CPLAB_KB_RATE_FP8_FLOPS ? "%fp8" : "%bf16",
         "%copy", "%cp=", err1[k->check_kind], err2[k->check_kind], "peer_us", "xpeer");
}

/* The peer's entry; its rate by the kernel's count (flop or bytes) at its median. */
static json_t *peer_json(const cplab_kb_peer *p, double median_us, const cplab_kb_kernel *k, const cplab_kb_work *w) {
  if (!p) return json_null();
  if (!p->has_time) return json_pack("{s:s, s:s}", "name", p->name, "error", p->error);
  json_t *j = json_pack("{s:s, s:f, s:f, s:f, s:f}", "name", p->name, "median_us", p->median_us, "p10_us", p->p10_us,
                        "p90_us", p->p90_us, "peer_over_kernel", median_us > 0 ? p->median_us / median_us : 0.0);
  if (k->rate == CPLAB_KB_RATE_BYTES) json_object_set_new(j, "gbps", json_real(w->bytes / (1e-6 * p->median_us) / 1e9));
  else json_object_set_new(j, "tflops", json_real(w->flop / (1e-6 * p->median_us) / 1e12));
  if (p->has_check)
    json_object_set_new(j, "check", json_pack("{s:f, s:f}", "max_rel_l2", p->max_rel_l2, "max_lse_abs", p->max_lse_abs));
  return j;
}

/* The check's entry: the fields of the kernel's kind of check. */
static json_t *check_json(const cplab_kb_kernel *k, const cplab_kb_check *c) {
  switch (k->check_kind) {
  case CPLAB_KB_CHECK_TOLERANCE:
    return json_pack("{s:b, s:i, s:I, s:f, s:f, s:I, s:s}", "ok", c->ok, "rows", c->rows, "compared",
                     (json_int_t)c->compared, "max_rel_err", c->max_rel_err, "tol_rel_err", c->tol_rel_err,
                     "mismatches", (json_int_t)c->mismatches, "reference", c->reference);
  case CPLAB_KB_CHECK_EXACT:
    return json_pack("{s:b, s:i, s:I, s:I, s:s}", "ok", c->ok, "rows", c->rows, "compared", (json_int_t)c->compared,
                     "mismatches", (json_int_t)c->mismatches, "reference", c->reference);
  default:
    return json_pack("{s:b, s:i, s:f, s:f, s:f, s:f, s:f}", "ok", c->ok, "rows", c->rows, "max_rel_l2", c->max_rel_l2,
                     "max_lse_abs", c->max_lse_abs, "tol_rel_l2", c->tol_rel_l2, "tol_lse_abs", c->tol_lse_abs,
                     "tol_lse_rel", c->tol_lse_rel);
  }
}

/* The timing and rate fields of a timed case: the times, then the rates of the kernel's kind, each against
 * its ceiling when the ceilings were measured. Fills the table's rate columns. */
static json_t *timing_json(const opts *o, const cplab_kb_kernel *k, const cplab_kb_work *w, const cplab_spread *st,
                           const cplab_bench_loop *loop, const ceilings *ceil, char cols[5][16]) {
  double tf = w->flop / st->median / 1e12, tfv = w->flop_valid / st->median / 1e12, gbps = w->bytes / st->median / 1e9;
  json_t *j = json_pack("{s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:f, s:f}", "median_us", 1e6 * st->median, "p10_us",
                        1e6 * st->p10, "p90_us", 1e6 * st->p90, "min_us", 1e6 * st->min, "max_us", 1e6 * st->max,
                        "reps", o->reps, "warmup", o->warmup, "sets", w->sets, "rotation_bytes", w->sets * w->set_bytes,
                        "gpu_busy_fraction", loop->busy);
  json_object_set_new(j, "lead_us", json_integer(lead_us(o, 1)));
  json_object_set_new(j, "host_queue_us", json_real(1e6 * loop->queue_s));
  for (int i = 0; i < 5; i++) snprintf(cols[i], 16, "-");
  if (k->rate != CPLAB_KB_RATE_BYTES) {
    double gemm = k->rate == CPLAB_KB_RATE_FP8_FLOPS ? ceil->fp8_tflops : ceil->bf16_tflops;
    json_object_set_new(j, "tflops", json_real(tf));
    json_object_set_new(j, "flop", json_real(w->flop));
    snprintf(cols[0], 16, "%.1f", tf);
    if (ceil->measured) {
      json_object_set_new(j, k->rate == CPLAB_KB_RATE_FP8_FLOPS ? "of_fp8_gemm" : "of_bf16_gemm", json_real(tf / gemm));
      snprintf(cols[3], 16, "%.1f", 100 * tf / gemm);
    }
  }
  if (k->rate == CPLAB_KB_RATE_ATTENTION) {
    json_object_set_new(j, "tflops_valid", json_real(tfv));
    json_object_set_new(j, "flop_valid", json_real(w->flop_valid));
    snprintf(cols[1], 16, "%.1f", tfv);
  }
  if (k->rate == CPLAB_KB_RATE_ATTENTION || k->rate == CPLAB_KB_RATE_BYTES) {
    json_object_set_new(j, "gbps", json_real(gbps));
    json_object_set_new(j, "bytes", json_real(w->bytes));
    snprintf(cols[2], 16, "%.0f", gbps);
    if (ceil->measured) {
      json_object_set_new(j, "of_copy", json_real(gbps / ceil->copy_gbps));
      snprintf(cols[4], 16, "%.1f", 100 * gbps / ceil->copy_gbps);
    }
  }
  return j;
}

/* The table's two error columns, by the kernel's kind of check. */
static void check_cols(const cplab_kb_kernel *k, const cplab_kb_check *c, char cols[2][16]) {
  switch (k->check_kind) {
  case CPLAB_KB_CHECK_TOLERANCE:
    snprintf(cols[0], 16, "%.1e", c->max_rel_err);
    snprintf(cols[1], 16, "%lld", (long long)c->mismatches);
    break;
  case CPLAB_KB_CHECK_EXACT:
    snprintf(cols[0], 16, "exact");
    snprintf(cols[1], 16, "%lld", (long long)c->mismatches);
    break;
  default:
    snprintf(cols[0], 16, "%.1e", c->max_rel_l2);
    snprintf(cols[1], 16, "%.1e", c->max_lse_abs);
  }
}

/* A copy that moves as many bytes as the kernel (read + write: w->bytes / 2 a copy), timed as the
 * kernel was, its buffers spanning 4x the L2 as the kernel's inputs do: what the card's copy
 * reaches at this size, launch and ramp included. The big copy of the ceilings is the
 * bandwidth; this is the bar for a kernel of a few tens of microseconds. Then the same copy
 * back to back (cplab_bench_time_b2b): *b2b_gbps. *gbps and *b2b_gbps 0 when not measured (no
 * ceilings asked for, or not a bytes-rated kernel). */
static int same_size_copy(const opts *o, const cplab_kb_kernel *k, const cplab_kb_work *w, const cplab_kb_env *env,
                          void *stream, json_t *e, double *gbps, double *b2b_gbps, cplab_diag *d) {
  *gbps = 0, *b2b_gbps = 0;
  if (!o->ceilings || k->rate != CPLAB_KB_RATE_BYTES || k->no_copy_same_size) return 0;
  size_t bytes = (size_t)(w->bytes / 2) / 16 * 16;
  if (bytes < 16) bytes = 16;
  cplab_ceil_op op;
  double *t = malloc((size_t)o->reps * sizeof *t);
  cplab_bench_loop loop = {0};
  if (!t) return cplab_diag_set(d, CPLAB_ENOMEM, "out of host memory");
  void *ctx[1] = {&op};
  int rc = cplab_ceil_setup_copy(&op, bytes, 4 * env->l2_bytes, d);
  if (!rc) rc = cplab_bench_time(1, cplab_ceil_run, ctx, o->reps, o->warmup, lead_us(o, 1), stream, &t, &loop, d);
  double b2b = 0;
  if (!rc) rc = cplab_bench_time_b2b(cplab_ceil_run, &op, o->reps, o->warmup, lead_us(o, 1), stream, &b2b, d);
  if (!rc) {
    cplab_spread st = cplab_stats_spread(t, (size_t)o->reps);
    *gbps = 2.0 * (double)bytes / st.median / 1e9;
    *b2b_gbps = 2.0 * (double)bytes / b2b / 1e9;
    json_object_set_new(e, "copy_same_size",
                        json_pack("{s:I, s:i, s:f, s:f, s:i, s:f}", "bytes_per_copy", (json_int_t)bytes, "sets",
                                  op.sets, "median_us", 1e6 * st.median, "gbps", *gbps, "lead_us", lead_us(o, 1),
                                  "back_to_back_us", 1e6 * b2b));
  }
  cplab_ceil_free(&op);
  free(t);
  return rc;
}

/* Whether the host may have fallen behind the GPU while it queued the case's runs: it took longer than the hold
 * (or there was none and the GPU idled between runs). With the host ahead the GPU still idles ~1.3 us between
 * runs on an H200 (its own launch and event overheads: bench/NOTES.md), so the busy fraction alone proves
 * nothing. */
static void host_behind_warning(const opts *o, const cplab_kb_case *c, const cplab_bench_loop *loop) {
  double lead_s = 1e-6 * lead_us(o, 1);
  if (lead_s > 0 && loop->queue_s > lead_s)
    fprintf(stderr,
            "%s: %s: WARNING: the host took %.2f ms to queue the runs, longer than the GPU's hold of %.2f ms: some "
            "runs may include its launch time (raise --lead-us)\n",
            PROG, c->name, 1e3 * loop->queue_s, 1e3 * lead_s);
  else if (lead_s == 0 && loop->busy < 0.95)
    fprintf(stderr,
            "%s: %s: WARNING: the GPU was busy only %.0f%% of the timed span and nothing held it while the host "
            "queued the runs (--lead-us 0): some runs may include the host's launch time\n",
            PROG, c->name, 100 * loop->busy);
}

void cplab_kb_each_on_a_thread(void *(*fn)(void *), void *items, size_t size, int n) {
  if (n < 1) return;
  pthread_t *th = malloc((size_t)n * sizeof *th);
  unsigned char *started = calloc((size_t)n, 1);
  for (int i = 0; i < n; i++) {
    void *item = (unsigned char *)items + (size_t)i * size;
    if (th && started) started[i] = pthread_create(&th[i], NULL, fn, item) == 0;
    if (!started || !started[i]) fn(item); /* no thread: here */
  }
  for (int i = 0; started && i < n; i++)
    if (started[i]) pthread_join(th[i], NULL);
  free(th), free(started);
}

/* Set up, check, time and report case c; its kernels.json entry into entries. */
static void run_case(const opts *o, int index, int total, const cplab_kb_kernel *k, const cplab_kb_case *c,
                     const cplab_kb_env *env, void *stream, const ceilings *ceil, const cplab_kb_peers *peers,
                     json_t *entries, outcome *out) {
  cplab_diag d = {0};
  struct timespec t0;
  char text[160];
  void *inst = NULL;
  double *t = NULL;
  cplab_bench_loop loop = {0};
  cplab_kb_check chk = {0};
  cplab_kb_work w = {0};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  k->shape_text(c->shape, text, sizeof text);
  json_t *e = json_pack("{s:s, s:s}", "kernel", k->name, "case", c->name);
  json_t *shape = k->shape_json(c->shape);
  json_object_update(e, shape);
  json_decref(shape);
  const cplab_kb_peer *peer = cplab_kb_peers_find(peers, c);
  if (!o->quiet) fprintf(stderr, "[%d/%d] %s %s (%s): ", index, total, k->name, c->name, text), fflush(stderr);
  int rc = k->setup(c, env, stream, &inst, &d);
  if (!rc) {
    k->work(inst, &w);
    if (!o->quiet)
      fprintf(stderr, "%s, %d input sets of %.1f MB touched per run, %.1f s; ", w.launcher, w.sets, w.set_bytes / 1e6,
              elapsed(&t0));
    rc = k->check(inst, stream, &chk, &d);
  }
  if (!rc) {
    json_object_set_new(e, "check", check_json(k, &chk));
    if (!o->quiet) fprintf(stderr, "check %s (%s)", chk.ok ? "ok" : "FAILED", chk.detail);
    if (!chk.ok) {
      out->failed_check = 1;
      fprintf(stderr, "%s%s: %s %s: check FAILED: %s; not timed\n", o->quiet ? "" : "\n", PROG, k->name, c->name,
              chk.detail);
    }
  }
  if (!rc && chk.ok) {
    void *ctx[1] = {inst};
    if (!(t = malloc((size_t)o->reps * sizeof *t))) rc = cplab_diag_set(&d, CPLAB_ENOMEM, "out of host memory");
    if (!rc) rc = cplab_bench_time(1, k->run, ctx, o->reps, o->warmup, lead_us(o, 1), stream, &t, &loop, &d);
  }
  if (!rc && chk.ok) {
    cplab_spread st = cplab_stats_spread(t, (size_t)o->reps);
    char rcol[5][16], ecol[2][16];
    json_t *timing = timing_json(o, k, &w, &st, &loop, ceil, rcol);
    json_object_update(e, timing);
    json_decref(timing);
    json_object_set_new(e, "launcher", json_string(w.launcher));
    json_object_set_new(e, "peer", peer_json(peer, 1e6 * st.median, k, &w));
    double same = 0, same_b2b = 0, b2b = 0;
    char scol[16] = "-";
    rc = same_size_copy(o, k, &w, env, stream, e, &same, &same_b2b, &d);
    if (!rc && same > 0) {
      json_object_set_new(e, "of_copy_same_size", json_real(w.bytes / st.median / 1e9 / same));
      snprintf(scol, sizeof scol, "%.1f", 100 * w.bytes / st.median / 1e9 / same);
      /* the kernel back to back, against the copy back to back */
      rc = cplab_bench_time_b2b(k->run, inst, o->reps, o->warmup, lead_us(o, 1), stream, &b2b, &d);
      if (!rc)
        json_object_set_new(e, "back_to_back",
                            json_pack("{s:i, s:f, s:f}", "runs", o->reps, "mean_us", 1e6 * b2b, "of_copy_same_size",
                                      w.bytes / b2b / 1e9 / same_b2b));
    }
    check_cols(k, &chk, ecol);
    char pcol[16] = "-", xcol[16] = "-";
    if (peer && peer->has_time) {
      snprintf(pcol, sizeof pcol, "%.1f", peer->median_us);
      snprintf(xcol, sizeof xcol, "%.2f", peer->median_us / (1e6 * st.median));
    } else if (peer) {
      snprintf(pcol, sizeof pcol, "error");
    }
    printf(" %-23s %-46s %4d %10.1f %10.1f %10.1f %7s %7s %7s %6s %6s %6s %8s %8s %10s %7s\n", c->name, text, w.sets,
           1e6 * st.median, 1e6 * st.p10, 1e6 * st.p90, rcol[0], rcol[1], rcol[2], rcol[3], rcol[4], scol, ecol[0],
           ecol[1], pcol, xcol);
    fflush(stdout);
    if (!o->quiet)
      fprintf(stderr, "; median %.1f us, %s TFLOPS, %s GB/s; %.1f s\n", 1e6 * st.median, rcol[0], rcol[2], elapsed(&t0));
    host_behind_warning(o, c, &loop);
  } else {
    json_object_set_new(e, "peer", peer_json(peer, 0, k, &w));
  }
  if (rc) {
    out->error = 1;
    json_object_set_new(e, "error", json_string(d.msg));
    if (!o->quiet) fputc('\n', stderr);
    fprintf(stderr, "%s: %s %s: %s [%s]\n", PROG, k->name, c->name, d.msg, cplab_err_name(d.code));
    printf(" %-23s %-46s error: %s\n", c->name, text, d.msg);
  } else if (!chk.ok) {
    printf(" %-23s %-46s check FAILED: %s\n", c->name, text, chk.detail);
  }
  json_array_append_new(entries, e);
  if (inst) k->teardown(inst);
  free(t);
}

/* ---- ranked cases ---------------------------------------------------------------- */

/* The collective method (perf-anchors.md §5) for a ranked kernel's operations in one mode: they alternate inside
 * each repetition, so that drift hits them alike; before each one the stream is drained and all ranks meet at a
 * barrier, then events on the stream go around the one operation: a collective's time depends on when the last
 * rank arrives, which back-to-back runs would hide. t[op · reps + r] = repetition r's seconds, the slowest rank's.
 * Collective: an error returns on this rank only (under several ranks the caller ends the job). */
static int time_collective(const cplab_kb_job *job, const cplab_kb_kernel *k, void *inst, int mode, int reps,
                           int warmup, void *stream, double *t, cplab_diag *d) {
  cplab_event *start = NULL, *stop = NULL;
  int rc = cplab_event_create(&start, d);
  if (!rc) rc = cplab_event_create(&stop, d);
  for (int i = -warmup; !rc && i < reps; i++)
    for (int op = 0; !rc && op < k->nops; op++) {
      float ms = 0;
      if ((rc = cplab_dev_sync(stream, d))) break;
      cplab_kb_job_barrier(job);
      rc = cplab_event_record(start, stream, d);
      if (!rc) rc = k->run_op(inst, mode, op, stream, d);
      if (!rc) rc = cplab_event_record(stop, stream, d);
      if (!rc) rc = cplab_event_elapsed_ms(start, stop, &ms, d); /* waits for stop */
      if (!rc && i >= 0) t[(size_t)op * (size_t)reps + (size_t)i] = 1e-3 * ms;
    }
  cplab_event_destroy(start);
  cplab_event_destroy(stop);
  if (!rc) cplab_kb_job_max(job, t, (size_t)k->nops * (size_t)reps);
  return rc;
}

/* A ranked kernel's table head: one row per (mode, operation). */
static void ranked_header(const cplab_kb_job *job, const cplab_kb_kernel *k) {
  printf("# %s: %s\n", k->name, k->summary);
  printf("# %d rank(s), NCCL %d.%d.%d, NCCL_NVLS_ENABLE=%s; times: the slowest rank's, each operation alone after a "
         "drain and a barrier; ratio: over the mode's first operation\n",
         job->world, job->nccl_version / 10000, job->nccl_version % 10000 / 100, job->nccl_version % 100,
         getenv("NCCL_NVLS_ENABLE") ? getenv("NCCL_NVLS_ENABLE") : "(unset)");
  printf("#%-23s %-36s %-6s %-17s %10s %10s %10s %7s %8s %8s %8s\n", "case", "shape", "mode", "op", "median_us",
         "p10_us", "p90_us", "ratio", k->cols[0] ? k->cols[0] : "-", k->cols[1] ? k->cols[1] : "-",
         k->cols[2] ? k->cols[2] : "-");
}

/* The rows and kernels.json entries of a timed ranked case (rank 0). t: nmodes · nops · reps seconds (sorted in
 * place by the statistics). */
static void ranked_report(const opts *o, const cplab_kb_job *job, const cplab_kb_kernel *k, const cplab_kb_case *c,
                          const char *text, void *inst, const cplab_kb_work *w, const cplab_kb_check *chk,
                          double *t, json_t *entries) {
  int nmodes = k->nmodes > 1 ? k->nmodes : 1;
  for (int m = 0; m < nmodes; m++) {
    cplab_spread first = {0};
    for (int op = 0; op < k->nops; op++) {
      cplab_spread st = cplab_stats_spread(t + ((size_t)m * (size_t)k->nops + (size_t)op) * (size_t)o->reps,
                                           (size_t)o->reps);
      if (op == 0) first = st;
      char col[3][16] = {"-", "-", "-"};
      json_t *e = json_pack("{s:s, s:s}", "kernel", k->name, "case", c->name);
      json_t *shape = k->shape_json(c->shape);
      json_object_update(e, shape);
      json_decref(shape);
      if (k->nmodes > 1) json_object_set_new(e, "mode", json_string(k->mode_names[m]));
      json_object_set_new(e, "op", json_string(k->op_names[op]));
      json_t *times = json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:f, s:s, s:s}", "ranks", job->world,
                                "median_us", 1e6 * st.median, "p10_us", 1e6 * st.p10, "p90_us", 1e6 * st.p90, "min_us",
                                1e6 * st.min, "max_us", 1e6 * st.max, "reps", o->reps, "warmup", o->warmup, "sets",
                                w->sets, "ratio_to_first", st.median / first.median, "launcher", w->launcher,
                                "timing", "collective");
      json_object_update(e, times);
      json_decref(times);
      json_object_set_new(e, "check", check_json(k, chk));
      if (k->op_fields) k->op_fields(inst, op, st.median, job->world, e, col);
      json_array_append_new(entries, e);
      printf(" %-23s %-36s %-6s %-17s %10.2f %10.2f %10.2f %7.3f %8s %8s %8s\n", c->name, text,
             k->nmodes > 1 ? k->mode_names[m] : "-", k->op_names[op], 1e6 * st.median, 1e6 * st.p10, 1e6 * st.p90,
             st.median / first.median, col[0], col[1], col[2]);
    }
  }
  fflush(stdout);
}

/* Set up, check, time and report a ranked case on every rank; rank 0 prints and keeps the entries. The check's
 * verdict is summed over the ranks before anything is timed, so that all time or none does. Under several ranks
 * an error on any rank ends the job (the others would wait in the next collective); under one it is recorded as
 * run_case records it. */
static void run_ranked_case(const opts *o, const cplab_kb_job *job, int index, int total, const cplab_kb_kernel *k,
                            const cplab_kb_case *c, const cplab_kb_env *env, void *stream, json_t *entries,
                            outcome *out) {
  cplab_diag d = {0};
  struct timespec t0;
  char text[160];
  void *inst = NULL;
  double *t = NULL;
  cplab_kb_check chk = {0};
  cplab_kb_work w = {0};
  int lead = job->rank == 0, talk = lead && !o->quiet, nmodes = k->nmodes > 1 ? k->nmodes : 1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  k->shape_text(c->shape, text, sizeof text);
  if (talk) fprintf(stderr, "[%d/%d] %s %s (%s): ", index, total, k->name, c->name, text), fflush(stderr);
  int rc = k->setup(c, env, stream, &inst, &d);
  if (!rc) {
    k->work(inst, &w);
    if (talk) fprintf(stderr, "%s, %d input sets, %.1f s; ", w.launcher, w.sets, elapsed(&t0));
    rc = k->check(inst, stream, &chk, &d);
  }
  if (rc && job->world > 1) {
    cplab_diag_prefix(&d, "%s %s: ", k->name, c->name);
    cplab_kb_job_die(job, &d);
  }
  int bad = rc ? 0 : cplab_kb_job_sum(job, !chk.ok);
  if (!rc) {
    if (talk) fprintf(stderr, "check %s (%s)", bad ? "FAILED" : "ok", chk.detail);
    if (!chk.ok) /* every failing rank says why */
      fprintf(stderr, "%s%s (rank %d of %d): %s %s: check FAILED: %s; not timed\n", talk ? "\n" : "", PROG, job->rank,
              job->world, k->name, c->name, chk.detail);
    else if (talk && bad)
      fputc('\n', stderr);
  }
  if (!rc && bad) {
    out->failed_check = 1;
    if (lead) {
      json_t *e = json_pack("{s:s, s:s, s:i, s:i, s:o}", "kernel", k->name, "case", c->name, "ranks", job->world,
                            "check_failed_ranks", bad, "check", check_json(k, &chk));
      json_array_append_new(entries, e);
      printf(" %-23s %-36s check FAILED on %d of %d rank(s) (each says why on stderr); rank 0: %s\n", c->name, text, bad,
             job->world, chk.detail);
    }
  }
  if (!rc && !bad) {
    size_t n = (size_t)nmodes * (size_t)k->nops * (size_t)o->reps;
    if (!(t = malloc(n * sizeof *t))) rc = cplab_diag_set(&d, CPLAB_ENOMEM, "out of host memory");
    if (!rc && k->prepare) rc = k->prepare(inst, stream, &d);
    for (int m = 0; !rc && m < nmodes; m++)
      rc = time_collective(job, k, inst, m, o->reps, o->warmup, stream, t + (size_t)m * (size_t)k->nops * (size_t)o->reps,
                           &d);
    if (rc && job->world > 1) {
      cplab_diag_prefix(&d, "%s %s: ", k->name, c->name);
      cplab_kb_job_die(job, &d);
    }
    if (!rc && lead) {
      if (talk) fprintf(stderr, "; %.1f s\n", elapsed(&t0));
      printf("# %s: check ok on %d rank(s); rank 0: %s\n", c->name, job->world, chk.detail);
      ranked_report(o, job, k, c, text, inst, &w, &chk, t, entries);
    }
  }
  if (rc) { /* one rank: recorded, the other cases still run */
    out->error = 1;
    if (!o->quiet) fputc('\n', stderr);
    fprintf(stderr, "%s: %s %s: %s [%s]\n", PROG, k->name, c->name, d.msg, cplab_err_name(d.code));
    json_array_append_new(entries, json_pack("{s:s, s:s, s:s}", "kernel", k->name, "case", c->name, "error", d.msg));
    printf(" %-23s %-36s error: %s\n", c->name, text, d.msg);
  }
  if (inst) k->teardown(inst);
  free(t);
}

/* ---- main ------------------------------------------------------------------------ */

/* kernels.json: the run's context and the entries so far (complete: 0 while
 * cases remain, so that a run cut short still leaves what it measured). */
static int write_doc(const opts *o, const cplab_kb_job *job, int argc, char **argv, const cplab_gpu_info *g, size_t l2,
                     const char *date, const ceilings *ceil, const cplab_kb_peers *peers, json_t *entries, int complete,
                     cplab_diag *d) {
  char *cmd = cplab_bench_command(argc, argv);
  json_t *doc = json_pack(
      "{s:s, s:s, s:o, s:s, s:s, s:s, s:b, s:i, s:i, s:i, s:I, s:O, s:o, s:{s:s, s:s, s:s}, s:O}", "program", PROG,
      "version", PACKAGE_VERSION, "card", cplab_bench_card_json(g, l2), "date", date, "commit", o->commit, "command",
      cmd ? cmd : "", "complete", complete, "reps", o->reps, "warmup", o->warmup, "check_rows", o->check_rows, "seed",
      (json_int_t)(o->seed & ((UINT64_C(1) << 53) - 1)), "ceilings", ceil->json ? ceil->json : json_null(), "peer",
      o->peer ? json_pack("{s:s, s:s, s:s}", "file", o->peer, "peer", peers->source, "version", peers->version)
              : json_null(),
      "conventions", "tflops",
      "sparse_mla_*: FlashMLA's count: 2 x rows x topk x heads x (576 + 512) FLOP over every index slot, valid or "
      "not (tflops_valid: the valid entries only); other kernels: per_kernel; at the median time",
      "gbps",
      "sparse_mla_*: bytes the kernel must move: distinct gathered rows (bf16 1152 B / fp8 656 B) + q (bf16) + out "
      "and lse (fp32); other kernels: per_kernel; at the median time",
      "ratios",
      "of_bf16_gemm = tflops / ceilings.bf16_tflops (sparse_mla_*), of_fp8_gemm = tflops / ceilings.fp8_tflops "
      "(indexer_logits_*), of_copy = gbps / ceilings.copy_gbps; of_copy_same_size = gbps / copy_same_size.gbps (bytes-rated "
      "kernels: a copy of bytes / 2, timed the same way in the same run, buffers over 4x the L2); "
      "back_to_back.of_copy_same_size = the same over runs back to back, one event pair around all of them "
      "(back_to_back.mean_us, copy_same_size.back_to_back_us); peer.peer_over_kernel = peer median / kernel median",
      "entries", entries);
  if (doc) {
    /* The job: ranked kernels' entries are one per (mode, operation), their times the slowest rank's. */
    int v = job->nccl_version;
    json_object_set_new(doc, "ranks", json_integer(job->world));
    json_object_set_new(doc, "nccl_version", v ? json_sprintf("%d.%d.%d", v / 10000, v % 10000 / 100, v % 100) : json_null());
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    json_object_set_new(doc, "nccl_nvls_enable", nvls ? json_string(nvls) : json_null());
    json_object_set_new(json_object_get(doc, "conventions"), "ranked",
                        json_string("ranked kernels (gather_nccl, moe_paths): one entry per mode and op; timing "
                                    "\"collective\": each operation alone, after a drain of the stream and a barrier "
                                    "of all ranks, events around it, a repetition's time the slowest rank's, the "
                                    "operations alternating inside each repetition; ratio_to_first = median / the "
                                    "median of the mode's first op"));
  }
  free(cmd);
  if (!doc) CPLAB_FAIL(d, CPLAB_ENOMEM, "cannot build the JSON document");
  json_t *per_kernel = json_object();
  for (int k = 0; k < NKERNELS; k++)
    if (kernels[k]->work_note) json_object_set_new(per_kernel, kernels[k]->name, json_string(kernels[k]->work_note));
  json_object_set_new(json_object_get(doc, "conventions"), "per_kernel", per_kernel);
  size_t lt = cplab_gemm_lib_version(); /* the ceilings' and ceiling_gemm_*'s GEMMs: 0 without cuBLASLt (emulation) */
  json_object_set_new(doc, "cublaslt_version", json_sprintf("%zu.%zu.%zu", lt / 10000, lt % 10000 / 100, lt % 100));
  int rc = cplab_bench_write_json(o->json, doc, d);
  json_decref(doc);
  return rc;
}

/* Whether any selected case is of a ranked kernel (the job then makes its communicator) or of a single-GPU one
 * (the driver then measures its ceilings). */
static int any_ranked(const selection *s, int ranked) {
  for (int i = 0; i < s->n; i++)
    if (!s->k[i]->ranked == !ranked) return 1;
  return 0;
}

int main(int argc, char **argv) {
  cplab_diag d = {0};
  opts o;
  static selection sel;
  cplab_kb_peers peers = {0};
  cplab_kb_job job;
  cplab_kb_job_start(&argc, &argv, PROG, &job);
  int lead = job.rank == 0; /* rank 0 alone prints and writes */
  if (parse_opts(argc, argv, &o, &d) || select_cases(&o, job.world, &sel, &d)) {
    if (lead) cplab_cli_usage_error(PROG, &d);
    return cplab_kb_job_finish(&job, CPLAB_EXIT_ERROR);
  }
  if (o.help || o.version) {
    if (lead && o.help) usage(stdout);
    else if (lead) cplab_cli_version(stdout, PROG);
    return cplab_kb_job_finish(&job, CPLAB_EXIT_OK);
  }
  if (o.peer && cplab_kb_peers_load(o.peer, kernels, NKERNELS, &peers, &d)) cplab_kb_job_die(&job, &d);
  if (o.list || o.list_json) {
    if (lead && o.list) list_cases(&o, job.world, &sel, o.peer ? &peers : NULL);
    if (lead && o.list_json && write_case_list(o.list_json, &sel, argc, argv, &d)) cplab_kb_job_die(&job, &d);
    cplab_kb_peers_free(&peers);
    return cplab_kb_job_finish(&job, CPLAB_EXIT_OK);
  }

  cplab_gpu_info g;
  size_t l2 = 0;
  if (cplab_kb_job_bind(&job, &g, &l2, &d)) { /* every rank says its own reason; all leave in order */
    char who[64] = PROG;
    if (job.world > 1) snprintf(who, sizeof who, PROG " (rank %d of %d)", job.rank, job.world);
    cplab_diag_report(stderr, who, &d);
    return cplab_kb_job_finish(&job, CPLAB_EXIT_ERROR);
  }
  if (any_ranked(&sel, 1) && cplab_kb_job_comm(&job, &d)) cplab_kb_job_die(&job, &d);
  void *stream = NULL;
  if (cplab_stream_create(&stream, &d)) cplab_kb_job_die(&job, &d);
  char date[32];
  cplab_bench_date(date, sizeof date);
  if (lead) {
    printf("# " PROG ": %s, %d SMs, L2 %zu MiB, %.0f GiB, CUDA runtime %d, driver %d, commit %s, %s\n", g.name,
           g.sm_count, l2 >> 20, (double)g.global_mem_bytes / (1 << 30), g.runtime_version, g.driver_version, o.commit,
           date);
    printf("# %d cases, %d repetitions after %d warm-up each; inputs rotate over >= 4x the L2; peer: %s; %d rank(s)\n",
           sel.n, o.reps, o.warmup, o.peer ? o.peer : "none (no --peer)", job.world);
    printf("# before each case's runs the GPU waits %d us a run (%u us) while the host queues them%s\n", o.lead_us,
           lead_us(&o, 1), o.lead_us ? "" : ": none, so a run's time may hold the host's launch time");
  }
  ceilings ceil = {0};
  int ceil_failed = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (o.ceilings && any_ranked(&sel, 0)) { /* the ratios of single-GPU kernels (world 1 only) */
    if (!o.quiet) fprintf(stderr, "ceilings: copy %zu MiB, bf16 and fp8 GEMM %lldx%lldx%lld ...\n", o.copy_bytes >> 20,
                          (long long)o.gemm.m, (long long)o.gemm.n, (long long)o.gemm.k);
    if (measure_ceilings(&o, l2, stream, &ceil, &d)) { /* reported; the kernels still run, without ratios */
      cplab_diag_prefix(&d, "ceilings: ");
      cplab_diag_report(stderr, PROG, &d);
      printf("# ceilings: error: %s\n", d.msg);
      ceil.json = json_pack("{s:s}", "error", d.msg);
      ceil_failed = 1;
      cplab_diag_clear(&d);
    }
    if (!o.quiet) fprintf(stderr, "ceilings: %.1f s\n", elapsed(&t0));
    /* The card idle before the first case: right after the ceilings' 8192^3 GEMMs the first case ran
     * 2.9-3.3% slow (0.2% after the 1 GiB copy with 1024^3 GEMMs), after 1000 ms idle 0.9-1.3%; 400
     * warm-up runs of the case had not helped (bench/results/2026-12-03-kb-first-case-h200/). */
    if (o.settle_ms > 0) {
      struct timespec pause = {o.settle_ms / 1000, (long)(o.settle_ms % 1000) * 1000000L};
      while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
      }
      if (lead) printf("# an idle pause of %d ms after the ceilings\n", o.settle_ms);
      if (ceil.json) json_object_set_new(ceil.json, "settle_ms", json_integer(o.settle_ms)); /* (kernels.json) */
    }
  }
  fflush(stdout);

  cplab_kb_env env = {.l2_bytes = l2, .max_sets = o.max_sets, .mem_budget = o.mem_budget, .check_rows = o.check_rows,
                      .seed = o.seed, .job = &job};
  json_t *entries = json_array();
  outcome out = {.error = ceil_failed};
  const char *json = lead ? o.json : NULL;
  if (json && write_doc(&o, &job, argc, argv, &g, l2, date, &ceil, &peers, entries, 0, &d)) cplab_kb_job_die(&job, &d);
  for (int i = 0; i < sel.n; i++) {
    const cplab_kb_kernel *k = sel.k[i];
    if (lead && (i == 0 || k != sel.k[i - 1])) k->ranked ? ranked_header(&job, k) : table_header(k);
    if (k->ranked) run_ranked_case(&o, &job, i + 1, sel.n, k, sel.c[i], &env, stream, entries, &out);
    else run_case(&o, i + 1, sel.n, k, sel.c[i], &env, stream, &ceil, o.peer ? &peers : NULL, entries, &out);
    if (json && i + 1 < sel.n && write_doc(&o, &job, argc, argv, &g, l2, date, &ceil, &peers, entries, 0, &d))
      cplab_kb_job_die(&job, &d);
  }
  if (lead)
    printf("# %s; %.1f s\n",
           out.error ? "ERRORS (see the entries' \"error\")" : out.failed_check ? "a check FAILED" : "all checks passed",
           elapsed(&t0));

  if (json && write_doc(&o, &job, argc, argv, &g, l2, date, &ceil, &peers, entries, 1, &d)) cplab_kb_job_die(&job, &d);
  if (json && !o.quiet) fprintf(stderr, "wrote %s\n", json);
  json_decref(entries);
  json_decref(ceil.json);
  cplab_kb_peers_free(&peers);
  cplab_stream_destroy(stream, &d);
  return cplab_kb_job_finish(&job, out.error ? CPLAB_EXIT_ERROR : out.failed_check ? CPLAB_EXIT_DIFFERENT : CPLAB_EXIT_OK);
}
