#!/bin/sh
# cli_train: clgrad train, resume, eval, predict, info and plot end to end on a small
# cut of Fashion-MNIST (tests/cli/make_data.py). Usage: cli_train.sh CLGRAD
. "$(dirname "$0")/common.sh"
same_gemm_in_graphs   # --graph runs are compared with eager ones bit for bit
cd "$T"
D="--data $T/data --steps 4"

# three epochs straight through, with metrics
ok a train m.json $D --out a.ckpt --metrics a.csv
has a "epoch 3/3: train loss"
has a "test accuracy:"
[ "$(wc -l <a.csv)" -eq 4 ] || fail "a.csv: want a header and 3 rows"

# one epoch, then resumed in a new process: the same tensors, bit for bit
ok b train m.json $D --epochs 1 --out b.ckpt
ok c train m.json $D --resume b.ckpt --out c.ckpt
has c "resumed from b.ckpt: epoch 2, batch 0, step 4"
# resuming a finished run trains nothing, and still writes --out
ok f1 train m.json $D --resume c.ckpt --out f1.ckpt
has f1 "nothing to train"
[ -s f1.ckpt ] || fail "f1: said checkpoint: f1.ckpt without writing it"
# a row whose epoch's checkpoint never landed (killed in between) is redone once, not twice
ok g1 train m.json $D --epochs 1 --out g.ckpt --metrics g.csv
tail -n 1 g.csv | sed 's/^1,/2,/' >>g.csv   # epoch 2's row, written before a kill
ok g2 train m.json $D --epochs 2 --resume g.ckpt --out g2.ckpt --metrics g.csv
[ "$(cut -d, -f1 g.csv | tr '\n' ' ')" = "epoch 1 2 " ] || fail "g.csv: want one row per epoch: $(cat g.csv)"
"$PY" "$HERE/st_compare.py" a.ckpt c.ckpt same || fail "the resumed run differs from the straight one"
# the step captured as a graph and replayed (--graph), resumed too: the same tensors
ok ga train m.json $D --epochs 1 --out ga.ckpt --graph
ok gc train m.json $D --resume ga.ckpt --out gc.ckpt --graph
"$PY" "$HERE/st_compare.py" a.ckpt gc.ckpt same || fail "the run replayed as a graph differs from the eager one"
# mixed precision (float16 products, the loss scaled): resumed bit for bit, the loss
# scale with it; not the float32 weights; a resume in another precision is refused
ok ma train m.json $D --out ma.ckpt --precision mixed
ok mb train m.json $D --epochs 1 --out mb.ckpt --precision mixed
ok mc train m.json $D --resume mb.ckpt --out mc.ckpt --precision mixed
"$PY" "$HERE/st_compare.py" ma.ckpt mc.ckpt same || fail "the resumed mixed-precision run differs from the straight one"
"$PY" "$HERE/st_compare.py" a.ckpt ma.ckpt differ '(1|head)\.(weight|bias)' || fail "mixed precision gave float32's weights"
ok mi info mc.ckpt
has mi "loss scale: "
has mi "precision mixed"
! "$CLGRAD" train m.json $D --resume mb.ckpt --out mr.ckpt >mr.out 2>&1 || fail "mr: resumed in another precision"
grep -qF "trained with precision mixed" mr.out || fail "mr: $(cat mr.out)"
ok mf train m.json $D --epochs 1 --out mf.ckpt --precision mixed-bf16 --graph
# control: another seed gives other weights, so the comparison can tell
ok d train m.json $D --seed 6 --out d.ckpt
"$PY" "$HERE/st_compare.py" a.ckpt d.ckpt differ '(1|head)\.(weight|bias)' || fail "another seed, the same weights"

# eval, with the confusion matrix as text and as a picture
ok e eval c.ckpt --data "$T/data" --confusion-png cm.png
has e "samples 256 | loss"
has e "per class:"
has e "Ankle boot"
has e "confusion matrix (rows: true class, columns: predicted):"
png cm.png

# predict: .npy and IDX inputs, logits read back by NumPy; the same images, the same logits
ok p1 predict c.ckpt x.npy --out p1.npy
ok p2 predict c.ckpt x.idx --out p2.npy
ok p3 predict c.ckpt one.npy --out p3.npy
# one [28, 28] image is one sample of a [1, 28, 28] model; floats already in [0, 1] are
# refused (they would be scaled twice), and taken with --scaled
ok p5 predict c.ckpt one2d.npy --out p5.npy
! "$CLGRAD" predict c.ckpt scaled.npy >p6.out 2>&1 || fail "p6: predict took already scaled floats"
grep -qF "give raw values, or --scaled if these are already scaled" p6.out || fail "p6: $(cat p6.out)"
ok p7 predict c.ckpt scaled.npy --scaled --out p7.npy
"$PY" - <<'PY' || fail "predict's logits"
import numpy as np
a, b, c = np.load("p1.npy"), np.load("p2.npy"), np.load("p3.npy")
assert a.shape == (5, 10) and b.shape == (7, 10) and c.shape == (1, 10), (a.shape, b.shape, c.shape)
assert a.dtype == np.float32 and np.isfinite(a).all() and a.std() > 0
assert np.array_equal(a, b[:5]), "npy and IDX inputs give other logits"
assert np.array_equal(c[0], a[0]), "a float sample gives other logits than its bytes"
d, e = np.load("p5.npy"), np.load("p7.npy")
assert d.shape == (1, 10) and np.array_equal(d[0], a[0]), "a [28, 28] image gives other logits"
assert e.shape == (5, 10) and np.allclose(e, a, rtol=1e-4, atol=1e-4), "scaled inputs with --scaled: other logits"
PY
ok p4 predict c.ckpt x.npy --top 2
[ "$(grep -c '^[0-4]: [0-9] .*%), [0-9] .*%)$' p4.out)" -eq 5 ] || fail "predict --top 2: $(cat p4.out)"

# info: layers, shapes, parameters, state
ok i info c.ckpt
has i "model: input [1, 28, 28], 5 layers, 25450 parameters"
has i "head         linear             [10]                      330"
has i "step 12 | next epoch 4, batch 0 | adam lr"
has i "schedule step:1:0.5"

# plot
ok l plot a.csv --out curves.png
has l "3 epochs plotted"
png curves.png

# a CSV file; fine-tuning from c.ckpt with layer 1 frozen
ok s train m.json --data small.csv --epochs 1 --steps 2
has s "no test set"
ok f train m.json --data small.csv --test-data small.csv --epochs 1 --steps 3 --init c.ckpt --freeze 1 --out f.ckpt
has f "init: 4 tensors loaded from c.ckpt"
has f "frozen: 1 (330 of 25450 parameters train)"
has f "test loss"
"$PY" "$HERE/st_compare.py" c.ckpt f.ckpt same '1\..*' || fail "the frozen layer moved"
"$PY" "$HERE/st_compare.py" c.ckpt f.ckpt differ 'head\..*' || fail "the head did not train"
# --help everywhere
for c in train eval predict info plot; do
    ok "help_$c" "$c" --help
    has "help_$c" "Usage: clgrad $c"
done
echo "cli_train: passed"
