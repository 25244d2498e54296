"""clgrad from Python: safetensors and checkpoints in pure Python (NumPy, optionally
PyTorch), and a ctypes binding of libclgrad (clgrad.core). Importing the package does
not load the library; the binding's first use does."""
from . import checkpoint, safetensors
from .core import Device, Error, Model, Tensor, version

__all__ = ["checkpoint", "safetensors", "Device", "Error", "Model", "Tensor", "version"]
