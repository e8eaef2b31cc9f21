#!/usr/bin/env python3
"""nanoc's GPU programs on nanort's GPU offload, through the fake driver.

Builds a small ONNX model (MatMul + Add + Relu), compiles it with
`nanoc --target sm_80,sm_90` (an sm_80 cubin, its PTX and an sm_90 cubin),
and runs it with nanort-run against tests/cuda's fake libcuda.so.1 for
several compute capabilities, checking the image each one picks, the
refusal of a device no image fits, what a run asks of the driver (one
device allocation per session, one graph launch and one synchronize per run)
and that a missing driver is refused cleanly. The fake computes nothing, so
outputs are not checked here (tests/gpu does that on a real GPU).

usage: nanoc_gpu_model_check.py --nanoc NANOC --run NANORT_RUN --driver FAKE_LIBCUDA --work DIR
"""
import argparse
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model(path):
    w = numpy_helper.from_array(np.arange(8 * 16, dtype=np.float32).reshape(8, 16) / 100, "W")
    b = numpy_helper.from_array(np.linspace(-1, 1, 16).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["m"]),
         helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])],
        "gpu_tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [w, b])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nanoc", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--driver", required=True)
    parser.add_argument("--work", required=True, type=pathlib.Path)
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    make_model(work / "gpu_tiny.onnx")
    subprocess.run([args.nanoc, str(work / "gpu_tiny.onnx"), "--target", "sm_80,sm_90", "-o",
                    str(work / "out")], check=True)
    np.save(work / "x.npy", np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8))
    failures = []

    def run(cc, driver=args.driver, repeat=3, extra=()):
        log = work / f"fake_{cc}.log"
        log.unlink(missing_ok=True)
        env = dict(os.environ, NANORT_CUDA_DRIVER=driver, FAKE_CUDA_CC=str(cc),
                   FAKE_CUDA_LOG=str(log))
        result = subprocess.run([args.run, str(work / "out" / "gpu_tiny.so"), "--input",
                                 f"x={work / 'x.npy'}", "--output-dir", str(work / "res"),
                                 "--repeat", str(repeat), "--warmup", "0", *extra],
                                env=env, capture_output=True, text=True)
        lines = log.read_text().splitlines() if log.exists() else []
        return result, lines

    repeat_runs = 3
    expected = {
        86: "target gpu=sm_80 cubin on NVIDIA compute capability 8.6",
        90: "target gpu=sm_90 cubin on NVIDIA compute capability 9.0",
        120: "target gpu=PTX 7.0 for sm_80, JIT-compiled for NVIDIA compute capability 12.0",
    }
    for cc, line in expected.items():
        result, log = run(cc)
        out = result.stdout.splitlines()
        if result.returncode != 0 or line not in out:
            failures.append(f"cc {cc}: wanted '{line}', got rc {result.returncode}: "
                            f"{result.stdout}{result.stderr}")
            continue
        # Every run pushes the context once; so do session creation and release.
        runs = sum(1 for l in log if l == "cuCtxPushCurrent") - 2
        counts = {c: sum(1 for l in log if l.split(" ")[0] == c)
                  for c in ("cuMemAlloc", "cuGraphLaunch", "cuStreamSynchronize", "cuMemFree")}
        if counts["cuMemAlloc"] != 1 or counts["cuMemFree"] != 1:
            failures.append(f"cc {cc}: {counts} (one device allocation, freed, expected)")
        if runs < repeat_runs or counts["cuGraphLaunch"] != runs or \
                counts["cuStreamSynchronize"] != runs:
            failures.append(f"cc {cc}: {runs} runs but {counts}")
    # --cuda-io: x and y in the caller's device memory (nanort_run_with_memory):
    # each run copies device to device (x: 128 bytes, y: 256), with no host
    # staging, and checks both allocations.
    result, log = run(86, repeat=repeat_runs, extra=["--cuda-io"])
    runs = repeat_runs + 1
    calls = {c: sum(1 for l in log if l == c) for c in (
        "cuMemcpyDtoDAsync 128", "cuMemcpyDtoDAsync 256", "cuMemGetAddressRange")}
    staged = [l for l in log if l.startswith(("cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync"))]
    if result.returncode != 0 or "cuda_io inputs=1/1 outputs=1/1" not in result.stdout.splitlines() \
            or calls != {"cuMemcpyDtoDAsync 128": runs, "cuMemcpyDtoDAsync 256": runs,
                         "cuMemGetAddressRange": 2 * runs} or staged:
        failures.append(f"--cuda-io: rc {result.returncode}, {calls}, staged {staged}: "
                        f"{result.stdout}{result.stderr}")
    result, _ = run(70)
    if result.returncode == 0 or "GPU compute capability 7.0; the program has sm_80 cubin" \
            not in result.stderr:
        failures.append(f"cc 7.0 not refused as expected: {result.stderr}")
    result, _ = run(86, driver="/nonexistent/libcuda.so.1")
    if result.returncode == 0 or "UNAVAILABLE: no CUDA driver" not in result.stderr:
        failures.append(f"no driver not refused as expected: {result.stderr}")
    for failure in failures:
        print("FAIL:", failure)
    print("ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
