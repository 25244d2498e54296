# cli_dist.sh: data-parallel `clgrad train` under mpirun (2 ranks on this machine).
# Two ranks on the same global batch train the weights one process trains: the reference
# MLP and CNN (no batch norm, no dropout) to float32 rounding over 2 steps and within 2e-3
# over 10 (see close()), and a
# small model on data whose last batch leaves one rank with nothing, and a model with
# batch norm synchronised over the ranks (--sync-bn). Rank 0 alone writes
# the checkpoint and metrics; a 2-rank run resumes bit-exactly on 2 ranks and is refused
# on 1.
. "$(dirname "$0")/common.sh"
ROOT=$(cd "$HERE/../.." && pwd)
MPIRUN=${CLG_MPIRUN:-mpirun}
# --oversubscribe: 2 ranks on fewer cores; as root in CI containers; no ptrace-based copies.
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
command -v "$MPIRUN" >/dev/null || fail "no $MPIRUN (openmpi-bin)"

# ranks NAME N ARGS...: clgrad ARGS on N ranks must succeed; output in $T/NAME.out.
ranks() {
    name=$1
    n=$2
    shift 2
    rc=0
    timeout 600 "$MPIRUN" --allow-run-as-root -np "$n" -x CLG_CACHE_DIR -x CLG_DIST_TIMEOUT "$CLGRAD" "$@" \
        >"$T/$name.out" 2>"$T/$name.err" || rc=$?
    if [ $rc -ne 0 ]; then
        cat "$T/$name.out" "$T/$name.err" >&2
        fail "$name: mpirun -np $n clgrad $* exited $rc"
    fi
}
# close A B WHAT [TOL]: the weights and optimizer state of A and B differ by at most
# TOL of their norm (default 2e-3). The ranks split the gradients' sums, so the runs
# differ by float32 rounding (1e-8 to 1e-7 of the norm after 10 steps), until a ReLU's
# input or a max pool's two largest values lie within rounding of each other: then one
# run takes the other side, and the runs part by about 1e-4 at once and more later
# (measured: the MLP on the tiled GEMM at step 21, 1.3e-7 then 1.8e-4; the CNN at step
# 9). Such a tie comes with every engine, sooner or later; which step brings it depends on
# the engine's rounding. Errors of the averaging are far larger: after 10 steps a rate
# 10% off parts the runs by 0.04 (MLP) and 0.17 (CNN), half the batch by 0.18 and 0.44.
close() {
    "$PY" "$HERE/st_compare.py" "$1" "$2" close '.*' "${4:-2e-3}" >"$T/cmp.out" 2>&1 ||
        fail "$3: not the same weights: $(cat "$T/cmp.out")"
}
export CLG_DIST_TIMEOUT=300

# Fashion-MNIST's training set, the test cut's 256 samples (evaluation is not the point).
# The CNN at batch 32: at 128 its first steps are chaotic (lr 0.0501 instead of 0.05 moves
# its 40-step weights by 0.26 of their norm).
# CLI_STEPS (set by cli_dist_steps, the few-step twin that slow devices run) shortens
# these two runs: the CNN takes 2 s a step on rusticl.
steps=${CLI_STEPS:-10}
for m in fashion_mlp fashion_cnn; do
    b=128
    [ $m = fashion_cnn ] && b=32
    ok one_$m train "$ROOT/examples/models/$m.json" --epochs 1 --steps $steps --batch $b --test-data "$T/data" \
        --out "$T/one_$m.ckpt"
    ranks two_$m 2 train "$ROOT/examples/models/$m.json" --epochs 1 --steps $steps --batch $b --test-data "$T/data" \
        --out "$T/two_$m.ckpt" --metrics "$T/two_$m.csv"
    has two_$m "data-parallel: 2 ranks"
    close "$T/one_$m.ckpt" "$T/two_$m.ckpt" "$m, 2 ranks against 1"
    # the same epoch summary: the loss and accuracy over both ranks' samples
    l1=$(grep -o 'train loss [0-9.]* acc [0-9.]*' "$T/one_$m.out" | cut -c1-15)
    l2=$(grep -o 'train loss [0-9.]* acc [0-9.]*' "$T/two_$m.out" | cut -c1-15)
    [ -n "$l1" ] && [ "$l1" = "$l2" ] || fail "$m: one process says $l1, two ranks $l2"
    [ "$(grep -c '^1,' "$T/two_$m.csv")" = 1 ] || fail "$m: the metrics file has not one row per epoch: $(cat "$T/two_$m.csv")"
done
# Two steps: no tie yet, float32 rounding alone.
ok one_2 train "$ROOT/examples/models/fashion_mlp.json" --epochs 1 --steps 2 --test-data "$T/data" --out "$T/one_2.ckpt"
ranks two_2 2 train "$ROOT/examples/models/fashion_mlp.json" --epochs 1 --steps 2 --test-data "$T/data" --out "$T/two_2.ckpt"
close "$T/one_2.ckpt" "$T/two_2.ckpt" "fashion_mlp, 2 steps, 2 ranks against 1" 1e-6

# Uneven: 512 samples in batches of 73 leave a last batch of 1, which rank 1 has no part of.
cat >"$T/u.json" <<'JSON'
{"input": [1, 28, 28], "layers": ["flatten", {"type": "linear", "out": 32}, "relu", {"type": "linear", "out": 10}],
 "optimizer": {"type": "adam", "lr": 0.003}, "train": {"batch": 73, "epochs": 2, "seed": 3, "workers": 1},
 "data": {"scale": 0.00392156862745098}}
JSON
ok one_u train "$T/u.json" --data "$T/data" --out "$T/one_u.ckpt"
# With --tensorboard: rank 0 writes one file, whose train/ point per epoch (every 8 steps)
# sums every rank's part, the CSV's row (TensorBoard's reader, the tb_venv fixture).
ranks two_u 2 train "$T/u.json" --data "$T/data" --out "$T/two_u.ckpt" --metrics "$T/two_u.csv" \
    --tensorboard "$T/runs/u" --tensorboard-every 8
close "$T/one_u.ckpt" "$T/two_u.ckpt" "uneven batches"
[ "$(ls "$T/runs/u" | wc -l)" -eq 1 ] || fail "2 ranks wrote $(ls "$T/runs/u" | wc -l) event files"
"${CLG_TB_PYTHON:?the tb_venv fixture}" "$HERE/tb_check.py" curves "$T/runs/u" "$T/two_u.csv" 8 >/dev/null ||
    fail "--tensorboard on 2 ranks"

# --sync-bn: batch norm over the whole batch. 512 samples in batches of 85 end with a
# batch of 2, one sample per rank: BatchNorm1d could not normalise a part alone.
cat >"$T/bn.json" <<'JSON'
{"input": [1, 28, 28], "layers": [{"type": "conv2d", "out": 4, "kernel": 3, "padding": 1, "bias": false},
  {"type": "batch_norm2d"}, "relu", {"type": "max_pool2d", "kernel": 4}, "flatten",
  {"type": "linear", "out": 16, "bias": false}, {"type": "batch_norm1d"}, "relu", {"type": "linear", "out": 10}],
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9}, "train": {"batch": 85, "epochs": 1, "seed": 3, "workers": 1},
 "data": {"scale": 0.00392156862745098}}
JSON
ok one_bn train "$T/bn.json" --data "$T/data" --out "$T/one_bn.ckpt"
ranks two_bn 2 train "$T/bn.json" --data "$T/data" --out "$T/two_bn.ckpt" --sync-bn
close "$T/one_bn.ckpt" "$T/two_bn.ckpt" "synchronised batch norm, 2 ranks against 1"

# Resume: 1 epoch then 1 more on 2 ranks is the 2-epoch run, bit for bit.
ranks half 2 train "$T/u.json" --data "$T/data" --epochs 1 --out "$T/half.ckpt"
ranks rest 2 train "$T/u.json" --data "$T/data" --resume "$T/half.ckpt" --out "$T/rest.ckpt"
has rest "resumed from"
ok info_half info "$T/half.ckpt"
has info_half "data-parallel: trained on 2 ranks"
"$PY" "$HERE/st_compare.py" "$T/two_u.ckpt" "$T/rest.ckpt" same >/dev/null || fail "a 2-rank resume is not the 2-rank run"
rc=0
"$CLGRAD" train "$T/u.json" --data "$T/data" --resume "$T/half.ckpt" >"$T/n1.out" 2>"$T/n1.err" || rc=$?
[ $rc -ne 0 ] && grep -q "trained on 2 ranks" "$T/n1.err" || fail "a 2-rank checkpoint resumed on 1 process: $(cat "$T/n1.err")"
echo "cli_dist: ok"
