/* slots.c: what each GEMM engine keeps per device (compiled configurations, validations,
 * whether an outside library ran there), and the configuration the tuner chose for it,
 * in one device slot (CLG_SLOT_GEMM_ENGINES). Keyed by the engine's row, so that an
 * engine needs no slot of its own, and this file needs no list of engines. */
#include <stdlib.h>
#include <string.h>

#include "gemm/engine.h"

#define MAX_ENGINES 16

typedef struct engine_slot {
    const clg_gemm_engine *engine;
    void *data;
    void (*release)(clg_device *dev, void *data);
    bool preferred;
    clg_gemm_config config;
} engine_slot;

typedef struct engine_slots { engine_slot at[MAX_ENGINES]; } engine_slots;

static void slots_free(clg_device *dev, void *p)
{
    engine_slots *s = p;
    for (int i = 0; s && i < MAX_ENGINES; i++) {
        if (s->at[i].release) s->at[i].release(dev, s->at[i].data);
        free(s->at[i].data);
    }
    free(s);
}

/* e's slot on dev, made on first use; NULL (error recorded) when out of memory. */
static engine_slot *slot(clg_device *dev, const clg_gemm_engine *e)
{
    clg_slot *ds = &dev->slots[CLG_SLOT_GEMM_ENGINES];
    if (!ds->data) {
        ds->data = calloc(1, sizeof(engine_slots));
        if (!ds->data) {
            clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg__gemm (%s): out of host memory", e->name);
            return NULL;
        }
        ds->free = slots_free;
    }
    engine_slots *s = ds->data;
    for (int i = 0; i < MAX_ENGINES; i++) {
        if (s->at[i].engine == e) return &s->at[i];
        if (!s->at[i].engine) {
            s->at[i].engine = e;
            return &s->at[i];
        }
    }
    clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm (%s): more than %d engines", e->name, MAX_ENGINES);
    return NULL;
}

void *clg__gemm_engine_data(clg_device *dev, const clg_gemm_engine *e, size_t size,
                            void (*release)(clg_device *dev, void *data))
{
    engine_slot *s = slot(dev, e);
    if (!s) return NULL;
    if (!s->data) {
        s->data = calloc(1, size);
        if (!s->data) {
            clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg__gemm (%s): out of host memory", e->name);
            return NULL;
        }
        s->release = release;
    }
    return s->data;
}

const clg_gemm_config *clg__gemm_preferred(clg_device *dev, const clg_gemm_engine *e)
{
    engine_slots *s = dev->slots[CLG_SLOT_GEMM_ENGINES].data;
    for (int i = 0; s && i < MAX_ENGINES && s->at[i].engine; i++)
        if (s->at[i].engine == e) return s->at[i].preferred ? &s->at[i].config : NULL;
    return NULL;
}

void clg__gemm_prefer(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_config *c)
{
    engine_slot *s = slot(dev, e);
    if (!s) return;
    s->preferred = c != NULL;
    if (c) s->config = *c;
}
