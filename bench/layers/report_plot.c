/* cplab-bench's plots: a gnuplot data file and script (see report.h and
 * RESULTS.md), and optionally their rendering by the gnuplot on PATH.
 *
 * The script names the data and the images by base name, relative to its own
 * directory, so the .gp, the .dat and the images can be moved or archived
 * together; it is run from that directory. Rendering writes every image
 * under a temporary name first and renames them only after gnuplot succeeded,
 * like every other writer here. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cplab/atomic.h"
#include "report.h"
#include "report_internal.h"

enum { IMAGE_KINDS = 2 };
static const char *const image_kinds[IMAGE_KINDS] = {"png", "svg"};

/* The points of one figure (graph mode, metric) in series order: a series
 * is a run of points equal under series_key_cmp, tokens ascending. */
typedef struct figure {
  int graph;
  cplab_bench_metric metric;
  const cplab_bench_point **pts;
  size_t m;
} figure;

/* Everything of a series but the tokens (the x axis). */
static int series_key_cmp(const cplab_bench_point *a, const cplab_bench_point *b) {
  int c = report_parallel_cmp(a, b);
  if (!c) c = strcmp(a->workload, b->workload);
  if (!c) c = (a->batch > b->batch) - (a->batch < b->batch);
  if (!c) c = (a->out_tokens > b->out_tokens) - (a->out_tokens < b->out_tokens);
  return c;
}

static size_t select_figure(const cplab_bench_results *r, figure *fig, const cplab_bench_point **out) {
  fig->pts = out, fig->m = 0;
  for (size_t i = 0; i < r->n; i++)
    if (report_graph_of(&r->points[i]) == fig->graph && r->points[i].metric == fig->metric)
      out[fig->m++] = &r->points[i];
  report_sort(out, fig->m, report_series_cmp);
  return fig->m;
}

/* Whether a figure mixes workload lines, so series titles must name them. */
static int mixes_workloads(const figure *fig) {
  for (size_t i = 1; i < fig->m; i++)
    if (strcmp(fig->pts[i]->workload, fig->pts[0]->workload) != 0 || fig->pts[i]->batch != fig->pts[0]->batch ||
        fig->pts[i]->out_tokens != fig->pts[0]->out_tokens)
      return 1;
  return 0;
}

static void series_title(const figure *fig, const cplab_bench_point *p, char *buf, size_t len) {
  if (!mixes_workloads(fig))
    snprintf(buf, len, "%s", p->parallel);
  else
    snprintf(buf, len, "%s, %s, batch %lld, %lld out", p->parallel, p->workload, (long long)p->batch,
             (long long)p->out_tokens);
}

/* A gnuplot single-quoted string: only the quote itself is special. */
static void put_quoted(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'')
      fputs("''", f);
    else if (*s == '\n' || *s == '\r')
      fputc(' ', f);
    else
      fputc(*s, f);
  }
  fputc('\'', f);
}

static void figure_name(const char *base, const figure *fig, char *buf, size_t len) {
  snprintf(buf, len, "%s-%s-%s", base, fig->metric == CPLAB_BENCH_TTFT ? "ttft" : "tpot",
           cplab_graph_mode_label((cplab_graph_mode)fig->graph));
}

/* One block per series; *block counts gnuplot's `index` across figures. */
static void write_dat_figure(FILE *f, const figure *fig, const char *name, int *block) {
  for (size_t i = 0; i < fig->m;) {
    size_t end = i + 1;
    while (end < fig->m && series_key_cmp(fig->pts[i], fig->pts[end]) == 0) end++;
    char title[128];
    series_title(fig, fig->pts[i], title, sizeof title);
    fprintf(f, "# index %d: %s, %s\n# tokens median ci_low ci_high\n", (*block)++, name, title);
    for (size_t k = i; k < end; k++)
      fprintf(f, "%lld %.17g %.17g %.17g\n", (long long)fig->pts[k]->tokens, fig->pts[k]->stats.median,
              fig->pts[k]->stats.ci_low, fig->pts[k]->stats.ci_high);
    fputs("\n\n", f);
    i = end;
  }
}

static void write_gp_plot(FILE *f, const figure *fig, const char *dat, int first_block) {
  fputs("plot ", f);
  int block = first_block;
  for (size_t i = 0; i < fig->m;) {
    size_t end = i + 1;
    while (end < fig->m && series_key_cmp(fig->pts[i], fig->pts[end]) == 0) end++;
    char title[128];
    series_title(fig, fig->pts[i], title, sizeof title);
    if (block > first_block) fputs(", \\\n     ", f);
    put_quoted(f, dat);
    fprintf(f, " index %d using 1:2:3:4 with yerrorlines title ", block++);
    put_quoted(f, title);
    i = end;
  }
  fputc('\n', f);
}

static void write_gp_figure(FILE *f, const cplab_bench_results *r, const figure *fig, const char *name, const char *dat,
                            int first_block) {
  int ttft = fig->metric == CPLAB_BENCH_TTFT;
  char title[512], about[256];
  const char *preset = r->meta.preset, *card = r->meta.card;
  snprintf(about, sizeof about, "%s%s%.160s", preset, *preset && *card ? ", " : "", card);
  int at = snprintf(title, sizeof title, "%s against %s, graph mode %s", ttft ? "TTFT" : "TPOT",
                    ttft ? "prefill tokens" : "context length", cplab_graph_mode_label((cplab_graph_mode)fig->graph));
  if (*about) snprintf(title + at, sizeof title - (size_t)at, " (%s)", about);
  fprintf(f, "\n# %s\nset title ", name);
  put_quoted(f, title);
  fprintf(f, "\nset xlabel '%s'\nset ylabel '%s (ms)'\n",
          ttft ? "prefill tokens per request" : "context length (tokens)", ttft ? "TTFT" : "TPOT");
  for (int k = 0; k < IMAGE_KINDS; k++) {
    char image[1100];
    snprintf(image, sizeof image, "%s.%s", name, image_kinds[k]);
    fprintf(f, "%s\nset termoption noenhanced\nset output ",
            k == 0 ? "eval('set terminal ' . png_terminal . ' size 1000,600')" : "set terminal svg size 1000,600");
    put_quoted(f, image);
    fputs(" . out_suffix\n", f);
    write_gp_plot(f, fig, dat, first_block);
    fputs("unset output\n", f);
  }
}

static void write_gp_preamble(FILE *f, const cplab_bench_results *r, const char *base) {
  fputs("# gnuplot script written by cplab-bench: TTFT and TPOT per layout, error bars = 95% interval of the median.\n",
        f);
  fprintf(f, "# Data and images are named relative to this script's directory: cd there, then gnuplot %s.gp\n", base);
  fputs("# Command: ", f);
  for (const char *c = r->meta.command; *c; c++) fputc(*c == '\n' || *c == '\r' ? ' ' : *c, f);
  fputs(
      "\nif (!exists('out_suffix')) out_suffix = ''\n"
      "png_terminal = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'pngcairo' : 'png'\n"
      "set grid\nset key top left\nset logscale x 2\nset format x '%g'\nset yrange [0:*]\n",
      f);
}

/* Fill the .dat and .gp texts; names[] gets every figure's name (count in *nfig). */
static int render_texts(const cplab_bench_results *r, const char *base, report_text *dat, report_text *gp,
                        char (*names)[1100], int *nfig, cplab_diag *d) {
  const cplab_bench_point **pts = malloc((r->n ? r->n : 1) * sizeof *pts);
  char datname[1100];
  snprintf(datname, sizeof datname, "%s.dat", base);
  if (!pts) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the plots");
  fputs(
      "# cplab-bench plot data: one block per graph mode, metric and layout (gnuplot index N);\n"
      "# tokens = prefill tokens (TTFT) or context length (TPOT); times in ms; ci = 95% interval of the median.\n\n\n",
      dat->f);
  write_gp_preamble(gp->f, r, base);
  int block = 0;
  *nfig = 0;
  for (int g = 0; g < REPORT_GRAPHS; g++)
    for (int m = CPLAB_BENCH_TTFT; m <= CPLAB_BENCH_TPOT; m++) {
      figure fig = {.graph = g, .metric = (cplab_bench_metric)m};
      if (select_figure(r, &fig, pts) == 0) continue;
      figure_name(base, &fig, names[*nfig], sizeof names[*nfig]);
      int first = block;
      write_dat_figure(dat->f, &fig, names[*nfig], &block);
      write_gp_figure(gp->f, r, &fig, names[*nfig], datname, first);
      (*nfig)++;
    }
  free(pts);
  return 0;
}

/* The first executable `gnuplot` along PATH into buf, or CPLAB_ENOTFOUND. */
static int find_gnuplot(char *buf, size_t len) {
  const char *path = getenv("PATH");
  if (!path) return CPLAB_ENOTFOUND;
  for (const char *p = path;; p++) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    struct stat st;
    int w = snprintf(buf, len, "%.*s/gnuplot", (int)n, n ? p : ".");
    if (w > 0 && (size_t)w < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) return 0;
    if (!end) return CPLAB_ENOTFOUND;
    p = end;
  }
}

/* Run gnuplot on base.gp in dir, images named with suffix; its stderr's end
 * goes into the message when it fails. */
static int run_gnuplot(const char *exe, const char *dir, const char *base, const char *suffix, cplab_diag *d) {
  char script[1100], setting[128];
  snprintf(script, sizeof script, "%s.gp", base);
  snprintf(setting, sizeof setting, "out_suffix = '%s'", suffix);
  int err[2];
  if (pipe(err) != 0) CPLAB_FAIL(d, CPLAB_EIO, "cannot run gnuplot: %s", strerror(errno));
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || chdir(dir) != 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(err[1], 2) < 0) _exit(127);
    close(err[0]);
    execl(exe, "gnuplot", "-e", setting, script, (char *)NULL);
    _exit(127);
  }
  close(err[1]);
  char msg[512] = "";
  size_t got = 0;
  for (ssize_t k; (k = read(err[0], msg + got, sizeof msg - 1 - got)) != 0;) {
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) break;
    got += (size_t)k;
    if (got == sizeof msg - 1) got = 0; /* keep the last part: gnuplot ends with the error */
  }
  msg[got] = '\0';
  close(err[0]);
  int status = 0;
  if (pid < 0) CPLAB_FAIL(d, CPLAB_EIO, "cannot run gnuplot: %s", strerror(errno));
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) continue;
  for (char *c = msg; *c; c++)
    if (*c == '\n') *c = ' ';
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    CPLAB_FAIL(d, CPLAB_EIO, "gnuplot %s/%s failed (exit %d): %s", dir, script,
               WIFEXITED(status) ? WEXITSTATUS(status) : -1, msg);
  return 0;
}

/* Render, then give every image its name; on failure remove them all. */
static int render_images(const char *dir, const char *base, char (*names)[1100], int nfig, cplab_diag *d) {
  char exe[4096], suffix[64];
  if (find_gnuplot(exe, sizeof exe) != 0)
    CPLAB_FAIL(d, CPLAB_ENOTFOUND, "gnuplot is not on PATH: %s/%s.gp is there to render later (cd %s && gnuplot %s.gp)",
               dir, base, dir, base);
  snprintf(suffix, sizeof suffix, ".tmp.%ld", (long)getpid());
  int rc = run_gnuplot(exe, dir, base, suffix, d);
  char final[2400], tmp[2400 + 64];
  for (int i = 0; i < nfig; i++)
    for (int k = 0; k < IMAGE_KINDS; k++) {
      snprintf(final, sizeof final, "%s/%s.%s", dir, names[i], image_kinds[k]);
      snprintf(tmp, sizeof tmp, "%s%s", final, suffix);
      if (!rc && access(tmp, F_OK) != 0)
        rc = cplab_diag_set(d, CPLAB_EIO, "gnuplot did not make '%s': %s", final, strerror(errno));
      if (!rc) rc = cplab_atomic_commit(tmp, final, d);
      else unlink(tmp);
    }
  return rc;
}

int cplab_bench_write_plots(const cplab_bench_results *r, const char *prefix, int render, cplab_diag *d) {
  int rc = report_check_finished(r, prefix, d);
  if (rc) return rc;
  const char *slash = strrchr(prefix, '/');
  const char *base = slash ? slash + 1 : prefix;
  char dir[1024], path[1100];
  if (!*base || strlen(prefix) > 1000)
    CPLAB_FAIL(d, CPLAB_EINVAL, "plot prefix '%s' must end in a file name (at most 1000 bytes in all)", prefix);
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == prefix)
    snprintf(dir, sizeof dir, "/");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - prefix), prefix);
  char(*names)[1100] = malloc(REPORT_GRAPHS * 2 * sizeof *names);
  report_text dat, gp = {0};
  if (!names) CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the plots");
  int nfig = 0;
  if (!(rc = report_text_open(&dat, d)) && !(rc = report_text_open(&gp, d)))
    rc = render_texts(r, base, &dat, &gp, names, &nfig, d);
  snprintf(path, sizeof path, "%s.dat", prefix);
  if (!rc) rc = report_text_commit(&dat, path, d);
  snprintf(path, sizeof path, "%s.gp", prefix);
  if (!rc) rc = report_text_commit(&gp, path, d);
  report_text_free(&dat);
  report_text_free(&gp);
  if (!rc && render) rc = render_images(dir, base, names, nfig, d);
  free(names);
  return rc;
}
