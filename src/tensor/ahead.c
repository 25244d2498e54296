/* ahead.c: the programs a float32 model's first training step builds, built side by side
 * when the first float32 tensor is made on a device whose table compiles on several
 * host threads (build_threads > 1: GPUs). Cold, each was compiled in turn at its first
 * op: on the H100 the MLP's cold start took 22-26 s, nearly all of it compiles, against
 * 0.65 s warm. Where programs are compiled one at a time anyway (build_threads = 1:
 * POCL, whose compiler holds one lock), each is built at its first use, as before, so
 * that none is built that is not needed. The list is what an MLP's and a CNN's steps
 * build in float32 (CLG_PROFILE=1 lists a step's builds); test_program_build fails when
 * one of them goes unused by such a step. A layer made before the first tensor adds its
 * own program to the batch (Conv2d: conv). */
#include "tensor_impl.h"

static const char *const first_step[] = {"random", "copy", "relu", "reduce", "softmax", "optim"};

void clg__programs_ahead(clg_device *dev, clg_dtype dtype, const char *also)
{
    if (!dev || dtype != CLG_F32 || dev->programs_ahead || clg__device_params(dev)->build_threads < 2) return;
    dev->programs_ahead = true;
    enum { N = sizeof first_step / sizeof *first_step };
    clg_program_req reqs[N + 1];
    for (int i = 0; i < N; i++) reqs[i] = (clg_program_req){first_step[i], clg__dtype_options(CLG_F32)};
    reqs[N] = (clg_program_req){also, clg__dtype_options(CLG_F32)};
    clg__programs_build(dev, N + (also != NULL), reqs);
}
