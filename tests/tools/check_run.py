#!/usr/bin/env python3
"""nanort-run on the hand-built tiny model (y = x + w, f32[2,3]).

usage: check_run.py NANORT_RUN TINY_SO WORK_DIR
"""
import os
import re
import subprocess
import sys

import numpy as np

W = np.array([0.5, -1.0, 2.0, 0.25, 100.0, -3.5], dtype=np.float32).reshape(2, 3)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    p = subprocess.run(args, capture_output=True, text=True)
    check(p.returncode >= 0, f"{args} died of signal {-p.returncode}")
    return p


def expect_error(tool, args, message):
    p = run(tool, *args)
    check(p.returncode == 1, f"{args}: exit {p.returncode}, want 1")
    check(p.stderr.startswith("nanort-run: error: ") and message in p.stderr,
          f"{args}: stderr {p.stderr!r} lacks {message!r}")


def main():
    tool, model, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5
    xpath = os.path.join(work, "x.npy")
    np.save(xpath, x)
    out = os.path.join(work, "out")

    p = run(tool, model, "--input", f"x={xpath}", "--output-dir", out, "--repeat", "5",
            "--warmup=2")
    check(p.returncode == 0, f"run: exit {p.returncode}: {p.stderr}")
    lines = p.stdout.splitlines()
    want = x + W
    check(len(lines) == 3, f"want 3 lines, got {lines}")
    if len(lines) == 3:
        check(re.fullmatch(r"target cpu=(x86-64|generic|generic-rv64)", lines[0]) is not None,
              f"target line {lines[0]!r}")
        check(lines[1] == f"output y f32[2,3] checksum={float(want.astype(np.float64).sum()):.9g}",
              f"output line {lines[1]!r}")
        m = re.fullmatch(r"latency_us median=([0-9.]+) min=([0-9.]+) runs=5", lines[2])
        check(m is not None and float(m.group(2)) <= float(m.group(1)),
              f"latency line {lines[2]!r}")
    y = np.load(os.path.join(out, "y.npy"))
    check(y.dtype == np.float32 and y.shape == (2, 3) and np.array_equal(y, want), f"y.npy {y}")

    p = run(tool, model, "--input", f"x={xpath}", "--output-dir", out, "--repeat", "0")
    check(p.returncode == 0 and p.stdout.splitlines()[-1].endswith("runs=1"),
          f"--repeat 0: {p.stdout!r} {p.stderr!r}")

    expect_error(tool, [model, "--input", f"z={xpath}"], "the model has no input 'z'; its inputs: x f32[2,3]")
    expect_error(tool, [model], "missing --input for model input(s): x")
    expect_error(tool, [model, "--input", f"x={xpath}", "--input", f"x={xpath}"], "more than once")
    bad_shape = os.path.join(work, "x_shape.npy")
    np.save(bad_shape, np.zeros((3, 2), dtype=np.float32))
    expect_error(tool, [model, "--input", f"x={bad_shape}"], "SHAPE_MISMATCH: ")
    bad_dtype = os.path.join(work, "x_dtype.npy")
    np.save(bad_dtype, np.zeros((2, 3), dtype=np.int32))
    expect_error(tool, [model, "--input", f"x={bad_dtype}"], "SHAPE_MISMATCH: ")
    f64 = os.path.join(work, "x_f64.npy")
    np.save(f64, np.zeros((2, 3)))
    expect_error(tool, [model, "--input", f"x={f64}"], "SHAPE_MISMATCH: ")
    expect_error(tool, [model, "--input", f"x={work}/none.npy"], "cannot open")
    expect_error(tool, [os.path.join(work, "none.so"), "--input", f"x={xpath}"], "NOT_FOUND: ")
    expect_error(tool, [model, "--repeat", "-1", "--input", f"x={xpath}"], "--repeat takes a count")
    expect_error(tool, [model, "--frobnicate"], "unknown option '--frobnicate'")
    p = run(tool, "--help")
    check(p.returncode == 0 and all(f in p.stdout for f in
                                    ("--input", "--output-dir", "--repeat", "--warmup", "--help")),
          "--help documents every flag")

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
