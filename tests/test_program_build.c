/* Programs built ahead (clg__programs_build, src/device/opencl/build_many.c): with the
 * device table's build_threads above 1 the compiles run on threads of their own (the
 * TSan pass runs this test); the programs are then the table's, so that their kernels
 * build nothing more and compute; a duplicate or an already built program is built once;
 * a failing build or an unknown program is left for the kernel's own request to report,
 * and the device's error stays as it was. Bundles (clg__programs_bundle): several
 * programs compiled as one, each of them the table's, those built already left out.
 * The first float32 tensor builds a training step's programs ahead (src/tensor/ahead.c),
 * a Conv2d made first adding its own: side by side where build_threads > 1, as one
 * bundle (one compile) where it is 1, each of them used by an MLP's or a CNN's step;
 * the bundle's files define no macro or kernel twice. */
#include <ctype.h>
#include <string.h>

#include "check.h"
#include "device_impl.h"
#include "kernel_sources.h"
#include "tensor_impl.h"
#include "clgrad.h"

/* fill(n, value, y) from a program built ahead with `options`: y = value on the device. */
static void check_fill(clg_device *dev, const char *options, float value)
{
    clg_kernel *k = clg__kernel_get(dev, "axpy", options, "fill");
    CHECK_MSG(k != NULL, "%s", clg_device_error(dev));
    clg_buffer *b = clg__buffer_alloc(dev, 4 * sizeof(float));
    float out[4] = {0};
    if (k && b) {
        clg_arg a[] = {CLG_ARG_I(4), CLG_ARG_F(value), CLG_ARG_B(b)};
        size_t g = 4;
        CHECK_OK(dev, clg__launch(dev, k, a, 3, 1, &g, NULL));
        CHECK_OK(dev, clg__read(dev, b, 0, out, sizeof out));
    }
    CHECK(out[0] == value && out[3] == value);
    clg__buffer_release(b);
}

static int64_t built(clg_device *dev) { return clg_device_program_stats(dev).built_from_source; }

/* One training step (cross-entropy, SGD with momentum) of an MLP (linear, relu, linear)
 * or a CNN (conv2d, relu, max_pool2d, flatten, linear) on a batch of 8 made on the host. */
static void train_step(clg_device *dev, bool cnn, bool bundled)
{
    clg_manual_seed(dev, 3);
    clg_conv2d_params pad1 = {.padding = {1, 1}};
    clg_module *model;   /* the first layer made first: a Conv2d's program joins the batch */
    if (cnn) {
        clg_module *first = clg_nn_conv2d(dev, 1, 4, 3, 3, &pad1, true);
        CHECK_MSG(built(dev) == (bundled ? 1 : 7), "%lld built ahead with Conv2d's", (long long)built(dev));
        clg_module *l[] = {first, clg_nn_relu(dev), clg_nn_max_pool2d(dev, 2, 2, 0), clg_nn_flatten(dev),
                           clg_nn_linear(dev, 16, 4, true)};
        model = clg_nn_sequential(dev, 5, l);
    } else {
        clg_module *first = clg_nn_linear(dev, 16, 16, true);
        CHECK_MSG(built(dev) == (bundled ? 1 : 6), "%lld built ahead", (long long)built(dev));
        clg_module *l[] = {first, clg_nn_relu(dev), clg_nn_linear(dev, 16, 4, true)};
        model = clg_nn_sequential(dev, 3, l);
    }
    clg_tensor *params[4];
    int n = clg_module_parameters(model, params, 4, true);
    clg_sgd_options so = clg_sgd_defaults();
    so.lr = 0.1;
    so.momentum = 0.9;
    clg_optimizer *opt = n == 4 ? clg_sgd_new(n, params, &so) : NULL;
    float hx[8 * 16];
    int32_t hy[8];
    for (int i = 0; i < 8 * 16; i++) hx[i] = (float)(i % 7) * 0.25f - 0.5f;
    for (int i = 0; i < 8; i++) hy[i] = i % 4;
    clg_scope_begin(dev);
    clg_tensor *x = cnn ? clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(8, 1, 4, 4), hx)
                        : clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(8, 16), hx);
    clg_tensor *y = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(8), hy);
    clg_tensor *loss = opt ? clg_cross_entropy(clg_module_forward(model, x), y, CLG_REDUCE_MEAN) : NULL;
    double l = 0;
    CHECK_OK(dev, loss ? clg_backward(loss, NULL) : dev->status);
    CHECK_OK(dev, clg_optimizer_step(opt));
    CHECK_OK(dev, clg_tensor_item(loss, &l));
    CHECK(l > 0 && l < 10);
    clg_scope_end(dev);
    clg_optimizer_free(opt);
    clg_module_free(model);
}

/* Two programs as one: both kernels the table's from one compile; again, nothing built;
 * with a member built already, the rest alone; a bundle that fails to build leaves the
 * device's error as it was, and its programs are built again when asked for. */
static void bundles(void)
{
    clg_device *dev = check_open_device();
    const char *two[] = {"axpy", "scalar"};
    char before[256];
    snprintf(before, sizeof before, "%s", clg_device_error(dev));
    CHECK_MSG(clg__programs_bundle(dev, 2, two, "-DT=float -DCLG_F32") == 2, "%s", clg_device_error(dev));
    CHECK(built(dev) == 1);
    check_fill(dev, "-DT=float -DCLG_F32", 5);
    CHECK(clg__kernel_get(dev, "scalar", "-DT=float -DCLG_F32", "mul_scalar_flat") && built(dev) == 1);
    CHECK(clg__programs_bundle(dev, 2, two, "-DT=float -DCLG_F32") == 0 && built(dev) == 1);
    const char *more[] = {"axpy", "tri"};   /* axpy is the table's: tri alone */
    CHECK(clg__programs_bundle(dev, 2, more, "-DT=float -DCLG_F32") == 1 && built(dev) == 2);
    const char *bad[] = {"axpy", "scalar"};
    CHECK(clg__programs_bundle(dev, 2, bad, "-DT=no_such_type_xyz") == 0 && built(dev) == 2);
    CHECK_MSG(!strcmp(clg_device_error(dev), before), "%s", clg_device_error(dev));
    CHECK(clg__kernel_get(dev, "axpy", "-DT=no_such_type_xyz", "fill") == NULL &&
          strstr(clg_device_error(dev), "no_such_type_xyz"));
    const char *none[] = {"nosuchprogram3"};
    CHECK(clg__programs_bundle(dev, 1, none, "") == 0);
    clg_device_close(dev);
}

/* The names a cl_kernels file defines: its macros (#define NAME), which would silently
 * change the code of a file after it, and its kernels outside macro bodies (those made
 * by macros clash in the compile, which the steps above run), one per line of out. */
static void names_of(const char *text, char *out, size_t len)
{
    size_t n = 0;
    out[0] = 0;
    for (const char *p = text; *p; p++) {
        if (p != text && p[-1] != '\n') continue;
        const char *q = p;
        while (*q == ' ' || *q == '\t') q++;
        const char *name = NULL;
        if (*q == '#') {
            q++;
            while (*q == ' ') q++;
            if (!strncmp(q, "define", 6) && (q[6] == ' ' || q[6] == '\t')) name = q + 7;
        } else {
            const char *kw = strstr(q, "kernel void ");
            const char *eol = strchr(q, '\n');
            bool in_macro = p != text && p - text >= 2 && p[-2] == '\\';   /* the line before ends in a backslash */
            if (kw && (!eol || kw < eol) && !in_macro) name = kw + 12;
        }
        if (!name) continue;
        while (*name == ' ' || *name == '\t') name++;
        size_t l = 0;
        while (isalnum((unsigned char)name[l]) || name[l] == '_') l++;
        if (l && n + l + 2 < len) n += (size_t)snprintf(out + n, len - n, "%.*s\n", (int)l, name);
    }
}

static const char *source_of(const char *name)
{
    for (int i = 0; i < clg__kernel_source_count; i++)
        if (!strcmp(clg__kernel_sources[i].name, name)) return clg__kernel_sources[i].text;
    return NULL;
}

/* Files built as one program concatenated define no name twice: a macro of one file
 * would change another's code, a kernel would clash. */
static void sources_apart(int n, const char *const *files)
{
    static char names[16][16384];
    for (int i = 0; i < n; i++) {
        const char *text = source_of(files[i]);
        CHECK_MSG(text != NULL, "no source %s.cl", files[i]);
        names_of(text ? text : "", names[i], sizeof names[i]);
    }
    for (int i = 0; i < n; i++)
        for (const char *p = names[i]; *p; p = strchr(p, '\n') + 1) {
            char word[128];
            snprintf(word, sizeof word, "\n%.*s\n", (int)(strchr(p, '\n') - p), p);
            for (int j = i + 1; j < n; j++) {
                char other[sizeof names[j] + 2];
                snprintf(other, sizeof other, "\n%s", names[j]);
                CHECK_MSG(!strstr(other, word), "%.*s is defined in both %s.cl and %s.cl",
                          (int)strlen(word) - 2, word + 1, files[i], files[j]);
            }
        }
}

/* The bundle of ahead.c (and conv, which a Conv2d adds). */
static void bundle_sources_apart(void)
{
    const char *files[16];
    int n = 0;
    for (const char *f; n < 15 && (f = clg__first_step_program(n));) files[n++] = f;
    files[n++] = "conv";
    CHECK(n >= 7);
    char first[16384];
    names_of(source_of(files[0]) ? source_of(files[0]) : "", first, sizeof first);
    CHECK_MSG(strstr(first, "\n"), "%s.cl defines nothing", files[0]);
    sources_apart(n, files);
}

/* The programs whose elementwise launches a captured step runs in pairs (src/device/
 * capture_plan.c, fuse_chains: any two of them, then ewfuse.cl) define no name twice,
 * and all of them build as one program with ewfuse's kernel. */
static void fusable_sources(void)
{
    static const char *const files[] = {"binary", "scalar", "relu", "unary", "ewfuse"};
    sources_apart(5, files);
    clg_device *dev = check_open_device();
    CHECK_MSG(clg__kernel_get(dev, "binary+scalar+relu+unary+ewfuse",
                              "-DT=float -DCLG_F32 -DCLG_FUSE_A=add_ew -DCLG_FUSE_B=exp_ew -DCLG_FUSE_B_POS=1 "
                              "-DCLG_FUSE_KEEP=1",
                              "ew_fused") != NULL,
              "%s", clg_device_error(dev));
    clg_device_close(dev);
}

int main(void)
{
    setenv("CLG_CACHE_DIR", "off", 1);   /* every program compiled here, counted as built */
    unsetenv("CLG_KERNEL_DIR");
    clg_device *dev = check_open_device();
    clg_device_set_log(dev, NULL, NULL);
    CHECK_OK(dev, clg_device_set_param(dev, "build_threads", "4"));
    CHECK(clg_device_set_param(dev, "build_threads", "0") == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_device_set_param(dev, "build_threads", "17") == CLG_ERR_INVALID_ARGUMENT);
    CHECK_OK(dev, clg_device_set_param(dev, "build_threads", "4"));
    /* The error the device held before stays its error. */
    CHECK(clg__kernel_get(dev, "nosuchprogram", "", "x") == NULL);
    char before[256];
    snprintf(before, sizeof before, "%s", clg_device_error(dev));
    clg_program_req reqs[] = {
        {"axpy", "-DT=float"}, {"scalar", "-DT=float -DCLG_F32"}, {"axpy", "-DT=float"},   /* a duplicate */
        {"axpy", "-DT=no_such_type_xyz"},                                                /* fails to build */
        {"nosuchprogram2", ""},                                                          /* no source */
        {"tri", "-DT=float -DCLG_F32"},
    };
    CHECK_MSG(clg__programs_build(dev, 6, reqs) == 3, "%lld built", (long long)built(dev));
    CHECK(built(dev) == 3);
    CHECK_MSG(!strcmp(clg_device_error(dev), before), "%s", clg_device_error(dev));
    /* Their kernels are the table's: nothing more is built. */
    check_fill(dev, "-DT=float", 7);
    CHECK(clg__kernel_get(dev, "scalar", "-DT=float -DCLG_F32", "mul_scalar_flat") != NULL);
    CHECK(built(dev) == 3);
    /* Again: all built already (the failing one is tried again, and fails again). */
    CHECK(clg__programs_build(dev, 6, reqs) == 0);
    /* The failing build is reported by the kernel's request, with its log. */
    CHECK(clg__kernel_get(dev, "axpy", "-DT=no_such_type_xyz", "fill") == NULL);
    CHECK_MSG(clg_device_last_status(dev) == CLG_ERR_BUILD && strstr(clg_device_error(dev), "no_such_type_xyz"), "%s",
              clg_device_error(dev));
    /* One thread: the same, in the caller's. */
    CHECK_OK(dev, clg_device_set_param(dev, "build_threads", "1"));
    clg_program_req one[] = {{"axpy", "-DT=int"}};
    CHECK(clg__programs_build(dev, 1, one) == 1);
    CHECK(clg__kernel_get(dev, "axpy", "-DT=int", "fill") != NULL && built(dev) == 4);
    CHECK(clg__programs_build(dev, 0, NULL) == 0);
    clg_device_close(dev);

    bundles();
    /* A step's programs ahead (and the convolutions' where a Conv2d comes first), side by
     * side and as one bundle: all of them used by the step. */
    for (int run = 0; run < 4; run++) {
        bool cnn = run & 1, bundled = run >= 2;
        dev = check_open_device();
        CHECK_OK(dev, clg_device_set_param(dev, "build_threads", bundled ? "1" : "2"));
        CHECK_OK(dev, clg_device_set_param(dev, "gemm", "packed"));   /* no tuning (llvmpipe's default) */
        train_step(dev, cnn, bundled);
        CHECK_MSG(clg__programs_idle(dev) == 0, "%d programs built ahead and not used (%s%s)", clg__programs_idle(dev),
                  cnn ? "CNN" : "MLP", bundled ? ", bundled" : "");
        clg_device_close(dev);
    }
    bundle_sources_apart();
    fusable_sources();
    return check_report("test_program_build");
}
