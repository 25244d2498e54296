/* nn_impl.h: the internals of modules (src/nn/). Not installed. */
#ifndef CLGRAD_NN_IMPL_H
#define CLGRAD_NN_IMPL_H

#include "clgrad/nn.h"
#include "tensor_impl.h"

typedef struct clg_entry {
    char *name;
    clg_tensor *t;        /* owned (a reference; tied parameters share one tensor): out of every scope */
    bool transient;       /* a buffer left out of the state (PyTorch's persistent=False) */
} clg_entry;

typedef struct clg_entries {
    clg_entry *items;
    int n, cap;
} clg_entries;

struct clg_module {
    const clg_module_i *iface;
    void *data;
    clg_device *dev;
    char *name;                   /* within the parent; "" at the top */
    clg_module *parent;
    clg_entries params, buffers;
    clg_module **children;
    int nchildren, capchildren;
    bool training;
    clg_forward_n_fn forward_n;   /* for several inputs; NULL: one */
    /* clg_module_state's full names, made on demand and dropped on any change */
    clg_named_tensor *state;
    char **state_names;
    int nstate;
};

/* Uniform(-bound, bound) parameters as PyTorch initialises Linear and Conv2d:
 * bound = 1 / sqrt(fan_in). Made outside any scope. */
clg_tensor *clg__nn_uniform_param(clg_device *dev, int ndim, const int64_t *shape, double bound);
/* Adds weight (ones) and bias (zeros) of shape to m, as the normalisation layers have
 * them; returns m, or NULL with m freed. */
clg_module *clg__nn_affine_params(clg_module *m, int ndim, const int64_t *shape);

/* A recurrent layer's carried state dropped (the next step starts from zeros made in
 * its input's dtype); other modules are left alone. */
void clg__rnn_drop_state(clg_module *m);

/* The output of m's child `name` on x. */
clg_tensor *clg__nn_child(clg_module *m, const char *name, clg_tensor *x);
/* Add a just-made child c (NULL: it failed; the device's status) to m; c is freed when
 * it cannot be added. */
clg_status clg__nn_adopt(clg_module *m, const char *name, clg_module *c);
/* Remove m's parameter `name` (a layer made without one of its usual parameters). */
void clg__module_drop_param(clg_module *m, const char *name);
/* LayerNorm over the last axis of size C, with or without its bias (nanoGPT's option). */
clg_module *clg__nn_layer_norm(clg_device *dev, int64_t C, double eps, bool bias);
/* Attention output y [B, H, T, D] as [B, T, H D]: the heads side by side (a copy). */
clg_tensor *clg__nn_merge_heads(clg_tensor *y);

/* Synchronised batch norm (src/dist/sync.c): while training, batch-norm layer m takes
 * its statistics over a group (every rank's part of the global batch). The group: */
typedef struct clg__nn_group {
    /* t summed over the group, differentiably; its backward returns (sum over the
     * members of share * gradient) / share, share being this member's weight in the loss */
    clg_tensor *(*sum)(void *ctx, clg_tensor *t, double share);
    /* v[0..n) summed over the group, in place (counts); err receives why it failed */
    clg_status (*count)(void *ctx, double *v, int n, char *err, size_t errlen);
    void *ctx;
} clg__nn_group;
/* g NULL: local statistics again. false (nothing done) when m is not a batch norm. */
bool clg__nn_batch_norm_sync(clg_module *m, const clg__nn_group *g);
/* Whether a layer under m (m included) takes statistics over a group: then every member
 * must run every training pass, even on an empty part of the batch. */
bool clg__nn_has_group_layers(const clg_module *m);
/* relu(m(x) + z) (z NULL: relu(m(x))) for a batch norm layer m: one op each way
 * (clg_batch_norm_add_relu) where m normalises with its own statistics, else the
 * composed ops (a synchronised layer in training, or m not a batch norm at all). For a
 * ReLU that follows a batch norm: Sequential, the residual blocks. */
clg_tensor *clg__nn_batch_norm_relu(clg_module *m, clg_tensor *x, clg_tensor *z);
/* Whether m is a BatchNorm1d or BatchNorm2d layer. */
bool clg__nn_is_batch_norm(const clg_module *m);

#endif
