#!/bin/sh
# The oclgrind wrapper's own tests: COMMAND must fail, and its output (stdout and stderr)
# must hold every PATTERN (extended regular expressions):
#   sh tests/oclgrind/expect_fail.sh PATTERN... -- COMMAND [ARGS...]
set -u
n=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    n=$((n + 1))
    eval "pattern_$n=\$1"
    shift
done
if [ $# -lt 2 ]; then
    echo "usage: $0 PATTERN... -- COMMAND [ARGS...]" >&2
    exit 2
fi
shift
out=$(mktemp "${TMPDIR:-/tmp}/clgrad-expect.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT INT TERM
"$@" >"$out" 2>&1
rc=$?
cat "$out"
status=0
if [ $rc -eq 0 ]; then
    echo "FAIL: the command succeeded; it must fail" >&2
    status=1
fi
i=1
while [ $i -le $n ]; do
    eval "p=\$pattern_$i"
    if ! grep -Eq "$p" "$out"; then
        echo "FAIL: the output lacks /$p/" >&2
        status=1
    fi
    i=$((i + 1))
done
[ $status -eq 0 ] && echo "failed as it must, saying so"
exit $status
