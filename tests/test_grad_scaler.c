/* Dynamic loss scaling (clg_grad_scaler, PyTorch's GradScaler semantics).
 *
 * - With power-of-two scales and no overflow, a run with the scaler takes the same
 *   steps as one without, bit for bit (scaling by 2^k commutes with the arithmetic),
 *   while the scale grows every growth_interval steps.
 * - A gradient made inf or NaN after backward skips that step: weights, optimizer state
 *   and step counts stay; the scale halves and the count of clean steps restarts; the
 *   scale then follows PyTorch's rule step by step (checked against the rule itself).
 * - unscale twice in a step, bad options and bad states are refused. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "clgrad/train.h"

enum { B = 8, IN = 6, OUT = 4, STEPS = 14 };

static clg_module *model(clg_device *dev)
{
    clg_manual_seed(dev, 9);
    return clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_linear(dev, IN, 5, true), clg_nn_relu(dev),
                                                       clg_nn_linear(dev, 5, OUT, true)});
}

static void batch(int step, float *x, int32_t *y)
{
    for (int i = 0; i < B * IN; i++) x[i] = (float)((i * 7 + step * 13) % 17) / 8.0f - 1.0f;
    for (int i = 0; i < B; i++) y[i] = (i + step) % OUT;
}

/* The weights of m, concatenated, into w (room for 64). */
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

/* Make one element of the first weight's gradient v (inf, NaN). */
static void poison(clg_device *dev, clg_module *m, double v)
{
    clg_tensor *p[4];
    clg_module_parameters(m, p, 4, false);
    clg_no_grad_begin(dev);
    CHECK_OK(dev, clg_fill_(clg_narrow(clg_reshape(clg_tensor_grad(p[0]), CLG_SHAPE(-1)), 0, 3, 1), v));
    clg_no_grad_end(dev);
}

/* STEPS steps of SGD with momentum; with a scaler when sc; poisons the gradients at
 * the steps listed (inf at the first, NaN at the second). Records whether each step
 * was taken and the scale after each update. */
static void run(clg_device *dev, clg_module *m, clg_grad_scaler *sc, const int poisoned[2], bool *stepped,
                double *scales)
{
    clg_tensor *p[4];
    int n = clg_module_parameters(m, p, 4, true);
    clg_optimizer *opt = clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.1, .momentum = 0.9});
    CHECK(opt != NULL);
    for (int s = 0; opt && s < STEPS; s++) {
        float x[B * IN];
        int32_t y[B];
        batch(s, x, y);
        clg_scope_begin(dev);
        clg_tensor *tx = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(B, IN), x);
        clg_tensor *ty = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(B), y);
        clg_optimizer_zero_grad(opt);
        clg_tensor *loss = clg_cross_entropy(clg_module_forward(m, tx), ty, CLG_REDUCE_MEAN);
        CHECK_OK(dev, clg_backward(sc ? clg_grad_scaler_scale(sc, loss) : loss, NULL));
        if (sc && s == poisoned[0]) poison(dev, m, INFINITY);
        if (sc && s == poisoned[1]) poison(dev, m, NAN);
        if (sc) {
            bool took = false;
            CHECK_OK(dev, clg_grad_scaler_step(sc, opt, &took));
            CHECK(took == !clg_grad_scaler_found_inf(sc));
            CHECK_OK(dev, clg_grad_scaler_update(sc));
            stepped[s] = took;
            scales[s] = clg_grad_scaler_get_scale(sc);
        } else {
            CHECK_OK(dev, clg_optimizer_step(opt));
            stepped[s] = true;
        }
        clg_scope_end(dev);
    }
    int taken = 0;
    for (int s = 0; s < STEPS; s++) taken += stepped[s];
    CHECK_MSG(clg_optimizer_steps(opt) == taken, "optimizer steps %lld, taken %d", (long long)clg_optimizer_steps(opt),
              taken);
    clg_optimizer_free(opt);
}

static void same_as_unscaled(clg_device *dev)
{
    bool stepped[STEPS];
    double scales[STEPS];
    const int none[2] = {-1, -1};
    clg_module *a = model(dev), *b = model(dev);
    clg_grad_scaler *sc = clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.growth_interval = 3});
    CHECK(a && b && sc);
    run(dev, a, NULL, none, stepped, scales);
    run(dev, b, sc, none, stepped, scales);
    float wa[64], wb[64];
    int n = weights(a, wa);
    CHECK(n > 0 && n == weights(b, wb) && !memcmp(wa, wb, (size_t)n * sizeof *wa));
    /* 14 clean steps: grown at steps 3, 6, 9, 12 */
    CHECK_MSG(clg_grad_scaler_get_scale(sc) == 65536.0 * 16 && clg_grad_scaler_growth_tracker(sc) == 2,
              "scale %g, tracker %lld", clg_grad_scaler_get_scale(sc), (long long)clg_grad_scaler_growth_tracker(sc));
    clg_grad_scaler_free(sc);
    clg_module_free(a);
    clg_module_free(b);
}

static void overflow(clg_device *dev)
{
    bool stepped[STEPS];
    double scales[STEPS];
    const int poisoned[2] = {4, 9};
    clg_module *m = model(dev);
    clg_grad_scaler *sc = clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.growth_interval = 3});
    CHECK(m && sc);
    run(dev, m, sc, poisoned, stepped, scales);
    /* the rule, step by step */
    double scale = 65536.0;
    int tracker = 0;
    for (int s = 0; s < STEPS; s++) {
        bool bad = s == poisoned[0] || s == poisoned[1];
        CHECK_MSG(stepped[s] == !bad, "step %d: %s", s, stepped[s] ? "taken" : "skipped");
        if (bad) {
            scale *= 0.5;
            tracker = 0;
        } else if (++tracker == 3) {
            scale *= 2;
            tracker = 0;
        }
        CHECK_MSG(scales[s] == scale, "step %d: scale %g, want %g", s, scales[s], scale);
    }
    /* a skipped step changes nothing: replay the run without the two steps (their
     * batches unseen) and compare the weights */
    clg_module_free(m);
    clg_grad_scaler_free(sc);
    m = model(dev);
    clg_module *ref = model(dev);
    clg_tensor *p[4];
    int n = clg_module_parameters(ref, p, 4, true);
    clg_optimizer *opt = clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.1, .momentum = 0.9});
    for (int s = 0; opt && s < STEPS; s++) {
        if (s == poisoned[0] || s == poisoned[1]) continue;
        float x[B * IN];
        int32_t y[B];
        batch(s, x, y);
        clg_scope_begin(dev);
        clg_optimizer_zero_grad(opt);
        clg_tensor *loss = clg_cross_entropy(clg_module_forward(ref, clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(B, IN), x)),
                                             clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(B), y), CLG_REDUCE_MEAN);
        CHECK_OK(dev, clg_backward(loss, NULL));
        CHECK_OK(dev, clg_optimizer_step(opt));
        clg_scope_end(dev);
    }
    sc = clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.growth_interval = 3});
    run(dev, m, sc, poisoned, stepped, scales);
    float wa[64], wb[64];
    int k = weights(m, wa);
    CHECK_MSG(k > 0 && k == weights(ref, wb) && !memcmp(wa, wb, (size_t)k * sizeof *wa),
              "skipped steps changed the weights");
    clg_optimizer_free(opt);
    clg_grad_scaler_free(sc);
    clg_module_free(m);
    clg_module_free(ref);
}

static void misuse(clg_device *dev)
{
    CHECK(clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.growth_factor = 0.5}) == NULL);
    CHECK(clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.backoff_factor = 1.5}) == NULL);
    CHECK(clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.init_scale = -1}) == NULL);
    clg_grad_scaler *sc = clg_grad_scaler_new(dev, NULL);
    CHECK(sc && clg_grad_scaler_get_scale(sc) == 65536.0 && clg_grad_scaler_growth_tracker(sc) == 0);
    clg_module *m = model(dev);
    clg_tensor *p[4];
    int n = clg_module_parameters(m, p, 4, true);
    clg_optimizer *opt = clg_sgd_new(n, p, NULL);
    CHECK_OK(dev, clg_grad_scaler_unscale(sc, opt));   /* no gradients yet: nothing to check */
    CHECK(!clg_grad_scaler_found_inf(sc));
    CHECK(clg_grad_scaler_unscale(sc, opt) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "already called"), "%s", clg_device_error(dev));
    CHECK_OK(dev, clg_grad_scaler_update(sc));
    CHECK(clg_grad_scaler_set_state(sc, 0, 0) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_grad_scaler_set_state(sc, 1024, 2000) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_OK(dev, clg_grad_scaler_set_state(sc, 1024, 1999));
    CHECK(clg_grad_scaler_get_scale(sc) == 1024 && clg_grad_scaler_growth_tracker(sc) == 1999);
    CHECK_OK(dev, clg_grad_scaler_update(sc));   /* the 2000th clean step: grows */
    CHECK(clg_grad_scaler_get_scale(sc) == 2048 && clg_grad_scaler_growth_tracker(sc) == 0);
    clg_optimizer_free(opt);
    clg_module_free(m);
    clg_grad_scaler_free(sc);
}

/* A trainer in mixed precision against the recipe written out by hand: n steps of
 * SGD with momentum on a model from model(), bit for bit. precision CLG_F16 scales the
 * loss (clg_trainer_scaler); *w gets the trainer's weights. */
static void by_hand(clg_device *dev, clg_dtype precision, int steps, float *w)
{
    clg_module *m = model(dev);
    clg_tensor *p[4];
    int n = clg_module_parameters(m, p, 4, true);
    clg_optimizer *opt = clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.1, .momentum = 0.9});
    clg_grad_scaler *sc = precision == CLG_F16 ? clg_grad_scaler_new(dev, NULL) : NULL;
    for (int s = 0; s < steps; s++) {
        float x[B * IN];
        int32_t y[B];
        batch(s, x, y);
        clg_scope_begin(dev);
        clg_optimizer_zero_grad(opt);
        CHECK_OK(dev, clg_autocast_begin(dev, precision));
        clg_tensor *loss = clg_cross_entropy(clg_module_forward(m, clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(B, IN), x)),
                                             clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(B), y), CLG_REDUCE_MEAN);
        clg_autocast_end(dev);
        CHECK_OK(dev, clg_backward(sc ? clg_grad_scaler_scale(sc, loss) : loss, NULL));
        CHECK_OK(dev, sc ? clg_grad_scaler_step(sc, opt, NULL) : clg_optimizer_step(opt));
        if (sc) CHECK_OK(dev, clg_grad_scaler_update(sc));
        clg_scope_end(dev);
    }
    CHECK(weights(m, w) > 0);
    clg_grad_scaler_free(sc);
    clg_optimizer_free(opt);
    clg_module_free(m);
}

/* Returns the trainer's replays; *w its weights after `steps` steps; *scale its scale. */
static int64_t with_trainer(clg_device *dev, clg_dtype precision, bool graph, int steps, double huge, float *w, double *scale)
{
    clg_module *m = model(dev);
    clg_tensor *p[4];
    int n = clg_module_parameters(m, p, 4, true);
    clg_optimizer *opt = clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.1, .momentum = 0.9});
    clg_trainer *tr = clg_trainer_new(m, opt, &(clg_trainer_options){.graph = graph, .precision = precision});
    CHECK_MSG(tr != NULL, "%s", clg_device_error(dev));
    if (tr && huge > 0) CHECK_OK(dev, clg_grad_scaler_set_state(clg_trainer_scaler(tr), huge, 0));
    for (int s = 0; tr && s < steps; s++) {
        float x[B * IN];
        int32_t y[B];
        batch(s, x, y);
        clg_scope_begin(dev);
        CHECK_OK(dev, clg_trainer_step(tr, clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(B, IN), x),
                                       clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(B), y), NULL));
        clg_scope_end(dev);
    }
    CHECK(weights(m, w) > 0);
    for (int i = 0; i < n; i++) CHECK(clg_tensor_dtype(p[i]) == CLG_F32);   /* master weights */
    *scale = tr && clg_trainer_scaler(tr) ? clg_grad_scaler_get_scale(clg_trainer_scaler(tr)) : 0;
    int64_t replays = clg_trainer_replays(tr);
    clg_trainer_free(tr);
    clg_optimizer_free(opt);
    clg_module_free(m);
    return replays;
}

/* clg_trainer_options.precision: the trainer's step is the recipe; bfloat16 steps are
 * captured and replayed bit for bit, float16's too (its skips decided on the device); an
 * overflow skips. */
static void trainer_mixed(clg_device *dev)
{
    float a[64], b[64], c[64], w0[64];
    double scale;
    clg_module *m = model(dev);
    int nw = weights(m, w0);
    clg_module_free(m);
    for (int k = 0; k < 2; k++) {
        clg_dtype d = k ? CLG_BF16 : CLG_F16;
        by_hand(dev, d, STEPS, a);
        with_trainer(dev, d, false, STEPS, 0, b, &scale);
        CHECK_MSG(!memcmp(a, b, (size_t)nw * sizeof *a), "%s trainer differs from the recipe", clg_dtype_name(d));
        CHECK_MSG(memcmp(a, w0, (size_t)nw * sizeof *a), "%s: no step taken", clg_dtype_name(d));
        CHECK(scale == (d == CLG_F16 ? 65536 : 0));
    }
    CHECK(with_trainer(dev, CLG_BF16, true, STEPS, 0, c, &scale) == STEPS - 2);
    CHECK_MSG(!memcmp(b, c, (size_t)nw * sizeof *b), "bfloat16: replayed steps differ from eager ones");
    /* float16's loss scaling decides on the device, so its steps replay too, bit for bit */
    with_trainer(dev, CLG_F16, false, STEPS, 0, b, &scale);
    CHECK(with_trainer(dev, CLG_F16, true, STEPS, 0, c, &scale) == STEPS - 2);
    CHECK_MSG(!memcmp(b, c, (size_t)nw * sizeof *b) && scale == 65536, "float16: replayed steps differ from eager "
              "ones (scale %g)", scale);
    m = model(dev);
    clg_tensor *p[4];
    int n = clg_module_parameters(m, p, 4, true);
    clg_optimizer *opt = clg_sgd_new(n, p, NULL);
    CHECK(clg_trainer_new(m, opt, &(clg_trainer_options){.precision = CLG_I32}) == NULL);
    clg_optimizer_free(opt);
    clg_module_free(m);
    /* a scale that overflows float16's gradients: the first step is skipped and the
     * scale halves; once it has backed off far enough, steps are taken (from 2^40, after
     * some 20 skips: 40 steps, not 120 from 2^100, which took 20 s of launches on llvmpipe) */
    with_trainer(dev, CLG_F16, false, 1, 0x1p100, b, &scale);
    CHECK_MSG(!memcmp(b, w0, (size_t)nw * sizeof *b) && scale == 0x1p99, "overflow: scale %g", scale);
    with_trainer(dev, CLG_F16, false, 40, 0x1p40, b, &scale);
    CHECK_MSG(memcmp(b, w0, (size_t)nw * sizeof *b) && scale < 0x1p30, "overflow: scale %g after 40 steps", scale);
    /* the same skips and back-offs inside replays */
    double replayed;
    CHECK(with_trainer(dev, CLG_F16, true, 40, 0x1p40, c, &replayed) == 38);
    CHECK_MSG(!memcmp(b, c, (size_t)nw * sizeof *b) && replayed == scale, "overflow: replays differ from eager "
              "steps (scale %g against %g)", replayed, scale);
}

int main(void)
{
    clg_device *dev = check_open_device();
    check_same_gemm_in_graphs(dev);   /* trainer_mixed compares replays bit for bit */
    same_as_unscaled(dev);
    overflow(dev);
    misuse(dev);
    trainer_mixed(dev);
    clg_device_close(dev);
    return check_report("test_grad_scaler");
}
