/* clgrad/dist.h: data-parallel training across the devices of one process and, through
 * a transport, across processes (MPI ranks, machines): every replica of the model takes
 * its shard of each global batch, and their gradients are averaged before every
 * optimizer step, so that all replicas take the same steps as one process on the whole
 * batch would.
 *
 *   clg_dist *d;
 *   char err[256];
 *   if (clg_dist_new(NULL, NULL, &d, err, sizeof err)) { puts(err); return 1; }
 *   int rank = clg_dist_rank(d), ranks = clg_dist_size(d);   // 0 and 1: one process
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   clg_module *net = clg_nn_linear(dev, 4, 3, true);
 *   clg_tensor *params[2];
 *   int n = clg_module_parameters(net, params, 2, true);
 *   clg_sgd_options so = clg_sgd_defaults();
 *   so.lr = 0.1;
 *   clg_optimizer *opt = clg_sgd_new(n, params, &so);
 *   clg_dist_broadcast(d, 1, n, params);             // rank 0's initial weights on every rank
 *   for (int step = 0; step < 3; step++) {           // each rank on its shard of the global batch
 *       clg_scope_begin(dev);
 *       clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 4), 0, 1);
 *       clg_tensor *y = clg_zeros(dev, CLG_I32, CLG_SHAPE(8));
 *       clg_optimizer_zero_grad(opt);
 *       clg_backward(clg_cross_entropy(clg_module_forward(net, x), y, CLG_REDUCE_MEAN), NULL);
 *       int64_t mine = clg_tensor_dim(x, 0);
 *       clg_dist_allreduce_grads(d, 1, n, params, &mine);    // the global batch's mean gradient
 *       clg_optimizer_step(opt);
 *       clg_scope_end(dev);
 *   }
 *   printf("rank %d of %d done\n", rank, ranks);
 *   clg_dist_free(d);                                // the transport's end (MPI_Finalize)
 *   clg_optimizer_free(opt);
 *   clg_module_free(net);
 *   clg_device_close(dev);
 *
 * Over MPI: make d with clg_dist_init (clgrad/dist_mpi.h), from the separate library
 * libclgrad-dist (pkg-config clgrad-dist, CMake clgrad::dist), and run the program with
 * `mpirun -np 4 ./prog`; the rest is the same. libclgrad itself links no MPI: it sees
 * the ranks through a clg_dist_transport, below. Or let a trainer do it:
 * clg_trainer_options.dist (train.h), which also starts reducing gradients while
 * backward still runs.
 *
 * Several devices in one process are local replicas: one model, optimizer and loader
 * shard per device (shard index rank * replicas + r of ranks * replicas), and every
 * call takes their tensors replica after replica (params[r * n + i]); gradients meet in
 * host memory. Ranks and local replicas combine.
 *
 * How: each parameter's gradient is read into a flat host arena as soon as backward has
 * accumulated it (clg_tensor_register_post_accumulate_hook), and a communication
 * thread reduces the arena in buckets of a few MiB, in a fixed order on every rank,
 * with the transport's allreduce (MPI_Allreduce), while backward goes on; the step then
 * writes the averages back. Each replica's gradient is weighted by its share of the
 * global batch, so that short and empty shards (a short last batch) give the same mean
 * as one process.
 *
 * Failure: a reduction that has not finished after the timeout is an error ("a rank
 * died or hangs"); a rank that exits makes mpirun end the others. After a failure the
 * ranks cannot agree on anything any more: report it and call clg_dist_abort.
 *
 * Batch norm: its statistics stay local to each replica (as PyTorch's DDP by default),
 * or, after clg_dist_sync_batch_norm(d, net, NULL), are those of the global batch over
 * every rank (PyTorch's SyncBatchNorm): N ranks then train the weights one process
 * would. Each synchronised layer's training forward waits for the other ranks three
 * times (the count, the C sums, the C squared deviations) and its backward twice, so
 * every rank must run every training pass, an empty shard too (the trainer does).
 */
#ifndef CLGRAD_DIST_H
#define CLGRAD_DIST_H

#include "nn.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_dist clg_dist;

typedef struct clg_dist_options {
    double bucket_mb;   /* gradients are reduced in buckets of about this many MiB; 0:
                           $CLG_DIST_BUCKET_MB, else 1 */
    double timeout;     /* seconds a step's reduction may wait for the other ranks before it
                           is an error; 0: $CLG_DIST_TIMEOUT, else 600 */
} clg_dist_options;
/* Zeros: the environment's values, else 1 MiB and 600 s (what NULL options mean). */
CLG_API clg_dist_options clg_dist_defaults(void);

/* How the processes of a group talk: what clg_dist_new is given (libclgrad-dist's
 * clg_dist_init gives MPI's). Two channels, each with the same calls in the same order on
 * every rank: the gradients' (allreduce and bcast, from the reduction's thread and the
 * caller's) and the layers' (allreduce_layers: collectives inside forward and backward
 * passes, from the caller's thread while the other channel may be busy). clgrad never
 * makes two calls on one channel at once; the two channels may run at once. Each call
 * returns CLG_OK, or a failure (CLG_ERR_COMM: the ranks are out of step) whose reason it
 * writes to err (errlen bytes). */
typedef struct clg_dist_transport {
    int rank, size;   /* this process's rank among size (0 <= rank < size) */
    void *ctx;        /* given to every call */
    /* Sums count values, float64 when f64 else float32, in place over the ranks. */
    clg_status (*allreduce)(void *ctx, void *buf, int64_t count, bool f64, char *err, size_t errlen);
    /* bytes of rank 0's buf into every rank's buf. */
    clg_status (*bcast)(void *ctx, void *buf, size_t bytes, char *err, size_t errlen);
    /* The allreduce on the layers' channel, waiting at most timeout seconds (a dead or
     * hung rank is an error, not a hang). NULL when there is no such channel; no_layers
     * then says why (clg_dist_all_reduce and synchronised batch norm are refused). */
    clg_status (*allreduce_layers)(void *ctx, void *buf, int64_t count, bool f64, double timeout, char *err,
                                   size_t errlen);
    const char *no_layers;
    /* Ends every rank at once (clg_dist_abort). May be NULL. */
    void (*abort)(void *ctx, int code);
    /* At clg_dist_free after a clean run (MPI_Finalize); not after a failure, which may
     * have left a call of the transport's waiting on another thread. May be NULL. */
    void (*finalize)(void *ctx);
} clg_dist_transport;

/* A group over transport, which the dist owns from a successful call on (copied;
 * finalize at clg_dist_free), or, for NULL, a group of one process, with any local
 * replicas. NULL under an MPI launcher (clg_dist_launched) is an error: each process
 * would train alone on all the data. err (may be NULL) receives the reason of a failure. */
CLG_API clg_status clg_dist_new(const clg_dist_transport *transport, const clg_dist_options *options, clg_dist **out,
                                char *err, size_t errlen);

/* Whether this process was started by an MPI launcher (mpirun's environment). */
CLG_API bool clg_dist_launched(void);

/* The transport's finalize (MPI_Finalize when clg_dist_init started MPI), after a clean
 * run. NULL is fine. */
CLG_API void clg_dist_free(clg_dist *d);
/* Ends every rank at once (the transport's abort: MPI_Abort, code); for after a failure.
 * Without one it returns, and the caller ends this process as it would. */
CLG_API void clg_dist_abort(clg_dist *d, int code);

CLG_API int clg_dist_rank(const clg_dist *d);
CLG_API int clg_dist_size(const clg_dist *d);
/* The last failure's message ("" when none). */
CLG_API const char *clg_dist_error(const clg_dist *d);

/* Rank 0's first replica's values of the n tensors in every replica on every rank
 * (tensors[r * n + i], nreplicas local replicas). Waits. */
CLG_API clg_status clg_dist_broadcast(clg_dist *d, int nreplicas, int n, clg_tensor *const *tensors);
/* values[0..n) summed over the ranks, in place (counts, loss sums). Waits. */
CLG_API clg_status clg_dist_sum(clg_dist *d, double *values, int n);

/* Replace the gradient of each of the n parameters of every local replica
 * (params[r * n + i]) by the mean over the global batch: sum over replicas everywhere
 * of counts[r] / (sum of all counts) times its gradient, where counts[r] is the
 * samples replica r's gradient is the mean loss of (0: it contributes nothing; a
 * parameter without a gradient counts as zeros and gets one). The parameters must be
 * float32 (or all float64), the same n in the same order on every replica and rank.
 * After the first call, backward passes start reading these gradients as they are
 * accumulated, so later calls wait less. Enqueues the writes; waits for the
 * reduction. */
CLG_API clg_status clg_dist_allreduce_grads(clg_dist *d, int nreplicas, int n, clg_tensor *const *params,
                                            const int64_t *counts);

/* Forget the parameters of the last clg_dist_allreduce_grads (their hooks removed):
 * for before they are freed, when the dist lives on. clg_dist_free does it too, so
 * the parameters of the last call must outlive the dist or this call. */
CLG_API void clg_dist_detach(clg_dist *d);

/* ---- collectives inside forward and backward -------------------------------------------- */

/* x summed over the ranks, as a differentiable op (every rank calls it, in the same
 * order, with the same shape, and so again in backward). float32 or float64. share:
 * this rank's weight in the loss backward differentiates (0 to 1), as
 * clg_dist_allreduce_grads weighs the ranks (its count over the global count; 1 where
 * the loss is a plain sum over ranks). The gradient is then (sum over the ranks of
 * share * g) / share: scaled by that rank's weight in clg_dist_allreduce_grads, every
 * rank's loss reaches every rank's parameters with its own weight, and the reduced
 * gradients are those of one process (a share of 0: gradients that count for nothing).
 * Waits for x and for every rank (at most the timeout: a dead or hung rank is an
 * error). Without ranks, x itself. Local replicas are not summed (one process's
 * replicas run one after the other). Under ranks it needs the transport's layers'
 * channel (MPI_THREAD_MULTIPLE: it runs beside the gradients' reduction). d must outlive
 * the tapes that used it. NULL on failure (clg_device_error). */
CLG_API clg_tensor *clg_dist_all_reduce(clg_dist *d, clg_tensor *x, double share);

/* Every BatchNorm1d and BatchNorm2d in model (its children too) normalises, while
 * training, with the mean and variance of the global batch over all ranks (two-pass,
 * as one process would), and moves its running averages with them, the same on every
 * rank. Evaluation is unchanged. *converted (may be NULL): how many layers; 0 in a
 * group of one, whose layers stay as they are (their statistics are the global
 * batch's already). One replica per rank (the trainer refuses local replicas with it).
 * d must outlive the model's training passes. */
CLG_API clg_status clg_dist_sync_batch_norm(clg_dist *d, clg_module *model, int *converted);

/* What the reductions cost so far, for benchmarks. */
typedef struct clg_dist_stats {
    int64_t steps;              /* reductions */
    int64_t bytes;              /* gradient bytes one step reduces (per rank) */
    int buckets;                /* per step */
    double reduce_seconds;      /* the communication thread's allreduce (MPI_Allreduce) time */
    double sum_seconds;         /* its time summing local replicas into the arena */
    double wait_seconds;        /* the step's time blocked waiting for the reduction (and
                                   so for the device to finish backward) */
    double exposed_seconds;     /* reduction after the last gradient reached the host:
                                   what backward did not hide */
} clg_dist_stats;
CLG_API clg_dist_stats clg_dist_get_stats(const clg_dist *d);

#ifdef __cplusplus
}
#endif
#endif
