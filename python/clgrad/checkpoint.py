"""clgrad checkpoints: what `clgrad train --out` and clg_checkpoint_save write.

A checkpoint is one safetensors file (src/io/checkpoint.c):
  - the model's tensors under PyTorch state_dict names ("0.weight", "head.bias", ...);
  - the optimizer's state under "optim.state.<param>.<state>" (and a 0-d int64
    ".step" per parameter, as PyTorch's);
  - __metadata__: "clgrad.checkpoint" (the format version), "train.*" (step, epoch,
    batch, ...), "rng.*", "optim.*" (name, steps, lr) and "model": the canonical model
    file (JSON) that rebuilds the network.
A weights-only file (clg_module_save) is the first part alone, with "format": "pt".

    ck = load("run.ckpt")
    ck.weights["0.weight"]          # numpy arrays (torch=True: torch tensors)
    ck.model                        # the model file as a dict (None without one)
    ck.train["step"]                # numbers of the train state (empty without one)
    ck.weights["0.bias"] += 1;  save("edited.ckpt", ck)   # clgrad reads it back
"""
import json

from . import safetensors

OPTIM_PREFIX = "optim."
VERSION_KEY = "clgrad.checkpoint"
_INTS = ("train.step", "train.epoch", "train.batch", "train.loader_seed", "rng.seed", "rng.offset", "optim.steps",
         "train.loss_scale_growth", "train.world_size")
_FLOATS = ("train.base_lr", "optim.lr", "train.loss_scale")


class Checkpoint:
    """weights and optimizer: {name: array}; metadata: {str: str}; model: the model file
    (dict) or None; model_text: its JSON text or None; version: the checkpoint format
    version (None for weights alone); train: the train state's numbers by metadata key
    ("step", "epoch", "optim.lr", ...)."""

    def __init__(self, weights, optimizer, metadata):
        self.weights = weights
        self.optimizer = optimizer
        self.metadata = metadata
        self.model_text = metadata.get("model")
        self.model = json.loads(self.model_text) if self.model_text is not None else None
        v = metadata.get(VERSION_KEY)
        self.version = int(v) if v is not None else None
        self.train = {}
        for key in _INTS + _FLOATS:
            if key in metadata:
                short = key[len("train."):] if key.startswith("train.") else key
                self.train[short] = int(metadata[key]) if key in _INTS else float(metadata[key])

    def tensors(self):
        """Every tensor of the file, weights then optimizer state."""
        return {**self.weights, **self.optimizer}


def load(path, torch=False):
    """The checkpoint (or weights-only file) at path. torch=True: torch tensors in the
    file's dtypes; otherwise NumPy arrays (bfloat16 widened to float32: safetensors.load)."""
    tensors = safetensors.load_torch(path) if torch else safetensors.load(path)
    meta = safetensors.load_metadata(path)
    weights = {k: v for k, v in tensors.items() if not k.startswith(OPTIM_PREFIX)}
    optim = {k: v for k, v in tensors.items() if k.startswith(OPTIM_PREFIX)}
    return Checkpoint(weights, optim, meta)


def save(path, ckpt, dtypes=None):
    """Write a Checkpoint (weights, optimizer state and metadata as they are now) that
    clgrad loads: `clgrad info`, `predict`, `train --resume`. NumPy arrays or, when every
    tensor is one, torch tensors. dtypes as safetensors.save (BF16 for NumPy floats)."""
    tensors = ckpt.tensors()
    if tensors and all(type(t).__module__.startswith("torch") for t in tensors.values()):
        if dtypes:
            raise ValueError("checkpoint.save: dtypes is for NumPy arrays; convert torch tensors with .to()")
        return safetensors.save_torch(path, tensors, ckpt.metadata)
    return safetensors.save(path, tensors, ckpt.metadata, dtypes)
