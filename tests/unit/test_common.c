/* Errors, logging, CLI helpers, atomic writes, model presets and parallel rules. */
#include <sys/stat.h>
#include <unistd.h>

#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "cplab/heads.h"
#include "cplab/log.h"
#include "cplab/model.h"
#include "cplab/parallel.h"
#include "testutil.h"

static void test_error_names(void **state) {
  (void)state;
  assert_string_equal(cplab_err_name(CPLAB_ESCHEMA), "CPLAB_ESCHEMA");
  assert_string_equal(cplab_strerror(CPLAB_ENOMEM), "out of memory");
  assert_string_equal(cplab_err_name(0), "CPLAB_OK");
  assert_string_equal(cplab_err_name(-999), "CPLAB_E?");
  assert_string_equal(cplab_strerror(12345), "unknown error");
  /* Codes are negative and distinct. */
  for (int a = -16; a <= -1; a++) {
    assert_true(strcmp(cplab_err_name(a), "CPLAB_E?") != 0);
    for (int b = a + 1; b <= -1; b++) assert_true(strcmp(cplab_err_name(a), cplab_err_name(b)) != 0);
  }
}

static void test_diag_first_error_wins(void **state) {
  (void)state;
  cplab_diag d = {0};
  assert_int_equal(cplab_diag_set(&d, CPLAB_ERANGE, "first %d", 1), CPLAB_ERANGE);
  assert_int_equal(cplab_diag_set(&d, CPLAB_EIO, "second"), CPLAB_EIO);
  assert_int_equal(d.code, CPLAB_ERANGE);
  assert_string_equal(d.msg, "first 1");
  cplab_diag_clear(&d);
  cplab_diag_set(&d, CPLAB_EINVAL, "line\nbreak\rhere");
  assert_string_equal(d.msg, "line break here");
  assert_int_equal(cplab_diag_set(NULL, CPLAB_EIO, "nobody listens"), CPLAB_EIO);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cplab_diag_report(f, "prog", &d);
  fclose(f);
  assert_string_equal(buf, "prog: error: line break here [CPLAB_EINVAL]\n");
  free(buf);
}

static void test_log_levels(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  cplab_log log;
  cplab_log_init(&log, "t");
  log.stream = open_memstream(&buf, &len);
  cplab_log_info(&log, "hidden");
  cplab_log_warn(&log, "shown %d", 1);
  log.rank = 3;
  log.level = CPLAB_LOG_DEBUG;
  cplab_log_debug(&log, "debug");
  fclose(log.stream);
  assert_string_equal(buf, "t: warn: shown 1\nt[r3] debug: debug\n");
  free(buf);
  cplab_log_level lv;
  assert_int_equal(cplab_log_level_parse("info", &lv), 0);
  assert_int_equal(lv, CPLAB_LOG_INFO);
  assert_int_equal(cplab_log_level_parse("3", &lv), 0);
  assert_int_equal(lv, CPLAB_LOG_DEBUG);
  assert_int_equal(cplab_log_level_parse("loud", &lv), CPLAB_EINVAL);
}

static void test_parse_u64(void **state) {
  (void)state;
  uint64_t v;
  assert_int_equal(cplab_parse_u64("0", &v), 0);
  assert_int_equal(v, 0);
  assert_int_equal(cplab_parse_u64("18446744073709551615", &v), 0);
  assert_true(v == UINT64_MAX);
  assert_int_equal(cplab_parse_u64("18446744073709551616", &v), CPLAB_EOVERFLOW);
  assert_int_equal(cplab_parse_u64("-1", &v), CPLAB_EINVAL);
  assert_int_equal(cplab_parse_u64("12a", &v), CPLAB_EINVAL);
  assert_int_equal(cplab_parse_u64("", &v), CPLAB_EINVAL);
  assert_int_equal(cplab_parse_u64(" 1", &v), CPLAB_EINVAL);
}

/* A mutable argv (getopt may permute it) from constant words. */
static char **argv_of(const char *const *words, int n) {
  char **argv = calloc((size_t)n + 1, sizeof *argv);
  for (int i = 0; i < n; i++) argv[i] = strdup(words[i]);
  return argv;
}

static void argv_free(char **argv, int n) {
  for (int i = 0; i < n; i++) free(argv[i]);
  free(argv);
}

static void test_cli_parse(void **state) {
  (void)state;
  static const struct option longopts[] = {CPLAB_CLI_COMMON_LONGOPTS, {NULL, 0, NULL, 0}};
  static const char *const words[] = {"p",  "--scenario", "smoke", "--seed", "42",  "--layout", "vllm",
                                      "-q", "--json",     "-o",    "x",      "-vv", "rest"};
  char **argv1 = argv_of(words, 13);
  cplab_cli cli;
  cplab_diag d = {0};
  int first;
  cplab_cli_init(&cli, "pr56157");
  assert_int_equal(cplab_cli_parse(13, argv1, CPLAB_CLI_COMMON_SHORTOPTS, longopts, &cli, NULL, NULL, &first, &d), 0);
  assert_string_equal(cli.scenario, "smoke");
  assert_true(cli.has_seed && cli.seed == 42);
  assert_string_equal(cli.layout, "vllm");
  assert_true(cli.quiet && cli.json);
  assert_string_equal(cli.out, "x");
  assert_int_equal(cli.log_level, CPLAB_LOG_DEBUG);
  assert_int_equal(first, 12);
  argv_free(argv1, 13);
  const char *bad[][2] = {{"--seed", "1e3"},        {"--seed", "9007199254740992"}, {"--layout", "Bad!"},
                          {"--log-level", "loud"}, {"--out", ""},                  {"--nope", "x"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *const w[] = {"p", bad[i][0], bad[i][1]};
    char **argv = argv_of(w, 3);
    cplab_cli_init(&cli, "pr56157");
    cplab_diag_clear(&d);
    assert_int_equal(cplab_cli_parse(3, argv, CPLAB_CLI_COMMON_SHORTOPTS, longopts, &cli, NULL, NULL, &first, &d),
                     CPLAB_EUSAGE);
    assert_true(d.msg[0] != '\0');
    argv_free(argv, 3);
  }
  static const char *const missing_words[] = {"p", "--scenario"};
  char **missing = argv_of(missing_words, 2);
  cplab_diag_clear(&d);
  assert_int_equal(cplab_cli_parse(2, missing, CPLAB_CLI_COMMON_SHORTOPTS, longopts, &cli, NULL, NULL, &first, &d),
                   CPLAB_EUSAGE);
  assert_string_equal(d.msg, "option '--scenario' needs an argument");
  argv_free(missing, 2);
  /* A program that takes no positional argument passes first_arg NULL. */
  static const char *const extra_words[] = {"p", "-q", "stray"};
  char **extra = argv_of(extra_words, 3);
  cplab_diag_clear(&d);
  assert_int_equal(cplab_cli_parse(3, extra, CPLAB_CLI_COMMON_SHORTOPTS, longopts, &cli, NULL, NULL, NULL, &d),
                   CPLAB_EUSAGE);
  assert_string_equal(d.msg, "unexpected argument 'stray'");
  assert_int_equal(cplab_cli_parse(2, extra, CPLAB_CLI_COMMON_SHORTOPTS, longopts, &cli, NULL, NULL, NULL, &d), 0);
  argv_free(extra, 3);
  /* Integer option arguments. */
  int64_t v = -1;
  cplab_diag_clear(&d);
  assert_int_equal(cplab_cli_parse_int("--reps", "20", 1, 100, &v, &d), 0);
  assert_true(v == 20);
  const char *bad_ints[] = {"0", "101", "-3", "1e2", "", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad_ints / sizeof bad_ints[0]; i++) {
    cplab_diag e = {0};
    assert_int_equal(cplab_cli_parse_int("--reps", bad_ints[i], 1, 100, &v, &e), CPLAB_EUSAGE);
    assert_non_null(strstr(e.msg, "--reps: expected an integer in [1, 100], got '"));
  }
  assert_true(v == 20);
  /* One of a list: its position, or every choice named in the error. */
  static const char *const three[] = {"bf16", "fp8", "fp4", NULL}, *const one[] = {"only", NULL};
  int at = -1;
  assert_int_equal(cplab_cli_parse_choice("--gemm", "fp4", three, &at, &d), 0);
  assert_int_equal(at, 2);
  assert_int_equal(cplab_cli_parse_choice("--gemm", "bf16", three, NULL, &d), 0);
  assert_int_equal(cplab_cli_parse_choice("--backend", "nccl", cplab_cli_backends, &at, &d), 0);
  assert_int_equal(at, 1);
  const char *bad_choices[] = {"", "FP8", "fp", "fp8 ", "nccl"};
  for (size_t i = 0; i < sizeof bad_choices / sizeof bad_choices[0]; i++) {
    cplab_diag e = {0};
    char want[128];
    snprintf(want, sizeof want, "--gemm %s: expected bf16, fp8 or fp4", bad_choices[i]);
    assert_int_equal(cplab_cli_parse_choice("--gemm", bad_choices[i], three, &at, &e), CPLAB_EUSAGE);
    assert_string_equal(e.msg, want);
  }
  assert_int_equal(at, 1);
  cplab_diag e1 = {0}, e2 = {0};
  assert_int_equal(cplab_cli_parse_choice("--x", "y", one, NULL, &e1), CPLAB_EUSAGE);
  assert_string_equal(e1.msg, "--x y: expected only");
  assert_int_equal(cplab_cli_parse_choice("--backend", "gloo", cplab_cli_backends, NULL, &e2), CPLAB_EUSAGE);
  assert_string_equal(e2.msg, "--backend gloo: expected single or nccl");
  /* A launcher's variables, each alone, mean "under mpirun"; none means a plain start. */
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"};
  for (size_t i = 0; i < 3; i++) assert_int_equal(unsetenv(vars[i]), 0);
  assert_int_equal(cplab_cli_under_mpirun(), 0);
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(setenv(vars[i], "2", 1), 0);
    assert_int_equal(cplab_cli_under_mpirun(), 1);
    assert_int_equal(unsetenv(vars[i]), 0);
  }
}

/* The GPU pick: the launcher's local rank, else the caller's node rank,
 * modulo the devices; a local rank that is not a number and no device are
 * errors. */
static void test_pick_gpu(void **state) {
  (void)state;
  const char *var = "OMPI_COMM_WORLD_LOCAL_RANK";
  char *saved = getenv(var) ? strdup(getenv(var)) : NULL;
  cplab_diag d = {0};
  int dev = -1;
  assert_int_equal(unsetenv(var), 0);
  assert_int_equal(cplab_cli_pick_gpu(5, 4, &dev, &d), 0);
  assert_int_equal(dev, 1);
  assert_int_equal(setenv(var, "6", 1), 0);
  assert_int_equal(cplab_cli_pick_gpu(0, 4, &dev, &d), 0);
  assert_int_equal(dev, 2); /* the launcher's word wins over the fallback */
  assert_int_equal(cplab_cli_pick_gpu(0, 8, &dev, &d), 0);
  assert_int_equal(dev, 6);
  assert_int_equal(setenv(var, "two", 1), 0);
  assert_int_equal(cplab_cli_pick_gpu(0, 8, &dev, &d), CPLAB_EINVAL);
  assert_non_null(strstr(d.msg, "OMPI_COMM_WORLD_LOCAL_RANK='two' is not a number"));
  cplab_diag e = {0};
  assert_int_equal(cplab_cli_pick_gpu(0, 0, &dev, &e), CPLAB_ENODEV);
  if (saved) setenv(var, saved, 1);
  else unsetenv(var);
  free(saved);
}

static void test_write_atomic(void **state) {
  (void)state;
  char dir[] = "/tmp/cplab-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof path, "%s/out.json", dir);
  cplab_diag d = {0};
  assert_int_equal(cplab_atomic_write(path, "old\n", 4, &d), 0);
  assert_int_equal(cplab_atomic_write(path, "new!\n", 5, &d), 0);
  FILE *f = fopen(path, "r");
  char buf[16] = {0};
  assert_int_equal(fread(buf, 1, sizeof buf, f), 5);
  fclose(f);
  assert_string_equal(buf, "new!\n");
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0644);
  /* A directory that does not exist: error, nothing left behind. */
  char bad[160];
  snprintf(bad, sizeof bad, "%s/missing/out.json", dir);
  assert_int_equal(cplab_atomic_write(bad, "x", 1, &d), CPLAB_EIO);
  assert_non_null(strstr(d.msg, "cannot create a temporary file beside"));
  unlink(path);
  assert_int_equal(rmdir(dir), 0); /* empty: no temporary files remain */
}

/* The two halves the HDF5 writers use: begin leaves an empty 0644 file
 * beside the target; a commit that cannot rename (the target is a
 * non-empty directory) removes the temporary file and keeps the target. */
static void test_atomic_begin_commit(void **state) {
  (void)state;
  char dir[] = "/tmp/cplab-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[128], sub[160];
  snprintf(path, sizeof path, "%s/out.h5", dir);
  cplab_diag d = {0};
  char *tmp = NULL;
  assert_int_equal(cplab_atomic_begin(path, &tmp, &d), 0);
  assert_non_null(strstr(tmp, "/out.h5.tmp."));
  struct stat st;
  assert_int_equal(stat(tmp, &st), 0);
  assert_true(st.st_size == 0 && (st.st_mode & 0777) == 0644);
  assert_int_equal(cplab_atomic_commit(tmp, path, &d), 0);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(access(tmp, F_OK), -1);
  free(tmp);
  unlink(path);
  /* rename over a non-empty directory fails */
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(sub, sizeof sub, "%s/keep", path);
  FILE *f = fopen(sub, "w");
  assert_non_null(f);
  fclose(f);
  assert_int_equal(cplab_atomic_begin(path, &tmp, &d), 0);
  assert_int_equal(cplab_atomic_commit(tmp, path, &d), CPLAB_EIO);
  assert_non_null(strstr(d.msg, "cannot rename"));
  assert_int_equal(access(tmp, F_OK), -1);
  assert_int_equal(access(sub, F_OK), 0);
  free(tmp);
  /* a temporary file that is not there cannot be committed (a fresh diag:
   * the first error wins) */
  cplab_diag d2 = {0};
  assert_int_equal(cplab_atomic_commit("/nonexistent-cplab/x.tmp", path, &d2), CPLAB_EIO);
  assert_non_null(strstr(d2.msg, "cannot flush"));
  unlink(sub);
  assert_int_equal(rmdir(path), 0);
  assert_int_equal(rmdir(dir), 0);
}

static void test_model_presets(void **state) {
  (void)state;
  cplab_model m;
  assert_int_equal(cplab_model_preset("glm-5", &m), 0);
  assert_int_equal(m.num_heads, 64);
  assert_int_equal(m.qk_nope_head_dim, 192);
  assert_int_equal(m.v_head_dim, 256);
  assert_int_equal(m.index_n_heads, 32);
  assert_int_equal(m.hidden_size, 6144);
  assert_int_equal(m.max_position_embeddings, 202752);
  assert_int_equal(cplab_model_mla_head_dim(&m), 576);
  assert_true(cplab_model_softmax_scale(&m) == 1.0 / 16.0); /* (192 + 64)^-1/2 */
  assert_int_equal(cplab_model_preset("deepseek-v3.2", &m), 0);
  assert_int_equal(m.num_heads, 128);
  assert_int_equal(m.index_n_heads, 64);
  assert_int_equal(m.q_lora_rank, 1536);
  assert_int_equal(m.num_layers, 61);
  cplab_diag d = {0};
  assert_int_equal(cplab_model_check(&m, &d), 0);
  assert_int_equal(cplab_model_preset("llama", &m), CPLAB_ENOTFOUND);
  cplab_model_preset("glm-5", &m);
  m.index_head_dim = 64;
  assert_int_equal(cplab_model_check(&m, &d), CPLAB_EUNSUPPORTED);
  assert_non_null(strstr(d.msg, "index_head_dim: must be 128"));
}

/* The DCP admission matrix of §1.2 for tp, pcp in 1..8, dcp in 1..64. */
static void test_parallel_dcp_rules(void **state) {
  (void)state;
  for (int tp = 1; tp <= 8; tp++)
    for (int pcp = 1; pcp <= 8; pcp++)
      for (int dcp = 1; dcp <= 64; dcp++) {
        cplab_parallel p;
        cplab_parallel_defaults(&p);
        p.tp = tp, p.pcp = pcp, p.dcp = dcp, p.max_model_len = 1024;
        int want = pcp > 1 ? (dcp == 1 || dcp == pcp || dcp == tp * pcp) : (tp % dcp == 0);
        cplab_diag d = {0};
        int rc = cplab_parallel_check(&p, 0, &d);
        if ((rc == 0) != want) fail_msg("tp%d pcp%d dcp%d: got %d (%s), want %s", tp, pcp, dcp, rc, d.msg, want ? "ok" : "rejected");
        if (!want) assert_true(strncmp(d.msg, "dcp: ", 5) == 0);
      }
}

static void test_parallel_other_rules(void **state) {
  (void)state;
  cplab_parallel p;
  cplab_diag d = {0};
#define EXPECT(field_edit, heads, prefix)                                                  \
  do {                                                                                     \
    cplab_parallel_defaults(&p);                                                           \
    p.max_model_len = 1024;                                                                \
    field_edit;                                                                            \
    cplab_diag_clear(&d);                                                                  \
    int rc_ = cplab_parallel_check(&p, (heads), &d);                                       \
    if (prefix == NULL) assert_int_equal(rc_, 0);                                          \
    else if (rc_ == 0 || strncmp(d.msg, prefix, strlen(prefix)) != 0)                      \
      fail_msg("%s: expected a message starting '%s', got '%s'", #field_edit, prefix, d.msg); \
  } while (0)
  const char *ok = NULL;
  EXPECT((void)0, 64, ok);
  EXPECT(p.block_size = 64; p.interleave = 48, 0, "interleave: block_size (64) must be a multiple");
  EXPECT(p.interleave = 64, 0, ok);
  EXPECT(p.interleave = 0, 0, "interleave: must be in [1, 4096]");
  EXPECT(p.block_size = -64, 0, "block_size: must be in");
  EXPECT(p.pcp = 2; p.pp = 2, 0, "pp: pipeline parallelism is not supported");
  EXPECT(p.pcp = 2; p.graph_mode = CPLAB_GRAPH_FULL, 0, "cudagraph_mode: FULL captures");
  EXPECT(p.graph_mode = CPLAB_GRAPH_FULL, 0, ok);
  EXPECT(p.tp = 3, 64, "tp: the model's 64 attention heads cannot be split over tp = 3");
  EXPECT(p.max_model_len = 0, 0, "max_model_len: must be in [1,");
  EXPECT(p.max_model_len = CPLAB_MAX_MODEL_LEN + 1, 0, "max_model_len: must be in [1,");
  EXPECT(p.tp = 1024; p.pcp = 1024, 0, "tp: world size");
  EXPECT(p.tp = 0, 0, "tp: must be in [1, 1024]");
#undef EXPECT
  cplab_graph_mode m;
  assert_int_equal(cplab_graph_mode_parse("FULL_DECODE_ONLY", &m), 0);
  assert_int_equal(m, CPLAB_GRAPH_FULL_DECODE_ONLY);
  assert_string_equal(cplab_graph_mode_name(m), "FULL_DECODE_ONLY");
  assert_int_equal(cplab_graph_mode_parse("full", &m), CPLAB_ENOTFOUND);
  /* cplab-bench's words: every labelled mode round-trips, FULL has none */
  for (int g = 0; g < CPLAB_GRAPH_LABELED; g++) {
    assert_int_equal(cplab_graph_mode_parse_label(cplab_graph_mode_label((cplab_graph_mode)g), &m), 0);
    assert_int_equal(m, g);
  }
  assert_string_equal(cplab_graph_mode_label(CPLAB_GRAPH_FULL_AND_PIECEWISE), "full");
  assert_string_equal(cplab_graph_mode_label(CPLAB_GRAPH_FULL), "?");
  assert_int_equal(cplab_graph_mode_parse_label("FULL", &m), CPLAB_ENOTFOUND);
}

/* Head padding: the heads a kernel runs, and --head-pad's words and range. */
static void test_head_padding(void **state) {
  (void)state;
  static const int cases[][3] = {{16, 64, 64}, {64, 64, 64}, {65, 64, 128}, {96, 128, 128},
                                 {16, 1, 16},  {16, 0, 16},  {16, 48, 48},  {1, 1024, 1024}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    assert_int_equal(cplab_heads_run(cases[i][0], cases[i][1]), cases[i][2]);
  /* Property: the least multiple of pad at or above heads. */
  for (int heads = 1; heads <= 256; heads++)
    for (int pad = 2; pad <= 130; pad++) {
      int run = cplab_heads_run(heads, pad);
      assert_true(run >= heads && run % pad == 0 && run - pad < heads);
    }
  int pad = 7;
  cplab_diag d = {0};
  assert_int_equal(cplab_head_pad_parse("auto", 2, &pad, &d), 0);
  assert_int_equal(pad, CPLAB_HEAD_PAD_AUTO);
  assert_int_equal(cplab_head_pad_parse("none", 2, &pad, &d), 0);
  assert_int_equal(pad, CPLAB_HEAD_PAD_NONE);
  assert_int_equal(cplab_head_pad_parse("1024", 2, &pad, &d), 0);
  assert_int_equal(pad, 1024);
  assert_int_equal(cplab_head_pad_parse("1", 1, &pad, &d), 0);
  assert_int_equal(pad, 1);
  static const char *const bad[] = {"0", "1", "1025", "x", "-4", "", "64x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char want[96];
    cplab_diag_clear(&d);
    assert_int_equal(cplab_head_pad_parse(bad[i], 2, &pad, &d), CPLAB_EUSAGE);
    snprintf(want, sizeof want, "--head-pad %s: expected auto, none or a multiple in [2, 1024]", bad[i]);
    assert_string_equal(d.msg, want);
  }
  cplab_diag_clear(&d);
  assert_int_equal(cplab_head_pad_parse("0", 1, &pad, &d), CPLAB_EUSAGE);
  assert_string_equal(d.msg, "--head-pad 0: expected auto, none or a multiple in [1, 1024]");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_names),        cmocka_unit_test(test_diag_first_error_wins),
      cmocka_unit_test(test_log_levels),         cmocka_unit_test(test_parse_u64),
      cmocka_unit_test(test_cli_parse),          cmocka_unit_test(test_pick_gpu), cmocka_unit_test(test_write_atomic), cmocka_unit_test(test_atomic_begin_commit),
      cmocka_unit_test(test_model_presets),      cmocka_unit_test(test_parallel_dcp_rules),
      cmocka_unit_test(test_parallel_other_rules), cmocka_unit_test(test_head_padding),
  };
  return cmocka_run_group_tests_name("common", tests, NULL, NULL);
}
