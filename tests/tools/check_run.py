#!/usr/bin/env python3
"""nanort-run on the hand-built tiny model (y = x + w, f32[2,3]).

usage: check_run.py NANORT_RUN TINY_SO WORK_DIR FIXTURES_DIR
FIXTURES_DIR holds what make_test_fixtures writes (tiny.nrt, tiny.o): files
nanort-run must refuse with a message that says what to pass instead.
"""
import os
import platform
import re
import shutil
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


def expect_exact_error(tool, args, message):
    """The whole of stderr is `message` on one line, and nothing is printed."""
    p = run(tool, *args)
    check(p.returncode == 1, f"{args}: exit {p.returncode}, want 1")
    check(p.stderr == f"nanort-run: error: {message}\n",
          f"{args}:\n  stderr {p.stderr!r}\n  want   {'nanort-run: error: ' + message!r}")
    check(p.stdout == "", f"{args}: printed {p.stdout!r}")


# ELF e_machine of an architecture other than this one, and both names.
HOST = {"x86_64": "x86-64", "aarch64": "aarch64", "riscv64": "riscv64"}[platform.machine()]
FOREIGN_MACHINE, FOREIGN = (183, "aarch64") if HOST == "x86-64" else (62, "x86-64")


def check_messages_that_say_what_to_do(tool, model, work, fixtures, xpath):
    """Issue #13: each mistake gets a message naming the fix, exit 1, no crash."""
    nrt, obj = os.path.join(fixtures, "tiny.nrt"), os.path.join(fixtures, "tiny.o")
    so, o = os.path.join(fixtures, "tiny.so"), os.path.join(fixtures, "tiny.o")
    expect_exact_error(tool, [nrt, "--input", f"x={xpath}"],
                       f"'{nrt}' is a nanort program (.nrt), which holds no kernels "
                       f"(nanort-inspect reads it): pass {so}, which nanoc wrote beside it, or "
                       f"link {o} into your program and call nanort_model_load")
    expect_exact_error(tool, [obj, "--input", f"x={xpath}"],
                       f"'{obj}' is an object file (ELF relocatable, x86-64), which nanort-run "
                       f"cannot load: pass {so}, which nanoc wrote beside it, or link {o} into "
                       f"your program and call nanort_model_load")

    # Another architecture's shared object: tiny.so with its e_machine changed.
    foreign = os.path.join(work, "foreign.so")
    data = bytearray(open(model, "rb").read())
    data[18:20] = FOREIGN_MACHINE.to_bytes(2, "little")
    with open(foreign, "wb") as f:
        f.write(data)
    expect_exact_error(tool, [foreign, "--input", f"x={xpath}"],
                       f"'{foreign}' is a shared object for {FOREIGN}, and this machine is "
                       f"{HOST}: run it on {FOREIGN} (or under qemu-user), or compile the model "
                       "for this machine (nanoc MODEL --target host, or a profile of nanoc "
                       "--list-targets)")

    # A renamed NAME.so: the name the file gives is wrong; --name fixes it.
    renamed = os.path.join(work, "renamed.so")
    shutil.copyfile(model, renamed)
    expect_exact_error(tool, [renamed, "--input", f"x={xpath}"],
                       f"'{renamed}' has no model 'renamed' (no symbol renamed_model; the name "
                       "comes from the file name unless --name gives one): it holds model "
                       "'tiny'; pass --name tiny")
    expect_exact_error(tool, [renamed, "--name", "other", "--input", f"x={xpath}"],
                       f"'{renamed}' has no model 'other' (no symbol other_model; the name "
                       "comes from the file name unless --name gives one): it holds model "
                       "'tiny'; pass --name tiny")
    p = run(tool, renamed, "--name=tiny", "--input", f"x={xpath}", "--output-dir",
            os.path.join(work, "renamed_out"))
    check(p.returncode == 0 and "output y f32[2,3]" in p.stdout,
          f"--name tiny on the renamed file: exit {p.returncode}: {p.stderr}")

    missing = os.path.join(work, "none.so")
    expect_exact_error(tool, [missing, "--input", f"x={xpath}"],
                       f"cannot open '{missing}': No such file or directory")
    expect_exact_error(tool, [work, "--input", f"x={xpath}"],
                       f"cannot open '{work}': Is a directory")
    expect_exact_error(tool, [xpath, "--input", f"x={xpath}"],
                       f"'{xpath}' is not a shared object (no ELF header): pass the NAME.so "
                       "that nanoc wrote")

    # Inputs: a missing file says why; another dtype names numpy's fix.
    none_npy = os.path.join(work, "none.npy")
    expect_exact_error(tool, [model, "--input", f"x={none_npy}"],
                       f"input 'x': {none_npy}: cannot open: No such file or directory")
    f64 = os.path.join(work, "x_f64.npy")
    np.save(f64, np.zeros((2, 3)))
    expect_exact_error(tool, [model, "--input", f"x={f64}"],
                       f"input 'x': {f64} holds f64 (np.float64), the model takes f32: save it "
                       "as np.float32, e.g. np.save(path, x.astype(np.float32))")
    i32 = os.path.join(work, "x_i32.npy")
    np.save(i32, np.zeros((2, 3), dtype=np.int32))
    expect_exact_error(tool, [model, "--input", f"x={i32}"],
                       f"input 'x': {i32} holds i32 (np.int32), the model takes f32: save it "
                       "as np.float32, e.g. np.save(path, x.astype(np.float32))")


def check_profile(tool, model, work, xpath):
    """--profile: a line per thunk and per op, slowest first, shares adding to 100%."""
    p = run(tool, model, "--input", f"x={xpath}", "--output-dir", os.path.join(work, "prof"),
            "--repeat", "4", "--profile")
    check(p.returncode == 0, f"--profile: exit {p.returncode}: {p.stderr}")
    lines = p.stdout.splitlines()
    check(len(lines) == 9, f"--profile: want 9 lines, got {lines}")
    if len(lines) != 9:
        return
    m = re.fullmatch(r"profile runs=4 thunks=2 thunk_us=([0-9.]+)", lines[4])
    check(m is not None, f"profile line {lines[4]!r}")
    thunks = [re.fullmatch(r"thunk (\d) us=([0-9.]+) share=([0-9.]+)% op=(\S+) node=(\S+)", ln)
              for ln in lines[5:7]]
    check(all(thunks), f"thunk lines {lines[5:7]}")
    if all(thunks):
        check(sorted((t.group(1), t.group(4), t.group(5)) for t in thunks) ==
              [("0", "Add", "add0"), ("1", "Identity", "y_copy")], f"thunk lines {lines[5:7]}")
        check(float(thunks[0].group(2)) >= float(thunks[1].group(2)), "thunks slowest first")
        check(abs(sum(float(t.group(3)) for t in thunks) - 100) < 0.2, "thunk shares sum to 100%")
    ops = [re.fullmatch(r"op (\S+) thunks=1 us=([0-9.]+) share=([0-9.]+)%", ln) for ln in lines[7:]]
    check(all(ops) and sorted(o.group(1) for o in ops) == ["Add", "Identity"],
          f"op lines {lines[7:]}")
    if all(ops):
        check(float(ops[0].group(2)) >= float(ops[1].group(2)), "ops slowest first")


def check_threads(tool, model, work, xpath, want):
    """--threads N: the same output for every N, profiles included; N from 1."""
    for threads in ("2", "3"):
        out = os.path.join(work, "threads" + threads)
        p = run(tool, model, "--input", f"x={xpath}", "--output-dir", out, "--repeat", "3",
                "--threads", threads, "--profile")
        check(p.returncode == 0, f"--threads {threads}: exit {p.returncode}: {p.stderr}")
        y = np.load(os.path.join(out, "y.npy"))
        check(np.array_equal(y, want), f"--threads {threads}: y.npy {y}")
        check("profile runs=3 thunks=2" in p.stdout, f"--threads {threads} --profile: {p.stdout}")
    expect_error(tool, [model, "--threads", "0", "--input", f"x={xpath}"],
                 "--threads takes a count from 1")


def main():
    tool, model, work, fixtures = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
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
    check(len(lines) == 4, f"want 4 lines, got {lines}")
    if len(lines) == 4:
        check(re.fullmatch(r"target cpu=(x86-64|generic|generic-rv64)", lines[0]) is not None,
              f"target line {lines[0]!r}")
        check(lines[1] == f"output y f32[2,3] checksum={float(want.astype(np.float64).sum()):.9g}",
              f"output line {lines[1]!r}")
        m = re.fullmatch(r"latency_us median=([0-9.]+) min=([0-9.]+) runs=5", lines[2])
        check(m is not None and float(m.group(2)) <= float(m.group(1)),
              f"latency line {lines[2]!r}")
        check(re.fullmatch(r"startup_us load=[0-9]+\.[0-9]{3} session=[0-9]+\.[0-9]{3}", lines[3])
              is not None, f"startup line {lines[3]!r}")
    y = np.load(os.path.join(out, "y.npy"))
    check(y.dtype == np.float32 and y.shape == (2, 3) and np.array_equal(y, want), f"y.npy {y}")

    p = run(tool, model, "--input", f"x={xpath}", "--output-dir", out, "--repeat", "0")
    check(p.returncode == 0 and p.stdout.splitlines()[-2].endswith("runs=1"),
          f"--repeat 0: {p.stdout!r} {p.stderr!r}")

    expect_error(tool, [model, "--input", f"z={xpath}"], "the model has no input 'z'; its inputs: x f32[2,3]")
    expect_error(tool, [model], "missing --input for model input(s): x")
    expect_error(tool, [model, "--input", f"x={xpath}", "--input", f"x={xpath}"], "more than once")
    bad_shape = os.path.join(work, "x_shape.npy")
    np.save(bad_shape, np.zeros((3, 2), dtype=np.float32))
    expect_error(tool, [model, "--input", f"x={bad_shape}"], "SHAPE_MISMATCH: ")
    check_messages_that_say_what_to_do(tool, model, work, fixtures, xpath)
    check_profile(tool, model, work, xpath)
    check_threads(tool, model, work, xpath, want)
    expect_error(tool, [model, "--repeat", "-1", "--input", f"x={xpath}"], "--repeat takes a count")
    expect_error(tool, [model, "--frobnicate"], "unknown option '--frobnicate'")
    p = run(tool, "--help")
    check(p.returncode == 0 and all(f in p.stdout for f in
                                    ("--input", "--output-dir", "--repeat", "--warmup", "--name",
                                     "--threads", "--profile", "--version", "--help")),
          "--help documents every flag")
    p = run(tool, "--version")
    check(p.returncode == 0 and re.fullmatch(
        r"nanort-run \d+\.\d+\.\d+ \(program format 1\.\d+, kernel ABI \d+\)\n", p.stdout) is not None,
        f"--version: {p.stdout!r}")

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
