# common.sh: what the CLI tests share (sourced). Arguments of the test: CLGRAD binary.
set -eu
case $1 in /*) CLGRAD=$1 ;; *) CLGRAD=$(pwd)/$1 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${CLG_TEST_PYTHON:-/usr/bin/python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/clgrad-cli.XXXXXX")
trap 'rm -rf "$T"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# Graph runs are compared with eager ones bit for bit, so both must run the same
# kernels. A graph cannot record CLBlast's launches: products a device sends to CLBlast
# (gemm = clblast, or tune when the tuner picks it) run in graphs on the tiled kernels.
# Such a device pins gemm = tiled here (tests/check.h, check_same_gemm_in_graphs).
same_gemm_in_graphs() {
    case $("$CLGRAD" devices --params 2>/dev/null | sed -n 's/^gemm = //p' | head -n 1) in
    tune | clblast) export CLG_PARAMS="${CLG_PARAMS:+$CLG_PARAMS,}gemm=tiled" ;;
    esac
}

# ok NAME ARGS...: clgrad ARGS must succeed; its output is in $T/NAME.out.
ok() {
    name=$1
    shift
    rc=0
    "$CLGRAD" "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
    if [ $rc -ne 0 ]; then
        cat "$T/$name.out" "$T/$name.err" >&2
        fail "$name: clgrad $* exited $rc"
    fi
}

# has NAME TEXT: the output of NAME contains TEXT.
has() {
    grep -qF -- "$2" "$T/$1.out" || fail "$1: no \"$2\" in its output: $(tail -3 "$T/$1.out")"
}

# A PNG: the signature and a plausible size.
png() {
    [ -f "$1" ] || fail "$1 was not written"
    sig=$(od -An -tx1 -N8 "$1" | tr -d ' \n')
    [ "$sig" = 89504e470d0a1a0a ] || fail "$1 is not a PNG (starts $sig)"
    size=$(wc -c <"$1")
    [ "$size" -gt 10000 ] || fail "$1 is only $size bytes"
}

# A small MLP with dropout (so the generator's state matters for resuming).
model() {
    cat >"$T/m.json" <<'JSON'
{"comment": "CLI test model",
 "input": [1, 28, 28],
 "classes": ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"],
 "layers": ["flatten", {"type": "linear", "out": 32}, "relu", {"type": "dropout", "p": 0.1},
            {"type": "linear", "out": 10, "name": "head"}],
 "optimizer": {"type": "adam", "lr": 0.003, "schedule": "step:1:0.5"},
 "train": {"batch": 64, "epochs": 3, "seed": 5, "workers": 2},
 "data": {"scale": 0.00392156862745098, "normalize": {"mean": [0.286], "std": [0.353]}}}
JSON
}

# The Fashion-MNIST cut and its model, unless the test brings its own data (CLI_DATA=none).
# CLI_TEST_SAMPLES: fewer than 256 test samples, for the few-step twins that slow devices
# run (evaluating a CNN on 256 samples took most of a 2-step run on rusticl).
if [ "${CLI_DATA:-fashion-mnist}" != none ]; then
    "$PY" "$HERE/make_data.py" "$T" "${CLI_TEST_SAMPLES:-256}" || fail "cannot make the test data (python3-numpy, dataset-fashion-mnist)"
    model
fi
