#!/usr/bin/env python3
"""The tools' .npy reader and writer against numpy itself.

usage: check_npy.py NPY_COPY WORK_DIR
numpy writes each case (every dtype nanort reads, 0-d to 3-d, format 1.0,
2.0, 3.0); npy_copy reads it and writes it back; the copy must be the bytes
np.save writes for the same array, and load back equal. Arrays numpy can save
but nanort cannot take, and hostile files (a wrong magic, truncated headers and
data, shapes whose element count overflows, a negative dimension, an unknown
key, an object dtype), must be refused with exit 1 and a message, not a crash.
"""
import io
import os
import subprocess
import sys

import numpy as np

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def main():
    tool, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    names = {"float32": "f32", "float16": "f16", "int8": "i8", "uint8": "u8", "int32": "i32",
             "int64": "i64", "bool": "bool", "float64": "f64", "int16": "i16", "uint16": "u16",
             "uint32": "u32", "uint64": "u64"}
    n = 0
    for dtype in names:
        for shape in [(), (5,), (2, 3), (2, 0, 4), (3, 1, 2)]:
            for version in [(1, 0), (2, 0), (3, 0)]:
                a = (rng.standard_normal(shape) * 50).astype(dtype)
                src = os.path.join(work, f"in{n}.npy")
                dst = os.path.join(work, f"out{n}.npy")
                n += 1
                with open(src, "wb") as f:
                    np.lib.format.write_array(f, a, version=version)
                p = subprocess.run([tool, src, dst], capture_output=True, text=True)
                what = f"{dtype}{shape} v{version}"
                if p.returncode != 0:
                    check(False, f"{what}: exit {p.returncode}: {p.stderr}")
                    continue
                check(p.stdout.strip() == f"{names[dtype]} {','.join(map(str, shape))}".strip(),
                      f"{what}: printed {p.stdout!r}")
                b = np.load(dst)
                check(b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b),
                      f"{what}: copy differs")
                want = io.BytesIO()
                np.save(want, a)
                with open(dst, "rb") as f:
                    check(f.read() == want.getvalue(), f"{what}: bytes differ from np.save's")

    refused = {
        "complex64": (np.zeros(3, dtype=np.complex64), "'<c8' is not supported"),
        "big-endian": (np.zeros(3, dtype=">f4"), "not little-endian"),
        "fortran": (np.asfortranarray(np.zeros((2, 3), dtype=np.float32)), "fortran_order"),
        "structured": (np.zeros(2, dtype=[("a", "<f4")]), "structured"),
    }
    for what, (a, message) in refused.items():
        src = os.path.join(work, f"bad_{what}.npy")
        np.save(src, a)
        p = subprocess.run([tool, src, os.path.join(work, "unused.npy")], capture_output=True,
                           text=True)
        check(p.returncode == 1 and message in p.stderr, f"{what}: exit {p.returncode}, {p.stderr!r}")

    # Hostile files (issue #11 item 5): each refused with exit 1 and a
    # message saying why, never a crash or an allocation of the claimed size.
    good = io.BytesIO()
    np.save(good, np.arange(12, dtype=np.float32).reshape(3, 4))
    g = good.getvalue()

    def header(shape):
        b = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            b, {"descr": "<f4", "fortran_order": False, "shape": shape})
        return b.getvalue()

    def patched(old, new):
        at = g.find(old)
        assert at >= 0, old
        return g[:at] + new + g[at + len(old):]

    header_len = bytearray(g)
    header_len[8:10] = (60000).to_bytes(2, "little")
    hostile = {
        "wrong_magic": (b"\x93NUMPX" + g[6:], "bad magic"),
        "empty": (b"", "not a .npy file"),
        "truncated_header": (g[:20], "truncated"),
        "header_past_end": (bytes(header_len), "truncated"),
        "truncated_data": (g[:-5], "data size mismatch"),
        "overflowing_shape": (header((2**40, 2**40)), "too many elements"),
        "huge_shape": (header((2**62,)), "too many elements"),
        "negative_dim": (patched(b"(3, 4)", b"(-3,4)"), "negative dimension"),
        "unknown_key": (patched(b"'descr'", b"'descX'"), "unexpected key"),
        "object_dtype": (patched(b"'<f4'", b"'|O' "), "'|O' is not supported"),
    }
    for what, (data, message) in hostile.items():
        src = os.path.join(work, f"hostile_{what}.npy")
        with open(src, "wb") as f:
            f.write(data)
        p = subprocess.run([tool, src, os.path.join(work, "unused.npy")], capture_output=True,
                           text=True)
        check(p.returncode == 1 and message in p.stderr, f"{what}: exit {p.returncode}, {p.stderr!r}")

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"ok ({n} arrays)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
