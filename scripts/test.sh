#!/bin/sh
# README command 2: install what is missing, build with warnings as errors, and run the
# whole test suite through ctest on two OpenCL implementations, POCL and Mesa's rusticl
# (llvmpipe), then every kernel under Oclgrind (the `oclgrind` label). A missing device
# fails the run, never skips it. `--sanitize` builds a second tree with AddressSanitizer
# and UndefinedBehaviorSanitizer for the host code and runs the suite there too, and a
# third with ThreadSanitizer for the data loader's threads, the gradient reducer's, the
# program builds' and the host GEMM engine's.
set -eu
cd "$(dirname "$0")/.."
# timed NAME COMMAND...: run a stage, then say how long it took (CI's budget is per run).
timed() {
  name=$1
  shift
  echo "== $name"
  start=$(date +%s)
  "$@"
  echo "== $name: $(( $(date +%s) - start )) s"
}
timed "packages" sh scripts/install-deps.sh --test
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$PWD/build/pocl-cache}
# llvmpipe's disk cache of compiled kernels, which rusticl goes through: a program another
# test process compiled loads in a fraction of the time (test_ops_softmax: 22 s cold, 3 s
# warm). In the build tree, as POCL's, so that a fresh clone measures what a fresh CI
# machine takes and no other checkout's runs share it.
export MESA_SHADER_CACHE_DIR=${MESA_SHADER_CACHE_DIR:-$PWD/build/mesa-cache}
BUILD_DIR=build BUILD_TYPE=RelWithDebInfo timed "build" sh scripts/build.sh -DCLGRAD_WERROR=ON
# POCL runs the full trainings (label full: many steps, or enough to show a quality such
# as a loss below the unigram entropy), not their few-step twins (label steps, *_steps);
# the test of two implementations in one process (label two_impls: POCL beside rusticl,
# whichever device the pass names) runs once, in the rusticl pass.
timed "the suite on POCL" env -C build ctest --output-on-failure -j2 -LE 'oclgrind|steps|two_impls'
# rusticl runs all but the full trainings (their few-step twins run there instead),
# the tests of the installed tree (label install: packages, man pages, completion,
# consumers against a staged install), which check the install, not the implementation,
# and those of host code (label host: file formats, the command's errors, a killed save,
# an MPI failure, the Python package), which check the host code, not the implementation.
timed "the suite on Mesa rusticl (llvmpipe)" env -C build RUSTICL_ENABLE=swrast CLG_DEVICE=llvmpipe \
  ctest --output-on-failure -j2 -LE 'oclgrind|full|install|host'
timed "every kernel under Oclgrind" env -C build ctest --output-on-failure -j2 -L oclgrind
if [ "${1:-}" = "--sanitize" ]; then
  # The sanitizers check clgrad's host code, on POCL alone. tests/lsan.supp covers
  # rusticl's own leaks too (12 KB in 45 blocks from its SPIR-V parser in test_tensor);
  # what remains there is one 128-byte block allocated by code llvmpipe compiled at run
  # time, a frame without a module that no suppression can name (the slow unwinder,
  # fast_unwind_on_malloc=0, finds the library under it, but makes a test take >10 min).
  export OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  BUILD_DIR=build-asan BUILD_TYPE=Debug timed "build with ASan and UBSan" sh scripts/build.sh -DCLGRAD_WERROR=ON \
    "-DCLGRAD_SANITIZE=address;undefined" -DCLGRAD_BUILD_EXAMPLES=OFF -DCLGRAD_BUILD_BENCH=OFF -DCLGRAD_VENV_DIR="$PWD/build"
  # The few-step twins of the full trainings: the host code they run is the same.
  timed "the suite under ASan and UBSan" env -C build-asan ctest --output-on-failure -j2 -LE 'install|oclgrind|two_impls|mpi|full'
  # The MPI runs without the leak check: Open MPI leaves allocations in components it
  # dlcloses at MPI_Finalize, frames no suppression can name. Memory errors are still
  # fatal; the reducer's own allocations are leak-checked by test_dist above. Two at a
  # time: mpi_fault mostly waits out its ranks' timeouts.
  timed "the MPI tests under ASan" env -C build-asan ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    ctest --output-on-failure -j2 -L mpi -LE full
  export TSAN_OPTIONS=halt_on_error=1
  tsan_tests="test_data_loader test_data_fashion test_dist test_dist_transport test_program_build test_gemm_team"
  BUILD_DIR=build-tsan BUILD_TYPE=Debug BUILD_TARGETS=$tsan_tests timed "build with TSan" sh scripts/build.sh \
    -DCLGRAD_WERROR=ON -DCLGRAD_SANITIZE=thread -DCLGRAD_BUILD_EXAMPLES=OFF -DCLGRAD_BUILD_BENCH=OFF -DCLGRAD_BUILD_TOOLS=OFF
  timed "the threads under TSan" env -C build-tsan ctest --output-on-failure -j2 \
    -R "^($(echo $tsan_tests | tr ' ' '|'))\$" -LE oclgrind
fi
