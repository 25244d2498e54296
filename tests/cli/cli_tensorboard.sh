#!/bin/sh
# cli_tensorboard: clgrad train --tensorboard on a small cut of Fashion-MNIST and on a
# few KB of text, read back by TensorBoard's own reader (tests/cli/tb_check.py, with
# the tensorboard package of the tb_venv fixture, $CLG_TB_PYTHON): the same numbers at
# the same steps as the metrics CSV, a point every N steps, the CRCs checked, a resumed
# run's redone steps once each, and a directory that cannot be made failing in one line.
# Usage: cli_tensorboard.sh CLGRAD
. "$(dirname "$0")/common.sh"
cd "$T"
TBPY=${CLG_TB_PYTHON:-}
[ -n "$TBPY" ] && [ -x "$TBPY" ] || fail "no TensorBoard reader: CLG_TB_PYTHON=$TBPY (the tb_venv fixture)"
D="--data $T/data --steps 4"

# the same second's files sort by pid, not in the order they were made: wait for the next
# second when the last file was made in this one
next_second() {
    made=$(ls runs/b | tail -n 1 | cut -d. -f4)
    while [ "$(date +%s)" -le "$made" ]; do sleep 0.2; done
}

# three epochs of 4 steps, a point every 2 steps, in three runs: the first epoch, then
# resumed from its checkpoint to the end, twice; the second resumed run redoes the
# steps whose points the first one's file holds already, and TensorBoard must show each
# step once, as the CSV has each epoch's row once
ok b1 train m.json $D --epochs 1 --out b1.ckpt --metrics b.csv --tensorboard runs/b --tensorboard-every 2
first=runs/b/$(ls runs/b)
next_second
ok b2 train m.json $D --resume b1.ckpt --out b2.ckpt --metrics b.csv --tensorboard runs/b --tensorboard-every 2
next_second
ok b3 train m.json $D --resume b1.ckpt --out b3.ckpt --metrics b.csv --tensorboard runs/b --tensorboard-every 2
[ "$(ls runs/b | wc -l)" -eq 3 ] || fail "runs/b: want a file per run: $(ls runs/b)"
[ "$(wc -l <b.csv)" -eq 4 ] || fail "b.csv: want a header and 3 rows: $(cat b.csv)"

# text: the held-out loss in test_loss, bytes per second; one point per epoch of 4 steps
awk 'BEGIN { for (i = 0; i < 200; i++) print "the cat sat on the mat. a dog ran in the park." }' >corpus.txt
cat >tiny.json <<'JSON'
{"input": [16],
 "layers": [{"type": "embedding", "num": 256, "dim": 8}, {"type": "lstm", "hidden": 16}, {"type": "linear", "out": 256}],
 "optimizer": {"type": "adam", "lr": 0.01},
 "train": {"batch": 4, "epochs": 2, "seed": 3},
 "data": {"text": "corpus.txt", "holdout": 0.1}}
JSON
ok t train tiny.json --steps 4 --metrics t.csv --tensorboard runs/t --tensorboard-every 4

# read back: the points against the CSVs, and the CRCs of the first file
"$TBPY" "$HERE/tb_check.py" curves runs/b b.csv 2 curves runs/t t.csv 4 crc "$first" || fail "tb_check"

# errors: one line naming the directory, no training; --tensorboard-every alone or negative
: >plain
! "$CLGRAD" train m.json $D --tensorboard plain/runs >e1.out 2>&1 || fail "e1: trained with --tensorboard under a file"
grep -qF "plain/runs: cannot create the directory" e1.out || fail "e1: $(cat e1.out)"
[ "$(wc -l <e1.out)" -eq 1 ] || fail "e1: want one line: $(cat e1.out)"
! "$CLGRAD" train m.json $D --tensorboard-every 5 >e2.out 2>&1 || fail "e2: --tensorboard-every without --tensorboard"
grep -qF -- "--tensorboard-every needs --tensorboard DIR" e2.out || fail "e2: $(cat e2.out)"
! "$CLGRAD" train m.json $D --tensorboard runs/e --tensorboard-every -1 >e3.out 2>&1 || fail "e3: --tensorboard-every -1"
grep -qF -- "--tensorboard-every must be an integer >= 0" e3.out || fail "e3: $(cat e3.out)"
echo "cli_tensorboard: ok"
