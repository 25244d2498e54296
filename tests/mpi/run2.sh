# run2.sh PROG ARGS...: PROG on 2 MPI ranks of this machine (oversubscribed: CI has 2
# cores or fewer), as root in CI containers, within 300 s.
set -eu
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
exec timeout 300 mpirun --allow-run-as-root -np 2 -x CLG_CACHE_DIR -x CLG_DIST_TIMEOUT "$@"
