/* The loss scaler's state and decisions on the device (scaler.c, device_steps.c):
 *
 * - every optimizer skips on the device: a run whose gradients were inf at two steps
 *   (the first among them, where SGD's buffer and Adam's bias correction start) ends
 *   with the weights, state and step count of a run that never saw those steps;
 * - unscale multiplies by PyTorch's 1 / scale (scale.double().reciprocal().float()) and
 *   update follows _amp_update_scale_ step by step with factors that are not powers of
 *   two (3 and 0.3, the products rounded to float32), never growing into infinity;
 * - the device's step count is set and read back; bad options are refused. */
#include <math.h>
#include <string.h>

#include "check.h"

enum { B = 8, IN = 6, OUT = 4, STEPS = 6, NOPT = 5 };

static clg_module *model(clg_device *dev)
{
    clg_manual_seed(dev, 5);
    return clg_nn_linear(dev, IN, OUT, true);
}

static clg_optimizer *optimizer(int kind, int n, clg_tensor **p)
{
    switch (kind) {
    case 0: return clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.1, .momentum = 0.9, .nesterov = true});
    case 1: return clg_adam_new(n, p, &(clg_adam_options){.lr = 1e-2});
    case 2: return clg_adamw_new(n, p, &(clg_adam_options){.lr = 1e-2, .weight_decay = 0.1});
    case 3: return clg_rmsprop_new(n, p, &(clg_rmsprop_options){.lr = 1e-2, .momentum = 0.5, .centered = true});
    default: return clg_adagrad_new(n, p, &(clg_adagrad_options){.lr = 0.1, .lr_decay = 0.1});
    }
}

/* The weights and every state tensor of opt, concatenated into out (room for 512). */
static int snapshot(clg_optimizer *opt, clg_tensor **p, int n, float *out)
{
    int at = 0;
    for (int i = 0; i < n; i++) {
        clg_tensor *t[4] = {p[i]};
        int k = 1 + clg_optimizer_state(opt, i, NULL, t + 1, 3);
        for (int j = 0; j < k; j++) {
            int64_t m = clg_tensor_numel(t[j]);
            if (at + m > 512 || clg_tensor_to_host(t[j], out + at, (size_t)m * sizeof *out) != CLG_OK) return -1;
            at += (int)m;
        }
    }
    return at;
}

/* STEPS steps of optimizer `kind`; with sc, the gradients of the steps in `bad` are made
 * inf (a skip); without, those steps are left out. Returns the snapshot's length. */
static int run(clg_device *dev, int kind, clg_grad_scaler *sc, const int bad[2], float *out, int64_t *steps)
{
    clg_module *m = model(dev);
    clg_tensor *p[2];
    int n = clg_module_parameters(m, p, 2, true);
    clg_optimizer *opt = optimizer(kind, n, p);
    CHECK(opt != NULL);
    for (int s = 0; opt && s < STEPS; s++) {
        bool poisoned = s == bad[0] || s == bad[1];
        if (poisoned && !sc) continue;
        float x[B * IN];
        int32_t y[B];
        for (int i = 0; i < B * IN; i++) x[i] = (float)((i * 5 + s * 11) % 13) / 6.0f - 1.0f;
        for (int i = 0; i < B; i++) y[i] = (i * 3 + s) % OUT;
        clg_scope_begin(dev);
        clg_optimizer_zero_grad(opt);
        clg_tensor *loss = clg_cross_entropy(clg_module_forward(m, clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(B, IN), x)),
                                             clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(B), y), CLG_REDUCE_MEAN);
        CHECK_OK(dev, clg_backward(sc ? clg_grad_scaler_scale(sc, loss) : loss, NULL));
        if (poisoned) {
            clg_no_grad_begin(dev);
            CHECK_OK(dev, clg_fill_(clg_narrow(clg_reshape(clg_tensor_grad(p[0]), CLG_SHAPE(-1)), 0, 2, 1), INFINITY));
            clg_no_grad_end(dev);
        }
        CHECK_OK(dev, sc ? clg_grad_scaler_step(sc, opt, NULL) : clg_optimizer_step(opt));
        if (sc) CHECK_OK(dev, clg_grad_scaler_update(sc));
        clg_scope_end(dev);
    }
    int k = snapshot(opt, p, n, out);
    *steps = clg_optimizer_steps(opt);
    clg_optimizer_free(opt);
    clg_module_free(m);
    return k;
}

static void skips(clg_device *dev)
{
    static const char *names[NOPT] = {"sgd", "adam", "adamw", "rmsprop", "adagrad"};
    const int bad[2] = {0, 3};
    /* the bias corrections are computed in double on the host, and on the device where
     * it has float64 (else float32: close, not the same bits) */
    bool exact = clg_device_get_info(dev)->fp64;
    for (int k = 0; k < NOPT; k++) {
        float a[512], b[512];
        int64_t sa, sb;
        clg_grad_scaler *sc = clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.init_scale = 1024});
        int na = run(dev, k, sc, bad, a, &sa), nb = run(dev, k, NULL, bad, b, &sb);
        CHECK_MSG(na > 0 && na == nb && sa == STEPS - 2 && sb == STEPS - 2, "%s: %d and %d values, %lld and %lld steps",
                  names[k], na, nb, (long long)sa, (long long)sb);
        int differ = 0;
        for (int i = 0; i < na && i < nb; i++)
            differ += exact ? memcmp(&a[i], &b[i], sizeof *a) != 0 : !(fabsf(a[i] - b[i]) <= 1e-5f * (1 + fabsf(b[i])));
        CHECK_MSG(differ == 0, "%s: %d of %d values differ from the run without the skipped steps", names[k], differ, na);
        CHECK(clg_grad_scaler_get_scale(sc) == 256 && clg_grad_scaler_growth_tracker(sc) == 2);
        clg_grad_scaler_free(sc);
    }
}

/* One step of a scaler over p (4 values, loss = sum(p * c)): the unscaled gradient
 * against float32's fl(fl(scale c) inv), inv = (float)(1 / (double)scale); `bad` makes a
 * gradient inf before the step. */
static void rule_step(clg_device *dev, clg_grad_scaler *sc, clg_optimizer *opt, clg_tensor *p, bool bad, float scale)
{
    static const float c[4] = {0.1f, -1.7f, 3.3f, 1e-3f};
    clg_scope_begin(dev);
    clg_optimizer_zero_grad(opt);
    clg_tensor *loss = clg_sum(clg_mul(p, clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(4), c)), 0, NULL, false);
    CHECK_OK(dev, clg_backward(clg_grad_scaler_scale(sc, loss), NULL));
    if (bad) {
        clg_no_grad_begin(dev);
        CHECK_OK(dev, clg_fill_(clg_narrow(clg_tensor_grad(p), 0, 1, 1), NAN));
        clg_no_grad_end(dev);
    }
    CHECK_OK(dev, clg_grad_scaler_unscale(sc, opt));
    float g[4];
    CHECK_OK(dev, clg_tensor_to_host(clg_tensor_grad(p), g, sizeof g));
    float inv = (float)(1.0 / (double)scale);
    for (int i = 0; i < 4; i++) {
        float want = (scale * c[i]) * inv;
        CHECK_MSG((bad && i == 1) || g[i] == want, "scale %g: gradient %d %.9g, want %.9g", scale, i, g[i], want);
    }
    bool stepped = true;
    CHECK_OK(dev, clg_grad_scaler_step(sc, opt, &stepped));
    CHECK(stepped == !bad && clg_grad_scaler_found_inf(sc) == bad);
    CHECK_OK(dev, clg_grad_scaler_update(sc));
    CHECK(!clg_grad_scaler_found_inf(sc));
    clg_scope_end(dev);
}

static void rule(clg_device *dev)
{
    clg_grad_scaler *sc = clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.init_scale = 1000, .growth_factor = 3,
                                                                             .backoff_factor = 0.3, .growth_interval = 2});
    clg_tensor *p = clg_zeros(dev, CLG_F32, CLG_SHAPE(4));
    CHECK_OK(dev, clg_tensor_set_requires_grad(p, true));
    clg_optimizer *opt = clg_sgd_new(1, &p, &(clg_sgd_options){.lr = 1e-3});
    CHECK(sc && opt);
    static const bool bad[12] = {0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1};
    float scale = 1000;   /* PyTorch's _amp_update_scale_: float scale, double factors */
    int tracker = 0, taken = 0;
    for (int s = 0; sc && opt && s < 12; s++) {
        rule_step(dev, sc, opt, p, bad[s], scale);
        taken += !bad[s];
        if (bad[s]) {
            scale = (float)((double)scale * 0.3);
            tracker = 0;
        } else if (++tracker == 2) {
            scale = (float)((double)scale * 3);
            tracker = 0;
        }
        CHECK_MSG(clg_grad_scaler_get_scale(sc) == scale && clg_grad_scaler_growth_tracker(sc) == tracker,
                  "step %d: scale %.9g tracker %lld, want %.9g and %d", s, clg_grad_scaler_get_scale(sc),
                  (long long)clg_grad_scaler_growth_tracker(sc), scale, tracker);
    }
    CHECK(clg_optimizer_steps(opt) == taken);
    /* the count lives on the device now: set and read there */
    CHECK_OK(dev, clg_optimizer_set_steps(opt, 7));
    CHECK(clg_optimizer_steps(opt) == 7);
    /* never into infinity: 2^127 x 3 is not a float, so the scale stays */
    CHECK_OK(dev, clg_grad_scaler_set_state(sc, 0x1p127, 1));
    CHECK_OK(dev, clg_grad_scaler_update(sc));
    CHECK(clg_grad_scaler_get_scale(sc) == 0x1p127 && clg_grad_scaler_growth_tracker(sc) == 0);
    clg_optimizer_free(opt);
    clg_grad_scaler_free(sc);
    /* the tracker is an int32 on the device */
    CHECK(clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.growth_interval = (int64_t)1 << 31}) == NULL &&
          strstr(clg_device_error(dev), "growth_interval"));
}

int main(void)
{
    clg_device *dev = check_open_device();
    skips(dev);
    rule(dev);
    clg_device_close(dev);
    return check_report("test_scaler_device");
}
