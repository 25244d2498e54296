/* ahead.c: the programs a float32 model's first training step builds, built when the
 * first float32 tensor is made. Where the device table compiles on several host threads
 * (build_threads > 1: GPUs), side by side: cold, each was compiled in turn at its first
 * op, and on the H100 the MLP's cold start took 22-26 s, nearly all of it compiles,
 * against 0.65 s warm. Where programs are compiled one at a time (build_threads = 1:
 * POCL, whose compiler holds one lock; Oclgrind; llvmpipe), as one program of all their
 * sources (clg__programs_bundle): POCL's compiler has a fixed cost per program, and the
 * six took 1.0-1.5 s as one against 2.3-2.6 s one by one. The list is what an MLP's and
 * a CNN's steps build in float32 (CLG_PROFILE=1 lists a step's builds);
 * test_program_build fails when one of them goes unused by such a step. A layer made
 * before the first tensor adds its own program to the batch (Conv2d: conv). */
#include "tensor_impl.h"

static const char *const first_step[] = {"random", "copy", "relu", "reduce", "softmax", "optim"};

const char *clg__first_step_program(int i)
{
    return i >= 0 && i < (int)(sizeof first_step / sizeof *first_step) ? first_step[i] : NULL;
}

void clg__programs_ahead(clg_device *dev, clg_dtype dtype, const char *also)
{
    if (!dev || dtype != CLG_F32 || dev->programs_ahead) return;
    dev->programs_ahead = true;
    enum { N = sizeof first_step / sizeof *first_step };
    if (clg__device_params(dev)->build_threads < 2) {
        const char *names[N + 1];
        for (int i = 0; i < N; i++) names[i] = first_step[i];
        names[N] = also;
        clg__programs_bundle(dev, N + (also != NULL), names, clg__dtype_options(CLG_F32));
        return;
    }
    clg_program_req reqs[N + 1];
    for (int i = 0; i < N; i++) reqs[i] = (clg_program_req){first_step[i], clg__dtype_options(CLG_F32)};
    reqs[N] = (clg_program_req){also, clg__dtype_options(CLG_F32)};
    clg__programs_build(dev, N + (also != NULL), reqs);
}
