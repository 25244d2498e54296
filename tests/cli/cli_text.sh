#!/bin/sh
# cli_text: clgrad train, eval, sample, info and warmup on text: a tiny character model
# (embedding, LSTM, linear) learns a few KB of generated sentences; its loss falls, the
# held-out and whole-file losses are below ln 256 (knowing nothing), a resumed run ends
# bit for bit where a straight one does, sampling gives exactly --length bytes and the
# same bytes for the same seed, top-k 1 and a tiny top-p the most likely bytes; and every misuse fails with one line. Usage: cli_text.sh CLGRAD
CLI_DATA=none
. "$(dirname "$0")/common.sh"
same_gemm_in_graphs   # --graph runs are compared with eager ones bit for bit
cd "$T"

# The twin cli_text_steps (CLI_STEPS set) takes a third of the text, a third of the
# whole-file evaluation and samples of 20 bytes rather than 50: evaluations and samples
# step the LSTM a byte at a time, 0.6 ms a launch on rusticl (where only the twin runs).
if [ -n "${CLI_STEPS:-}" ]; then lines=100 part=200 len=20 glen=20; else lines=300 part=600 len=50 glen=40; fi
# ~7 KB (or 2): a few sentences in a shuffled order (a fixed one), so that bytes follow
# bytes predictably within words and less so between sentences.
awk -v n=$lines 'BEGIN { split("the cat sat on the mat.|a dog ran in the park.|the sun is hot today.|we like to read books.", s, "|");
             x = 7; for (i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648; print s[1 + int(x / 65536) % 4] } }' >corpus.txt
cat >tiny.json <<'JSON'
{"comment": "a tiny character model",
 "input": [16],
 "layers": [{"type": "embedding", "num": 256, "dim": 8}, {"type": "lstm", "hidden": 32},
            {"type": "linear", "out": 256}],
 "optimizer": {"type": "adam", "lr": 0.01, "clip_grad_norm": 5},
 "train": {"batch": 4, "epochs": 2, "seed": 3},
 "data": {"text": "corpus.txt", "holdout": 0.1}}
JSON
printf '{"input": [4], "layers": [{"type": "linear", "out": 3}], "train": {"batch": 2}}' >samples.json
printf 'label,a,b,c,d\n0,1,2,3,4\n1,4,3,2,1\n2,0,0,1,1\n' >small.csv

# bits NAME: the loss after "KEY " on the line matching PATTERN is finite and below ln 256.
below_ln256() {
    "$PY" -c "import math, sys; v = float(sys.argv[1]); sys.exit(0 if math.isfinite(v) and v < math.log(256) else 1)" "$2" ||
        fail "$1: loss $2 is not below ln 256 = 5.545"
}

# Every training run takes 16 of an epoch's 96 windows (--steps), or CLI_STEPS (8 of 32
# in the twin cli_text_steps, which rusticl runs): on rusticl a window step of the tiny
# LSTM takes a third of a second, and what the runs check (the loss falls, 5.55 to 3.96 in
# the first epoch at 16 steps; exact resumes; graph replay) needs no more.
S="--steps ${CLI_STEPS:-16}"
# two epochs straight through, with metrics; the running loss falls within the first epoch
ok a train tiny.json --out a.ckpt --metrics a.csv $S
has a "data: text corpus.txt: "
has a "input [16] tokens, 3 layers"
has a "epoch 2/2: train loss"
has a "held-out loss"
first=$(sed -n 's/^epoch 1\/2 step [0-9]*\/[0-9]*  loss \([0-9.]*\) .*/\1/p' a.out | head -n 1)
last=$(sed -n 's/^epoch 1\/2: train loss \([0-9.]*\) .*/\1/p' a.out)
"$PY" -c "import sys; sys.exit(0 if float(sys.argv[2]) < float(sys.argv[1]) - 0.3 else 1)" "$first" "$last" ||
    fail "a: the loss did not fall in the first epoch ($first, then $last)"
held=$(sed -n 's/^epoch 2\/2: .* held-out loss \([0-9.]*\) .*/\1/p' a.out)
below_ln256 a "$held"
[ "$(wc -l <a.csv)" -eq 3 ] || fail "a.csv: want a header and 2 rows"

# one epoch, then resumed in a new process: the same weights as the straight run
ok b train tiny.json --epochs 1 --out b.ckpt $S
ok c train tiny.json --resume b.ckpt --out c.ckpt $S
has c "resumed from b.ckpt: epoch 2, batch 0"
"$PY" "$HERE/st_compare.py" a.ckpt c.ckpt same || fail "the resumed text run differs from the straight one"

# the window step captured as a graph and replayed, the LSTM's state carried in place
# between windows and zeroed at each epoch: the same weights as the eager run
ok ga train tiny.json --out ga.ckpt --graph $S
"$PY" "$HERE/st_compare.py" a.ckpt ga.ckpt same || fail "the text run replayed as a graph differs from the eager one"

# eval: the held-out tail by default, a whole file with --data text:
ok e1 eval a.ckpt
has e1 "(held out in training)"
below_ln256 e1 "$(sed -n 's/^bytes [0-9]* | loss \([0-9.]*\) | .* bits per byte$/\1/p' e1.out)"
[ "$(sed -n 's/^bytes \([0-9]*\) | .*/\1/p' e1.out)" -eq $(( $(wc -c <corpus.txt) / 10 - 1 )) ] ||
    fail "e1: want every held-out byte but the first predicted: $(cat e1.out)"
head -c $part corpus.txt >part.txt
ok e2 eval a.ckpt --data text:part.txt
has e2 "bytes $((part - 1)) | loss "
below_ln256 e2 "$(sed -n 's/^bytes [0-9]* | loss \([0-9.]*\) | .*/\1/p' e2.out)"

# eval --streams and --eval-steps: 4 streams of 2 windows of 16 bytes (and the byte after
# the last: 33 bytes each), 4 x 32 bytes predicted; an empty text names itself
ok e6 eval a.ckpt --data text:part.txt --streams 4 --eval-steps 2
has e6 "bytes 128 | loss "
has e6 "(the first --eval-steps windows of each stream)"
# a large corpus (200 MB, sparse: no disk used) in a smoke run: --steps caps the held-out
# evaluation too (20 MB of it took minutes, silently), and the file is mapped, not copied
truncate -s 200M big.txt
head -c 4000 corpus.txt | dd of=big.txt conv=notrunc 2>/dev/null
timeout 120 "$CLGRAD" train tiny.json --data text:big.txt --epochs 1 --steps 2 >big.out 2>&1 ||
    fail "big: a smoke run on a large text did not finish in 2 minutes: $(tail -3 big.out)"
has big "held-out loss"
rm -f big.txt

# sample: exactly --length bytes, the same for the same seed, others for another
ok s1 sample a.ckpt --length $len --seed 1
ok s2 sample a.ckpt --length $len --seed 1
ok s3 sample a.ckpt --length $len --seed 2 --prime "the " --temperature 0.5
[ "$(wc -c <s1.out)" -eq $len ] || fail "s1: want $len bytes, got $(wc -c <s1.out)"
cmp -s s1.out s2.out || fail "sample: the same seed gave other text"
! cmp -s s1.out s3.out || fail "sample: another seed and prime gave the same text"
ok s4 sample a.ckpt --length 20 --temperature 0
[ "$(wc -c <s4.out)" -eq 20 ] || fail "s4: want 20 bytes"
# top-k 1 and a tiny top-p leave only the most likely byte: the text of temperature 0;
# top-k and top-p together give the same text for the same seed
ok s10 sample a.ckpt --length 20 --top-k 1 --seed 4
ok s11 sample a.ckpt --length 20 --top-p 0.000001 --temperature 2 --seed 5
cmp -s s4.out s10.out || fail "sample --top-k 1: not the most likely bytes (temperature 0's)"
cmp -s s4.out s11.out || fail "sample --top-p 0.000001: not the most likely bytes (temperature 0's)"
ok s12 sample a.ckpt --length $len --top-k 5 --top-p 0.9 --seed 6
ok s13 sample a.ckpt --length $len --top-k 5 --top-p 0.9 --seed 6
[ "$(wc -c <s12.out)" -eq $len ] || fail "s12: want $len bytes"
cmp -s s12.out s13.out || fail "sample --top-k --top-p: the same seed gave other text"

# info: the layers and the text settings
ok i info a.ckpt
has i "1            lstm               [16, 32]"
has i "gradient norm clipped to 5"
has i "data: text corpus.txt, the last 0.1 held out"

# bad NAME PATTERN ARGS...: clgrad fails cleanly, with one stderr line containing PATTERN.
bad() {
    name=$1 pattern=$2
    shift 2
    rc=0
    "$CLGRAD" "$@" >"$name.out" 2>"$name.err" || rc=$?
    [ $rc -ne 0 ] || fail "$name: clgrad $* succeeded"
    [ $rc -lt 126 ] || fail "$name: clgrad $* crashed (exit $rc): $(cat "$name.err")"
    [ "$(wc -l <"$name.err")" -eq 1 ] || fail "$name: want one line on stderr, got: $(cat "$name.err")"
    grep -qF -- "$pattern" "$name.err" || fail "$name: no \"$pattern\" in: $(cat "$name.err")"
}
: >empty.txt
bad e4 "empty.txt: 0 bytes: no byte to predict" eval a.ckpt --data text:empty.txt
bad e5 "--streams must be an integer in [1, 65536]" eval a.ckpt --data text:part.txt --streams 0
printf 'too short' >short.txt
ok img train samples.json --data small.csv --steps 1 --out img.ckpt
bad t1 "/nonexistent: no such file or directory" train tiny.json --data text:/nonexistent
bad t2 "samples.json: the model does not take tokens" train samples.json --data text:corpus.txt
bad t3 "the model takes tokens (its first layer is an embedding): give --data text:" train tiny.json --data small.csv
bad t4 "short.txt: 9 bytes to train on make no window" train tiny.json --data text:short.txt
bad t5 "--test-data does not go with text" train tiny.json --test-data small.csv
bad e3 "/nonexistent: no such file or directory" eval a.ckpt --data text:/nonexistent
bad e4 "img.ckpt: the model does not take tokens" eval img.ckpt --data text:corpus.txt
bad e5 "the model takes tokens (its first layer is an embedding): give --data text:" eval a.ckpt --data small.csv
bad s5 "--prime needs at least one byte" sample a.ckpt --prime ""
bad s6 "--temperature must be a number in [0, 100]" sample a.ckpt --temperature -1
bad s14 "--top-k must be an integer in [0, 256]" sample a.ckpt --top-k 257
bad s15 "--top-k must be an integer in [0, 256]" sample a.ckpt --top-k -1
bad s16 "--top-p must be a number in (0, 1]" sample a.ckpt --top-p 0
bad s17 "--top-p must be a number in (0, 1]" sample a.ckpt --top-p 1.5
bad s7 "img.ckpt: not a model of text to sample from: the model does not take tokens" sample img.ckpt
bad s8 "missing.ckpt" sample missing.ckpt
bad s9 "give one CKPT" sample
bad p1 "a.ckpt: the model takes tokens, not samples" predict a.ckpt small.csv
ok h sample --help
has h "Usage: clgrad sample"

# a tiny GPT from a model file (a step schedule, tied embedding): its loss falls, the
# held-out loss is below ln 256, it samples exactly --length bytes, the same for a seed
cat >gpt.json <<'JSON'
{"input": [16],
 "layers": [{"type": "gpt", "context": 16, "layers": 1, "heads": 2, "dim": 16}],
 "optimizer": {"type": "adamw", "lr": 0.01, "schedule": "cosine:30,warmup:5", "schedule_unit": "step",
               "clip_grad_norm": 1},
 "train": {"batch": 4, "epochs": 1, "seed": 3},
 "data": {"text": "corpus.txt", "holdout": 0.1}}
JSON
ok g train gpt.json --out g.ckpt --steps 30
has g "epoch 1/1: train loss"
gfirst=$(sed -n 's/^epoch 1\/1 step [0-9]*\/[0-9]*  loss \([0-9.]*\) .*/\1/p' g.out | head -n 1)
glast=$(sed -n 's/^epoch 1\/1: train loss \([0-9.]*\) .*/\1/p' g.out)
"$PY" -c "import sys; sys.exit(0 if float(sys.argv[2]) < float(sys.argv[1]) - 0.5 else 1)" "$gfirst" "$glast" ||
    fail "g: the GPT's loss did not fall ($gfirst, then $glast)"
below_ln256 g "$(sed -n 's/^epoch 1\/1: .* held-out loss \([0-9.]*\) .*/\1/p' g.out)"
ok gs1 sample g.ckpt --prime 'the ' --length $glen --seed 5 --top-k 10
ok gs2 sample g.ckpt --prime 'the ' --length $glen --seed 5 --top-k 10
cmp -s gs1.out gs2.out || fail "the GPT's samples differ for one seed"
[ "$(wc -c <gs1.out)" -eq $glen ] || fail "gs1: want $glen bytes, got $(wc -c <gs1.out)"
# its weights as nanoGPT names them (no layer prefix: a GPT's own state dict) start a run
# with --init: they load into the gpt layer, all of them
"$PY" -c "
import sys; sys.path.insert(0, sys.argv[1]); import st
t, m = st.load('g.ckpt'); st.save('nano.safetensors', {k[2:]: v for k, v in t.items() if k.startswith('0.')}, {})
print(sum(1 for k in t if k.startswith('0.')))" "$HERE/../io" >nano.count || fail "cannot write nanoGPT's names"
ok gi train gpt.json --init nano.safetensors --steps 1 --out gi.ckpt
has gi "init: $(cat nano.count) tensors loaded into layer 0 from nano.safetensors"
echo "cli_text: passed"
