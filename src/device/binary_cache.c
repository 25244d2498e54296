/* binary_cache.c: compiled programs on disk, so that the second run of a program does
 * not pay for the OpenCL compiler again.
 *
 * Directory: $CLG_CACHE_DIR ("off" disables), else $XDG_CACHE_HOME/clgrad, else
 * ~/.cache/clgrad. One file per program binary, named by a hash of its key (the
 * "meta" text: platform, device, driver, build options and a hash of the source).
 * File layout, little-endian:
 *   "CLGBIN1\n" | u32 meta_len | meta | u64 bin_len | u32 crc32(bin) | bin
 * The meta is stored whole and compared on load, so a hash collision or a stale file
 * cannot hand out the wrong binary; a short, corrupt or mismatched file is ignored and
 * the program rebuilt. Writes go to a temporary file renamed into place, so readers
 * never see half a file. A directory that cannot be written disables the cache with
 * one warning; it never fails a build. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "device_impl.h"
#include "file_read.h"

#define MAGIC "CLGBIN1\n"
#define MAX_FILE (512u << 20)

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void clg__hash_hex(const void *data, size_t len, char out[33])
{
    const unsigned char *p = data;
    uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL ^ len;
    for (size_t i = 0; i < len; i++) {
        a = (a ^ p[i]) * 0x100000001b3ULL;
        b = (b ^ p[i]) * 0x9e3779b97f4a7c15ULL + (b >> 29);
    }
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)mix64(a ^ len),
             (unsigned long long)mix64(b + a));
}

static int mkdir_p(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    struct stat st;
    return stat(tmp, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

static void disable(clg_device *dev, const char *why)
{
    clg__log(dev, 1, "program cache disabled: %s %s (%s); kernels will be compiled on every run",
             why, dev->disk.dir, strerror(errno));
    dev->disk.enabled = false;
}

void clg__disk_cache_init(clg_device *dev)
{
    if (dev->disk.tried) return;
    dev->disk.tried = true;
    const char *env = getenv("CLG_CACHE_DIR");
    dev->disk.enabled = false;
    if (env && (!strcmp(env, "off") || !strcmp(env, "0") || !strcmp(env, "none"))) return;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && *env) snprintf(dev->disk.dir, sizeof dev->disk.dir, "%s", env);
    else if (xdg && *xdg) snprintf(dev->disk.dir, sizeof dev->disk.dir, "%s/clgrad", xdg);
    else if (home && *home) snprintf(dev->disk.dir, sizeof dev->disk.dir, "%s/.cache/clgrad", home);
    else return;
    if (mkdir_p(dev->disk.dir) != 0 || access(dev->disk.dir, W_OK | X_OK) != 0) {
        disable(dev, "cannot create or write");
        return;
    }
    dev->disk.enabled = true;
}

static void entry_path(clg_device *dev, const char *meta, char *path, size_t n)
{
    char h[33];
    clg__hash_hex(meta, strlen(meta), h);
    snprintf(path, n, "%s/%s.bin", dev->disk.dir, h);
}

static uint32_t get_u32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get_u64(const unsigned char *p) { return get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

/* Checks a whole file image; returns the offset of the binary or 0 when invalid. */
static size_t validate(const unsigned char *buf, size_t n, const char *meta, size_t *binlen)
{
    size_t ml = strlen(meta);
    if (n < 8 + 4 || memcmp(buf, MAGIC, 8) != 0) return 0;
    if (get_u32(buf + 8) != ml || n < 12 + ml + 12) return 0;
    if (memcmp(buf + 12, meta, ml) != 0) return 0;
    size_t off = 12 + ml;
    uint64_t bl = get_u64(buf + off);
    uint32_t crc = get_u32(buf + off + 8);
    off += 12;
    if (bl == 0 || bl != n - off) return 0;
    if (crc32(0L, buf + off, (uInt)bl) != crc) return 0;
    *binlen = (size_t)bl;
    return off;
}

unsigned char *clg__disk_cache_load(clg_device *dev, const char *meta, size_t *len)
{
    char path[1200];
    entry_path(dev, meta, path, sizeof path);
    if (access(path, F_OK) != 0) return NULL;   /* a miss */
    /* Anything but a valid regular file of at most MAX_FILE bytes (a FIFO, a folder, a
     * device, a truncated or foreign entry) is a miss too, counted as a reject. */
    unsigned char *buf = NULL, *bin = NULL;
    size_t n = 0;
    if (clg__file_read(path, MAX_FILE, &buf, &n, NULL, 0) == CLG_OK && n > 0) {
        size_t bl = 0, off = validate(buf, n, meta, &bl);
        if (off && (bin = malloc(bl))) {
            memcpy(bin, buf + off, bl);
            *len = bl;
        }
    }
    free(buf);
    if (!bin) dev->prog_stats.cache_rejects++;
    return bin;
}

static void put_u32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> 8 * i); }
static void put_u64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> 8 * i); }

void clg__disk_cache_store(clg_device *dev, const char *meta, const unsigned char *bin, size_t len)
{
    char path[1200], tmp[1300];
    entry_path(dev, meta, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%llu", path, (long)getpid(),
             (unsigned long long)dev->prog_stats.cache_writes);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        disable(dev, "cannot write into");
        return;
    }
    size_t ml = strlen(meta);
    unsigned char head[12], mid[12];
    memcpy(head, MAGIC, 8);
    put_u32(head + 8, (uint32_t)ml);
    put_u64(mid, len);
    put_u32(mid + 8, (uint32_t)crc32(0L, bin, (uInt)len));
    bool ok = fwrite(head, 1, 12, f) == 12 && fwrite(meta, 1, ml, f) == ml &&
              fwrite(mid, 1, 12, f) == 12 && fwrite(bin, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        disable(dev, "failed writing into");
        return;
    }
    dev->prog_stats.cache_writes++;
}
