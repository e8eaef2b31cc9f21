#!/usr/bin/env python3
"""One zoo model (tests/models) for the GPU: compiled by nanoc for every SM
profile of targets/gpu (ptxas on each kernel, no spills allowed), then run with
its GPU kernels' own IR in the SIMT emulator (gpu-simt-run) on fresh random
inputs and compared with ONNX Runtime within check_model.py's tolerance
(normwise relative error <= 1e-4).

With --run and --driver, the compiled program is also loaded and run once by
nanort-run against tests/cuda's fake libcuda.so.1 (compute capability 9.0):
nanort verifies the whole program there (its buffers, their alignment, the
GPU module table) as it does on a real GPU, where a shufflenet_v2 whose
Concat parts broke the device buffers' alignment was refused. The fake
computes nothing, so only that the session loads, picks the sm_90 cubin and
runs is checked.

    run_zoo.py MODEL.onnx --nanoc PATH --simt PATH --targets DIR --work DIR [--seed N]
               [--run NANORT_RUN --driver FAKE_LIBCUDA]
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import check_model  # noqa: E402
import run_e2e  # noqa: E402

sys.path.insert(0, HERE)
from run_simt import simt_problems  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--nanoc", required=True)
    p.add_argument("--simt", required=True)
    p.add_argument("--targets", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--seed", type=int)
    p.add_argument("--run", help="nanort-run, to load the program through --driver")
    p.add_argument("--driver", help="tests/cuda's fake libcuda.so.1")
    args = p.parse_args()
    if not (os.environ.get("NANOC_PTXAS") or shutil.which("ptxas")
            or os.path.exists("/usr/local/cuda/bin/ptxas")):
        print("SKIP: no ptxas (the CUDA toolkit's), which nanoc needs for GPU targets")
        return 77
    if not os.path.exists(args.model):
        print(f"FAIL: {args.model} not found (the nanort_model_zoo target exports it)")
        return 1
    name = os.path.splitext(os.path.basename(args.model))[0]
    work = os.path.join(os.path.abspath(args.work), name)
    out = os.path.join(work, "outputs")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(out)

    sms = []
    for f in glob.glob(os.path.join(args.targets, "gpu", "*.json")):
        with open(f) as fh:
            sms.append(json.load(fh)["name"])
    sms.sort(key=lambda s: int(s[3:]))
    r = subprocess.run([args.nanoc, args.model, "--target", ",".join(sms), "--host", "x86-64-v3",
                        "-o", os.path.join(work, "nanoc"), "--name", name, "--no-progress"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(r.stderr[-4000:], file=sys.stderr)
        print(f"FAIL: nanoc --target {','.join(sms)} failed", file=sys.stderr)
        return 1
    print(f"compiled for {', '.join(sms)}")

    m = onnx.load(args.model)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little")
    print(f"model {name}: seed {seed}")
    feeds = check_model.make_inputs(m, seed)
    if args.run and args.driver:
        cmd = [args.run, os.path.join(work, "nanoc", name + ".so"), "--repeat", "1",
               "--warmup", "0", "--output-dir", os.path.join(work, "fake_outputs")]
        for k, v in feeds.items():
            path = os.path.join(work, run_e2e.file_safe(k) + ".npy")
            np.save(path, v)
            cmd += ["--input", f"{k}={path}"]
        env = dict(os.environ, NANORT_CUDA_DRIVER=args.driver, FAKE_CUDA_CC="90")
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        wanted = "target gpu=sm_90 cubin on NVIDIA compute capability 9.0"
        if r.returncode != 0 or wanted not in r.stdout.splitlines():
            print(f"FAIL: nanort-run through the fake driver: rc {r.returncode}, wanted "
                  f"'{wanted}':\n{r.stdout[-2000:]}{r.stderr[-2000:]}", file=sys.stderr)
            return 1
        print("loaded and run by nanort through the fake driver (sm_90 cubin)")
    ref = run_e2e.run_reference(args.model, feeds)
    run_e2e.TOLERANCE_F32 = check_model.TOLERANCE
    problems = simt_problems(args.simt, args.model, m, feeds, ref, work, out, timeout=900)
    for problem in problems:
        print("FAIL:", problem, file=sys.stderr)
    if problems:
        return 1
    print(f"PASS: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
