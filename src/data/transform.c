/* transform.c: per-sample transforms on the loader's threads: random crop with
 * padding and horizontal flip (on raw values, padding with zeros, as torchvision does
 * before ToTensor), then scale, then normalise. Random choices hash (seed, epoch,
 * sample index), so they do not depend on which thread runs them. */
#include <string.h>

#include "data_impl.h"

/* Pad each [H, W] plane by p zeros and crop H x W at (oy, ox) of the padded plane. */
static void crop(const clg__transform *t, float *x, float *scratch, int64_t oy, int64_t ox)
{
    int64_t h = t->shape[t->ndim - 2], w = t->shape[t->ndim - 1], p = t->crop_padding;
    int64_t planes = t->numel / (h * w);
    memcpy(scratch, x, (size_t)t->numel * sizeof *x);
    for (int64_t c = 0; c < planes; c++) {
        const float *src = scratch + c * h * w;
        float *dst = x + c * h * w;
        for (int64_t i = 0; i < h; i++) {
            int64_t si = i + oy - p;
            for (int64_t j = 0; j < w; j++) {
                int64_t sj = j + ox - p;
                dst[i * w + j] = si >= 0 && si < h && sj >= 0 && sj < w ? src[si * w + sj] : 0.0f;
            }
        }
    }
}

static void hflip(const clg__transform *t, float *x)
{
    int64_t w = t->shape[t->ndim - 1];
    for (int64_t r = 0; r < t->numel / w; r++)
        for (int64_t a = r * w, b = a + w - 1; a < b; a++, b--) {
            float v = x[a];
            x[a] = x[b];
            x[b] = v;
        }
}

void clg__transform_apply(const clg__transform *t, float *x, float *scratch, uint64_t seed, uint64_t epoch,
                          int64_t index)
{
    uint64_t r = clg__mix3(seed ^ 0x7a11f0e5u, epoch, (uint64_t)index);
    if (t->crop_padding > 0) {
        uint64_t span = 2 * (uint64_t)t->crop_padding + 1;
        crop(t, x, scratch, (int64_t)(r % span), (int64_t)((r >> 21) % span));
    }
    if (t->hflip && (r >> 63)) hflip(t, x);
    if (t->scale != 1.0f)
        for (int64_t k = 0; k < t->numel; k++) x[k] *= t->scale;
    if (t->norm_channels > 0) {
        int64_t per = t->numel / t->norm_channels;
        for (int c = 0; c < t->norm_channels; c++)
            for (int64_t k = c * per; k < (c + 1) * per; k++) x[k] = (x[k] - t->mean[c]) / t->std[c];
    }
}
