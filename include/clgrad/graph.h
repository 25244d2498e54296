/* clgrad/graph.h: build once, run many. Capture the device work of one ordinary step
 * (forward, loss, backward, optimizer step) and replay it on new data without the host
 * work of an eager step: no shape checks, no allocation, no tape, no argument setting.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   clg_module *model = clg_nn_linear(dev, 4, 3, true);
 *   clg_tensor *params[2];
 *   clg_sgd_options so = clg_sgd_defaults();
 *   so.lr = 0.1;
 *   clg_optimizer *opt = clg_sgd_new(clg_module_parameters(model, params, 2, true), params, &so);
 *   clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 4), 0, 1), *y = clg_zeros(dev, CLG_I32, CLG_SHAPE(8));
 *   clg_graph_begin(dev);
 *   clg_optimizer_zero_grad(opt);                    // one step, written as always;
 *   clg_tensor *loss = clg_cross_entropy(clg_module_forward(model, x), y, CLG_REDUCE_MEAN);
 *   clg_backward(loss, NULL);                        // it runs, and is recorded
 *   clg_optimizer_step(opt);
 *   clg_graph *g;
 *   if (clg_graph_end(dev, &g) != CLG_OK) return 1;
 *   clg_graph_input(g, "x", x);  clg_graph_input(g, "y", y);  clg_graph_output(g, "loss", loss);
 *   for (int step = 0; step < 5; step++) {           // each later batch xb, yb
 *       clg_tensor *xb = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 4), 0, 1);
 *       clg_graph_feed(g, "x", xb);  clg_graph_feed(g, "y", y);   // no copy: rebinds
 *       clg_graph_replay(g);                                       // enqueues; no wait
 *   }
 *   double l;
 *   clg_tensor_item(clg_graph_get(g, "loss"), &l);   // the last replay's
 *   clg_graph_free(g);
 *   clg_optimizer_free(opt);
 *   clg_module_free(model);
 *   clg_device_close(dev);
 *
 * Shapes are fixed per graph: feeding another shape is an error (capture a second
 * graph for it). Capture a step after one eager step has run: first steps make
 * optimizer state and compile kernels, which a replay must not repeat.
 *
 * Replay is bit-identical to running the step eagerly again: buffers that live only
 * inside the step share memory planned at capture (never more than the eager step's),
 * the rest (parameters, gradients, optimizer state, outputs) are used in place, and
 * what changes from step to step on the host (the optimizer's step count and rate, the
 * random generator's position for dropout) is advanced as the eager ops would. The
 * objects the step used (modules, optimizers, meters) must outlive the graph; a replay
 * after a parameter or state tensor was replaced or freed fails, naming it. A step that
 * reads values to the host while captured cannot be captured.
 *
 * The whole step also shows work that the eager step could not know was redundant: a
 * gradient written into a buffer of its own and then copied into its .grad, because
 * nothing else will read it, is written into .grad directly (clg_graph_stats.removed
 * counts such launches), and a ReLU whose input only it reads is folded into the
 * GEMM that computes the input (a linear layer's bias and ReLU then cost no launch of
 * their own; .fused counts them), and an elementwise op (add, mul, relu, exp, the
 * scalar ops, their gradients...) whose result only the next elementwise op reads runs
 * with it as one kernel, the result never stored (.chains counts the launches saved;
 * where something else reads the result too, it is stored, and the next op does not
 * read it back). CLG_GRAPH_SKIP=copies,relu,chains in the environment turns any of
 * them off, for measuring.
 */
#ifndef CLGRAD_GRAPH_H
#define CLGRAD_GRAPH_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_graph clg_graph;

/* Start recording what the device is asked to do (one capture per device at a time). */
CLG_API clg_status clg_graph_begin(clg_device *dev);
/* Stop recording and plan the replay. *graph is NULL on failure; the capture is over
 * either way. */
CLG_API clg_status clg_graph_end(clg_device *dev, clg_graph **graph);
CLG_API void clg_graph_free(clg_graph *g);

/* Name a tensor the captured step read (an input, fed before each replay) or made (an
 * output, read after one). Names are at most 63 characters, unique per graph. */
CLG_API clg_status clg_graph_input(clg_graph *g, const char *name, clg_tensor *t);
CLG_API clg_status clg_graph_output(clg_graph *g, const char *name, clg_tensor *t);
/* Give the next replays input `name` from device tensor t: same dtype and shape as the
 * captured one, contiguous at the same offset. The graph reads t's memory in place
 * (and holds it until fed again). */
CLG_API clg_status clg_graph_feed(clg_graph *g, const char *name, clg_tensor *t);
/* Or from host memory: exactly the input's bytes, written now. */
CLG_API clg_status clg_graph_feed_host(clg_graph *g, const char *name, const void *data, size_t bytes);
/* Enqueue the step again. Waits for nothing. */
CLG_API clg_status clg_graph_replay(clg_graph *g);
/* True when a buffer the captured step used and did not make (a parameter, gradient,
 * optimizer or recurrent state) is held by nothing but the graph any more: it was
 * replaced or freed, and a replay would fail. Capture the step again. */
CLG_API bool clg_graph_stale(const clg_graph *g);
/* An input or output as a tensor in the current scope, sharing the graph's memory: an
 * output holds the latest replay's values. */
CLG_API clg_tensor *clg_graph_get(clg_graph *g, const char *name);

typedef struct clg_graph_stats {
    int launches;        /* kernel launches per replay (some split into two enqueues) */
    int enqueues, copies, writes;
    int refreshed;       /* launches whose scalar arguments each replay recomputes */
    int host_steps;      /* host-only steps (counters) per replay */
    int planned;         /* buffers of the step that share planned memory ... */
    int slots;           /* ... in this many buffers */
    uint64_t planned_bytes, slot_bytes;   /* their bytes in the eager step, and planned */
    uint64_t held_bytes; /* buffers used in place: parameters, gradients, state, inputs, outputs */
    int removed;         /* launches of the eager step that the graph showed redundant */
    int fused;           /* ReLUs folded into the GEMM that computes their input */
    int chains;          /* elementwise launches run with the elementwise launch before them */
} clg_graph_stats;
CLG_API clg_graph_stats clg_graph_get_stats(const clg_graph *g);

#ifdef __cplusplus
}
#endif
#endif
