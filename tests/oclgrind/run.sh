#!/bin/sh
# Run one test program under Oclgrind's checks and fail on any report:
#   sh tests/oclgrind/run.sh <test-binary> [args...]
# Oclgrind simulates a device (the only platform the program then sees) with groups of
# at most 256 work-items and 32 KiB of local memory, and checks every kernel for
# out-of-bounds and misaligned accesses, data races and barrier divergence, and every
# API call for misuse. Its kernel reports go to a log of their own (--log); API errors
# (--check-api) go to stderr, so stderr is kept and searched too. The test fails when
# the program fails (non-zero exit, as under any device), or when either holds a report.
# Not checked: uninitialized values (--uninitialized; Debian's Oclgrind 21.10 aborts on
# LLVM's freeze instruction, and reports pooled buffers' leftovers as uninitialized).
#
# OCLGRIND (default: oclgrind) names the simulator; OCLGRIND_FLAGS adds options.
# OCLGRIND_KERNELS=FILE also counts instructions (--inst-counts) and appends to FILE one
# line "<test> <kernel>" per kernel the program ran (tests/oclgrind/coverage.sh).
set -u
if [ $# -lt 1 ]; then
    echo "usage: $0 <test-binary> [args...]" >&2
    exit 2
fi
oclgrind=${OCLGRIND:-oclgrind}
if ! command -v "$oclgrind" >/dev/null 2>&1; then
    echo "FAIL: $oclgrind not found (Debian: apt-get install oclgrind)" >&2
    exit 1
fi
# Oclgrind is the only platform the program sees: a device named for another would not be found.
unset CLG_DEVICE
tmp=$(mktemp -d "${TMPDIR:-/tmp}/clgrad-oclgrind.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
# One worker thread: ctest runs tests side by side, and the reports stay in order.
counts=
[ -n "${OCLGRIND_KERNELS:-}" ] && counts=--inst-counts
# shellcheck disable=SC2086
"$oclgrind" --data-races --check-api --max-wgsize 256 --local-mem-size 32768 --num-threads 1 \
    --log "$tmp/log" $counts ${OCLGRIND_FLAGS:-} "$@" 2>"$tmp/stderr" >"$tmp/stdout"
rc=$?
if [ -n "$counts" ]; then
    # The histograms go to stdout: keep the kernels' names, pass the program's own lines.
    name=$(basename "$1")${CLG_PARAMS:+[$CLG_PARAMS]}
    sed -n "s/^Instructions executed for kernel '\(.*\)':\$/$name \1/p" "$tmp/stdout" |
        sort -u >>"$OCLGRIND_KERNELS"
    grep -Ev "^Instructions executed for kernel '|^ +[0-9]+ - |^\$" "$tmp/stdout"
else
    cat "$tmp/stdout"
fi
cat "$tmp/stderr" >&2

# Oclgrind's reports: everything it writes to its log is one (kernel errors: invalid
# and misaligned accesses, data races, work-group divergence...); API errors open with
# the line below, on stderr. No report is suppressed: none so far was a false positive.
# (A suppression would go here, as a pattern with the reason it is not a defect.)
status=0
if [ -s "$tmp/log" ]; then
    echo "FAIL: Oclgrind reported errors in kernels:" >&2
    cat "$tmp/log" >&2
    status=1
fi
if grep -q 'Oclgrind - OpenCL runtime error detected' "$tmp/stderr"; then
    echo "FAIL: Oclgrind reported OpenCL API misuse (above)" >&2
    status=1
fi
if [ $rc -ne 0 ]; then
    echo "FAIL: the program exited with status $rc under Oclgrind" >&2
    status=1
fi
[ $status -eq 0 ] && echo "oclgrind: no reports"
exit $status
