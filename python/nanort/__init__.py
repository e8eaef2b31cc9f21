"""nanort from Python: compile a model with nanoc, load it, run it on NumPy arrays.

    import nanort, numpy as np
    so = nanort.compile("model.onnx", target="x86-64-v3", out_dir="out")
    m = nanort.load(so)
    outputs = m.run({"x": np.zeros((1, 3, 224, 224), np.float32)})   # {name: ndarray}

Inputs are read in place: an array of the model's dtype that is C-contiguous
and aligned is handed to nanort as it is, without a copy (anything else is an
error, not a silent conversion). Outputs are new arrays. The GIL is released
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
    """A model input or output: .name, .dtype (NumPy), .nanort_dtype ("f32", ...), .shape."""

    def __init__(self, name, code, shape):
        self.name = name
        self.code = code
        self.dtype = np.dtype(_DTYPES[code])
        self.nanort_dtype = _nanort.dtype_name(code)
        self.shape = tuple(shape)

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
        self.inputs = [TensorInfo(*i) for i in self._model.inputs()]
        self.outputs = [TensorInfo(*o) for o in self._model.outputs()]
        self.cpu = self._model.cpu()
        self.arena_size = self._model.arena_size()

    def run(self, inputs):
        """Runs the model on {input name: array}; returns {output name: new array}."""
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
            args.append((a.ctypes.data, info.code, list(a.shape)))
        outs = {o.name: np.empty(o.shape, o.dtype) for o in self.outputs}
        out_args = [(outs[o.name].ctypes.data, o.code, list(o.shape)) for o in self.outputs]
        # The arrays in `inputs` and `outs` stay referenced while this runs.
        self._model.run(args, out_args)
        return outs


def load(path, name=None, threads=1):
    """Loads NAME.so written by nanoc (name: its symbol prefix, by default the
    file name up to its first '.'), with a session of `threads` threads."""
    return Model(path, name, threads)
