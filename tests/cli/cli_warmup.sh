#!/bin/sh
# cli_warmup: `clgrad warmup` stores what a model's training and evaluation build in
# clgrad's program cache, whatever the device's binary_cache default (off on POCL);
# a second warmup then compiles nothing; a later run loads its programs from the cache.
# Usage: cli_warmup.sh CLGRAD
. "$(dirname "$0")/common.sh"
cd "$T"
export CLG_CACHE_DIR="$T/cache"
# A linear model: on POCL a warmup compiles every kernel of each program it stores, and
# the CLI tests' MLP (dropout, Adam: 12 programs) took 52 s of it, this one 29 s (10).
cat >w.json <<'JSON'
{"input": [1, 28, 28], "layers": ["flatten", {"type": "linear", "out": 10}],
 "optimizer": {"type": "sgd", "lr": 0.1}, "train": {"batch": 64, "epochs": 1, "seed": 5, "workers": 1},
 "data": {"scale": 0.00392156862745098}}
JSON
ok first warmup w.json
has first "programs compiled and stored, 0 already cached"
built=$(sed -n 's/^\([0-9][0-9]*\) programs compiled and stored.*/\1/p' first.out)
[ "${built:-0}" -ge 3 ] || fail "first: want the programs of a training step compiled, got: $(cat first.out)"
stored=$(find cache -name '*.bin' | wc -l)
[ "$stored" -ge "$built" ] || fail "first: $built programs built but $stored entries in the cache"
ok second warmup w.json
# Nothing compiled; maybe fewer loaded than the first built: a device whose GEMM engine is
# chosen by timing (gemm=tune) built the candidates only the first time.
has second "0 programs compiled and stored, "
cached=$(sed -n 's/^0 programs compiled and stored, \([0-9][0-9]*\) already cached.*/\1/p' second.out)
[ "${cached:-0}" -ge 3 ] && [ "$cached" -le "$built" ] || fail "second: $(cat second.out)"
# A training run afterwards finds them all (its own extra programs, if any, aside).
ok train train w.json --data "$T/data" --epochs 1 --steps 2
[ "$(find cache -name '*.bin' | wc -l)" -ge "$stored" ] || fail "train: cache entries went missing"
# Without a cache there is nothing to warm: an error, not a silent success.
rc=0
CLG_CACHE_DIR=off "$CLGRAD" warmup w.json >off.out 2>off.err || rc=$?
[ $rc -ne 0 ] || fail "off: warmup with CLG_CACHE_DIR=off succeeded"
grep -qF "nothing stored" off.out || fail "off: no \"nothing stored\" in: $(cat off.out off.err)"
rc=0
"$CLGRAD" warmup >none.out 2>none.err || rc=$?
[ $rc -ne 0 ] && grep -qF "MODEL" none.err || fail "none: want a usage error, got $rc: $(cat none.err)"
echo "cli_warmup: ok ($built programs)"
