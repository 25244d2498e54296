/* tune.h: the tuner's candidates (candidates.c), its cache file (cache.c) and the
 * timing (tune.c), for the choice of engine (choice.c). */
#ifndef CLGRAD_GEMM_TUNE_H
#define CLGRAD_GEMM_TUNE_H

#include "gemm/engine.h"

/* One engine in one configuration (if it has any), named as the cache and the logs
 * write it: "packed", "tiled 64x64x16/4x4/v4/m0". */
typedef struct clg_gemm_candidate {
    const clg_gemm_engine *engine;
    bool has_config;
    clg_gemm_config config;
    int split;        /* > 1: products split over k in this many slices (splitk.c), named "... split N" */
    char name[96];
} clg_gemm_candidate;

/* Every engine's candidates on dev, in the table's order (the fast first, so that the
 * slow are dropped after one run). With `fitting`, only configurations that fit dev
 * (built to learn so); without, the whole list: what the cache key names, known without
 * building. */
int clg__gemm_candidates(clg_device *dev, int flags, bool fitting, clg_gemm_candidate *out, int cap);
/* A candidate from its name; false when no engine of the table has it. */
bool clg__gemm_candidate_parse(const char *name, clg_gemm_candidate *out);
/* c with its products split over k in `parts` slices (named "... split N"); false where
 * c is the fallback (no engine) or parts is out of range. */
bool clg__gemm_candidate_split(const clg_gemm_candidate *c, int parts, clg_gemm_candidate *out);

/* The cache file (ext "tune" for the device's choice, "class" for a shape class's): the text of everything a choice depends on (device, driver, the
 * engines' programs and libraries, the candidates), the file's path under the device's
 * cache directory ("" when there is none), reading and writing a choice, and a lock
 * for one tuning process at a time (-1 when none can be had; closing it releases it). */
void clg__gemm_cache_meta(clg_device *dev, int flags, const clg_gemm_candidate *cand, int ncand, char *meta,
                          size_t len);
void clg__gemm_cache_path(clg_device *dev, const char *meta, const char *ext, char *path, size_t len);
bool clg__gemm_cache_read(const char *path, const char *meta, clg_gemm_candidate *out, double *gflops);
bool clg__gemm_cache_write(const char *path, const char *meta, const clg_gemm_candidate *c, double gflops);
int clg__gemm_cache_lock(const char *path);

/* The tuner's choice on dev: read from the cache (unless CLG_GEMM_TUNE_FORCE), else timed
 * over the candidates and saved. *cached says which; *gflops the measured float32 rate.
 * Never fails: where nothing works, the table's last candidate (packed), with a warning. */
void clg__gemm_pick(clg_device *dev, int flags, clg_gemm_candidate *out, double *gflops, bool *cached);

/* Shape classes: products whose sizes fall in the same classes (up to 32, 128, 512, 2048,
 * beyond, for m, n and k) with the same transposes share a key ("t01 m1 n2 k2"). The
 * tuner times the candidates for g's class on g's shape (its largest sizes halved past a
 * budget) and caches the choice beside the device's, under the same key plus the class's:
 * the class's first product decides for every later one, in every process. `first` (the
 * device's choice) is timed first; where nothing works, *out is `first`. */
void clg__gemm_class_key(const clg_gemm_args *g, char *key, size_t len);
/* A class's cache text (the device's, plus the class's line) and file path ("" without a
 * cache directory), for the tuner and for tests that write one. */
void clg__gemm_class_meta(clg_device *dev, int flags, const char *key, char *meta, size_t len, char *path,
                          size_t plen);
void clg__gemm_pick_class(clg_device *dev, int flags, const clg_gemm_args *g, const clg_gemm_candidate *first,
                          clg_gemm_candidate *out, double *gflops, bool *cached);

#endif
