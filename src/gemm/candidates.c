/* candidates.c: what the tuner may choose, from the table: each engine's candidates
 * (its configurations, where it has several), named "engine" or "engine config". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/dispatch.h"
#include "gemm/tune.h"

int clg__gemm_candidates(clg_device *dev, int flags, bool fitting, clg_gemm_candidate *out, int cap)
{
    int n = 0;
    for (int i = 0; i < clg__gemm_engine_count() && n < cap; i++) {
        const clg_gemm_engine *e = clg__gemm_engine_at(i);
        if (!e->candidates) continue;
        clg_gemm_config cfg[16];
        int got = e->candidates(dev, flags, fitting, cfg, cap - n < 16 ? cap - n : 16);
        for (int j = 0; j < got; j++, n++) {
            out[n] = (clg_gemm_candidate){.engine = e, .has_config = e->describe != NULL, .config = cfg[j]};
            char text[64] = "";
            if (e->describe) e->describe(&cfg[j], text, sizeof text);
            snprintf(out[n].name, sizeof out[n].name, "%s%s%s", e->name, text[0] ? " " : "", text);
        }
    }
    return n;
}

bool clg__gemm_candidate_parse(const char *name, clg_gemm_candidate *out)
{
    /* "<engine>[ <config>][ split <N>]" */
    char base[96];
    int split = 0;
    const char *sp = strstr(name, " split ");
    size_t blen = sp ? (size_t)(sp - name) : strlen(name);
    if (blen >= sizeof base) return false;
    if (sp) {
        char *end;
        long v = strtol(sp + 7, &end, 10);
        if (*end || end == sp + 7 || v < 2 || v > CLG_GEMM_SPLIT_MAX) return false;
        split = (int)v;
    }
    memcpy(base, name, blen);
    base[blen] = 0;
    for (int i = 0; i < clg__gemm_engine_count(); i++) {
        const clg_gemm_engine *e = clg__gemm_engine_at(i);
        size_t len = strlen(e->name);
        if (!e->candidates || strncmp(base, e->name, len)) continue;
        clg_gemm_candidate c = {.engine = e, .split = split};
        if (e->parse ? base[len] != ' ' || !e->parse(base + len + 1, &c.config) : base[len] != 0) continue;
        c.has_config = e->parse != NULL;
        snprintf(c.name, sizeof c.name, "%s", name);
        *out = c;
        return true;
    }
    return false;
}

bool clg__gemm_candidate_split(const clg_gemm_candidate *c, int parts, clg_gemm_candidate *out)
{
    const char *sp = strstr(c->name, " split ");
    int blen = sp ? (int)(sp - c->name) : (int)strlen(c->name);
    if (!c->engine || parts < 2 || parts > CLG_GEMM_SPLIT_MAX || blen + 12 >= (int)sizeof out->name) return false;
    *out = *c;
    out->split = parts;
    snprintf(out->name, sizeof out->name, "%.*s split %d", blen, c->name, parts);
    return true;
}
