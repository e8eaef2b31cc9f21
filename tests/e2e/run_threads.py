#!/usr/bin/env python3
"""Outputs do not depend on the thread count: each case of models.py named
here is compiled once by nanoc and run by nanort-run with --threads 1, 2, 3
and 4 on the same random inputs; every output file must be byte-identical to
the 1-thread run's. The cases are those whose kernels have several tasks
(convolutions, batched matmul, pools), which nanort splits over the threads
(Gemm, norms and recurrences are one task each today); nanort-inspect shows
the task counts, and a case whose kernels all have one task fails (it would
test nothing).

    run_threads.py --nanoc PATH --nanort-run PATH --nanort-inspect PATH --work DIR
                   [CASE ...]

Exit status: 0 when every case matches, 1 otherwise.
"""

import argparse
import os
import re
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import run_e2e  # noqa: E402

CASES = ["conv_basic", "conv_stride2", "conv_depthwise", "conv_group2", "conv_pointwise",
         "conv_3d_group2_same_lower", "convtranspose_2d_stride_pads_output_padding",
         "matmul_batched_broadcast", "maxpool_2x2", "averagepool_2x2", "small_cnn"]
THREADS = [1, 2, 3, 4]


def run_case(name, args) -> list:
    case = models.get_case(name)
    work = os.path.join(os.path.abspath(args.work), case.name)
    art_dir = os.path.join(work, "nanoc")
    os.makedirs(art_dir, exist_ok=True)
    m = case.build()
    model_path = os.path.join(work, case.name + ".onnx")
    onnx.save(m, model_path)
    if run_e2e.run_tool([args.nanoc, model_path, "--name", case.name, "-o", art_dir],
                        "nanoc") is None:
        return [f"{name}: nanoc failed"]
    so_path = os.path.join(art_dir, case.name + ".so")

    inspect = run_e2e.run_tool([args.nanort_inspect, so_path], "nanort-inspect")
    if inspect is None:
        return [f"{name}: nanort-inspect failed"]
    tasks = [int(t) for t in re.findall(r" tasks (\d+)", inspect.stdout)]
    if max(tasks, default=0) < 2:
        return [f"{name}: no kernel has more than one task ({tasks}), so nothing is split"]

    feeds = run_e2e.make_inputs(case, m, seed=1234)
    cmd = [args.nanort_run, so_path, "--repeat", "2"]
    for input_name, x in feeds.items():
        path = os.path.join(work, "in_" + run_e2e.file_safe(input_name) + ".npy")
        np.save(path, x)
        cmd += ["--input", f"{input_name}={path}"]
    reference = None
    problems = []
    for threads in THREADS:
        out_dir = os.path.join(work, f"threads{threads}")
        os.makedirs(out_dir, exist_ok=True)
        for f in os.listdir(out_dir):
            os.remove(os.path.join(out_dir, f))
        if run_e2e.run_tool(cmd + ["--output-dir", out_dir, "--threads", str(threads)],
                            "nanort-run") is None:
            return problems + [f"{name}: nanort-run --threads {threads} failed"]
        outputs = {}
        for o in m.graph.output:
            path = os.path.join(out_dir, run_e2e.file_safe(o.name) + ".npy")
            with open(path, "rb") as f:
                outputs[o.name] = f.read()
        if reference is None:
            reference = outputs
        for o, data in outputs.items():
            if data != reference[o]:
                problems.append(f"{name}: output '{o}' with --threads {threads} differs from "
                                f"--threads 1")
    print(f"{name}: kernels' task counts up to {max(tasks)}; outputs identical for threads "
          f"{THREADS}" if not problems else f"{name}: MISMATCH")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Outputs are the same for every thread count.")
    p.add_argument("cases", nargs="*", default=CASES)
    p.add_argument("--nanoc", required=True)
    p.add_argument("--nanort-run", dest="nanort_run", required=True)
    p.add_argument("--nanort-inspect", dest="nanort_inspect", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args(argv)
    problems = []
    for name in args.cases:
        problems += run_case(name, args)
    for pr in problems:
        print("FAIL: " + pr, file=sys.stderr)
    if not problems:
        print(f"PASS: {len(args.cases)} cases, outputs byte-identical for threads {THREADS}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
