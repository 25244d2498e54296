/* device_impl.h: the internals of a clg_device, shared by src/device/ and the layers
 * above it, with no OpenCL header and no OpenCL type: what the runtime holds (device
 * memory, kernel objects, the context and queue) is named by clgrad's own opaque
 * handles, which only src/device/opencl/ casts back. Not installed. Internal names
 * start with clg__.
 *
 * Four roles, one file each:
 *   opencl/device.c   the context and queue, errors and logging, counters
 *   pool.c            the allocator: device buffers, reused through a pool
 *   opencl/program.c  the compiler: kernel sources, lazy builds, binary_cache.c on disk
 *   launch.c          the program runner: kernel arguments and enqueueing through the
 *                     runtime's layers (layer.h: recording, profiling, the base)
 * src/device/backend.h lists what the files of src/device/ outside opencl/ ask of it.
 */
#ifndef CLGRAD_DEVICE_IMPL_H
#define CLGRAD_DEVICE_IMPL_H

#include <stdint.h>

#include "clgrad/device.h"
#include "runtime.h"

/* ---- errors ---------------------------------------------------------------------------- */

#define CLG_ERROR_MAX 8192

/* Record a failure on dev (printf-style message) and return `status`. */
clg_status clg__fail(clg_device *dev, clg_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void clg__log(clg_device *dev, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));


double clg__now(void); /* monotonic seconds */

/* ---- buffers and the pool (pool.c) ----------------------------------------------------- */

/* The runtime's handles (src/device/opencl/ casts them back): a buffer's device memory
 * and a built kernel object. */
typedef struct clg_mem clg_mem;
typedef struct clg_kobj clg_kobj;

typedef struct clg_buffer {
    clg_mem *mem;     /* its device memory */
    size_t size;      /* bytes usable (the pool's rounded size) */
    int refs;         /* views sharing this buffer; freed to the pool at 0 */
    clg_device *dev;
    /* Bumped by every in-place write through the API (copy_, fill_, axpy_, scale_, the
     * optimizers, batch_norm's running statistics); the tape records it when an op
     * keeps a tensor for its backward, and clg_backward refuses a changed one. */
    uint64_t version;
    /* For int32 contents written from the host (clg_tensor_from_host): the count of
     * values written, their least and greatest and where each first stands, so that
     * index ops check indices on the host, at once, with no read. Valid while `known`
     * and range.version == version (an in-place write ends it). */
    struct { bool known; int32_t lo, hi; int64_t lo_at, hi_at, count; uint64_t version; } range;
    /* What the contents hold, as far as anyone knows: 0 nothing; else the key of the
     * clg__buffer_alloc_kept that handed the buffer out and whose caller filled it, kept
     * while it waits in the pool and cleared when a plain request takes it. */
    uint64_t keep;
} clg_buffer;

typedef struct clg_pool {
    clg_buffer **free;   /* released buffers kept for reuse */
    size_t nfree, capfree;
    clg_pool_stats stats;
} clg_pool;

/* A buffer of at least `bytes` (refs = 1), or NULL with the error recorded. */
clg_buffer *clg__buffer_alloc(clg_device *dev, size_t bytes);
/* The same, for contents worth keeping between owners (keep != 0 names them): a buffer
 * last handed out with this key, back in the pool, when there is one (*kept = true: its
 * contents are as its last owner left them), else any (*kept = false), which the caller
 * then fills as the key says. A graph capture's recording layer always gives the latter,
 * so that nothing a capture records depends on an earlier owner's writes. */
clg_buffer *clg__buffer_alloc_kept(clg_device *dev, size_t bytes, uint64_t keep, bool *kept);
void clg__buffer_retain(clg_buffer *buf);
void clg__buffer_release(clg_buffer *buf);   /* NULL is fine */
size_t clg__pool_round(const clg_device *dev, size_t bytes);
void clg__pool_free_all(clg_device *dev);

/* ---- transfers (transfer.c); counted in dev->transfers --------------------------------- */

clg_status clg__write(clg_device *dev, clg_buffer *dst, size_t offset, const void *src, size_t bytes);
/* Blocking: waits for queued work that writes dst, then copies. */
clg_status clg__read(clg_device *dev, const clg_buffer *src, size_t offset, void *dst, size_t bytes);
clg_status clg__copy(clg_device *dev, const clg_buffer *src, size_t src_off, clg_buffer *dst,
                     size_t dst_off, size_t bytes);
/* Enqueue only; the host memory stays in use until *done completes (release it). */
clg_status clg__write_async(clg_device *dev, clg_buffer *dst, size_t off, const void *src, size_t bytes,
                            clg_event **done);
clg_status clg__read_async(clg_device *dev, const clg_buffer *src, size_t off, void *dst, size_t bytes,
                           clg_event **done);

/* ---- programs and kernels (opencl/program.c, binary_cache.c) --------------------------- */

struct clg_arg;
/* A host function run as a command of the device's queue (opencl/native.c): its arguments as
 * a launch's, each buffer argument's v.host holding the buffer's host address. */
typedef void (*clg_native_fn)(const struct clg_arg *args, int nargs);

typedef struct clg_kernel {
    clg_kobj *k;        /* the kernel object; NULL for a native function */
    clg_native_fn native;
    char name[64];
    int prof_slot;      /* index into the profiler's per-kernel table, -1 until first launch */
    size_t wg_max;      /* CL_KERNEL_WORK_GROUP_SIZE */
    const char *key;    /* "program\noptions\nkernel": the kernel table's (opencl/program.c) */
} clg_kernel;

/* The kernel `kernel` of program cl_kernels/<program>.cl built with `options`
 * (-D defines). Built, or loaded from the disk cache, on first request; cached on dev.
 * NULL with the error (and build log) recorded on failure. */
clg_kernel *clg__kernel_get(clg_device *dev, const char *program, const char *options,
                            const char *kernel);

/* Programs to build ahead: cl_kernels/<program>.cl with `options`, as clg__kernel_get
 * takes them. clg__programs_build builds those not built yet, their compiles side by side
 * on up to the device table's build_threads host threads (opencl/build_many.c), so that
 * a caller that knows what it will need (the GEMM tuner's candidates) waits for the
 * slowest compile rather than for their sum. A failure is not reported here, and leaves
 * the device's error as it was: the kernel's own clg__kernel_get builds it again and
 * says why. Returns how many programs it built. */
typedef struct clg_program_req {
    const char *program, *options;
} clg_program_req;
int clg__programs_build(clg_device *dev, int n, const clg_program_req *reqs);
/* The programs `names` (cl_kernels/<name>.cl each), all with `options`, built as one
 * program of their sources one after another, kept in the table as each of theirs: one
 * compile instead of n, for a device that compiles one program at a time (POCL's fixed
 * cost per program: six of a step's programs in 1.0-1.5 s against 2.3-2.6 s one by
 * one). Those built already are left out. The files must not define the same macro or
 * kernel (test_program_build checks the bundle of src/tensor/ahead.c). A failure is
 * left for the kernels' own requests to report, as clg__programs_build does. Returns
 * how many programs it built. */
int clg__programs_bundle(clg_device *dev, int n, const char *const *names, const char *options);
/* How many programs of the table no kernel was taken from (built ahead and not needed). */
int clg__programs_idle(clg_device *dev);

/* The same kernel of the same program built with `extra` options added (a variant, say
 * -DCLG_EPI_RELU); NULL with the error recorded on failure. */
clg_kernel *clg__kernel_variant(clg_device *dev, const clg_kernel *k, const char *extra);
/* The program and options k was built from (as clg__kernel_get took them): false for a
 * native function, or where either does not fit its buffer. */
bool clg__kernel_origin(const clg_kernel *k, char *program, size_t plen, char *options, size_t olen);

typedef struct clg_kernel_table clg_kernel_table; /* in opencl/program.c */
void clg__programs_free(clg_device *dev);

typedef struct clg_disk_cache {
    char dir[1024];
    bool enabled;
    bool tried;   /* set up on the first build, not at open */
} clg_disk_cache;
void clg__disk_cache_init(clg_device *dev); /* once; later calls return at once */
/* Load a cached binary for (meta); NULL when absent or rejected. Free with free(). */
unsigned char *clg__disk_cache_load(clg_device *dev, const char *meta, size_t *len);
void clg__disk_cache_store(clg_device *dev, const char *meta, const unsigned char *bin, size_t len);
/* 128-bit hash of bytes as 32 hex digits plus NUL. */
void clg__hash_hex(const void *data, size_t len, char out[33]);

/* ---- launching (launch.c) -------------------------------------------------------------- */

typedef enum clg_arg_kind {
    CLG_ARG_BUF, CLG_ARG_I32, CLG_ARG_I64, CLG_ARG_F32, CLG_ARG_F64, CLG_ARG_LOCAL, CLG_ARG_INT8, CLG_ARG_U16,
    CLG_ARG_RNG
} clg_arg_kind;

/* A position of the device's Philox generator (rng.c): the key and the first block. reg:
 * the capture registers that hold it at each replay (-1 outside a capture). */
typedef struct clg_rng_pos { uint64_t seed, offset; int reg; } clg_rng_pos;

typedef struct clg_arg {
    clg_arg_kind kind;
    union {
        const clg_buffer *buf;   /* resolved to its device memory by the launcher; NULL is legal */
        void *host;              /* a buffer argument inside a native function (opencl/native.c) */
        int32_t i32; int64_t i64; float f32; double f64; size_t local; struct { int32_t s[8]; } i8; uint16_t u16;
        struct { clg_rng_pos *pos; uint64_t blocks; int32_t reg; bool draw; } rng;   /* CLG_ARG_RNG (reg: a capture's) */
    } v;
} clg_arg;

/* A buffer argument: kernels name buffers, never their device memory, so that the
 * layers above see no runtime type and a capture knows the buffer without a search. A
 * function, not a cast, so that passing a tensor where a buffer belongs does not compile. */
static inline clg_arg clg__arg_buf(const clg_buffer *b) { return (clg_arg){.kind = CLG_ARG_BUF, .v.buf = b}; }
#define CLG_ARG_B(b) clg__arg_buf(b)
#define CLG_ARG_I(x) ((clg_arg){.kind = CLG_ARG_I32, .v.i32 = (int32_t)(x)})
#define CLG_ARG_L(x) ((clg_arg){.kind = CLG_ARG_I64, .v.i64 = (int64_t)(x)})
#define CLG_ARG_F(x) ((clg_arg){.kind = CLG_ARG_F32, .v.f32 = (float)(x)})
#define CLG_ARG_D(x) ((clg_arg){.kind = CLG_ARG_F64, .v.f64 = (double)(x)})
#define CLG_ARG_U16(x) ((clg_arg){.kind = CLG_ARG_U16, .v.u16 = (uint16_t)(x)})   /* a 16-bit float's bits */
/* int8 (eight ints) from int64_t[8]: shapes and strides of up to 8 axes, by value. */
clg_arg clg__arg_int8(const int64_t *v, int n);
#define CLG_ARG_LOCAL(bytes) ((clg_arg){.kind = CLG_ARG_LOCAL, .v.local = (bytes)})
/* The generator's position, the only way a kernel gets one: four kernel arguments
 * (uint seed_lo, seed_hi, ctr_lo, ctr_hi; scripts/layers.py checks every kernel that
 * takes them). DRAW: the launcher takes the device's position into *pos and moves the
 * generator `blocks` Philox blocks on; at a graph replay it does so again, so a random
 * op cannot repeat its numbers. AT: the position *pos an earlier DRAW of the step took
 * (a backward drawing its forward's mask again; the op keeps *pos on the tape node). A
 * backward captured without its forward fails the capture. NONE: no draw (dropout off):
 * zeros. The position itself is device state (dev->rng) that no op reads. */
#define CLG_ARG_RNG_DRAW(p, n) ((clg_arg){.kind = CLG_ARG_RNG, .v.rng = {.pos = (p), .blocks = (n), .draw = true}})
#define CLG_ARG_RNG_AT(p) ((clg_arg){.kind = CLG_ARG_RNG, .v.rng = {.pos = (p)}})
#define CLG_ARG_RNG_NONE ((clg_arg){.kind = CLG_ARG_RNG, .v.rng = {.pos = NULL}})
/* The kernel argument index of args[i]: a generator position takes four. */
int clg__arg_slot(const clg_arg *args, int i);
/* The device generator's position taken into *pos and moved on by `blocks` (rng.c). */
void clg__rng_take(clg_device *dev, uint64_t blocks, clg_rng_pos *pos);
void clg__rng_init(clg_device *dev);   /* at open: seed 0x5eed, offset 0 */

/* Set the arguments and enqueue. A zero global size launches nothing. With `local`
 * given, global sizes are rounded up to its multiples: kernels check their bounds. */
clg_status clg__launch(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs,
                       int dims, const size_t *global, const size_t *local);
/* clg__launch of a launch that writes final values into c, whose first `elems`
 * elements are the whole result (its part of them: a result split over launches says
 * so at each), with a kernel that builds with -DCLG_EPI_RELU to write relu of them
 * instead (GEMM): a graph's plan may fold a ReLU that reads all of c, and only it,
 * into the launch. With c NULL, a plain clg__launch. */
clg_status clg__launch_final(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, int dims,
                             const size_t *global, const size_t *local, const clg_buffer *c, size_t elems);
/* fn(data) enqueues one launch (perhaps split over enqueues) that copies `bytes` bytes
 * of src from src_off to dst at dst_off as they are (contiguous, one dtype): a graph
 * whose src dies right after may have src's producers write dst directly and leave the
 * copy out. With dst NULL, the launch is not such a copy and fn merely runs. */
typedef struct clg_copy_note {
    const clg_buffer *dst, *src;
    size_t dst_off, src_off, bytes;
} clg_copy_note;
clg_status clg__launch_copy(clg_device *dev, clg_status (*fn)(void *data), void *data, clg_copy_note note);
/* The largest divisor of n that is at most cap (1 for n == 0): a group size that
 * covers n work-items exactly. */
size_t clg__divisor_at_most(size_t n, size_t cap);
/* 1-D launch of exactly n work-items (global ids 0 .. n-1) with the device's preferred
 * group size: whole groups, then the remainder as a second launch at an offset. The
 * kernel needs no bounds check; POCL only vectorizes work-group loops without one. */
clg_status clg__launch_1d(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, size_t n);
/* A launch's refresh at each graph replay: fn(data, args, nargs) advances the host
 * state the op advanced and rewrites the launch's scalar arguments (its buffer
 * arguments are the graph's: leave them); fn == NULL for none. data (size bytes) is
 * copied. (The generator's position is not host state of an op: CLG_ARG_RNG_DRAW.) */
typedef void (*clg_refresh_fn)(void *data, clg_arg *args, int nargs);
typedef struct clg_refresh {
    clg_refresh_fn fn;
    const void *data;
    size_t size;
} clg_refresh;
/* clg__launch_1d whose scalar arguments a graph replay rewrites with `refresh` (an
 * optimizer's step count and rates): passed with the launch, so that no op can record
 * the launch without it. */
clg_status clg__launch_1d_refreshed(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, size_t n,
                                    clg_refresh refresh);
/* 2-D launch of exactly inner x rows work-items, groups along the rows (inner), the
 * same way: for the _rows elementwise kernels (cl_kernels/common.cl). */
clg_status clg__launch_rows(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, size_t inner,
                            size_t rows);
/* The same over exactly inner x rows x planes work-items: the elementwise _rows kernels. */
clg_status clg__launch_rows3(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, size_t inner,
                             size_t rows, size_t planes);

/* ---- host functions on the queue (opencl/native.c) ------------------------------------- */

/* Whether the device runs host functions as commands (CL_EXEC_NATIVE_KERNEL: POCL does;
 * GPUs and rusticl do not). Its buffers are then host memory the function may use. */
bool clg__native_supported(clg_device *dev);
/* Whether the host CPU has AVX512-BF16 with AVX512-BW and -VL (params.c). */
bool clg__host_cpu_bf16(void);
/* The native function `fn` as a kernel named `name` (for profiles, captures and
 * errors), made once per device and name; NULL with the error recorded where the device
 * runs none. */
clg_kernel *clg__native_kernel(clg_device *dev, const char *name, clg_native_fn fn);
/* Enqueue k's function with args, in queue order like a launch, recorded by a capture
 * and timed by the profiler like one. Nothing waits. */
clg_status clg__launch_native(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs);
/* A buffer argument's host address inside a native function. */
static inline void *clg__native_ptr(const clg_arg *a) { return a->v.host; }

/* ---- profiling (opencl/profile.c) ------------------------------------------------------ */

typedef struct clg_prof_kernel { char name[64]; uint64_t count; uint64_t ns, min_ns, max_ns; } clg_prof_kernel;
typedef struct clg_prof_build { char name[64]; char options[128]; double start, seconds; bool cached; } clg_prof_build;
typedef struct clg_prof_event clg_prof_event;   /* opencl/device_cl.h */
typedef struct clg_prof_span { int slot; uint64_t start_ns, end_ns; } clg_prof_span;

typedef struct clg_profiler {
    bool enabled;
    clg_prof_kernel *kernels; int nkernels, capkernels;
    clg_prof_build *builds; int nbuilds, capbuilds;
    clg_prof_event *pending; size_t npending, cappending;
    clg_prof_span *spans; size_t nspans, capspans;   /* for the trace */
    double host_t0;
    /* The device's clock was found not to tick (rusticl 22.3 stamps events 0, 1, 2, ...):
     * launches are then timed on the host, each waited for (clg__profile_calibrate). */
    bool host_timed;
    double host_mark;   /* host-timed: when the queue was last seen idle */
} clg_profiler;

int clg__profile_slot(clg_device *dev, const char *kernel_name);
/* Once, at open with profiling on: time a buffer fill on the device's clock and on the
 * host's; a device clock that shows (almost) nothing switches to host timing. */
clg_status clg__profile_calibrate(clg_device *dev);
/* Host-timed profiling: wait for earlier work so that the next launch is timed alone. */
void clg__profile_before_enqueue(clg_device *dev);
void clg__profile_build(clg_device *dev, const char *program, const char *options,
                        double start, double seconds, bool cached);
/* Read the times of finished launches; call only after the queue drained. */
void clg__profile_collect(clg_device *dev);
void clg__profile_free(clg_device *dev);

/* ---- the per-device parameter table (params.c) ----------------------------------------- */

/* What differs between devices, in one place: ops read these and never ask what kind of
 * device they run on. Filled at open from the device's properties, then overridden by
 * $CLG_PARAMS_FILE (lines "key = value", # comments) and $CLG_PARAMS ("key=value,...").
 * `clgrad devices --params` prints the table. */
typedef enum clg_mma_kind {
    CLG_MMA_NONE, CLG_MMA_PTX, CLG_MMA_EMULATE, CLG_MMA_XMX, CLG_MMA_EMULATE_XMX, CLG_MMA_KINDS
} clg_mma_kind;
/* The table's name of an mma kind: "none", "ptx", "emulate", "xmx", "emulate-xmx". */
const char *clg__mma_kind_name(clg_mma_kind k);

#define CLG_BUILD_THREADS_MAX 16

typedef struct clg_device_params {
    /* GEMM engine: "packed" (gemm.cl, register-blocked per work-item: CPUs whose
     * work-items are SIMD-wide), "tiled" (gemm_tiled.cl, local-memory tiles shared by a
     * work-group: GPU-shaped devices), "clblast", "host" (the host's CBLAS as a command
     * of the queue: devices that run host functions), or "tune": time them on first use,
     * validate against a reference, keep the fastest (cached on disk per device). */
    char gemm[16];
    /* Whether "tune" also times the engines built for GPU-shaped devices (the tiled
     * configurations and CLBlast), or only packed and host: off where work-items are
     * SIMD-wide (POCL), where they lose every time and CLBlast's build takes ~20 s. */
    bool gemm_tiles;
    /* Exact 1-D and row launches (launch.c): work-items per group, and the smallest
     * group accepted for a single launch whose size divides n; below it, whole groups
     * of group_1d then the tail at an offset (what lets POCL vectorize; a second launch
     * on a GPU). */
    size_t group_1d, group_1d_min;
    /* The tail of such a launch: 0, one launch in groups the driver picks; k > 0, groups
     * k items wide along dimension 0, then groups one item wide (both filled out along
     * dimensions 1 and 2 in powers of two). Set where the driver compiles a kernel for
     * each group shape it meets (POCL): its vector width. */
    size_t group_tail;
    size_t group_reduce;     /* most work-items in a group reducing one row (norm, softmax) */
    /* Elementwise ops whose operands are strided or broadcast (iter.c) run as rows, with
     * no index division per element, when their innermost axis has at least this many
     * elements; shorter ones take the strided kernel. 2 where local memory is emulated in
     * global memory (CPU implementations: POCL and llvmpipe added a [30000, 37] bias 16x
     * and 3x faster than by the strided kernel), 64 elsewhere (a GPU: rows of 2 would
     * leave most of a warp idle). */
    size_t rows_min;
    int vector_float;        /* CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT */
    /* Limits read from the device, which every launch honours (clg__launch checks). */
    size_t max_group, max_item[3];
    uint64_t local_mem;
    bool local_is_global;    /* CL_DEVICE_LOCAL_MEM_TYPE is CL_GLOBAL (emulated) */
    /* Store built programs in clgrad's disk cache (binary_cache.c). Off where the driver
     * keeps a cache of compiled kernels itself and exporting a program's binary compiles
     * every kernel in it (POCL: 14 of the MLP's 19 s cold start); cached binaries are
     * still loaded, and `clgrad warmup` stores them whatever this says. */
    bool binary_cache;
    /* Host threads compiling at once in clg__programs_build: 1 on CPU devices (POCL 3.1
     * compiles under one lock, measured; a CPU's cores are the device's too), else the
     * host's cores up to CLG_BUILD_THREADS_MAX (GPU drivers compile on the host). */
    size_t build_threads;
    /* conv2d's input gradient from its columns (conv.cl): one work-item per (n, c) plane
     * adding each tap's rows into it ("planes": streams the columns, ~5x faster on POCL,
     * but a few thousand long-running items), or one per input pixel gathering its taps
     * ("gather": the GPU shape). Both add the taps in the same order: the same bits. */
    bool col2im_planes;
    /* The packed engine's A . B^T (A not transposed) with m or n at most 256: dot
     * products along k read in place, one launch (gemm.cl's gemm_dot), rather than
     * packing both operands (src/gemm/packed.c). */
    bool gemm_dot;
    /* The packed engine's register blocks in float32 and float64 ("gemm_rows"): 8 rows per
     * micro-tile of gemm_tiles_rows and 6 columns per block of gemm_dot (true: 32 vector
     * registers, AVX-512: the default where float vectors are 16 wide), or 6 and 3 (16
     * registers, AVX2). */
    bool gemm_rows8;
    /* The packed engine's products with a row-major B and at most this many
     * multiply-adds (m n k) run as one launch of gemm.cl's gemm_small, nothing packed
     * (the packing passes and launches cost more than they save there); 0: never. */
    size_t gemm_small;
    /* conv2d's forward keeps its column matrix for the weight gradient ("keep": one
     * im2col pass less per layer and step, the columns held until the tape goes, tens
     * of MB per layer at batch 128), or the backward rebuilds it ("rebuild"). */
    bool conv_keep_columns;
    /* conv2d runs its batch in chunks of images whose column matrix is at most this many
     * bytes, so that the columns stay in cache between the kernels that write and read
     * them (CPUs: 9x a 3x3 convolution's input through memory and back cost more than
     * its products); 0: the whole batch at once (GPUs, whose launches cost more). */
    size_t conv_chunk;
    /* Stride-1 convolutions read their zero-padded input shifted, with no column matrix
     * (src/tensor/conv_shift.c), where the GEMM engine takes row offsets: on for devices
     * with wide work-items (CPUs: im2col's traffic bounded the ResNet's convolutions). */
    bool conv_shift;
    /* The most loop iterations one work-item may run, all its loops together. Mesa's
     * llvmpipe ends a work-item's loops after 65,535 iterations in all, silently (gallivm's
     * LP_MAX_TGSI_LOOP_ITERATIONS), and GPU drivers have watchdogs: kernels that walk a
     * long axis split it over work-items, groups or launches to stay under this, and refuse
     * (naming it) what they cannot split. 32,768 everywhere by default: half llvmpipe's
     * limit, and long enough that a split costs nothing measurable. */
    size_t item_loops;
    /* Bytes of freed buffers the pool keeps for reuse (pool.c): half the device's memory,
     * none on Oclgrind, whose race checks cost per byte held at every launch. */
    size_t pool_keep;
    /* Fused attention (attention.cl): a work-item per row walking its keys alone, vectorized
     * across rows ("rows": SIMD-wide work-items, ~10x faster on POCL), or a work-group per
     * row sharing tiles of keys through local memory ("tiles": the GPU shape). */
    bool attention_rows;
    /* Row-wise reductions of softmax.cl (softmax, log_softmax, var, cross-entropy): a
     * work-item per row walking it alone, vectorized across rows ("items": CPUs, where a
     * work-group's barriers cost more than a short row's work), or a work-group per row
     * combining in local memory ("groups": GPUs). Rows longer than item_loops / 3 take
     * the group kernels either way. */
    bool row_items;
    /* scatter = lines: scatter-adds (index_add, scatter_add, the backward passes of
     * index_select and gather) walk each list in order, one work-item per list chunk,
     * where a work-item is a core's SIMD thread (wide_items); sorted: sort the keys and
     * sum each output's run (index.c), where work-items are lanes. */
    bool scatter_lines;
    /* const_strides = on: elementwise launches over rows whose inputs are read at stride
     * 0 or 1 along the row, one at 0 (a broadcast), use the rowsu kernels built with
     * those strides as constants (iter.c): where work-items are a core's SIMD threads,
     * whose work-group loop POCL vectorizes only for a stride of 1 (20x on [M, N] against
     * [M, 1]). Off where work-items are lanes: a program build less per stride pattern. */
    bool const_strides;
    /* transpose_tiles = on: contiguous() of a transpose (and axpy_ of one) moves 16 x 16
     * tiles through a work-item's private tile (copy.cl copy_transposed), where a
     * work-item is a core's SIMD thread; off where work-items are lanes, whose strided
     * copy already reads a column coalesced across the lanes. */
    bool transpose_tiles;
    /* Contiguous float32 operands of the ops whose kernels have a 16-wide variant (libm's
     * math: sin, cos, tan, pow, exp, sigmoid, silu, elu; CLG_FLAT16_* in cl_kernels/common.cl) run 16 elements per
     * work-item in vectors ("on": devices with float vectors 8 wide or more, where POCL
     * calls SLEEF's vector functions instead of one libm call per element), or one
     * element per work-item ("off"). */
    bool flat16;
    /* Programs built with -cl-fp32-correctly-rounded-divide-sqrt: float division and
     * sqrt rounded as IEEE, where OpenCL lets them be 2.5 and 3 ulp off (NVIDIA's are;
     * log1p was 2.5 ulp off there). On where the device reports it can
     * (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT); applies to programs built after it is set. */
    bool exact_div;
    /* Accumulations in the GEMM and attention kernels (CLG_MAD in cl_kernels/common.cl) as
     * fma(), one rounding ("on": programs built with -DCLG_HW_FMA), or as mad() ("off").
     * On where the device reports float fused multiply-add (CL_FP_FMA); a device without it
     * (llvmpipe) computes fma() in software: the packed GEMM's kernels took llvmpipe 10 s
     * to compile that way, 1.5 s with mad(), and ran slower. */
    bool fma;
    /* The matrix unit 16-bit products run on (src/gemm/mma.c, cl_kernels/gemm_mma.cl): "ptx"
     * (NVIDIA's mma.sync through inline PTX: the default where the device reports compute
     * capability 8.0 or later through cl_nv_device_attribute_query), "xmx" (Intel's dpas
     * through cl_intel_subgroup_matrix_multiply_accumulate: the default where the device
     * reports it with cl_intel_required_subgroup_size), "emulate" and "emulate-xmx" (the
     * same kernel with the instruction computed by the warp's or sub-group's work-items:
     * any device, for the suite), or "none". Validated on the device before first use. */
    clg_mma_kind mma;
    /* The matrix-unit engine's largest block: warps (sub-groups) along m and n, fragments
     * per warp along m and n (16 x 8 NVIDIA's, 8 x mma_lanes Intel's), the k tile and the
     * number of tiles staged ("2x4x4x4x32x2": 128 x 128 blocks of 8 warps, two tiles of
     * 32; Intel's 4x4x2x2x32x2 where sub-groups are 8 wide, 4x4x4x2x32x2 where 16: 64 x 64
     * and 128 x 128). Its smaller blocks serve products too small to fill the device. */
    int mma_block[6];
    /* Work-items of the sub-group Intel's instruction spans (xmx, emulate-xmx): 8 or 16,
     * the device's smallest sub-group size (8 on DG2, 16 on Ponte Vecchio and Xe2). */
    int mma_lanes;
    /* Whether mma = emulate builds its kernel with the compiler's optimizations: off on
     * POCL, whose optimizer took 4-7 s per block on the emulated instruction (its loops
     * around barriers; 0.15 s unoptimized, and the suite's products ran as fast), on
     * elsewhere (Oclgrind simulates every instruction: unoptimized, twice the time). */
    bool mma_opt;
    /* bfloat16 products of 2^20 multiply-adds or more on the host CPU's dot-product
     * instructions (AVX512-BF16's vdpbf16ps, src/gemm/hostbf16.c), as commands of the
     * queue: on where the CPU has them and the device runs host functions (POCL on a
     * CPU); it cannot be turned on elsewhere. */
    bool host_bf16;
} clg_device_params;

const clg_device_params *clg__device_params(const clg_device *dev);
/* Fill dev->params from the device, then apply the overrides; an unknown key or a bad
 * value fails with the key, the value and where it came from. */
clg_status clg__params_init(clg_device *dev);
/* Set one parameter from text (for overrides and tests). */
clg_status clg__params_set(clg_device *dev, const char *key, const char *value, const char *origin);
/* The table as "key = value" lines into buf (for `clgrad devices --params`). */
void clg__params_format(const clg_device_params *p, char *buf, size_t len);

/* ---- the device ------------------------------------------------------------------------ */

/* Errors that kernels find in values made on the device (an index out of range), which
 * the host cannot check without reading them (errflag.c): a word of 4 ints on the
 * device, {code, value, bound, 0}, set by the first work-item that finds one (atomic
 * compare-and-swap), read beside the next host read (clg__read), which then fails
 * with the op's name, the value and the bound, and clears it. No extra wait: the word
 * is read on the same in-order queue just before the data. */
#define CLG_KERNEL_ERROR_OPS 32
typedef struct clg_kernel_errors {
    clg_buffer *word;                        /* NULL until a kernel that reports runs */
    /* code k reports a `what[k - 1]` ("index", "label") of op ops[k - 1]; both are
     * string literals of the callers */
    const char *ops[CLG_KERNEL_ERROR_OPS], *what[CLG_KERNEL_ERROR_OPS];
    int nops;
    int32_t host[4];                         /* where the read lands */
} clg_kernel_errors;
/* The word's buffer and the code under which a kernel reports for `op` (value: what
 * the checked value is, a string literal: "index" or "label", or a whole message with
 * a %d for the value and one for the bound); NULL with the error recorded on failure. */
clg_buffer *clg__kernel_error_word(clg_device *dev, const char *op, const char *value, int *code);
/* After a blocking read: CLG_OK, or the error a kernel reported (the word cleared). */
clg_status clg__kernel_error_check(clg_device *dev);
void clg__kernel_errors_free(clg_device *dev);

/* State that a layer above keeps per device (tensors, GEMM choices), made lazily by
 * that layer and freed at close, in slot order, before the pool and programs go. GEMM:
 * the choice of engine (src/gemm/choice.c), each engine's own state (src/gemm/slots.c). */
typedef enum clg_slot_id { CLG_SLOT_TENSOR, CLG_SLOT_GEMM, CLG_SLOT_GEMM_ENGINES, CLG_SLOT_COUNT } clg_slot_id;
typedef struct clg_slot {
    void *data;
    void (*free)(clg_device *dev, void *data);
} clg_slot;

/* One layer of the runtime (layer.h, private to src/device/): its operations table, the
 * layer it wraps (NULL for the base), its own state. */
struct clg_rt_ops;
typedef struct clg_rt {
    const struct clg_rt_ops *ops;
    struct clg_rt *below;
    clg_device *dev;
    void *self;
} clg_rt;

struct clg_device {
    clg_device_info info;
    clg_device_params params;
    /* the runtime's handles (platform, device, context, queue: opencl/device_cl.h); NULL
     * until the device is open */
    struct clg_cl *cl;

    clg_status status;
    char error[CLG_ERROR_MAX];
    clg_log_fn log;
    void *log_user;

    clg_transfer_stats transfers;
    clg_pool pool;
    clg_kernel_table *kernels;
    clg_program_stats prog_stats;
    bool programs_ahead;     /* a float32 step's programs were asked for ahead (src/tensor/ahead.c) */
    clg_disk_cache disk;
    char kernel_dir[1024];   /* CLG_KERNEL_DIR, "" for the embedded sources */
    clg_profiler prof;
    clg_slot slots[CLG_SLOT_COUNT];
    clg_kernel_errors kerr;
    struct clg_capture *cap; /* the capture open on this device (capture.c), else NULL */
    /* The runtime's layers (layer.h): rt the top one, which every device operation
     * calls; the base and profiling layers live here, a capture's in the capture. */
    clg_rt *rt;
    clg_rt rt_base, rt_prof;
    struct { uint64_t seed, offset; } rng;   /* the Philox generator's position (rng.c) */
};

/* The device's context and queue exist (an open that failed leaves a device with its
 * error and no queue). */
bool clg__device_is_open(const clg_device *dev);

static inline bool clg__capturing(const clg_device *dev) { return dev->cap != NULL; }

/* The device's error as it was, for work whose failure is not the caller's (a build
 * ahead, an engine's validation, a tuning): saved, then put back (as often as needed),
 * then dropped. */
typedef struct clg_saved_error { clg_status status; char *text; } clg_saved_error;
clg_saved_error clg__error_save(const clg_device *dev);
void clg__error_restore(clg_device *dev, const clg_saved_error *e);
void clg__error_drop(clg_saved_error *e);

#endif
