/* Data-parallel training in one process (clgrad/dist.h, no MPI): two local replicas,
 * each on a device of its own (two contexts of the test device, or the two devices of
 * $CLG_DIST_DEVICES, "pthread,llvmpipe" say: POCL beside rusticl).
 *
 * - Shards: clg_shard_range covers every count exactly once, in order, sizes within one.
 * - Two replicas on the shards of each global batch (7 samples: 4 + 3; 1 sample: 1 + 0,
 *   an empty shard) take the steps one replica takes on the whole batch, to float32
 *   rounding, and stay identical to each other; float16 mixed precision too (the loss
 *   scaler decides the same on both).
 * - clg_dist_allreduce_grads gives sum(count_r * grad_r) / sum(count_r), a parameter
 *   without a gradient counting as zeros; clg_dist_broadcast copies replica 0's values.
 * - Post-accumulate hooks run once per pass, after the leaf's .grad holds the sum.
 * - Refused: graph with dist, 16-bit parameters, replicas that do not match. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "clgrad/train.h"

enum { IN = 6, HID = 5, OUT = 4, STEPS = 12, MAXB = 7 };

static clg_device *devs[2];

static void open_devices(void)
{
    const char *spec = getenv("CLG_DIST_DEVICES");
    char buf[256] = "", *second = NULL;
    if (spec) {
        snprintf(buf, sizeof buf, "%s", spec);
        second = strchr(buf, ',');
        if (second) *second++ = '\0';
    }
    for (int i = 0; i < 2; i++) {
        const char *s = spec ? (i == 0 ? buf : second) : NULL;
        if (clg_device_open(s, &devs[i]) != CLG_OK) {
            fprintf(stderr, "FAIL: device %d (%s): %s\n", i, s ? s : "default", clg_device_error(devs[i]));
            exit(1);
        }
        printf("replica %d: %s (%s)\n", i, clg_device_get_info(devs[i])->name, clg_device_get_info(devs[i])->platform);
    }
}

static clg_module *model(clg_device *dev)
{
    clg_manual_seed(dev, 4);
    return clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_linear(dev, IN, HID, true), clg_nn_relu(dev),
                                                       clg_nn_linear(dev, HID, OUT, true)});
}

/* The global batch of step s: 7 samples, but 1 every fourth step. */
static int batch(int s, float *x, int32_t *y)
{
    int b = s % 4 == 3 ? 1 : MAXB;
    for (int i = 0; i < b * IN; i++) x[i] = (float)((i * 7 + s * 13) % 17) / 8.0f - 1.0f;
    for (int i = 0; i < b; i++) y[i] = (i * 3 + s) % OUT;
    return b;
}

static int weights(clg_module *m, float *w)
{
    clg_tensor *p[4];
    int n = clg_module_parameters(m, p, 4, false), at = 0;
    for (int i = 0; i < n; i++) {
        int64_t k = clg_tensor_numel(p[i]);
        if (clg_tensor_to_host(p[i], w + at, (size_t)k * sizeof *w) != CLG_OK) return -1;
        at += (int)k;
    }
    return at;
}

static void shards(void)
{
    for (int64_t count = 0; count < 20; count++)
        for (int parts = 1; parts <= 5; parts++) {
            int64_t next = 0, lo = count, hi = 0;
            for (int i = 0; i < parts; i++) {
                int64_t first, n;
                clg_shard_range(count, i, parts, &first, &n);
                CHECK_MSG(first == next, "count %lld parts %d shard %d starts at %lld", (long long)count, parts, i,
                          (long long)first);
                next = first + n;
                lo = n < lo ? n : lo;
                hi = n > hi ? n : hi;
            }
            CHECK(next == count && hi - lo <= 1);
        }
}

/* STEPS steps of nrep replicas (1: the reference on devs[0], which needs no exchange)
 * with SGD momentum; weights of each replica into w[rep]. */
static void train(int nrep, clg_dtype precision, float w[2][64])
{
    clg_dist *d = NULL;
    CHECK(clg_dist_new(NULL, NULL, &d, NULL, 0) == CLG_OK && clg_dist_size(d) == 1);
    clg_module *m[2];
    clg_optimizer *opt[2];
    clg_trainer *t[2];
    for (int r = 0; r < nrep; r++) {
        m[r] = model(devs[r]);
        clg_tensor *p[4];
        int n = clg_module_parameters(m[r], p, 4, true);
        opt[r] = clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.2, .momentum = 0.9});
        t[r] = clg_trainer_new(m[r], opt[r], &(clg_trainer_options){.precision = precision, .dist = d});
        CHECK(t[r] != NULL);
    }
    for (int s = 0; s < STEPS && t[0] && t[nrep - 1]; s++) {
        float x[MAXB * IN];
        int32_t y[MAXB];
        int b = batch(s, x, y);
        clg_tensor *tx[2] = {0}, *ty[2] = {0};
        for (int r = 0; r < nrep; r++) {
            int64_t first, k;
            clg_shard_range(b, r, nrep, &first, &k);
            clg_scope_begin(devs[r]);
            if (k == 0) continue;   /* an empty shard: no batch at all */
            tx[r] = clg_tensor_from_host(devs[r], CLG_F32, CLG_SHAPE(k, IN), x + first * IN);
            ty[r] = clg_tensor_from_host(devs[r], CLG_I32, CLG_SHAPE(k), y + first);
        }
        clg_tensor *loss[2];
        CHECK_OK(devs[0], clg_trainer_step_replicas(nrep, t, tx, ty, loss));
        CHECK((loss[0] != NULL) && (nrep == 1 || (loss[1] != NULL) == (b > 1)));
        for (int r = nrep - 1; r >= 0; r--) clg_scope_end(devs[r]);
    }
    clg_dist_stats st = clg_dist_get_stats(d);
    CHECK_MSG(nrep == 1 ? st.steps == 0 : st.steps == STEPS && st.bytes == (IN * HID + HID + HID * OUT + OUT) * 4 &&
                                            st.buckets >= 1,
              "steps %lld, bytes %lld, buckets %d", (long long)st.steps, (long long)st.bytes, st.buckets);
    for (int r = 0; r < nrep; r++) {
        CHECK(weights(m[r], w[r]) == IN * HID + HID + HID * OUT + OUT);
        clg_trainer_free(t[r]);
        clg_optimizer_free(opt[r]);
        clg_module_free(m[r]);
    }
    clg_dist_free(d);
}

static double rel_diff(const float *a, const float *b, int n)
{
    double d = 0, s = 0;
    for (int i = 0; i < n; i++) d += (double)(a[i] - b[i]) * (a[i] - b[i]), s += (double)a[i] * a[i];
    return sqrt(d / s);
}

static void two_replicas(clg_dtype precision, double tol)
{
    float one[2][64], two[2][64], start[2][64];
    const int n = IN * HID + HID + HID * OUT + OUT;
    clg_module *m0 = model(devs[0]);
    CHECK(weights(m0, start[0]) == n);
    clg_module_free(m0);
    train(1, precision, one);
    train(2, precision, two);
    double moved = rel_diff(start[0], one[0], n), diff = rel_diff(one[0], two[0], n);
    CHECK_MSG(moved > 0.05, "training moved the weights by only %.3g", moved);
    CHECK_MSG(diff <= tol, "%s: 2 replicas differ from 1 by %.3g of the weights (at most %g)",
              clg_dtype_name(precision), diff, tol);
    bool same_impl = !strcmp(clg_device_get_info(devs[0])->platform, clg_device_get_info(devs[1])->platform);
    double between = rel_diff(two[0], two[1], n);
    CHECK_MSG(same_impl ? between == 0 : between <= tol, "%s: the replicas differ by %.3g", clg_dtype_name(precision),
              between);
}

/* The plain call: grads of replica r are its own; counts weight them. */
static void allreduce_weights(void)
{
    clg_dist *d = NULL;
    CHECK(clg_dist_new(NULL, &(clg_dist_options){.bucket_mb = 1e-6}, &d, NULL, 0) == CLG_OK);
    clg_tensor *p[4];   /* two parameters per replica: a [3] and a [2] */
    float a0[3] = {1, 2, 3}, a1[3] = {5, 6, 7}, b0[2] = {1, 1}, b1[2] = {2, 2};
    float *vals[4] = {a0, b0, a1, b1};
    for (int k = 0; k < 4; k++) {
        clg_device *dev = devs[k / 2];
        p[k] = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(k % 2 ? 2 : 3), vals[k]);
        clg_tensor_keep(p[k]);
        clg_tensor_set_requires_grad(p[k], true);
    }
    /* gradients: d/dp sum(p * p) = 2p for replica 0's both and replica 1's first only */
    for (int k = 0; k < 3; k++) CHECK_OK(devs[k / 2], clg_backward(clg_sum(clg_mul(p[k], p[k]), 0, NULL, false), NULL));
    CHECK(clg_tensor_grad(p[3]) == NULL);
    const int64_t counts[2] = {1, 3};
    CHECK_OK(devs[0], clg_dist_allreduce_grads(d, 2, 2, p, counts));
    float g[4][3];
    for (int k = 0; k < 4; k++) CHECK_OK(devs[k / 2], clg_tensor_to_host(clg_tensor_grad(p[k]), g[k], (size_t)(k % 2 ? 2 : 3) * 4));
    for (int j = 0; j < 3; j++) {
        float want = (1 * 2 * a0[j] + 3 * 2 * a1[j]) / 4;
        CHECK_MSG(fabsf(g[0][j] - want) <= 1e-6f * fabsf(want) && g[2][j] == g[0][j], "grad[%d] %g %g, want %g", j,
                  g[0][j], g[2][j], want);
    }
    for (int j = 0; j < 2; j++) CHECK_MSG(g[1][j] == 0.5f && g[3][j] == 0.5f, "grad %g %g, want 0.5", g[1][j], g[3][j]);
    clg_dist_stats st = clg_dist_get_stats(d);
    CHECK_MSG(st.buckets == 2 && st.bytes == 20, "buckets %d, bytes %lld", st.buckets, (long long)st.bytes);
    /* broadcast: replica 0's values everywhere */
    CHECK_OK(devs[0], clg_dist_broadcast(d, 2, 2, p));
    float v[3];
    CHECK_OK(devs[1], clg_tensor_to_host(p[2], v, sizeof v));
    CHECK(!memcmp(v, a0, sizeof v));
    /* refused: a replica whose parameters do not match, and float16 */
    clg_tensor *bad[4] = {p[0], p[1], p[3], p[2]};
    CHECK(clg_dist_allreduce_grads(d, 2, 2, bad, counts) != CLG_OK && strstr(clg_dist_error(d), "differ in size"));
    clg_dist_detach(d);
    clg_dist_free(d);
    for (int k = 0; k < 4; k++) clg_tensor_free(p[k]);
}

static void refusals(void)
{
    clg_dist *d = NULL;
    CHECK(clg_dist_new(NULL, NULL, &d, NULL, 0) == CLG_OK);
    clg_module *m = model(devs[0]);
    clg_tensor *p[4];
    int n = clg_module_parameters(m, p, 4, true);
    clg_optimizer *opt = clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.1});
    CHECK(clg_trainer_new(m, opt, &(clg_trainer_options){.graph = true, .dist = d}) == NULL &&
          strstr(clg_device_error(devs[0]), "no graph"));
    clg_tensor *h[2] = {clg_zeros(devs[0], CLG_F16, CLG_SHAPE(3)), clg_zeros(devs[1], CLG_F16, CLG_SHAPE(3))};
    clg_tensor_set_requires_grad(h[0], true);
    clg_tensor_set_requires_grad(h[1], true);
    const int64_t counts[2] = {1, 1};
    CHECK(clg_dist_allreduce_grads(d, 2, 1, h, counts) != CLG_OK && strstr(clg_dist_error(d), "float32"));
    clg_tensor_free(h[1]);
    clg_optimizer_free(opt);
    clg_module_free(m);
    clg_dist_free(d);
}

static clg_status count_hook(clg_tensor *t, void *user)
{
    float g[3];
    clg_status st = clg_tensor_to_host(clg_tensor_grad(t), g, sizeof g);
    ((float *)user)[0] += 1;
    ((float *)user)[1] = g[0];
    return st;
}

/* The hook sees the accumulated gradient, once per pass. */
static void post_hooks(void)
{
    clg_device *dev = devs[0];
    float seen[2] = {0, 0};
    clg_tensor *w = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(3), (float[]){1, 2, 3});
    clg_tensor_set_requires_grad(w, true);
    CHECK_OK(dev, clg_tensor_register_post_accumulate_hook(w, count_hook, seen));
    /* w used twice: one call after both contributions (3 + 3) */
    CHECK_OK(dev, clg_backward(clg_sum(clg_add(clg_mul_scalar(w, 3), clg_mul_scalar(w, 3)), 0, NULL, false), NULL));
    CHECK_MSG(seen[0] == 1 && seen[1] == 6, "calls %g, grad %g", seen[0], seen[1]);
    CHECK_OK(dev, clg_backward(clg_sum(w, 0, NULL, false), NULL));   /* accumulates: 6 + 1 */
    CHECK_MSG(seen[0] == 2 && seen[1] == 7, "calls %g, grad %g", seen[0], seen[1]);
    clg_tensor *y = clg_mul_scalar(w, 2);
    CHECK(clg_tensor_register_post_accumulate_hook(y, count_hook, seen) != CLG_OK);   /* not a leaf */
}

int main(void)
{
    open_devices();
    clg_scope_begin(devs[0]);
    shards();
    post_hooks();
    allreduce_weights();
    refusals();
    clg_scope_end(devs[0]);
    two_replicas(CLG_F32, 1e-5);
    two_replicas(CLG_F16, 1e-2);   /* float16 products: rounding differences of 1e-3 grow */
    clg_device_close(devs[1]);
    clg_device_close(devs[0]);
    return check_report("test_dist");
}
