/* reducer.c: the gradients of nrep local replicas of n parameters, averaged over every
 * replica of every rank (Horovod's and PyTorch DDP's fused buckets).
 *
 * Parameter i of every replica has a place in a flat host arena (arena_off[i]); the
 * arena is cut into buckets of about bucket_bytes, parameters taken last to first,
 * the order backward produces them in. A step:
 *   main thread    backward's post-accumulate hook on parameter i of replica r enqueues
 *                  a read of its gradient into stage[r] (no wait); when every
 *                  parameter of a bucket has one, from every replica, the bucket is ready
 *   comm thread    bucket 0, 1, ... in that fixed order on every rank (MPI collectives
 *                  must match): waits for the bucket's reads, sums the replicas into the
 *                  arena, each weighted by its share of the global batch, and
 *                  MPI_Allreduces it, while the device goes on with backward
 *   finish         waits for the last bucket, enqueues writes of the arena into every
 *                  replica's gradients (the comm thread waits for those before it
 *                  overwrites the arena in the next step)
 * The global batch size, which the shares need, is the step's first reduction.
 * `mu` guards everything the two threads share; OpenCL calls on the queues stay on the
 * main thread, the comm thread only waits for events and releases them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_impl.h"

#define CLG_DIST_MAX_LOCAL 64

typedef struct bucket {
    int first, last;         /* parameters [first, last) */
    int64_t off, len;        /* elements of the arena */
    int pending;             /* reads still to come this step, all replicas */
    clg_event **read_ev;     /* [nrep]: this step's last read, NULL when none */
    clg_event **write_ev;    /* [nrep]: the last step's last write back */
} bucket;

typedef struct hook_ctx { clg__reducer *r; int rep, i; } hook_ctx;

struct clg__reducer {
    clg_dist *d;
    int nrep, n;
    clg_tensor **params;     /* [nrep * n], not owned */
    hook_ctx *ctx;           /* [nrep * n], the hooks' user data */
    bool *seen;              /* [nrep * n]: read this step */
    int64_t *arena_off;      /* [n] */
    int *bucket_of;          /* [n] */
    bool f64;
    size_t esize;
    int64_t total;           /* elements */
    unsigned char **stage;   /* [nrep] host copies of each replica's gradients */
    unsigned char *arena;    /* the reduced means */
    int nb;
    bucket *b;

    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, running;      /* running: a step has begun and is not finished */
    int next;                /* the bucket the comm thread reduces next */
    int64_t *counts;         /* [nrep] this step's samples per replica */
    clg_status failed;       /* the comm thread's failure, with err */
    char err[512];
    clg_dist_stats stats;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the comm thread ------------------------------------------------------------------- */

static clg_status wait_events(clg_event **ev, int n, const char *what, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        if (!ev[i]) continue;
        int e = clg__event_wait(ev[i]);
        clg__event_release(ev[i]);
        ev[i] = NULL;
        if (e) {
            snprintf(err, errlen, "clWaitForEvents (%s, replica %d): %s", what, i, clg_cl_error_name(e));
            return CLG_ERR_OPENCL;
        }
    }
    return CLG_OK;
}

/* The arena's part of bucket k: sum over replicas of share[rep] * stage[rep], in double,
 * rounded once. Loops by type and replica count, so that the compiler vectorises them:
 * this runs on the critical path after the last gradient arrives. */
static void sum_f32(float *restrict out, float *const *in, int nrep, const double *share, int64_t n)
{
    if (nrep == 1) {
        const float *a = in[0];
        double s0 = share[0];
        for (int64_t j = 0; j < n; j++) out[j] = (float)(s0 * a[j]);
        return;
    }
    if (nrep == 2) {
        const float *a = in[0], *b = in[1];
        double s0 = share[0], s1 = share[1];
        for (int64_t j = 0; j < n; j++) out[j] = (float)(s0 * a[j] + s1 * b[j]);
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int rep = 0; rep < nrep; rep++) acc += share[rep] * in[rep][j];
        out[j] = (float)acc;
    }
}

static void sum_f64(double *restrict out, double *const *in, int nrep, const double *share, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int rep = 0; rep < nrep; rep++) acc += share[rep] * in[rep][j];
        out[j] = acc;
    }
}

/* Replicas without a share (an empty shard) are left out, not multiplied by 0: their
 * gradients may be anything (a mean of nothing is NaN). */
static void sum_replicas(clg__reducer *r, const bucket *k, const double *share)
{
    void *in[CLG_DIST_MAX_LOCAL];
    double w[CLG_DIST_MAX_LOCAL];
    int m = 0;
    for (int rep = 0; rep < r->nrep; rep++)
        if (share[rep] != 0) {
            in[m] = r->stage[rep] + (size_t)k->off * r->esize;
            w[m++] = share[rep];
        }
    void *out = r->arena + (size_t)k->off * r->esize;
    if (m == 0) memset(out, 0, (size_t)k->len * r->esize);
    else if (r->f64) sum_f64(out, (double *const *)in, m, w, k->len);
    else sum_f32(out, (float *const *)in, m, w, k->len);
}

/* Every replica's share of the global batch: counts over their sum on every rank. */
static clg_status shares(clg__reducer *r, double *share, char *err, size_t errlen)
{
    double local = 0, total;
    for (int rep = 0; rep < r->nrep; rep++) local += (double)r->counts[rep];
    total = local;
    clg_status st = clg__comm_allreduce(&r->d->comm, &total, 1, true, err, errlen);
    for (int rep = 0; rep < r->nrep; rep++) share[rep] = total > 0 ? (double)r->counts[rep] / total : 0;
    return st;
}

/* Bucket k: its gradients' arrival, the replicas' sum, the all-reduce. The last
 * bucket's time after its gradients arrived is what backward did not hide. */
static clg_status reduce_bucket(clg__reducer *r, bucket *k, const double *share, char *err, size_t errlen)
{
    clg_status st = wait_events(k->read_ev, r->nrep, "gradient read", err, errlen);
    if (!st) st = wait_events(k->write_ev, r->nrep, "gradient write", err, errlen);
    if (st) return st;
    double t0 = now();
    sum_replicas(r, k, share);
    double t1 = now();
    st = clg__comm_allreduce(&r->d->comm, r->arena + (size_t)k->off * r->esize, k->len, r->f64, err, errlen);
    double t2 = now();
    pthread_mutex_lock(&r->mu);
    r->stats.sum_seconds += t1 - t0;
    r->stats.reduce_seconds += t2 - t1;
    if (k == &r->b[r->nb - 1]) r->stats.exposed_seconds += t2 - t0;
    pthread_mutex_unlock(&r->mu);
    return st;
}

static void *comm_thread(void *arg)
{
    clg__reducer *r = arg;
    double *share = calloc((size_t)r->nrep, sizeof *share);
    char err[512] = "";
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && !(r->running && r->next < r->nb && r->b[r->next].pending == 0)) pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop) break;
        int k = r->next;
        pthread_mutex_unlock(&r->mu);
        clg_status st = share ? CLG_OK : CLG_ERR_OUT_OF_MEMORY;
        if (!share) snprintf(err, sizeof err, "out of host memory");
        if (!st && k == 0) st = shares(r, share, err, sizeof err);
        if (!st) st = reduce_bucket(r, &r->b[k], share, err, sizeof err);
        pthread_mutex_lock(&r->mu);
        if (st) {   /* the ranks cannot agree any more: nothing else is reduced */
            r->failed = st;
            snprintf(r->err, sizeof r->err, "%s", err);
            pthread_cond_broadcast(&r->cv);
            break;
        }
        r->next++;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    free(share);
    return NULL;
}

/* ---- the main thread ------------------------------------------------------------------- */

/* Replica rep's parameter i is in the arena (its read enqueued, or zeros): one fewer
 * pending in its bucket. With mu held. */
static void mark_seen(clg__reducer *r, int rep, int i)
{
    r->seen[rep * r->n + i] = true;
    if (--r->b[r->bucket_of[i]].pending == 0) pthread_cond_broadcast(&r->cv);
}

/* A device's failure, its message kept as the reducer's. */
static clg_status device_failure(clg__reducer *r, const clg_tensor *p, clg_status st)
{
    pthread_mutex_lock(&r->mu);
    snprintf(r->err, sizeof r->err, "%s", clg_device_error(p->dev));
    pthread_mutex_unlock(&r->mu);
    return st;
}

/* Replica rep's gradient i into its stage: a read enqueued behind the work that makes
 * it, or zeros when there are no values (no pass reached it since a zero_grad). */
static clg_status stage_param(clg__reducer *r, int rep, int i)
{
    clg_tensor *p = r->params[rep * r->n + i], *g = p->grad;
    unsigned char *dst = r->stage[rep] + (size_t)r->arena_off[i] * r->esize;
    bucket *k = &r->b[r->bucket_of[i]];
    clg_event *ev = NULL;
    if (!g || p->grad_zero) {
        memset(dst, 0, (size_t)p->numel * r->esize);
    } else {
        clg_status st = clg__read_async(p->dev, g->buf, (size_t)g->offset * r->esize, dst, (size_t)g->numel * r->esize, &ev);
        /* so that the comm thread's wait is not a wait for ever */
        if (!st) st = clg__queue_flush(p->dev, clg__device_queue(p->dev), "gradient read");
        if (st) {
            if (ev) clg__event_wait(ev), clg__event_release(ev);   /* dst is in use until then */
            return device_failure(r, p, st);
        }
    }
    pthread_mutex_lock(&r->mu);
    if (ev) {
        clg__event_release(k->read_ev[rep]);
        k->read_ev[rep] = ev;   /* the in-order queue: later than the bucket's other reads */
    }
    if (!r->seen[rep * r->n + i]) mark_seen(r, rep, i);
    pthread_mutex_unlock(&r->mu);
    return CLG_OK;
}

/* The post-accumulate hook: gradient i of replica rep is final for this pass. */
static clg_status on_grad(clg_tensor *t, void *user)
{
    hook_ctx *h = user;
    clg__reducer *r = h->r;
    pthread_mutex_lock(&r->mu);
    bool late = r->seen[h->rep * r->n + h->i] && r->b[r->bucket_of[h->i]].pending == 0 && r->running;
    pthread_mutex_unlock(&r->mu);
    if (late)   /* a second backward after the bucket was handed over */
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "clg_dist: a second backward pass in one step after its "
                         "gradients were being reduced; reduce once per backward");
    return stage_param(r, h->rep, h->i);
}

clg_status clg__reducer_begin(clg__reducer *r, const int64_t *counts)
{
    pthread_mutex_lock(&r->mu);
    clg_status st = r->failed;
    if (!st) {
        memcpy(r->counts, counts, (size_t)r->nrep * sizeof *counts);
        r->running = true;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return st;
}

/* Gradients no hook staged this step (no pass reached them, or the passes ran before
 * the hooks were there): staged now, as they are. Only the main thread writes seen. */
static clg_status stage_unseen(clg__reducer *r)
{
    for (int rep = 0; rep < r->nrep; rep++)
        for (int i = 0; i < r->n; i++) {
            clg_status st = r->seen[rep * r->n + i] ? CLG_OK : stage_param(r, rep, i);
            if (st) return st;
        }
    return CLG_OK;
}

static clg_status wait_all(clg__reducer *r, double timeout)
{
    double t0 = now();
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double whole = floor(timeout);
    until.tv_sec += (time_t)whole;
    until.tv_nsec += (long)((timeout - whole) * 1e9);
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    clg_status st = stage_unseen(r);
    if (st) return st;
    pthread_mutex_lock(&r->mu);
    int rc = 0;
    while (!r->failed && r->next < r->nb && rc == 0) rc = pthread_cond_timedwait(&r->cv, &r->mu, &until);
    st = r->failed;
    if (!st && r->next < r->nb) {
        st = CLG_ERR_COMM;
        snprintf(r->err, sizeof r->err, "the gradients' reduction did not finish in %g s (bucket %d of %d): another "
                 "rank has died or hangs", timeout, r->next + 1, r->nb);
        r->failed = st;
    }
    r->stats.wait_seconds += now() - t0;
    pthread_mutex_unlock(&r->mu);
    return st;
}

/* The arena's means into parameter i's gradient of replica rep (made if missing). */
static clg_status write_back(clg__reducer *r, int rep, int i, clg_event **ev)
{
    clg_tensor *p = r->params[rep * r->n + i];
    clg_tensor *g = clg__grad_target(p);
    clg_status st = g ? clg__write_async(p->dev, g->buf, (size_t)g->offset * r->esize,
                                         r->arena + (size_t)r->arena_off[i] * r->esize, (size_t)g->numel * r->esize, ev)
                      : p->dev->status;
    return st ? device_failure(r, p, st) : CLG_OK;
}

clg_status clg__reducer_finish(clg__reducer *r, double timeout)
{
    clg_status st = wait_all(r, timeout);
    if (st) return st;
    for (int k = 0; k < r->nb && !st; k++)
        for (int rep = 0; rep < r->nrep && !st; rep++)
            for (int i = r->b[k].first; i < r->b[k].last && !st; i++) {
                clg_event *ev = NULL;
                st = write_back(r, rep, i, &ev);
                if (st) break;
                clg__event_release(r->b[k].write_ev[rep]);
                r->b[k].write_ev[rep] = ev;
            }
    for (int rep = 0; rep < r->nrep; rep++) {   /* the next step's comm thread waits on the writes */
        clg_device *d = r->params[rep * r->n]->dev;
        clg_status fs = clg__queue_flush(d, clg__device_queue(d), "gradient write back");
        if (!st && fs) st = device_failure(r, r->params[rep * r->n], fs);
    }
    pthread_mutex_lock(&r->mu);
    r->running = false;
    r->next = 0;
    memset(r->seen, 0, (size_t)r->nrep * (size_t)r->n * sizeof *r->seen);
    for (int k = 0; k < r->nb; k++) {
        r->b[k].pending = r->nrep * (r->b[k].last - r->b[k].first);
    }
    if (!st) r->stats.steps++;
    else r->failed = st;
    pthread_mutex_unlock(&r->mu);
    return st;
}

void clg__reducer_abandon(clg__reducer *r)
{
    pthread_mutex_lock(&r->mu);
    r->failed = CLG_ERR_COMM;
    pthread_mutex_unlock(&r->mu);
}

/* ---- making one ------------------------------------------------------------------------ */

bool clg__reducer_matches(const clg__reducer *r, int nrep, int n, clg_tensor *const *params)
{
    return r && r->nrep == nrep && r->n == n && !memcmp(r->params, params, (size_t)nrep * (size_t)n * sizeof *params);
}

static const char *check_params(int nrep, int n, clg_tensor *const *params, bool *f64)
{
    if (nrep < 1 || n < 1 || !params) return "no replicas or no parameters";
    if (nrep > CLG_DIST_MAX_LOCAL) return "more than 64 local replicas";
    for (int k = 0; k < nrep * n; k++) {
        const clg_tensor *p = params[k], *p0 = params[k % n];
        if (!p) return "a NULL parameter";
        if (p->dtype != CLG_F32 && p->dtype != CLG_F64) return "a parameter that is not float32 or float64";
        if (p->dtype != params[0]->dtype) return "parameters of different dtypes";
        if (!p->requires_grad || p->node) return "a parameter that is not a leaf requiring a gradient";
        if (p->numel != p0->numel) return "replicas whose parameters differ in size";
        for (int j = 0; j < k; j++)
            if (params[j] == p) return "a parameter listed twice";
    }
    *f64 = params[0]->dtype == CLG_F64;
    return NULL;
}

/* Buckets of about bucket_bytes, parameters from last to first. */
static clg_status layout(clg__reducer *r, size_t bucket_bytes)
{
    int64_t off = 0;
    for (int i = r->n - 1; i >= 0; i--) {
        r->arena_off[i] = off;
        off += r->params[i]->numel;
    }
    r->total = off;
    r->b = calloc((size_t)(r->n > 0 ? r->n : 1), sizeof *r->b);   /* n >= 1: checked */
    if (!r->b) return CLG_ERR_OUT_OF_MEMORY;
    for (int i = r->n - 1; i >= 0;) {
        bucket *k = &r->b[r->nb++];
        k->last = i + 1;
        size_t bytes = 0;
        do bytes += (size_t)r->params[i]->numel * r->esize, i--;
        while (i >= 0 && bytes < bucket_bytes);
        k->first = i + 1;
        k->off = r->arena_off[k->last - 1];
        k->len = r->arena_off[k->first] + r->params[k->first]->numel - k->off;
        k->pending = r->nrep * (k->last - k->first);
        k->read_ev = calloc((size_t)r->nrep, sizeof *k->read_ev);
        k->write_ev = calloc((size_t)r->nrep, sizeof *k->write_ev);
        if (!k->read_ev || !k->write_ev) return CLG_ERR_OUT_OF_MEMORY;
        for (int j = k->first; j < k->last; j++) r->bucket_of[j] = r->nb - 1;
    }
    r->stats.bytes = r->total * (int64_t)r->esize;
    r->stats.buckets = r->nb;
    return CLG_OK;
}

static clg_status alloc_all(clg__reducer *r, int nrep, int n, clg_tensor *const *params)
{
    size_t slots = (size_t)nrep * (size_t)n;
    r->params = malloc(slots * sizeof *r->params);
    r->ctx = calloc(slots, sizeof *r->ctx);
    r->seen = calloc(slots, sizeof *r->seen);
    r->arena_off = calloc((size_t)n, sizeof *r->arena_off);
    r->bucket_of = calloc((size_t)n, sizeof *r->bucket_of);
    r->stage = calloc((size_t)nrep, sizeof *r->stage);
    r->counts = calloc((size_t)nrep, sizeof *r->counts);
    if (!r->params || !r->ctx || !r->seen || !r->arena_off || !r->bucket_of || !r->stage || !r->counts)
        return CLG_ERR_OUT_OF_MEMORY;
    memcpy(r->params, params, slots * sizeof *params);
    return CLG_OK;
}

static clg_status alloc_arenas(clg__reducer *r)
{
    size_t bytes = (size_t)r->total * r->esize;
    if (!(r->arena = calloc(bytes, 1))) return CLG_ERR_OUT_OF_MEMORY;
    for (int rep = 0; rep < r->nrep; rep++)
        if (!(r->stage[rep] = calloc(bytes, 1))) return CLG_ERR_OUT_OF_MEMORY;
    return CLG_OK;
}

static clg_status add_hooks(clg__reducer *r)
{
    for (int k = 0; k < r->nrep * r->n; k++) {
        r->ctx[k] = (hook_ctx){r, k / r->n, k % r->n};
        clg_status st = clg_tensor_register_post_accumulate_hook(r->params[k], on_grad, &r->ctx[k]);
        if (st) return st;
    }
    return CLG_OK;
}

clg__reducer *clg__reducer_new(clg_dist *d, int nrep, int n, clg_tensor *const *params, size_t bucket_bytes,
                               char *err, size_t errlen)
{
    bool f64 = false;
    const char *why = check_params(nrep, n, params, &f64);
    if (why) {
        snprintf(err, errlen, "clg_dist_allreduce_grads: %s", why);
        return NULL;
    }
    clg__reducer *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "clg_dist_allreduce_grads: out of host memory");
        return NULL;
    }
    *r = (clg__reducer){.d = d, .nrep = nrep, .n = n, .f64 = f64, .esize = f64 ? 8 : 4};
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    clg_status st = alloc_all(r, nrep, n, params);
    if (!st) st = layout(r, bucket_bytes);
    if (!st) st = alloc_arenas(r);
    if (!st) st = add_hooks(r);
    if (!st && pthread_create(&r->thread, NULL, comm_thread, r) != 0) st = CLG_ERR_OUT_OF_MEMORY;
    if (st) {
        snprintf(err, errlen, "clg_dist_allreduce_grads: %s", st == CLG_ERR_OUT_OF_MEMORY ? "out of host memory"
                 : clg_device_error(params[0]->dev));
        clg__reducer_free(r);
        return NULL;
    }
    r->thread_started = true;
    return r;
}

void clg__reducer_free(clg__reducer *r)
{
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    bool stuck = r->failed == CLG_ERR_COMM;   /* its thread may hang in MPI for ever */
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (r->thread_started) {
        if (stuck) {   /* leak it rather than hang: the process is about to end */
            pthread_detach(r->thread);
            return;
        }
        pthread_join(r->thread, NULL);
    }
    for (int k = 0; r->ctx && k < r->nrep * r->n; k++)
        if (r->ctx[k].r) clg__remove_post_hook(r->params[k], on_grad, &r->ctx[k]);
    for (int k = 0; r->b && k < r->nb; k++) {
        bucket *b = &r->b[k];
        for (int rep = 0; rep < r->nrep; rep++) {
            if (b->read_ev && b->read_ev[rep]) clg__event_wait(b->read_ev[rep]), clg__event_release(b->read_ev[rep]);
            if (b->write_ev && b->write_ev[rep]) clg__event_wait(b->write_ev[rep]), clg__event_release(b->write_ev[rep]);
        }
        free(b->read_ev);
        free(b->write_ev);
    }
    for (int rep = 0; r->stage && rep < r->nrep; rep++) free(r->stage[rep]);
    free(r->stage);
    free(r->arena);
    free(r->b);
    free(r->params);
    free(r->ctx);
    free(r->seen);
    free(r->arena_off);
    free(r->bucket_of);
    free(r->counts);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

const char *clg__reducer_error(const clg__reducer *r) { return r->err; }

void clg__reducer_stats(const clg__reducer *r, clg_dist_stats *s)
{
    pthread_mutex_lock((pthread_mutex_t *)&r->mu);
    *s = r->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&r->mu);
}
