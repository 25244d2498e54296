/* candidates.c: what the tuner may choose, from the table: each engine's candidates
 * (its configurations, where it has several), named "engine" or "engine config". */
#include <stdio.h>
#include <string.h>

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
    for (int i = 0; i < clg__gemm_engine_count(); i++) {
        const clg_gemm_engine *e = clg__gemm_engine_at(i);
        size_t len = strlen(e->name);
        if (!e->candidates || strncmp(name, e->name, len)) continue;
        clg_gemm_candidate c = {.engine = e};
        if (e->parse ? name[len] != ' ' || !e->parse(name + len + 1, &c.config) : name[len] != 0) continue;
        c.has_config = e->parse != NULL;
        snprintf(c.name, sizeof c.name, "%s", name);
        *out = c;
        return true;
    }
    return false;
}
