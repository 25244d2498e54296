/* params.c: the per-device parameter table (device_impl.h): what differs between
 * devices, derived from their properties, overridable from a file or the environment.
 *
 * The defaults follow from how a device runs work-items, not from its name:
 *   - preferred float vector width > 1 (POCL on a CPU): each work-item is a SIMD thread
 *     of its own, so the packed register-blocked GEMM, small reduction groups (a group
 *     is a loop on one core) and exact launches split into whole groups + a tail (POCL
 *     vectorizes a group's loop only when the kernel has no bounds check);
 *   - width 1 (GPUs, Mesa's llvmpipe): work-items are SIMD lanes, so a local-memory
 *     tiled GEMM chosen by timing ("tune"), groups of 256 for reductions, and one
 *     launch where a divisor of n of at least 64 items (a wavefront) exists.
 * One default follows the driver rather than the device: binary_cache (whether clgrad
 * stores program binaries), off for POCL, which caches compiled kernels itself and
 * compiles every kernel of a program to export its binary (measured: a cold MLP start
 * of 19 s with it, 5 s without; see driver_caches_kernels).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend.h"
#include "file_read.h"

const clg_device_params *clg__device_params(const clg_device *dev) { return &dev->params; }

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

static bool platform_is(const clg_device *dev, const char *name) { return strstr(dev->info.platform, name) != NULL; }

/* POCL keeps compiled kernels in its own cache (POCL_CACHE_DIR) unless POCL_KERNEL_CACHE=0;
 * for other drivers clgrad's cache is what spares the compile of a second run. */
static bool driver_caches_kernels(const clg_device *dev)
{
    const char *off = getenv("POCL_KERNEL_CACHE");
    return platform_is(dev, "Portable Computing Language") && !(off && !strcmp(off, "0"));
}

/* POCL compiles a kernel again for each work-group size (and zero or non-zero offset) it
 * is launched with, at the launch: ~80 ms each on a CPU. */
static bool compiles_per_group_size(const clg_device *dev)
{
    return platform_is(dev, "Portable Computing Language");
}

/* POCL's optimizer on the emulated matrix-unit kernel (gemm_mma.cl with MMA = 2 or 4, loops
 * around barriers, which POCL's work-group functions copy per region): 4-7 s a program
 * against 0.15 s unoptimized, twelve programs in the suite's GEMM tests. */
static bool slow_to_optimize_emulated_mma(const clg_device *dev)
{
    return platform_is(dev, "Portable Computing Language");
}

/* Oclgrind 21.10 compiles in a shared clang instance: two clBuildProgram calls at once
 * crashed its tests at random (segmentation faults and double frees within 0.1 s, the
 * failing CI run of stop 48), one at a time never did. */
static bool compiler_single_threaded(const clg_device *dev)
{
    return platform_is(dev, "Oclgrind");
}

/* Oclgrind's race checks (--data-races) set up a record for every byte of every live
 * buffer after each kernel: a launch costs in proportion to all the memory held, and
 * the pool's cached buffers held most of it (test_graph under Oclgrind: 67 s keeping
 * them, 47 s keeping none). */
static bool pays_per_live_byte(const clg_device *dev)
{
    return platform_is(dev, "Oclgrind");
}

/* The host's online cores, 1 to CLG_BUILD_THREADS_MAX. */
static size_t host_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > CLG_BUILD_THREADS_MAX ? CLG_BUILD_THREADS_MAX : (size_t)n;
}

/* The packed engine's gemm_small path up to this many multiply-adds on CPU devices
 * whose float vectors are 16 wide (2^26: the MLP's products; 1024^3 stays packed). On
 * the 2-core AVX-512 EPYC, alternating, GFLOP/s medians gemm_small / packed: 256^3
 * 104-166 / 61-96, 128x784x512 110-190 / 95-107, 10x256x128 A^T 26-29 / 6-21
 * (bench/RESULTS.md, issue 32). Not with 8-wide vectors: there each of its rows of 16
 * columns takes two registers and it streams B unpacked for every row block; on the
 * 2-core AVX2 EPYC (Zen 3) it took 30% of the tiny GPT's device time (its weight
 * gradients, 384-512 x 128 x 992 A^T), and the GPT trained at 21.7k tokens/s with it
 * against 26.2k without (medians of 5, alternating); the MLP 28.9k / 29.5k images/s. */
#define GEMM_SMALL_DEFAULT ((size_t)1 << 26)

static void defaults(clg_device *dev)
{
    clg_device_params *p = &dev->params;
    memset(p, 0, sizeof *p);
    clg_device_props props = clg__device_props(dev);
    p->vector_float = props.vector_float;
    p->max_group = dev->info.max_work_group ? dev->info.max_work_group : 1;
    memcpy(p->max_item, props.max_item, sizeof p->max_item);
    p->local_mem = dev->info.local_mem;
    p->local_is_global = props.local_is_global;

    bool wide_items = p->vector_float > 1;
    /* Where work-items are SIMD-wide (a CPU): the host's BLAS ("host"), its small
     * products and convolutions' sums and row offsets on the packed kernels; the packed
     * kernels alone where no BLAS library is found (src/gemm/). It slowed the GPT and
     * ResNet-20 once (session 17): OpenBLAS's threads spun after each call on the cores
     * the kernels after it needed, and the convolutions lost the packed kernels' row
     * offsets. Without both (session 31, 2-core AVX-512 Xeon, medians of 4 alternating
     * runs against the packed kernels): the MLP 1.59x, the tiny GPT 1.14x, the CNN 1.12x,
     * char_lstm 1.07x. */
    snprintf(p->gemm, sizeof p->gemm, "%s", wide_items ? "host" : "tune");
    p->gemm_tiles = !wide_items;
    p->group_1d = min_size(256, min_size(p->max_group, p->max_item[0]));
    p->group_1d_min = wide_items ? p->group_1d : min_size(64, p->group_1d);
    p->group_reduce = min_size(wide_items ? 16 : 256, p->max_group);
    p->group_tail = compiles_per_group_size(dev) ? min_size((size_t)p->vector_float, p->group_1d) : 0;
    p->rows_min = p->local_is_global ? 2 : 64;
    p->binary_cache = !driver_caches_kernels(dev);
    p->build_threads = dev->info.type == CLG_DEVICE_CPU || compiler_single_threaded(dev) ? 1 : host_threads();
    p->col2im_planes = wide_items;
    p->gemm_dot = true;
    p->gemm_rows8 = p->vector_float >= 16;
    p->gemm_small = p->vector_float >= 16 ? GEMM_SMALL_DEFAULT : 0;
    p->conv_keep_columns = true;
    p->conv_chunk = wide_items ? (size_t)4 << 20 : 0;
    p->conv_shift = wide_items;
    p->item_loops = 32768;
    p->pool_keep = pays_per_live_byte(dev) ? 0 : dev->info.global_mem / 2;
    p->attention_rows = wide_items;
    p->row_items = wide_items;
    p->scatter_lines = wide_items;
    p->const_strides = wide_items;
    p->transpose_tiles = wide_items;
    p->flat16 = p->vector_float >= 8;
    p->exact_div = props.exact_div;
    p->fma = props.hw_fma;
    /* Intel's blocks as large as ocloc compiles them without spilling registers
     * (scripts/gpu/xmx-check.sh): 2 x 2 fragments per sub-group where it is 8 wide (DG2),
     * 4 x 2 where 16 (Ponte Vecchio); not yet timed on a device. */
    p->mma = props.nvidia_sm80 ? CLG_MMA_PTX : props.intel_xmx_lanes ? CLG_MMA_XMX : CLG_MMA_NONE;
    p->mma_lanes = props.intel_xmx_lanes ? props.intel_xmx_lanes : 8;
    if (p->mma == CLG_MMA_XMX)
        memcpy(p->mma_block, (int[6]){4, 4, p->mma_lanes == 8 ? 2 : 4, 2, 32, 2}, sizeof p->mma_block);
    else
        memcpy(p->mma_block, (int[6]){2, 4, 4, 4, 32, 2}, sizeof p->mma_block);
    p->mma_opt = !slow_to_optimize_emulated_mma(dev);
    p->host_bf16 = clg__host_cpu_bf16() && clg__native_supported(dev);
}

const char *clg__mma_kind_name(clg_mma_kind k)
{
    static const char *names[CLG_MMA_KINDS] = {"none", "ptx", "emulate", "xmx", "emulate-xmx"};
    return (unsigned)k < CLG_MMA_KINDS ? names[k] : "?";
}

bool clg__host_cpu_bf16(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 11 || defined(__clang__))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
}

/* "WMxWNxFMxFNxTKxS": warps 1..8 each way, fragments 1..8 each way (along n even), k
 * tile 16..128 in steps of 16, 2..4 stages. Whether a block fits a device (group size, local memory, whole shares of
 * the tile loads) is src/gemm/mma.c's to judge. */
static clg_status parse_block(clg_device *dev, const char *key, const char *v, const char *origin, int out[6])
{
    int b[6], used = 0;
    if (sscanf(v, "%dx%dx%dx%dx%dx%d%n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &used) != 6 || v[used] ||
        b[0] < 1 || b[0] > 8 || b[1] < 1 || b[1] > 8 || b[2] < 1 || b[2] > 8 || b[3] < 2 || b[3] > 8 || b[3] % 2 ||
        b[4] < 16 || b[4] > 128 || b[4] % 16 || b[5] < 2 || b[5] > 4)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "device parameters (%s): %s = \"%s\": want WMxWNxFMxFNxTKxS "
                         "(warps 1..8, fragments 1..8 and along n even, k tile 16..128 in steps of 16, 2..4 stages), "
                         "e.g. 2x4x4x4x32x2", origin, key, v);
    memcpy(out, b, sizeof b);
    return CLG_OK;
}

/* ---- overrides ------------------------------------------------------------------------ */

/* One of two words (yes: true, no: false; "on"/"off" also take 1/0). */
static clg_status parse_choice(clg_device *dev, const char *key, const char *v, const char *origin, const char *yes,
                               const char *no, bool *out)
{
    bool onoff = !strcmp(yes, "on");
    if (!strcmp(v, yes) || (onoff && !strcmp(v, "1"))) *out = true;
    else if (!strcmp(v, no) || (onoff && !strcmp(v, "0"))) *out = false;
    else return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "device parameters (%s): %s = \"%s\": want %s or %s", origin,
                          key, v, yes, no);
    return CLG_OK;
}

static clg_status parse_size(clg_device *dev, const char *key, const char *v, const char *origin, size_t lo,
                             size_t hi, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "device parameters (%s): %s = \"%s\": want an integer in %zu..%zu",
                         origin, key, v, lo, hi);
    *out = (size_t)x;
    return CLG_OK;
}

clg_status clg__params_set(clg_device *dev, const char *key, const char *value, const char *origin)
{
    clg_device_params *p = &dev->params;
    if (!strcmp(key, "gemm")) {
        /* The GEMM engines the tuner knows (src/gemm/engines.c; the device layer sits
         * below it, so the names are spelled here too: test_gemm checks that they agree). */
        static const char *engines[] = {"tune", "packed", "tiled", "clblast", "host"};
        for (size_t i = 0; i < sizeof engines / sizeof *engines; i++)
            if (!strcmp(value, engines[i])) {
                snprintf(p->gemm, sizeof p->gemm, "%s", value);
                return CLG_OK;
            }
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "device parameters (%s): gemm = \"%s\": want tune, packed, tiled, clblast or host", origin, value);
    }
    if (!strcmp(key, "binary_cache")) return parse_choice(dev, key, value, origin, "on", "off", &p->binary_cache);
    if (!strcmp(key, "gemm_dot")) return parse_choice(dev, key, value, origin, "on", "off", &p->gemm_dot);
    if (!strcmp(key, "gemm_rows")) return parse_choice(dev, key, value, origin, "8", "6", &p->gemm_rows8);
    if (!strcmp(key, "gemm_small")) return parse_size(dev, key, value, origin, 0, SIZE_MAX, &p->gemm_small);
    if (!strcmp(key, "gemm_tiles")) return parse_choice(dev, key, value, origin, "on", "off", &p->gemm_tiles);
    if (!strcmp(key, "col2im")) return parse_choice(dev, key, value, origin, "planes", "gather", &p->col2im_planes);
    if (!strcmp(key, "conv_columns"))
        return parse_choice(dev, key, value, origin, "keep", "rebuild", &p->conv_keep_columns);
    /* Group sizes are capped by the device: a larger value would only fail at launch. */
    size_t cap = min_size(p->max_group, p->max_item[0]);
    if (!strcmp(key, "group_1d")) return parse_size(dev, key, value, origin, 1, cap, &p->group_1d);
    if (!strcmp(key, "group_1d_min")) return parse_size(dev, key, value, origin, 1, cap, &p->group_1d_min);
    if (!strcmp(key, "rows_min")) return parse_size(dev, key, value, origin, 1, (size_t)1 << 30, &p->rows_min);
    if (!strcmp(key, "group_tail")) return parse_size(dev, key, value, origin, 0, cap, &p->group_tail);
    if (!strcmp(key, "group_reduce")) return parse_size(dev, key, value, origin, 1, p->max_group, &p->group_reduce);
    if (!strcmp(key, "local_mem")) {   /* only lower: to see how kernels fare on a smaller device */
        size_t v = 0;   /* set by parse_size on success; GCC 12 -O3 cannot see that */
        clg_status st = parse_size(dev, key, value, origin, 0, (size_t)p->local_mem, &v);
        if (!st) p->local_mem = v;
        return st;
    }
    if (!strcmp(key, "attention")) return parse_choice(dev, key, value, origin, "rows", "tiles", &p->attention_rows);
    if (!strcmp(key, "row_reduce")) return parse_choice(dev, key, value, origin, "items", "groups", &p->row_items);
    if (!strcmp(key, "scatter")) return parse_choice(dev, key, value, origin, "lines", "sorted", &p->scatter_lines);
    if (!strcmp(key, "const_strides")) return parse_choice(dev, key, value, origin, "on", "off", &p->const_strides);
    if (!strcmp(key, "transpose_tiles")) return parse_choice(dev, key, value, origin, "on", "off", &p->transpose_tiles);
    if (!strcmp(key, "flat16")) return parse_choice(dev, key, value, origin, "on", "off", &p->flat16);
    if (!strcmp(key, "exact_div")) return parse_choice(dev, key, value, origin, "on", "off", &p->exact_div);
    if (!strcmp(key, "fma")) return parse_choice(dev, key, value, origin, "on", "off", &p->fma);
    if (!strcmp(key, "mma")) {
        for (int i = 0; i < CLG_MMA_KINDS; i++)
            if (!strcmp(value, clg__mma_kind_name((clg_mma_kind)i))) {
                p->mma = (clg_mma_kind)i;
                return CLG_OK;
            }
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "device parameters (%s): mma = \"%s\": want none, ptx, emulate, xmx or emulate-xmx", origin, value);
    }
    if (!strcmp(key, "mma_lanes")) {
        if (strcmp(value, "8") && strcmp(value, "16"))
            return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "device parameters (%s): mma_lanes = \"%s\": want 8 or 16",
                             origin, value);
        p->mma_lanes = atoi(value);
        return CLG_OK;
    }
    if (!strcmp(key, "mma_block")) return parse_block(dev, key, value, origin, p->mma_block);
    if (!strcmp(key, "mma_opt")) return parse_choice(dev, key, value, origin, "on", "off", &p->mma_opt);
    if (!strcmp(key, "host_bf16")) {
        bool on = false;
        clg_status st = parse_choice(dev, key, value, origin, "on", "off", &on);
        if (!st && on && !(clg__host_cpu_bf16() && clg__native_supported(dev)))
            return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "device parameters (%s): host_bf16 = on: %s", origin,
                             clg__host_cpu_bf16() ? "the device runs no host functions (native kernels)"
                                                  : "the host CPU has no AVX512-BF16 (with AVX512-BW and -VL)");
        if (!st) p->host_bf16 = on;
        return st;
    }
    if (!strcmp(key, "build_threads"))
        return parse_size(dev, key, value, origin, 1, CLG_BUILD_THREADS_MAX, &p->build_threads);
    if (!strcmp(key, "item_loops")) return parse_size(dev, key, value, origin, 64, 65535, &p->item_loops);
    if (!strcmp(key, "conv_shift")) return parse_choice(dev, key, value, origin, "on", "off", &p->conv_shift);
    if (!strcmp(key, "conv_chunk")) return parse_size(dev, key, value, origin, 0, (size_t)1 << 40, &p->conv_chunk);
    if (!strcmp(key, "pool_keep")) return parse_size(dev, key, value, origin, 0, (size_t)1 << 50, &p->pool_keep);
    if (!strcmp(key, "max_group")) {   /* likewise: emulate a device with smaller groups */
        clg_status st = parse_size(dev, key, value, origin, 1, p->max_group, &p->max_group);
        if (st) return st;
        p->group_1d = min_size(p->group_1d, p->max_group);
        p->group_1d_min = min_size(p->group_1d_min, p->group_1d);
        p->group_reduce = min_size(p->group_reduce, p->max_group);
        p->group_tail = min_size(p->group_tail, p->group_1d);
        return CLG_OK;
    }
    return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                     "device parameters (%s): unknown key \"%s\" (known: gemm, gemm_tiles, group_1d, group_1d_min, group_tail, group_reduce, rows_min, "
                     "local_mem, max_group, binary_cache, build_threads, col2im, gemm_dot, gemm_rows, gemm_small, conv_columns, conv_chunk, conv_shift, item_loops, pool_keep, attention, "
                     "row_reduce, scatter, const_strides, transpose_tiles, flat16, exact_div, fma, mma, mma_block, mma_lanes, mma_opt, host_bf16)", origin, key);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && strchr(" \t\r\n", s[n - 1])) s[--n] = 0;
    return s;
}

/* "key=value" (or "key = value") from one item of a list or one line of a file. */
static clg_status apply_item(clg_device *dev, char *item, const char *origin)
{
    item = trim(item);
    if (!*item || *item == '#') return CLG_OK;
    char *eq = strchr(item, '=');
    if (!eq)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "device parameters (%s): \"%s\": want key=value", origin, item);
    *eq = 0;
    return clg__params_set(dev, trim(item), trim(eq + 1), origin);
}

/* CLG_PARAMS_FILE: key = value lines (# comments). A folder, a FIFO, a device or a file
 * over 1 MiB is refused, as is a NUL byte or a line over 510 bytes: each says so. */
static clg_status apply_file(clg_device *dev, const char *path)
{
    unsigned char *text;
    size_t len;
    char why[256], origin[1100];
    if (clg__file_read(path, 1 << 20, &text, &len, why, sizeof why) != CLG_OK)
        return clg__fail(dev, CLG_ERR_IO, "device parameters: CLG_PARAMS_FILE %s: %s", path, why);
    if (memchr(text, '\0', len)) {
        size_t at = (size_t)((unsigned char *)memchr(text, '\0', len) - text);
        free(text);
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "device parameters: CLG_PARAMS_FILE %s: a NUL byte at offset %zu "
                         "(not a text file)", path, at);
    }
    clg_status st = CLG_OK;
    int ln = 1;
    for (char *line = (char *)text; !st && line && *line; ln++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        snprintf(origin, sizeof origin, "%s:%d", path, ln);
        if (strlen(line) > 510) st = clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "device parameters (%s): a line over 510 "
                                               "bytes", origin);
        else st = apply_item(dev, line, origin);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return st;
}

clg_status clg__params_init(clg_device *dev)
{
    defaults(dev);
    const char *file = getenv("CLG_PARAMS_FILE");
    clg_status st = file && *file ? apply_file(dev, file) : CLG_OK;
    const char *env = getenv("CLG_PARAMS");
    if (st || !env || !*env) return st;
    char *copy = strdup(env), *save = NULL;
    if (!copy) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "device parameters: out of host memory");
    for (char *it = strtok_r(copy, ",", &save); it && !st; it = strtok_r(NULL, ",", &save))
        st = apply_item(dev, it, "CLG_PARAMS");
    free(copy);
    return st;
}

void clg__params_format(const clg_device_params *p, char *buf, size_t len)
{
    snprintf(buf, len,
             "gemm = %s\ngemm_tiles = %s\ngroup_1d = %zu\ngroup_1d_min = %zu\ngroup_tail = %zu\ngroup_reduce = %zu\nrows_min = %zu\nvector_float = %d\n"
             "max_group = %zu\nmax_item = %zu %zu %zu\nlocal_mem = %llu%s\nbinary_cache = %s\nbuild_threads = %zu\ncol2im = %s\ngemm_dot = %s\ngemm_rows = %s\ngemm_small = %zu\nconv_columns = %s\nconv_chunk = %zu\nconv_shift = %s\nitem_loops = %zu\npool_keep = %zu\nattention = %s\n"
             "row_reduce = %s\nscatter = %s\nconst_strides = %s\ntranspose_tiles = %s\nflat16 = %s\nexact_div = %s\nfma = %s\nmma = %s\nmma_block = %dx%dx%dx%dx%dx%d\nmma_lanes = %d\nmma_opt = %s\nhost_bf16 = %s\n",
             p->gemm, p->gemm_tiles ? "on" : "off", p->group_1d, p->group_1d_min, p->group_tail, p->group_reduce, p->rows_min, p->vector_float, p->max_group, p->max_item[0],
             p->max_item[1], p->max_item[2], (unsigned long long)p->local_mem,
             p->local_is_global ? " (emulated in global memory)" : "", p->binary_cache ? "on" : "off", p->build_threads,
             p->col2im_planes ? "planes" : "gather", p->gemm_dot ? "on" : "off", p->gemm_rows8 ? "8" : "6", p->gemm_small,
             p->conv_keep_columns ? "keep" : "rebuild", p->conv_chunk, p->conv_shift ? "on" : "off", p->item_loops, p->pool_keep, p->attention_rows ? "rows" : "tiles",
             p->row_items ? "items" : "groups", p->scatter_lines ? "lines" : "sorted", p->const_strides ? "on" : "off", p->transpose_tiles ? "on" : "off", p->flat16 ? "on" : "off",
             p->exact_div ? "on" : "off", p->fma ? "on" : "off", clg__mma_kind_name(p->mma),
             p->mma_block[0], p->mma_block[1], p->mma_block[2], p->mma_block[3], p->mma_block[4],
             p->mma_block[5], p->mma_lanes, p->mma_opt ? "on" : "off", p->host_bf16 ? "on" : "off");
}

clg_status clg_device_set_param(clg_device *dev, const char *key, const char *value)
{
    if (!clg__device_is_open(dev) || !key || !value) return CLG_ERR_INVALID_ARGUMENT;
    return clg__params_set(dev, key, value, "clg_device_set_param");
}

clg_status clg_device_params_print(const clg_device *dev, FILE *out)
{
    if (!clg__device_is_open(dev) || !out) return CLG_ERR_INVALID_ARGUMENT;
    char buf[1024];
    clg__params_format(&dev->params, buf, sizeof buf);
    fputs(buf, out);
    return CLG_OK;
}
