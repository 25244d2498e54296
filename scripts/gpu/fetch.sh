#!/bin/sh
# Run here (a Debian 12 development machine, as root), from the project's root, before
# carrying the tree to a lent NVIDIA machine that has CUDA and the driver but no OpenCL
# loader, headers, CLBlast or Fashion-MNIST, and no package registry (issue 12).
# Fills .gpu-kit/ (git ignores it; name it in what travels, about 35 MB):
#   debs/           the Debian packages scripts/gpu/env.sh unpacks there under a private prefix
#   fashion-mnist/  the four gzipped IDX files (for the trainers and bench_train)
#   bin/            the CUDA references of bench/cuda/, compiled here with nvcc (if present)
set -eu
cd "$(dirname "$0")/../.."
kit=.gpu-kit
mkdir -p $kit/debs $kit/fashion-mnist $kit/bin
# OpenCL's loader and headers, CLBlast, clinfo, and the libraries clgrad links (zlib's
# headers, libdeflate, jansson), and pkg-config for CMake's pkg_check_modules.
(cd $kit/debs && apt-get download ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers \
  opencl-headers libclblast1 libclblast-dev clinfo zlib1g zlib1g-dev libdeflate0 libdeflate-dev libjansson4 \
  libjansson-dev pkgconf pkgconf-bin libpkgconf3 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
cp /usr/share/datasets/fashion-mnist/*.gz $kit/fashion-mnist/
if command -v nvcc >/dev/null; then
  nvcc -O2 -o $kit/bin/sgemm_cublas bench/cuda/sgemm_cublas.cu -lcublas
  [ ! -f bench/cuda/train_cudnn.cu ] ||
    nvcc -O2 -o $kit/bin/train_cudnn bench/cuda/train_cudnn.cu -lcublas -lcudnn -lz
fi
du -sh $kit/*
