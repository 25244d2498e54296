/* multinomial.c: torch.multinomial, indices drawn from rows of non-negative weights,
 * with the device's Philox generator (common.cl; create.c's clg_rand). The kernels
 * (cl_kernels/multinomial.cl) keep every work-item's loops short, whatever the row's
 * length: a sum tree walked from the top with replacement, an exponential race sorted
 * by a bitonic network without. Value errors (a negative weight, an empty row, too few
 * nonzero weights) are found by the kernels and reported at the next read to the host
 * (the device's error word), as index errors are: checking them here would wait. */
#include <stdio.h>
#include <string.h>

#include "tensor_impl.h"

#define MN_FAN 256   /* entries a tree node sums (multinomial.cl) */
#define MN_LEVELS 4  /* tree levels for up to 2^31 categories: 256^4 = 2^32 */

/* What the kernels report, with the row as value and the sample count as bound. */
static const char *const what_bad = "weights row %d holds a negative, infinite or NaN weight";
static const char *const what_empty = "weights row %d sums to 0 (or overflows): no distribution to draw from";
static const char *const what_few = "weights row %d has fewer nonzero weights than the %d samples drawn without "
                                    "replacement";

/* A launch of k over inner x rows whose argument `at` draws `numbers` uniforms: the
 * launcher takes the generator's position for it and moves it on, and a graph replay
 * draws anew (CLG_ARG_RNG_DRAW). */
static clg_status launch_drawing(clg_device *dev, clg_kernel *k, clg_arg *a, int nargs, size_t inner, size_t rows,
                                 clg_dtype dt, int64_t numbers, int at)
{
    uint64_t per = dt == CLG_F64 ? 2 : 4, blocks = ((uint64_t)numbers + per - 1) / per;
    clg_rng_pos pos = {0, 0, -1};
    a[at] = CLG_ARG_RNG_DRAW(&pos, blocks);
    return clg__launch_rows(dev, k, a, nargs, inner, rows);
}

/* With replacement: the sum tree's levels above the weights (block_sums), then a walk
 * down it per sample (mn_draw). w [R, C] contiguous in T. */
static clg_status draw_replacement(clg_tensor *w, clg_tensor *y, int64_t R, int64_t C, int64_t S,
                                   const char *opts)
{
    clg_device *dev = w->dev;
    int code_bad, code_empty;
    clg_buffer *word = clg__kernel_error_word(dev, "multinomial", what_bad, &code_bad);
    if (!word || !clg__kernel_error_word(dev, "multinomial", what_empty, &code_empty)) return dev->status;
    clg_tensor *lev[MN_LEVELS] = {w};
    int64_t n[MN_LEVELS] = {C, 1, 1, 1};
    int nlev = 1;
    clg_status st = CLG_OK;
    /* level L + 1 sums blocks of level L until a level fits one scan */
    while (st == CLG_OK && n[nlev - 1] > MN_FAN) {
        n[nlev] = (n[nlev - 1] + MN_FAN - 1) / MN_FAN;
        lev[nlev] = clg__tensor_new(dev, w->dtype, 2, (int64_t[]){R, n[nlev]});
        clg_kernel *k = clg__kernel_get(dev, "multinomial", opts, "mn_block_sums");
        if (!lev[nlev] || !k) {
            st = dev->status;
            break;
        }
        clg_tensor *in = lev[nlev - 1];
        clg_arg a[] = {CLG_ARG_I(n[nlev - 1]), CLG_ARG_I(n[nlev]), CLG_ARG_B(in->buf), CLG_ARG_I(in->offset),
                       CLG_ARG_B(lev[nlev]->buf), CLG_ARG_I(nlev == 1), CLG_ARG_B(word),
                       CLG_ARG_I(code_bad)};
        st = clg__launch_rows(dev, k, a, 8, (size_t)n[nlev], (size_t)R);
        nlev++;
    }
    clg_kernel *k = st == CLG_OK ? clg__kernel_get(dev, "multinomial", opts, "mn_draw") : NULL;
    if (k) {
        clg_arg a[21] = {CLG_ARG_I(S), CLG_ARG_I(nlev), CLG_ARG_B(y->buf), CLG_ARG_B(w->buf),
                         CLG_ARG_I(w->offset), CLG_ARG_I(C)};
        for (int L = 1; L < MN_LEVELS; L++) {   /* unused levels: any buffer, never read */
            a[4 + 2 * L] = CLG_ARG_B((L < nlev ? lev[L] : w)->buf);
            a[5 + 2 * L] = CLG_ARG_I(n[L]);
        }
        a[13] = CLG_ARG_B(word), a[14] = CLG_ARG_I(code_bad), a[15] = CLG_ARG_I(code_empty);
        st = launch_drawing(dev, k, a, 16, (size_t)S, (size_t)R, w->dtype, R * S, 12);
    } else if (st == CLG_OK) {
        st = dev->status;
    }
    for (int L = 1; L < nlev; L++) clg_tensor_free(lev[L]);
    return st;
}

/* Without replacement: each row's race keys padded to a power of two P, sorted with
 * their indices (mn_bitonic: log2(P) (log2(P) + 1) / 2 launches), the first S taken. */
static clg_status draw_distinct(clg_tensor *w, clg_tensor *y, int64_t R, int64_t C, int64_t S,
                                const char *opts)
{
    clg_device *dev = w->dev;
    int64_t P = 1;
    while (P < C) P *= 2;
    if (R * P > INT32_MAX)
        return clg__fail(dev, CLG_ERR_UNSUPPORTED, "clg_multinomial: %s padded to %lld categories a row is over "
                         "2^31 - 1 keys", CLG_DESC(w), (long long)P);
    int code_bad, code_few;
    clg_buffer *word = clg__kernel_error_word(dev, "multinomial", what_bad, &code_bad);
    if (!word || !clg__kernel_error_word(dev, "multinomial", what_few, &code_few)) return dev->status;
    clg_tensor *keys = clg__tensor_new(dev, w->dtype, 2, (int64_t[]){R, P});
    clg_tensor *idx = clg__tensor_new(dev, CLG_I32, 2, (int64_t[]){R, P});
    clg_kernel *kk = clg__kernel_get(dev, "multinomial", opts, "mn_keys");
    clg_kernel *kb = clg__kernel_get(dev, "multinomial", opts, "mn_bitonic");
    clg_kernel *kt = clg__kernel_get(dev, "multinomial", opts, "mn_take");
    clg_status st = keys && idx && kk && kb && kt ? CLG_OK : dev->status;
    if (st == CLG_OK) {
        clg_arg a[9] = {CLG_ARG_I(C), CLG_ARG_I(P), CLG_ARG_B(w->buf), CLG_ARG_I(w->offset),
                        CLG_ARG_B(keys->buf), CLG_ARG_B(idx->buf)};
        a[7] = CLG_ARG_B(word), a[8] = CLG_ARG_I(code_bad);
        st = launch_drawing(dev, kk, a, 9, (size_t)P, (size_t)R, w->dtype, R * C, 6);
    }
    for (int64_t k = 2; st == CLG_OK && k <= P; k *= 2)
        for (int64_t j = k / 2; st == CLG_OK && j > 0; j /= 2) {
            clg_arg a[] = {CLG_ARG_I(P), CLG_ARG_I(k), CLG_ARG_I(j), CLG_ARG_B(keys->buf),
                           CLG_ARG_B(idx->buf)};
            st = clg__launch_rows(dev, kb, a, 5, (size_t)(P / 2), (size_t)R);
        }
    if (st == CLG_OK) {
        clg_arg a[] = {CLG_ARG_I(S), CLG_ARG_I(P), CLG_ARG_B(y->buf), CLG_ARG_B(keys->buf),
                       CLG_ARG_B(idx->buf), CLG_ARG_B(word), CLG_ARG_I(code_few)};
        st = clg__launch_rows(dev, kt, a, 7, (size_t)S, (size_t)R);
    }
    clg_tensor_free(keys);
    clg_tensor_free(idx);
    return st;
}

/* The shape checks PyTorch makes before drawing; false with the error recorded. */
static bool check_args(const clg_tensor *probs, int64_t num_samples, bool replacement)
{
    const char *op = "multinomial";
    if (probs->ndim != 1 && probs->ndim != 2) {
        clg__op_fail(probs->dev, CLG_ERR_SHAPE, op, "probs %s: want 1 or 2 axes (categories last)", CLG_DESC(probs));
        return false;
    }
    int64_t C = probs->shape[probs->ndim - 1], R = probs->ndim == 2 ? probs->shape[0] : 1;
    if (C == 0) {
        clg__op_fail(probs->dev, CLG_ERR_SHAPE, op, "probs %s has no categories", CLG_DESC(probs));
        return false;
    }
    if (num_samples <= 0) {
        clg__op_fail(probs->dev, CLG_ERR_INVALID_ARGUMENT, op, "cannot draw %lld samples from %s (want at least 1)",
                     (long long)num_samples, CLG_DESC(probs));
        return false;
    }
    if (!replacement && num_samples > C) {
        clg__op_fail(probs->dev, CLG_ERR_INVALID_ARGUMENT, op,
                     "cannot draw %lld samples without replacement from %lld categories (probs %s)",
                     (long long)num_samples, (long long)C, CLG_DESC(probs));
        return false;
    }
    return clg__check_floating(op, probs) && clg__check_numel(op, probs->dev, probs->numel) &&
           clg__check_numel(op, probs->dev, R * num_samples);
}

clg_tensor *clg_multinomial(clg_tensor *probs, int64_t num_samples, bool replacement)
{
    if (!probs) return NULL;
    if (!check_args(probs, num_samples, replacement)) return NULL;
    clg_device *dev = probs->dev;
    int64_t C = probs->shape[probs->ndim - 1], R = probs->ndim == 2 ? probs->shape[0] : 1;
    /* the kernels read rows of T (16-bit weights widened to float32) from an offset */
    clg_dtype ct = clg__compute_dtype(probs->dtype);
    clg_tensor *w = ct == probs->dtype && clg_tensor_is_contiguous(probs) ? probs : clg__copy_as(probs, ct);
    int64_t shape[2] = {R, num_samples};
    clg_tensor *y = w ? clg__tensor_new(dev, CLG_I32, probs->ndim, probs->ndim == 2 ? shape : shape + 1) : NULL;
    clg_status st = y ? CLG_OK : dev->status;
    if (st == CLG_OK && R > 0) {
        const char *opts = clg__dtype_options(ct);
        st = replacement ? draw_replacement(w, y, R, C, num_samples, opts)
                         : draw_distinct(w, y, R, C, num_samples, opts);
    }
    if (w != probs) clg_tensor_free(w);
    if (st != CLG_OK) {
        char err[CLG_ERROR_MAX];
        snprintf(err, sizeof err, "%s", dev->error);
        clg_tensor_free(y);
        return clg__op_fail(dev, st, "multinomial", "probs %s, %lld samples: %.7000s", CLG_DESC(probs),
                            (long long)num_samples, err);
    }
    return y;
}
