#!/usr/bin/env python3
"""Compiles real models with nanoc and runs nanort-hostile-check on each:
every single-field mutation of the model's program must be refused or run
inside guard pages (tests/runtime/hostile_model_check.cc).

    hostile_models.py --nanoc NANOC --check CHECK --work DIR [--target T,T2]

The models are tests/e2e/models.py's small_cnn (Conv, BatchNormalization,
Relu, MaxPool, GlobalAveragePool, Flatten, Gemm) and mlp. --target compiles
them for several CPUs in one artifact, whose variants share one signature
per kernel.
"""
import argparse
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "e2e"))
import onnx  # noqa: E402
import models  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--nanoc", required=True)
    p.add_argument("--check", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--target")
    p.add_argument("--models", default="small_cnn,mlp")
    args = p.parse_args()
    failed = 0
    for name in args.models.split(","):
        work = pathlib.Path(args.work) / (name + ("_" + args.target.replace(",", "_")
                                                   if args.target else ""))
        work.mkdir(parents=True, exist_ok=True)
        onnx_path = work / (name + ".onnx")
        onnx.save(models.CASES[name].build(), str(onnx_path))
        cmd = [args.nanoc, str(onnx_path), "--name", name, "-o", str(work)]
        if args.target:
            cmd += ["--target", args.target]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: {' '.join(cmd)}\n{r.stdout}{r.stderr}", file=sys.stderr)
            return 1
        r = subprocess.run([args.check, str(work / (name + ".so")), name])
        failed += r.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
