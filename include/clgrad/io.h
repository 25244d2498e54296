/* clgrad/io.h: checkpoints in safetensors: model weights, and training state to resume.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   clg_module *layers[] = {clg_nn_linear(dev, 4, 8, true), clg_nn_relu(dev)};
 *   clg_module *model = clg_nn_sequential(dev, 2, layers);
 *   clg_tensor *params[2];
 *   clg_sgd_options so = clg_sgd_defaults();
 *   so.lr = 0.1;
 *   clg_optimizer *opt = clg_sgd_new(clg_module_parameters(model, params, 2, true), params, &so);
 *   // weights only: PyTorch state_dict names ("0.weight", "0.bias", ...) and layouts
 *   clg_module_save(model, "mlp.safetensors", 0, NULL);
 *   clg_load_report rep;
 *   if (clg_module_load(model, "mlp.safetensors", true, &rep) != CLG_OK)
 *       fprintf(stderr, "%s\n", clg_device_error(dev));   // lists every mismatch
 *   clg_load_report_free(&rep);
 *
 *   // training: model, optimizer state, step/epoch/loader position, RNG, schedule
 *   clg_train_state ts = {.step = 100, .epoch = 1, .batch = 0, .base_lr = 0.1};
 *   clg_checkpoint_save(model, opt, &ts, NULL, "run.ckpt");   // NULL: no model file inside
 *   clg_checkpoint_load(model, opt, "run.ckpt", &ts, NULL);   // later, in a new process (the RNG too)
 *
 *   // any safetensors file, validated before anything in it is trusted
 *   char err[512];  clg_safetensors *st;
 *   if (clg_safetensors_open("mlp.safetensors", &st, err, sizeof err) != CLG_OK) { puts(err); return 1; }
 *   for (int i = 0; i < clg_safetensors_count(st); i++)
 *       printf("%s\n", clg_safetensors_at(st, i)->name);
 *   clg_safetensors_close(st);
 *   clg_optimizer_free(opt);
 *   clg_module_free(model);
 *   clg_device_close(dev);
 *
 * FORMAT (https://github.com/huggingface/safetensors): 8 bytes, the little-endian
 * length N of a JSON header; N bytes of header {"name": {"dtype": "F32", "shape": [..],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "value", ...}}, padded
 * with spaces to a multiple of 8; then the tensors' raw little-endian row-major bytes,
 * offsets relative to the end of the header. Python reads it with `json` and NumPy
 * (tests/io/st.py) or `safetensors.torch.load_file`.
 *
 * VALIDATION. Before anything is returned the reader checks what the reference
 * implementation checks, and more: header length <= CLG_SAFETENSORS_MAX_HEADER and
 * within the file; the header starts with '{' and is one JSON object (jansson, duplicate
 * keys rejected); every tensor has exactly dtype (a known one), shape (<= CLG_MAX_DIMS
 * non-negative integers) and data_offsets (two non-negative integers); shape product
 * times dtype size equals end - begin, without overflow; sorted by offset the ranges
 * start at 0, touch without gaps or overlaps, and end exactly at the end of the file;
 * __metadata__ is an object of strings. Errors name the file and the problem.
 *
 * WRITES are atomic and durable: a temporary file in the same directory, every write
 * checked, fflush + fsync, rename over the target, fsync of the directory. A process
 * killed while saving leaves the previous file intact (and, at worst, a stray
 * "<path>.tmp.*" file beside it).
 *
 * ERRORS. Calls given a model, a tensor or a device record their message on the device
 * (clg_device_error); the reader, which needs no device, writes it into `err`
 * (errlen bytes, always NUL-terminated; err may be NULL). Nothing here exits or aborts.
 *
 * Single tensors as NumPy .npy: clg_tensor_save_npy / clg_tensor_load_npy (data.h).
 */
#ifndef CLGRAD_IO_H
#define CLGRAD_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "nn.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest header the reader accepts, as the reference's MAX_HEADER_SIZE. */
#define CLG_SAFETENSORS_MAX_HEADER 100000000
/* The most tensors a file may hold (large language models hold a few thousand): a
 * header of 1.5 M empty tensors cost 19 s and 2.25 GB to parse before this bound. */
#define CLG_SAFETENSORS_MAX_TENSORS 262144

/* ---- the safetensors container ------------------------------------------------------------ */

/* The format's element types are clg_elem_type (data.h), which holds them all; their
 * names in a header: "F32", "I64", ...; "?" when out of range. */
CLG_API const char *clg_safetensors_dtype_name(clg_elem_type type);

/* One stored tensor. `data` points into the file's bytes (little-endian, row-major,
 * possibly unaligned: copy with memcpy) and stays valid until clg_safetensors_close. */
typedef struct clg_safetensors_entry {
    const char *name;
    clg_elem_type dtype;
    int ndim;
    int64_t shape[CLG_MAX_DIMS];
    int64_t numel;
    const void *data;
    size_t bytes;
} clg_safetensors_entry;

typedef struct clg_safetensors clg_safetensors;

/* Read and validate a whole file. On failure *out is NULL and err says why. */
CLG_API clg_status clg_safetensors_open(const char *path, clg_safetensors **out, char *err, size_t errlen);
/* Validate len bytes in memory (a file's contents); `bytes` must outlive the handle,
 * which points into it. `name` is used in messages (NULL: "(memory)"). */
CLG_API clg_status clg_safetensors_parse(const void *bytes, size_t len, const char *name, clg_safetensors **out,
                                         char *err, size_t errlen);
CLG_API void clg_safetensors_close(clg_safetensors *st);   /* NULL is fine */

/* Tensors in the order of their data (which is the order they were written in). */
CLG_API int clg_safetensors_count(const clg_safetensors *st);
CLG_API const clg_safetensors_entry *clg_safetensors_at(const clg_safetensors *st, int i);   /* NULL out of range */
CLG_API const clg_safetensors_entry *clg_safetensors_find(const clg_safetensors *st, const char *name);
/* __metadata__: the value of key, or NULL; and all pairs by index (in header order). */
CLG_API const char *clg_safetensors_meta(const clg_safetensors *st, const char *key);
CLG_API int clg_safetensors_meta_count(const clg_safetensors *st);
CLG_API bool clg_safetensors_meta_at(const clg_safetensors *st, int i, const char **key, const char **value);

/* Whether a stored tensor can become a tensor of dtype `to`: the same type; an integer
 * type into CLG_I32 (checked value by value on conversion: PyTorch stores counters and
 * indices as int64); F16 or BF16 into CLG_F32 or CLG_F64, which hold every value
 * exactly (a model.half() state dict into a float32 model). No float is narrowed. */
CLG_API bool clg_safetensors_converts(clg_elem_type from, clg_dtype to);
/* A stored tensor as a new tensor of dtype `to` in the current scope (NULL, with the
 * message on dev, when it does not convert or an integer does not fit). */
CLG_API clg_tensor *clg_safetensors_tensor(const clg_safetensors_entry *t, clg_device *dev, clg_dtype to);

/* A metadata pair for the writers. */
typedef struct clg_safetensors_pair {
    const char *key, *value;
} clg_safetensors_pair;

/* Write n named tensors (read back from the device; any layout) and nmeta metadata
 * pairs to path, atomically. Names must be unique, keys too. Errors on dev. */
CLG_API clg_status clg_safetensors_write(clg_device *dev, const char *path, int n, const clg_named_tensor *tensors,
                                         int nmeta, const clg_safetensors_pair *meta);

/* ---- model weights -------------------------------------------------------------------------- */

/* Every parameter and buffer of m (clg_module_state: PyTorch names and layouts) and the
 * metadata pairs (plus "format": "pt", as PyTorch's safetensors writer puts, unless
 * given) to path, atomically. */
CLG_API clg_status clg_module_save(const clg_module *m, const char *path, int nmeta, const clg_safetensors_pair *meta);
/* The same with every floating-point tensor stored as `floats` (CLG_F16, CLG_BF16,
 * CLG_F32 or CLG_F64; converted on the device, to nearest even), as PyTorch's
 * model.half() state dict is; integer buffers stay as they are. A float32 model loads
 * such a file back (clg_module_load widens 16-bit floats exactly). */
CLG_API clg_status clg_module_save_as(const clg_module *m, const char *path, clg_dtype floats, int nmeta,
                                      const clg_safetensors_pair *meta);

/* What a load did. Each list holds one line per name, "0.weight: file [3, 4] F32,
 * model [4, 4] float32"; free with clg_load_report_free. */
typedef struct clg_load_report {
    int loaded;                /* tensors copied into the model */
    int nmissing;              /* in the model, not in the file */
    char **missing;
    int nunexpected;           /* in the file, not in the model */
    char **unexpected;
    int nmismatched;           /* in both, with another shape or a dtype that does not convert */
    char **mismatched;
} clg_load_report;
CLG_API void clg_load_report_free(clg_load_report *r);   /* zeroes it; NULL is fine */
/* The report as text, one "missing: ..." / "unexpected: ..." / "mismatched: ..." line
 * each, into buf (truncated to len); returns buf. */
CLG_API const char *clg_load_report_text(const clg_load_report *r, char *buf, size_t len);

/* Load path's tensors into m's parameters and buffers, by name.
 *   strict: names, shapes and dtypes must match exactly (as load_state_dict(strict=True));
 *           otherwise nothing is changed and the error lists every mismatch.
 *   not strict: fine-tuning: the tensors that match are loaded, the rest skipped, and
 *           the report says which (CLG_OK even when nothing matched: check report.loaded).
 * The file is validated whole before any value is copied. Names starting "optim." are
 * a training checkpoint's optimizer state, not model tensors, and are ignored. `report`
 * may be NULL; when given it is filled (in strict failures too) and must be freed. */
CLG_API clg_status clg_module_load(clg_module *m, const char *path, bool strict, clg_load_report *report);

/* ---- training checkpoints ---------------------------------------------------------------------- */

#define CLG_CHECKPOINT_VERSION 1

/* What resuming needs besides tensors, kept as strings in __metadata__ ("train.step",
 * ...). Fields marked (load) are ignored by save, which takes them from the optimizer
 * and the device at the moment of saving, and are filled by load. */
typedef struct clg_train_state {
    int64_t step;               /* training steps done in all (the schedule's t) */
    int64_t epoch;              /* the epoch being run */
    int64_t batch;              /* batches of that epoch already done: the next one to run */
    uint64_t loader_seed;       /* clg_loader_position's seed */
    double base_lr;             /* the schedule's base rate */
    char lr_schedule[256];      /* clg_lr_schedule_parse text ("" none) */
    double loss_scale;          /* a loss scaler's clg_grad_scaler_get_scale; 0: none */
    int64_t loss_scale_growth;  /* and its clg_grad_scaler_growth_tracker */
    int64_t world_size;         /* data-parallel replicas that trained it (dist.h); 0 or 1: one */
    uint64_t rng_seed, rng_offset;   /* (load) the device generator (clg_rng_get_state) */
    char optimizer[32];         /* (load) clg_optimizer_name ("" without an optimizer) */
    int64_t optimizer_steps;    /* (load) clg_optimizer_steps */
    double lr;                  /* (load) clg_optimizer_lr at save time */
    int version;                /* (load) CLG_CHECKPOINT_VERSION of the file */
} clg_train_state;

/* Save m's tensors, opt's state tensors ("optim.state.<param name>.<state name>", as
 * optim.state.0.weight.exp_avg, plus a 0-d int64 ".step" per parameter, as PyTorch's
 * per-parameter step), the train state, the device's RNG state and `model_desc` (an
 * opaque text, the model description; NULL for none) atomically. opt may be NULL. */
CLG_API clg_status clg_checkpoint_save(const clg_module *m, clg_optimizer *opt, const clg_train_state *state,
                                       const char *model_desc, const char *path);
/* Restore m (strictly), opt's state, step counts and lr (opt may be NULL: model only),
 * and the device's RNG from path; fill *state (may be NULL). Everything is checked
 * before anything changes: the optimizer must be of the same kind, over the same
 * parameters. The loader's position is the caller's: clg_loader_set_position with
 * {state.epoch, state.batch, state.loader_seed}. */
CLG_API clg_status clg_checkpoint_load(clg_module *m, clg_optimizer *opt, const char *path, clg_train_state *state,
                                       clg_load_report *report);
/* Without a model: the train state and the model description (malloc'd copy, NULL when
 * the file has none; free it) of a checkpoint, e.g. to rebuild the model it holds.
 * state and model_desc may be NULL. Errors into err. */
CLG_API clg_status clg_checkpoint_info(const char *path, clg_train_state *state, char **model_desc, char *err,
                                       size_t errlen);

/* ---- deprecated names (until 0.2) ------------------------------------------------------- */
typedef clg_elem_type clg_st_dtype;
typedef clg_safetensors_entry clg_st_tensor;
typedef clg_safetensors_pair clg_st_meta;
#define clg_st_dtype_name clg_safetensors_dtype_name
#define clg_st_dtype_size clg_elem_size
#define clg_st_dtype_of clg_elem_of_dtype
#define clg_st_dtype_converts clg_safetensors_converts
#define CLG_ST_BOOL CLG_ELEM_BOOL
#define CLG_ST_U8 CLG_ELEM_U8
#define CLG_ST_I8 CLG_ELEM_I8
#define CLG_ST_F8_E5M2 CLG_ELEM_F8_E5M2
#define CLG_ST_F8_E4M3 CLG_ELEM_F8_E4M3
#define CLG_ST_I16 CLG_ELEM_I16
#define CLG_ST_U16 CLG_ELEM_U16
#define CLG_ST_F16 CLG_ELEM_F16
#define CLG_ST_BF16 CLG_ELEM_BF16
#define CLG_ST_I32 CLG_ELEM_I32
#define CLG_ST_U32 CLG_ELEM_U32
#define CLG_ST_F32 CLG_ELEM_F32
#define CLG_ST_F64 CLG_ELEM_F64
#define CLG_ST_I64 CLG_ELEM_I64
#define CLG_ST_U64 CLG_ELEM_U64
#define CLG_ST_DTYPE_COUNT CLG_ELEM_COUNT

#ifdef __cplusplus
}
#endif
#endif
