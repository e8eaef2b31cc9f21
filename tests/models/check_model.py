#!/usr/bin/env python3
"""Compiles one exported architecture with nanoc, runs it with nanort-run on
fresh random inputs and compares every output with ONNX Runtime.

Tolerance (f32): normwise relative error max|nanort - ort| / max|ort| <= 1e-4
per output (deep networks accumulate rounding differently from ONNX Runtime's
kernels; 1e-4 is about 800 ulp of the largest output).

Inputs: floats standard normal; an int64 input that feeds a Gather (token ids
into an embedding table) uniform over the table's rows; other int64 inputs 0
or 1 (masks). The seed is printed, and --seed replays it.

    check_model.py MODEL.onnx --nanoc PATH --nanort-run PATH --work DIR [--seed N]
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import run_e2e  # noqa: E402

TOLERANCE = 1e-4


def int_input_bound(m: onnx.ModelProto, name: str) -> int:
    """Rows of the table that `name` indexes through a Gather, else 2."""
    inits = {t.name: t for t in m.graph.initializer}
    for node in m.graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == name:
            table = inits.get(node.input[0])
            if table is not None and table.dims:
                return int(table.dims[0])
    return 2


def make_inputs(m: onnx.ModelProto, seed: int):
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, dtype, shape in run_e2e.graph_inputs(m):
        if np.issubdtype(dtype, np.integer):
            feeds[name] = rng.integers(0, int_input_bound(m, name), shape).astype(dtype)
        else:
            feeds[name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="an .onnx file from export_models.py")
    p.add_argument("--nanoc", required=True)
    p.add_argument("--nanort-run", dest="nanort_run", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--seed", type=int)
    args = p.parse_args(argv)

    name = os.path.splitext(os.path.basename(args.model))[0]
    work = os.path.join(os.path.abspath(args.work), name)
    in_dir, out_dir, art_dir = (os.path.join(work, d) for d in ("inputs", "outputs", "nanoc"))
    for d in (in_dir, out_dir, art_dir):
        os.makedirs(d, exist_ok=True)
    for f in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, f))

    m = onnx.load(args.model)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little")
    print(f"model {name}: seed {seed}")
    feeds = make_inputs(m, seed)
    ref = run_e2e.run_reference(args.model, feeds)

    if run_e2e.run_tool([args.nanoc, args.model, "--name", name, "-o", art_dir], "nanoc") is None:
        return 1
    cmd = [args.nanort_run, os.path.join(art_dir, name + ".so")]
    for input_name, x in feeds.items():
        path = os.path.join(in_dir, run_e2e.file_safe(input_name) + ".npy")
        np.save(path, x)
        cmd += ["--input", f"{input_name}={path}"]
    cmd += ["--output-dir", out_dir]
    if run_e2e.run_tool(cmd, "nanort-run") is None:
        return 1

    problems = []
    run_e2e.TOLERANCE_F32 = TOLERANCE
    for o in m.graph.output:
        path = os.path.join(out_dir, run_e2e.file_safe(o.name) + ".npy")
        if not os.path.isfile(path):
            problems.append(f"nanort-run wrote no {path}")
            continue
        found, _ = run_e2e.compare(o.name, np.load(path), ref[o.name])
        problems += found
    if problems:
        for problem in problems:
            print("FAIL:", problem, file=sys.stderr)
        print(f"replay: --seed {seed}", file=sys.stderr)
        return 1
    print(f"PASS: {name} matches ONNX Runtime (normwise relative error <= {TOLERANCE:.0e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
