/* dist_sync: collectives inside forward and backward on 2 ranks (mpirun -np 2, by
 * tests/mpi/run2.sh):
 *   - clg_dist_all_reduce sums over the ranks; its gradient is (sum of share * g) / share;
 *   - a small CNN with batch norm after its convolution and its hidden Linear, trained
 *     with synchronised batch norm on each rank's part of every batch (parts of unequal
 *     size, a step where rank 1 has nothing, one where each has 1 sample, which
 *     BatchNorm1d could not normalise alone), has the weights and running averages of
 *     one process trained on the whole batches, to float32 rounding; with each rank's
 *     own statistics it has not (the check can fail);
 *   - local replicas with synchronised batch norm are refused.
 * Every rank computes the one-process reference itself. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clgrad.h>
#include <clgrad/dist_mpi.h>   /* clg_dist_init: libclgrad-dist */

enum { C = 3, HW = 5, HID = 6, OUT = 3, MAXB = 9, MAXT = 32 };

static int failures;

#define EXPECT(cond, ...)                                                          \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "dist_sync: rank %d: line %d: ", rank, __LINE__);      \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
            failures++;                                                            \
        }                                                                          \
    } while (0)

static int rank;

/* conv 3x3 (padding 1) -> BatchNorm2d -> relu -> flatten -> linear -> BatchNorm1d -> relu -> linear */
static clg_module *cnn(clg_device *dev)
{
    clg_manual_seed(dev, 7);   /* the same weights every time, on every rank */
    clg_conv2d_params p = {.padding = {1, 1}};
    clg_module *l[] = {clg_nn_conv2d(dev, 1, C, 3, 3, &p, false), clg_nn_batch_norm2d(dev, C, 0, 0), clg_nn_relu(dev),
                       clg_nn_flatten(dev), clg_nn_linear(dev, C * HW * HW, HID, false),
                       clg_nn_batch_norm1d(dev, HID, 0, 0), clg_nn_relu(dev), clg_nn_linear(dev, HID, OUT, true)};
    return clg_nn_sequential(dev, 8, l);
}

typedef struct net {
    clg_module *m;
    clg_optimizer *opt;
    clg_trainer *t;
} net;

static net make(clg_device *dev, clg_dist *d, bool sync)
{
    net n = {cnn(dev), NULL, NULL};
    clg_tensor *p[16];
    int np = n.m ? clg_module_parameters(n.m, p, 16, true) : 0;
    if (sync && clg_dist_sync_batch_norm(d, n.m, NULL)) fprintf(stderr, "%s\n", clg_dist_error(d));
    n.opt = n.m ? clg_sgd_new(np, p, &(clg_sgd_options){.lr = 0.1, .momentum = 0.9}) : NULL;
    n.t = n.opt ? clg_trainer_new(n.m, n.opt, &(clg_trainer_options){.dist = d}) : NULL;
    return n;
}

static void drop(net *n)
{
    clg_trainer_free(n->t);
    clg_optimizer_free(n->opt);
    clg_module_free(n->m);
}

/* Sample i of step s: pixels and a label, the same on every rank. */
static float pixel(int s, int i, int j) { return sinf(0.37f * (float)(s * 101 + i * 29 + j)) + 0.2f * (float)(j % 3); }

/* Samples [from, to) of step s's batch as x, y; one step of n on them. */
static clg_status step(clg_device *dev, net *n, int s, int from, int to)
{
    float x[MAXB * HW * HW];
    int32_t y[MAXB];
    for (int i = from; i < to; i++) {
        for (int j = 0; j < HW * HW; j++) x[(i - from) * HW * HW + j] = pixel(s, i, j);
        y[i - from] = (s + i) % OUT;
    }
    clg_scope_begin(dev);
    clg_tensor *tx = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(to - from, 1, HW, HW), x);
    clg_tensor *ty = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(to - from), y);
    clg_status st = clg_trainer_step(n->t, tx, ty, NULL);
    clg_scope_end(dev);
    return st;
}

/* ||a - b|| / ||a|| over every parameter and running average (not the batch counters). */
static double distance(const clg_module *a, const clg_module *b)
{
    clg_named_tensor ta[MAXT], tb[MAXT];
    int n = clg_module_state(a, ta, MAXT);
    if (n != clg_module_state(b, tb, MAXT) || n > MAXT) return INFINITY;
    double diff = 0, norm = 0;
    for (int k = 0; k < n; k++) {
        if (clg_tensor_dtype(ta[k].tensor) != CLG_F32) continue;
        int64_t len = clg_tensor_numel(ta[k].tensor);
        float *va = malloc((size_t)len * sizeof *va), *vb = malloc((size_t)len * sizeof *vb);
        if (!va || !vb || clg_tensor_to_host(ta[k].tensor, va, (size_t)len * sizeof *va) ||
            clg_tensor_to_host(tb[k].tensor, vb, (size_t)len * sizeof *vb))
            diff = INFINITY;
        for (int64_t i = 0; va && vb && i < len; i++) {
            diff += ((double)va[i] - vb[i]) * ((double)va[i] - vb[i]);
            norm += (double)va[i] * va[i];
        }
        free(va);
        free(vb);
    }
    return sqrt(diff / norm);
}

/* y = all_reduce(x, share) with x = (r + 1) * [1, 2, 3] on rank r, loss sum(y * (r + 1)):
 * y = 3 [1, 2, 3]; x's gradient (sum over ranks of share_r (r + 1)) / share (or the sum
 * itself where share is 0). */
static void all_reduce_checks(clg_device *dev, clg_dist *d, const double share[2])
{
    float xv[3] = {1.0f * (float)(rank + 1), 2.0f * (float)(rank + 1), 3.0f * (float)(rank + 1)}, yv[3], gv[3];
    clg_scope_begin(dev);
    clg_tensor *x = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(3), xv);
    clg_tensor_set_requires_grad(x, true);
    clg_tensor *y = clg_dist_all_reduce(d, x, share[rank]);
    clg_status st = clg_backward(clg_sum(clg_mul_scalar(y, rank + 1), 0, NULL, false), NULL);
    EXPECT(st == CLG_OK && !clg_tensor_to_host(y, yv, sizeof yv) &&
               !clg_tensor_to_host(clg_tensor_grad(x), gv, sizeof gv),
           "all_reduce: %s", clg_device_error(dev));
    double want = (share[0] * 1 + share[1] * 2) / (share[rank] > 0 ? share[rank] : 1);
    for (int i = 0; !st && i < 3; i++) {
        EXPECT(yv[i] == 3.0f * (float)(i + 1), "all_reduce: y[%d] = %g, not %d", i, yv[i], 3 * (i + 1));
        EXPECT(fabs(gv[i] - want) < 1e-6, "all_reduce shares %g, %g: gradient %g, not %g", share[0], share[1], gv[i],
               want);
    }
    clg_scope_end(dev);
}

/* Steps: the global batch and rank 0's part of it (rank 1 has the rest). */
static const int STEPS[][2] = {{8, 5}, {7, 4}, {3, 3}, {6, 3}, {2, 1}, {9, 4}};
enum { NSTEPS = 6, LOCAL_STEPS = 2 };

static void training_checks(clg_device *dev, clg_dist *d)
{
    net ref = make(dev, NULL, false), syn = make(dev, d, true), loc = make(dev, d, false);
    EXPECT(ref.t && syn.t && loc.t, "setup: %s", clg_device_error(dev));
    for (int s = 0; ref.t && syn.t && loc.t && s < NSTEPS; s++) {
        int n = STEPS[s][0], k = STEPS[s][1], from = rank == 0 ? 0 : k, to = rank == 0 ? k : n;
        EXPECT(step(dev, &ref, s, 0, n) == CLG_OK, "step %d, one process: %s", s, clg_device_error(dev));
        EXPECT(step(dev, &syn, s, from, to) == CLG_OK, "step %d, synchronised: %s", s, clg_device_error(dev));
        if (s < LOCAL_STEPS)
            EXPECT(step(dev, &loc, s, from, to) == CLG_OK, "step %d, local statistics: %s", s, clg_device_error(dev));
        if (s == LOCAL_STEPS - 1) {
            double dl = distance(ref.m, loc.m);
            EXPECT(dl > 1e-3, "local statistics after %d steps: %.3g from one process (the check cannot fail)",
                   LOCAL_STEPS, dl);
            if (rank == 0) printf("dist_sync: local statistics after %d steps: %.3g from one process\n", s + 1, dl);
        }
    }
    double ds = distance(ref.m, syn.m);
    EXPECT(ds <= 1e-5, "synchronised batch norm after %d steps: %.3g from one process", NSTEPS, ds);
    if (rank == 0) printf("dist_sync: synchronised after %d steps: %.3g from one process\n", NSTEPS, ds);
    drop(&ref);
    drop(&syn);
    drop(&loc);
}

/* Two local replicas cannot wait for each other's statistics: refused, on both ranks
 * alike (before any collective). */
static void replica_checks(clg_device *dev, clg_dist *d)
{
    net a = make(dev, d, true), b = make(dev, d, true);
    clg_scope_begin(dev);
    clg_tensor *x = clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 1, HW, HW)), *y = clg_zeros(dev, CLG_I32, CLG_SHAPE(2));
    clg_status st = clg_trainer_step_replicas(2, (clg_trainer *[]){a.t, b.t}, (clg_tensor *[]){x, x},
                                              (clg_tensor *[]){y, y}, NULL);
    EXPECT(st != CLG_OK && strstr(clg_device_error(dev), "one rank per device"),
           "two local replicas with synchronised batch norm: %s", st ? clg_device_error(dev) : "not refused");
    clg_scope_end(dev);
    drop(&a);
    drop(&b);
}

int main(int argc, char **argv)
{
    clg_dist *d;
    char err[512];
    if (clg_dist_init(&argc, &argv, NULL, &d, err, sizeof err)) return fprintf(stderr, "%s\n", err), 2;
    rank = clg_dist_rank(d);
    clg_device *dev = NULL;
    EXPECT(clg_dist_size(d) == 2, "run on 2 ranks (mpirun -np 2), not %d", clg_dist_size(d));
    EXPECT(clg_device_open(NULL, &dev) == CLG_OK, "no device: %s", clg_device_error(dev));
    if (!failures && rank == 0) printf("dist_sync: %s (%s)\n", clg_device_get_info(dev)->name,
                                       clg_device_get_info(dev)->platform);
    if (!failures) {
        all_reduce_checks(dev, d, (double[]){0.25, 0.75});
        all_reduce_checks(dev, d, (double[]){1, 0});
        training_checks(dev, d);
        replica_checks(dev, d);
    }
    printf("dist_sync: rank %d: %s\n", rank, failures ? "FAILED" : "ok");
    clg_device_close(dev);
    if (failures) clg_dist_abort(d, 1);   /* the other rank may wait in a collective */
    clg_dist_free(d);
    return failures ? 1 : 0;
}
