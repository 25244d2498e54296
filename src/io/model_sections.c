/* model_sections.c: the loss, optimizer, train and data sections of a model file,
 * and their defaults. The optimizer's defaults depend on its type (PyTorch's), so
 * the type is read first. */
#include <stdio.h>
#include <string.h>

#include "last_error.h"
#include "model_impl.h"

#define SCHEDULES "constant, step:SIZE:GAMMA, multistep:GAMMA:M1,M2,..., exp:GAMMA, cosine:T_MAX[:ETA_MIN], " \
                  "each optionally followed by ,warmup:EPOCHS[:START]"

void model_defaults(clg_model *m)
{
    m->loss = (clg_model_lossfn){"cross_entropy", 0, 1};
    m->optim = (clg_model_optim){.type = "sgd", .lr = 0.01, .schedule = "constant"};
    m->train = (clg_model_train){.batch = 64, .epochs = 1, .seed = 1, .workers = 1};
    m->data = (clg_model_data){.scale = 1};
}

/* A section given as a bare type string ("mse") or an object, with "type" or not. */
static bool section_type(model_ctx *c, json_t *v, const char *allowed, char *type, size_t cap)
{
    json_t *t = json_is_string(v) ? v : json_object_get(v, "type");
    char got[64];
    if (!json_is_object(v) && !json_is_string(v))
        return model_fail(c, false, "must be a type name or an object with \"type\" (one of: %s), got %s", allowed,
                          model_show(v, got, sizeof got));
    if (json_is_object(v) && !t) return true;   /* no type: the default one (cross_entropy, sgd) */
    if (json_is_object(v)) model_push_key(c, "type");
    bool ok = json_is_string(t) && json_string_length(t) < cap && strlen(json_string_value(t)) == json_string_length(t);
    const char *s = ok ? json_string_value(t) : "";
    size_t n = strlen(s);
    for (const char *p = allowed; ok; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 2 : 0)) {
        if (!*p) ok = false;
        else if (strcspn(p, ",") == n && !strncmp(p, s, n)) break;
    }
    if (!ok) model_fail(c, false, "must be one of: %s; got %s", allowed, model_show(t, got, sizeof got));
    else memcpy(type, s, n + 1);
    if (json_is_object(v)) model_pop(c);
    return ok;
}

static bool parse_loss(model_ctx *c, json_t *v, clg_model_lossfn *l)
{
    if (!section_type(c, v, "cross_entropy, mse, l1, smooth_l1", l->type, sizeof l->type)) return false;
    if (!json_is_object(v)) return true;
    if (!strcmp(l->type, "cross_entropy"))
        return model_check_keys(c, v, "type, label_smoothing") &&
               model_get_real(c, v, "label_smoothing", 0, 0.99, &l->label_smoothing);
    if (!strcmp(l->type, "smooth_l1"))
        return model_check_keys(c, v, "type, beta") && model_get_real(c, v, "beta", 1e-6, 1e6, &l->beta);
    return model_check_keys(c, v, "type");
}

static void optim_defaults(clg_model_optim *o)
{
    bool adam = !strcmp(o->type, "adam") || !strcmp(o->type, "adamw");
    o->lr = adam ? 1e-3 : !strcmp(o->type, "sgd") ? 0.01 : 1e-2;
    o->beta1 = 0.9, o->beta2 = 0.999, o->alpha = 0.99;
    o->eps = !strcmp(o->type, "adagrad") ? 1e-10 : 1e-8;
    o->weight_decay = !strcmp(o->type, "adamw") ? 1e-2 : 0;
}

static bool optim_values(model_ctx *c, json_t *v, clg_model_optim *o)
{
    const char *t = o->type;
    bool sgd = !strcmp(t, "sgd"), adam = !strcmp(t, "adam") || !strcmp(t, "adamw"), rms = !strcmp(t, "rmsprop");
    const char *keys = sgd ? "type, lr, momentum, dampening, weight_decay, nesterov, schedule, schedule_unit, "
                             "clip_grad_norm"
                       : adam ? "type, lr, beta1, beta2, eps, weight_decay, schedule, schedule_unit, clip_grad_norm"
                       : rms ? "type, lr, alpha, eps, weight_decay, momentum, centered, schedule, schedule_unit, "
                               "clip_grad_norm"
                             : "type, lr, lr_decay, weight_decay, initial_accumulator_value, eps, schedule, "
                               "schedule_unit, clip_grad_norm";
    bool ok = model_check_keys(c, v, keys) && model_get_real(c, v, "lr", 1e-12, 100, &o->lr) &&
              model_get_real(c, v, "weight_decay", 0, 10, &o->weight_decay) &&
              model_get_real(c, v, "eps", 1e-30, 1, &o->eps) && model_get_real(c, v, "momentum", 0, 0.999999, &o->momentum) &&
              model_get_real(c, v, "dampening", 0, 1, &o->dampening) && model_get_bool(c, v, "nesterov", &o->nesterov) &&
              model_get_real(c, v, "beta1", 0, 0.999999, &o->beta1) && model_get_real(c, v, "beta2", 0, 0.999999, &o->beta2) &&
              model_get_real(c, v, "alpha", 0, 1, &o->alpha) && model_get_bool(c, v, "centered", &o->centered) &&
              model_get_real(c, v, "lr_decay", 0, 10, &o->lr_decay) &&
              model_get_real(c, v, "initial_accumulator_value", 0, 1e6, &o->initial_accumulator_value) &&
              model_get_string(c, v, "schedule", o->schedule, sizeof o->schedule) &&
              model_get_real(c, v, "clip_grad_norm", 0, 1e6, &o->clip_grad_norm);
    char unit[16] = "epoch";
    ok = ok && model_get_string(c, v, "schedule_unit", unit, sizeof unit);
    if (ok && strcmp(unit, "epoch") && strcmp(unit, "step")) {
        model_push_key(c, "schedule_unit");
        ok = model_fail(c, false, "\"%s\": the schedule counts \"epoch\"s or \"step\"s", unit);
        model_pop(c);
    }
    o->schedule_steps = ok && !strcmp(unit, "step");
    if (ok && o->nesterov && (o->momentum <= 0 || o->dampening != 0)) {
        model_push_key(c, "nesterov");
        ok = model_fail(c, false, "nesterov needs momentum > 0 and dampening 0");
        model_pop(c);
    }
    return ok;
}

static bool parse_optim(model_ctx *c, json_t *v, clg_model_optim *o)
{
    if (!section_type(c, v, "sgd, adam, adamw, rmsprop, adagrad", o->type, sizeof o->type)) return false;
    optim_defaults(o);
    if (json_is_object(v) && !optim_values(c, v, o)) return false;
    clg_lr_schedule s;
    char why[192];
    if (clg_lr_schedule_parse(o->schedule, &s, why, sizeof why)) return true;
    model_push_key(c, "schedule");
    model_fail(c, false, "%s (allowed: %s)", why, SCHEDULES);
    model_pop(c);
    return false;
}

bool clg_precision_parse(const char *s, clg_dtype *precision)
{
    static const struct { const char *name; clg_dtype d; } names[] = {
        {"float32", CLG_F32}, {"mixed", CLG_F16}, {"mixed-bf16", CLG_BF16}};
    for (size_t i = 0; s && i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i].name)) {
            *precision = names[i].d;
            return true;
        }
    return false;
}

const char *clg_precision_name(clg_dtype precision)
{
    return precision == CLG_F16 ? "mixed" : precision == CLG_BF16 ? "mixed-bf16" : "float32";
}

static bool parse_train(model_ctx *c, json_t *v, clg_model_train *t)
{
    int64_t epochs = t->epochs, workers = t->workers, seed = (int64_t)t->seed;
    char got[64], precision[32] = "";
    if (!json_is_object(v)) return model_fail(c, false, "must be an object, got %s", model_show(v, got, sizeof got));
    bool ok = model_check_keys(c, v, "batch, epochs, seed, workers, precision") &&
              model_get_int(c, v, "batch", 1, 1 << 20, &t->batch) && model_get_int(c, v, "epochs", 1, 1000000, &epochs) &&
              model_get_int(c, v, "seed", 0, INT64_MAX, &seed) && model_get_int(c, v, "workers", 1, 64, &workers) &&
              model_get_string(c, v, "precision", precision, sizeof precision);
    t->epochs = (int)epochs, t->workers = (int)workers, t->seed = (uint64_t)seed;
    if (ok && precision[0] && !clg_precision_parse(precision, &t->precision)) {
        model_push_key(c, "precision");
        ok = model_fail(c, false, "\"%s\" (allowed: float32, mixed, mixed-bf16)", precision);
        model_pop(c);
    }
    return ok;
}

static bool parse_sections_of(model_ctx *c, json_t *root, const char *key, bool (*fn)(model_ctx *, json_t *, void *),
                              void *dst)
{
    json_t *v = json_object_get(root, key);
    if (!v) return true;
    model_push_key(c, key);
    bool ok = fn(c, v, dst);
    model_pop(c);
    return ok;
}

bool model_parse_data(model_ctx *c, json_t *v, clg_model *m);

static bool loss_fn(model_ctx *c, json_t *v, void *d) { return parse_loss(c, v, d); }
static bool optim_fn(model_ctx *c, json_t *v, void *d) { return parse_optim(c, v, d); }
static bool train_fn(model_ctx *c, json_t *v, void *d) { return parse_train(c, v, d); }
static bool data_fn(model_ctx *c, json_t *v, void *d) { return model_parse_data(c, v, d); }

bool model_parse_sections(model_ctx *c, json_t *root, clg_model *m)
{
    return parse_sections_of(c, root, "loss", loss_fn, &m->loss) &&
           parse_sections_of(c, root, "optimizer", optim_fn, &m->optim) &&
           parse_sections_of(c, root, "train", train_fn, &m->train) && parse_sections_of(c, root, "data", data_fn, m);
}

bool model_check_train(char *err, size_t errlen, const clg_model_train *t)
{
    const char *bad = t->batch < 1 || t->batch > (1 << 20) ? "batch must be in [1, 1048576]"
                      : t->epochs < 1 || t->epochs > 1000000 ? "epochs must be in [1, 1000000]"
                      : t->workers < 1 || t->workers > 64   ? "workers must be in [1, 64]"
                      : t->seed > INT64_MAX                ? "seed must be in [0, 2^63)"
                      : t->precision != CLG_F32 && t->precision != CLG_F16 && t->precision != CLG_BF16
                          ? "precision must be float32, mixed (float16) or mixed-bf16"
                                                           : NULL;
    if (bad) clg__report(err, errlen, CLG_ERR_INVALID_ARGUMENT, "%s", bad);
    return !bad;
}
