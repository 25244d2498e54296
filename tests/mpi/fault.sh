# fault.sh DIST_FAULT: a rank that dies or hangs in a 2-rank run ends the run with an
# error within a time limit (tests/mpi/dist_fault.c); a clean run ends with both done.
set -eu
PROG=$1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export CLG_DIST_TIMEOUT=5
T=$(mktemp -d "${TMPDIR:-/tmp}/clgrad-fault.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() {
    echo "FAIL: $*" >&2
    cat "$T/out" >&2
    exit 1
}
run() {   # run MODE: mpirun's exit status in $rc, its seconds in $secs, output in $T/out
    start=$(date +%s)
    rc=0
    timeout 120 mpirun --allow-run-as-root -np 2 -x CLG_CACHE_DIR -x CLG_DIST_TIMEOUT "$PROG" "$1" >"$T/out" 2>&1 || rc=$?
    secs=$(($(date +%s) - start))
}
run none
[ $rc -eq 0 ] && [ "$(grep -c ': done' "$T/out")" = 2 ] || fail "a clean run: exit $rc"
run die
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a rank killed: exit $rc after ${secs}s (124: still waiting after 120 s)"
echo "killed rank: the run ended with status $rc after ${secs}s"
run hang
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a rank hanging: exit $rc after ${secs}s (124: still waiting after 120 s)"
grep -q "rank 0: .*did not finish in 5 s.*died or hangs" "$T/out" || fail "a rank hanging: rank 0 did not say why"
echo "hanging rank: the run ended with status $rc after ${secs}s"
run hang-bn
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a rank hanging, batch norm synchronised: exit $rc after ${secs}s"
grep -q "rank 0: .*synchronised batch norm (rank 0 of 2): .*did not finish in 5 s.*died or hangs" "$T/out" ||
    fail "a rank hanging, batch norm synchronised: rank 0 did not say why"
echo "hanging rank, synchronised batch norm: the run ended with status $rc after ${secs}s"
