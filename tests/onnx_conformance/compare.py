"""The comparison rule of the conformance suite: ONNX's backend test rule.

An output matches its expected value when the dtype and the shape are equal
and, element by element,

    floats:  |got - want| <= atol + rtol * |want|   (numpy.isclose), where NaN
             matches NaN and an infinity matches the same infinity
    others:  got == want  (integers, bools, strings: exactly)

with the case's rtol and atol (ONNX's node cases: rtol 1e-3, atol 1e-7; for
bfloat16, rtol at least 2^-6, as ONNX's backend runner allows).
Sequences match element by element, optionals when both are empty or both
hold matching values.
"""

from dataclasses import dataclass

import numpy as np


@dataclass
class Mismatch:
    """Why an output does not match: `summary` is deterministic (no numbers
    that depend on the CPU's rounding), `detail` adds the numbers."""
    summary: str
    detail: str
    max_abs_err: float | None = None


def _dims(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def compare_array(got: np.ndarray, want: np.ndarray, rtol: float, atol: float):
    """None when `got` matches `want`, else a Mismatch."""
    if got.dtype != want.dtype:
        s = f"dtype {got.dtype}, want {want.dtype}"
        return Mismatch(s, s)
    if got.shape != want.shape:
        s = f"shape {_dims(got.shape)}, want {_dims(want.shape)}"
        return Mismatch(s, s)
    if want.size == 0:
        return None
    # ml_dtypes' bfloat16, float8 and float4 types are floats too (their kind
    # is 'V').
    floating = want.dtype.kind == "f" or want.dtype.name == "bfloat16" or \
        want.dtype.name.startswith(("float8", "float4"))
    if want.dtype.name == "bfloat16":
        rtol = max(rtol, 2**-6)  # two bfloat16 ULPs, as ONNX's backend runner allows
    if floating:
        g, w = got.astype(np.float64), want.astype(np.float64)
        close = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        with np.errstate(invalid="ignore"):
            diff = np.abs(g - w)
        both_finite = np.isfinite(g) & np.isfinite(w)
        max_err = float(np.max(diff[both_finite])) if np.any(both_finite) else 0.0
        if not np.all(close[~both_finite]):
            max_err = float("inf")  # a NaN or an infinity where the other side differs
    else:
        close = got == want
        if want.dtype.kind in "iub":
            max_err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
        else:
            max_err = None
    if np.all(close):
        return None
    bad = np.argwhere(~close)
    i = tuple(int(x) for x in bad[0])
    detail = (f"{len(bad)} of {want.size} values beyond tolerance (rtol {rtol:g}, atol {atol:g})"
              f"{'' if max_err is None else f', max |err| {max_err:.3g}'}; "
              f"first at {list(i)}: got {got[i]!r}, want {want[i]!r}")
    return Mismatch("values beyond tolerance" if floating else "values differ",
                    detail, max_err)


def compare_value(got, want, rtol: float, atol: float):
    """compare_array for a tensor, a sequence (list) or an optional (None)."""
    if isinstance(want, list):
        if not isinstance(got, list):
            return Mismatch("not a sequence", f"a {type(got).__name__}, want a sequence")
        if len(got) != len(want):
            s = f"sequence of {len(got)}, want {len(want)}"
            return Mismatch(s, s)
        for k, (g, w) in enumerate(zip(got, want)):
            m = compare_value(g, w, rtol, atol)
            if m:
                return Mismatch(f"element {k}: {m.summary}", f"element {k}: {m.detail}",
                                m.max_abs_err)
        return None
    if want is None or got is None:
        if want is None and got is None:
            return None
        s = "empty optional" if got is None else "a value where the optional is empty"
        return Mismatch(s, s)
    return compare_array(np.asarray(got), np.asarray(want), rtol, atol)
