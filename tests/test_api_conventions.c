/* The conventions written at the top of include/clgrad.h, through the public API only:
 * device-less failures reach clg_last_error (with or without the caller's buffer),
 * device failures clg_device_error; setters report; the old names of 0.1 still build
 * and mean the same as the new; one element-type enum spans the file formats; every
 * options struct has a clg_<name>_defaults() (the form C++ can use) giving what NULL
 * options mean (the optimizers' also by the steps they take, in test_optim). */
#include <string.h>

#include "check.h"

static void device_less_failures(void)
{
    clg_host_array a;
    CHECK(clg_npy_read("/nonexistent/x.npy", &a, NULL, 0) == CLG_ERR_IO);   /* no buffer */
    CHECK_MSG(clg_last_status() == CLG_ERR_IO && strstr(clg_last_error(), "/nonexistent/x.npy"), "%s",
              clg_last_error());
    char err[256];
    clg_safetensors *st;
    CHECK(clg_safetensors_parse("xx", 2, "mem.safetensors", &st, err, sizeof err) == CLG_ERR_FORMAT);
    CHECK_MSG(strstr(err, "mem.safetensors") && !strcmp(err, clg_last_error()), "%s | %s", err, clg_last_error());
    char bad[] = "{\"input\": [4], \"layers\": [{\"type\": \"no_such_layer\"}]}";
    clg_model *m = NULL;
    CHECK(clg_model_parse(bad, strlen(bad), "m.json", &m, NULL, 0) != CLG_OK);
    CHECK_MSG(!m && clg_last_status() == CLG_ERR_FORMAT && strstr(clg_last_error(), "no_such_layer"), "%s",
              clg_last_error());
    clg_device_info infos[4];
    int n = 0, idx;
    if (clg_device_list(infos, 4, &n, NULL, 0) == CLG_OK) {
        CHECK(clg_device_find("no-such-device-anywhere", infos, n, &idx, NULL, 0) == CLG_ERR_NO_DEVICE);
        CHECK_MSG(strstr(clg_last_error(), "no-such-device-anywhere"), "%s", clg_last_error());
    }
}

static void device_failures_and_names(void)
{
    clg_device *dev;
    CHECK(clg_device_open(NULL, &dev) == CLG_OK);
    if (!dev) return;
    clg_scope_begin(dev);
    /* a chain of ops is checked once: the first failure's message stays */
    clg_tensor *y = clg_relu(clg_add(clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 3)), clg_zeros(dev, CLG_F32, CLG_SHAPE(4))));
    CHECK(y == NULL && clg_device_last_status(dev) == CLG_ERR_SHAPE && strstr(clg_device_error(dev), "clg_add"));
    /* setters report */
    clg_tensor *w = clg_tensor_keep(clg_zeros(dev, CLG_F32, CLG_SHAPE(3)));
    clg_tensor_set_requires_grad(w, true);
    clg_optimizer *opt = clg_sgd_new(1, &w, &(clg_sgd_options){.lr = 0.1});
    CHECK(clg_optimizer_set_lr(opt, -1) == CLG_ERR_INVALID_ARGUMENT && clg_optimizer_lr(opt) == 0.1);
    CHECK(clg_optimizer_set_lr(opt, 0.5) == CLG_OK && clg_optimizer_lr(opt) == 0.5);
    CHECK(clg_optimizer_set_steps(opt, -3) == CLG_ERR_INVALID_ARGUMENT);
    clg_optimizer_free(opt);
    clg_tensor_free(w);
    /* the old names of 0.1 */
    clg_tensor *e = clg_tensor_empty(dev, CLG_F32, CLG_SHAPE(2, 2));
    CHECK(e && clg_tensor_numel(e) == 4);
    clg_module *s = clg_sequential_new(dev, 1, (clg_module *[]){clg_nn_relu(dev)});
    CHECK(s && clg_module_child_count(s) == 1);
    clg_module_free(s);
    CHECK(!strcmp(clg_st_dtype_name(CLG_ST_F32), "F32") && CLG_ST_I64 == CLG_ELEM_I64);
    clg_scope_end(dev);
    clg_device_close(dev);
    /* queries of nothing do not fail */
    CHECK(clg_module_child_count(NULL) == 0 && !strcmp(clg_optimizer_name(NULL), ""));
}

static void element_types(void)
{
    CHECK(clg_elem_size(CLG_ELEM_BF16) == 2 && clg_elem_size(CLG_ELEM_U64) == 8 && clg_elem_size(CLG_ELEM_COUNT) == 0);
    CHECK(!strcmp(clg_safetensors_dtype_name(CLG_ELEM_BF16), "BF16") && !strcmp(clg_elem_name(CLG_ELEM_BF16), "bfloat16"));
    CHECK(clg_elem_of_dtype(CLG_F64) == CLG_ELEM_F64 && clg_elem_of_dtype(CLG_I32) == CLG_ELEM_I32);
    for (int t = 0; t < CLG_ELEM_COUNT; t++)
        CHECK_MSG(clg_elem_size((clg_elem_type)t) > 0 && strcmp(clg_safetensors_dtype_name((clg_elem_type)t), "?"),
                  "element type %d", t);
}

static void option_defaults(void)
{
    clg_sgd_options sgd = clg_sgd_defaults();
    CHECK(sgd.lr == 1e-3 && sgd.momentum == 0 && sgd.dampening == 0 && sgd.weight_decay == 0 && !sgd.nesterov);
    clg_adam_options a = clg_adam_defaults(), aw = clg_adamw_defaults();
    CHECK(a.lr == 1e-3 && a.beta1 == 0.9 && a.beta2 == 0.999 && a.eps == 1e-8 && a.weight_decay == 0);
    CHECK(aw.lr == 1e-3 && aw.beta1 == 0.9 && aw.beta2 == 0.999 && aw.eps == 1e-8 && aw.weight_decay == 1e-2);
    clg_rmsprop_options rms = clg_rmsprop_defaults();
    CHECK(rms.lr == 1e-2 && rms.alpha == 0.99 && rms.eps == 1e-8 && rms.momentum == 0 && !rms.centered);
    clg_adagrad_options ada = clg_adagrad_defaults();
    CHECK(ada.lr == 1e-2 && ada.eps == 1e-10 && ada.lr_decay == 0 && ada.initial_accumulator_value == 0);
    clg_grad_scaler_options g = clg_grad_scaler_defaults();
    CHECK(g.init_scale == 65536 && g.growth_factor == 2 && g.backoff_factor == 0.5 && g.growth_interval == 2000);
    clg_csv_options c = clg_csv_defaults();
    CHECK(c.label_column == -1 && c.header == -1);
    clg_trainer_options t = clg_trainer_defaults();
    CHECK(!t.graph && t.clip_grad_norm == 0 && !t.meter && !t.input && !t.loss && !t.user && t.precision == CLG_F32 &&
          !t.dist);
    clg_text_eval_options e = clg_text_eval_defaults();
    CHECK(e.max_windows == 0 && !e.progress && !e.user);
    clg_dist_options d = clg_dist_defaults();
    CHECK(d.bucket_mb == 0 && d.timeout == 0);
    clg_ce_options ce = clg_ce_defaults();
    CHECK(ce.reduction == CLG_REDUCE_MEAN && !ce.weight && ce.ignore_index == -100 && ce.label_smoothing == 0);
    clg_rnn_options r = clg_rnn_defaults();
    CHECK(r.num_layers == 1 && r.bias && !r.batch_first && r.dropout == 0);
    clg_transformer_options tr = clg_transformer_defaults();
    CHECK(tr.dim_feedforward == 2048 && tr.dropout == 0.1 && tr.layer_norm_eps == 1e-5 && tr.bias);
    clg_device *dev;
    CHECK(clg_device_open(NULL, &dev) == CLG_OK);
    clg_grad_scaler *s = clg_grad_scaler_new(dev, &g);
    CHECK(s && clg_grad_scaler_get_scale(s) == 65536);
    clg_grad_scaler_free(s);
    clg_device_close(dev);
}

int main(void)
{
    device_less_failures();
    device_failures_and_names();
    element_types();
    option_defaults();
    return check_report("test_api_conventions");
}
