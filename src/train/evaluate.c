/* evaluate.c: a classifier over a test set, as every trainer's epoch ends. */
#include <stdlib.h>
#include <string.h>

#include "clgrad/train.h"
#include "tensor_impl.h"

/* Count (true, predicted) pairs of one batch. */
static clg_status confusion_add(clg_tensor *logits, clg_tensor *y, int64_t *confusion, int c)
{
    int64_t b = clg_tensor_dim(logits, 0);
    int32_t *buf = malloc((size_t)(2 * b + 1) * sizeof *buf);
    if (!buf) return clg__fail(logits->dev, CLG_ERR_OUT_OF_MEMORY, "clg_evaluate: out of host memory");
    clg_tensor *pred = clg_argmax(logits, 1, false);
    clg_status st = pred ? clg_tensor_to_host(pred, buf, (size_t)b * sizeof *buf) : logits->dev->status;
    if (st == CLG_OK) st = clg_tensor_to_host(y, buf + b, (size_t)b * sizeof *buf);
    for (int64_t i = 0; st == CLG_OK && i < b; i++)
        if (buf[b + i] >= 0 && buf[b + i] < c && buf[i] >= 0 && buf[i] < c) confusion[buf[b + i] * c + buf[i]]++;
    free(buf);
    return st;
}

clg_status clg_evaluate(clg_module *model, clg_loader *loader, double *loss, double *accuracy, int64_t *confusion,
                        int num_classes)
{
    if (!model || !loader || (confusion && num_classes <= 0)) return CLG_ERR_INVALID_ARGUMENT;
    clg_device *dev = clg_module_device(model);
    if (confusion) memset(confusion, 0, (size_t)num_classes * (size_t)num_classes * sizeof *confusion);
    clg_meter *meter = clg_meter_new(dev);
    if (!meter) return dev->status;
    bool training = clg_module_is_training(model);
    clg_module_train(model, false);
    clg_no_grad_begin(dev);
    clg_status st = CLG_OK;
    for (;;) {
        clg_scope_begin(dev);
        clg_tensor *x = NULL, *y = NULL;
        st = clg_loader_next(loader, &x, &y);
        bool end = st != CLG_OK || !x;
        if (!end) {
            clg_tensor *logits = clg_module_forward(model, x);
            clg_tensor *l = clg_cross_entropy(logits, y, CLG_REDUCE_MEAN);
            st = l ? clg_meter_add(meter, l, logits, y) : dev->status;
            if (st == CLG_OK && confusion) st = confusion_add(logits, y, confusion, num_classes);
        }
        clg_scope_end(dev);
        if (end || st != CLG_OK) break;
    }
    clg_no_grad_end(dev);
    clg_module_train(model, training);
    if (st == CLG_OK) st = clg_meter_read(meter, loss, accuracy);
    clg_meter_free(meter);
    return st;
}
