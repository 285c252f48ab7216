/* cplab-diff's report as JUnit XML (--junit FILE): the result format CI
 * systems (GitLab, Jenkins, the GitHub Actions test reporters) show natively.
 * One <testsuite> per run of the tool, one <testcase> per case of the report
 * (diff.h: a dataset in agreement, an invariant of a step in rank-
 * invariance). A failing case carries its first divergences as the tool
 * prints them, its dataset's summary row and what passing means; an error
 * of the comparison is one <error> case, so that the CI page says why the
 * step went red rather than showing a stale or missing report. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cplab/atomic.h"
#include "cplab/cli.h"
#include "diff.h"

/* Length of the UTF-8 sequence at s when it is well formed and a character
 * XML 1.0 may hold (no overlong forms, surrogates, U+FFFE, U+FFFF or values
 * above U+10FFFF), else 0. Stops at a NUL: a cut sequence is 0. */
static int xml_utf8_length(const unsigned char *s) {
  int n = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
  if (n == 0 || s[0] > 0xF4) return 0;
  uint32_t cp = s[0] & (0x7Fu >> n);
  for (int i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3Fu);
  }
  int overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return 0;
  return n;
}

void diff_xml_escape(FILE *out, const char *s, int attribute) {
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
    int n = 1;
    switch (*p) {
      case '&': fputs("&amp;", out); break;
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '"': fputs("&quot;", out); break;
      case '\'': fputs("&apos;", out); break;
      case '\r': fputs("&#13;", out); break; /* a parser would read a raw one as a newline */
      case '\t':
      case '\n':
        if (attribute) fprintf(out, "&#%d;", *p);
        else fputc(*p, out);
        break;
      default:
        if (*p >= 0x20 && *p < 0x80) fputc(*p, out);
        else if (*p >= 0x80 && (n = xml_utf8_length(p)) > 0) fwrite(p, 1, (size_t)n, out);
        else n = 1, fputc('?', out);
    }
    p += n;
  }
}

static void attr(FILE *out, const char *name, const char *value) {
  fprintf(out, " %s=\"", name);
  diff_xml_escape(out, value, 1);
  fputc('"', out);
}

static void text_line(FILE *out, const char *text) {
  diff_xml_escape(out, text, 0);
  fputc('\n', out);
}

static int case_failed(const diff_case *c) { return c->failures > 0; }
static int case_skipped(const diff_case *c) { return !case_failed(c) && !c->evaluated; }

typedef struct tally {
  int tests, failures, errors, skipped;
} tally;

static tally count(const diff_report *r, const diff_junit_run *run) {
  tally t = {0, 0, 0, 0};
  if (run->error) return (tally){1, 0, 1, 0};
  for (int i = 0; i < r->num_cases; i++) {
    t.tests++;
    t.failures += case_failed(r->cases[i]);
    t.skipped += case_skipped(r->cases[i]);
  }
  return t;
}

static void suite_open(FILE *out, const char *indent, const char *element, const char *name, tally t, double seconds) {
  fprintf(out, "%s<%s", indent, element);
  attr(out, "name", name);
  fprintf(out, " tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\">\n", t.tests, t.failures,
          t.errors, t.skipped, seconds);
}

static void property(FILE *out, const char *name, const char *value) {
  fputs("      <property", out);
  attr(out, "name", name);
  attr(out, "value", value);
  fputs("/>\n", out);
}

static void properties(FILE *out, const diff_report *r, const diff_junit_run *run) {
  char n[32];
  fputs("    <properties>\n", out);
  property(out, "mode", run->mode);
  property(out, run->b ? "a" : "run", run->a);
  if (run->b) property(out, "b", run->b);
  property(out, "policy", run->policy ? run->policy : "built-in (analysis/policy.json)");
  property(out, "cplab_version", PACKAGE_VERSION);
  if (!run->error) {
    snprintf(n, sizeof n, "%lld", (long long)r->differences);
    property(out, "differences", n);
    snprintf(n, sizeof n, "%lld", (long long)r->compared_bytes);
    property(out, "compared_bytes", n);
  }
  fputs("    </properties>\n", out);
}

/* The dataset's row of the tool's summary table, as a sentence. */
static void dataset_line(FILE *out, const diff_dataset *s) {
  char line[320];
  snprintf(line, sizeof line,
           "dataset %s: %lld compared, %lld differences, %lld tie-swaps, max-abs %.3g, max-rel %.3g, max-ulp %lld, "
           "min-cosine %.6f",
           s->name, (long long)s->compared, (long long)s->differences, (long long)s->tie_swaps, s->max_abs, s->max_rel,
           (long long)s->max_ulp, s->min_cosine);
  text_line(out, line);
}

static void render_failure(FILE *out, const diff_report *r, const diff_case *c) {
  char none[96], more[48];
  snprintf(none, sizeof none, "%lld divergences, none of them kept (-n %d)", (long long)c->failures, r->keep);
  fputs("      <failure type=\"divergence\"", out);
  attr(out, "message", c->kept ? c->first[0] : none);
  fputs(">", out);
  for (int i = 0; i < c->kept; i++) text_line(out, c->first[i]);
  snprintf(more, sizeof more, "... and %lld more", (long long)(c->failures - c->kept));
  if (c->failures > c->kept) text_line(out, more);
  if (c->dataset >= 0 && c->dataset < r->num_datasets) dataset_line(out, &r->datasets[c->dataset]);
  if (c->criterion[0]) fputs("passes when: ", out), text_line(out, c->criterion);
  fputs("</failure>\n", out);
}

static void render_case(FILE *out, const diff_report *r, const diff_case *c, const char *stem) {
  char classname[sizeof c->group + 80];
  snprintf(classname, sizeof classname, "%s.%s", stem, c->group);
  fputs("    <testcase", out);
  attr(out, "classname", classname);
  attr(out, "name", c->name);
  if (!case_failed(c) && !case_skipped(c)) {
    fputs("/>\n", out);
    return;
  }
  fputs(">\n", out);
  if (case_skipped(c)) {
    fputs("      <skipped", out);
    attr(out, "message", c->skip ? c->skip : "not evaluated");
    fputs("/>\n", out);
  } else {
    render_failure(out, r, c);
  }
  fputs("    </testcase>\n", out);
}

static void render_error(FILE *out, const cplab_diag *e, const char *stem) {
  char msg[CPLAB_DIAG_MSG_MAX + 32];
  snprintf(msg, sizeof msg, "%s [%s]", e->msg, cplab_err_name(e->code));
  fputs("    <testcase", out);
  attr(out, "classname", stem);
  attr(out, "name", "cplab-diff");
  fputs(">\n      <error", out);
  attr(out, "type", cplab_err_name(e->code));
  attr(out, "message", msg);
  fputs("/>\n    </testcase>\n", out);
}

/* "smoke" of "golden/smoke.h5": the classnames start with it, so that the
 * reports of several scenarios merged by a CI system stay apart. */
static void stem_of(const char *path, char *out, size_t cap) {
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  size_t n = strlen(base);
  if (n > 3 && strcmp(base + n - 3, ".h5") == 0) n -= 3;
  snprintf(out, cap, "%.*s", (int)(n < 64 ? n : 64), base);
}

int diff_junit_render(FILE *out, const diff_report *r, const diff_junit_run *run, cplab_diag *d) {
  if (r->cases_lost && !run->error) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory: the report lost cases");
  char stem[80], suite[1024];
  stem_of(run->a, stem, sizeof stem);
  if (run->b) snprintf(suite, sizeof suite, "cplab-diff %s %s", run->a, run->b);
  else snprintf(suite, sizeof suite, "cplab-diff --ranks %s", run->a);
  tally t = count(r, run);
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
  suite_open(out, "", "testsuites", "cplab-diff", t, run->seconds);
  suite_open(out, "  ", "testsuite", suite, t, run->seconds);
  properties(out, r, run);
  if (run->error) render_error(out, run->error, stem);
  for (int i = 0; !run->error && i < r->num_cases; i++) render_case(out, r, r->cases[i], stem);
  fputs("  </testsuite>\n</testsuites>\n", out);
  return ferror(out) ? cplab_diag_set(d, CPLAB_EIO, "cannot render the JUnit report") : 0;
}

int diff_junit_write(const char *path, const diff_report *r, const diff_junit_run *run, cplab_diag *d) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory");
  int rc = diff_junit_render(f, r, run, d);
  if (fclose(f) != 0 && !rc) rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  if (!rc) rc = cplab_atomic_write(path, text, len, d);
  if (rc) cplab_diag_prefix(d, "--junit: ");
  free(text);
  return rc;
}
