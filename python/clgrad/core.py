"""A ctypes binding of clgrad's core: a device, tensors from and to NumPy, a network
from a model file or a checkpoint, forward, and a training step.

    import numpy as np, clgrad
    with clgrad.Device() as dev:                      # the default OpenCL device
        model = clgrad.Model.load(dev, "mlp.json")   # or a checkpoint of clgrad train
        logits = model(np.zeros((2, 4), np.float32)) # numpy in, numpy out (eval mode)
        loss = model.train_step(x, labels)           # one optimizer step; the loss before it

Errors from the library become clgrad.Error carrying its message. Resources are freed
by close() or the with-block, at the latest when garbage-collected; closing a device
closes what was made on it first (a tensor must not outlive its device).
"""
import ctypes
import json
import weakref

import numpy as np

from . import _lib, safetensors

F32, F64, I32 = 0, 1, 2   # clg_dtype
_DTYPES = {np.dtype(np.float32): F32, np.dtype(np.float64): F64, np.dtype(np.int32): I32}
_NUMPY = {v: k for k, v in _DTYPES.items()}
_lib_handle = None
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]   # what clg_checkpoint_info mallocs
_libc.free.restype = None


class Error(RuntimeError):
    """A clgrad failure: .status is the clg_status name ("CLG_ERR_SHAPE", ...)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def lib():
    """The loaded library (loaded on first use)."""
    global _lib_handle
    if _lib_handle is None:
        _lib_handle = _lib.load()
    return _lib_handle


def version():
    return lib().clg_version().decode()


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


class _Closing:
    """close() at the end of a with block and when collected (each class has its close)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Device(_Closing):
    """An OpenCL device (clg_device_open: spec None is the default, else "0", "pocl", ...)."""

    def __init__(self, spec=None):
        self._lib = lib()
        self._ptr = None
        self._owned = weakref.WeakSet()
        p = ctypes.c_void_p()
        st = self._lib.clg_device_open(spec.encode() if spec else None, ctypes.byref(p))
        if st != 0:
            raise Error("clgrad: device %s: %s" % (spec or "(default)", _text(self._lib.clg_last_error())),
                        _text(self._lib.clg_status_str(st)))
        self._ptr = p.value

    @property
    def ptr(self):
        if not self._ptr:
            raise Error("clgrad: the device is closed")
        return self._ptr

    def _fail(self, what):
        st = self._lib.clg_device_last_status(self._ptr)
        msg = _text(self._lib.clg_device_error(self._ptr)) or _text(self._lib.clg_last_error())
        self._lib.clg_device_clear_error(self._ptr)
        raise Error("clgrad: %s: %s" % (what, msg or "failed"), _text(self._lib.clg_status_str(st)))

    def check_ptr(self, p, what):
        """p, or Error with the device's message when the call returned NULL."""
        if not p:
            self._fail(what)
        return p

    def check(self, status, what):
        """Error with the device's message when a call returned a status other than CLG_OK."""
        if status != 0:
            self._fail(what)

    def own(self, obj):
        self._owned.add(obj)

    def live_tensors(self):
        """Tensors alive on the device (a leak check)."""
        return self._lib.clg_tensor_live_count(self.ptr)

    def seed(self, seed):
        """Seed the device's generator (parameter initialisation, dropout)."""
        self._lib.clg_manual_seed(self.ptr, seed)

    def close(self):
        if self._ptr:
            for obj in list(self._owned):
                obj.close()
            self._lib.clg_device_close(self._ptr)
            self._ptr = None


def _shape(shape):
    return (_lib.c_i64 * max(len(shape), 1))(*shape)


class Tensor(_Closing):
    """A device tensor made from a NumPy array (float32, float64 or int32; others are
    converted only if given a dtype). Not in any scope: it lives until close()."""

    def __init__(self, device, array, dtype=None):
        arr = np.asarray(array)
        if dtype is not None and np.dtype(dtype) == np.int32 and arr.dtype != np.int32:
            # NumPy's astype wraps out-of-range integers and truncates floats, silently
            if arr.dtype.kind not in "iub":
                raise TypeError("clgrad.Tensor: %s values as int32 (give integers)" % arr.dtype)
            if arr.size and (arr.min() < -2 ** 31 or arr.max() >= 2 ** 31):
                raise ValueError("clgrad.Tensor: values in [%d, %d] do not fit int32" % (arr.min(), arr.max()))
        arr = np.ascontiguousarray(arr, dtype=dtype)
        if arr.dtype not in _DTYPES:
            raise TypeError("clgrad.Tensor: dtype %s (give float32, float64 or int32)" % arr.dtype)
        if arr.ndim > _lib.MAX_DIMS:
            raise ValueError("clgrad.Tensor: %d axes, at most %d" % (arr.ndim, _lib.MAX_DIMS))
        self.device, self._ptr = device, None
        lib_ = device._lib
        p = lib_.clg_tensor_from_host(device.ptr, _DTYPES[arr.dtype], arr.ndim, _shape(arr.shape),
                                      arr.ctypes.data_as(ctypes.c_void_p))
        self._ptr = device.check_ptr(p, "tensor from host")
        device.own(self)

    @property
    def shape(self):
        lib_ = self.device._lib
        s = lib_.clg_tensor_shape(self._live())
        return tuple(s[i] for i in range(lib_.clg_tensor_ndim(self._ptr)))

    @property
    def dtype(self):
        return _NUMPY[self.device._lib.clg_tensor_dtype(self._live())]

    def _live(self):
        if not self._ptr:
            raise Error("clgrad: the tensor is freed")
        return self._ptr

    def numpy(self):
        return _to_numpy(self.device, self._live())

    def close(self):
        if self._ptr and self.device._ptr:
            self.device._lib.clg_tensor_free(self._ptr)
        self._ptr = None


def _to_numpy(device, ptr):
    lib_ = device._lib
    s = lib_.clg_tensor_shape(ptr)
    shape = tuple(s[i] for i in range(lib_.clg_tensor_ndim(ptr)))
    out = np.empty(shape, _NUMPY[lib_.clg_tensor_dtype(ptr)])
    device.check(lib_.clg_tensor_to_host(ptr, out.ctypes.data_as(ctypes.c_void_p), out.nbytes), "tensor to host")
    return out


def _is_safetensors(path):
    """A checkpoint (safetensors: a length, then '{') rather than a model file (JSON text)."""
    with open(path, "rb") as f:
        head = f.read(9)
    return len(head) == 9 and head[8:9] == b"{"


class Model(_Closing):
    """A network built from a model file (clgrad/model.h), with its loss and optimizer.
    spec: the model file in its canonical form (every setting written out), as a dict."""

    def __init__(self, device, desc):
        """Takes ownership of desc (a clg_model *), freed by close() even when this fails."""
        self.device, self._desc, self._net, self._opt = device, desc, None, None
        lib_ = device._lib
        device.own(self)
        try:
            self._net = device.check_ptr(lib_.clg_model_build(desc, device.ptr), "model build")
            self._opt = device.check_ptr(lib_.clg_model_build_optimizer(desc, self._net), "optimizer build")
        except BaseException:
            self.close()
            raise
        text = lib_.clg_model_json(desc)   # the canonical form: every setting written out
        if not text:
            self.close()
            raise Error("clgrad: the model's canonical text: out of host memory")
        self.spec = json.loads(ctypes.string_at(text).decode())
        _libc.free(text)
        self._clip = float(self.spec["optimizer"].get("clip_grad_norm", 0))
        n = lib_.clg_module_parameters(self._net, None, 0, True)
        self._params = (ctypes.c_void_p * max(n, 1))()
        lib_.clg_module_parameters(self._net, self._params, n, True)
        self._nparams = n
        shape = (_lib.c_i64 * _lib.MAX_DIMS)()
        self.input_shape = tuple(shape[i] for i in range(lib_.clg_model_input(desc, shape)))
        self.outputs = lib_.clg_model_outputs(desc)
        self.takes_tokens = bool(lib_.clg_model_takes_tokens(desc))

    @classmethod
    def load(cls, device, path, seed=None, optimizer_state=True):
        """A model file (a new network, initialised from seed: by default the file's
        train.seed, as `clgrad train` does) or a checkpoint of clgrad (the network its
        model description builds, with its weights and, when the checkpoint holds an
        optimizer's and optimizer_state is true, the optimizer's state, step count and lr
        and the device's generator, as `clgrad train --resume` restores them)."""
        lib_, err = device._lib, ctypes.create_string_buffer(1024)
        desc = ctypes.c_void_p()
        if _is_safetensors(path):
            text = ctypes.c_void_p()
            st = lib_.clg_checkpoint_info(path.encode(), None, ctypes.byref(text), err, len(err))
            if st != 0:
                raise Error("clgrad: %s" % _text(err.value), _text(lib_.clg_status_str(st)))
            if not text.value:
                raise Error("clgrad: %s: no model description inside (not a checkpoint of clgrad train)" % path)
            json_text = ctypes.string_at(text.value)
            _libc.free(text)
            st = lib_.clg_model_parse(json_text, len(json_text), path.encode(), ctypes.byref(desc), err, len(err))
        else:
            st = lib_.clg_model_read(path.encode(), ctypes.byref(desc), err, len(err))
        if st != 0:
            raise Error("clgrad: %s" % _text(err.value), _text(lib_.clg_status_str(st)))
        device.seed(lib_.clg_model_get_train(desc).contents.seed if seed is None else seed)
        model = cls(device, desc.value)
        if _is_safetensors(path):
            opt = model._opt if optimizer_state and safetensors.load_metadata(path).get("optim.name") else None
            try:
                device.check(lib_.clg_checkpoint_load(model._net, opt, path.encode(), None, None), "load %s" % path)
            except BaseException:
                model.close()
                raise
        return model

    def _input(self, x):
        """A new Tensor of x's values in the dtype the model takes (a Tensor is copied too,
        so that the caller's stays theirs)."""
        x = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
        if self.takes_tokens and x.dtype.kind not in "iu":
            raise TypeError("clgrad.Model: %s inputs for a model of integer tokens" % x.dtype)
        if not self.takes_tokens and x.dtype.kind not in "fiu":
            raise TypeError("clgrad.Model: %s inputs for a model of floats" % x.dtype)
        return Tensor(self.device, x, np.int32 if self.takes_tokens else np.float32)

    def transform(self, raw):
        """Raw samples [N, *input] scaled and normalised as the model file's data section
        says (clg_model_transform; what `clgrad predict` does before the network)."""
        x = np.array(raw, np.float32, order="C", copy=True)
        per = int(np.prod(self.input_shape))
        if x.size % per:
            raise ValueError("clgrad.Model.transform: %d values are not samples of %d" % (x.size, per))
        data = x.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        self.device._lib.clg_model_transform(self._desc, data, x.size // per)
        return x

    def __call__(self, x):
        """The network on a batch [N, *input] (NumPy or Tensor) in eval mode, without
        gradients: NumPy out."""
        lib_, dev = self.device._lib, self.device.ptr
        lib_.clg_module_train(self._live(), False)
        with self._input(x) as t:
            lib_.clg_no_grad_begin(dev)
            lib_.clg_scope_begin(dev)
            try:
                out = self.device.check_ptr(lib_.clg_module_forward(self._net, t._ptr), "forward")
                return _to_numpy(self.device, out)
            finally:
                lib_.clg_scope_end(dev)
                lib_.clg_no_grad_end(dev)

    def train_step(self, x, labels):
        """One step on a batch in train mode: forward, the model file's loss against int32
        labels [N] (per token [N, T] for a model of tokens), backward, an optimizer step.
        Returns the loss before the step. Gradients are clipped as the file's
        clip_grad_norm says; the learning rate stays the optimizer's (a schedule in the
        model file is the caller's: clgrad train applies it per epoch)."""
        lib_, dev = self.device._lib, self.device.ptr
        lib_.clg_module_train(self._live(), True)
        with self._input(x) as t, Tensor(self.device, labels, np.int32) as y:
            lib_.clg_scope_begin(dev)
            try:
                out = self.device.check_ptr(lib_.clg_module_forward(self._net, t._ptr), "forward")
                loss = self.device.check_ptr(lib_.clg_model_loss(self._desc, out, y._ptr), "loss")
                value = ctypes.c_double()
                self.device.check(lib_.clg_tensor_item(loss, ctypes.byref(value)), "loss value")
                lib_.clg_optimizer_zero_grad(self._opt)
                self.device.check(lib_.clg_backward(loss, None), "backward")
                if self._clip > 0:   # the model file's clip_grad_norm, as clgrad train clips
                    self.device.check(lib_.clg_clip_grad_norm(self._nparams, self._params, self._clip, None),
                                      "clip_grad_norm")
                self.device.check(lib_.clg_optimizer_step(self._opt), "optimizer step")
                return value.value
            finally:
                lib_.clg_scope_end(dev)

    def save(self, path):
        """The weights as safetensors (PyTorch state_dict names; clgrad.safetensors reads them)."""
        self.device.check(self.device._lib.clg_module_save(self._live(), path.encode(), 0, None), "save %s" % path)

    def _live(self):
        if not self._net:
            raise Error("clgrad: the model is closed")
        return self._net

    def close(self):
        lib_ = self.device._lib
        if self.device._ptr:   # the network's tensors went with the device otherwise
            if self._opt:
                lib_.clg_optimizer_free(self._opt)
            if self._net:
                lib_.clg_module_free(self._net)
        if self._desc:
            lib_.clg_model_free(self._desc)
        self._opt = self._net = self._desc = None
