/* Every malformed scenario in tests/scenarios/invalid/ is rejected with the
 * error code and message listed in tests/scenarios/invalid.tsv, and nothing
 * is returned. One TAP line per file. */
#include "cplab/scenario.h"
#include "testutil.h"

typedef struct invalid_case {
  char file[512], code[64], fragment[512];
} invalid_case;

static void test_one(void **state) {
  const invalid_case *c = *state;
  cplab_scenario *s = (cplab_scenario *)(uintptr_t)1;
  cplab_diag d = {0};
  int rc = cplab_scenario_load(c->file, NULL, &s, &d);
  if (rc == 0) fail_msg("%s was accepted", c->file);
  assert_null(s);
  if (strcmp(cplab_err_name(rc), c->code) != 0)
    fail_msg("%s: got %s (%s), expected %s", c->file, cplab_err_name(rc), d.msg, c->code);
  if (strncmp(d.msg, c->file, strlen(c->file)) != 0) fail_msg("%s: message does not name the file: %s", c->file, d.msg);
  if (!strstr(d.msg, c->fragment)) fail_msg("%s: message '%s' lacks '%s'", c->file, d.msg, c->fragment);
}

int main(void) {
  const char *top = getenv("top_srcdir");
  char tsv[512];
  snprintf(tsv, sizeof tsv, "%s/tests/scenarios/invalid.tsv", top ? top : ".");
  FILE *f = fopen(tsv, "r");
  if (!f) {
    fprintf(stderr, "cannot open %s (set top_srcdir)\n", tsv);
    return 99;
  }
  invalid_case *cases = calloc(256, sizeof *cases);
  struct CMUnitTest *tests = calloc(256, sizeof *tests);
  char line[2048];
  size_t n = 0;
  while (fgets(line, sizeof line, f) && n < 256) {
    if (line[0] == '#' || line[0] == '\n') continue;
    line[strcspn(line, "\n")] = '\0';
    char *file = strtok(line, "\t"), *code = strtok(NULL, "\t"), *frag = strtok(NULL, "");
    if (!file || !code || !frag) {
      fprintf(stderr, "%s: malformed line\n", tsv);
      return 99;
    }
    snprintf(cases[n].file, sizeof cases[n].file, "%s/tests/scenarios/invalid/%s", top ? top : ".", file);
    snprintf(cases[n].code, sizeof cases[n].code, "%s", code);
    snprintf(cases[n].fragment, sizeof cases[n].fragment, "%s", frag);
    tests[n] = (struct CMUnitTest){file, test_one, NULL, NULL, &cases[n]};
    tests[n].name = strdup(file);
    n++;
  }
  fclose(f);
  if (n < 30) {
    fprintf(stderr, "%s lists only %zu cases; the suite promises at least 30\n", tsv, n);
    return 99;
  }
  int failed = _cmocka_run_group_tests("invalid-scenarios", tests, n, NULL, NULL);
  for (size_t i = 0; i < n; i++) free((char *)tests[i].name);
  free(tests);
  free(cases);
  return failed;
}
