/* checkpoint_meta.c: the train state as __metadata__ strings, and back. Numbers are
 * written so that they read back exactly (%.17g for doubles) and read strictly: a
 * value that is not wholly a number of the right kind is an error naming the key. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_impl.h"

static char *fmt_i64(char *buf, int64_t v) { snprintf(buf, CLG_META_NUM, "%" PRId64, v); return buf; }
static char *fmt_u64(char *buf, uint64_t v) { snprintf(buf, CLG_META_NUM, "%" PRIu64, v); return buf; }
static char *fmt_f64(char *buf, double v) { snprintf(buf, CLG_META_NUM, "%.17g", v); return buf; }

int clg__train_meta(const clg_train_state *s, const char *optimizer, int64_t optimizer_steps, double lr,
                    uint64_t rng_seed, uint64_t rng_offset, const char *model_desc, clg__meta_text *t,
                    clg_safetensors_pair *out)
{
    int n = 0;
    snprintf(t->version, sizeof t->version, "%d", CLG_CHECKPOINT_VERSION);
    out[n++] = (clg_safetensors_pair){CLG_META_VERSION, t->version};
    out[n++] = (clg_safetensors_pair){"format", "pt"};
    out[n++] = (clg_safetensors_pair){"train.step", fmt_i64(t->step, s->step)};
    out[n++] = (clg_safetensors_pair){"train.epoch", fmt_i64(t->epoch, s->epoch)};
    out[n++] = (clg_safetensors_pair){"train.batch", fmt_i64(t->batch, s->batch)};
    out[n++] = (clg_safetensors_pair){"train.loader_seed", fmt_u64(t->loader_seed, s->loader_seed)};
    out[n++] = (clg_safetensors_pair){"train.base_lr", fmt_f64(t->base_lr, s->base_lr)};
    out[n++] = (clg_safetensors_pair){"train.lr_schedule", s->lr_schedule};
    out[n++] = (clg_safetensors_pair){"rng.seed", fmt_u64(t->rng_seed, rng_seed)};
    out[n++] = (clg_safetensors_pair){"rng.offset", fmt_u64(t->rng_offset, rng_offset)};
    out[n++] = (clg_safetensors_pair){"optim.name", optimizer};
    out[n++] = (clg_safetensors_pair){"optim.steps", fmt_i64(t->optimizer_steps, optimizer_steps)};
    out[n++] = (clg_safetensors_pair){"optim.lr", fmt_f64(t->lr, lr)};
    if (s->loss_scale > 0) {   /* mixed precision's loss scaler; absent before, and without one */
        out[n++] = (clg_safetensors_pair){"train.loss_scale", fmt_f64(t->loss_scale, s->loss_scale)};
        out[n++] = (clg_safetensors_pair){"train.loss_scale_growth", fmt_i64(t->loss_scale_growth, s->loss_scale_growth)};
    }
    if (s->world_size > 1)   /* data-parallel; absent before, and for one replica */
        out[n++] = (clg_safetensors_pair){"train.world_size", fmt_i64(t->world_size, s->world_size)};
    if (model_desc) out[n++] = (clg_safetensors_pair){"model", model_desc};
    return n;
}

/* ---- reading ------------------------------------------------------------------------------------ */

static const char *need(const clg_safetensors *st, const char *key, const clg__io_err *e)
{
    const char *v = clg_safetensors_meta(st, key);
    if (!v) clg__io_fail(e, CLG_ERR_FORMAT, "checkpoint metadata has no \"%s\"", key);
    return v;
}

static bool bad(const clg__io_err *e, const char *key, const char *v, const char *what)
{
    clg__io_fail(e, CLG_ERR_FORMAT, "checkpoint metadata \"%s\" is \"%.60s\", not %s", key, v, what);
    return false;
}

static bool get_i64(const clg_safetensors *st, const char *key, int64_t *out, const clg__io_err *e)
{
    const char *v = need(st, key, e);
    if (!v) return false;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*v && !*end && errno == ERANGE) return bad(e, key, v, "an integer of at most 2^53 (it overflows 64 bits)");
    if (!*v || *end || errno || x < 0) return bad(e, key, v, "an integer >= 0");
    *out = x;
    return true;
}

static bool get_u64(const clg_safetensors *st, const char *key, uint64_t *out, const clg__io_err *e)
{
    const char *v = need(st, key, e);
    if (!v) return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno) return bad(e, key, v, "an unsigned 64-bit integer");
    *out = x;
    return true;
}

static bool get_f64(const clg_safetensors *st, const char *key, double *out, const clg__io_err *e)
{
    const char *v = need(st, key, e);
    if (!v) return false;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno == ERANGE && x < 1) errno = 0;   /* underflow: a tiny number (1e-320), finite all the same */
    if (!*v || *end || errno || !(x >= 0) || x > 1e300) return bad(e, key, v, "a finite number >= 0");
    *out = x;
    return true;
}

static bool get_text(const clg_safetensors *st, const char *key, char *out, size_t len, const clg__io_err *e)
{
    const char *v = need(st, key, e);
    if (!v) return false;
    if (strlen(v) >= len) return bad(e, key, v, "short enough");
    memcpy(out, v, strlen(v) + 1);
    return true;
}

clg_status clg__train_state_read(const clg_safetensors *st, clg_train_state *s, const clg__io_err *e)
{
    memset(s, 0, sizeof *s);
    const char *v = clg_safetensors_meta(st, CLG_META_VERSION);
    if (!v)
        return clg__io_fail(e, CLG_ERR_FORMAT, "not a clgrad training checkpoint (no \"%s\" in __metadata__; "
                            "weights alone load with clg_module_load)", CLG_META_VERSION);
    int64_t version;
    if (!get_i64(st, CLG_META_VERSION, &version, e)) return CLG_ERR_FORMAT;
    if (version < 1 || version > CLG_CHECKPOINT_VERSION)
        return clg__io_fail(e, CLG_ERR_FORMAT, "checkpoint format version %lld; this clgrad reads 1 to %d",
                            (long long)version, CLG_CHECKPOINT_VERSION);
    s->version = (int)version;
    bool ok = get_i64(st, "train.step", &s->step, e) && get_i64(st, "train.epoch", &s->epoch, e) &&
              get_i64(st, "train.batch", &s->batch, e) && get_u64(st, "train.loader_seed", &s->loader_seed, e) &&
              get_f64(st, "train.base_lr", &s->base_lr, e) &&
              get_text(st, "train.lr_schedule", s->lr_schedule, sizeof s->lr_schedule, e) &&
              get_u64(st, "rng.seed", &s->rng_seed, e) && get_u64(st, "rng.offset", &s->rng_offset, e) &&
              get_text(st, "optim.name", s->optimizer, sizeof s->optimizer, e) &&
              get_i64(st, "optim.steps", &s->optimizer_steps, e) && get_f64(st, "optim.lr", &s->lr, e);
    if (ok && clg_safetensors_meta(st, "train.loss_scale"))
        ok = get_f64(st, "train.loss_scale", &s->loss_scale, e) &&
             get_i64(st, "train.loss_scale_growth", &s->loss_scale_growth, e);
    if (ok && clg_safetensors_meta(st, "train.world_size")) ok = get_i64(st, "train.world_size", &s->world_size, e);
    if (!ok) return CLG_ERR_FORMAT;
    const struct { const char *key; int64_t v; } counters[] = {
        {"train.step", s->step}, {"train.epoch", s->epoch}, {"train.batch", s->batch},
        {"optim.steps", s->optimizer_steps},
    };
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        if (counters[i].v < 0 || counters[i].v > CLG_COUNTER_MAX)
            return clg__io_fail(e, CLG_ERR_FORMAT, "checkpoint metadata \"%s\" = %lld: a counter must lie in [0, 2^53]",
                                counters[i].key, (long long)counters[i].v);
    if (s->lr_schedule[0]) {
        clg_lr_schedule sched;
        char why[256];
        if (!clg_lr_schedule_parse(s->lr_schedule, &sched, why, sizeof why))
            return clg__io_fail(e, CLG_ERR_FORMAT, "checkpoint metadata \"train.lr_schedule\": %s", why);
    }
    return CLG_OK;
}
