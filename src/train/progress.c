/* progress.c: a Keras/tqdm-style bar on a terminal, plain lines elsewhere (logs, CI),
 * as llm.c and Darknet print them. The meter is read at most ten times a second, so
 * showing progress costs the device almost nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clgrad/train.h"

struct clg_progress {
    FILE *out;
    bool tty;
    int64_t total, step, samples, every;
    char title[64], unit[16];   /* unit: what a sample is, in the rate ("img/s") */
    double t0, last_draw;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

clg_progress *clg_progress_new(FILE *out, int64_t total, const char *title, int64_t every)
{
    clg_progress *p = calloc(1, sizeof *p);
    if (!p || !out) {
        free(p);
        return NULL;
    }
    p->out = out;
    p->tty = isatty(fileno(out));
    p->total = total > 0 ? total : 0;
    p->every = every > 0 ? every : (p->total >= 10 ? p->total / 10 : 1);
    snprintf(p->title, sizeof p->title, "%s", title ? title : "");
    snprintf(p->unit, sizeof p->unit, "img");
    p->t0 = now();
    return p;
}

void clg_progress_set_unit(clg_progress *p, const char *unit)
{
    if (p && unit) snprintf(p->unit, sizeof p->unit, "%s", unit);
}

void clg_progress_free(clg_progress *p) { free(p); }

double clg_progress_elapsed(const clg_progress *p) { return p ? now() - p->t0 : 0; }

double clg_progress_rate(const clg_progress *p)
{
    double t = clg_progress_elapsed(p);
    return p && t > 0 ? (double)p->samples / t : 0;
}

static void clock_str(double s, char *buf, size_t n)
{
    long v = s > 0 && s < 1e7 ? (long)(s + 0.5) : 0;
    if (v >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", v / 3600, v / 60 % 60, v % 60);
    else snprintf(buf, n, "%02ld:%02ld", v / 60, v % 60);
}

static void draw(clg_progress *p, clg_meter *m, bool final)
{
    double loss = NAN, acc = NAN;
    if (m && clg_meter_samples(m)) clg_meter_read(m, &loss, &acc);
    double t = clg_progress_elapsed(p), rate = clg_progress_rate(p);
    double left = p->step > 0 && p->total > p->step ? t / (double)p->step * (double)(p->total - p->step) : 0;
    char el[48], rem[48];
    clock_str(t, el, sizeof el);
    clock_str(left, rem, sizeof rem);
    if (p->tty) {
        enum { WIDTH = 30 };
        int fill = p->total ? (int)(WIDTH * p->step / p->total) : WIDTH;
        char bar[WIDTH + 1];
        for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : '.';
        bar[WIDTH] = 0;
        fprintf(p->out, "\r%s [%s] %lld/%lld  loss %.4f  acc %6.2f%%  %7.0f %s/s  %s<%s\033[K", p->title, bar,
                (long long)p->step, (long long)p->total, loss, 100 * acc, rate, p->unit, el, rem);
        if (final) fputc('\n', p->out);
    } else {
        fprintf(p->out, "%s step %lld/%lld  loss %.4f  acc %.2f%%  %.0f %s/s  %.1fs\n", p->title,
                (long long)p->step, (long long)p->total, loss, 100 * acc, rate, p->unit, t);
    }
    fflush(p->out);
    p->last_draw = now();
}

void clg_progress_step(clg_progress *p, clg_meter *m, int64_t samples)
{
    if (!p) return;
    p->step++;
    p->samples += samples;
    bool due = p->tty ? now() - p->last_draw >= 0.1 : p->step % p->every == 0;
    if (due && p->step < p->total) draw(p, m, false);
}

void clg_progress_end(clg_progress *p, clg_meter *m)
{
    if (p) draw(p, m, true);
}
