/* choice.c: which GEMM engine runs on a device, kept per device in CLG_SLOT_GEMM.
 *
 * The parameter table's `gemm` names an engine of the table ("packed", "tiled",
 * "clblast", "host"), or says "tune": on first use, the tuner (tune.c) reads the choice
 * from its cache or times the candidates. A configuration it chose (the tiled kernels')
 * is handed to the engine as its preference (slots.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/tune.h"

typedef enum choice_origin { ORIGIN_NONE, ORIGIN_TABLE, ORIGIN_TUNED, ORIGIN_CACHED } choice_origin;

/* A shape class's choice (tune.h): the engine and configuration its products run on. */
typedef struct class_choice {
    char key[24];
    clg_gemm_candidate cand;
    double gflops;
    bool cached;
} class_choice;

/* Classes kept per device; past them, products run on the device's choice. A model
 * calls a handful (the MLP 5, the GPT ~10). */
#define CLASS_MAX 64

typedef struct gemm_state {
    choice_origin origin;          /* ORIGIN_NONE until the engine is chosen */
    int flags;                     /* the tuning's (CLG_GEMM_TUNE_QUICK), for its classes' */
    int nclass;
    class_choice classes[CLASS_MAX];
    const clg_gemm_engine *engine;
    bool has_config;               /* `config` came from the tuner or the cache */
    clg_gemm_config config;
    double gflops;                 /* the choice's measured float32 rate, 0 if not measured */
    char choice[96];
} gemm_state;

static void state_free(clg_device *dev, void *data)
{
    (void)dev;
    free(data);
}

static gemm_state *state(clg_device *dev)
{
    clg_slot *slot = &dev->slots[CLG_SLOT_GEMM];
    if (!slot->data) {
        slot->data = calloc(1, sizeof(gemm_state));
        if (!slot->data) {
            clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg__gemm: out of host memory");
            return NULL;
        }
        slot->free = state_free;
    }
    return slot->data;
}

/* The last engine of the table that offers tuning candidates (on some devices): the
 * packed kernels, which every device runs (the fallback when nothing else is known to
 * work). */
static const clg_gemm_engine *fallback(void)
{
    const clg_gemm_engine *last = NULL;
    for (int i = 0; i < clg__gemm_engine_count(); i++)
        if (clg__gemm_engine_at(i)->candidates) last = clg__gemm_engine_at(i);
    return last;
}

/* s takes candidate c (its engine, and its configuration as the engine's preference). */
static void adopt(clg_device *dev, gemm_state *s, const clg_gemm_candidate *c, double gflops, choice_origin origin)
{
    if (s->engine && s->has_config) clg__gemm_prefer(dev, s->engine, NULL);
    s->engine = c->engine ? c->engine : fallback();
    s->has_config = c->engine && c->has_config;
    if (s->has_config) {
        s->config = c->config;
        clg__gemm_prefer(dev, s->engine, &s->config);
    }
    s->gflops = gflops;
    s->origin = origin;
    s->nclass = 0;   /* chosen against the old choice */
    snprintf(s->choice, sizeof s->choice, "%s", c->engine ? c->name : s->engine->name);
}

clg_status clg__gemm_tune(clg_device *dev, int flags)
{
    if (!clg__device_is_open(dev)) return CLG_ERR_INVALID_ARGUMENT;
    gemm_state *s = state(dev);
    if (!s) return dev->status;
    clg_gemm_candidate c;
    double rate = 0;
    bool cached = false;
    clg__gemm_pick(dev, flags, &c, &rate, &cached);
    adopt(dev, s, &c, rate, cached ? ORIGIN_CACHED : ORIGIN_TUNED);
    s->flags = flags & CLG_GEMM_TUNE_QUICK;
    return CLG_OK;
}

static clg_status tune_now(void *dev) { return clg__gemm_tune(dev, 0); }

static gemm_state *chosen(clg_device *dev)
{
    gemm_state *s = state(dev);
    if (!s || s->origin != ORIGIN_NONE) return s;
    const char *want = clg__device_params(dev)->gemm;
    clg_gemm_candidate one[2] = {{0}};
    if (!strcmp(want, "tune") && clg__gemm_candidates(dev, 0, false, one, 2) <= 1) {
        /* nothing to choose from: one candidate (packed alone, where the host's BLAS is
         * missing), or none (gemm_tiles off where the packed kernels are no candidate:
         * one[0] empty, the fallback) */
        adopt(dev, s, &one[0], 0, ORIGIN_TABLE);
        return s;
    }
    if (!strcmp(want, "tune")) {
        /* The first product may come inside a capture: the tuner's trial runs (and its
         * reads of their results) are not part of the step. */
        (void)clg__uncaptured(dev, tune_now, dev);
        return s;
    }
    /* Named by the table (params.c accepts only the table's names). One that cannot run
     * here (the host's BLAS where no library is found) sends its products where it sends
     * those it does not take. */
    const clg_gemm_engine *e = clg__gemm_engine_find(want);
    if (e && e->ready && !e->ready(dev, CLG_GEMM_F32) && e->instead) e = clg__gemm_engine_find(e->instead);
    clg_gemm_candidate named = {.engine = e ? e : fallback()};
    snprintf(named.name, sizeof named.name, "%s", named.engine->name);
    adopt(dev, s, &named, 0, ORIGIN_TABLE);
    return s;
}

const clg_gemm_engine *clg__gemm_engine_for(clg_device *dev)
{
    gemm_state *s = dev ? chosen(dev) : NULL;
    return s ? s->engine : fallback();
}

/* ---- shape classes --------------------------------------------------------------------- */

typedef struct class_job {
    clg_device *dev;
    gemm_state *s;
    const clg_gemm_args *g;
    class_choice *slot;
} class_job;

static clg_status tune_class(void *data)
{
    class_job *j = data;
    gemm_state *s = j->s;
    clg_gemm_candidate first = {.engine = s->engine, .has_config = s->has_config, .config = s->config};
    snprintf(first.name, sizeof first.name, "%.95s", s->choice);
    clg__gemm_pick_class(j->dev, s->flags, j->g, &first, &j->slot->cand, &j->slot->gflops, &j->slot->cached);
    return CLG_OK;
}

/* The class of g: found, or tuned (outside any capture, as the device's choice) and
 * kept; NULL where classes do not apply (a choice not tuned, 16-bit or float64
 * products) or the table is full. */
static const class_choice *class_of(clg_device *dev, const clg_gemm_args *g)
{
    gemm_state *s = chosen(dev);
    if (!s || (s->origin != ORIGIN_TUNED && s->origin != ORIGIN_CACHED) || g->type != CLG_GEMM_F32) return NULL;
    char key[24];
    clg__gemm_class_key(g, key, sizeof key);
    for (int i = 0; i < s->nclass; i++)
        if (!strcmp(s->classes[i].key, key)) return &s->classes[i];
    if (s->nclass == CLASS_MAX) return NULL;
    class_choice *c = &s->classes[s->nclass];
    *c = (class_choice){0};
    snprintf(c->key, sizeof c->key, "%s", key);
    class_job j = {dev, s, g, c};
    (void)clg__uncaptured(dev, tune_class, &j);   /* never leaves it without an engine: the device's at worst */
    return &s->classes[s->nclass++];
}

const clg_gemm_engine *clg__gemm_engine_for_args(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config **cfg,
                                                 int *split)
{
    *cfg = NULL;
    *split = 0;
    const class_choice *c = dev ? class_of(dev, g) : NULL;
    if (!c) return clg__gemm_engine_for(dev);
    if (c->cand.has_config) *cfg = &c->cand.config;
    *split = c->cand.split;
    return c->cand.engine;
}

const char *clg__gemm_class_choice(clg_device *dev, const clg_gemm_args *g, double *gflops, bool *cached)
{
    const class_choice *c = dev ? class_of(dev, g) : NULL;
    if (gflops) *gflops = c ? c->gflops : 0;
    if (cached) *cached = c && c->cached;
    return c ? c->cand.name : clg__gemm_choice(dev, NULL);
}

const char *clg__gemm_choice(clg_device *dev, double *gflops)
{
    gemm_state *s = dev ? chosen(dev) : NULL;
    if (gflops) *gflops = s ? s->gflops : 0;
    if (!s) return "unknown";
    if (s->engine->config_for && !s->has_config) {
        /* Configured, not tuned: name the configuration float32 runs with. */
        clg_gemm_config c;
        char cfg[64] = "(none fits)";
        if (s->engine->config_for(dev, CLG_GEMM_F32, &c)) s->engine->describe(&c, cfg, sizeof cfg);
        snprintf(s->choice, sizeof s->choice, "%s %s", s->engine->name, cfg);
    }
    return s->choice;
}

int clg__gemm_choice_origin(clg_device *dev)
{
    gemm_state *s = dev ? dev->slots[CLG_SLOT_GEMM].data : NULL;
    return s ? (int)s->origin : 0;
}
