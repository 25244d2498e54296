#!/bin/sh
# deb_packages: `cpack -G DEB` builds libclgrad0, libclgrad-dev, clgrad, libclgrad-dist0
# and libclgrad-dist-dev; lintian finds no error in them; their control fields and files
# are what Debian asks (shlibs and the ldconfig trigger, copyright and changelogs, Depends
# on libclgrad0 of their version); only libclgrad-dist0 depends on Open MPI.
# Extracted with dpkg-deb -x into a private root (nothing is installed on the system),
# they build and run the consumers of tests/consumer (CMake's find_package and
# pkg-config, C and C++, libclgrad-dist's too), the command runs and says its version, and the example trainers
# shipped in share/clgrad build against them, and the Python package there imports.
# usage: deb_packages.sh BUILD_DIR SOURCE_DIR C_COMPILER CXX_COMPILER VERSION
set -eu
build=$1 src=$2 cc=$3 cxx=$4 version=$5
work=$build/deb-test
rm -rf "$work"
mkdir -p "$work"
for tool in cpack dpkg-deb dpkg-shlibdeps lintian; do
    command -v $tool >/dev/null || { echo "FAIL no $tool (scripts/install-deps.sh --test)"; exit 1; }
done
cpack -G DEB -B "$work" --config "$build/CPackConfig.cmake" >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log"; echo "FAIL cpack"; exit 1; }
deb() { ls "$work"/"$1"_*.deb; }
lib=$(deb libclgrad0) dev=$(deb libclgrad-dev) tools=$(deb clgrad)
dlib=$(deb libclgrad-dist0) ddev=$(deb libclgrad-dist-dev)

# lintian: errors fail (its exit status); warnings are printed
lintian --tag-display-limit 0 "$lib" "$dev" "$tools" "$dlib" "$ddev" 2>/dev/null ||
    { echo "FAIL lintian reports errors"; exit 1; }

field() { dpkg-deb -f "$1" "$2"; }
full=$(field "$lib" Version)
case $full in "$version"-*) ;; *) echo "FAIL libclgrad0 is version $full, not $version-N"; exit 1 ;; esac
for p in "$dev" "$tools" "$dlib"; do
    field "$p" Depends | grep -qF "libclgrad0 (= $full)" ||
        { echo "FAIL $(field "$p" Package) does not depend on libclgrad0 (= $full): $(field "$p" Depends)"; exit 1; }
done
field "$lib" Depends | grep -q "ocl-icd-libopencl1" || { echo "FAIL libclgrad0's Depends miss OpenCL: $(field "$lib" Depends)"; exit 1; }
for p in "$tools" "$ddev"; do
    field "$p" Depends | grep -qF "libclgrad-dist0 (= $full)" ||
        { echo "FAIL $(field "$p" Package) does not depend on libclgrad-dist0 (= $full): $(field "$p" Depends)"; exit 1; }
done
# MPI: libclgrad-dist0's alone (where the build found it), never the core's.
for p in "$lib" "$dev"; do
    field "$p" Depends | grep -qi mpi && { echo "FAIL $(field "$p" Package) depends on MPI: $(field "$p" Depends)"; exit 1; }
done
if readelf -d "$build/src/libclgrad-dist.so" | grep -q 'NEEDED.*libmpi'; then
    field "$dlib" Depends | grep -q "libopenmpi" || { echo "FAIL libclgrad-dist0 misses Open MPI: $(field "$dlib" Depends)"; exit 1; }
fi
dpkg-deb -e "$dlib" "$work/dlib-control"
grep -qx "libclgrad-dist 0 libclgrad-dist0 (>= $full)" "$work/dlib-control/shlibs" || { echo "FAIL libclgrad-dist0's shlibs"; exit 1; }
grep -qx "activate-noawait ldconfig" "$work/dlib-control/triggers" || { echo "FAIL libclgrad-dist0 has no ldconfig trigger"; exit 1; }
dpkg-deb -e "$lib" "$work/lib-control"
grep -qx "libclgrad 0 libclgrad0 (>= $full)" "$work/lib-control/shlibs" || { echo "FAIL libclgrad0's shlibs"; exit 1; }
grep -qx "activate-noawait ldconfig" "$work/lib-control/triggers" || { echo "FAIL libclgrad0 has no ldconfig trigger"; exit 1; }

root=$work/root
for p in "$lib" "$dev" "$tools" "$dlib" "$ddev"; do
    dpkg-deb -x "$p" "$root"
    name=$(field "$p" Package)
    for f in copyright changelog.gz changelog.Debian.gz; do
        [ -f "$root/usr/share/doc/$name/$f" ] || { echo "FAIL $name has no /usr/share/doc/$name/$f"; exit 1; }
    done
done
# The library where its package put it; the -dev link and the command's pages beside.
libdir=$(dirname "$(find "$root/usr/lib" -name libclgrad.so.0 | head -n 1)")
[ -f "$libdir/libclgrad.so.0" ] && [ -L "$libdir/libclgrad.so" ] || { echo "FAIL library files under $root/usr/lib"; exit 1; }
[ -f "$root/usr/share/man/man1/clgrad-train.1.gz" ] && [ -f "$root/usr/share/bash-completion/completions/clgrad" ] ||
    { echo "FAIL the clgrad package lacks its man pages or completion"; exit 1; }
outside=${LD_LIBRARY_PATH:-}
run() { LD_LIBRARY_PATH=$libdir${outside:+:$outside} "$@"; }

# The command: no RUNPATH under /usr, the library found on the (here: given) path.
readelf -d "$root/usr/bin/clgrad" | grep -q 'R.*PATH' && { echo "FAIL /usr/bin/clgrad has a RUNPATH"; exit 1; }
v=$(run "$root/usr/bin/clgrad" --version)
[ "$v" = "clgrad $version (library $version)" ] || { echo "FAIL clgrad --version: $v"; exit 1; }

# The consumers: CMake (C, C++17, C++20) and pkg-config (the .pc finds its own prefix).
cmake -S "$src/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$root/usr" \
      -DCMAKE_C_COMPILER="$cc" -DCONSUMER_CXX=ON -DCMAKE_CXX_COMPILER="$cxx" -DCONSUMER_DIST=ON >"$work/consumer.log" 2>&1 &&
    cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; echo "FAIL consumer build"; exit 1; }
grep -q "^clgrad_DIR:PATH=$root/usr/lib.*/cmake/clgrad$" "$work/consumer/CMakeCache.txt" || { echo "FAIL find_package found another clgrad"; exit 1; }
for c in consumer consumer_cxx17 consumer_cxx20 consumer_dist; do run "$work/consumer/$c"; done
pc=$(PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} pkg-config --cflags --libs clgrad)
inc=$(echo "$pc" | sed -n 's/.*-I\([^ ]*\).*/\1/p')
[ "$(realpath "$inc")" = "$(realpath "$root/usr/include")" ] || { echo "FAIL pkg-config gives $pc"; exit 1; }
"$cc" -o "$work/pc-consumer" "$src/tests/consumer/main.c" $pc
run "$work/pc-consumer"
"$cc" -o "$work/pc-consumer-dist" "$src/tests/consumer/dist.c" \
    $(PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} pkg-config --cflags --libs clgrad-dist)
run "$work/pc-consumer-dist"

# The example trainers' sources and model files in share/clgrad: the same as the tree's,
# and one of them builds and runs against the packages.
for f in "$src"/examples/models/*.json; do
    cmp -s "$f" "$root/usr/share/clgrad/models/$(basename "$f")" || { echo "FAIL share/clgrad/models lacks $(basename "$f")"; exit 1; }
done
cmake -S "$root/usr/share/clgrad/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$root/usr" \
      -DCMAKE_C_COMPILER="$cc" >"$work/examples.log" 2>&1 &&
    cmake --build "$work/examples" --target hello_device data_parallel >>"$work/examples.log" 2>&1 ||
    { cat "$work/examples.log"; echo "FAIL the installed examples do not build"; exit 1; }
run "$work/examples/hello_device"
# The Python package in share/clgrad/python: the tree's files, and it runs the packaged library.
for f in "$src"/python/clgrad/*.py; do
    cmp -s "$f" "$root/usr/share/clgrad/python/clgrad/$(basename "$f")" || { echo "FAIL share/clgrad/python lacks clgrad/$(basename "$f")"; exit 1; }
done
pv=$(CLGRAD_LIB=$libdir/libclgrad.so.0 PYTHONPATH=$root/usr/share/clgrad/python PYTHONDONTWRITEBYTECODE=1 \
     "${CLG_TEST_PYTHON:-/usr/bin/python3}" -c 'import clgrad; print(clgrad.version(), clgrad.__file__)') ||
    { echo "FAIL the packaged Python package does not import"; exit 1; }
[ "$pv" = "$version $root/usr/share/clgrad/python/clgrad/__init__.py" ] || { echo "FAIL the packaged Python package: $pv"; exit 1; }
echo "deb packages: $(basename "$lib") $(basename "$dev") $(basename "$tools") $(basename "$dlib") $(basename "$ddev") built, extracted and used"
