#!/usr/bin/env python3
"""One GPU suite case through the SIMT emulator, against ONNX Runtime.

The case's model (tests/e2e/models.py) runs as nanoc --target sm_XY
--gpu-offload=all compiles it (every op with a GPU kernel on the GPU), its GPU kernels' LLVM IR executed by gpu-simt-run's emulator, on fresh
random inputs; every output must match ONNX Runtime within run_e2e.py's
tolerance (normwise relative error <= 1e-5 for f32, exact otherwise).

With --gpu-precision tf32 | bf16 | f16 the f32 products run on the
(emulated) tensor cores, and f32 outputs are held to that mode's tolerance
(TOLERANCES: max|diff| / max|ONNX Runtime| <= 2e-3 for tf32 and f16, 1e-2 for
bf16; a few times each format's unit roundoff, 2^-11 and 2^-8/2^-9).

    run_simt.py CASE --simt PATH --work DIR [--seed N] [--gpu-precision MODE]
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import models  # noqa: E402
import run_e2e  # noqa: E402


TOLERANCES = {"exact": run_e2e.TOLERANCE_F32, "tf32": 2e-3, "f16": 2e-3, "bf16": 1e-2}


def simt_problems(simt, model_path, m, feeds, ref, work, out, flags=(), timeout=500):
    """Runs gpu-simt-run on model_path (loaded as m) with `feeds`, written to
    work, its outputs to out; returns its outputs' problems against ONNX
    Runtime's `ref` by run_e2e.compare (the caller sets the tolerance), or a
    failure of the run itself, printing what it ran."""
    cmd = [simt, model_path, "--output-dir", out, *flags]
    for k, v in feeds.items():
        f = os.path.join(work, "in_" + run_e2e.file_safe(k) + ".npy")
        np.save(f, v)
        cmd += ["--input", f"{k}={f}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    print(r.stdout, end="")
    print(r.stderr, end="", file=sys.stderr)
    if r.returncode != 0:
        return [f"gpu-simt-run exited {r.returncode}"]
    if " 0 kernel launches" in r.stdout:
        return ["nothing ran on the (emulated) GPU"]
    problems = []
    for o in m.graph.output:
        got = np.load(os.path.join(out, run_e2e.file_safe(o.name) + ".npy"))
        problems += run_e2e.compare(o.name, got, ref[o.name])[0]
    return problems


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("case")
    p.add_argument("--simt", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--seed", type=int)
    p.add_argument("--gpu-precision", dest="precision", default="exact", choices=TOLERANCES)
    args = p.parse_args()
    run_e2e.TOLERANCE_F32 = TOLERANCES[args.precision]
    case = models.get_case(args.case)
    work = os.path.join(os.path.abspath(args.work), case.name +
                        ("" if args.precision == "exact" else "_" + args.precision))
    out = os.path.join(work, "outputs")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    m = case.build()
    path = os.path.join(work, case.name + ".onnx")
    onnx.save(m, path)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little")
    print(f"case {case.name}: seed {seed}")
    feeds = run_e2e.make_inputs(case, m, seed)
    ref = run_e2e.run_reference(path, feeds)
    problems = simt_problems(args.simt, path, m, feeds, ref, work, out,
                             ["--gpu-offload=all", "--gpu-precision=" + args.precision])
    for problem in problems:
        print("FAIL:", problem, file=sys.stderr)
    if problems:
        print(f"replay: {sys.executable} {os.path.abspath(__file__)} {case.name} --seed {seed} "
              f"--simt {args.simt} --work {args.work} --gpu-precision {args.precision}",
              file=sys.stderr)
        return 1
    print(f"PASS: {case.name}" + ("" if args.precision == "exact" else f" ({args.precision})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
