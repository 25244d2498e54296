/* The proof that weights stay on the device: a small MLP trains with SGD momentum,
 * Adam and a progress meter; after the first step every step moves exactly its input
 * batch and labels host-to-device, and at most the 4-byte loss back. In float16 mixed
 * precision, the loss scaler's check, skip and update stay on the device too: a
 * trainer's step that is not asked for its loss reads nothing back, eager or replayed,
 * whether its step is taken or skipped. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "clgrad/train.h"

enum { B = 32, D = 20, H = 16, C = 5 };

static void train(clg_device *dev, bool adam)
{
    clg_manual_seed(dev, 3);
    clg_module *m = clg_nn_sequential(dev, 4, (clg_module *[]){clg_nn_linear(dev, D, H, true), clg_nn_relu(dev),
                                                                clg_nn_dropout(dev, 0.1), clg_nn_linear(dev, H, C, true)});
    clg_tensor *params[4];
    int n = clg_module_parameters(m, params, 4, true);
    clg_optimizer *opt = adam ? clg_adam_new(n, params, &(clg_adam_options){.lr = 1e-3})
                              : clg_sgd_new(n, params, &(clg_sgd_options){.lr = 0.05, .momentum = 0.9});
    clg_meter *meter = clg_meter_new(dev);
    CHECK(m && opt && meter);
    float x[B * D];
    int32_t y[B];
    double first = 0, last = 0;
    for (int step = 0; step < 8; step++) {
        for (int i = 0; i < B * D; i++) x[i] = (float)((i * 7 + step * 13) % 11) / 11.0f - 0.5f;
        for (int i = 0; i < B; i++) y[i] = (i + step) % C;
        clg_device_transfers_reset(dev);
        clg_scope_begin(dev);
        clg_tensor *tx = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(B, D), x);
        clg_tensor *ty = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(B), y);
        clg_optimizer_zero_grad(opt);
        clg_tensor *logits = clg_module_forward(m, tx);
        clg_tensor *loss = clg_cross_entropy(logits, ty, CLG_REDUCE_MEAN);
        CHECK_OK(dev, clg_backward(loss, NULL));
        CHECK_OK(dev, clg_optimizer_step(opt));
        CHECK_OK(dev, clg_meter_add(meter, loss, logits, ty));
        double l = 0;
        CHECK_OK(dev, clg_tensor_item(loss, &l));   /* the one value a loop asks back for */
        clg_scope_end(dev);
        if (step == 0) first = l;
        last = l;
        clg_transfer_stats t = clg_device_transfers(dev);
        if (step > 0) {
            CHECK_MSG(t.h2d_bytes == sizeof x + sizeof y && t.h2d_count == 2, "step %d: %llu bytes in %llu copies up",
                      step, (unsigned long long)t.h2d_bytes, (unsigned long long)t.h2d_count);
            CHECK_MSG(t.d2h_bytes == 4 && t.d2h_count == 1, "step %d: %llu bytes in %llu copies down", step,
                      (unsigned long long)t.d2h_bytes, (unsigned long long)t.d2h_count);
        }
    }
    double mean_loss, acc;
    clg_device_transfers_reset(dev);
    CHECK_OK(dev, clg_meter_read(meter, &mean_loss, &acc));
    CHECK(clg_device_transfers(dev).d2h_bytes == 8);   /* the meter: loss and hits in one read */
    CHECK(clg_meter_samples(meter) == 8 * B && acc >= 0 && acc <= 1 && mean_loss > 0);
    CHECK_MSG(last < first, "%s: loss %g -> %g", adam ? "adam" : "sgd", first, last);
    clg_meter_free(meter);
    clg_optimizer_free(opt);
    clg_module_free(m);
}

/* clg_trainer_step in float16 mixed precision (with Adam, clipping: an explicit
 * unscale), `graph` or not: after the first two steps (state, the capture), each step
 * moves x and y up and nothing down. The first steps overflow (scale 2^40) and are
 * skipped on the device until the scale has backed off, which the end checks by reading
 * the scale and the optimizer's count once (the device's: skips do not count). */
static void train_mixed(clg_device *dev, bool graph)
{
    clg_manual_seed(dev, 3);
    clg_module *m = clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_linear(dev, D, H, true), clg_nn_relu(dev),
                                                                clg_nn_linear(dev, H, C, true)});
    clg_tensor *params[4];
    int n = clg_module_parameters(m, params, 4, true);
    clg_optimizer *opt = clg_adam_new(n, params, &(clg_adam_options){.lr = 1e-3});
    clg_trainer *tr = opt ? clg_trainer_new(m, opt, &(clg_trainer_options){.graph = graph, .clip_grad_norm = 1,
                                                                           .precision = CLG_F16})
                          : NULL;
    CHECK_MSG(tr != NULL, "%s", clg_device_error(dev));
    if (tr) CHECK_OK(dev, clg_grad_scaler_set_state(clg_trainer_scaler(tr), 0x1p40, 0));
    float x[B * D];
    int32_t y[B];
    enum { STEPS = 40 };
    for (int step = 0; tr && step < STEPS; step++) {
        for (int i = 0; i < B * D; i++) x[i] = (float)((i * 7 + step * 13) % 11) / 11.0f - 0.5f;
        for (int i = 0; i < B; i++) y[i] = (i + step) % C;
        clg_device_transfers_reset(dev);
        clg_scope_begin(dev);
        CHECK_OK(dev, clg_trainer_step(tr, clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(B, D), x),
                                       clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(B), y), NULL));
        clg_scope_end(dev);
        clg_transfer_stats t = clg_device_transfers(dev);
        if (step < 2) continue;
        CHECK_MSG(t.h2d_bytes == sizeof x + sizeof y && t.h2d_count == 2, "mixed step %d: %llu bytes in %llu copies up",
                  step, (unsigned long long)t.h2d_bytes, (unsigned long long)t.h2d_count);
        CHECK_MSG(t.d2h_bytes == 0 && t.d2h_count == 0, "mixed step %d: %llu bytes in %llu copies down", step,
                  (unsigned long long)t.d2h_bytes, (unsigned long long)t.d2h_count);
    }
    if (graph) CHECK(clg_trainer_replays(tr) == STEPS - 2);
    /* every skipped step halved the scale (none grows it within 2000 steps), and both
     * kinds happened */
    double scale = tr ? clg_grad_scaler_get_scale(clg_trainer_scaler(tr)) : 0;
    int64_t taken = clg_optimizer_steps(opt);
    CHECK_MSG(taken > 0 && taken < STEPS && scale == ldexp(1, 40 - (int)(STEPS - taken)), "scale %g, %lld steps taken",
              scale, (long long)taken);
    clg_trainer_free(tr);
    clg_optimizer_free(opt);
    clg_module_free(m);
}

int main(void)
{
    clg_device *dev = check_open_device();
    train(dev, false);
    train(dev, true);
    train_mixed(dev, false);
    train_mixed(dev, true);
    CHECK(clg_tensor_live_count(dev) == 0);
    clg_device_close(dev);
    return check_report("test_train_transfers");
}
