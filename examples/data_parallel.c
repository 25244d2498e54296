/* data_parallel: the Fashion-MNIST MLP of fashion_mlp.c trained data-parallel with
 * clgrad/dist.h: over MPI ranks, over several devices of this process, or both (it links
 * libclgrad-dist for clg_dist_init, clgrad/dist_mpi.h, which starts MPI). Every
 * replica takes its shard of each global batch of 128; gradients are averaged before
 * each step, so the weights are those one device would train, to float32 rounding.
 *
 *   ./build/examples/data_parallel                          one device (the default)
 *   ./build/examples/data_parallel --devices 0,1            two devices of this process
 *   mpirun -np 2 ./build/examples/data_parallel             two ranks
 *   POCL_DEVICES="pthread pthread" ./build/examples/data_parallel --devices 0,1
 *                                                           two POCL devices on a CPU
 * Options: --devices SPEC,SPEC,... (CLG_DEVICE specs, at most 8), --epochs N, --steps N.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clgrad.h>
#include <clgrad/dist_mpi.h>   /* clg_dist_init: libclgrad-dist */

enum { MAX_REPLICAS = 8, BATCH = 128 };

static int say(const char *msg)
{
    fprintf(stderr, "data_parallel: %s\n", msg);
    return 1;
}

/* One replica: a device with its own model, optimizer, loader shard and trainer. */
typedef struct replica {
    clg_device *dev;
    clg_module *model;
    clg_optimizer *opt;
    clg_loader *loader;
    clg_meter *meter;
    clg_trainer *trainer;
} replica;

static clg_module *make_model(clg_device *dev)
{
    clg_manual_seed(dev, 1);   /* the same start everywhere (and rank 0's is broadcast) */
    return clg_nn_sequential(dev, 6, (clg_module *[]){
        clg_nn_flatten(dev), clg_nn_linear(dev, 784, 512, true), clg_nn_relu(dev),
        clg_nn_linear(dev, 512, 256, true), clg_nn_relu(dev), clg_nn_linear(dev, 256, 10, true)});
}

/* Replica `index` of `total` (over every rank) on the device `spec`. */
static int make_replica(replica *r, const char *spec, clg_dataset *train, int index, int total, clg_dist *dist)
{
    if (clg_device_open(spec, &r->dev) != CLG_OK) return say(clg_device_error(r->dev));
    r->model = make_model(r->dev);
    clg_tensor *p[8];
    int n = r->model ? clg_module_parameters(r->model, p, 8, true) : 0;
    r->opt = clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.05, .momentum = 0.9});
    static const float mean = 0.2860f, std = 0.3530f;
    clg_loader_config c = clg_loader_defaults(BATCH);   /* the global batch ... */
    c.shuffle = true, c.seed = 1, c.workers = 1, c.scale = 1.0f / 255;
    c.norm_channels = 1, c.mean = &mean, c.std = &std;
    c.shard_index = index, c.shard_count = total;       /* ... and this replica's part of it */
    r->meter = clg_meter_new(r->dev);
    clg_trainer_options to = {.meter = r->meter, .dist = dist};
    if (!r->opt || !r->meter || clg_loader_new(r->dev, train, &c, &r->loader) ||
        !(r->trainer = clg_trainer_new(r->model, r->opt, &to)))
        return say(clg_device_error(r->dev));
    return 0;
}

static void free_replica(replica *r)   /* its trainer freed first (before any model it hooks) */
{
    clg_loader_free(r->loader);
    clg_meter_free(r->meter);
    clg_optimizer_free(r->opt);
    clg_module_free(r->model);
    clg_device_close(r->dev);
}

/* One epoch: each replica's next shard, then one step of all of them together. */
static clg_status train_epoch(replica *rs, int n, clg_dist *dist, int64_t max_steps)
{
    clg_trainer *t[MAX_REPLICAS];
    for (int i = 0; i < n; i++) t[i] = rs[i].trainer, clg_module_train(rs[i].model, true);
    for (int64_t step = 0; !max_steps || step < max_steps; step++) {
        clg_tensor *x[MAX_REPLICAS], *y[MAX_REPLICAS];
        clg_status st = CLG_OK;
        for (int i = 0; i < n && !st; i++) {
            clg_scope_begin(rs[i].dev);
            st = clg_loader_next(rs[i].loader, &x[i], &y[i]);
        }
        bool over = !st && !x[0];   /* every shard's epoch ends together */
        if (!st && !over) st = clg_trainer_step_replicas(n, t, x, y, NULL);
        for (int i = n - 1; i >= 0; i--) clg_scope_end(rs[i].dev);
        if (st) {
            say(clg_dist_error(dist)[0] ? clg_dist_error(dist) : clg_device_error(rs[0].dev));
            return st;
        }
        if (over) return CLG_OK;
    }
    for (int i = 0; i < n; i++) {   /* --steps: on to the next epoch */
        clg_loader_position p = clg_loader_get_position(rs[i].loader);
        clg_loader_set_position(rs[i].loader, (clg_loader_position){p.epoch + 1, 0, p.seed});
    }
    return CLG_OK;
}

/* The epoch's training loss and accuracy over every replica of every rank. */
static void report(replica *rs, int n, clg_dist *dist, int epoch, clg_loader *test)
{
    double sums[3] = {0, 0, 0}, loss, acc;
    for (int i = 0; i < n; i++) {
        double k = (double)clg_meter_samples(rs[i].meter);
        if (k > 0 && clg_meter_read(rs[i].meter, &loss, &acc) == CLG_OK) sums[0] += loss * k, sums[1] += acc * k;
        sums[2] += k;
        clg_meter_reset(rs[i].meter);
    }
    clg_dist_sum(dist, sums, 3);
    printf("epoch %d: train loss %.4f acc %.2f%%", epoch, sums[0] / sums[2], 100 * sums[1] / sums[2]);
    if (test && clg_evaluate(rs[0].model, test, &loss, &acc, NULL, 10) == CLG_OK)
        printf(" | test loss %.4f acc %.2f%%", loss, 100 * acc);
    printf("\n");
}

int main(int argc, char **argv)
{
    clg_dist *dist;
    char err[512], specs[512] = "", *spec[MAX_REPLICAS] = {NULL};
    if (clg_dist_init(&argc, &argv, NULL, &dist, err, sizeof err)) return say(err);
    int epochs = 1, n = 0;
    long steps = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--devices")) snprintf(specs, sizeof specs, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--epochs")) epochs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atol(argv[i + 1]);
    }
    for (char *s = strtok(specs, ","); s && n < MAX_REPLICAS; s = strtok(NULL, ",")) spec[n++] = s;
    if (n == 0) n = 1;   /* spec[0] NULL: $CLG_DEVICE or the default */
    int rank = clg_dist_rank(dist), total = n * clg_dist_size(dist);
    if (rank > 0 && !freopen("/dev/null", "w", stdout)) return 1;   /* rank 0 speaks */
    printf("%d replica%s: %d rank%s x %d device%s\n", total, total > 1 ? "s" : "", clg_dist_size(dist),
           clg_dist_size(dist) > 1 ? "s" : "", n, n > 1 ? "s" : "");

    clg_dataset *train = NULL, *test_set = NULL;
    clg_loader *test = NULL;
    replica rs[MAX_REPLICAS] = {0};
    int rc = clg_dataset_fashion_mnist(NULL, true, &train, err, sizeof err) ? say(err) : 0;
    for (int i = 0; !rc && i < n; i++) rc = make_replica(&rs[i], spec[i], train, rank * n + i, total, dist);
    clg_tensor *p[MAX_REPLICAS * 8];   /* every replica's parameters, for the broadcast */
    int np = rc ? 0 : clg_module_parameters(rs[0].model, NULL, 0, false);
    for (int i = 0; !rc && i < n; i++) clg_module_parameters(rs[i].model, p + i * np, np, false);
    if (!rc && clg_dist_broadcast(dist, n, np, p)) rc = say(clg_dist_error(dist));
    if (!rc && rank == 0) {   /* rank 0 evaluates */
        clg_loader_config c = clg_loader_defaults(1000);
        static const float mean = 0.2860f, std = 0.3530f;
        c.scale = 1.0f / 255, c.norm_channels = 1, c.mean = &mean, c.std = &std;
        if (clg_dataset_fashion_mnist(NULL, false, &test_set, err, sizeof err) ||
            clg_loader_new(rs[0].dev, test_set, &c, &test))
            rc = say(err);
    }
    for (int e = 1; !rc && e <= epochs; e++) {
        if (train_epoch(rs, n, dist, steps)) rc = 1;
        else report(rs, n, dist, e, test);
    }
    clg_dist_stats s = clg_dist_get_stats(dist);
    if (!rc && total > 1)
        printf("reduced %.2f MB per step in %d buckets: %.1f ms per step, %.1f ms of it after backward\n",
               (double)s.bytes / 1e6, s.buckets, s.steps ? 1e3 * s.reduce_seconds / (double)s.steps : 0.0,
               s.steps ? 1e3 * s.exposed_seconds / (double)s.steps : 0.0);
    if (rc && clg_dist_size(dist) > 1) clg_dist_abort(dist, rc);
    clg_loader_free(test);
    clg_dataset_free(test_set);
    for (int i = 0; i < n; i++) clg_trainer_free(rs[i].trainer);   /* before the models they hook */
    for (int i = 0; i < n; i++) free_replica(&rs[i]);
    clg_dataset_free(train);
    clg_dist_free(dist);
    return rc;
}
