/* The conventions written at the top of include/clgrad.h, through the public API only:
 * device-less failures reach clg_last_error (with or without the caller's buffer),
 * device failures clg_device_error; setters report; the old names of 0.1 still build
 * and mean the same as the new; one element-type enum spans the file formats. */
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

int main(void)
{
    device_less_failures();
    device_failures_and_names();
    element_types();
    return check_report("test_api_conventions");
}
