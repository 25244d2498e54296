/* clgrad plot: the metrics CSV of `clgrad train --metrics` as a PNG of two panels:
 * train and test loss, and train and test accuracy, against the epoch (gnuplot). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

enum { C_EPOCH, C_TRAIN_LOSS, C_TEST_LOSS, C_TRAIN_ACC, C_TEST_ACC, NCOLS };
static const char *const column_names[NCOLS] = {"epoch", "train_loss", "test_loss", "train_acc", "test_acc"};

/* Which field of the header holds each column; false when one is missing. */
static bool header(char *line, int *at)
{
    for (int c = 0; c < NCOLS; c++) at[c] = -1;
    int i = 0;
    for (char *save = NULL, *f = strtok_r(line, ",\r\n", &save); f; f = strtok_r(NULL, ",\r\n", &save), i++)
        for (int c = 0; c < NCOLS; c++)
            if (!strcmp(f, column_names[c])) at[c] = i;
    for (int c = 0; c < NCOLS; c++)
        if (at[c] < 0) return false;
    return true;
}

/* One row's fields as numbers (empty: NaN, not measured); false on anything else. */
static bool row(const char *line, const int *at, double *v)
{
    for (int c = 0; c < NCOLS; c++) {
        const char *f = line;
        for (int i = 0; i < at[c] && f; i++) f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
        if (!f) return false;
        char *end;
        v[c] = strtod(f, &end);
        if (end == f) v[c] = NAN;
        if (*end && !strchr(",\r\n", *end)) return false;
    }
    return !isnan(v[C_EPOCH]);
}

/* The rows as a gnuplot data block: epoch, losses, accuracies in percent. */
static int read_metrics(const char *path, cli_text *t, int *rows, double *lo, double *hi)
{
    FILE *f = fopen(path, "r");
    if (!f) return cli_fail("plot", "%s: cannot open the metrics file", path);
    char line[1024];
    int at[NCOLS], n = 0, rc = 0;
    if (!fgets(line, sizeof line, f) || !header(line, at))
        rc = cli_fail("plot", "%s: not a metrics file of clgrad train (the header needs epoch, train_loss, test_loss, "
                      "train_acc, test_acc)", path);
    cli_text_add(t, "$m << EOD\n");
    for (int ln = 2; !rc && fgets(line, sizeof line, f); ln++) {
        double v[NCOLS];
        if (strspn(line, " \r\n") == strlen(line)) continue;
        if (!row(line, at, v)) rc = cli_fail("plot", "%s:%d: not a row of numbers", path, ln);
        else cli_text_add(t, "%g %g %g %g %g\n", v[0], v[1], v[2], 100 * v[3], 100 * v[4]), n++;
        if (!rc) *lo = n == 1 || v[0] < *lo ? v[0] : *lo, *hi = n == 1 || v[0] > *hi ? v[0] : *hi;
    }
    cli_text_add(t, "EOD\n");
    fclose(f);
    if (!rc && !n) rc = cli_fail("plot", "%s: no rows to plot", path);
    *rows = n;
    return rc;
}

/* The epochs plotted, a little wider, so that no point sits on the frame. */
static void script(cli_text *t, const char *out, const char *title, int rows, double lo, double hi)
{
    cli_text_add(t, "set terminal pngcairo noenhanced size 1200,500 font 'sans,11'\nset output '%s'\n"
                    "set datafile missing 'nan'\nset multiplot layout 1,2 title '%s' font 'sans,13'\n"
                    "set grid\nset xlabel 'epoch'\nset key top right\nset style data linespoints\n"
                    "set offsets 0, 0, graph 0.05, graph 0.05\nset xrange [%g:%g]\n", out, title,
                 lo - 0.03 * (hi - lo) - 0.25, hi + 0.03 * (hi - lo) + 0.25);
    if (rows <= 20) cli_text_add(t, "set xtics 1\n");   /* whole epochs, while they fit */
    cli_text_add(t, "set title 'loss'\nset ylabel 'loss'\n"
                    "plot $m using 1:2 title 'train' lw 2 pt 7 lc rgb '#1f77b4', "
                    "$m using 1:3 title 'test' lw 2 pt 5 lc rgb '#d62728'\n");
    cli_text_add(t, "set title 'accuracy'\nset ylabel 'accuracy (%%)'\nset key bottom right\n"
                    "plot $m using 1:4 title 'train' lw 2 pt 7 lc rgb '#1f77b4', "
                    "$m using 1:5 title 'test' lw 2 pt 5 lc rgb '#d62728'\nunset multiplot\n");
}

int cmd_plot(int argc, char **argv)
{
    static const struct option longs[] = {{"out", 1, 0, 'o'}, {"title", 1, 0, 't'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = NULL, *title = NULL;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":ho:", longs, NULL)) != -1;) {
        if (c == 'o') out = optarg;
        else if (c == 't') title = optarg;
        else if (c != 'h') return cli_bad_option("plot", c, argv);
        else {
            printf("Usage: clgrad plot METRICS.csv --out FILE.png [--title TEXT]\n"
                   "Draws the metrics file of clgrad train --metrics: train and test loss, and train and\n"
                   "test accuracy, against the epoch, side by side (gnuplot, from gnuplot-nox).\n");
            return 0;
        }
    }
    if (optind != argc - 1 || !out) return cli_usage_error("plot", "give METRICS.csv and --out FILE.png");
    if (!cli_plot_path_ok(out) || (title && !cli_plot_path_ok(title)))
        return cli_usage_error("plot", "--out and --title must be without quotes or newlines");
    cli_text t = {0};
    int rows = 0;
    double lo = 0, hi = 0;
    int rc = read_metrics(argv[optind], &t, &rows, &lo, &hi);
    char err[512];
    if (!rc) script(&t, out, title ? title : argv[optind], rows, lo, hi);
    if (!rc && !t.s) rc = cli_fail("plot", "out of host memory");
    if (!rc && !cli_gnuplot(t.s, out, err, sizeof err)) rc = cli_fail("plot", "%s", err);
    if (!rc) printf("%s: %d epochs plotted\n", out, rows);
    free(t.s);
    return rc;
}
