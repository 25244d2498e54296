/* test_io: safetensors round trips of every dtype and of models with every layer type,
 * strict and partial loading with their reports, the writer's refusals, conversions
 * from PyTorch's types, and training checkpoints' metadata and checks. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "io/io_models.h"
#include "optest.h"
#include "io/io_util.h"

static char *dir;

/* ---- dtypes -------------------------------------------------------------------------------------- */

/* Every dtype the device has (float64 only with cl_khr_fp64; without it, a float64 file
 * made on the host still must not load as float32). */
static void test_dtypes(clg_device *dev)
{
    bool f64 = optest_fp64(dev);
    float f[6] = {1.5f, -2.25f, 3e-30f, INFINITY, -0.0f, 1e30f};
    double d[4] = {M_PI, -1e-300, 1e300, -0.0};
    int32_t i32[6] = {INT32_MIN, -1, 0, 1, 7, INT32_MAX};
    clg_tensor *tf = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(2, 3), f);
    clg_tensor *tft = clg_transpose(tf, 0, 1);   /* any layout is written row-major */
    clg_tensor *td = f64 ? clg_tensor_from_host(dev, CLG_F64, CLG_SHAPE(4), d) : NULL;
    clg_tensor *ti = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(3, 1, 2), i32);
    clg_tensor *ts = clg_scalar(dev, CLG_F32, 0.5);
    clg_tensor *tz = clg_zeros(dev, CLG_F32, CLG_SHAPE(0, 5));
    clg_named_tensor all[] = {{"f32", tf, false}, {"f32.t", tft, false}, {"f64", td, false},
                              {"i32", ti, false}, {"scalar", ts, false}, {"empty", tz, false}};
    clg_named_tensor ts_list[6];
    int n = 0;
    for (int i = 0; i < 6; i++)
        if (all[i].tensor != td || f64) ts_list[n++] = all[i];
    clg_safetensors_pair meta[] = {{"note", "quotes \" and \\ and unicode \xc3\xa9"}, {"k", ""}};
    char *path = io_path(dir, "dtypes.safetensors");
    CHECK_OK(dev, clg_safetensors_write(dev, path, n, ts_list, 2, meta));

    char err[512];
    clg_safetensors *st, *host64 = NULL;
    unsigned char *host64_bytes = NULL;   /* outlives host64, which points into it */
    CHECK_MSG(clg_safetensors_open(path, &st, err, sizeof err) == CLG_OK, "%s", err);
    if (st) {
        CHECK(clg_safetensors_count(st) == n);
        for (int i = 0; i < n; i++) CHECK(!strcmp(clg_safetensors_at(st, i)->name, ts_list[i].name));
        const clg_safetensors_entry *a = clg_safetensors_find(st, "f32"), *at = clg_safetensors_find(st, "f32.t");
        CHECK(a->dtype == CLG_ELEM_F32 && a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3);
        CHECK(!memcmp(a->data, f, sizeof f));
        float ft[6] = {f[0], f[3], f[1], f[4], f[2], f[5]};
        CHECK(at->shape[0] == 3 && at->shape[1] == 2 && !memcmp(at->data, ft, sizeof ft));
        const clg_safetensors_entry *b = clg_safetensors_find(st, "f64");
        if (!f64) {   /* the same float64 entry, made on the host */
            const char *h = "{\"f64\":{\"dtype\":\"F64\",\"shape\":[4],\"data_offsets\":[0,32]}}";
            size_t len;
            host64_bytes = io_st_bytes(UINT64_MAX, h, strlen(h), d, sizeof d, &len);
            CHECK_MSG(clg_safetensors_parse(host64_bytes, len, "host64", &host64, err, sizeof err) == CLG_OK, "%s",
                      err);
            b = host64 ? clg_safetensors_find(host64, "f64") : NULL;
        }
        CHECK(b && b->dtype == CLG_ELEM_F64 && b->bytes == 32 && !memcmp(b->data, d, sizeof d));
        const clg_safetensors_entry *c = clg_safetensors_find(st, "i32");
        CHECK(c->dtype == CLG_ELEM_I32 && c->ndim == 3 && c->shape[1] == 1 && !memcmp(c->data, i32, sizeof i32));
        const clg_safetensors_entry *s = clg_safetensors_find(st, "scalar");
        CHECK(s->ndim == 0 && s->numel == 1 && *(const float *)s->data == 0.5f);
        const clg_safetensors_entry *z = clg_safetensors_find(st, "empty");
        CHECK(z->numel == 0 && z->shape[0] == 0 && z->shape[1] == 5);
        CHECK(!strcmp(clg_safetensors_meta(st, "note"), meta[0].value));
        CHECK(!strcmp(clg_safetensors_meta(st, "k"), ""));
        /* back to the device, bit for bit */
        clg_scope_begin(dev);
        const clg_safetensors_entry *each[] = {a, b, c};
        const void *want[] = {f, d, i32};
        clg_dtype dts[] = {CLG_F32, CLG_F64, CLG_I32};
        for (int i = 0; i < 3; i++) {
            if (dts[i] == CLG_F64 && !f64) continue;
            clg_tensor *t = clg_safetensors_tensor(each[i], dev, dts[i]);
            unsigned char got[48];
            CHECK_MSG(t && clg_tensor_to_host(t, got, each[i]->bytes) == CLG_OK && !memcmp(got, want[i], each[i]->bytes),
                      "%s back to the device: %s", each[i]->name, clg_device_error(dev));
        }
        /* floats never change type silently */
        CHECK(clg_safetensors_tensor(b, dev, CLG_F32) == NULL);
        CHECK_MSG(strstr(clg_device_error(dev), "\"f64\" of dtype F64 cannot load into float32"), "%s",
                  clg_device_error(dev));
        CHECK(clg_safetensors_tensor(a, dev, CLG_I32) == NULL);
        clg_scope_end(dev);
        clg_safetensors_close(st);
        clg_safetensors_close(host64);
        free(host64_bytes);
    }
    for (int i = 0; i < 6; i++) clg_tensor_free(all[i].tensor);
    free(path);
}

/* PyTorch's integer types (int64 counters and indices, uint8 masks) load as int32 when
 * every value fits; half precision widens to float32 and float64 (exactly), never the
 * other way, and no float narrows or widens otherwise. */
static void test_torch_types(clg_device *dev)
{
    const char *h = "{\"i64\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[0,24]},"
                    "\"big\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[24,32]},"
                    "\"u8\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[32,34]},"
                    "\"f16\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[34,36]}}";
    int64_t v[4] = {-5, 0, 2147483647, 2147483648LL};
    unsigned char data[36];
    memcpy(data, v, 32);
    data[32] = 255;
    data[33] = 3;
    data[34] = 0x00;   /* F16 0xc500: -5.0, little-endian */
    data[35] = 0xc5;
    size_t len;
    unsigned char *b = io_st_bytes(UINT64_MAX, h, strlen(h), data, sizeof data, &len);
    char err[256];
    clg_safetensors *st;
    CHECK_MSG(clg_safetensors_parse(b, len, "torch", &st, err, sizeof err) == CLG_OK, "%s", err);
    clg_scope_begin(dev);
    int32_t got[3];
    clg_tensor *t = clg_safetensors_tensor(clg_safetensors_find(st, "i64"), dev, CLG_I32);
    CHECK(t && clg_tensor_to_host(t, got, 12) == CLG_OK && got[0] == -5 && got[1] == 0 && got[2] == INT32_MAX);
    CHECK(clg_safetensors_tensor(clg_safetensors_find(st, "big"), dev, CLG_I32) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "\"big\" (I64): element 0 does not fit int32"), "%s", clg_device_error(dev));
    t = clg_safetensors_tensor(clg_safetensors_find(st, "u8"), dev, CLG_I32);
    CHECK(t && clg_tensor_to_host(t, got, 8) == CLG_OK && got[0] == 255 && got[1] == 3);
    CHECK(clg_safetensors_converts(CLG_ELEM_F16, CLG_F32) && clg_safetensors_converts(CLG_ELEM_BF16, CLG_F64));
    CHECK(!clg_safetensors_converts(CLG_ELEM_F32, CLG_F64) && !clg_safetensors_converts(CLG_ELEM_F32, CLG_F16) &&
          !clg_safetensors_converts(CLG_ELEM_F16, CLG_BF16) && !clg_safetensors_converts(CLG_ELEM_F16, CLG_I32));
    CHECK(clg_safetensors_converts(CLG_ELEM_BOOL, CLG_I32) && clg_safetensors_converts(CLG_ELEM_U64, CLG_I32));
    float f = 0;
    t = clg_safetensors_tensor(clg_safetensors_find(st, "f16"), dev, CLG_F32);
    CHECK(t && clg_tensor_to_host(t, &f, 4) == CLG_OK && f == -5.0f);
    uint16_t h16 = 0;
    t = clg_safetensors_tensor(clg_safetensors_find(st, "f16"), dev, CLG_F16);
    CHECK(t && clg_tensor_to_host(t, &h16, 2) == CLG_OK && h16 == 0xc500);
    CHECK(clg_safetensors_tensor(clg_safetensors_find(st, "f16"), dev, CLG_BF16) == NULL);
    clg_scope_end(dev);
    clg_safetensors_close(st);
    free(b);
    CHECK(!strcmp(clg_safetensors_dtype_name(CLG_ELEM_BF16), "BF16") && clg_elem_size(CLG_ELEM_BF16) == 2);
    CHECK(!strcmp(clg_safetensors_dtype_name((clg_elem_type)99), "?") && clg_elem_size((clg_elem_type)99) == 0);
}

/* ---- the writer's refusals ------------------------------------------------------------------------ */

static int count_files(const char *path)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "test $(ls -a '%s' | wc -l) -eq 2", path);
    return system(cmd) == 0 ? 0 : 1;
}

static void test_write_errors(clg_device *dev)
{
    char *sub = io_path(dir, "writes");
    mkdir(sub, 0700);
    char *path = io_path(sub, "x.safetensors");
    clg_tensor *t = clg_zeros(dev, CLG_F32, CLG_SHAPE(2));
    clg_named_tensor two[] = {{"a", t, false}, {"a", t, false}};
    CHECK(clg_safetensors_write(dev, path, 2, two, 0, NULL) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), path) && strstr(clg_device_error(dev), "tensor name \"a\" given twice"),
              "%s", clg_device_error(dev));
    clg_named_tensor reserved[] = {{"__metadata__", t, false}};
    CHECK(clg_safetensors_write(dev, path, 1, reserved, 0, NULL) == CLG_ERR_INVALID_ARGUMENT);
    clg_named_tensor none[] = {{"a", NULL, false}};
    CHECK(clg_safetensors_write(dev, path, 1, none, 0, NULL) == CLG_ERR_INVALID_ARGUMENT);
    clg_safetensors_pair dup[] = {{"k", "1"}, {"k", "2"}};
    CHECK(clg_safetensors_write(dev, path, 1, two, 2, dup) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "metadata key \"k\" given twice"), "%s", clg_device_error(dev));
    clg_safetensors_pair bad_utf8[] = {{"k", "\xff"}};
    CHECK(clg_safetensors_write(dev, path, 1, two, 1, bad_utf8) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(count_files(sub) == 0, "a refused write left a file behind");
    /* a directory that does not exist: an I/O error naming the path */
    char *nowhere = io_path(dir, "no/such/dir/x.safetensors");
    CHECK(clg_safetensors_write(dev, nowhere, 1, two, 0, NULL) == CLG_ERR_IO);
    CHECK_MSG(strstr(clg_device_error(dev), nowhere) && strstr(clg_device_error(dev), "temporary"), "%s",
              clg_device_error(dev));
    /* a target that is a directory: the rename fails, the temporary goes */
    CHECK(clg_safetensors_write(dev, sub, 1, two, 0, NULL) == CLG_ERR_IO);
    CHECK_MSG(strstr(clg_device_error(dev), "rename failed"), "%s", clg_device_error(dev));
    CHECK_MSG(count_files(sub) == 0, "a failed rename left its temporary behind");
    /* overwriting keeps the file whole: the new contents replace the old */
    CHECK_OK(dev, clg_safetensors_write(dev, path, 1, two, 0, NULL));
    clg_fill_(t, 3);
    CHECK_OK(dev, clg_safetensors_write(dev, path, 1, two, 0, NULL));
    char err[256];
    clg_safetensors *st;
    CHECK(clg_safetensors_open(path, &st, err, sizeof err) == CLG_OK);
    CHECK(st && *(const float *)clg_safetensors_at(st, 0)->data == 3.0f);
    clg_safetensors_close(st);
    clg_tensor_free(t);
    free(nowhere);
    free(path);
    free(sub);
}

/* ---- models ------------------------------------------------------------------------------------------ */

typedef clg_module *(*model_fn)(clg_device *dev);
static clg_module *mlp10(clg_device *dev) { return io_mlp(dev, 10); }
static clg_module *cnn5(clg_device *dev) { return io_cnn(dev, 5); }

static clg_tensor *model_input(clg_device *dev, model_fn make)
{
    if (make == io_embed) {
        int32_t ids[6] = {0, 5, 19, 3, 3, 11};
        return clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2, 3), ids);
    }
    clg_manual_seed(dev, 99);
    return make == cnn5 ? clg_randn(dev, CLG_F32, CLG_SHAPE(4, 3, 8, 8), 0, 1)
                        : clg_randn(dev, CLG_F32, CLG_SHAPE(4, 12), 0, 1);
}

static bool same_output(clg_device *dev, clg_module *a, clg_module *b, clg_tensor *x)
{
    clg_scope_begin(dev);
    clg_tensor *ya = clg_module_forward(a, x), *yb = clg_module_forward(b, x);
    int64_t n = ya ? clg_tensor_numel(ya) : 0;
    float *ha = calloc((size_t)n + 1, 4), *hb = calloc((size_t)n + 1, 4);
    bool same = ya && yb && clg_tensor_to_host(ya, ha, (size_t)n * 4) == CLG_OK &&
                clg_tensor_to_host(yb, hb, (size_t)n * 4) == CLG_OK && !memcmp(ha, hb, (size_t)n * 4);
    free(ha);
    free(hb);
    clg_scope_end(dev);
    return same;
}

/* Save a model whose buffers have moved (a training forward), load it into a model
 * made from another seed: every byte, and so every output, equal. */
static void test_model_round_trip(clg_device *dev, const char *what, model_fn make)
{
    clg_manual_seed(dev, 1);
    clg_module *a = make(dev);
    clg_manual_seed(dev, 2);
    clg_module *b = make(dev);
    CHECK_MSG(a && b, "%s: %s", what, clg_device_error(dev));
    if (!a || !b) return;
    clg_tensor *x = model_input(dev, make);
    clg_scope_begin(dev);
    CHECK_MSG(clg_module_forward(a, x) != NULL, "%s forward: %s", what, clg_device_error(dev));   /* moves BN stats */
    clg_scope_end(dev);
    char *path = io_path(dir, "model.safetensors");
    clg_safetensors_pair meta[] = {{"model", "{\"layers\": []}"}};
    CHECK_OK(dev, clg_module_save(a, path, 1, meta));

    /* the file holds the state_dict: same names, same order, and "format": "pt" */
    char err[256];
    clg_safetensors *st;
    CHECK(clg_safetensors_open(path, &st, err, sizeof err) == CLG_OK);
    clg_named_tensor s[64];
    int n = clg_module_state(a, s, 64);
    CHECK_MSG(clg_safetensors_count(st) == n, "%s: %d tensors in the file, %d in the model", what,
              clg_safetensors_count(st), n);
    for (int i = 0; i < n && i < clg_safetensors_count(st); i++)
        CHECK_MSG(!strcmp(clg_safetensors_at(st, i)->name, s[i].name), "%s: entry %d is %s, not %s", what, i,
                  clg_safetensors_at(st, i)->name, s[i].name);
    CHECK(clg_safetensors_meta(st, "format") && !strcmp(clg_safetensors_meta(st, "format"), "pt"));
    CHECK(clg_safetensors_meta(st, "model") && !strcmp(clg_safetensors_meta(st, "model"), meta[0].value));
    clg_safetensors_close(st);

    size_t la, lb;
    unsigned char *ba = io_model_bytes(a, &la), *bb = io_model_bytes(b, &lb);
    CHECK_MSG(la == lb && memcmp(ba, bb, la) != 0, "%s: two seeds gave the same model", what);
    free(bb);
    clg_load_report rep;
    CHECK_OK(dev, clg_module_load(b, path, true, &rep));
    CHECK_MSG(rep.loaded == n && rep.nmissing + rep.nunexpected + rep.nmismatched == 0, "%s: loaded %d of %d", what,
              rep.loaded, n);
    clg_load_report_free(&rep);
    bb = io_model_bytes(b, &lb);
    CHECK_MSG(la == lb && !memcmp(ba, bb, la), "%s: loaded values differ from the saved ones", what);
    clg_module_train(a, false);
    clg_module_train(b, false);
    CHECK_MSG(same_output(dev, a, b, x), "%s: outputs differ after loading", what);
    free(ba);
    free(bb);
    free(path);
    clg_tensor_free(x);
    clg_module_free(a);
    clg_module_free(b);
}

/* ---- strict and partial loading --------------------------------------------------------------------- */

static void test_strict_and_partial(clg_device *dev)
{
    clg_manual_seed(dev, 3);
    clg_module *src = io_mlp(dev, 10);
    char *path = io_path(dir, "mlp10.safetensors");
    CHECK_OK(dev, clg_module_save(src, path, 0, NULL));
    /* Fine-tuning target: a 3-class head (9.weight [3, 16], 9.bias [3]), and an extra
     * layer that the file does not have. */
    clg_manual_seed(dev, 4);
    clg_module *dst = io_mlp(dev, 3);
    CHECK_OK(dev, clg_sequential_append(dst, "extra", clg_nn_linear(dev, 3, 2, true)));
    size_t l0, l1;
    unsigned char *before = io_model_bytes(dst, &l0);

    clg_load_report rep;
    CHECK(clg_module_load(dst, path, true, &rep) == CLG_ERR_FORMAT);
    const char *msg = clg_device_error(dev);
    CHECK_MSG(strstr(msg, path) && strstr(msg, "2 missing, 0 unexpected, 2 mismatched; nothing was loaded"), "%s", msg);
    const char *lines[] = {"missing: extra.weight: model [2, 3] float32", "missing: extra.bias: model [2] float32",
                           "mismatched: 9.weight: file [10, 16] F32, model [3, 16] float32",
                           "mismatched: 9.bias: file [10] F32, model [3] float32"};
    for (int i = 0; i < 4; i++) CHECK_MSG(strstr(msg, lines[i]), "strict error lacks \"%s\":\n%s", lines[i], msg);
    CHECK(rep.loaded == 0 && rep.nmissing == 2 && rep.nmismatched == 2 && rep.nunexpected == 0);
    unsigned char *after = io_model_bytes(dst, &l1);
    CHECK_MSG(!memcmp(before, after, l0), "a refused strict load changed the model");
    free(after);
    clg_load_report_free(&rep);
    CHECK(rep.missing == NULL && rep.nmissing == 0);

    /* partial: the backbone loads, the head and the extra layer keep their values */
    CHECK_OK(dev, clg_module_load(dst, path, false, &rep));
    CHECK_MSG(rep.loaded == 5 && rep.nmissing == 2 && rep.nmismatched == 2, "loaded %d", rep.loaded);
    char text[1024];
    clg_load_report_text(&rep, text, sizeof text);
    for (int i = 0; i < 4; i++) CHECK_MSG(strstr(text, lines[i]), "report lacks \"%s\":\n%s", lines[i], text);
    clg_load_report_free(&rep);
    const char *loaded[] = {"0.weight", "0.bias", "2.weight", "2.bias", "5.weight"};
    for (int i = 0; i < 5; i++) {
        float x[256], y[256];
        clg_tensor *a = clg_module_find(src, loaded[i]), *b = clg_module_find(dst, loaded[i]);
        size_t k = (size_t)clg_tensor_numel(a) * 4;
        CHECK_MSG(clg_tensor_to_host(a, x, k) == CLG_OK && clg_tensor_to_host(b, y, k) == CLG_OK && !memcmp(x, y, k),
                  "%s not loaded", loaded[i]);
    }
    after = io_model_bytes(dst, &l1);
    size_t tail = (size_t)(3 * 16 + 3 + 2 * 3 + 2) * 4;   /* the head and the extra layer, last in state order */
    CHECK_MSG(!memcmp(before + l0 - tail, after + l1 - tail, tail), "partial load changed skipped tensors");
    free(after);
    free(before);

    /* the other way round: tensors the model lacks are unexpected */
    clg_module *small = clg_nn_sequential(dev, 1, (clg_module *[]){clg_nn_linear(dev, 12, 16, true)});
    CHECK(clg_module_load(small, path, true, &rep) == CLG_ERR_FORMAT);
    CHECK_MSG(rep.nunexpected == 5 && strstr(clg_device_error(dev), "unexpected: 9.bias: file [10] F32"), "%s",
              clg_device_error(dev));
    clg_load_report_free(&rep);
    CHECK_OK(dev, clg_module_load(small, path, false, NULL));
    /* and a file that is not there, or not safetensors */
    char *missing = io_path(dir, "missing.safetensors");
    CHECK(clg_module_load(small, missing, false, &rep) == CLG_ERR_IO && rep.loaded == 0);
    CHECK_MSG(strstr(clg_device_error(dev), missing), "%s", clg_device_error(dev));
    io_write_file(missing, "not a checkpoint at all", 23);
    CHECK(clg_module_load(small, missing, false, NULL) == CLG_ERR_FORMAT);
    CHECK_MSG(strstr(clg_device_error(dev), "not a safetensors file: it begins with text (not a checkpoint at all"),
              "%s", clg_device_error(dev));
    free(missing);
    clg_module_free(small);
    clg_module_free(src);
    clg_module_free(dst);
    free(path);
}

/* ---- training checkpoints ------------------------------------------------------------------------------- */

static clg_optimizer *adam_for(clg_module *m)
{
    clg_tensor *p[32];
    int n = clg_module_parameters(m, p, 32, true);
    return clg_adam_new(n, p, &(clg_adam_options){.lr = 0.01});
}

static void train_steps(clg_device *dev, clg_module *m, clg_optimizer *opt, int steps)
{
    for (int s = 0; s < steps; s++) {
        clg_scope_begin(dev);
        clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 12), 0, 1);
        clg_tensor *y = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 10), 0, 1);
        clg_optimizer_zero_grad(opt);
        CHECK_OK(dev, clg_backward(clg_mse(clg_module_forward(m, x), y, CLG_REDUCE_MEAN), NULL));
        CHECK_OK(dev, clg_optimizer_step(opt));
        clg_scope_end(dev);
    }
}

static void test_checkpoint(clg_device *dev)
{
    clg_manual_seed(dev, 5);
    clg_module *m = io_mlp(dev, 10);
    clg_module_set_param_trainable(m, "2.bias", false);   /* not in the optimizer */
    clg_optimizer *opt = adam_for(m);
    train_steps(dev, m, opt, 3);
    clg_optimizer_set_lr(opt, 0.005);
    clg_train_state ts = {.step = 3, .epoch = 1, .batch = 7, .loader_seed = UINT64_MAX, .base_lr = 0.01,
                          .lr_schedule = "cosine:100,warmup:5"};
    strcpy(ts.optimizer, "ignored on save");
    const char *desc = "{\"layers\": [{\"type\": \"Linear\", \"name\": \"caf\xc3\xa9\"}], \"q\": \"\\\"\"}";
    char *path = io_path(dir, "run.ckpt");
    CHECK_OK(dev, clg_checkpoint_save(m, opt, &ts, desc, path));
    uint64_t seed, offset;
    clg_rng_get_state(dev, &seed, &offset);

    /* the file: model tensors, optimizer state under the parameters' names */
    char err[512];
    clg_safetensors *st;
    CHECK(clg_safetensors_open(path, &st, err, sizeof err) == CLG_OK);
    const clg_safetensors_entry *ea = clg_safetensors_find(st, "optim.state.0.weight.exp_avg");
    const clg_safetensors_entry *step = clg_safetensors_find(st, "optim.state.9.bias.step");
    CHECK(ea && ea->dtype == CLG_ELEM_F32 && ea->shape[0] == 16 && ea->shape[1] == 12);
    CHECK(clg_safetensors_find(st, "optim.state.9.bias.exp_avg_sq") != NULL);
    CHECK(step && step->dtype == CLG_ELEM_I64 && step->ndim == 0 && *(const int64_t *)step->data == 3);
    CHECK(clg_safetensors_find(st, "optim.state.2.bias.step") == NULL);   /* frozen: not optimized */
    CHECK(!strcmp(clg_safetensors_meta(st, "train.lr_schedule"), "cosine:100,warmup:5"));
    CHECK(!strcmp(clg_safetensors_meta(st, "optim.name"), "adam"));
    clg_safetensors_close(st);

    /* info without a model */
    clg_train_state info;
    char *got_desc;
    CHECK_MSG(clg_checkpoint_info(path, &info, &got_desc, err, sizeof err) == CLG_OK, "%s", err);
    CHECK(info.version == CLG_CHECKPOINT_VERSION && info.step == 3 && info.epoch == 1 && info.batch == 7);
    CHECK(info.loader_seed == UINT64_MAX && info.base_lr == 0.01 && !strcmp(info.lr_schedule, ts.lr_schedule));
    CHECK(info.rng_seed == seed && info.rng_offset == offset && !strcmp(info.optimizer, "adam"));
    CHECK(info.optimizer_steps == 3 && info.lr == 0.005);
    CHECK(got_desc && !strcmp(got_desc, desc));
    free(got_desc);

    /* load into a fresh model and optimizer: same values, state, steps, lr, RNG */
    clg_manual_seed(dev, 6);
    clg_module *m2 = io_mlp(dev, 10);
    clg_module_set_param_trainable(m2, "2.bias", false);
    clg_optimizer *opt2 = adam_for(m2);
    clg_rng_set_state(dev, 1, 2);
    clg_train_state back;
    CHECK_OK(dev, clg_checkpoint_load(m2, opt2, path, &back, NULL));
    CHECK(back.step == 3 && back.batch == 7 && back.rng_offset == offset && back.version == 1);
    uint64_t s2, o2;
    clg_rng_get_state(dev, &s2, &o2);
    CHECK(s2 == seed && o2 == offset);
    CHECK(clg_optimizer_steps(opt2) == 3 && clg_optimizer_lr(opt2) == 0.005);
    size_t la, lb;
    unsigned char *ba = io_model_bytes(m, &la), *bb = io_model_bytes(m2, &lb);
    CHECK(la == lb && !memcmp(ba, bb, la));
    free(ba);
    free(bb);
    const char *names[3];
    clg_tensor *sa[3], *sb[3];
    int na = clg_optimizer_state(opt, 0, names, sa, 3), nb = clg_optimizer_state(opt2, 0, names, sb, 3);
    CHECK(na == 2 && nb == 2);
    for (int i = 0; i < na && i < nb; i++) {
        float x[192], y[192];
        CHECK(clg_tensor_to_host(sa[i], x, sizeof x) == CLG_OK && clg_tensor_to_host(sb[i], y, sizeof y) == CLG_OK &&
              !memcmp(x, y, sizeof x));
    }

    /* refusals, each changing nothing */
    clg_optimizer *sgd = clg_sgd_new(1, (clg_tensor *[]){clg_module_find(m2, "0.weight")},
                                     &(clg_sgd_options){.lr = 0.1, .momentum = 0.9});
    CHECK(clg_checkpoint_load(m2, sgd, path, NULL, NULL) == CLG_ERR_FORMAT);
    CHECK_MSG(strstr(clg_device_error(dev), "holds the state of optimizer \"adam\", not of this \"sgd\""), "%s",
              clg_device_error(dev));
    clg_optimizer_free(sgd);
    clg_tensor *two[2] = {clg_module_find(m2, "0.weight"), clg_module_find(m2, "0.bias")};
    clg_optimizer *partial = clg_adam_new(2, two, &(clg_adam_options){.lr = 0.01});
    CHECK(clg_checkpoint_load(m2, partial, path, NULL, NULL) == CLG_ERR_FORMAT);
    CHECK_MSG(strstr(clg_device_error(dev), "unexpected: optim.state.2.weight.exp_avg: not a parameter of this "
                                            "optimizer"), "%s", clg_device_error(dev));
    clg_optimizer_free(partial);
    clg_module *other = io_mlp(dev, 4);
    clg_optimizer *oopt = adam_for(other);
    clg_load_report rep;
    CHECK(clg_checkpoint_load(other, oopt, path, NULL, &rep) == CLG_ERR_FORMAT && rep.nmismatched == 2);
    clg_load_report_free(&rep);
    clg_optimizer_free(oopt);
    clg_module_free(other);
    /* weights alone are not a training checkpoint, but info reads them */
    char *weights = io_path(dir, "weights.safetensors");
    CHECK_OK(dev, clg_module_save(m, weights, 0, NULL));
    CHECK(clg_checkpoint_load(m2, opt2, weights, NULL, NULL) == CLG_ERR_FORMAT);
    CHECK_MSG(strstr(clg_device_error(dev), "not a clgrad training checkpoint"), "%s", clg_device_error(dev));
    CHECK(clg_checkpoint_info(weights, &info, &got_desc, err, sizeof err) == CLG_OK && info.version == 0 &&
          got_desc == NULL);
    /* a checkpoint is also weights: model-only loading ignores the optimizer state */
    CHECK_OK(dev, clg_module_load(m2, path, true, NULL));
    CHECK_OK(dev, clg_checkpoint_load(m2, NULL, path, NULL, NULL));
    /* bad train state text */
    ts.lr_schedule[0] = 'x';
    CHECK(clg_checkpoint_save(m, opt, &ts, NULL, path) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "lr_schedule"), "%s", clg_device_error(dev));
    CHECK(clg_checkpoint_info(path, &info, NULL, err, sizeof err) == CLG_OK && info.step == 3);   /* unchanged */
    free(weights);
    clg_optimizer_free(opt2);
    clg_module_free(m2);
    clg_optimizer_free(opt);
    clg_module_free(m);
    free(path);
}

/* Checkpoints whose metadata was tampered with: each refused, naming the key. */
static void test_bad_metadata(clg_device *dev)
{
    clg_manual_seed(dev, 7);
    clg_module *m = clg_nn_sequential(dev, 1, (clg_module *[]){clg_nn_linear(dev, 2, 2, true)});
    clg_named_tensor s[2];
    clg_module_state(m, s, 2);
    char *path = io_path(dir, "tampered.ckpt");
    const struct { const char *key, *value, *expect; } cases[] = {
        {"train.step", "abc", "\"train.step\" is \"abc\", not an integer"},
        {"train.step", "-1", "not an integer >= 0"},
        {"train.epoch", "1.5", "\"train.epoch\""},
        /* counters near INT64_MAX resumed into signed overflow (and Adam into NaN) */
        {"train.step", "9223372036854775806", "\"train.step\" = 9223372036854775806: a counter must lie in [0, 2^53]"},
        {"optim.steps", "9007199254740993", "\"optim.steps\" = 9007199254740993: a counter"},
        {"train.batch", "9223372036854775807", "\"train.batch\""},
        {"rng.seed", "-3", "\"rng.seed\" is \"-3\", not an unsigned"},
        {"rng.offset", "99999999999999999999999", "\"rng.offset\""},
        {"optim.lr", "nan", "\"optim.lr\""},
        {"train.base_lr", "", "\"train.base_lr\""},
        {"train.lr_schedule", "sometimes", "\"train.lr_schedule\""},
        {"clgrad.checkpoint", "2", "version 2; this clgrad reads 1 to 1"},
        {"train.batch", NULL, "has no \"train.batch\""},
    };
    const char *keys[] = {"clgrad.checkpoint", "train.step", "train.epoch", "train.batch", "train.loader_seed",
                          "train.base_lr", "train.lr_schedule", "rng.seed", "rng.offset", "optim.name",
                          "optim.steps", "optim.lr"};
    const char *good[] = {"1", "0", "0", "0", "0", "0.1", "", "1", "0", "", "0", "0"};
    size_t nk = sizeof keys / sizeof keys[0];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clg_safetensors_pair meta[16];
        int n = 0;
        for (size_t k = 0; k < nk; k++) {
            const char *v = strcmp(keys[k], cases[c].key) ? good[k] : cases[c].value;
            if (v) meta[n++] = (clg_safetensors_pair){keys[k], v};
        }
        CHECK_OK(dev, clg_safetensors_write(dev, path, 2, s, n, meta));
        CHECK(clg_checkpoint_load(m, NULL, path, NULL, NULL) == CLG_ERR_FORMAT);
        CHECK_MSG(strstr(clg_device_error(dev), cases[c].expect), "%s=%s: %s", cases[c].key,
                  cases[c].value ? cases[c].value : "(absent)", clg_device_error(dev));
    }
    free(path);
    clg_module_free(m);
}

int main(void)
{
    clg_device *dev = check_open_device();
    dir = io_tmpdir("io");
    test_dtypes(dev);
    test_torch_types(dev);
    test_write_errors(dev);
    test_model_round_trip(dev, "mlp", mlp10);
    test_model_round_trip(dev, "cnn", cnn5);
    test_model_round_trip(dev, "embedding", io_embed);
    test_strict_and_partial(dev);
    test_checkpoint(dev);
    test_bad_metadata(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors leaked", (long long)clg_tensor_live_count(dev));
    io_rmdir(dir);
    clg_device_close(dev);
    return check_report("test_io");
}
