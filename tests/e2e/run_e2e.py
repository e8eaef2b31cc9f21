#!/usr/bin/env python3
"""Runs one end-to-end case: ONNX model -> nanoc -> nanort-run, against ONNX Runtime.

Tolerance (f32): max relative error, normwise:

    err = max|nanort - ort| / max(1e-30, max|ort|)  <=  1e-5

per output, over all elements; and every output's shape and dtype must equal
ONNX Runtime's. NaN counts as equal only where both sides hold NaN.

The reference is ONNX Runtime on CPUExecutionProvider with graph optimizations
disabled, so it computes the model as written rather than its own fused form.

Inputs are fresh on every run, drawn from a numpy RNG seeded from os.urandom;
the seed is printed so a failure can be replayed with --seed.

    run_e2e.py CASE --nanoc PATH --nanort-run PATH --work DIR [--seed N]
    run_e2e.py CASE --reference-only --work DIR   # model + ONNX Runtime only

Exit status: 0 when every output matches, 1 on a mismatch or a failing tool.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

TOLERANCE_F32 = 1e-5
TOOL_TIMEOUT_S = 300

ONNX_TO_NUMPY = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.BOOL: np.bool_,
}


def file_safe(name: str) -> str:
    """The file-name form nanort-run uses for a tensor name: every byte of the
    UTF-8 name outside [A-Za-z0-9_.-] becomes '_'."""
    return re.sub(rb"[^A-Za-z0-9_.-]", b"_", name.encode()).decode()


def graph_inputs(m: onnx.ModelProto):
    """(name, numpy dtype, shape) of every graph input that is not an initializer."""
    inits = {t.name for t in m.graph.initializer}
    out = []
    for v in m.graph.input:
        if v.name in inits:
            continue
        t = v.type.tensor_type
        shape = tuple(d.dim_value for d in t.shape.dim)
        out.append((v.name, ONNX_TO_NUMPY[t.elem_type], shape))
    return out


def make_inputs(case: models.Case, m: onnx.ModelProto, seed: int):
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, dtype, shape in graph_inputs(m):
        if name in case.input_ranges:
            low, high, signed = case.input_ranges[name]
            x = rng.uniform(low, high, shape)
            if signed:
                x *= rng.choice([-1.0, 1.0], shape)
        else:
            x = rng.standard_normal(shape)
        feeds[name] = np.asarray(x, dtype=dtype)
    return feeds


def run_reference(model_path: str, feeds):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def run_tool(cmd, what):
    print("+", shlex.join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"FAIL: {what} ran past {TOOL_TIMEOUT_S} s", file=sys.stderr)
        return None
    except OSError as e:
        print(f"FAIL: cannot run {what}: {e}", file=sys.stderr)
        return None
    if p.stdout:
        print(p.stdout, end="" if p.stdout.endswith("\n") else "\n")
    if p.stderr:
        print(p.stderr, end="" if p.stderr.endswith("\n") else "\n", file=sys.stderr)
    if p.returncode != 0:
        print(f"FAIL: {what} exited with status {p.returncode}", file=sys.stderr)
        return None
    return p


def compare(name, got, want):
    """Returns a list of problems (empty when `got` matches `want`)."""
    problems = []
    if got.dtype != want.dtype:
        problems.append(f"output '{name}': dtype {got.dtype}, ONNX Runtime has {want.dtype}")
    if got.shape != want.shape:
        problems.append(f"output '{name}': shape {list(got.shape)}, "
                        f"ONNX Runtime has {list(want.shape)}")
    if problems:
        return problems, None
    if want.dtype != np.float32:
        bad = np.argwhere(got != want)
        if bad.size:
            i = tuple(bad[0])
            problems.append(f"output '{name}': {len(bad)} elements differ, first at {list(i)}: "
                            f"nanort {got[i]}, ONNX Runtime {want[i]}")
        return problems, 0.0
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if np.any(nan_g != nan_w):
        i = tuple(np.argwhere(nan_g != nan_w)[0])
        problems.append(f"output '{name}': NaN where the other side has none, first at "
                        f"{list(i)}: nanort {got[i]}, ONNX Runtime {want[i]}")
        return problems, float("inf")
    diff = np.where(nan_w, 0.0, np.abs(g - w))
    if g.size == 0:
        return problems, 0.0
    scale = max(1e-30, float(np.max(np.where(nan_w, 0.0, np.abs(w)))))
    max_diff = float(np.max(diff))
    err = max_diff / scale if np.isfinite(max_diff) else float("inf")
    print(f"output '{name}' {want.dtype}{list(want.shape)}: max|diff| = {max_diff:.3e}, "
          f"max|ort| = {scale:.3e}, normwise relative error = {err:.3e} "
          f"(tolerance {TOLERANCE_F32:.0e})")
    if not err <= TOLERANCE_F32:
        i = np.unravel_index(int(np.argmax(diff)), diff.shape)
        problems.append(f"output '{name}': normwise relative error {err:.3e} > "
                        f"{TOLERANCE_F32:.0e}; worst element at {list(map(int, i))}: "
                        f"nanort {float(got[i])!r}, ONNX Runtime {float(want[i])!r}")
    return problems, err


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="One end-to-end case against ONNX Runtime.")
    p.add_argument("case", help="a case name from models.py --list")
    p.add_argument("--nanoc", help="path to nanoc")
    p.add_argument("--nanort-run", dest="nanort_run", help="path to nanort-run")
    p.add_argument("--work", required=True, help="scratch folder (the case gets a subfolder)")
    p.add_argument("--seed", type=int, help="replay the inputs of an earlier run")
    p.add_argument("--reference-only", action="store_true",
                   help="build the model and run ONNX Runtime only (checks the suite itself)")
    args = p.parse_args(argv)
    if not args.reference_only and not (args.nanoc and args.nanort_run):
        p.error("--nanoc and --nanort-run are required (or --reference-only)")

    try:
        case = models.get_case(args.case)
    except KeyError as e:
        print(f"run_e2e.py: error: {e.args[0]}", file=sys.stderr)
        return 1
    work = os.path.join(os.path.abspath(args.work), case.name)
    in_dir, out_dir, art_dir = (os.path.join(work, d) for d in ("inputs", "outputs", "nanoc"))
    for d in (in_dir, out_dir, art_dir):
        os.makedirs(d, exist_ok=True)
    for f in os.listdir(out_dir):  # a stale output must not pass for a fresh one
        os.remove(os.path.join(out_dir, f))

    m = case.build()
    model_path = os.path.join(work, case.name + ".onnx")
    onnx.save(m, model_path)

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little")
    replay = (f"{sys.executable} {os.path.abspath(__file__)} {case.name} --seed {seed} --work {args.work}"
              + (f" --nanoc {args.nanoc} --nanort-run {args.nanort_run}"
                 if not args.reference_only else " --reference-only"))
    print(f"case {case.name}: seed {seed}")
    feeds = make_inputs(case, m, seed)
    ref = run_reference(model_path, feeds)

    declared = [o.name for o in m.graph.output]
    if args.reference_only:
        for o in m.graph.output:
            shape = tuple(d.dim_value for d in o.type.tensor_type.shape.dim)
            if ref[o.name].shape != shape:
                print(f"FAIL: ONNX Runtime gives '{o.name}' shape {ref[o.name].shape}, "
                      f"the model declares {shape}", file=sys.stderr)
                return 1
        print(f"PASS (reference only): {case.name}: {len(declared)} outputs")
        return 0

    if run_tool([args.nanoc, model_path, "--name", case.name, "-o", art_dir], "nanoc") is None:
        return 1
    so_path = os.path.join(art_dir, case.name + ".so")
    if not os.path.isfile(so_path):
        print(f"FAIL: nanoc exited 0 but wrote no {so_path}", file=sys.stderr)
        return 1

    cmd = [args.nanort_run, so_path]
    for name, x in feeds.items():
        path = os.path.join(in_dir, file_safe(name) + ".npy")
        np.save(path, x)
        cmd += ["--input", f"{name}={path}"]
    cmd += ["--output-dir", out_dir]
    run = run_tool(cmd, "nanort-run")
    if run is None:
        print(f"replay: {replay}", file=sys.stderr)
        return 1

    problems = []
    printed = {line.split()[1] for line in run.stdout.splitlines()
               if line.startswith("output ") and len(line.split()) > 1}
    errors = []
    for name in declared:
        if name not in printed:
            problems.append(f"output '{name}': nanort-run printed no 'output {name} ...' line")
        path = os.path.join(out_dir, file_safe(name) + ".npy")
        if not os.path.isfile(path):
            problems.append(f"output '{name}': nanort-run wrote no {path}")
            continue
        got = np.load(path, allow_pickle=False)
        probs, err = compare(name, got, ref[name])
        problems += probs
        if err is not None:
            errors.append(err)

    if problems:
        print(f"FAIL: {case.name} (seed {seed})", file=sys.stderr)
        for pr in problems:
            print("  " + pr, file=sys.stderr)
        print(f"replay: {replay}", file=sys.stderr)
        return 1
    print(f"PASS: {case.name}: max normwise relative error {max(errors, default=0.0):.3e} "
          f"over {len(declared)} outputs (tolerance {TOLERANCE_F32:.0e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
