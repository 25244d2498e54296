"""PyTorch 1.13 reference for clgrad's character-level language model ("char_lstm"):
the same corpus, batches, model, optimizer and held-out loss, so that clgrad's numbers
(loss after a time budget, training throughput, a checkpoint's held-out loss) have a
twin to stand beside.

    python3 bench/torch_char_lm.py --minutes 5,20 [--eval-every S] [--save-state PATH]
    python3 bench/torch_char_lm.py --seconds 20                  (a smoke run)
    python3 bench/torch_char_lm.py --throughput [--steps 20] [--repeats R]
    python3 bench/torch_char_lm.py --load-state PATH --eval-only
    common: [--cell lstm|gru|rnn] [--seed 1] [--threads 2] [--data PATH] [--heldout-bytes N]

Corpus: every regular file (symlinks skipped) directly in /usr/share/games/fortunes whose
name does not end in ".dat", in byte-wise name order, concatenated; --data names one file
or another directory (same rule). The last twentieth is held out:
split = len(data) - len(data) // 20.

Model: Embedding(256, 64) -> LSTM(64, 256, 2 layers) (or GRU, or tanh RNN) -> Linear(256,
256), bytes as the vocabulary, as nn.Sequential so that the state_dict keys are 0.weight,
1.weight_ih_l0, ..., 2.weight, 2.bias. Adam lr 2e-3, gradient norm clipped to 5, batch 32,
window 128. Training is truncated BPTT: the training bytes cut into 32 contiguous streams,
window w of each stream feeding the next, the state carried (detached) from window to
window and zeroed at each epoch's start.

Held-out loss: the held-out bytes cut the same way into 32 streams, run from a zero state
in windows of 128 (the last one shorter), every byte 1..n-1 of each stream predicted once;
mean nats per byte, and bits (nats / ln 2).

Output lines (space-separated key value pairs after the first word):
    data bytes N files F train N heldout N
    minutes|seconds M steps N chars C heldout_bits X heldout_nats Y train_bits Z
    progress seconds S steps N chars C heldout_bits X heldout_nats Y train_bits Z epoch E
    throughput cell lstm chars_per_s X steps N seconds S
    eval heldout_bits X heldout_nats Y bytes N
    saved PATH format npz|safetensors
    blas <what ran>                 (as torch_train.py; bench/run.py reads it)
train_bits is the mean training loss over the last 100 steps, in bits. The time budgets
count training only: held-out evaluations are left out of them.

At its best on a 2-core machine, as torch_train.py: refblas sets OpenBLAS's core from the
CPU's flags, 2 threads, OMP_WAIT_POLICY=PASSIVE."""
import argparse, collections, json, math, os, struct, time
import refblas  # before NumPy and PyTorch: it sets OpenBLAS's core
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, EMBED, HIDDEN, LAYERS = 256, 64, 256, 2
BATCH, WINDOW = 32, 128
CELLS = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}


def corpus_files(path):
    """The files the corpus is made of: path itself, or the regular non-.dat files
    directly in it, in byte-wise name order (the order clgrad reads them in)."""
    if not os.path.isdir(path):
        return [path]
    names = sorted(os.listdir(path), key=os.fsencode)
    full = [os.path.join(path, n) for n in names if not n.endswith(".dat")]
    return [p for p in full if os.path.isfile(p) and not os.path.islink(p)]


def load_corpus(path):
    files = corpus_files(path)
    data = b"".join(open(p, "rb").read() for p in files)
    return data, len(files)


def streams(data, batch=BATCH):
    """data cut into `batch` equal contiguous rows (the remainder dropped), as int64."""
    n = len(data) // batch
    flat = np.frombuffer(data, dtype=np.uint8)[: n * batch].astype(np.int64)
    return torch.from_numpy(flat.reshape(batch, n))


def carried(cls):
    """A subclass of cls (nn.LSTM/GRU/RNN) whose forward returns only the output and keeps
    the final state, detached, as the next call's initial state: what nn.Sequential needs
    for truncated BPTT. Subclassing, not wrapping, keeps the parameter names (1.weight_ih_l0,
    not 1.rnn.weight_ih_l0) in the state_dict."""
    class Carried(cls):
        state = None  # None: zeros, as at an epoch's start

        def forward(self, x):
            out, state = super().forward(x, self.state)
            self.state = tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()
            return out
    Carried.__name__ = "Carried" + cls.__name__
    return Carried


def make_model(cell):
    rnn = carried(CELLS[cell])(EMBED, HIDDEN, num_layers=LAYERS, batch_first=True)
    return nn.Sequential(nn.Embedding(VOCAB, EMBED), rnn, nn.Linear(HIDDEN, VOCAB))


class Trainer:
    """One training run: the streams, the window position and the optimizer."""

    def __init__(self, model, train):
        self.model, self.rows = model, streams(train)
        self.windows = (self.rows.shape[1] - 1) // WINDOW
        if self.windows < 1:
            raise SystemExit("char_lm: too little training data for one window per stream")
        self.opt = torch.optim.Adam(model.parameters(), lr=2e-3)
        self.w, self.epoch, self.steps = 0, 0, 0
        self.losses = collections.deque(maxlen=100)

    def batch(self):
        """The next window (x, y); a new epoch starts from a zero state."""
        if self.w == self.windows:
            self.w, self.epoch = 0, self.epoch + 1
        if self.w == 0:
            self.model[1].state = None
        lo = self.w * WINDOW
        self.w += 1
        return self.rows[:, lo: lo + WINDOW], self.rows[:, lo + 1: lo + WINDOW + 1]

    def step(self):
        x, y = self.batch()
        self.model.train()
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(x).reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
        self.opt.step()
        self.steps += 1
        self.losses.append(loss.item())

    def train_bits(self):
        return sum(self.losses) / len(self.losses) / math.log(2) if self.losses else float("nan")


def heldout_nats(model, held):
    """Mean nats per predicted byte over the held-out streams, from a zero state; the
    training state is put back afterwards so that training carries on as it was."""
    rows = streams(held)
    n = rows.shape[1]
    if n < 2:
        raise SystemExit("char_lm: too little held-out data (%d bytes)" % len(held))
    saved, model[1].state = model[1].state, None
    model.eval()
    total = 0.0
    with torch.no_grad():
        for lo in range(0, n - 1, WINDOW):  # inputs lo..hi-1, targets lo+1..hi
            hi = min(lo + WINDOW, n - 1)
            logits = model(rows[:, lo:hi])
            total += F.cross_entropy(logits.reshape(-1, VOCAB), rows[:, lo + 1: hi + 1].reshape(-1),
                                     reduction="sum").item()
    model[1].state = saved
    count = rows.shape[0] * (n - 1)
    return total / count, count


def heldout_fields(model, held):
    nats, _ = heldout_nats(model, held)
    return "heldout_bits %.4f heldout_nats %.4f" % (nats / math.log(2), nats)


def parse_marks(text):
    return sorted(float(v) for v in text.split(",") if v.strip())


def train_for(model, train, held, marks, unit, every):
    """Train until the last mark (in `unit`s of training time); evaluate at each mark and,
    every `every` seconds, print progress. Evaluation time is not training time."""
    t = Trainer(model, train)
    scale = 60.0 if unit == "minutes" else 1.0
    pending = list(marks)
    elapsed, next_progress = 0.0, every if every else None
    while pending:
        t0 = time.perf_counter()
        t.step()
        elapsed += time.perf_counter() - t0
        chars = t.steps * BATCH * WINDOW
        if next_progress is not None and elapsed >= next_progress:
            print("progress seconds %.1f steps %d chars %d %s train_bits %.4f epoch %d"
                  % (elapsed, t.steps, chars, heldout_fields(model, held), t.train_bits(), t.epoch), flush=True)
            while next_progress <= elapsed:
                next_progress += every
        while pending and elapsed >= pending[0] * scale:
            print("%s %g steps %d chars %d %s train_bits %.4f"
                  % (unit, pending.pop(0), t.steps, chars, heldout_fields(model, held), t.train_bits()), flush=True)


def throughput(model, train, cell, steps, repeats):
    """Training steps per second, as chars/s: 3 warm-up steps, then `steps` timed ones."""
    t = Trainer(model, train)
    for _ in range(repeats):
        for _ in range(3):
            t.step()
        t0 = time.perf_counter()
        for _ in range(steps):
            t.step()
        sec = time.perf_counter() - t0
        print("throughput cell %s chars_per_s %.1f steps %d seconds %.3f"
              % (cell, steps * BATCH * WINDOW / sec, steps, sec), flush=True)


def save_state(model, path):
    """safetensors where the module is there, else .npz (written to exactly `path`)."""
    tensors = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    try:
        from safetensors.torch import save_file
    except ImportError:
        with open(path, "wb") as f:  # a file object: np.savez would otherwise append .npz
            np.savez(f, **{k: v.numpy() for k, v in tensors.items()})
        return "npz"
    save_file(tensors, path)
    return "safetensors"


# safetensors' dtype names, for reading its files without the module
ST_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16,
             "I64": np.int64, "I32": np.int32, "U8": np.uint8}


def read_safetensors(path):
    """The format is an 8-byte little-endian header length, a JSON header of name ->
    dtype, shape, data_offsets, then the raw little-endian data: simple enough to read
    here, so that a clgrad checkpoint loads where the safetensors module is missing."""
    with open(path, "rb") as f:
        blob = f.read()
    (hlen,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8: 8 + hlen])
    base, out = 8 + hlen, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        arr = np.frombuffer(blob[base + lo: base + hi], dtype=np.dtype(ST_DTYPES[info["dtype"]]).newbyteorder("<"))
        out[name] = torch.from_numpy(arr.astype(arr.dtype.newbyteorder("="), copy=True).reshape(info["shape"]))
    return out


def load_state(model, path):
    """npz (a zip: "PK" first) or safetensors; every key must match the model's."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"PK":
        with np.load(path) as z:
            tensors = {k: torch.from_numpy(z[k].copy()) for k in z.files}
    else:
        tensors = read_safetensors(path)
    model.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=True)


def options():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--minutes", help="training-time budget marks, e.g. 5,20")
    mode.add_argument("--seconds", help="the same in seconds, e.g. 20 (smoke runs)")
    mode.add_argument("--throughput", action="store_true", help="time training steps only")
    mode.add_argument("--eval-only", action="store_true", help="held-out loss of --load-state")
    ap.add_argument("--cell", choices=sorted(CELLS), default="lstm")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default="/usr/share/games/fortunes")
    ap.add_argument("--heldout-bytes", type=int, default=0, help="evaluate only the first N held-out bytes")
    ap.add_argument("--eval-every", type=float, default=0, help="progress line every S training seconds")
    ap.add_argument("--steps", type=int, default=20, help="--throughput: timed steps per repeat")
    ap.add_argument("--repeats", type=int, default=1, help="--throughput: lines printed")
    ap.add_argument("--save-state", help="write the trained state_dict here")
    ap.add_argument("--load-state", help="start from (or, with --eval-only, evaluate) this state")
    a = ap.parse_args()
    if a.eval_only and not a.load_state:
        ap.error("--eval-only needs --load-state")
    return a


def main():
    a = options()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    data, nfiles = load_corpus(a.data)
    split = len(data) - len(data) // 20
    train, held = data[:split], data[split:]
    if a.heldout_bytes:
        held = held[: a.heldout_bytes]
    print("data bytes %d files %d train %d heldout %d" % (len(data), nfiles, len(train), len(held)), flush=True)
    model = make_model(a.cell)
    if a.load_state:
        load_state(model, a.load_state)
    if a.eval_only:
        nats, count = heldout_nats(model, held)
        print("eval heldout_bits %.4f heldout_nats %.4f bytes %d" % (nats / math.log(2), nats, count))
    elif a.throughput:
        throughput(model, train, a.cell, a.steps, a.repeats)
    else:
        unit = "minutes" if a.minutes else "seconds"
        train_for(model, train, held, parse_marks(a.minutes or a.seconds), unit, a.eval_every)
    if a.save_state:
        print("saved %s format %s" % (a.save_state, save_state(model, a.save_state)))
    print("blas", refblas.describe())


if __name__ == "__main__":
    main()
