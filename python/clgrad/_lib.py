"""Finding libclgrad and declaring the C functions the binding calls (include/clgrad/*.h).

The library is, in order: $CLGRAD_LIB (a path); the build tree beside this package when
it runs from the source tree (build/src/libclgrad.so); ctypes.util.find_library("clgrad")
(an installed libclgrad). No compiled extension: ctypes alone."""
import ctypes
import ctypes.util
import os

c_p, c_i64, c_int, c_bool, c_char_p, c_size_t = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_bool,
                                                   ctypes.c_char_p, ctypes.c_size_t)
MAX_DIMS = 8   # CLG_MAX_DIMS


class ModelTrain(ctypes.Structure):
    """clg_model_train (model.h)."""
    _fields_ = [("batch", c_i64), ("epochs", c_int), ("seed", ctypes.c_uint64), ("workers", c_int),
                ("precision", c_int)]


# name: (result, argument types)
_DECLS = {
    "clg_version": (c_char_p, []),
    "clg_status_str": (c_char_p, [c_int]),
    "clg_last_error": (c_char_p, []),
    "clg_device_open": (c_int, [c_char_p, ctypes.POINTER(c_p)]),
    "clg_device_close": (None, [c_p]),
    "clg_device_error": (c_char_p, [c_p]),
    "clg_device_last_status": (c_int, [c_p]),
    "clg_device_clear_error": (None, [c_p]),
    "clg_manual_seed": (None, [c_p, ctypes.c_uint64]),
    "clg_tensor_from_host": (c_p, [c_p, c_int, c_int, ctypes.POINTER(c_i64), c_p]),
    "clg_tensor_to_host": (c_int, [c_p, c_p, c_size_t]),
    "clg_tensor_item": (c_int, [c_p, ctypes.POINTER(ctypes.c_double)]),
    "clg_tensor_ndim": (c_int, [c_p]),
    "clg_tensor_shape": (ctypes.POINTER(c_i64), [c_p]),
    "clg_tensor_numel": (c_i64, [c_p]),
    "clg_tensor_dtype": (c_int, [c_p]),
    "clg_tensor_free": (None, [c_p]),
    "clg_tensor_live_count": (c_i64, [c_p]),
    "clg_scope_begin": (None, [c_p]),
    "clg_scope_end": (None, [c_p]),
    "clg_no_grad_begin": (None, [c_p]),
    "clg_no_grad_end": (None, [c_p]),
    "clg_backward": (c_int, [c_p, c_p]),
    "clg_model_read": (c_int, [c_char_p, ctypes.POINTER(c_p), c_char_p, c_size_t]),
    "clg_model_parse": (c_int, [c_char_p, c_size_t, c_char_p, ctypes.POINTER(c_p), c_char_p, c_size_t]),
    "clg_model_free": (None, [c_p]),
    "clg_model_json": (c_p, [c_p]),
    "clg_model_input": (c_int, [c_p, ctypes.POINTER(c_i64)]),
    "clg_model_input_numel": (c_i64, [c_p]),
    "clg_model_outputs": (c_i64, [c_p]),
    "clg_model_takes_tokens": (c_bool, [c_p]),
    "clg_model_get_train": (ctypes.POINTER(ModelTrain), [c_p]),
    "clg_model_build": (c_p, [c_p, c_p]),
    "clg_model_build_optimizer": (c_p, [c_p, c_p]),
    "clg_model_loss": (c_p, [c_p, c_p, c_p]),
    "clg_model_transform": (None, [c_p, ctypes.POINTER(ctypes.c_float), c_i64]),
    "clg_module_forward": (c_p, [c_p, c_p]),
    "clg_module_train": (None, [c_p, c_bool]),
    "clg_module_free": (None, [c_p]),
    "clg_module_parameters": (c_int, [c_p, ctypes.POINTER(c_p), c_int, c_bool]),
    "clg_clip_grad_norm": (c_int, [c_int, ctypes.POINTER(c_p), ctypes.c_double, ctypes.POINTER(c_p)]),
    "clg_module_save": (c_int, [c_p, c_char_p, c_int, c_p]),
    "clg_optimizer_zero_grad": (None, [c_p]),
    "clg_optimizer_step": (c_int, [c_p]),
    "clg_optimizer_free": (None, [c_p]),
    "clg_checkpoint_info": (c_int, [c_char_p, c_p, ctypes.POINTER(c_p), c_char_p, c_size_t]),
    "clg_checkpoint_load": (c_int, [c_p, c_p, c_char_p, c_p, c_p]),
}


def _candidates():
    env = os.environ.get("CLGRAD_LIB")
    if env:   # given: that one or an error, never another library in its place
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    found = []
    tree = os.path.join(here, "..", "..", "build", "src", "libclgrad.so")
    if os.path.exists(tree):
        found.append(os.path.normpath(tree))
    name = ctypes.util.find_library("clgrad")
    if name:
        found.append(name)
    return found


def load():
    """The library with its functions declared; OSError naming where it looked."""
    paths = _candidates()
    if not paths:
        raise OSError("clgrad: libclgrad not found: set CLGRAD_LIB to its path, build the tree "
                      "(build/src/libclgrad.so), or install it where the linker finds it")
    lib = ctypes.CDLL(paths[0])
    for name, (res, args) in _DECLS.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib
