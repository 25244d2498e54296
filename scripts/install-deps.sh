#!/bin/sh
# Install what clgrad needs from Debian 12's packages, and nothing that is already there.
# As root it runs apt-get; otherwise it prints the one command to run and fails.
# Idempotent: a second run finds nothing missing and does nothing.
#   sh scripts/install-deps.sh          to build and train (the quick start; Open MPI for
#                                       data-parallel training with mpirun; protobuf-c for
#                                       ONNX export and import)
#   sh scripts/install-deps.sh --test   also what the tests and benchmarks compare against
#                                       (NumPy, PyTorch, and OpenBLAS under them: without it
#                                       they run the 50x slower reference BLAS) and run on
#                                       (Mesa's rusticl, Oclgrind); g++ builds the C++
#                                       consumer of the install test, groff renders the
#                                       man pages (help2man writes them in the build);
#                                       cpack's .deb packages need dpkg-dev and file,
#                                       and lintian checks them; doxygen writes the API
#                                       reference (the docs target); python3-onnx, and
#                                       venv and pip for onnxruntime from PyPI (the ONNX
#                                       tests' oracle, installed by the test into the build
#                                       tree), and for tensorboard (the TensorBoard test's
#                                       reader, over Debian's python3-protobuf)
set -eu
pkgs="build-essential cmake pkgconf ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd
      clinfo libclblast-dev zlib1g-dev libdeflate-dev libjansson-dev dataset-fashion-mnist gnuplot-nox
      fortunes libopenmpi-dev openmpi-bin help2man libprotobuf-c-dev protobuf-c-compiler"
if [ "${1:-}" = "--test" ]; then
  pkgs="$pkgs python3-numpy python3-torch libopenblas0-pthread mesa-opencl-icd oclgrind g++ groff-base dpkg-dev file lintian doxygen python3-onnx python3-venv python3-pip python3-protobuf"
fi
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "clgrad needs these Debian packages:$missing" >&2
  echo "install them with:  sudo apt-get install -y$missing" >&2
  exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
