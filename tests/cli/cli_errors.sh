#!/bin/sh
# cli_errors: every way to call clgrad wrongly ends with a non-zero exit status and
# ONE line on stderr (saying what is wrong), never a crash. Usage: cli_errors.sh CLGRAD
. "$(dirname "$0")/common.sh"
cd "$T"
ok good train m.json --data "$T/data" --epochs 1 --steps 1 --out good.ckpt --metrics good.csv
head -c 300 good.ckpt >truncated.ckpt
printf 'not a checkpoint at all, just text\n' >text.ckpt
"$PY" -c "
import json, struct
h = json.dumps({'w': {'dtype': 'F32', 'shape': [1], 'data_offsets': [0, 4]}}).encode()
h += b' ' * (-len(h) % 8)
open('weights.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + b'\0\0\0\0')"
printf '{"input": [1, 28, 28],\n "layers": [{"type": "conv2d", "out": 4, "kernel": 0}]}' >bad.json
printf '{"input": [1, 28, 28], "layers": [' >broken.json
printf 'epoch,step\n1,2\n' >notmetrics.csv

# bad NAME PATTERN ARGS...: clgrad ARGS fails cleanly, one stderr line containing PATTERN.
# RUN_PATH: the PATH clgrad runs with (to hide gnuplot).
bad() {
    name=$1 pattern=$2
    shift 2
    rc=0
    env PATH="${RUN_PATH:-$PATH}" "$CLGRAD" "$@" >"$name.out" 2>"$name.err" || rc=$?
    [ $rc -ne 0 ] || fail "$name: clgrad $* succeeded"
    [ $rc -lt 126 ] || fail "$name: clgrad $* crashed (exit $rc): $(cat "$name.err")"
    [ "$(wc -l <"$name.err")" -eq 1 ] || fail "$name: want one line on stderr, got: $(cat "$name.err")"
    grep -qF -- "$pattern" "$name.err" || fail "$name: no \"$pattern\" in: $(cat "$name.err")"
}
NODEV=no-such-device-anywhere

bad t1 "give a MODEL file" train
bad t2 "unknown option --bogus" train m.json --bogus
bad t3 "option --epochs needs a value" train m.json --epochs
bad t4 "--epochs must be an integer" train m.json --epochs two
bad t5 "missing.json: cannot open the model file" train missing.json --data "$T/data"
bad t6 "bad.json:2:52: layers[0].kernel: must be an integer in [1, 1024]" train bad.json --data "$T/data"
bad t7 "broken.json:1:" train broken.json --data "$T/data"
bad t8 "no data: give --data" train m.json
bad t9 "/nonexistent: no such file" train m.json --data /nonexistent
bad t10 "$NODEV" train m.json --data "$T/data" --device $NODEV
# a run whose loss diverges to NaN (no ReLU to stop the growth at lr 100) fails, unsaved
cat >nan.json <<'JSON'
{"input": [1, 28, 28],
 "layers": ["flatten", {"type": "linear", "out": 32}, {"type": "linear", "out": 10}],
 "optimizer": {"type": "sgd", "lr": 100, "momentum": 0.9},
 "train": {"epochs": 3, "batch": 32}}
JSON
bad t11 "the training loss became NaN in epoch 1" train nan.json --data "$T/data" --steps 16 --out nan.ckpt
[ ! -e nan.ckpt ] || fail "t11: a diverged run wrote its checkpoint"
# an exact resume with another batch size, seed or learning rate is refused
bad t12 "trained with batch" train m.json --data "$T/data" --steps 1 --resume good.ckpt --batch 7 --out r.ckpt
bad t13 "trained with seed" train m.json --data "$T/data" --steps 1 --resume good.ckpt --seed 99 --out r.ckpt
bad t14 "trained with lr 0.003, this run has 0.5" train m.json --data "$T/data" --steps 1 --resume good.ckpt --lr 0.5 --out r.ckpt
bad t11 "truncated.ckpt" train m.json --data "$T/data" --resume truncated.ckpt
bad t12 "text.ckpt" train m.json --data "$T/data" --init text.ckpt
bad t13 "--freeze: no layer \"nope\" (layers: 0, 1, 2, 3, head)" train m.json --data "$T/data" --freeze nope
bad t14 "--init and --resume do not go together" train m.json --init good.ckpt --resume good.ckpt
bad t15 "no t10k-images-idx3-ubyte" train m.json --data "$T/data" --test-data "$T"
bad t16 "--lr must be a number" train m.json --lr -1

# a checkpoint whose epoch counter passes 2^31 (the reader takes counters up to 2^53):
# nothing to train, at once, rather than epochs counted negative for ever
# meta SRC DST KEY VALUE: a copy of checkpoint SRC with one metadata value changed
meta() {
    "$PY" - "$@" <<'PY' || fail "cannot make $2"
import json, struct, sys
src, dst, key, value = sys.argv[1:5]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h["__metadata__"][key] = value
t = json.dumps(h).encode()
t += b" " * (-len(t) % 8)
open(dst, "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
}
meta good.ckpt huge_epoch.ckpt train.epoch 2147483648
timeout 120 "$CLGRAD" train m.json --data "$T/data" --resume huge_epoch.ckpt --out he.ckpt >he.out 2>&1 ||
    fail "he: resume at epoch 2^31: $(cat he.out)"
grep -qF "the checkpoint is at epoch 2147483648 of" he.out || fail "he: $(cat he.out)"
grep -q "^epoch -" he.out && fail "he: negative epochs: $(cat he.out)"

# two runs sharing --out and --metrics: the second is refused while the first lives (both
# succeeded, leaving a CSV of both runs' rows beside one run's checkpoint); a lock left
# by a killed run does not stop the next
"$CLGRAD" train m.json --data "$T/data" --epochs 5 --out shared.ckpt --metrics shared.csv >w1.out 2>&1 &
w1=$!
i=0
while [ ! -s shared.ckpt.lock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
bad w2 "--out shared.ckpt: another run (process $w1) is writing it" train m.json --data "$T/data" --epochs 1 --out shared.ckpt
bad w3 "--metrics shared.csv: another run (process $w1) is writing it" train m.json --data "$T/data" --epochs 1 --metrics shared.csv
wait $w1 || fail "w1: the first run failed: $(cat w1.out)"
[ ! -e shared.ckpt.lock ] || fail "w1: its lock file stayed"
echo 12345 >stale.ckpt.lock
ok w4 train m.json --data "$T/data" --epochs 1 --steps 1 --out stale.ckpt

# counters and numbers of a checkpoint, and paths, named for what they are
meta good.ckpt far_batch.ckpt train.batch 99999999
bad t20 "--resume far_batch.ckpt: it stopped at batch 99999999 of epoch" train m.json --data "$T/data" --resume far_batch.ckpt
meta good.ckpt step_overflow.ckpt train.step 99999999999999999999
bad t21 "\"train.step\" is \"99999999999999999999\", not an integer of at most 2^53 (it overflows 64 bits)" train m.json --data "$T/data" --resume step_overflow.ckpt
meta good.ckpt tiny_scale.ckpt train.loss_scale 1e-320
meta tiny_scale.ckpt tiny_scale.ckpt train.loss_scale_growth 0
bad t22 "trained with loss scaling, this run has none" train m.json --data "$T/data" --resume tiny_scale.ckpt
meta good.ckpt bad_model.ckpt model '{"input": [1, 28, 28],
 "layers": [{"type": "linear", "out": 0}]}'
bad t25 "bad_model.ckpt (its model description):2:39: layers[0].out" train m.json --data "$T/data" --resume bad_model.ckpt
bad e12 "bad_model.ckpt (its model description):2:39: layers[0].out" eval bad_model.ckpt
ln -sf loop_b loop_a && ln -sf loop_a loop_b
bad t23 "loop_a: a loop of symbolic links" train m.json --data loop_a
bad t24 "--data: the path is over 1000 bytes" train m.json --data "$(printf '%01100d' 0)"

# outputs that cannot be written are found before training starts, not after an epoch
bad t18 "--out /nonexistent/dir/o.ckpt: cannot write in /nonexistent/dir" train m.json --data "$T/data" --out /nonexistent/dir/o.ckpt
grep -q "epoch" t18.out && fail "t18: it trained before finding that --out cannot be written: $(cat t18.out)"
mkdir -p adir
bad t19 "--metrics adir: is a directory" train m.json --data "$T/data" --metrics adir

printf 'label,a,b,c,d,e\n1,0,0,0,0,0\n' >tiny.csv
bad t17 "samples of 5 values do not fit the model's input of 784" train m.json --data tiny.csv

bad e1 "give one CKPT" eval
bad e2 "missing.ckpt" eval missing.ckpt
bad e3 "truncated.ckpt" eval truncated.ckpt
bad e4 "text.ckpt" eval text.ckpt
bad e5 "no model description" eval weights.safetensors
bad e6 "$NODEV" eval good.ckpt --device $NODEV
bad e7 "/nonexistent" eval good.ckpt --data /nonexistent
RUN_PATH=/nonexistent bad e8 "cannot run gnuplot: is it installed? (apt-get install gnuplot-nox)" eval good.ckpt --data "$T/data" --confusion-png cm.png
unset RUN_PATH
bad e9 "unknown option --frobnicate" eval good.ckpt --frobnicate
bad e10 "m.json: not a safetensors file: it begins with text ({" eval m.json
grep -qF "(a model file? clgrad train MODEL makes a checkpoint of it)" e10.err || fail "e10: $(cat e10.err)"
bad e11 "truncated.ckpt: not a whole safetensors file (truncated?)" eval truncated.ckpt

bad p1 "give CKPT and INPUT" predict good.ckpt
bad p2 "missing.npy: cannot open the input" predict good.ckpt missing.npy
bad p3 "bad_shape.npy: 15 values do not make samples of the model's input (784 values each)" predict good.ckpt bad_shape.npy
bad p4 "(the input is an .npy or IDX file)" predict good.ckpt m.json
bad p5 "--top must be in [1, 1000]" predict good.ckpt x.npy --top 0
bad p6 "truncated.ckpt" predict truncated.ckpt x.npy
bad p7 "$NODEV" predict good.ckpt x.npy --device $NODEV
bad p8 "nonexistent" predict good.ckpt x.npy --out /nonexistent/dir/p.npy

bad i1 "give one CKPT" info
bad i2 "missing.ckpt" info missing.ckpt
bad i3 "truncated.ckpt" info truncated.ckpt
bad i4 "unknown option --x" info --x good.ckpt

bad l1 "give METRICS.csv and --out FILE.png" plot notmetrics.csv
bad l2 "missing.csv: cannot open the metrics file" plot missing.csv --out x.png
bad l3 "not a metrics file of clgrad train" plot notmetrics.csv --out x.png
RUN_PATH=/nonexistent bad l4 "cannot run gnuplot" plot "$T/good.csv" --out x.png
unset RUN_PATH

bad c1 "unknown command" frobnicate
echo "cli_errors: passed"
