#!/bin/sh
# Stage an install of clgrad, then build and run a consumer against it twice: through
# find_package(clgrad CONFIG) and through pkg-config. Every version it can read (the
# library's clg_version(), the headers' CLG_VERSION, `clgrad --version`, pkg-config's and
# find_package's) must be VERSION, CMake's project version. The C++ consumer (main.cpp,
# the README's training step) builds as C++17 and C++20 both ways too. libclgrad holds
# no MPI; a consumer of libclgrad-dist (tests/consumer/dist.c) builds both ways and runs,
# on 2 MPI ranks too where the library has MPI.
# usage: install_consumer.sh BUILD_DIR SOURCE_DIR C_COMPILER VERSION CXX_COMPILER
set -eu
build=$1 src=$2 cc=$3 version=$4 cxx=${5:-}
[ -n "$cxx" ] && command -v "$cxx" >/dev/null ||
    { echo "no C++ compiler (\"$cxx\"): install g++ (scripts/install-deps.sh --test)"; exit 1; }
# same WHAT GOT: fail unless GOT is the project's version
same() {
    [ "$2" = "$version" ] || { echo "$1 is \"$2\", not the project's version $version"; exit 1; }
}
work=$build/install-test
rm -rf "$work"
cmake --install "$build" --prefix "$work/stage" >/dev/null
stage=$work/stage
libdir=$(dirname "$(find "$stage" -name 'libclgrad.so.0' | head -n 1)")
test -n "$libdir" || { echo "libclgrad.so.0 not installed (SONAME)"; exit 1; }
test -f "$stage/include/clgrad.h" && test -f "$stage/include/clgrad/device.h"
test ! -e "$stage/include/device_impl.h"   # internals stay out of include/

cmake -S "$src/tests/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$stage" \
      -DCMAKE_C_COMPILER="$cc" -DCONSUMER_CXX=ON -DCMAKE_CXX_COMPILER="$cxx" -DCONSUMER_DIST=ON >/dev/null
cmake --build "$work/cmake-build" >/dev/null
# Prepended, not replaced: where OpenCL or CLBlast live off the system paths (a private
# prefix on a GPU machine, scripts/gpu/env.sh), the caller's path finds them.
outside=${LD_LIBRARY_PATH:-} pc_outside=${PKG_CONFIG_PATH:-}
out=$(LD_LIBRARY_PATH=$libdir${outside:+:$outside} "$work/cmake-build/consumer")
echo "$out"
same "clg_version()" "$(echo "$out" | sed -n 's/^consumer: clgrad \([^ ]*\) .*/\1/p')"
same "CLG_VERSION" "$(echo "$out" | sed -n 's/.*(headers \([^)]*\)).*/\1/p')"
for std in 17 20; do
    LD_LIBRARY_PATH=$libdir${outside:+:$outside} "$work/cmake-build/consumer_cxx$std"
done
same "find_package's clgrad_VERSION" "$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' \
    "$libdir/cmake/clgrad/clgradConfigVersion.cmake")"

export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
same "pkg-config --modversion clgrad" "$(pkg-config --modversion clgrad)"
"$cc" -o "$work/pc-consumer" "$src/tests/consumer/main.c" $(pkg-config --cflags --libs clgrad)
LD_LIBRARY_PATH=$libdir${outside:+:$outside} "$work/pc-consumer"
for std in 17 20; do
    "$cxx" -std=c++$std -Wall -Wextra -Wpedantic -Werror -o "$work/pc-consumer-cxx$std" "$src/tests/consumer/main.cpp" \
        $(pkg-config --cflags --libs clgrad)
    LD_LIBRARY_PATH=$libdir${outside:+:$outside} "$work/pc-consumer-cxx$std"
done
readelf -d "$libdir/libclgrad.so.0" | grep -q 'SONAME.*libclgrad.so.0'
# The installed command runs from its prefix with no LD_LIBRARY_PATH naming it (RUNPATH
# $ORIGIN/../lib): only the caller's own path, for the libraries below clgrad.
if [ -e "$stage/bin/clgrad" ]; then   # built unless CLGRAD_BUILD_TOOLS=OFF
    readelf -d "$stage/bin/clgrad" | grep -q 'RUNPATH.*\$ORIGIN/\.\./' || { echo "clgrad has no RUNPATH \$ORIGIN/../lib"; exit 1; }
    env LD_LIBRARY_PATH="$outside" "$stage/bin/clgrad" --help >/dev/null || { echo "installed clgrad does not run"; exit 1; }
    v=$(env LD_LIBRARY_PATH="$outside" "$stage/bin/clgrad" --version | head -n 1)   # clgrad X (library Y)
    same "clgrad --version" "$(echo "$v" | sed -n 's/^clgrad \([^ ]*\).*/\1/p')"
    same "clgrad --version's library" "$(echo "$v" | sed -n 's/.*(library \([^)]*\)).*/\1/p')"
fi
# Against the build tree: its -uninstalled.pc names directories that exist.
for d in $(PKG_CONFIG_PATH=$build${pc_outside:+:$pc_outside} pkg-config --cflags-only-I clgrad | sed 's/-I//g') \
         $(PKG_CONFIG_PATH=$build${pc_outside:+:$pc_outside} pkg-config --libs-only-L clgrad | sed 's/-L//g'); do
    test -d "$d" || { echo "the build tree's pkg-config names $d, which does not exist"; exit 1; }
done
"$cc" -o "$work/pc-build-consumer" "$src/tests/consumer/main.c" $(PKG_CONFIG_PATH=$build${pc_outside:+:$pc_outside} pkg-config --cflags --libs clgrad)
LD_LIBRARY_PATH=$build/src${outside:+:$outside} "$work/pc-build-consumer"
same "the build tree's pkg-config --modversion" \
    "$(PKG_CONFIG_PATH=$build${pc_outside:+:$pc_outside} pkg-config --modversion clgrad)"
# Only clg_ names are exported.
bad=$(nm -D --defined-only "$libdir/libclgrad.so.0" | awk '{print $3}' | grep -v '^clg_' | grep -v '^_' || true)
test -z "$bad" || { echo "non-clg_ symbols exported: $bad"; exit 1; }
nm -D --defined-only "$libdir/libclgrad.so.0" | awk '{print $3}' | grep -q '^clg__' && { echo "internal clg__ symbols exported"; exit 1; }
bad=$(nm -D --defined-only "$libdir/libclgrad-dist.so.0" | awk '{print $3}' | grep -v '^clg_dist_' | grep -v '^_' || true)
test -z "$bad" || { echo "libclgrad-dist exports more than clg_dist_ names: $bad"; exit 1; }

# MPI stays out of libclgrad: no NEEDED entry (nor one below it), nothing in its .pc or
# CMake targets, no installed header that includes mpi.h (which is not on the compiler's
# path here: the consumers above built without it).
# (Patterns, not the word "mpi": paths, this tree's included, may hold it.)
mpi_libs='lib(mpi|open-pal|open-rte|pmix)' mpi_names='-lmpi|ompi|openmpi|mpich|MPI::'
readelf -d "$libdir/libclgrad.so.0" | grep -E "NEEDED.*$mpi_libs" && { echo "libclgrad.so.0 needs MPI"; exit 1; }
LD_LIBRARY_PATH=$libdir${outside:+:$outside} ldd "$libdir/libclgrad.so.0" | grep -E "$mpi_libs" &&
    { echo "libclgrad.so.0 loads MPI"; exit 1; }
grep -iE -- "$mpi_names" "$libdir/pkgconfig/clgrad.pc" && { echo "clgrad.pc names MPI"; exit 1; }
pkg-config --static --libs --cflags clgrad | grep -iE -- "$mpi_names" && { echo "pkg-config clgrad names MPI"; exit 1; }
grep -iE -- "$mpi_names" "$libdir"/cmake/clgrad/clgradTargets*.cmake && { echo "clgrad::clgrad's CMake files name MPI"; exit 1; }
grep -rlE '#[[:space:]]*include[[:space:]]*[<"]mpi\.h' "$stage/include" && { echo "an installed header includes mpi.h"; exit 1; }

# libclgrad-dist, through CMake's clgrad::dist and pkg-config's clgrad-dist: one process
# alone, then (built with MPI) two ranks under mpirun.
readelf -d "$libdir/libclgrad-dist.so.0" | grep -q 'SONAME.*libclgrad-dist.so.0' || { echo "libclgrad-dist's SONAME"; exit 1; }
same "pkg-config --modversion clgrad-dist" "$(pkg-config --modversion clgrad-dist)"
"$cc" -o "$work/pc-consumer-dist" "$src/tests/consumer/dist.c" $(pkg-config --cflags --libs clgrad-dist)
readelf -d "$work/pc-consumer-dist" | grep -q 'NEEDED.*libclgrad-dist.so.0' || { echo "pkg-config clgrad-dist: no libclgrad-dist"; exit 1; }
for prog in "$work/cmake-build/consumer_dist" "$work/pc-consumer-dist"; do
    out=$(LD_LIBRARY_PATH=$libdir${outside:+:$outside} "$prog")
    echo "$out"
    echo "$out" | grep -q '^consumer_dist: rank 0 of 1, MPI ' || { echo "$prog: $out"; exit 1; }
done
if echo "$out" | grep -q 'MPI built in'; then
    readelf -d "$libdir/libclgrad-dist.so.0" | grep -qE "NEEDED.*$mpi_libs" || { echo "libclgrad-dist built with MPI needs no libmpi"; exit 1; }
    command -v mpirun >/dev/null || { echo "no mpirun (openmpi-bin) for the 2-rank consumer"; exit 1; }
    ranks=$(env OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 \
        LD_LIBRARY_PATH=$libdir${outside:+:$outside} timeout 120 mpirun --allow-run-as-root -np 2 -x LD_LIBRARY_PATH \
        "$work/cmake-build/consumer_dist" | sort)
    echo "$ranks"
    [ "$ranks" = "$(printf 'consumer_dist: rank 0 of 2, MPI built in\nconsumer_dist: rank 1 of 2, MPI built in')" ] ||
        { echo "consumer_dist on 2 ranks: $ranks"; exit 1; }
fi
"$cc" -o "$work/pc-build-consumer-dist" "$src/tests/consumer/dist.c" \
    $(PKG_CONFIG_PATH=$build${pc_outside:+:$pc_outside} pkg-config --cflags --libs clgrad-dist)
LD_LIBRARY_PATH=$build/src${outside:+:$outside} "$work/pc-build-consumer-dist" | grep -q 'rank 0 of 1' ||
    { echo "the build tree's clgrad-dist consumer"; exit 1; }
echo "install consumer: find_package and pkg-config builds ran, C and C++17/20, libclgrad-dist too; no MPI in libclgrad"
