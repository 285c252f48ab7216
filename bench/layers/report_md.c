/* cplab-bench's Markdown report: see report.h and RESULTS.md. The summary
 * tables follow the reference table of vLLM PR 56157 (shared/reference/
 * perf-anchors.md §7): one row per workload line, one column per set of parallel sizes,
 * cells "median (ratio×)". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_internal.h"

/* Table cells: a '|' would end the cell and a newline the row. */
static void put_cell(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '|')
      fputs("\\|", f);
    else if (*s == '\n' || *s == '\r')
      fputc(' ', f);
    else
      fputc(*s, f);
  }
}

/* A code span fenced by more backticks than the text's longest run of them. */
static void put_code(FILE *f, const char *s) {
  int run = 0, longest = 0;
  for (const char *c = s; *c; c++) {
    run = *c == '`' ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  for (int i = 0; i <= longest; i++) fputc('`', f);
  if (longest) fputc(' ', f);
  put_cell(f, s);
  if (longest) fputc(' ', f);
  for (int i = 0; i <= longest; i++) fputc('`', f);
}

static void put_field(FILE *f, const char *name, const char *value) {
  fprintf(f, "| %s | ", name);
  put_cell(f, value[0] ? value : "—");
  fputs(" |\n", f);
}

/* The head padding, and each parallel label's real -> run heads per rank. */
static void write_heads(const cplab_bench_results *r, FILE *f) {
  int pad = r->meta.head_pad;
  if (pad < 0) {
    fputs("| query heads | not recorded (results before format 2.0.0 ran each rank's real heads) |\n", f);
    return;
  }
  if (pad == 0) fputs("| query heads | each rank's real heads, no padding (`--head-pad none`) |", f);
  else
    fprintf(f, "| query heads | padded to a multiple of %d (`--head-pad`; zero-filled heads, outputs discarded), per "
            "rank real → run:", pad);
  for (size_t i = 0, shown = 0; i < r->n; i++) {
    const cplab_bench_point *p = &r->points[i];
    size_t j = 0;
    while (j < i && strcmp(r->points[j].parallel, p->parallel) != 0) j++;
    if (j < i || !p->heads) continue; /* each label once */
    fprintf(f, "%s %s %d → %d", shown++ ? "," : "", p->parallel, p->heads, p->heads_run);
  }
  fputs(" |\n", f);
}

static void write_header(const cplab_bench_results *r, FILE *f) {
  const cplab_bench_meta *m = &r->meta;
  fputs("# cplab-bench: TTFT and TPOT per layout\n\n| field | value |\n|---|---|\n", f);
  put_field(f, "card", m->card);
  put_field(f, "date", m->date);
  put_field(f, "commit", m->commit);
  fputs("| command | ", f);
  if (m->command[0])
    put_code(f, m->command);
  else
    fputs("—", f);
  fputs(" |\n", f);
  put_field(f, "preset", m->preset);
  put_field(f, "layout", m->layout);
  write_heads(r, f);
  put_field(f, "backend", m->backend);
  fprintf(f, "| GPUs | %d |\n| layers | %d decoder layer%s timed per step |\n", m->gpus, m->layers,
          m->layers == 1 ? "" : "s");
  fprintf(f,
          "| statistics | median of each point's repetitions; 95%% intervals of the median and of each ratio by "
          "percentile bootstrap (%d resamples, seed %llu) |\n",
          m->resamples, (unsigned long long)m->seed);
  put_field(f, "note", m->note);
  if (strcmp(m->backend, "single") == 0)
    fputs(
        "\n> **Communication was device copies.** The single-device backend runs every logical rank on one GPU: "
        "its collectives are device-to-device copies, not NCCL transfers between GPUs, so the communication times "
        "and the ratios between layouts leave out the cost of the links.\n",
        f);
}

/* "3278.1 (0.595×)": the ratio only against another point. */
static void put_summary_cell(FILE *f, const cplab_bench_point *p, long self) {
  char ms[32];
  report_format_ms(p->stats.median, ms, sizeof ms);
  fprintf(f, " %s", ms);
  if (p->baseline >= 0 && p->baseline != self && !isnan(p->ratio.ratio)) fprintf(f, " (%.3g×)", p->ratio.ratio);
  fputs(" |", f);
}

/* The point of pts[m] on row `row` in the parallel sizes' column `col`, or NULL. */
static const cplab_bench_point *cell_point(const cplab_bench_point **pts, size_t m, const cplab_bench_point *row,
                                           const cplab_bench_point *col) {
  for (size_t i = 0; i < m; i++)
    if (report_row_cmp(pts[i], row) == 0 && report_parallel_cmp(pts[i], col) == 0) return pts[i];
  return NULL;
}

/* One graph mode's table; scratch holds 3 * r->n pointers. */
static void write_summary(const cplab_bench_results *r, int g, const cplab_bench_point **scratch, FILE *f) {
  const cplab_bench_point **pts = scratch, **cols = scratch + r->n, **rows = scratch + 2 * r->n;
  size_t m = report_select_graph(r, g, pts);
  if (m == 0) return;
  memcpy(cols, pts, m * sizeof *cols);
  report_sort(cols, m, report_parallel_cmp);
  size_t ncols = report_unique(cols, m, report_parallel_cmp);
  fprintf(f, "\n## Graph mode: %s\n\n| workload |", cplab_graph_mode_label((cplab_graph_mode)g));
  for (size_t c = 0; c < ncols; c++) fprintf(f, " %s |", cols[c]->parallel);
  fputs("\n|---|", f);
  for (size_t c = 0; c < ncols; c++) fputs("---|", f);
  fputc('\n', f);
  memcpy(rows, pts, m * sizeof *rows);
  report_sort(rows, m, report_row_cmp);
  size_t nrows = report_unique(rows, m, report_row_cmp);
  for (size_t k = 0; k < nrows; k++) {
    char label[160];
    report_row_label(rows[k], label, sizeof label);
    fprintf(f, "| %s |", label);
    for (size_t c = 0; c < ncols; c++) {
      const cplab_bench_point *p = cell_point(pts, m, rows[k], cols[c]);
      if (p)
        put_summary_cell(f, p, (long)(p - r->points));
      else
        fputs(" — |", f);
    }
    fputc('\n', f);
  }
}

static void put_ratio_detail(FILE *f, const cplab_bench_results *r, const cplab_bench_point *p) {
  long self = (long)(p - r->points);
  if (p->baseline == self)
    fputs(" 1 (baseline) |", f);
  else if (p->baseline < 0)
    fputs(" — (no baseline) |", f);
  else if (isnan(p->ratio.ratio))
    fprintf(f, " — (%s median 0) |", r->points[p->baseline].parallel);
  else
    fprintf(f, " %.3f [%.3f, %.3f] vs %s |", p->ratio.ratio, p->ratio.ci_low, p->ratio.ci_high,
            r->points[p->baseline].parallel);
}

static void write_detail_row(FILE *f, const cplab_bench_results *r, const cplab_bench_point *p) {
  const cplab_stats *s = &p->stats;
  char label[160], v[8][32];
  report_row_label(p, label, sizeof label);
  const double values[8] = {s->median, s->p99, s->mean, s->stddev, s->min, s->max, s->ci_low, s->ci_high};
  for (int i = 0; i < 8; i++) report_format_ms(values[i], v[i], sizeof v[i]);
  char heads[32] = "—";
  if (p->heads) snprintf(heads, sizeof heads, "%d → %d", p->heads, p->heads_run);
  fprintf(f, "| %zu | %s | %s | %s | %d | %s | %zu | %s | %s | %s ± %s | %s | %s | [%s, %s] |", (size_t)(p - r->points),
          p->graph, label, p->parallel, cplab_bench_parallel_world(p->tp, p->pcp, p->dcp), heads, s->n, v[0], v[1],
          v[2], v[3], v[4], v[5], v[6], v[7]);
  put_ratio_detail(f, r, p);
  for (int k = 0; k < CPLAB_BENCH_PHASES; k++) {
    char ms[32];
    report_format_ms(p->phase_ms[k], ms, sizeof ms);
    fprintf(f, " %s |", ms);
  }
  fputc('\n', f);
}

static void write_detail(const cplab_bench_results *r, FILE *f) {
  fputs(
      "\n## Every point (ms)\n\n| # | graph | workload | parallel | GPUs | heads per rank (real → run) | n | median | "
      "p99 | mean ± stddev | min | max | median 95% CI | ratio [95% CI] |",
      f);
  for (int k = 0; k < CPLAB_BENCH_PHASES; k++) fprintf(f, " %s |", cplab_bench_phase_name(k));
  fputs("\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", f);
  for (int k = 0; k < CPLAB_BENCH_PHASES; k++) fputs("---|", f);
  fputc('\n', f);
  for (size_t i = 0; i < r->n; i++) write_detail_row(f, r, &r->points[i]);
  fputs("\nPhase columns: median time of each phase per step (— where not measured).\n", f);
}

static int render(const cplab_bench_results *r, report_text *t, cplab_diag *d) {
  int rc = report_text_open(t, d);
  if (rc) return rc;
  const cplab_bench_point **scratch = malloc((3 * r->n + 1) * sizeof *scratch);
  if (!scratch) {
    report_text_free(t);
    CPLAB_FAIL(d, CPLAB_ENOMEM, "out of memory for the Markdown report");
  }
  write_header(r, t->f);
  if (r->n == 0) fputs("\nNo points were measured.\n", t->f);
  for (int g = 0; g < REPORT_GRAPHS; g++) write_summary(r, g, scratch, t->f);
  if (r->n > 0) {
    fputs(
        "\nCells: median over the repetitions; (r×) = that median over the median of pure TP on as "
        "many GPUs (tp·pcp) in the same row; no ratio where that was not measured.\n",
        t->f);
    write_detail(r, t->f);
  }
  free(scratch);
  rc = report_text_close(t, d);
  if (rc) report_text_free(t);
  return rc;
}

int cplab_bench_write_markdown(const cplab_bench_results *r, FILE *out, cplab_diag *d) {
  int rc = report_check_finished(r, "Markdown report", d);
  report_text t;
  if (!rc) rc = render(r, &t, d);
  if (rc) return rc;
  if (fwrite(t.data, 1, t.len, out) != t.len || fflush(out) != 0)
    rc = cplab_diag_set(d, CPLAB_EIO, "cannot write the Markdown report");
  report_text_free(&t);
  return rc;
}

int cplab_bench_write_markdown_file(const cplab_bench_results *r, const char *path, cplab_diag *d) {
  int rc = report_check_finished(r, path, d);
  report_text t;
  if (!rc) rc = render(r, &t, d);
  if (rc) return rc;
  return report_text_commit(&t, path, d);
}
