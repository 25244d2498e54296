/* The DataLoader on synthetic datasets (one through a user-written vtable): batches
 * independent of the thread count, every sample once per epoch, drop_last, the
 * transforms against host references, one-hot labels, exact transfer counts, resuming
 * from a position, errors from a dataset, waits, and shutdown mid-epoch. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "data_impl.h"

enum { N = 1000, C = 2, H = 6, W = 5, NUMEL = C * H * W, CLASSES = 7 };

/* A user dataset: sample i holds i * 1000 + k at element k, label i % 7; sample
 * `fail_at` fails; `sleep_us` per sample simulates slow storage. */
typedef struct synth { int64_t n; int64_t fail_at; long sleep_us; } synth;

static int64_t synth_length(void *self) { return ((synth *)self)->n; }

static clg_status synth_get(void *self, int64_t i, float *x, int32_t *label, char *err, size_t errlen)
{
    synth *s = self;
    if (i == s->fail_at) {
        snprintf(err, errlen, "synthetic sample %lld is unreadable", (long long)i);
        return CLG_ERR_IO;
    }
    if (s->sleep_us) nanosleep(&(struct timespec){0, s->sleep_us * 1000}, NULL);
    for (int k = 0; k < NUMEL; k++) x[k] = (float)(i * 1000 + k);
    *label = (int32_t)(i % CLASSES);
    return CLG_OK;
}

static void synth_free(void *self) { free(self); }

static const clg_dataset_i synth_iface = {synth_length, synth_get, synth_free};

static clg_dataset *make_synth(int64_t n, int64_t fail_at, long sleep_us)
{
    synth *s = malloc(sizeof *s);
    *s = (synth){n, fail_at, sleep_us};
    clg_dataset *ds;
    char err[256];
    CHECK_MSG(clg_dataset_new(&synth_iface, s, 3, (const int64_t[]){C, H, W}, CLASSES, &ds, err, sizeof err) == CLG_OK,
              "%s", err);
    return ds;
}

/* All batches of `epochs` epochs, x and y bytes concatenated; returns the batch count. */
typedef struct run { float *x; float *y; int64_t batches, samples; int64_t sizes[64]; } run;

static run collect(clg_device *dev, clg_dataset *ds, const clg_loader_config *cfg, int epochs)
{
    run r = {0};
    clg_loader *l;
    CHECK_OK(dev, clg_loader_new(dev, ds, cfg, &l));
    if (!l) return r;
    int64_t ycols = cfg->one_hot ? CLASSES : 1;
    r.x = malloc((size_t)epochs * N * NUMEL * sizeof(float));
    r.y = malloc((size_t)epochs * N * ycols * sizeof(float));
    for (int e = 0; e < epochs; e++) {
        for (;;) {
            clg_scope_begin(dev);
            clg_tensor *x, *y;
            CHECK_OK(dev, clg_loader_next(l, &x, &y));
            if (!x) {
                clg_scope_end(dev);
                break;
            }
            int64_t b = clg_tensor_dim(x, 0);
            CHECK(clg_tensor_ndim(x) == 4 && clg_tensor_dim(x, 1) == C && clg_tensor_dim(x, 3) == W);
            CHECK(clg_tensor_dim(y, 0) == b && clg_tensor_ndim(y) == (cfg->one_hot ? 2 : 1));
            CHECK_OK(dev, clg_tensor_to_host(x, r.x + r.samples * NUMEL, (size_t)b * NUMEL * sizeof(float)));
            if (cfg->one_hot) {
                CHECK_OK(dev, clg_tensor_to_host(y, r.y + r.samples * CLASSES, (size_t)b * CLASSES * sizeof(float)));
            } else {
                int32_t *yi = malloc((size_t)b * sizeof *yi);
                CHECK_OK(dev, clg_tensor_to_host(y, yi, (size_t)b * sizeof *yi));
                for (int64_t k = 0; k < b; k++) r.y[r.samples + k] = (float)yi[k];
                free(yi);
            }
            if (r.batches < 64) r.sizes[r.batches] = b;
            r.batches++;
            r.samples += b;
            clg_scope_end(dev);
        }
    }
    CHECK(clg_loader_get_stats(l).batches == (uint64_t)r.batches);
    clg_loader_free(l);
    return r;
}

static void free_run(run *r) { free(r->x); free(r->y); }

/* Which sample each batch row came from (no transforms: x[0] = i * 1000). */
static void check_coverage(const run *r, int64_t per_epoch, int epochs, bool exact)
{
    for (int e = 0; e < epochs; e++) {
        char seen[N] = {0};
        int64_t dup = 0, bad = 0;
        for (int64_t k = 0; k < per_epoch; k++) {
            const float *x = r->x + (e * per_epoch + k) * NUMEL;
            int64_t i = (int64_t)x[0] / 1000;
            if (i < 0 || i >= N || x[NUMEL - 1] != (float)(i * 1000 + NUMEL - 1) || r->y[e * per_epoch + k] != i % CLASSES)
                bad++;
            else if (seen[i]++)
                dup++;
        }
        CHECK_MSG(bad == 0 && dup == 0, "epoch %d: %lld wrong rows, %lld repeated samples", e, (long long)bad,
                  (long long)dup);
        int64_t distinct = 0;
        for (int i = 0; i < N; i++) distinct += seen[i] != 0;
        CHECK(exact ? distinct == N : distinct == per_epoch);
    }
}

static void order_and_coverage(clg_device *dev, clg_dataset *ds)
{
    clg_loader_config cfg = clg_loader_defaults(64);
    cfg.shuffle = true;
    cfg.seed = 1234;
    run a = collect(dev, ds, &cfg, 2);
    CHECK(a.batches == 32 && a.samples == 2 * N && a.sizes[15] == N - 15 * 64);
    check_coverage(&a, N, 2, true);
    /* Epochs differ, and the first epoch is not the identity. */
    CHECK(memcmp(a.x, a.x + N * NUMEL, N * NUMEL * sizeof(float)) != 0);
    int64_t in_place = 0;
    for (int64_t k = 0; k < N; k++) in_place += a.x[k * NUMEL] == (float)(k * 1000);
    CHECK_MSG(in_place < 20, "%lld of %d samples unmoved by the shuffle", (long long)in_place, N);
    /* 1, 2 and 4 workers, with more prefetch: the same bytes. */
    for (int w = 2; w <= 4; w += 2) {
        cfg.workers = w;
        cfg.prefetch = 2 * w;
        run b = collect(dev, ds, &cfg, 2);
        CHECK_MSG(b.samples == a.samples && !memcmp(a.x, b.x, (size_t)a.samples * NUMEL * sizeof(float)) &&
                  !memcmp(a.y, b.y, (size_t)a.samples * sizeof(float)), "%d workers changed the batches", w);
        free_run(&b);
    }
    cfg.seed = 1235;
    run c = collect(dev, ds, &cfg, 1);
    CHECK(memcmp(a.x, c.x, N * NUMEL * sizeof(float)) != 0);
    free_run(&c);
    /* drop_last: 15 full batches, each sample at most once. */
    cfg.drop_last = true;
    run d = collect(dev, ds, &cfg, 2);
    CHECK(d.batches == 30 && d.samples == 2 * 960 && d.sizes[14] == 64);
    check_coverage(&d, 960, 2, false);
    free_run(&d);
    /* No shuffle: the dataset's order. */
    cfg = clg_loader_defaults(100);
    run e = collect(dev, ds, &cfg, 1);
    bool ordered = e.samples == N;
    for (int64_t k = 0; ordered && k < N; k++) ordered = e.x[k * NUMEL + 3] == (float)(k * 1000 + 3);
    CHECK(ordered);
    free_run(&e);
    free_run(&a);
}

/* Does out (one [H, W] plane) equal in shifted by (dy, dx) with zero fill? */
static bool shifted(const float *in, const float *out, int dy, int dx, bool flip)
{
    for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++) {
            int si = i + dy, sj = (flip ? W - 1 - j : j) + dx;
            float want = si >= 0 && si < H && sj >= 0 && sj < W ? in[si * W + sj] : 0;
            if (out[i * W + j] != want) return false;
        }
    return true;
}

static void transforms(clg_device *dev, clg_dataset *ds)
{
    clg_loader_config cfg = clg_loader_defaults(50);
    const float mean[2] = {100, 200}, std[2] = {4, 0.5f};
    cfg.scale = 0.5f;
    cfg.norm_channels = 2;
    cfg.mean = mean;
    cfg.std = std;
    run r = collect(dev, ds, &cfg, 1);
    bool ok = r.samples == N;
    for (int64_t k = 0; ok && k < N; k++)
        for (int e = 0; ok && e < NUMEL; e++) {
            int c = e / (H * W);
            ok = r.x[k * NUMEL + e] == ((float)(k * 1000 + e) * 0.5f - mean[c]) / std[c];
        }
    CHECK_MSG(ok, "scale and per-channel normalisation differ from the host reference");
    free_run(&r);

    /* Crop with padding 2 and flips: each plane is the original, maybe mirrored, shifted
     * by the same (dy, dx) in [-2, 2] in both channels; about half are flipped. */
    cfg = clg_loader_defaults(50);
    cfg.crop_padding = 2;
    cfg.hflip = true;
    cfg.seed = 99;
    r = collect(dev, ds, &cfg, 1);
    int flips = 0, moved = 0, bad = 0;
    float in[NUMEL];
    for (int64_t k = 0; k < N; k++) {
        for (int e = 0; e < NUMEL; e++) in[e] = (float)(k * 1000 + e);
        const float *out = r.x + k * NUMEL;
        bool found = false;
        for (int f = 0; f < 2 && !found; f++)
            for (int dy = -2; dy <= 2 && !found; dy++)
                for (int dx = -2; dx <= 2 && !found; dx++)
                    if (shifted(in, out, dy, dx, f) && shifted(in + H * W, out + H * W, dy, dx, f)) {
                        found = true;
                        flips += f;
                        moved += dy || dx;
                    }
        bad += !found;
    }
    CHECK_MSG(bad == 0, "%d samples are no crop or flip of their original", bad);
    CHECK_MSG(flips > 400 && flips < 600 && moved > 800, "flips %d, moved %d of %d", flips, moved, N);
    free_run(&r);

    cfg = clg_loader_defaults(128);
    cfg.one_hot = true;
    cfg.shuffle = true;
    r = collect(dev, ds, &cfg, 1);
    ok = r.samples == N;
    for (int64_t k = 0; ok && k < N; k++) {
        int64_t i = (int64_t)r.x[k * NUMEL] / 1000;
        for (int c = 0; ok && c < CLASSES; c++) ok = r.y[k * CLASSES + c] == (c == i % CLASSES ? 1.0f : 0.0f);
    }
    CHECK_MSG(ok, "one-hot labels wrong");
    free_run(&r);
}

/* Only the batches cross to the device, counted exactly; nothing outlives the scope. */
static void transfers_and_position(clg_device *dev, clg_dataset *ds)
{
    clg_loader_config cfg = clg_loader_defaults(64);
    cfg.shuffle = true;
    cfg.seed = 7;
    cfg.workers = 3;
    clg_loader *l;
    CHECK_OK(dev, clg_loader_new(dev, ds, &cfg, &l));
    CHECK(clg_loader_num_batches(l) == 16);
    clg_device_transfers_reset(dev);
    float want[NUMEL * 64], got[NUMEL * 64];
    for (int b = 0; b < 21; b++) {   /* into epoch 1 */
        clg_scope_begin(dev);
        clg_tensor *x, *y;
        CHECK_OK(dev, clg_loader_next(l, &x, &y));
        if (b == 16) CHECK(x == NULL && y == NULL && clg_loader_get_position(l).epoch == 1);
        if (b == 20) {
            CHECK(clg_loader_get_position(l).epoch == 1 && clg_loader_get_position(l).batch == 4);
            CHECK(clg_tensor_dim(x, 0) == 64);
            CHECK_OK(dev, clg_tensor_to_host(x, want, sizeof want));
        }
        clg_scope_end(dev);
    }
    clg_transfer_stats t = clg_device_transfers(dev);
    int64_t samples = 15 * 64 + 40 + 4 * 64;
    CHECK_MSG(t.h2d_bytes == (uint64_t)samples * (NUMEL * 4 + 4) && t.h2d_count == 40,
              "h2d %llu bytes in %llu copies", (unsigned long long)t.h2d_bytes, (unsigned long long)t.h2d_count);
    CHECK(clg_tensor_live_count(dev) == 0);
    clg_loader_position p = clg_loader_get_position(l);
    CHECK(p.epoch == 1 && p.batch == 4 && p.seed == 7);
    /* Back to (1, 3) on this loader, and on a new one with other thread counts. */
    CHECK_OK(dev, clg_loader_set_position(l, (clg_loader_position){1, 3, 7}));
    for (int round = 0; round < 2; round++) {
        clg_scope_begin(dev);
        clg_tensor *x, *y;
        CHECK_OK(dev, clg_loader_next(l, &x, &y));
        CHECK_OK(dev, clg_tensor_to_host(x, got, sizeof got));
        CHECK_MSG(!memcmp(want, got, sizeof want), "resumed batch differs (round %d)", round);
        clg_scope_end(dev);
        if (round == 0) {
            clg_loader_free(l);
            cfg.workers = 1;
            cfg.seed = 0;   /* the position's seed wins */
            CHECK_OK(dev, clg_loader_new(dev, ds, &cfg, &l));
            CHECK_OK(dev, clg_loader_set_position(l, (clg_loader_position){1, 3, 7}));
        }
    }
    CHECK(clg_loader_set_position(l, (clg_loader_position){0, 17, 7}) == CLG_ERR_INVALID_ARGUMENT);
    clg_loader_free(l);
}

static void errors_waits_shutdown(clg_device *dev)
{
    /* A failing sample: the error names it; the loader is freed cleanly after. */
    clg_dataset *ds = make_synth(300, 133, 0);
    clg_loader_config cfg = clg_loader_defaults(32);
    cfg.workers = 2;
    clg_loader *l;
    CHECK_OK(dev, clg_loader_new(dev, ds, &cfg, &l));
    clg_status st = CLG_OK;
    for (int b = 0; b < 10 && st == CLG_OK; b++) {
        clg_scope_begin(dev);
        clg_tensor *x, *y;
        st = clg_loader_next(l, &x, &y);
        CHECK(st != CLG_OK || b < 4);
        clg_scope_end(dev);
    }
    CHECK(st == CLG_ERR_IO && strstr(clg_device_error(dev), "synthetic sample 133 is unreadable"));
    clg_loader_free(l);
    clg_dataset_free(ds);

    /* Slow data: the loop's waits are measured. */
    ds = make_synth(64, -1, 2000);
    cfg = clg_loader_defaults(8);
    CHECK_OK(dev, clg_loader_new(dev, ds, &cfg, &l));
    for (int b = 0; b < 4; b++) {
        clg_scope_begin(dev);
        clg_tensor *x, *y;
        CHECK_OK(dev, clg_loader_next(l, &x, &y));
        clg_scope_end(dev);
    }
    clg_loader_stats s = clg_loader_get_stats(l);
    CHECK_MSG(s.batches == 4 && s.wait_seconds > 0.02 && s.max_wait >= s.last_wait && s.max_wait > 0.005,
              "waits: total %g, max %g", s.wait_seconds, s.max_wait);
    clg_loader_free(l);   /* mid-epoch, workers busy sleeping */
    clg_dataset_free(ds);

    /* Freed at once, and freed mid-epoch with many workers. */
    ds = make_synth(N, -1, 0);
    cfg = clg_loader_defaults(16);
    cfg.workers = 4;
    cfg.prefetch = 8;
    CHECK_OK(dev, clg_loader_new(dev, ds, &cfg, &l));
    clg_loader_free(l);
    CHECK_OK(dev, clg_loader_new(dev, ds, &cfg, &l));
    clg_scope_begin(dev);
    clg_tensor *x, *y;
    CHECK_OK(dev, clg_loader_next(l, &x, &y));
    clg_loader_free(l);   /* before the batch's tensors go: they do not depend on the loader */
    float v[NUMEL];
    CHECK_OK(dev, clg_tensor_to_host(clg_narrow(x, 0, 15, 1), v, sizeof v));
    CHECK(v[0] == 15000);
    clg_scope_end(dev);

    /* Bad configurations. */
    const clg_loader_config bad[] = {
        clg_loader_defaults(0),
        {.batch_size = 4, .workers = 0, .prefetch = 1, .scale = 1},
        {.batch_size = 4, .workers = 1, .prefetch = 1, .scale = 0},
        {.batch_size = 4, .workers = 1, .prefetch = 1, .scale = 1, .norm_channels = 3, .mean = (float[3]){0},
         .std = (float[3]){1, 1, 1}},
        {.batch_size = 4, .workers = 1, .prefetch = 1, .scale = 1, .norm_channels = 1, .mean = (float[1]){0},
         .std = (float[1]){0}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(clg_loader_new(dev, ds, &bad[i], &l) == CLG_ERR_INVALID_ARGUMENT && l == NULL);
        CHECK(strstr(clg_device_error(dev), "clg_loader_new") != NULL);
    }
    clg_dataset_free(ds);
}

int main(void)
{
    clg_device *dev = check_open_device();
    clg_dataset *ds = make_synth(N, -1, 0);
    order_and_coverage(dev, ds);
    transforms(dev, ds);
    transfers_and_position(dev, ds);
    clg_dataset_free(ds);
    errors_waits_shutdown(dev);
    CHECK(clg_tensor_live_count(dev) == 0);
    clg_device_close(dev);
    return check_report("test_data_loader");
}
