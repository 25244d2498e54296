/* meter.c: running loss and accuracy, summed on the device in one 2-element tensor
 * so that reading both is one 8-byte copy. */
#include <stdlib.h>

#include "clgrad/train.h"
#include "tensor_impl.h"

struct clg_meter {
    clg_device *dev;
    clg_tensor *sums;   /* [2]: sum of batch losses times batch sizes, correct predictions */
    int64_t samples;
};

clg_meter *clg_meter_new(clg_device *dev)
{
    if (!dev) return NULL;
    clg_meter *m = calloc(1, sizeof *m);
    if (!m) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_meter_new: out of host memory");
        return NULL;
    }
    m->dev = dev;
    m->sums = clg_zeros(dev, CLG_F32, CLG_SHAPE(2));
    if (!m->sums) {
        free(m);
        return NULL;
    }
    clg__tensor_unscope(m->sums);   /* the meter's, not the caller's scope's */
    return m;
}

void clg_meter_free(clg_meter *m)
{
    if (!m) return;
    clg__tensor_release(m->sums);
    free(m);
}

/* A graph replay counts the batch as the eager call did. */
typedef struct meter_ref { clg_meter *m; int64_t batch; } meter_ref;
static void count_batch(void *data)
{
    meter_ref *r = data;
    r->m->samples += r->batch;
}

clg_status clg_meter_add(clg_meter *m, clg_tensor *loss, clg_tensor *logits, clg_tensor *labels)
{
    if (!m || !loss || (logits && !labels)) return CLG_ERR_INVALID_ARGUMENT;
    int64_t batch = logits ? clg_tensor_dim(logits, 0) : 1;
    clg_no_grad_begin(m->dev);
    clg_tensor *l = clg_narrow(m->sums, 0, 0, 1), *c = clg_narrow(m->sums, 0, 1, 1);
    clg_status st = clg_axpy_(l, (double)batch, clg_cast(clg_reshape(loss, CLG_SHAPE(1)), CLG_F32));
    if (st == CLG_OK && logits) {
        clg_tensor *hit = clg_eq(clg_argmax(logits, 1, false), labels);
        st = clg_axpy_(c, 1.0, clg_sum(clg_cast(hit, CLG_F32), 0, NULL, true));
    }
    clg_no_grad_end(m->dev);
    clg_tensor_free(l);
    clg_tensor_free(c);
    if (st == CLG_OK) clg__host_step(m->dev, count_batch, &(meter_ref){m, batch}, sizeof(meter_ref));
    return st;
}

clg_status clg_meter_read(clg_meter *m, double *mean_loss, double *accuracy)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    float s[2] = {0, 0};
    clg_status st = m->samples ? clg_tensor_to_host(m->sums, s, sizeof s) : CLG_OK;
    double n = m->samples ? (double)m->samples : 1.0;
    if (mean_loss) *mean_loss = st == CLG_OK ? s[0] / n : 0.0;
    if (accuracy) *accuracy = st == CLG_OK ? s[1] / n : 0.0;
    return st;
}

int64_t clg_meter_samples(const clg_meter *m) { return m ? m->samples : 0; }

void clg_meter_reset(clg_meter *m)
{
    if (!m) return;
    clg_no_grad_begin(m->dev);
    clg_fill_(m->sums, 0.0);
    clg_no_grad_end(m->dev);
    m->samples = 0;
}
