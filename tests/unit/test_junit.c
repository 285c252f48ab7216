/* cplab-diff --junit: XML escaping of every byte a message or path can hold,
 * and the JUnit rendering of a report built by hand (counts consistent with
 * the cases, a failure carrying the first divergences, skipped and error
 * cases), and the atomic write (a path that cannot be written leaves
 * nothing). The CLI test (tests/cli/diff_junit.sh) covers real traces. */
#include <sys/stat.h>
#include <unistd.h>

#include "diff.h"
#include "testutil.h"

/* The escaped text of s (caller frees). */
static char *escaped(const char *s, int attribute) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  diff_xml_escape(f, s, attribute);
  assert_int_equal(fclose(f), 0);
  return buf;
}

static void expect_escape(const char *in, int attribute, const char *want) {
  char *got = escaped(in, attribute);
  if (strcmp(got, want) != 0) fail_msg("escape(\"%s\", %d) = \"%s\", expected \"%s\"", in, attribute, got, want);
  free(got);
}

static void test_escape_markup(void **state) {
  (void)state;
  expect_escape("a&b<c>\"d'e", 0, "a&amp;b&lt;c&gt;&quot;d&apos;e");
  expect_escape("a&b<c>\"d'e", 1, "a&amp;b&lt;c&gt;&quot;d&apos;e");
  expect_escape("&amp;", 1, "&amp;amp;"); /* escaped again, not taken as an entity */
  expect_escape("|a - b| <= 0.05 + 0.02 |a|", 0, "|a - b| &lt;= 0.05 + 0.02 |a|");
  expect_escape("", 1, "");
  expect_escape(NULL, 1, "");
}

/* Attribute-value normalisation turns raw tabs and newlines into spaces:
 * in attributes they are character references; text keeps them. */
static void test_escape_whitespace(void **state) {
  (void)state;
  expect_escape("a\tb\nc\rd", 1, "a&#9;b&#10;c&#13;d");
  expect_escape("a\tb\nc\rd", 0, "a\tb\nc&#13;d");
}

/* XML 1.0 cannot hold other control characters, even as references, nor
 * bytes that are not UTF-8: each such byte becomes '?'. */
static void test_escape_invalid(void **state) {
  (void)state;
  expect_escape("a\x01" "b\x1b" "c\x7f", 0, "a?b?c\x7f"); /* DEL is a Char */
  expect_escape("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 1, "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  expect_escape("x\x80y", 0, "x?y");                 /* a lone continuation byte */
  expect_escape("x\xc3", 0, "x?");                   /* cut at the end */
  expect_escape("x\xc3y", 0, "x?y");                 /* cut before an ASCII byte */
  expect_escape("\xc0\xaf", 0, "??");                /* overlong '/' */
  expect_escape("\xe0\x80\xaf", 0, "???");           /* overlong, three bytes */
  expect_escape("\xed\xa0\x80", 0, "???");           /* a UTF-16 surrogate */
  expect_escape("\xef\xbf\xbe\xef\xbf\xbf", 0, "??????"); /* U+FFFE, U+FFFF */
  expect_escape("\xf4\x90\x80\x80", 0, "????");      /* above U+10FFFF */
  expect_escape("\xf5\x80\x80\x80", 0, "????");
  expect_escape("\xef\xbf\xbd", 0, "\xef\xbf\xbd");  /* U+FFFD itself is fine */
}

/* A report with a passing, a failing (3 divergences, 2 kept), a skipped and
 * a hostile-named case. */
static void sample_report(diff_report *r) {
  assert_int_equal(diff_report_init(r, 2), 0);
  diff_case *pass = diff_report_case(r, "attention", "attn_lse");
  pass->evaluated = 1;
  diff_dataset *ds = diff_report_dataset(r, "attn_out");
  diff_case *bad = ds->c = diff_report_case(r, "attention", "attn_out");
  bad->evaluated = 1;
  bad->dataset = 0;
  ds->compared = 100, ds->differences = 3, ds->max_abs = 0.5;
  snprintf(bad->criterion, sizeof bad->criterion, "|a - b| <= 0.05 + 0.02 |a|");
  diff_report_add(r, bad, "attn_out: rank 0 step 0 layer 0 token 1 head 0 column 5: 1 vs 1.5 (abs 0.5)");
  diff_report_add(r, bad, "attn_out: rank 0 step 0 layer 0 token 1 head 0 column 6: 2 vs 3 (abs 1)");
  diff_report_add(r, bad, "attn_out: third");
  diff_case *skip = diff_report_case(r, "layout", "layout-specific");
  skip->skip = "decided by each layout";
  assert_ptr_equal(diff_report_case(r, "attention", "attn_out"), bad); /* found again, not made twice */
  diff_case *odd = diff_report_case(r, "g<&>", "n\"'");
  odd->evaluated = 1;
  diff_report_count(r, odd, 2); /* counted without text */
}

static char *render(const diff_report *r, const diff_junit_run *run) {
  char *buf = NULL;
  size_t len = 0;
  cplab_diag d = {0};
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(diff_junit_render(f, r, run, &d), 0);
  assert_int_equal(fclose(f), 0);
  return buf;
}

static void expect_in(const char *xml, const char *want) {
  if (!strstr(xml, want)) fail_msg("'%s' not in:\n%s", want, xml);
}

static void test_render_report(void **state) {
  (void)state;
  diff_report r;
  sample_report(&r);
  assert_int_equal(r.differences, 5);
  assert_int_equal(r.num_cases, 4);
  diff_junit_run run = {"agreement", "golden/smoke.h5", "run & co/smoke.h5", NULL, 1.25, NULL};
  char *xml = render(&r, &run);
  expect_in(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"cplab-diff\" tests=\"4\" failures=\"2\" "
                 "errors=\"0\" skipped=\"1\" time=\"1.250\">");
  expect_in(xml, "<testsuite name=\"cplab-diff golden/smoke.h5 run &amp; co/smoke.h5\" tests=\"4\" failures=\"2\" "
                 "errors=\"0\" skipped=\"1\" time=\"1.250\">");
  expect_in(xml, "<property name=\"b\" value=\"run &amp; co/smoke.h5\"/>");
  expect_in(xml, "<testcase classname=\"smoke.attention\" name=\"attn_lse\"/>");
  expect_in(xml, "<testcase classname=\"smoke.attention\" name=\"attn_out\">\n      <failure type=\"divergence\" "
                 "message=\"attn_out: rank 0 step 0 layer 0 token 1 head 0 column 5: 1 vs 1.5 (abs 0.5)\">");
  expect_in(xml, "column 6: 2 vs 3 (abs 1)\n... and 1 more\ndataset attn_out: 100 compared, 3 differences");
  expect_in(xml, "passes when: |a - b| &lt;= 0.05 + 0.02 |a|\n</failure>");
  expect_in(xml, "<testcase classname=\"smoke.layout\" name=\"layout-specific\">\n"
                 "      <skipped message=\"decided by each layout\"/>");
  expect_in(xml, "<testcase classname=\"smoke.g&lt;&amp;&gt;\" name=\"n&quot;&apos;\">\n"
                 "      <failure type=\"divergence\" message=\"2 divergences, none of them kept (-n 2)\">");
  assert_null(strstr(xml, "third")); /* -n 2 */
  free(xml);
  diff_report_free(&r);
}

static void test_render_error(void **state) {
  (void)state;
  diff_report r;
  sample_report(&r);
  cplab_diag e = {0};
  cplab_diag_set(&e, CPLAB_EIO, "cannot open '%s'", "none.h5");
  diff_junit_run run = {"rank-invariance", "dir/none.h5", NULL, "tight.json", 0.0, &e};
  char *xml = render(&r, &run);
  expect_in(xml, "tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"0.000\">");
  expect_in(xml, "<testsuite name=\"cplab-diff --ranks dir/none.h5\"");
  expect_in(xml, "<property name=\"policy\" value=\"tight.json\"/>");
  expect_in(xml, "<testcase classname=\"none\" name=\"cplab-diff\">\n      <error type=\"CPLAB_EIO\" "
                 "message=\"cannot open &apos;none.h5&apos; [CPLAB_EIO]\"/>");
  assert_null(strstr(xml, "attn_out")); /* a failed comparison's cases are not results */
  free(xml);
  diff_report_free(&r);
}

static void test_write(void **state) {
  (void)state;
  char dir[] = "/tmp/cplab-junit-test-XXXXXX", path[96], bad[128];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/report.xml", dir);
  snprintf(bad, sizeof bad, "%s/no/such/dir/report.xml", dir);
  diff_report r;
  sample_report(&r);
  diff_junit_run run = {"agreement", "a.h5", "b.h5", NULL, 0.5, NULL};
  cplab_diag d = {0};
  assert_int_equal(diff_junit_write(path, &r, &run, &d), 0);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_true(st.st_size > 100);
  assert_int_equal(diff_junit_write(bad, &r, &run, &d), CPLAB_EIO);
  expect_in(d.msg, "--junit: cannot create a temporary file beside");
  assert_int_not_equal(stat(bad, &st), 0);
  /* A case lost to memory would make the counts lie: no report then. */
  cplab_diag_clear(&d);
  r.cases_lost = 1;
  assert_int_equal(unlink(path), 0);
  assert_int_equal(diff_junit_write(path, &r, &run, &d), CPLAB_ENOMEM);
  assert_int_not_equal(stat(path, &st), 0);
  diff_report_free(&r);
  assert_int_equal(rmdir(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escape_markup), cmocka_unit_test(test_escape_whitespace),
      cmocka_unit_test(test_escape_invalid), cmocka_unit_test(test_render_report),
      cmocka_unit_test(test_render_error),   cmocka_unit_test(test_write),
  };
  return cmocka_run_group_tests_name("junit", tests, NULL, NULL);
}
