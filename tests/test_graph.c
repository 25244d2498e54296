/* Graph capture and replay (clgrad/graph.h).
 *
 * The same training run twice from the same weights and seed: once eagerly, once with
 * the first step eager, the second captured and the rest replayed, feeding each batch.
 * Every step's loss and every weight at the end must be the same bits, the optimizer's
 * and the meter's counts the same: an MLP with dropout under SGD with momentum (the
 * rate changed half-way) and under Adam, a small CNN, and a tiny GPT with dropout (in
 * the fused attention and plain). Also: the planned memory,
 * feeding from the host, elementwise pairs as one kernel, and the errors: a shape change, a parameter freed after the
 * capture, a host read inside one, state carried by replacing a tensor, a second
 * capture, an unknown input, and a backward captured without its forward. */
#include <math.h>
#include <string.h>

#include "check.h"

#define BATCH 16
#define STEPS_FULL 12

static int small(void) { return getenv("CLG_TEST_SMALL") != NULL; }

/* Deterministic batches: pixels and labels from a counter, the label marked in the
 * sample (value 3 at its index) so that the models learn within the runs' few steps. */
static void batch_data(int step, int cnn, float *x, int32_t *y)
{
    uint32_t s = 2654435761u * (uint32_t)(step + 1);
    int per = cnn ? 1 * 12 * 12 : 64;
    for (int i = 0; i < BATCH * per; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    for (int i = 0; i < BATCH; i++) {
        s = s * 1664525u + 1013904223u;
        y[i] = (int32_t)((s >> 16) % 10);
        x[i * per + y[i]] = 3.0f;
    }
}

static clg_module *make_model(clg_device *dev, int cnn)
{
    clg_manual_seed(dev, 42);   /* both runs start from the same weights */
    if (!cnn)
        return clg_nn_sequential(dev, 6, (clg_module *[]){clg_nn_linear(dev, 64, 48, true), clg_nn_relu(dev),
                                                           clg_nn_dropout(dev, 0.25), clg_nn_linear(dev, 48, 32, true),
                                                           clg_nn_relu(dev), clg_nn_linear(dev, 32, 10, true)});
    clg_conv2d_params pad = {.padding = {1, 1}};
    return clg_nn_sequential(dev, 6, (clg_module *[]){clg_nn_conv2d(dev, 1, 4, 3, 3, &pad, true), clg_nn_relu(dev),
                                                       clg_nn_max_pool2d(dev, 2, 2, 0), clg_nn_flatten(dev),
                                                       clg_nn_dropout(dev, 0.1), clg_nn_linear(dev, 144, 10, true)});
}

typedef struct run {
    clg_module *model;
    clg_optimizer *opt;
    clg_meter *meter;
    float losses[STEPS_FULL];
} run;

static clg_optimizer *make_opt(clg_module *m, int adam)
{
    clg_tensor *p[8];
    int n = clg_module_parameters(m, p, 8, true);
    if (adam) return clg_adam_new(n, p, &(clg_adam_options){.lr = 3e-3, .weight_decay = 1e-4});
    return clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4});
}

/* One ordinary step; the loss in the caller's scope. */
static clg_tensor *step(run *r, clg_tensor *x, clg_tensor *y)
{
    clg_optimizer_zero_grad(r->opt);
    clg_tensor *logits = clg_module_forward(r->model, x);
    clg_tensor *loss = clg_cross_entropy(logits, y, CLG_REDUCE_MEAN);
    if (!loss || clg_backward(loss, NULL) || clg_optimizer_step(r->opt) || clg_meter_add(r->meter, loss, logits, y))
        return NULL;
    return loss;
}

static const int64_t XS_CNN[4] = {BATCH, 1, 12, 12}, XS_MLP[2] = {BATCH, 64};
static const int64_t *x_shape(int cnn) { return cnn ? XS_CNN : XS_MLP; }

static void setup(clg_device *dev, run *r, int cnn, int adam)
{
    memset(r, 0, sizeof *r);
    r->model = make_model(dev, cnn);
    r->opt = r->model ? make_opt(r->model, adam) : NULL;
    r->meter = clg_meter_new(dev);
    CHECK_MSG(r->model && r->opt && r->meter, "%s", clg_device_error(dev));
    clg_manual_seed(dev, 7);    /* and draw the same dropout masks */
}

static void teardown(run *r)
{
    clg_meter_free(r->meter);
    clg_optimizer_free(r->opt);
    clg_module_free(r->model);
}

static void eager_run(clg_device *dev, run *r, int cnn, int steps)
{
    static float x[BATCH * 144];
    int32_t y[BATCH];
    int xd = cnn ? 4 : 2;
    for (int s = 0; s < steps; s++) {
        if (s == steps / 2) clg_optimizer_set_lr(r->opt, clg_optimizer_lr(r->opt) / 2);
        batch_data(s, cnn, x, y);
        clg_scope_begin(dev);
        clg_tensor *tx = clg_tensor_from_host(dev, CLG_F32, xd, x_shape(cnn), x);
        clg_tensor *ty = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(BATCH), y);
        clg_tensor *loss = step(r, tx, ty);
        CHECK_OK(dev, loss ? clg_tensor_to_host(loss, &r->losses[s], sizeof(float)) : clg_device_last_status(dev));
        clg_scope_end(dev);
    }
}

/* Steps before `at` eager, step `at` captured (0: the first, which makes the
 * optimizer's state), the rest replayed: feeding device tensors made from the batch
 * (or, with from_host, writing the batch into the graph's inputs). */
static clg_graph *graph_run(clg_device *dev, run *r, int cnn, int steps, bool from_host, int at)
{
    static float x[BATCH * 144];
    int32_t y[BATCH];
    int xd = cnn ? 4 : 2;
    clg_graph *g = NULL;
    for (int s = 0; s < steps; s++) {
        if (s == steps / 2) clg_optimizer_set_lr(r->opt, clg_optimizer_lr(r->opt) / 2);
        batch_data(s, cnn, x, y);
        clg_scope_begin(dev);
        clg_tensor *tx = NULL, *ty = NULL, *loss = NULL;
        if (s <= at || !from_host) {
            tx = clg_tensor_from_host(dev, CLG_F32, xd, x_shape(cnn), x);
            ty = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(BATCH), y);
        }
        if (s <= at) {
            if (s == at) CHECK_OK(dev, clg_graph_begin(dev));
            loss = step(r, tx, ty);
            CHECK_MSG(loss != NULL, "%s", clg_device_error(dev));
            if (s == at) {
                CHECK_OK(dev, clg_graph_end(dev, &g));
                CHECK_OK(dev, clg_graph_input(g, "x", tx));
                CHECK_OK(dev, clg_graph_input(g, "y", ty));
                CHECK_OK(dev, clg_graph_output(g, "loss", loss));
            }
        } else if (g) {
            if (from_host) {
                CHECK_OK(dev, clg_graph_feed_host(g, "x", x, sizeof(float) * (size_t)(cnn ? BATCH * 144 : BATCH * 64)));
                CHECK_OK(dev, clg_graph_feed_host(g, "y", y, sizeof y));
            } else {
                CHECK_OK(dev, clg_graph_feed(g, "x", tx));
                CHECK_OK(dev, clg_graph_feed(g, "y", ty));
            }
            CHECK_OK(dev, clg_graph_replay(g));
            loss = clg_graph_get(g, "loss");
        }
        CHECK_OK(dev, loss ? clg_tensor_to_host(loss, &r->losses[s], sizeof(float)) : clg_device_last_status(dev));
        clg_scope_end(dev);
    }
    return g;
}

static bool same_params(clg_module *a, clg_module *b)
{
    clg_tensor *pa[32], *pb[32];
    int n = clg_module_parameters(a, pa, 32, false), nb = clg_module_parameters(b, pb, 32, false);
    if (n != nb || n > 32) return false;
    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)clg_tensor_numel(pa[i]) * sizeof(float);
        float *ha = malloc(bytes), *hb = malloc(bytes);
        bool same = ha && hb && clg_tensor_to_host(pa[i], ha, bytes) == CLG_OK &&
                    clg_tensor_to_host(pb[i], hb, bytes) == CLG_OK && !memcmp(ha, hb, bytes);
        free(ha);
        free(hb);
        if (!same) return false;
    }
    return true;
}

/* flat: the graph's optimizer flattened first (clg_optimizer_flatten: one update launch
 * for all parameters, replayed), against the eager run's launch per parameter. */
static void test_bit_identical(clg_device *dev, int cnn, int adam, bool from_host, int at, bool flat)
{
    /* The capture at step 0 or 1, the rate halved halfway, replayed after: 12 steps (the
     * CNN 8; 30 and 16 took 25 s of launches on llvmpipe), under Oclgrind 4. */
    int steps = small() ? 4 : cnn ? 8 : STEPS_FULL;
    run a, b;
    setup(dev, &a, cnn, adam);
    eager_run(dev, &a, cnn, steps);
    setup(dev, &b, cnn, adam);
    if (flat) CHECK_OK(dev, clg_optimizer_flatten(b.opt));
    clg_graph *g = graph_run(dev, &b, cnn, steps, from_host, at);
    CHECK_MSG(g != NULL, "%s", clg_device_error(dev));
    int first_diff = -1;
    for (int s = 0; s < steps && first_diff < 0; s++)
        if (memcmp(&a.losses[s], &b.losses[s], sizeof(float))) first_diff = s;
    CHECK_MSG(first_diff < 0, "%s %s%s captured at %d: the loss of step %d differs: eager %.9g, graph %.9g",
              cnn ? "cnn" : "mlp", adam ? "adam" : "sgd", flat ? " flat" : "", at, first_diff, a.losses[first_diff < 0 ? 0 : first_diff],
              b.losses[first_diff < 0 ? 0 : first_diff]);
    CHECK_MSG(a.losses[steps - 1] < a.losses[0], "training lowered the loss: %g -> %g", a.losses[0], a.losses[steps - 1]);
    CHECK_MSG(same_params(a.model, b.model), "%s %s: the weights after %d steps differ", cnn ? "cnn" : "mlp",
              adam ? "adam" : "sgd", steps);
    CHECK(clg_optimizer_steps(a.opt) == steps && clg_optimizer_steps(b.opt) == steps);
    CHECK(clg_meter_samples(a.meter) == clg_meter_samples(b.meter));
    double la, lb, aa, ab;
    CHECK_OK(dev, clg_meter_read(a.meter, &la, &aa));
    CHECK_OK(dev, clg_meter_read(b.meter, &lb, &ab));
    CHECK(la == lb && aa == ab);
    if (g) {
        clg_graph_stats st = clg_graph_get_stats(g);
        CHECK_MSG(st.refreshed >= 1 && st.host_steps == 2, "refreshed %d, host steps %d", st.refreshed, st.host_steps);
        /* each gradient reaches its .grad through a copy that the graph leaves out, but the
         * linear and convolution layers' weights and biases (float32), which their backward
         * writes there itself */
        int np = clg_module_parameters(b.model, NULL, 0, true), direct = 0;
        for (int i = 0; i < clg_module_child_count(b.model); i++) {
            clg_module *c = clg_module_child_at(b.model, i);
            if (!strcmp(clg_module_type(c), "Linear") || !strcmp(clg_module_type(c), "Conv2d"))
                direct += clg_module_parameters(c, NULL, 0, true);
        }
        CHECK_MSG(st.removed == np - direct, "%d copies left out, want one per parameter but the linear and "
                  "convolution layers' %d (%d)", st.removed, direct, np - direct);
        /* the MLP's two ReLUs after linear layers fold into their GEMMs where the packed
         * engine (which notes its final writes) runs them */
        const char *params = getenv("CLG_PARAMS");
        bool packed = params && strstr(params, "gemm=packed");
        CHECK_MSG(cnn || st.fused == 2 || (!packed && st.fused == 0), "%d ReLUs fused, want 2%s", st.fused,
                  packed ? "" : " (or 0 on an engine that does not note its writes)");
        CHECK_MSG(st.planned > 0 && st.slots < st.planned && st.slot_bytes <= st.planned_bytes,
                  "planned %d buffers (%llu bytes) into %d slots (%llu bytes)", st.planned,
                  (unsigned long long)st.planned_bytes, st.slots, (unsigned long long)st.slot_bytes);
    }
    clg_graph_free(g);
    teardown(&a);
    teardown(&b);
}

/* A capture of one step of the MLP, for the error cases. */
static clg_graph *capture_one(clg_device *dev, run *r, clg_tensor **x)
{
    static float hx[BATCH * 64];
    int32_t hy[BATCH];
    batch_data(0, 0, hx, hy);
    *x = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(BATCH, 64), hx);
    clg_tensor *y = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(BATCH), hy);
    clg_graph *g = NULL;
    CHECK_MSG(step(r, *x, y) != NULL, "%s", clg_device_error(dev));   /* the eager first step */
    CHECK_OK(dev, clg_graph_begin(dev));
    CHECK_MSG(step(r, *x, y) != NULL, "%s", clg_device_error(dev));
    CHECK_OK(dev, clg_graph_end(dev, &g));
    if (g) CHECK_OK(dev, clg_graph_input(g, "x", *x));
    return g;
}

static void test_errors(clg_device *dev)
{
    run r;
    setup(dev, &r, 0, 0);
    clg_scope_begin(dev);
    clg_tensor *x;
    clg_graph *g = capture_one(dev, &r, &x);
    if (!g) return;
    /* another shape */
    clg_tensor *x2 = clg_zeros(dev, CLG_F32, CLG_SHAPE(BATCH / 2, 64));
    CHECK(clg_graph_feed(g, "x", x2) == CLG_ERR_SHAPE);
    CHECK_MSG(strstr(clg_device_error(dev), "captured with [16, 64] float32"), "%s", clg_device_error(dev));
    clg_tensor *x3 = clg_zeros(dev, CLG_I32, CLG_SHAPE(BATCH, 64));
    CHECK(clg_graph_feed(g, "x", x3) == CLG_ERR_SHAPE);
    CHECK(clg_graph_feed(g, "z", x) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_graph_feed_host(g, "x", x, 3) == CLG_ERR_SHAPE);
    CHECK(clg_graph_input(g, "x", x) == CLG_ERR_INVALID_ARGUMENT);   /* taken */
    clg_tensor *strange = clg_zeros(dev, CLG_F32, CLG_SHAPE(3));
    CHECK(clg_graph_output(g, "w", strange) == CLG_ERR_INVALID_ARGUMENT);   /* not the step's */
    CHECK_OK(dev, clg_graph_replay(g));
    /* a second capture while one is open */
    CHECK_OK(dev, clg_graph_begin(dev));
    CHECK(clg_graph_begin(dev) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_graph_replay(g) == CLG_ERR_INVALID_ARGUMENT);
    clg_graph *none = NULL;
    CHECK(clg_graph_end(dev, &none) == CLG_ERR_INVALID_ARGUMENT && !none);   /* nothing enqueued */
    CHECK_MSG(strstr(clg_device_error(dev), "nothing was enqueued"), "%s", clg_device_error(dev));
    /* the model and optimizer go (their parameters with them): replay must refuse */
    clg_scope_end(dev);
    teardown(&r);
    CHECK(clg_graph_replay(g) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "replaced or freed since the capture"), "%s", clg_device_error(dev));
    clg_graph_free(g);

    /* a host read inside the capture */
    clg_scope_begin(dev);
    clg_tensor *a = clg_ones(dev, CLG_F32, CLG_SHAPE(4));
    CHECK_OK(dev, clg_graph_begin(dev));
    double v;
    CHECK_OK(dev, clg_tensor_item(clg_sum(a, 0, NULL, false), &v));
    CHECK(clg_graph_end(dev, &g) == CLG_ERR_INVALID_ARGUMENT && !g);
    CHECK_MSG(strstr(clg_device_error(dev), "read 4 bytes back to the host"), "%s", clg_device_error(dev));
    /* state carried by replacing a tensor made before the capture */
    clg_tensor *h = clg_ones(dev, CLG_F32, CLG_SHAPE(4));
    clg_tensor_keep(h);
    CHECK_OK(dev, clg_graph_begin(dev));
    clg_tensor *h2 = clg_mul_scalar(h, 0.5);
    clg_tensor_keep(h2);
    clg_tensor_free(h);
    h = h2;
    CHECK(clg_graph_end(dev, &g) == CLG_ERR_INVALID_ARGUMENT && !g);
    CHECK_MSG(strstr(clg_device_error(dev), "replay would read stale values"), "%s", clg_device_error(dev));
    clg_tensor_free(h);
    CHECK(clg_graph_end(dev, &g) == CLG_ERR_INVALID_ARGUMENT);   /* none open */
    clg_scope_end(dev);
}

/* Logits [B, T, V] and tokens [B, T], taken flat. */
static clg_tensor *flat_loss(void *user, clg_tensor **out, clg_tensor **y)
{
    (void)user;
    *out = clg_reshape(*out, CLG_SHAPE(-1, 16));
    *y = clg_reshape(*y, CLG_SHAPE(-1));
    return clg_cross_entropy(*out, *y, CLG_REDUCE_MEAN);
}

/* One training step of tr on B sequences of T + 1 tokens below 16, token i of the batch
 * (i * c[0] + c[1] + (i / (T + 1)) * c[2]) % 16: inputs the first T, targets the last T.
 * The loss to *loss. */
static void token_step(clg_device *dev, clg_trainer *tr, int B, int T, const int c[3], float *loss)
{
    int32_t tok[256];
    CHECK_MSG(B * (T + 1) <= 256, "token_step: %d x %d tokens", B, T + 1);
    for (int i = 0; i < B * (T + 1) && i < 256; i++) tok[i] = (int32_t)((i * c[0] + c[1] + (i / (T + 1)) * c[2]) % 16);
    clg_scope_begin(dev);
    clg_tensor *all = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(B, T + 1), tok);
    clg_tensor *x = clg_contiguous(clg_narrow(all, 1, 0, T)), *y = clg_contiguous(clg_narrow(all, 1, 1, T));
    clg_tensor *l = NULL;
    CHECK_OK(dev, clg_trainer_step(tr, x, y, &l));
    CHECK_OK(dev, l ? clg_tensor_to_host(l, loss, sizeof(float)) : clg_device_last_status(dev));
    clg_scope_end(dev);
}

/* A stateful LSTM language model through clg_trainer, eager and in graph mode. Its
 * state is dropped before step 1 (the capture then starts from no state, as after an
 * evaluation) and before step 9 (the graph goes stale and is captured again): the
 * losses and weights must be the same bits, with 12 of 16 steps replayed (under
 * Oclgrind 8 steps, the second drop before step 5, 4 replayed). */
static void test_stateful_rnn(clg_device *dev)
{
    enum { B = 4, T = 8, MAX_STEPS = 16 };
    const int STEPS = small() ? 8 : MAX_STEPS;
    float losses[2][MAX_STEPS];
    clg_module *models[2];
    int64_t replays = 0;
    for (int mode = 0; mode < 2; mode++) {
        clg_manual_seed(dev, 5);
        clg_rnn_options ro = clg_rnn_defaults();
        ro.batch_first = true;
        clg_module *rnn = clg_nn_lstm(dev, 8, 12, &ro);
        clg_module *m = models[mode] = clg_nn_sequential(
            dev, 3, (clg_module *[]){clg_nn_embedding(dev, 16, 8), rnn, clg_nn_linear(dev, 12, 16, true)});
        clg_tensor *p[8];
        int n = m ? clg_module_parameters(m, p, 8, true) : 0;
        clg_optimizer *opt = m ? clg_adam_new(n, p, &(clg_adam_options){.lr = 1e-2}) : NULL;
        clg_trainer *tr = opt ? clg_trainer_new(m, opt, &(clg_trainer_options){.graph = mode == 1, .clip_grad_norm = 1.0,
                                                                               .loss = flat_loss})
                              : NULL;
        CHECK_MSG(tr && clg_rnn_set_stateful(rnn, true) == CLG_OK, "%s", clg_device_error(dev));
        if (!tr) return;
        for (int s = 0; s < STEPS; s++) {
            if (s == 1 || s == STEPS / 2 + 1) CHECK_OK(dev, clg_rnn_set_stateful(rnn, true));   /* the state dropped */
            token_step(dev, tr, B, T, (int[3]){7, s * 3, 5}, &losses[mode][s]);
        }
        if (mode == 1) replays = clg_trainer_replays(tr);
        /* the graph's trainer flattened the optimizer before its capture (one update launch) */
        CHECK_MSG(clg_optimizer_is_flat(opt) == (mode == 1), "mode %d: flat %d", mode, clg_optimizer_is_flat(opt));
        clg_trainer_free(tr);
        clg_optimizer_free(opt);
    }
    for (int s = 0; s < STEPS; s++)
        CHECK_MSG(!memcmp(&losses[0][s], &losses[1][s], sizeof(float)), "lstm: the loss of step %d differs: eager %.9g, "
                  "graph %.9g", s, losses[0][s], losses[1][s]);
    CHECK_MSG(losses[0][STEPS - 1] < losses[0][0], "training lowered the loss: %g -> %g", losses[0][0],
              losses[0][STEPS - 1]);
    CHECK_MSG(replays == STEPS - 4, "%lld of %d steps replayed, want %d", (long long)replays, STEPS, STEPS - 4);
    CHECK_MSG(same_params(models[0], models[1]), "lstm: the weights after %d steps differ", STEPS);
    clg_module_free(models[0]);
    clg_module_free(models[1]);
}

/* A tiny GPT with dropout 0.2: the fused attention's on its weights, plain dropout on
 * the embeddings and the residual branches. Each step draws new masks and each backward
 * draws its forward's again, so that eager and replayed steps agree bit for bit only if
 * every replayed launch draws where the eager one did (all steps but the first two
 * replayed). */
static void test_gpt_dropout(clg_device *dev)
{
    enum { B = 2, T = 8, STEPS = 6 };
    float losses[2][STEPS];
    clg_module *models[2];
    int64_t replays = 0;
    for (int mode = 0; mode < 2; mode++) {
        clg_manual_seed(dev, 11);
        clg_gpt_config c = clg_gpt_defaults();
        c.vocab_size = 16;
        c.block_size = T;
        c.n_layer = 1;
        c.n_head = 2;
        c.n_embd = 16;
        c.dropout = 0.2;
        clg_module *m = models[mode] = clg_nn_gpt(dev, &c);
        clg_tensor *p[32];
        int n = m ? clg_module_parameters(m, p, 32, true) : 0;
        clg_optimizer *opt = m ? clg_adamw_new(n, p, &(clg_adam_options){.lr = 1e-2}) : NULL;
        clg_trainer *tr = opt ? clg_trainer_new(m, opt, &(clg_trainer_options){.graph = mode == 1, .loss = flat_loss})
                              : NULL;
        CHECK_MSG(tr != NULL, "%s", clg_device_error(dev));
        if (!tr) return;
        for (int s = 0; s < STEPS; s++) {
            token_step(dev, tr, B, T, (int[3]){5, s * 3, 7}, &losses[mode][s]);
        }
        if (mode == 1) replays = clg_trainer_replays(tr);
        /* the graph's trainer flattened the optimizer before its capture (one update launch) */
        CHECK_MSG(clg_optimizer_is_flat(opt) == (mode == 1), "mode %d: flat %d", mode, clg_optimizer_is_flat(opt));
        clg_trainer_free(tr);
        clg_optimizer_free(opt);
    }
    for (int s = 0; s < STEPS; s++)
        CHECK_MSG(!memcmp(&losses[0][s], &losses[1][s], sizeof(float)), "gpt with dropout: the loss of step %d "
                  "differs: eager %.9g, graph %.9g", s, losses[0][s], losses[1][s]);
    CHECK_MSG(replays == STEPS - 2, "%lld of %d steps replayed, want %d", (long long)replays, STEPS, STEPS - 2);
    CHECK_MSG(same_params(models[0], models[1]), "gpt with dropout: the weights after %d steps differ", STEPS);
    clg_module_free(models[0]);
    clg_module_free(models[1]);
}

/* A backward captured without its forward cannot draw its forward's masks at replay:
 * dropout's and attention's backward fail, and so does the capture. */
static void test_backward_without_forward(clg_device *dev)
{
    for (int attention = 0; attention < 2; attention++) {
        clg_scope_begin(dev);
        clg_tensor *x = clg_rand(dev, CLG_F32, CLG_SHAPE(1, 4, 8), -1, 1);
        CHECK_OK(dev, clg_tensor_set_requires_grad(x, true));
        clg_tensor *y = attention ? clg_scaled_dot_product_attention(x, x, x, NULL, false, 0.5, 0)
                                  : clg_dropout(x, 0.5, true);
        clg_tensor *loss = clg_sum(y, 0, NULL, false);
        CHECK_MSG(loss != NULL, "%s", clg_device_error(dev));
        CHECK_OK(dev, clg_graph_begin(dev));
        CHECK(clg_backward(loss, NULL) == CLG_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(clg_device_error(dev), "a backward captured without its forward"), "%s",
                  clg_device_error(dev));
        clg_graph *g = NULL;
        CHECK(clg_graph_end(dev, &g) == CLG_ERR_INVALID_ARGUMENT && !g);
        CHECK_MSG(strstr(clg_device_error(dev), "a backward captured without its forward"), "%s",
                  clg_device_error(dev));
        clg_scope_end(dev);
    }
}

/* Elementwise pairs (capture_plan.c, fuse_chains): a step of elementwise ops on an
 * input x and a tensor w, and the gradient of their sum with respect to both
 * (clg_grad), replayed on new inputs against the same step run eagerly: the same bits,
 * as one kernel computes each element as the two did. t = x w is read by the next op
 * and later again (stored); u = t + 0.5 only by the next (never stored). With
 * CLG_GRAPH_SKIP=chains, no pair. */
static void chain_step(clg_tensor *x, clg_tensor *w, clg_tensor **y, clg_tensor **gx)
{
    clg_tensor *t = clg_mul(x, w), *u = clg_add_scalar(t, 0.5);
    clg_tensor *v = clg_mul(clg_exp(clg_mul_scalar(u, 0.25)), t);   /* t read again */
    *y = clg_relu(clg_sub(v, w));
    clg_tensor *loss = clg_sum(*y, 0, NULL, false), *g[2] = {NULL, NULL};
    CHECK_OK(clg_tensor_device(x), clg_grad(1, &loss, NULL, 2, (clg_tensor *const[]){x, w}, g));
    *gx = clg_add(g[0], g[1]);
}

static void test_elementwise_chains(clg_device *dev)
{
    enum { N = 1000, STEPS = 4 };
    static float hx[STEPS][N], hw[N], want[STEPS][2][N], got[2][N];
    for (int i = 0; i < N; i++) {
        hw[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
        for (int s = 0; s < STEPS; s++) hx[s][i] = (float)((i * 13 + s * 7) % 97) / 48.0f - 1.0f;
    }
    clg_scope_begin(dev);
    clg_tensor *w = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), hw);
    for (int s = 0; s < STEPS; s++) {   /* eagerly */
        clg_tensor *x = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), hx[s]), *y, *gx;
        CHECK_OK(dev, clg_tensor_set_requires_grad(x, true) || clg_tensor_set_requires_grad(w, true));
        chain_step(x, w, &y, &gx);
        CHECK_OK(dev, clg_tensor_to_host(y, want[s][0], sizeof want[s][0]) ||
                          clg_tensor_to_host(gx, want[s][1], sizeof want[s][1]));
    }
    for (int skip = 0; skip < 2; skip++) {
        if (skip) setenv("CLG_GRAPH_SKIP", "chains", 1);
        clg_tensor *x = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), hx[0]), *y, *gx;
        CHECK_OK(dev, clg_tensor_set_requires_grad(x, true));
        clg_graph *g = NULL;
        CHECK_OK(dev, clg_graph_begin(dev));
        chain_step(x, w, &y, &gx);
        CHECK_OK(dev, clg_graph_end(dev, &g));
        CHECK_MSG(g != NULL, "%s", clg_device_error(dev));
        if (!g) break;
        CHECK_OK(dev, clg_graph_input(g, "x", x) || clg_graph_output(g, "y", y) || clg_graph_output(g, "gx", gx));
        for (int s = 0; s < STEPS; s++) {
            CHECK_OK(dev, clg_graph_feed_host(g, "x", hx[s], sizeof hx[s]) || clg_graph_replay(g));
            CHECK_OK(dev, clg_tensor_to_host(clg_graph_get(g, "y"), got[0], sizeof got[0]) ||
                              clg_tensor_to_host(clg_graph_get(g, "gx"), got[1], sizeof got[1]));
            for (int k = 0; k < 2; k++)
                CHECK_MSG(!memcmp(got[k], want[s][k], sizeof got[k]), "elementwise chains%s, step %d: %s differs",
                          skip ? " (none fused)" : "", s, k ? "the gradient" : "y");
        }
        /* forward: (mul, add_scalar), (mul_scalar, exp), (mul, sub); then the relu and the
         * gradients' own pairs: at least those three */
        clg_graph_stats st = clg_graph_get_stats(g);
        CHECK_MSG(skip ? st.chains == 0 : st.chains >= 3, "%d elementwise pairs fused%s", st.chains,
                  skip ? " with CLG_GRAPH_SKIP=chains" : ", want 3 or more");
        clg_graph_free(g);
    }
    unsetenv("CLG_GRAPH_SKIP");
    clg_scope_end(dev);
}

/* A device whose products go to CLBlast: a graph cannot record CLBlast's launches, so
 * its products run on the tiled kernels (a replay once left them out, silently). Eager
 * and replayed steps then differ by float32 rounding only. */
static void test_clblast_graph(void)
{
    clg_device *dev = check_open_device();
    CHECK_OK(dev, clg_device_set_param(dev, "gemm", "clblast"));
    /* Under Oclgrind (CLG_TEST_SMALL) every CLBlast kernel is simulated: 4 steps there */
    const int STEPS = small() ? 4 : 12;
    run a, b;
    setup(dev, &a, 0, 1);
    eager_run(dev, &a, 0, STEPS);
    setup(dev, &b, 0, 1);
    clg_graph *g = graph_run(dev, &b, 0, STEPS, false, 1);
    CHECK_MSG(g != NULL, "%s", clg_device_error(dev));
    for (int s = 0; s < STEPS; s++)
        CHECK_MSG(fabsf(a.losses[s] - b.losses[s]) <= 1e-4f * fabsf(a.losses[s]), "CLBlast device: the loss of "
                  "step %d: eager %.9g, graph %.9g", s, a.losses[s], b.losses[s]);
    clg_tensor *pa[8], *pb[8];
    int n = clg_module_parameters(a.model, pa, 8, false);
    CHECK(n == clg_module_parameters(b.model, pb, 8, false));
    for (int i = 0; i < n; i++) {
        int64_t k = clg_tensor_numel(pa[i]);
        float *wa = malloc((size_t)k * sizeof *wa), *wb = malloc((size_t)k * sizeof *wb);
        CHECK_OK(dev, clg_tensor_to_host(pa[i], wa, (size_t)k * sizeof *wa));
        CHECK_OK(dev, clg_tensor_to_host(pb[i], wb, (size_t)k * sizeof *wb));
        double d2 = 0, n2 = 0;
        for (int64_t j = 0; j < k; j++) d2 += (double)(wa[j] - wb[j]) * (wa[j] - wb[j]), n2 += (double)wa[j] * wa[j];
        CHECK_MSG(d2 <= 1e-10 * n2, "CLBlast device: parameter %d differs by %g of its norm", i, sqrt(d2 / n2));
        free(wa);
        free(wb);
    }
    clg_graph_free(g);
    teardown(&a);
    teardown(&b);
    clg_device_close(dev);
}

/* The host's BLAS as the engine (gemm = host: native.c, gemm_host.c). A capture records
 * its calls as it records launches and replays them on the planned buffers: the same
 * bits as the eager steps. A device that runs no host functions (rusticl) refuses the
 * engine with an error that says why. */
static void test_host_graph(void)
{
    if (small()) return;   /* Oclgrind runs no host functions: rusticl checks the refusal */
    clg_device *dev = check_open_device();
    CHECK_OK(dev, clg_device_set_param(dev, "gemm", "host"));
    clg_scope_begin(dev);
    clg_tensor *probe = clg_matmul(clg_ones(dev, CLG_F32, CLG_SHAPE(3, 4)), clg_ones(dev, CLG_F32, CLG_SHAPE(4, 5)));
    float v[15] = {0};
    bool runs = probe && clg_tensor_to_host(probe, v, sizeof v) == CLG_OK;
    clg_scope_end(dev);
    if (!runs) {
        CHECK_MSG(strstr(clg_device_error(dev), "host functions") || strstr(clg_device_error(dev), "CBLAS"),
                  "gemm = host refused without saying why: %s", clg_device_error(dev));
        clg_device_close(dev);
        return;
    }
    CHECK_MSG(v[0] == 4 && v[14] == 4, "gemm = host: 3x4 ones times 4x5 ones gave %g ... %g, want 4", v[0], v[14]);
    const int STEPS = STEPS_FULL;   /* run.losses holds that many */
    run a, b;
    setup(dev, &a, 0, 1);
    eager_run(dev, &a, 0, STEPS);
    setup(dev, &b, 0, 1);
    clg_graph *g = graph_run(dev, &b, 0, STEPS, false, 1);
    CHECK_MSG(g != NULL, "%s", clg_device_error(dev));
    for (int s = 0; s < STEPS; s++)
        CHECK_MSG(!memcmp(&a.losses[s], &b.losses[s], sizeof(float)), "gemm = host: the loss of step %d: eager %.9g, "
                  "graph %.9g", s, a.losses[s], b.losses[s]);
    CHECK_MSG(same_params(a.model, b.model), "gemm = host: the weights after %d steps differ", STEPS);
    clg_graph_free(g);
    teardown(&a);
    teardown(&b);
    clg_device_close(dev);
}

int main(void)
{
    test_clblast_graph();
    test_host_graph();
    clg_device *dev = check_open_device();
    check_same_gemm_in_graphs(dev);
    test_bit_identical(dev, 0, 0, false, 1, false);   /* MLP with dropout, SGD with momentum */
    clg_pool_stats before = clg_device_pool_stats(dev);   /* after the kernels' error word was made */
    test_bit_identical(dev, 0, 1, true, 1, false);    /* Adam, batches written into the graph */
    test_bit_identical(dev, 1, 0, false, 1, false);   /* CNN */
    test_bit_identical(dev, 0, 0, false, 0, false);   /* the first step captured: momentum made once */
    test_bit_identical(dev, 0, 1, false, 0, false);   /* and Adam's moments */
    test_bit_identical(dev, 0, 0, false, 1, true);    /* flattened: one update launch, replayed */
    test_bit_identical(dev, 0, 1, false, 0, true);
    test_bit_identical(dev, 1, 0, false, 1, true);
    test_stateful_rnn(dev);
    if (!small()) test_gpt_dropout(dev);   /* not under Oclgrind (+10 s): oclgrind_test_grad_attention checks its kernels */
    test_backward_without_forward(dev);
    test_elementwise_chains(dev);
    test_errors(dev);
    CHECK_MSG(clg_device_pool_stats(dev).in_use_bytes == before.in_use_bytes, "device memory leaked: %llu bytes",
              (unsigned long long)(clg_device_pool_stats(dev).in_use_bytes - before.in_use_bytes));
    clg_device_close(dev);
    return check_report("test_graph");
}
