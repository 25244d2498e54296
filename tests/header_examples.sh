#!/bin/sh
# header_examples: the usage example that opens every public header (its first block of
# code lines, " *   ..." up to the first line of prose) compiles as the body of main()
# against the installed headers and the library (dist_mpi.h: libclgrad-dist), warning-free,
# and runs to exit 0 on the test device, in a scratch folder (for the files the examples
# write). A header edit that breaks its example fails here. Usage: header_examples.sh SOURCE_DIR BUILD_DIR CC
set -u
SRC=$1 BUILD=$2 CC=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/clgrad-examples.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fails=0 n=0
for h in "$SRC/include/clgrad.h" "$SRC"/include/clgrad/*.h; do
    name=$(basename "$h" .h)
    # the first comment's first run of " *   " lines, blank " *" lines inside kept
    awk 'NR == 1, /\*\// {
             if ($0 ~ /^ \*   /) { s = 1; print substr($0, 6); next }
             if (s && $0 ~ /^ \*$/) { print ""; next }
             if (s) exit
         }' "$h" >"$T/$name.body"
    if [ ! -s "$T/$name.body" ]; then
        echo "FAIL $name.h: no usage example at the top"
        fails=$((fails + 1))
        continue
    fi
    n=$((n + 1))
    {
        echo '#include <stdbool.h>'
        echo '#include <stdio.h>'
        echo '#include <stdlib.h>'
        echo '#include <string.h>'
        echo '#include <clgrad.h>'
        grep '^#include' "$T/$name.body"
        echo 'int main(int argc, char **argv)'
        echo '{'
        echo '    (void)argc, (void)argv;'
        grep -v '^#include' "$T/$name.body" | sed 's/^/    /'
        echo '    return 0;'
        echo '}'
    } >"$T/$name.c"
    # libclgrad-dist's header links that library too; every other one libclgrad alone.
    libs=-lclgrad
    [ "$name" = dist_mpi ] && libs="-lclgrad-dist -lclgrad"
    if ! "$CC" -std=c11 -Wall -Wextra -Werror -I"$SRC/include" -I"$BUILD/include" "$T/$name.c" -o "$T/$name" \
        -L"$BUILD/src" $libs -Wl,-rpath,"$BUILD/src" >"$T/$name.cc.log" 2>&1; then
        echo "FAIL $name.h: its example does not compile:"
        cat -n "$T/$name.c" | sed 's/^/    /'
        cat "$T/$name.cc.log"
        fails=$((fails + 1))
        continue
    fi
    mkdir -p "$T/run-$name"
    if ! (cd "$T/run-$name" && "$T/$name" >"$T/$name.out" 2>&1); then
        echo "FAIL $name.h: its example exits $?:"
        cat "$T/$name.out"
        fails=$((fails + 1))
        continue
    fi
    echo "ok   $name.h"
done
echo "$n examples, $fails failed"
[ $fails -eq 0 ]
