#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora: one folder per target under --out.

  program/  the program nanoc wrote for tests/fuzz/fuzz_model.nir (format
            1.4's IfThunk and LoopThunk are reached only by mutation until
            nanoc emits them: fuzz_model.nir can then gain an If and a Loop,
            whose kernels the fuzz target must link; a hand-built seed
            would need fuzz_model's kernel table and is not made here)
  onnx/     every end-to-end model (tests/e2e/models.py)
  ir_text/  the lit tests' IR (tests/lit/*.nir)
  npy/      .npy files of every dtype nanort reads, several shapes, both
            format versions, and the forms the reader refuses (Fortran
            order, big-endian, object dtype)

Generated at test time from the tree, never committed. Idempotent: the
folders are rewritten.
"""
import argparse
import io
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np


def npy_seeds(out: Path) -> None:
    rng = np.random.default_rng(0)
    dtypes = ["<f4", "<f8", "<f2", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"]
    shapes = [(), (0,), (3,), (2, 3, 4), (1, 1, 1, 1, 2)]
    n = 0
    for dt in dtypes:
        for shape in shapes:
            a = (rng.standard_normal(shape) * 10).astype(dt)
            np.save(out / f"{n:03d}.npy", a, allow_pickle=False)
            n += 1
    for version in [(1, 0), (2, 0), (3, 0)]:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.arange(6, dtype="<f4").reshape(2, 3), version=version)
        (out / f"{n:03d}.npy").write_bytes(buf.getvalue())
        n += 1
    refused = [np.asfortranarray(np.ones((2, 3), "<f4")), np.ones(3, ">f4")]
    for a in refused:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, a)
        (out / f"{n:03d}.npy").write_bytes(buf.getvalue())
        n += 1
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array([1, "a"], dtype=object), allow_pickle=True)
    (out / f"{n:03d}.npy").write_bytes(buf.getvalue())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--program", required=True, type=Path, help="fuzz_model.nrt")
    p.add_argument("--e2e-models", required=True, type=Path, help="tests/e2e/models.py")
    p.add_argument("--lit", required=True, type=Path, help="tests/lit")
    args = p.parse_args()

    folders = {name: args.out / name for name in ["program", "onnx", "ir_text", "npy"]}
    for d in folders.values():
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    shutil.copy(args.program, folders["program"] / "fuzz_model.nrt")
    subprocess.run([sys.executable, str(args.e2e_models), "--out", str(folders["onnx"])],
                   check=True, stdout=subprocess.DEVNULL)
    for nir in sorted(args.lit.glob("*.nir")):
        shutil.copy(nir, folders["ir_text"] / nir.name)
    npy_seeds(folders["npy"])
    for name, d in folders.items():
        print(f"{name}: {sum(1 for _ in d.iterdir())} seeds in {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
