#!/usr/bin/env python3
"""Compiles the GPU suite's models for every SM profile of targets/gpu in one
artifact each (a cubin per SM through the toolkit's ptxas, which runs with
--warn-on-spills, plus PTX for the lowest SM), then reads each program back
(flatc --json) and checks that every SM has its cubin, that the PTX is there,
and that the model's products really run on the GPU. Prints the GPU payload
bytes per model and SM; --report writes that table into a Markdown file
between its markers.

    compile_all_sm.py --nanoc PATH --flatc PATH --schema schema/program.fbs \\
        --targets targets --work DIR [--report docs/GPU.md]

Exit status: 0 when every model compiled and checked out.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import models  # noqa: E402
import onnx  # noqa: E402

# Models whose every product (MatMul, Gemm) and normalization must be on the
# GPU, and the e2e cases of gpu_bundle.py.
sys.path.insert(0, HERE)
from gpu_bundle import DEFAULT_CASES  # noqa: E402

BEGIN, END = "<!-- gpu-payload:begin -->", "<!-- gpu-payload:end -->"


def compile_case(nanoc, flatc, schema, name, sms, d, flags=()):
    """Compiles e2e case `name` for the SMs `sms` (every op with a GPU kernel on
    the GPU, an x86-64-v3 host) into folder d and reads its program back with
    flatc --json: (program, None), or (None, what failed)."""
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".onnx")
    onnx.save(models.get_case(name).build(), path)
    cmd = [nanoc, path, "--target", ",".join(sms), "--host", "x86-64-v3", "-o", d, "--name",
           name, "--no-progress", "--gpu-offload=all", *flags]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"{' '.join(cmd)}: nanoc failed: {r.stderr.strip()}"
    r = subprocess.run([flatc, "--json", "--strict-json", "--raw-binary", "-o", d, schema, "--",
                        os.path.join(d, name + ".nrt")], capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"{name}: flatc could not read the program: {r.stderr.strip()}"
    with open(os.path.join(d, name + ".json")) as fh:
        return json.load(fh), None


def cubins_of(gpu):
    """The GPU module's cubins by SM name ("sm_90a"), as bytes."""
    return {f"sm_{i['sm']}{i.get('variant', '')}": bytes(i.get("data", []))
            for i in gpu.get("images", []) if i.get("format", "Cubin") == "Cubin"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nanoc", required=True)
    p.add_argument("--flatc", required=True)
    p.add_argument("--schema", required=True)
    p.add_argument("--targets", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--report")
    p.add_argument("--case", action="append")
    args = p.parse_args()
    if not (os.environ.get("NANOC_PTXAS") or shutil.which("ptxas")
            or os.path.exists("/usr/local/cuda/bin/ptxas")):
        print("SKIP: no ptxas (the CUDA toolkit's), which nanoc needs for GPU targets")
        return 77

    sms = []
    for f in sorted(glob.glob(os.path.join(args.targets, "gpu", "*.json"))):
        with open(f) as fh:
            sms.append(json.load(fh)["name"])
    sms.sort(key=lambda s: int(s[3:]))
    os.makedirs(args.work, exist_ok=True)
    failures, table = [], []
    for name in args.case or DEFAULT_CASES:
        program, error = compile_case(args.nanoc, args.flatc, args.schema, name, sms,
                                      os.path.join(args.work, name))
        if error:
            failures.append(error)
            continue
        gpu = program.get("gpu")
        if not gpu:
            failures.append(f"{name}: the program has no GPU module")
            continue
        cubins = {sm: len(data) for sm, data in cubins_of(gpu).items()}
        ptx = [i for i in gpu["images"] if i.get("format") == "Ptx"]
        missing = [s for s in sms if s not in cubins]
        if missing:
            failures.append(f"{name}: no cubin for {', '.join(missing)}")
        if len(ptx) != 1 or ptx[0]["sm"] != int(sms[0][3:]):
            failures.append(f"{name}: expected one PTX image for {sms[0]}, found "
                            f"{[('sm_%d' % i['sm']) for i in ptx]}")
        thunks = program["entries"][0]["thunks"]
        host_ops = sorted({t["op"] for t in thunks if t["kind_type"] == "KernelThunk"})
        launches = sum(1 for t in thunks if t["kind_type"] == "GpuLaunchThunk")
        for op in ("MatMul", "Gemm", "Softmax", "LayerNormalization"):
            if op in host_ops:
                failures.append(f"{name}: {op} runs on the host")
        table.append((name, launches, len(gpu["kernels"]), host_ops,
                      [cubins.get(s, 0) for s in sms], len(ptx[0]["data"]) if ptx else 0))
        print(f"{name}: {launches} launches, host kernels {host_ops or 'none'}, "
              + ", ".join(f"{s} {cubins.get(s, 0)} B" for s in sms)
              + f", PTX {table[-1][-1]} B")

    lines = ["| model | GPU launches | host kernels | " + " | ".join(sms) + " | PTX |",
             "|---|---:|---|" + "---:|" * (len(sms) + 1)]
    for name, launches, kernels, host_ops, sizes, ptx_bytes in table:
        lines.append(f"| {name} | {launches} | {', '.join(host_ops) or '-'} | "
                     + " | ".join(f"{s:,}" for s in sizes) + f" | {ptx_bytes:,} |")
    print("\n".join(lines))
    if args.report and not failures:
        with open(args.report) as fh:
            text = fh.read()
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            _, tail = rest.split(END, 1)
            with open(args.report, "w") as fh:
                fh.write(head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
