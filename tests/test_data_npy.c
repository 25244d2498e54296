/* .npy: round trips of every type, NumPy reading clgrad's files and clgrad reading
 * NumPy's (Debian's python3-numpy), Fortran order, tensors, and malformed files:
 * every truncation, bad headers, each with a message naming the file. */
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "data_impl.h"

static char dir[] = "/tmp/clg_npy_XXXXXX";

static const char *path(const char *name)
{
    static char p[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void write_bytes(const char *p, const void *b, size_t n)
{
    FILE *f = fopen(p, "wb");
    CHECK(f && fwrite(b, 1, n, f) == n);
    if (f) fclose(f);
}

/* An array of type t, shape [2, 3, 4] filled with i * 3 - 7 (negative where signed). */
static clg_host_array sample(clg_elem_type t)
{
    clg_host_array a;
    char err[256];
    CHECK(clg__host_array_alloc(&a, t, 3, (const int64_t[]){2, 3, 4}, "x", err, sizeof err) == CLG_OK);
    for (int i = 0; i < 24; i++) {
        double v = t == CLG_ELEM_U8 ? i * 10 : i * 3 - 7 + (t >= CLG_ELEM_F32 ? 0.25 : 0);
        unsigned char *p = (unsigned char *)a.data + i * clg_elem_size(t);
        switch (t) {
        case CLG_ELEM_U8: *p = (unsigned char)v; break;
        case CLG_ELEM_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); } break;
        case CLG_ELEM_I64: { int64_t x = (int64_t)v * 1000000000LL; memcpy(p, &x, 8); } break;
        case CLG_ELEM_F32: { float x = (float)v; memcpy(p, &x, 4); } break;
        default: memcpy(p, &v, 8);
        }
    }
    return a;
}

static void round_trips(void)
{
    char err[512];
    for (int t = 0; t <= CLG_ELEM_F64; t++) {   /* the types .npy files hold here (data.h) */
        clg_host_array a = sample((clg_elem_type)t), b;
        char name[64];
        snprintf(name, sizeof name, "rt_%s.npy", clg_elem_name((clg_elem_type)t));
        CHECK_MSG(clg_npy_write(path(name), &a, err, sizeof err) == CLG_OK, "%s", err);
        CHECK_MSG(clg_npy_read(path(name), &b, err, sizeof err) == CLG_OK, "%s", err);
        CHECK(b.type == a.type && b.ndim == 3 && b.shape[0] == 2 && b.shape[2] == 4 && b.bytes == a.bytes);
        CHECK(b.data && !memcmp(a.data, b.data, a.bytes));
        /* The header is padded to 64 bytes and ends in a newline, as NumPy's. */
        unsigned char *raw;
        size_t len;
        CHECK(clg__read_file(path(name), &raw, &len, err, sizeof err) == CLG_OK);
        size_t hl = raw[8] | raw[9] << 8;
        CHECK((10 + hl) % 64 == 0 && raw[9 + hl] == '\n' && len == 10 + hl + a.bytes);
        free(raw);
        clg_host_array_free(&a);
        clg_host_array_free(&b);
    }
    /* The element types only safetensors files hold are refused, by name. */
    clg_host_array h = {.type = CLG_ELEM_BF16, .ndim = 1, .shape = {2}, .data = &(uint32_t){0}, .bytes = 4};
    CHECK(clg_npy_write(path("bf16.npy"), &h, err, sizeof err) == CLG_ERR_DTYPE);
    CHECK_MSG(strstr(err, "bfloat16"), "%s", err);
    /* Scalars and 1-axis arrays: "()" and "(5,)". */
    clg_host_array s = {.type = CLG_ELEM_F64, .ndim = 0, .data = &(double){2.5}, .bytes = 8}, r;
    CHECK(clg_npy_write(path("scalar.npy"), &s, err, sizeof err) == CLG_OK);
    CHECK(clg_npy_read(path("scalar.npy"), &r, err, sizeof err) == CLG_OK && r.ndim == 0 && *(double *)r.data == 2.5);
    clg_host_array_free(&r);
    int32_t v5[5] = {1, 2, 3, 4, 5};
    clg_host_array one = {.type = CLG_ELEM_I32, .ndim = 1, .shape = {5}, .data = v5, .bytes = 20};
    CHECK(clg_npy_write(path("one.npy"), &one, err, sizeof err) == CLG_OK);
    unsigned char *raw;
    size_t len;
    CHECK(clg__read_file(path("one.npy"), &raw, &len, err, sizeof err) == CLG_OK);
    CHECK(strstr((char *)raw + 10, "'shape': (5,)") != NULL);
    free(raw);
    /* A struct whose byte count disagrees with its shape is refused, not written. */
    one.bytes = 16;
    CHECK(clg_npy_write(path("bad.npy"), &one, err, sizeof err) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(access(path("bad.npy"), F_OK) != 0);
}

static const char *python(void)
{
    const char *p = getenv("CLG_TEST_PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

/* NumPy checks clgrad's files, then writes its own (v1, v2, v3 headers, Fortran order,
 * every type) for clgrad to check. */
static const char *script =
    "import sys, numpy as np\n"
    "d = sys.argv[1]\n"
    "names = {'uint8': np.uint8, 'int32': np.int32, 'int64': np.int64, 'float32': np.float32, 'float64': np.float64}\n"
    "for n, t in names.items():\n"
    "    a = np.load(d + '/rt_' + n + '.npy')\n"
    "    i = np.arange(24).reshape(2, 3, 4)\n"
    "    want = (i * 10) if n == 'uint8' else (i * 3 - 7) * (10**9 if n == 'int64' else 1) + (0.25 if n.startswith('f') else 0)\n"
    "    assert a.dtype == t and a.shape == (2, 3, 4), (n, a.dtype, a.shape)\n"
    "    assert (a == want.astype(t)).all(), n\n"
    "    np.save(d + '/np_' + n + '.npy', want.astype(t))\n"
    "assert np.load(d + '/scalar.npy') == 2.5 and np.load(d + '/scalar.npy').shape == ()\n"
    "f = np.asfortranarray(np.arange(60, dtype=np.float32).reshape(3, 4, 5))\n"
    "np.save(d + '/np_fortran.npy', f)\n"
    "from numpy.lib import format as fmt\n"
    "for v in [(2, 0), (3, 0)]:\n"
    "    with open(d + '/np_v%d.npy' % v[0], 'wb') as fh:\n"
    "        a = np.arange(6, dtype='<i8').reshape(2, 3)\n"
    "        fmt.write_array(fh, a, version=v)\n"
    "np.save(d + '/np_big.npy', np.arange(4, dtype='>f4'))\n"
    "np.save(d + '/np_obj.npy', np.array([{'a': 1}], dtype=object), allow_pickle=True)\n"
    "np.save(d + '/np_i16.npy', np.arange(4, dtype=np.int16))\n"
    "print('numpy ok')\n";

static void numpy_interop(void)
{
    char err[512], cmd[1024];
    write_bytes(path("check.py"), script, strlen(script));
    snprintf(cmd, sizeof cmd, "%s %s %s", python(), path("check.py"), dir);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "NumPy did not accept clgrad's .npy files (or python3-numpy is missing: "
                       "apt-get install python3-numpy): %s exited %d", cmd, rc);
    for (int t = 0; t <= CLG_ELEM_F64; t++) {   /* the .npy types (data.h) */
        char name[64];
        snprintf(name, sizeof name, "np_%s.npy", clg_elem_name((clg_elem_type)t));
        clg_host_array want = sample((clg_elem_type)t), got;
        CHECK_MSG(clg_npy_read(path(name), &got, err, sizeof err) == CLG_OK, "%s", err);
        CHECK_MSG(got.type == want.type && got.bytes == want.bytes && got.data && !memcmp(got.data, want.data, want.bytes),
                  "%s differs", name);
        clg_host_array_free(&want);
        clg_host_array_free(&got);
    }
    clg_host_array f;
    CHECK_MSG(clg_npy_read(path("np_fortran.npy"), &f, err, sizeof err) == CLG_OK, "%s", err);
    bool ok = f.ndim == 3 && f.shape[0] == 3 && f.shape[1] == 4 && f.shape[2] == 5;
    for (int i = 0; ok && i < 60; i++) ok = ((float *)f.data)[i] == (float)i;
    CHECK_MSG(ok, "Fortran-ordered array not reordered to row-major");
    clg_host_array_free(&f);
    for (int v = 2; v <= 3; v++) {
        char name[32];
        snprintf(name, sizeof name, "np_v%d.npy", v);
        CHECK_MSG(clg_npy_read(path(name), &f, err, sizeof err) == CLG_OK, "%s", err);
        CHECK(f.type == CLG_ELEM_I64 && f.ndim == 2 && ((int64_t *)f.data)[5] == 5);
        clg_host_array_free(&f);
    }
    CHECK(clg_npy_read(path("np_big.npy"), &f, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "big-endian"));
    CHECK(clg_npy_read(path("np_obj.npy"), &f, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "pickled"));
    CHECK(clg_npy_read(path("np_i16.npy"), &f, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "<i2"));
    CHECK(strstr(err, "np_i16.npy") != NULL);
}

/* A v1 file with the given header text (padded) and data. */
static size_t make_npy(unsigned char *buf, const char *header, const void *data, size_t n)
{
    size_t hl = strlen(header);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)hl;
    buf[9] = (unsigned char)(hl >> 8);
    memcpy(buf + 10, header, hl);
    memcpy(buf + 10 + hl, data, n);
    return 10 + hl + n;
}

static void malformed(void)
{
    char err[512];
    clg_host_array a;
    float data[6] = {0};
    unsigned char buf[4096];
    static const struct { const char *header, *expect; } bad[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", NULL},   /* the good one */
        {"{'descr': '<f4', 'fortran_order': False}", "missing"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", "unknown key"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", "repeated"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3)}", "fortran_order"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}", "non-negative"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", "tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3}", "')'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 3)}", "large"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6)}", "8 axes"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3)}", "not supported"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3)}", "structured"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}", "not supported"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} junk", "after the dict"},
        {"['descr', '<f4']", "not a dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4)}", "truncated"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}", "after the data"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4)}", "large"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1152921504606846976, 8)}", "truncated"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t n = make_npy(buf, bad[i].header, data, sizeof data);
        write_bytes(path("bad.npy"), buf, n);
        err[0] = 0;
        clg_status st = clg_npy_read(path("bad.npy"), &a, err, sizeof err);
        if (!bad[i].expect) {
            CHECK_MSG(st == CLG_OK && a.ndim == 2, "%s", err);
        } else {
            CHECK_MSG(st == CLG_ERR_FORMAT && strstr(err, bad[i].expect) && strstr(err, "bad.npy"),
                      "header %s gave '%s'", bad[i].header, err);
            CHECK(a.data == NULL);
        }
        clg_host_array_free(&a);
    }
    /* Every truncation of a good file fails cleanly; so do wrong magic and versions. */
    size_t n = make_npy(buf, bad[0].header, data, sizeof data);
    for (size_t cut = 0; cut < n; cut++) {
        CHECK_MSG(clg__npy_parse(buf, cut, "cut.npy", &a, err, sizeof err) == CLG_ERR_FORMAT && a.data == NULL,
                  "truncated at %zu", cut);
    }
    buf[1] = 'X';
    CHECK(clg__npy_parse(buf, n, "m.npy", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "magic"));
    buf[1] = 'N';
    buf[6] = 4;
    CHECK(clg__npy_parse(buf, n, "m.npy", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "version 4.0"));
    buf[6] = 2;   /* v2 reads 4 length bytes: 0x3b 0x00 + two header bytes make it huge */
    CHECK(clg__npy_parse(buf, n, "m.npy", &a, err, sizeof err) == CLG_ERR_FORMAT && strstr(err, "header of"));
    CHECK(clg_npy_read(path("missing.npy"), &a, err, sizeof err) == CLG_ERR_IO && strstr(err, "missing.npy"));
}

static void tensors(clg_device *dev)
{
    float v[6] = {1.5f, -2, 3, 4, 5, 6.25f};
    clg_tensor *t = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(2, 3), v);
    CHECK_OK(dev, clg_tensor_save_npy(t, path("t.npy")));
    clg_tensor *u = clg_tensor_load_npy(dev, path("t.npy"));
    float back[6] = {0};
    CHECK(u && clg_tensor_ndim(u) == 2 && clg_tensor_dim(u, 1) == 3 && clg_tensor_dtype(u) == CLG_F32);
    CHECK_OK(dev, clg_tensor_to_host(u, back, sizeof back));
    CHECK(!memcmp(v, back, sizeof v));
    /* int64 within int32 loads as int32; uint8 too; values past int32 are refused. */
    int32_t iv[3];
    clg_tensor *i = clg_tensor_load_npy(dev, path("np_v2.npy"));
    CHECK(i && clg_tensor_dtype(i) == CLG_I32 && clg_tensor_numel(i) == 6);
    int64_t big[3] = {1, (int64_t)1 << 40, 3};
    clg_host_array b = {.type = CLG_ELEM_I64, .ndim = 1, .shape = {3}, .data = big, .bytes = 24};
    char err[256];
    CHECK(clg_npy_write(path("big.npy"), &b, err, sizeof err) == CLG_OK);
    CHECK(clg_tensor_load_npy(dev, path("big.npy")) == NULL && strstr(clg_device_error(dev), "int32"));
    big[1] = -5;
    CHECK(clg_npy_write(path("big.npy"), &b, err, sizeof err) == CLG_OK);
    clg_tensor *k = clg_tensor_load_npy(dev, path("big.npy"));
    CHECK_OK(dev, clg_tensor_to_host(k, iv, sizeof iv));
    CHECK(iv[0] == 1 && iv[1] == -5 && iv[2] == 3);
    clg_tensor *u8 = clg_tensor_load_npy(dev, path("np_uint8.npy"));
    int32_t u8v[24] = {0};
    CHECK(u8 && clg_tensor_dtype(u8) == CLG_I32);
    CHECK_OK(dev, clg_tensor_to_host(u8, u8v, sizeof u8v));
    CHECK(u8v[0] == 0 && u8v[7] == 70 && u8v[23] == 230);
    CHECK(clg_tensor_load_npy(dev, path("bad.npy")) == NULL && strstr(clg_device_error(dev), "bad.npy"));
    CHECK(clg_tensor_save_npy(t, "/nonexistent-dir/x.npy") == CLG_ERR_IO &&
          strstr(clg_device_error(dev), "/nonexistent-dir/x.npy"));
    clg_tensor_free(t);
    clg_tensor_free(u);
    clg_tensor_free(i);
    clg_tensor_free(k);
    clg_tensor_free(u8);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    clg_device *dev = check_open_device();
    round_trips();
    numpy_interop();
    malformed();
    tensors(dev);
    CHECK(clg_tensor_live_count(dev) == 0);
    clg_device_close(dev);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return check_report("test_data_npy");
}
