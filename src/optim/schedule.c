/* schedule.c: learning-rate schedules as pure functions of the step (or epoch) t, the
 * closed forms of PyTorch's StepLR, MultiStepLR, ExponentialLR and CosineAnnealingLR
 * (the cosine held at eta_min past t_max), times a LinearLR-style warm-up factor over
 * the first steps; and the parser of their one-line spellings (command lines, configs). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim_impl.h"

#define PI 3.14159265358979323846

/* The schedule without warm-up; NaN for a schedule no parser would accept. */
static double base_value(const clg_lr_schedule *s, double lr, int64_t t)
{
    switch (s->kind) {
    case CLG_LR_CONSTANT: return lr;
    case CLG_LR_STEP: return s->step_size > 0 ? lr * pow(s->gamma, (double)(t / s->step_size)) : NAN;
    case CLG_LR_MULTISTEP: {
        int passed = 0, n = s->nmilestones < 0 ? 0 : s->nmilestones > 16 ? 16 : s->nmilestones;
        for (int i = 0; i < n; i++) passed += s->milestones[i] <= t;
        return lr * pow(s->gamma, passed);
    }
    case CLG_LR_EXPONENTIAL: return lr * pow(s->gamma, (double)t);
    case CLG_LR_COSINE: {
        if (s->t_max <= 0) return NAN;
        double tc = (double)(t < s->t_max ? t : s->t_max);
        return s->eta_min + (lr - s->eta_min) * (1 + cos(PI * tc / (double)s->t_max)) / 2;
    }
    }
    return NAN;
}

double clg_lr_schedule_at(const clg_lr_schedule *s, double base_lr, int64_t t)
{
    if (!s) return base_lr;
    if (t < 0) t = 0;   /* before the first step, the first step's rate */
    double v = base_value(s, base_lr, t);
    if (s->warmup > 0 && t < s->warmup)
        v *= s->warmup_start + (1 - s->warmup_start) * (double)t / (double)s->warmup;
    return v;
}

/* ---- the parser ------------------------------------------------------------------------------- */

static bool fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* Fields are split on ':' into at most 4 pieces of at most 63 characters. */
typedef struct fields { int n; char f[4][64]; } fields;

static bool split(const char *text, size_t len, char sep, fields *out)
{
    out->n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != sep) continue;
        if (out->n == 4 || i - start >= sizeof out->f[0]) return false;
        memcpy(out->f[out->n], text + start, i - start);
        out->f[out->n++][i - start] = '\0';
        start = i + 1;
    }
    return true;
}

/* Whole-string numbers: no spaces, no trailing text, finite. */
static bool to_double(const char *s, double *v)
{
    if (!*s || strchr(" \t\n", *s)) return false;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return !*end && errno == 0 && isfinite(*v);
}

static bool to_int(const char *s, int64_t *v)
{
    if (*s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    *v = x;
    return !*end && errno == 0;
}

/* "30,60,90": strictly increasing, at most 16. */
static bool parse_milestones(const char *text, clg_lr_schedule *s, char *err, size_t errlen)
{
    const char *p = text;
    s->nmilestones = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        char num[32];
        int64_t m;
        if (len == 0 || len >= sizeof num) return fail(err, errlen, "bad milestone list \"%s\"", text);
        memcpy(num, p, len);
        num[len] = '\0';
        if (!to_int(num, &m)) return fail(err, errlen, "milestone \"%s\" is not a step number", num);
        if (s->nmilestones == 16) return fail(err, errlen, "more than 16 milestones");
        if (s->nmilestones && m <= s->milestones[s->nmilestones - 1])
            return fail(err, errlen, "milestones must increase (%lld after %lld)", (long long)m,
                        (long long)s->milestones[s->nmilestones - 1]);
        s->milestones[s->nmilestones++] = m;
        if (!p[len]) return true;
        p += len + 1;
    }
}

static bool gamma_ok(const char *text, double *g, char *err, size_t errlen)
{
    if (to_double(text, g) && *g > 0) return true;
    return fail(err, errlen, "gamma \"%s\" is not a number > 0", text);
}

static bool positive_int(const char *text, const char *what, int64_t *v, char *err, size_t errlen)
{
    if (to_int(text, v) && *v > 0) return true;
    return fail(err, errlen, "%s \"%s\" is not an integer > 0", what, text);
}

/* The schedule part: "step:30:0.1", "multistep:0.1:30,60,90", "exp:0.95", "cosine:100[:eta_min]",
 * "constant". Milestones contain commas, so the caller has cut ",warmup:..." off already. */
static bool parse_kind(const char *text, size_t len, clg_lr_schedule *s, char *err, size_t errlen)
{
    fields f;
    if (!split(text, len, ':', &f)) return fail(err, errlen, "\"%.*s\": too many or too long fields", (int)len, text);
    const char *k = f.f[0];
    int n = f.n;
    if (!strcmp(k, "constant") && n == 1) s->kind = CLG_LR_CONSTANT;
    else if (!strcmp(k, "step") && n == 3) {
        s->kind = CLG_LR_STEP;
        return positive_int(f.f[1], "step size", &s->step_size, err, errlen) && gamma_ok(f.f[2], &s->gamma, err, errlen);
    } else if (!strcmp(k, "multistep") && n == 3) {
        s->kind = CLG_LR_MULTISTEP;
        return gamma_ok(f.f[1], &s->gamma, err, errlen) && parse_milestones(f.f[2], s, err, errlen);
    } else if ((!strcmp(k, "exp") || !strcmp(k, "exponential")) && n == 2) {
        s->kind = CLG_LR_EXPONENTIAL;
        return gamma_ok(f.f[1], &s->gamma, err, errlen);
    } else if (!strcmp(k, "cosine") && (n == 2 || n == 3)) {
        s->kind = CLG_LR_COSINE;
        if (!positive_int(f.f[1], "t_max", &s->t_max, err, errlen)) return false;
        if (n == 3 && !(to_double(f.f[2], &s->eta_min) && s->eta_min >= 0))
            return fail(err, errlen, "eta_min \"%s\" is not a number >= 0", f.f[2]);
    } else
        return fail(err, errlen, "\"%.*s\" is not constant, step:SIZE:GAMMA, multistep:GAMMA:M1,M2,..., "
                    "exp:GAMMA or cosine:T_MAX[:ETA_MIN]", (int)len, text);
    return true;
}

/* "warmup:STEPS[:START]", START in [0, 1] (default 0: from a rate of 0). */
static bool parse_warmup(const char *text, clg_lr_schedule *s, char *err, size_t errlen)
{
    fields f;
    if (!split(text, strlen(text), ':', &f) || strcmp(f.f[0], "warmup") || f.n < 2 || f.n > 3)
        return fail(err, errlen, "\"%s\" is not warmup:STEPS[:START]", text);
    if (!positive_int(f.f[1], "warm-up steps", &s->warmup, err, errlen)) return false;
    if (f.n == 3 && !(to_double(f.f[2], &s->warmup_start) && s->warmup_start >= 0 && s->warmup_start <= 1))
        return fail(err, errlen, "warm-up start \"%s\" is not a number in [0, 1]", f.f[2]);
    return true;
}

bool clg_lr_schedule_parse(const char *text, clg_lr_schedule *out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!text || !out) return fail(err, errlen, "no schedule text");
    clg_lr_schedule s = {0};
    s.gamma = 1;
    const char *warm = strstr(text, ",warmup:");
    size_t len = warm ? (size_t)(warm - text) : strlen(text);
    if (!parse_kind(text, len, &s, err, errlen)) return false;
    if (warm && !parse_warmup(warm + 1, &s, err, errlen)) return false;
    *out = s;
    return true;
}
