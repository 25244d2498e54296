#!/bin/sh
# Which kernels the oclgrind label runs, and which it does not:
#   sh tests/oclgrind/coverage.sh <build-dir> [ctest options, e.g. -j2]
# Runs `ctest -L oclgrind` with OCLGRIND_KERNELS set (tests/oclgrind/run.sh then records
# the kernels each test launched), lists every __kernel of cl_kernels/*.cl (each file
# after common.cl, through the C preprocessor, so that the kernels its macros make are
# named), and prints each kernel with the tests that ran it, then the kernels none ran.
# Exits 0 whether or not every kernel ran: the list is for reading.
set -u
if [ $# -lt 1 ] || [ ! -f "$1/CTestTestfile.cmake" ]; then
    echo "usage: $0 <build-dir> [ctest options]" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/clgrad-coverage.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT INT TERM
: >"$out/ran"
# (not the wrapper's own tests, whose kernels are made faulty on purpose)
(cd "$build" && OCLGRIND_KERNELS="$out/ran" ctest -L oclgrind -E oclgrind_catches "$@" >"$out/ctest.log" 2>&1)
echo "ctest -L oclgrind: $(grep -E 'tests passed|tests failed' "$out/ctest.log")"

# Every kernel of the sources: T and S (value and source types) as float, the tiled
# GEMM's tile shape as any; a kernel under #if for double only still appears.
for f in "$src"/cl_kernels/*.cl; do
    [ "$(basename "$f")" = common.cl ] && continue
    cat "$src/cl_kernels/common.cl" "$f" | cpp -P -w -DT=float -DS=float -DRM=4 -DRN=4 2>/dev/null | tr '\n' ' ' |
        grep -oE '__kernel[^;{]*[[:space:]]void[[:space:]]+[A-Za-z_0-9]+[[:space:]]*\(' |
        sed -E 's/.*void[[:space:]]+([A-Za-z_0-9]+).*/\1/' | sed "s|^|$(basename "$f" .cl) |"
done | sort -u >"$out/all"

total=$(wc -l <"$out/all")
missing=0
printf '%-12s %-32s %s\n' program kernel "tests that ran it"
while read -r prog kernel; do
    tests=$(awk -v k="$kernel" '$2 == k {print $1}' "$out/ran" | sort -u | tr '\n' ' ')
    [ -z "$tests" ] && { tests="-- NOT RUN --"; missing=$((missing + 1)); }
    printf '%-12s %-32s %s\n' "$prog" "$kernel" "$tests"
done <"$out/all"
echo
echo "$((total - missing)) of $total kernels ran under Oclgrind; not run:"
awk 'NR == FNR {ran[$2] = 1; next} !($2 in ran) {print "  " $1 " " $2}' "$out/ran" "$out/all"
extra=$(awk 'NR == FNR {known[$2] = 1; next} !($2 in known) {print $2}' "$out/all" "$out/ran" | sort -u | tr '\n' ' ')
[ -n "$extra" ] && echo "kernels that ran but are not in cl_kernels/ (CLBlast's): $extra"
exit 0
