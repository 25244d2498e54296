"""tb_check: `clgrad train --tensorboard` output read back by TensorBoard's own reader
(the tensorboard package, tests/io/tb_venv.sh), against the run's metrics CSV.

  tb_check.py CHECK...   each of:
    curves LOGDIR METRICS.csv EVERY   the points equal the CSV's rows, once each
    crc FILE                          the reader checks the CRCs: a flipped byte costs
                                      the record it is in
"""
import csv
import math
import os
import shutil
import sys
import tempfile

from tensorboard.backend.event_processing import event_file_loader
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

COLUMNS = ["train_loss", "train_acc", "test_loss", "test_acc", "images_per_sec", "lr"]


def fail(msg):
    sys.exit("FAIL: tb_check: " + msg)


def close(a, b, rel=2e-5):
    """float32 in the event file against %.6g in the CSV."""
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def scalars(logdir):
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0}).Reload()   # 0: keep every point
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


def curves(logdir, metrics, every):
    rows = list(csv.DictReader(open(metrics)))
    got = scalars(logdir)
    steps = [int(r["step"]) for r in rows]
    for col in ["epoch"] + COLUMNS:
        tag = "epoch/" + col
        want = [(int(r["step"]), float(r[col])) for r in rows if r[col] != ""]
        have = got.get(tag, [])
        if [s for s, _ in have] != [s for s, _ in want]:   # a step twice: a resume's redone points kept
            fail("%s at steps %s, the CSV's rows at %s" % (tag, [s for s, _ in have], [s for s, _ in want]))
        for (s, v), (_, w) in zip(have, want):
            if not close(v, w):
                fail("%s at step %d is %r, the CSV says %r" % (tag, s, v, w))
    points = {t: got.get("train/" + t, []) for t in ("loss", "accuracy", "throughput", "lr")}
    want_steps = list(range(every, steps[-1] + 1, every))
    for t, p in points.items():
        if [s for s, _ in p] != want_steps:
            fail("train/%s at steps %s, want every %d: %s" % (t, [s for s, _ in p], every, want_steps))
    # the points of an epoch whose windows cover it (equal windows: full batches) average
    # to its row; each point's lr is its epoch's
    start = 0
    for r, end in zip(rows, steps):
        inside = [i for i, s in enumerate(want_steps) if start < s <= end]
        if start % every == 0 and end % every == 0 and inside:
            for t, col in (("loss", "train_loss"), ("accuracy", "train_acc")):
                mean = sum(points[t][i][1] for i in inside) / len(inside)
                if not close(mean, float(r[col]), 1e-4):
                    fail("train/%s over epoch %s averages %r, its row says %r" % (t, r["epoch"], mean, r[col]))
        for i in inside:
            if not close(points["lr"][i][1], float(r["lr"])):
                fail("train/lr at step %d is %r, epoch %s's lr %s" % (want_steps[i], points["lr"][i][1], r["epoch"], r["lr"]))
            if not (points["throughput"][i][1] > 0 and math.isfinite(points["throughput"][i][1])):
                fail("train/throughput at step %d is %r" % (want_steps[i], points["throughput"][i][1]))
        start = end
    n = sum(len(v) for v in got.values())
    print("tb_check curves: %d points of %d tags at steps %d..%d, as the CSV" % (n, len(got), min(steps), steps[-1]))


def records(data):
    """The framing walked by hand, each CRC checked with TensorBoard's masked_crc32c."""
    at, out = 0, []
    while at < len(data):
        n = int.from_bytes(data[at:at + 8], "little")
        if int.from_bytes(data[at + 8:at + 12], "little") != masked_crc32c(data[at:at + 8]):
            fail("record at byte %d: its length's CRC" % at)
        body = data[at + 12:at + 12 + n]
        if int.from_bytes(data[at + 12 + n:at + 16 + n], "little") != masked_crc32c(body):
            fail("record at byte %d: its data's CRC" % at)
        out.append((at, n))
        at += 16 + n
    return out


def load(path):
    return list(event_file_loader.EventFileLoader(path).Load())


def crc(path):
    data = open(path, "rb").read()
    recs = records(data)
    events = load(path)
    if len(events) != len(recs) or events[0].file_version != "brain.Event:2":
        fail("the reader gave %d events of %d records" % (len(events), len(recs)))
    tmp = tempfile.mkdtemp()
    try:
        # a byte of the last record's data, then a byte of the first record's length
        for what, pos, want in (("data", recs[-1][0] + 12 + recs[-1][1] // 2, len(recs) - 1),
                                ("length", 0, 0)):
            bad = bytearray(data)
            bad[pos] ^= 0x01
            path = os.path.join(tmp, "events.out.tfevents.bad")
            open(path, "wb").write(bad)
            got = len(load(path))
            if got != want:
                fail("a byte flipped in a record's %s: the reader gave %d events, want %d" % (what, got, want))
    finally:
        shutil.rmtree(tmp)
    print("tb_check crc: %d records, CRCs as TensorBoard computes them; a flipped byte loses its record" % len(recs))


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    while args:
        if args[0] == "curves" and len(args) >= 4:
            curves(args[1], args[2], int(args[3]))
            args = args[4:]
        elif args[0] == "crc" and len(args) >= 2:
            crc(args[1])
            args = args[2:]
        else:
            sys.exit(__doc__)
