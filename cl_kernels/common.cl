// common.cl: put in front of every program (see src/device/program.c).
// Programs are specialised with -D options: -DT=float / -DT=double for the element type.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef T
#define T float
#endif
