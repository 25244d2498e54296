/* checkpoint.c: training checkpoints: the model's tensors, the optimizer's state
 * tensors named after the parameters they belong to ("optim.state.0.weight.exp_avg"),
 * each parameter's step count (PyTorch keeps one per parameter; Adam's bias correction
 * and SGD's first-step rule depend on it), the train state and the RNG in metadata.
 * Loading checks all of it against the live model and optimizer before changing either. */
#include <stdlib.h>
#include <string.h>

#include "checkpoint_impl.h"
#include "nn_impl.h"
#include "optim/optim_impl.h"

#define STEP_NAME "step"

static clg_status oom(const clg__io_err *e) { return clg__io_fail(e, CLG_ERR_OUT_OF_MEMORY, "out of host memory"); }

/* The model's state, malloc'd (*n entries); NULL when out of memory. */
static clg_named_tensor *model_state(const clg_module *m, int *n)
{
    *n = clg_module_state(m, NULL, 0);
    clg_named_tensor *s = malloc((size_t)(*n ? *n : 1) * sizeof *s);
    if (s) clg_module_state(m, s, *n);
    return s;
}

/* The state_dict name of each optimizer parameter (pointing into state); fails naming
 * the first parameter that is not one of the model's. */
static clg_status param_names(const clg_optimizer *opt, const clg_named_tensor *state, int n, const char **names,
                              const clg__io_err *e)
{
    for (int i = 0; i < opt->n; i++) {
        names[i] = NULL;
        for (int j = 0; j < n && !names[i]; j++)
            if (state[j].tensor == opt->params[i].p) names[i] = state[j].name;
        if (!names[i])
            return clg__io_fail(e, CLG_ERR_INVALID_ARGUMENT, "optimizer parameter %d %s is not a tensor of the model",
                                i, CLG_DESC(opt->params[i].p));
    }
    return CLG_OK;
}

/* ---- saving ------------------------------------------------------------------------------------------ */

clg_status clg_checkpoint_save(const clg_module *m, clg_optimizer *opt, const clg_train_state *state,
                               const char *model_desc, const char *path)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    clg__io_err e = {m->dev, NULL, 0, path ? path : "(null)"};
    const clg_train_state zero = {0};
    if (!state) state = &zero;
    if (opt && opt->dev != m->dev)
        return clg__io_fail(&e, CLG_ERR_INVALID_ARGUMENT, "the optimizer is on another device than the model");
    if (!memchr(state->lr_schedule, '\0', sizeof state->lr_schedule))
        return clg__io_fail(&e, CLG_ERR_INVALID_ARGUMENT, "train state's lr_schedule is not NUL-terminated");
    clg_lr_schedule sched;
    char why[256];
    if (state->lr_schedule[0] && !clg_lr_schedule_parse(state->lr_schedule, &sched, why, sizeof why))
        return clg__io_fail(&e, CLG_ERR_INVALID_ARGUMENT, "train state's lr_schedule: %s", why);

    int n, nopt = opt ? opt->n : 0;
    clg_named_tensor *ms = model_state(m, &n);
    const char **pnames = malloc((size_t)(nopt ? nopt : 1) * sizeof *pnames);
    int64_t *steps = malloc((size_t)(nopt ? nopt : 1) * sizeof *steps);
    int cap = n + nopt * (CLG_OPTIM_MAX_STATE + 1);
    clg__st_item *items = malloc((size_t)(cap ? cap : 1) * sizeof *items);
    char **inames = calloc((size_t)(cap ? cap : 1), sizeof *inames);   /* names made here */
    clg_status st = ms && pnames && steps && items && inames ? CLG_OK : oom(&e);
    if (!st && opt) st = param_names(opt, ms, n, pnames, &e);
    int k = 0;
    for (int i = 0; !st && i < n; i++) items[k++] = clg__st_item_tensor(ms[i].name, ms[i].tensor);
    for (int i = 0; !st && i < nopt; i++) {
        const clg_optim_param *pp = &opt->params[i];
        for (int s = 0; !st && s <= CLG_OPTIM_MAX_STATE; s++) {
            bool is_step = s == CLG_OPTIM_MAX_STATE;
            if (!is_step && !pp->state[s]) continue;   /* not made yet: fresh on load */
            const char *sname = is_step ? STEP_NAME : opt->state_names[s];
            size_t len = strlen(CLG_OPTIM_STATE_PREFIX) + strlen(pnames[i]) + strlen(sname) + 2;
            if (!(inames[k] = malloc(len))) {
                st = oom(&e);
                break;
            }
            snprintf(inames[k], len, "%s%s.%s", CLG_OPTIM_STATE_PREFIX, pnames[i], sname);
            if (is_step) {
                steps[i] = pp->steps;
                uint64_t u = (uint64_t)pp->steps;
                unsigned char *le = (unsigned char *)&steps[i];   /* the format is little-endian */
                for (int b = 0; b < 8; b++) le[b] = (unsigned char)(u >> (8 * b));
                items[k] = (clg__st_item){.name = inames[k], .dtype = CLG_ELEM_I64, .ndim = 0, .host = &steps[i]};
            } else {
                items[k] = clg__st_item_tensor(inames[k], pp->state[s]);
            }
            k++;
        }
    }
    if (!st) {
        uint64_t seed, offset;
        clg_rng_get_state(m->dev, &seed, &offset);
        clg__meta_text text;
        clg_safetensors_pair meta[CLG_TRAIN_META_MAX];
        int nmeta = clg__train_meta(state, opt ? opt->name : "", opt ? opt->steps : 0, opt ? opt->lr : 0, seed,
                                    offset, model_desc, &text, meta);
        st = clg__st_write(path, k, items, nmeta, meta, &e);
    }
    for (int i = 0; i < cap; i++) free(inames[i]);
    free(inames);
    free(items);
    free(steps);
    free(pnames);
    free(ms);
    return st;
}

/* ---- loading ----------------------------------------------------------------------------------------- */

/* Where each optimizer state comes from: a file tensor, or nothing (fresh). */
typedef struct optim_plan {
    const clg_safetensors_entry *(*src)[CLG_OPTIM_MAX_STATE + 1];   /* [param][slot], the last slot the step */
} optim_plan;

/* Problems, one per line, counted; the message lists them all. */
typedef struct problems {
    char text[CLG_ERROR_MAX - 512];
    size_t at;
    int n;
} problems;

static void problem(problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(problems *p, const char *fmt, ...)
{
    p->n++;
    if (p->at + 2 >= sizeof p->text) return;
    if (p->at) p->text[p->at++] = '\n';
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(p->text + p->at, sizeof p->text - p->at, fmt, ap);
    va_end(ap);
    if (w > 0) p->at = p->at + (size_t)w < sizeof p->text ? p->at + (size_t)w : sizeof p->text - 1;
}

static int64_t read_i64(const clg_safetensors_entry *t)
{
    const unsigned char *b = t->data;
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--) u = u << 8 | b[i];
    return (int64_t)u;
}

/* Sort the file's "optim.state.<param>.<state>" tensors into plan, noting every one
 * that belongs nowhere and every state that is missing. */
static void plan_optimizer(const clg_optimizer *opt, const char *const *pnames, const clg_safetensors *st,
                           optim_plan *plan, problems *p)
{
    const size_t plen = strlen(CLG_OPTIM_STATE_PREFIX);
    char a[200];
    for (int t = 0; t < clg_safetensors_count(st); t++) {
        const clg_safetensors_entry *ft = clg_safetensors_at(st, t);
        if (strncmp(ft->name, CLG_OPTIM_PREFIX, strlen(CLG_OPTIM_PREFIX))) continue;   /* a model tensor */
        const char *rest = ft->name + plen, *dot = strrchr(ft->name, '.');
        if (strncmp(ft->name, CLG_OPTIM_STATE_PREFIX, plen) || !dot || dot < rest) {
            problem(p, "unexpected: %s: not an optimizer state name (optim.state.<param>.<state>)", ft->name);
            continue;
        }
        int i = -1, slot = -1;
        for (int j = 0; j < opt->n && i < 0; j++)
            if (strlen(pnames[j]) == (size_t)(dot - rest) && !strncmp(rest, pnames[j], (size_t)(dot - rest))) i = j;
        for (int s = 0; s < CLG_OPTIM_MAX_STATE && slot < 0; s++)
            if (opt->state_names[s] && !strcmp(dot + 1, opt->state_names[s])) slot = s;
        if (!strcmp(dot + 1, STEP_NAME)) slot = CLG_OPTIM_MAX_STATE;
        if (i < 0 || slot < 0) {
            problem(p, "unexpected: %s: %s", ft->name,
                    i < 0 ? "not a parameter of this optimizer" : "not a state of this optimizer");
            continue;
        }
        const clg_tensor *param = opt->params[i].p;
        bool fits = slot == CLG_OPTIM_MAX_STATE
                        ? ft->dtype == CLG_ELEM_I64 && ft->ndim == 0 && read_i64(ft) >= 0 &&
                              read_i64(ft) <= CLG_COUNTER_MAX
                        : clg__st_matches(ft, param->dtype, param->ndim, param->shape) &&
                              ft->dtype == clg_elem_of_dtype(param->dtype);
        if (!fits)
            problem(p, "mismatched: %s: file %s, expected %s", ft->name, clg__st_desc(ft, a, sizeof a),
                    slot == CLG_OPTIM_MAX_STATE ? "[] I64 in [0, 2^53]" : CLG_DESC(param));
        else
            plan->src[i][slot] = ft;
    }
    for (int i = 0; i < opt->n; i++) {
        int have = 0, want = 0;
        for (int s = 0; s < CLG_OPTIM_MAX_STATE; s++) {
            want += opt->state_names[s] != NULL;
            have += plan->src[i][s] != NULL;
        }
        if (!plan->src[i][CLG_OPTIM_MAX_STATE]) problem(p, "missing: %s%s.%s", CLG_OPTIM_STATE_PREFIX, pnames[i], STEP_NAME);
        /* All of a parameter's states or none (none: no step had made them yet). */
        for (int s = 0; have && have < want && s < CLG_OPTIM_MAX_STATE; s++)
            if (opt->state_names[s] && !plan->src[i][s])
                problem(p, "missing: %s%s.%s", CLG_OPTIM_STATE_PREFIX, pnames[i], opt->state_names[s]);
    }
}

static clg_status apply_optimizer(clg_optimizer *opt, const optim_plan *plan, const clg_train_state *s,
                                  const clg__io_err *e)
{
    /* Fresh state equals state not made yet (make_state fills the same initial value),
     * so making all of it now and overwriting what the file holds is exact. */
    clg_status st = clg_optimizer_init_state(opt);
    if (st) return clg__io_fail(e, st, "making the optimizer's state: %s", clg_device_error(opt->dev));
    for (int i = 0; !st && i < opt->n; i++) {
        clg_optim_param *pp = &opt->params[i];
        for (int slot = 0; !st && slot < CLG_OPTIM_MAX_STATE; slot++) {
            if (!opt->state_names[slot]) continue;
            if (plan->src[i][slot]) st = clg__st_copy_into(plan->src[i][slot], pp->state[slot], e);
            else if ((st = clg_fill_(pp->state[slot], opt->state_init[slot])))
                st = clg__io_fail(e, st, "resetting optimizer state: %s", clg_device_error(opt->dev));
        }
    }
    if (st) return st;
    /* both were checked before anything changed (check_all); a failure here is a bug */
    if ((st = clg_optimizer_set_steps(opt, s->optimizer_steps)) != CLG_OK)
        return clg__io_fail(e, st, "optimizer steps: %s", clg_device_error(opt->dev));
    for (int i = 0; i < opt->n; i++) opt->params[i].steps = read_i64(plan->src[i][CLG_OPTIM_MAX_STATE]);
    if ((st = clg_optimizer_set_lr(opt, s->lr)) != CLG_OK)
        return clg__io_fail(e, st, "learning rate: %s", clg_device_error(opt->dev));
    return CLG_OK;
}

/* Everything that can be checked before changing anything. */
static clg_status check_all(clg_module *m, clg_optimizer *opt, const clg_safetensors *st, const clg_train_state *s,
                            optim_plan *plan, const char **pnames, clg_load_report *report, const clg__io_err *e)
{
    clg_status status = clg__module_match(m, st, true, false, report, e);
    if (status || !opt) return status;
    if (strcmp(s->optimizer, opt->name))
        return clg__io_fail(e, CLG_ERR_FORMAT, "holds the state of optimizer \"%s\", not of this \"%s\"",
                            s->optimizer[0] ? s->optimizer : "(none)", opt->name);
    int n;
    clg_named_tensor *ms = model_state(m, &n);
    if (!ms) return oom(e);
    status = param_names(opt, ms, n, pnames, e);
    if (!status) {
        problems *p = calloc(1, sizeof *p);
        if (!p) status = oom(e);
        else {
            plan_optimizer(opt, pnames, st, plan, p);
            if (p->n)
                status = clg__io_fail(e, CLG_ERR_FORMAT, "does not match the optimizer (%d problems; nothing was "
                                      "loaded):\n%s", p->n, p->text);
            free(p);
        }
    }
    free(ms);
    return status;
}

clg_status clg_checkpoint_load(clg_module *m, clg_optimizer *opt, const char *path, clg_train_state *state,
                               clg_load_report *report)
{
    if (report) memset(report, 0, sizeof *report);
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    clg__io_err e = {m->dev, NULL, 0, path ? path : "(null)"};
    if (opt && opt->dev != m->dev)
        return clg__io_fail(&e, CLG_ERR_INVALID_ARGUMENT, "the optimizer is on another device than the model");
    char err[1024];
    clg_safetensors *st;
    clg_status status = clg_safetensors_open(path, &st, err, sizeof err);
    if (status) return clg__fail(m->dev, status, "clg_checkpoint_load: %s", err);
    int nopt = opt ? opt->n : 0;
    optim_plan plan = {calloc((size_t)(nopt ? nopt : 1), sizeof *plan.src)};
    const char **pnames = malloc((size_t)(nopt ? nopt : 1) * sizeof *pnames);
    clg_train_state s;
    status = plan.src && pnames ? clg__train_state_read(st, &s, &e) : oom(&e);
    if (!status) status = check_all(m, opt, st, &s, &plan, pnames, report, &e);
    if (!status) status = clg__module_match(m, st, true, true, report, &e);
    if (!status && opt) status = apply_optimizer(opt, &plan, &s, &e);
    if (!status) {
        clg_rng_set_state(m->dev, s.rng_seed, s.rng_offset);
        if (state) *state = s;
    }
    free(pnames);
    free(plan.src);
    clg_safetensors_close(st);
    return status;
}

clg_status clg_checkpoint_info(const char *path, clg_train_state *state, char **model_desc, char *err, size_t errlen)
{
    if (model_desc) *model_desc = NULL;
    if (state) memset(state, 0, sizeof *state);
    clg_safetensors *st;
    clg_status status = clg_safetensors_open(path, &st, err, errlen);
    if (status) return status;
    clg__io_err e = {NULL, err, errlen, path};
    clg_train_state s = {0};
    /* Weights alone have no train state (version 0), and may still describe their model. */
    if (clg_safetensors_meta(st, CLG_META_VERSION)) status = clg__train_state_read(st, &s, &e);
    const char *desc = clg_safetensors_meta(st, "model");
    if (!status && desc && model_desc && !(*model_desc = strdup(desc)))
        status = clg__io_fail(&e, CLG_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!status && state) *state = s;
    clg_safetensors_close(st);
    return status;
}
