/* discover.c: list OpenCL platforms and devices, and resolve device specs.
 * Needs no context: `clgrad devices` and spec resolution run before anything opens. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "device_cl.h"
#include "last_error.h"

#define MAX_PLATFORMS 16
#define MAX_DEVICES_PER_PLATFORM 64

/* No device exists yet: the message goes to the caller's buffer (if any) and the
 * thread's last error (clg_last_error), as every failure without a device. */
static clg_status errf(clg_status status, char *err, size_t errlen, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return clg__last_error_set(status, "%s", msg);
}

static void get_str(cl_device_id d, cl_device_info what, char *out)
{
    out[0] = 0;
    if (clGetDeviceInfo(d, what, CLG_NAME_MAX, out, NULL) != CL_SUCCESS) out[0] = 0;
    out[CLG_NAME_MAX - 1] = 0;
    /* Drivers pad names with spaces (NVIDIA, Intel); trim both ends. */
    size_t n = strlen(out);
    while (n && isspace((unsigned char)out[n - 1])) out[--n] = 0;
    size_t lead = strspn(out, " \t");
    if (lead) memmove(out, out + lead, n - lead + 1);
}

static uint64_t get_u64(cl_device_id d, cl_device_info what)
{
    cl_ulong v = 0;
    return clGetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? (uint64_t)v : 0;
}

static uint32_t get_u32(cl_device_id d, cl_device_info what)
{
    cl_uint v = 0;
    return clGetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? (uint32_t)v : 0;
}

bool clg__has_extension(cl_device_id d, const char *ext)
{
    size_t n = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || !n) return false;
    char *s = malloc(n + 1);
    if (!s) return false;
    bool found = false;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, n, s, NULL) == CL_SUCCESS) {
        s[n] = 0;
        size_t el = strlen(ext);
        for (char *p = strstr(s, ext); p && !found; p = strstr(p + 1, ext))
            found = (p == s || p[-1] == ' ') && (p[el] == 0 || p[el] == ' ');
    }
    free(s);
    return found;
}

/* NVIDIA's compute capability (cl_nv_device_attribute_query) is 8.0 or more: mma.sync
 * m16n8k16 with float16 and bfloat16 inputs exists (PTX ISA 7.0, sm_80). */
static bool nvidia_sm80(cl_device_id d)
{
    if (!clg__has_extension(d, "cl_nv_device_attribute_query")) return false;
    cl_uint major = 0;   /* CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV */
    return clGetDeviceInfo(d, 0x4000, sizeof major, &major, NULL) == CL_SUCCESS && major >= 8;
}

/* Intel's sub-group matrix instruction (dpas) exists, on sub-groups as wide as the
 * device's smallest (the extension's functions are declared for that width alone): 8 or
 * 16; 0 without the extension or cl_intel_required_subgroup_size to ask for the width. */
static int intel_xmx_lanes(cl_device_id d)
{
    if (!clg__has_extension(d, "cl_intel_subgroup_matrix_multiply_accumulate") ||
        !clg__has_extension(d, "cl_intel_required_subgroup_size"))
        return 0;
    size_t sizes[16], n = 0;   /* CL_DEVICE_SUB_GROUP_SIZES_INTEL */
    if (clGetDeviceInfo(d, 0x4108, sizeof sizes, sizes, &n) != CL_SUCCESS) return 0;
    size_t least = 0;
    for (size_t i = 0; i < n / sizeof *sizes && i < 16; i++)
        if (sizes[i] && (!least || sizes[i] < least)) least = sizes[i];
    return least == 8 || least == 16 ? (int)least : 0;
}

clg_device_props clg__device_props(const clg_device *dev)
{
    cl_device_id d = dev->cl->id;
    clg_device_props p = {.vector_float = 1, .max_item = {1, 1, 1}};
    cl_uint vw = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof vw, &vw, NULL) == CL_SUCCESS && vw)
        p.vector_float = (int)vw;
    size_t items[3];
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL) == CL_SUCCESS)
        memcpy(p.max_item, items, sizeof items);
    cl_device_local_mem_type lt = CL_LOCAL;
    p.local_is_global = clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_TYPE, sizeof lt, &lt, NULL) == CL_SUCCESS &&
                        lt == CL_GLOBAL;
    cl_device_fp_config fp = 0;
    p.exact_div = clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS &&
                  (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT);
    p.hw_fma = (fp & CL_FP_FMA) != 0;
    p.nvidia_sm80 = nvidia_sm80(d);
    p.intel_xmx_lanes = intel_xmx_lanes(d);
    return p;
}

static void fill_info(clg_device_info *in, cl_platform_id p, cl_device_id d)
{
    memset(in, 0, sizeof *in);
    if (clGetPlatformInfo(p, CL_PLATFORM_NAME, CLG_NAME_MAX, in->platform, NULL) != CL_SUCCESS)
        in->platform[0] = 0;
    in->platform[CLG_NAME_MAX - 1] = 0;
    get_str(d, CL_DEVICE_NAME, in->name);
    get_str(d, CL_DEVICE_VENDOR, in->vendor);
    get_str(d, CL_DEVICE_OPENCL_C_VERSION, in->c_version);
    get_str(d, CL_DRIVER_VERSION, in->driver);
    cl_device_type t = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL) != CL_SUCCESS) t = 0;
    in->type = (t & CL_DEVICE_TYPE_GPU) ? CLG_DEVICE_GPU
             : (t & CL_DEVICE_TYPE_CPU) ? CLG_DEVICE_CPU
             : (t & CL_DEVICE_TYPE_ACCELERATOR) ? CLG_DEVICE_ACCELERATOR : CLG_DEVICE_OTHER;
    in->compute_units = get_u32(d, CL_DEVICE_MAX_COMPUTE_UNITS);
    in->global_mem = get_u64(d, CL_DEVICE_GLOBAL_MEM_SIZE);
    in->max_alloc = get_u64(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    in->local_mem = get_u64(d, CL_DEVICE_LOCAL_MEM_SIZE);
    size_t wg = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) != CL_SUCCESS) wg = 1;
    in->max_work_group = wg;
    in->base_align = get_u32(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8; /* reported in bits */
    in->fp64 = clg__has_extension(d, "cl_khr_fp64") || get_u64(d, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
    in->fp16 = clg__has_extension(d, "cl_khr_fp16");
}

/* Enumerate everything; the handles too when asked (clg_device_open needs them). */
clg_status clg__device_enumerate(clg_device_info *infos, cl_platform_id *plats, cl_device_id *ids,
                                 int cap, int *count, char *err, size_t errlen)
{
    *count = 0;
    cl_platform_id ps[MAX_PLATFORMS];
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(MAX_PLATFORMS, ps, &np);
    if (e == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (e == CL_SUCCESS && np == 0)) {
        return errf(CLG_ERR_NO_DEVICE, err, errlen,
                    "no OpenCL platform found (is an ICD such as pocl-opencl-icd installed?)");
    }
    if (e != CL_SUCCESS) {
        return errf(CLG_ERR_OPENCL, err, errlen, "clGetPlatformIDs: %s (%d)", clg_cl_error_name(e), e);
    }
    int n = 0;
    for (cl_uint pi = 0; pi < np && pi < MAX_PLATFORMS; pi++) {
        cl_device_id ds[MAX_DEVICES_PER_PLATFORM];
        cl_uint nd = 0;
        e = clGetDeviceIDs(ps[pi], CL_DEVICE_TYPE_ALL, MAX_DEVICES_PER_PLATFORM, ds, &nd);
        if (e == CL_DEVICE_NOT_FOUND) continue;
        if (e != CL_SUCCESS) continue; /* a broken platform must not hide the others */
        for (cl_uint di = 0; di < nd && di < MAX_DEVICES_PER_PLATFORM; di++, n++) {
            if (n >= cap) continue;
            if (infos) {
                fill_info(&infos[n], ps[pi], ds[di]);
                infos[n].index = n;
                infos[n].platform_index = (int)pi;
                infos[n].device_index = (int)di;
            }
            if (plats) plats[n] = ps[pi];
            if (ids) ids[n] = ds[di];
        }
    }
    *count = n;
    if (n == 0) {
        return errf(CLG_ERR_NO_DEVICE, err, errlen, "OpenCL platforms found, but no devices on them");
    }
    return CLG_OK;
}

clg_status clg_device_list(clg_device_info *infos, int cap, int *count, char *err, size_t errlen)
{
    if (!count || cap < 0 || (cap > 0 && !infos)) {
        return errf(CLG_ERR_INVALID_ARGUMENT, err, errlen, "clg_device_list: invalid arguments");
    }
    return clg__device_enumerate(infos, NULL, NULL, cap, count, err, errlen);
}

int clg_device_default(const clg_device_info *infos, int n)
{
    for (int i = 0; i < n; i++)
        if (infos[i].type == CLG_DEVICE_GPU) return i;
    for (int i = 0; i < n; i++)
        if (infos[i].type == CLG_DEVICE_CPU) return i;
    return n > 0 ? 0 : -1;
}

static bool contains_nocase(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < nl && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == nl) return true;
    }
    return false;
}

static bool parse_int(const char *s, int *out)
{
    if (!*s) return false;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 0 || v > 1 << 20 || !isdigit((unsigned char)*s)) return false;
    *out = (int)v;
    return true;
}

static const char *type_name(clg_device_type t)
{
    return t == CLG_DEVICE_GPU ? "GPU" : t == CLG_DEVICE_CPU ? "CPU"
         : t == CLG_DEVICE_ACCELERATOR ? "accelerator" : "other";
}

static void list_devices(const clg_device_info *infos, int n, char *err, size_t errlen)
{
    size_t used = strlen(err);
    for (int i = 0; i < n && used + 1 < errlen; i++) {
        int w = snprintf(err + used, errlen - used, "\n  %d (%d:%d) %s: %s [%s]", i,
                         infos[i].platform_index, infos[i].device_index,
                         type_name(infos[i].type), infos[i].name, infos[i].platform);
        if (w < 0) break;
        used += (size_t)w;
        if (used >= errlen) used = errlen - 1;
    }
}

static int find_type(const clg_device_info *infos, int n, clg_device_type t)
{
    for (int i = 0; i < n; i++)
        if (infos[i].type == t) return i;
    return -1;
}

static int find_name(const clg_device_info *infos, int n, const char *frag)
{
    /* GPUs first: "amd" should pick a Radeon before a CPU whose name says AMD EPYC. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            if ((infos[i].type == CLG_DEVICE_GPU) != (pass == 0)) continue;
            /* POCL says "PoCL" only in its version strings; its vendor is the CPU's. */
            if (contains_nocase(infos[i].name, frag) || contains_nocase(infos[i].vendor, frag) ||
                contains_nocase(infos[i].platform, frag) || contains_nocase(infos[i].c_version, frag))
                return i;
        }
    return -1;
}

clg_status clg_device_find(const char *spec, const clg_device_info *infos, int n, int *index,
                           char *err, size_t errlen)
{
    if (!index || (n > 0 && !infos) || n < 0) {
        return errf(CLG_ERR_INVALID_ARGUMENT, err, errlen, "clg_device_find: invalid arguments");
    }
    *index = -1;
    char s[CLG_NAME_MAX];
    snprintf(s, sizeof s, "%s", spec ? spec : "");
    /* trim spaces */
    char *b = s;
    while (isspace((unsigned char)*b)) b++;
    size_t len = strlen(b);
    while (len && isspace((unsigned char)b[len - 1])) b[--len] = 0;

    int i = -1, p, d;
    char *colon = strchr(b, ':');
    if (!*b || !strcmp(b, "default")) {
        i = clg_device_default(infos, n);
    } else if (!strcasecmp(b, "gpu")) {
        i = find_type(infos, n, CLG_DEVICE_GPU);
    } else if (!strcasecmp(b, "cpu")) {
        i = find_type(infos, n, CLG_DEVICE_CPU);
    } else if (parse_int(b, &d)) {
        i = d < n ? d : -1;
    } else if (colon) {
        *colon = 0;
        if (parse_int(b, &p) && parse_int(colon + 1, &d)) {
            for (int k = 0; k < n; k++)
                if (infos[k].platform_index == p && infos[k].device_index == d) i = k;
        } else {
            *colon = ':';
            i = find_name(infos, n, b);
        }
        if (*colon == 0) *colon = ':';
    } else {
        i = find_name(infos, n, b);
    }
    if (i < 0) {
        errf(CLG_ERR_NO_DEVICE, err, errlen, "no OpenCL device matches \"%s\"; devices are:", spec ? spec : "");
        if (err && errlen) list_devices(infos, n, err, errlen);
        return CLG_ERR_NO_DEVICE;
    }
    *index = i;
    return CLG_OK;
}
