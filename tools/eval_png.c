/* eval_png.c: the confusion matrix of `clgrad eval` as a PNG heat map (gnuplot): rows
 * are true classes (top to bottom), columns predictions, each cell shaded by the share
 * of its row and labelled with its count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A class name safe inside gnuplot's double quotes. */
static void tic_label(const clg_model *m, int i, char *buf, size_t len)
{
    const char *name = clg_model_class_name(m, i);
    char raw[64];
    snprintf(raw, sizeof raw, "%s", name ? name : "");
    size_t n = 0;
    for (const char *p = raw; *p && n + 1 < len; p++)
        if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) buf[n++] = *p;
    buf[n] = '\0';
    if (!n) snprintf(buf, len, "%d", i);
}

static void tics(cli_text *t, const clg_model *m, int k, const char *axis)
{
    char name[64];
    cli_text_add(t, "set %stics (", axis);
    for (int i = 0; i < k; i++) {
        tic_label(m, i, name, sizeof name);
        cli_text_add(t, "%s\"%s\" %d", i ? ", " : "", name, i);
    }
    cli_text_add(t, ")\n");
}

int eval_confusion_png(const clg_model *m, const int64_t *cm, int k, double acc, const char *png)
{
    cli_text t = {0};
    int px = 240 + 56 * k;
    cli_text_add(&t, "set terminal pngcairo noenhanced size %d,%d font 'sans,10'\nset output '%s'\n", px + 80, px, png);
    cli_text_add(&t, "set title 'Confusion matrix: accuracy %.2f%%' font 'sans,13'\n", 100 * acc);
    cli_text_add(&t, "set xlabel 'predicted class'\nset ylabel 'true class'\nset yrange [%d.5:-0.5]\n"
           "set xrange [-0.5:%d.5]\nset xtics rotate by 45 right\nset palette defined (0 'white', 1 '#08519c')\n"
           "set cbrange [0:1]\nset cblabel 'share of the true class'\nset size ratio -1\nunset key\n", k - 1, k - 1);
    tics(&t, m, k, "x");
    tics(&t, m, k, "y");
    cli_text_add(&t, "$cm << EOD\n");
    for (int i = 0; i < k; i++) {
        int64_t row = 0;
        for (int j = 0; j < k; j++) row += cm[i * k + j];
        for (int j = 0; j < k; j++)
            cli_text_add(&t, "%d %d %.6f %lld\n", j, i, row ? (double)cm[i * k + j] / row : 0.0,
                   (long long)cm[i * k + j]);
    }
    cli_text_add(&t, "EOD\nplot $cm using 1:2:3 with image, $cm using 1:2:(sprintf('%%d', $4)):"
           "($3 > 0.5 ? 0xffffff : 0x000000) with labels tc rgb variable font 'sans,9'\n");
    if (!t.s) return cli_fail("eval", "out of host memory");
    char err[512];
    bool ok = cli_gnuplot(t.s, png, err, sizeof err);
    free(t.s);
    if (!ok) return cli_fail("eval", "%s", err);
    printf("confusion matrix: %s\n", png);
    return 0;
}
