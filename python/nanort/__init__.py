"""nanort from Python: compile a model with nanoc, load it, run it on NumPy arrays.

    import nanort, numpy as np
    so = nanort.compile("model.onnx", target="x86-64-v3", out_dir="out")
    m = nanort.load(so)
    outputs = m.run({"x": np.zeros((1, 3, 224, 224), np.float32)})   # {name: ndarray}

Inputs are read in place: an array of the model's dtype that is C-contiguous
and aligned is handed to nanort as it is, without a copy (anything else is an
error, not a silent conversion). Outputs are new arrays, or the caller's
(run(inputs, outputs={name: array})), written in place.

A model compiled for a GPU (target="sm_90", ...) also takes CUDA arrays
(anything with __cuda_array_interface__: CuPy, Numba, PyTorch CUDA tensors)
as inputs and as the caller's outputs, for the tensors whose
TensorInfo.cuda is true: nanort copies them device to device, without host
staging. nanort reads and writes them on its own stream, so work queued on
others (e.g. torch.cuda.synchronize()) must be complete before run. The GIL is released
while the model runs. Every failure of nanort raises NanortError, which
carries nanort's status code, its name and message; a failure of nanoc raises
CompileError with nanoc's own message.
"""
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from . import _nanort

__all__ = ["compile", "load", "Model", "NanortError", "CompileError", "TensorInfo"]


class NanortError(RuntimeError):
    """A nanort call failed: .code (int), .code_name ("SHAPE_MISMATCH", ...), .message."""

    def __init__(self, code, code_name, message):
        super().__init__(f"{code_name}: {message}")
        self.code = code
        self.code_name = code_name
        self.message = message


class CompileError(RuntimeError):
    """nanoc refused the model or failed: .returncode, .stderr (nanoc's message)."""

    def __init__(self, returncode, stderr):
        super().__init__(stderr.strip() or f"nanoc exited {returncode}")
        self.returncode = returncode
        self.stderr = stderr


_nanort.set_error_type(NanortError)

# nanort_dtype values (nanort.h) and the NumPy dtypes that hold them; the
# one-byte float8 and sub-byte types travel as uint8, bf16 as uint16.
_DTYPES = {
    0: np.float32, 1: np.float16, 2: np.uint16, 3: np.int8, 4: np.uint8, 5: np.int32,
    6: np.int64, 7: np.bool_, 8: np.float64, 9: np.int16, 10: np.uint16, 11: np.uint32,
    12: np.uint64, 13: np.uint8, 14: np.uint8, 15: np.uint8, 16: np.uint8, 17: np.uint8,
    18: np.uint8, 19: np.uint8, 20: np.uint8, 21: np.uint8,
}


class TensorInfo:
    """A model input or output: .name, .dtype (NumPy), .nanort_dtype ("f32", ...), .shape,
    .cuda (whether it may be a CUDA array: a GPU model's tensor that only GPU copies touch)."""

    def __init__(self, name, code, shape, cuda=False):
        self.name = name
        self.code = code
        self.dtype = np.dtype(_DTYPES[code])
        self.nanort_dtype = _nanort.dtype_name(code)
        self.shape = tuple(shape)
        self.cuda = cuda

    def __repr__(self):
        return f"TensorInfo({self.name!r}, {self.nanort_dtype}{list(self.shape)})"


def _find_nanoc(nanoc):
    for candidate in (nanoc, os.environ.get("NANORT_NANOC"), shutil.which("nanoc")):
        if candidate:
            return str(candidate)
    raise CompileError(127, "nanoc not found: pass nanoc=PATH, set NANORT_NANOC or put it on PATH")


def compile(model, target="host", out_dir=".", name=None, args=(), nanoc=None):
    """Compiles `model` (.onnx or .nir) with nanoc for `target` (a profile such as
    x86-64-v3 or cortex-a76, several comma-separated, or host) into out_dir and
    returns the path of the shared object (NAME.so) that load() takes. `args`
    go to nanoc as they are (["--dim", "batch=1"], ...)."""
    model = Path(model)
    name = name or model.name.split(".")[0]
    out_dir = Path(out_dir)
    cmd = [_find_nanoc(nanoc), str(model), "--name", name, "-o", str(out_dir), "--target", target,
           *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise CompileError(p.returncode, p.stderr)
    return out_dir / f"{name}.so"


class Model:
    """A model loaded from nanoc's NAME.so, with one session of `threads` threads."""

    def __init__(self, path, name=None, threads=1):
        self._model = _nanort.Model(str(path), name or "", int(threads))
        # nanort_model_tensor_memory's bit 1 << NANORT_MEMORY_CUDA.
        self.inputs = [TensorInfo(*t, cuda=bool(self._model.tensor_memory(False, k) & 2))
                       for k, t in enumerate(self._model.inputs())]
        self.outputs = [TensorInfo(*t, cuda=bool(self._model.tensor_memory(True, k) & 2))
                        for k, t in enumerate(self._model.outputs())]
        self.cpu = self._model.cpu()
        self.gpu = self._model.gpu() or None  # the GPU image in use, None for a CPU model
        self.arena_size = self._model.arena_size()

    def run(self, inputs, outputs=None):
        """Runs the model on {input name: array}; returns {output name: array}: new
        NumPy arrays, or the caller's own where `outputs` ({output name: array})
        gives one, written in place."""
        names = {i.name for i in self.inputs}
        unknown = sorted(set(inputs) - names)
        if unknown:
            raise NanortError(7, "NOT_FOUND", f"no model input named {unknown[0]!r}; the inputs "
                              f"are {', '.join(sorted(names))}")
        args = []
        for info in self.inputs:
            if info.name not in inputs:
                raise NanortError(1, "INVALID_ARGUMENT", f"input {info.name!r} is missing")
            a = inputs[info.name]
            if hasattr(a, "__cuda_array_interface__"):
                args.append(_cuda_arg("input", info, a))
                continue
            if not isinstance(a, np.ndarray):
                a = np.asarray(a)
            if a.dtype != info.dtype:
                raise NanortError(6, "SHAPE_MISMATCH", f"input {info.name!r} is {a.dtype}, the "
                                  f"model's is {info.nanort_dtype} ({info.dtype}); no conversion "
                                  "is made")
            if not (a.flags.c_contiguous and a.flags.aligned):
                raise NanortError(1, "INVALID_ARGUMENT", f"input {info.name!r} is not C-contiguous"
                                  " and aligned; pass np.ascontiguousarray(x), nanort reads "
                                  "inputs in place")
            args.append((a.ctypes.data, info.code, list(a.shape), 0))
        given = dict(outputs or {})
        unknown = sorted(set(given) - {o.name for o in self.outputs})
        if unknown:
            raise NanortError(7, "NOT_FOUND", f"no model output named {unknown[0]!r}")
        outs, out_args = {}, []
        for o in self.outputs:
            a = given.get(o.name)
            if a is None:
                a = np.empty(o.shape, o.dtype)
            if hasattr(a, "__cuda_array_interface__"):
                out_args.append(_cuda_arg("output", o, a))
            else:
                if not (isinstance(a, np.ndarray) and a.dtype == o.dtype and a.shape == o.shape
                        and a.flags.c_contiguous and a.flags.aligned and a.flags.writeable):
                    raise NanortError(1, "INVALID_ARGUMENT", f"output {o.name!r} must be a "
                                      f"writable C-contiguous {o.dtype}{list(o.shape)} array")
                out_args.append((a.ctypes.data, o.code, list(o.shape), 0))
            outs[o.name] = a
        # The arrays in `inputs` and `outs` stay referenced while this runs.
        self._model.run(args, out_args)
        return outs


def _cuda_arg(what, info, a):
    """run's argument for a CUDA array (its __cuda_array_interface__, version 2+)."""
    cai = a.__cuda_array_interface__
    shape = tuple(cai["shape"])
    if shape != info.shape:
        raise NanortError(6, "SHAPE_MISMATCH", f"{what} {info.name!r} has shape {list(shape)}, "
                          f"the model's is {list(info.shape)}")
    if np.dtype(cai["typestr"]) != info.dtype:
        raise NanortError(6, "SHAPE_MISMATCH", f"{what} {info.name!r} is {cai['typestr']}, the "
                          f"model's is {info.nanort_dtype} ({info.dtype}); no conversion is made")
    strides = cai.get("strides")
    if strides is not None:
        expected, step = [], info.dtype.itemsize
        for n in reversed(shape):
            expected.insert(0, step)
            step *= n
        if any(n > 1 and s != e for n, s, e in zip(shape, strides, expected)):
            raise NanortError(1, "INVALID_ARGUMENT", f"{what} {info.name!r} is not C-contiguous")
    if what == "output" and cai["data"][1]:
        raise NanortError(1, "INVALID_ARGUMENT", f"output {info.name!r} is read-only")
    return (int(cai["data"][0]), info.code, list(shape), 1)


def load(path, name=None, threads=1):
    """Loads NAME.so written by nanoc (name: its symbol prefix, by default the
    file name up to its first '.'), with a session of `threads` threads."""
    return Model(path, name, threads)
