/* The transport hook of clgrad/dist.h, through the public API of libclgrad alone (no
 * MPI, no libclgrad-dist): what libclgrad-dist's MPI transport plugs into.
 *
 * - A "mirror" transport, rank 0 of 2 whose other rank holds the same values (its sums
 *   double, its broadcasts keep): clg_dist_allreduce_grads gives back each gradient
 *   (the global batch's mean over two equal halves), clg_dist_sum doubles, the reduction
 *   runs on the transport (from the reducer's thread), abort and finalize reach it.
 * - Without a layers' channel, clg_dist_all_reduce and synchronised batch norm are
 *   refused with the transport's reason.
 * - Refused: a transport with a rank outside [0, size) or without its calls (left
 *   unfinalised: the caller's still), and no transport under an MPI launcher's
 *   environment (naming libclgrad-dist). */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "check.h"

typedef struct mirror {
    int allreduces, bcasts, finalized, aborted;   /* serialised by libclgrad (dist.h) */
} mirror;

static clg_status m_allreduce(void *ctx, void *buf, int64_t count, bool f64, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    ((mirror *)ctx)->allreduces++;
    for (int64_t i = 0; i < count; i++)
        if (f64) ((double *)buf)[i] *= 2;
        else ((float *)buf)[i] *= 2;
    return CLG_OK;
}

static clg_status m_bcast(void *ctx, void *buf, size_t bytes, char *err, size_t errlen)
{
    (void)buf, (void)bytes, (void)err, (void)errlen;
    ((mirror *)ctx)->bcasts++;
    return CLG_OK;
}

static void m_abort(void *ctx, int code) { ((mirror *)ctx)->aborted = code; }
static void m_finalize(void *ctx) { ((mirror *)ctx)->finalized++; }

static clg_dist_transport mirror_transport(mirror *m)
{
    return (clg_dist_transport){.rank = 0, .size = 2, .ctx = m, .allreduce = m_allreduce, .bcast = m_bcast,
                                .no_layers = "no layers' channel in this test", .abort = m_abort,
                                .finalize = m_finalize};
}

/* Rank 0 of a mirrored pair: every call as one process would see it. */
static void mirrored(clg_device *dev)
{
    mirror m = {0};
    clg_dist_transport t = mirror_transport(&m);
    clg_dist *d = NULL;
    char err[512] = "";
    CHECK_MSG(clg_dist_new(&t, NULL, &d, err, sizeof err) == CLG_OK, "%s", err);
    if (!d) return;
    CHECK(clg_dist_rank(d) == 0 && clg_dist_size(d) == 2);
    clg_scope_begin(dev);
    float a[3] = {1, -2, 3};
    clg_tensor *p = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(3), a);
    clg_tensor_set_requires_grad(p, true);
    CHECK_OK(dev, clg_dist_broadcast(d, 1, 1, &p));
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul(p, p), 0, NULL, false), NULL));   /* grad 2p */
    const int64_t count = 3;
    CHECK_MSG(clg_dist_allreduce_grads(d, 1, 1, &p, &count) == CLG_OK, "%s", clg_dist_error(d));
    float g[3];
    CHECK_OK(dev, clg_tensor_to_host(clg_tensor_grad(p), g, sizeof g));
    for (int i = 0; i < 3; i++) CHECK_MSG(fabsf(g[i] - 2 * a[i]) <= 1e-6f, "grad[%d] %g, want %g", i, g[i], 2 * a[i]);
    double v[2] = {1.5, -4};
    CHECK_OK(dev, clg_dist_sum(d, v, 2));
    CHECK_MSG(v[0] == 3 && v[1] == -8, "sum %g %g", v[0], v[1]);
    /* the counts' total, a bucket of gradients, the sum; one broadcast */
    CHECK_MSG(m.allreduces == 3 && m.bcasts == 1, "%d allreduces, %d broadcasts", m.allreduces, m.bcasts);
    CHECK(clg_dist_all_reduce(d, p, 1) == NULL && strstr(clg_device_error(dev), "no layers' channel in this test"));
    clg_module *bn = clg_nn_batch_norm2d(dev, 2, 1e-5, 0.1);
    CHECK(clg_dist_sync_batch_norm(d, bn, NULL) == CLG_ERR_UNSUPPORTED &&
          strstr(clg_dist_error(d), "no layers' channel in this test"));
    clg_dist_abort(d, 7);
    CHECK(m.aborted == 7 && m.finalized == 0);
    clg_dist_detach(d);
    clg_scope_end(dev);
    clg_module_free(bn);
    clg_dist_free(d);
    CHECK_MSG(m.finalized == 1, "finalized %d times", m.finalized);
}

static void refusals(void)
{
    mirror m = {0};
    clg_dist_transport t = mirror_transport(&m);
    t.rank = 2;
    clg_dist *d = (clg_dist *)&m;
    char err[512] = "";
    CHECK(clg_dist_new(&t, NULL, &d, err, sizeof err) == CLG_ERR_INVALID_ARGUMENT && d == NULL &&
          strstr(err, "rank 2 of 2"));
    t = mirror_transport(&m);
    t.bcast = NULL;
    CHECK(clg_dist_new(&t, NULL, &d, err, sizeof err) == CLG_ERR_INVALID_ARGUMENT && strstr(err, "without bcast"));
    CHECK(m.finalized == 0);   /* a refused transport stays the caller's */
    /* mpirun's environment and no transport: each rank would train alone */
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    CHECK(clg_dist_launched());
    CHECK(clg_dist_new(NULL, NULL, &d, err, sizeof err) == CLG_ERR_UNSUPPORTED && strstr(err, "libclgrad-dist"));
    unsetenv("OMPI_COMM_WORLD_SIZE");
    CHECK(!clg_dist_launched() || getenv("PMIX_RANK") || getenv("PMI_SIZE"));
}

int main(void)
{
    refusals();   /* first: it changes the environment before any thread runs */
    clg_device *dev = check_open_device();
    mirrored(dev);
    clg_device_close(dev);
    return check_report("test_dist_transport");
}
