#!/usr/bin/env python3
"""Builds the bundle a GPU machine runs: models compiled here for an SM target,
their inputs and ONNX Runtime's outputs, nanort-run, device_check.py and
ort_cuda_peer.py (ONNX Runtime's CUDA execution provider as the peer, where
onnxruntime-gpu is installed there).

No GPU is needed to build it. The machine that runs it needs the CUDA driver,
python3 and numpy (PyTorch, when present, gives the eager-mode peer timings):

    tests/gpu/gpu_bundle.py --nanoc build/compiler/nanoc \\
        --nanort-run build/tools/nanort-run --out gpu_bundle [--target sm_90]
    python3 gpu_bundle/device_check.py            # on the GPU machine

Each model gets fresh random inputs (the seed is recorded in the manifest) and
the reference is ONNX Runtime on the CPU with graph optimizations off, as in
tests/e2e/run_e2e.py.

Variants (the tensor-core GEMMs): --nanoc-flag passes a flag to every nanoc
run (repeatable), --suffix renames the models (NAME + SUFFIX, so bundles can
be merged) and --tolerance sets device_check.py's bound for them, e.g.

    tests/gpu/gpu_bundle.py ... --out gpu_bundle_tf32 --target sm_90 \
        --nanoc-flag=--gpu-precision=tf32 --suffix _tf32 --tolerance 2e-3

(2e-3 for tf32 and f16, 1e-2 for bf16: tests/gpu/run_simt.py's TOLERANCES).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import models  # noqa: E402
import run_e2e  # noqa: E402

# e2e cases whose ops have GPU kernels, and a few that mix host and GPU.
DEFAULT_CASES = [
    "add_same_shape", "add_broadcast_rank4_rank1", "mul_broadcast_both_sides",
    "sub_broadcast_channel", "div_broadcast", "add_initializer_scalar", "relu", "sigmoid", "tanh",
    "matmul_2d", "matmul_batched_broadcast", "matmul_1d_left", "matmul_1d_right",
    "matmul_weight_initializer", "gemm_basic", "gemm_trans_alpha_beta", "gemm_c_row_broadcast",
    "gemm_c_scalar", "gemm_no_c", "softmax_opset13_last_axis", "softmax_opset13_axis1_large",
    "softmax_opset11_axis1", "softmax_opset11_last_axis", "layer_norm_with_statistics",
    "layer_norm_axis1_no_bias", "layer_norm_decomposed", "mlp", "fused_gemm_matmul",
    "fused_elementwise_chains", "fused_silu_hardswish", "output_also_intermediate",
    "multiple_inputs_outputs", "small_cnn", "transpose_rank4", "reduce_mean_outer_and_inner_axes",
    "global_average_pool", "maxpool_2x2", "averagepool_2x2",
]
DEFAULT_ZOO = ["mlp_b1", "mlp_b32", "bert_tiny", "gpt2_block", "vit_small"]
# Zoo models whose .onnx travels too, for the peers (device_check.py's eager
# PyTorch, ort_cuda_peer.py).
PEER_MODELS = ["mlp_b1", "mlp_b32", "bert_tiny", "squeezenet1_1", "mobilenet_v2", "resnet18"]


def main() -> int:
    if sys.argv[1:] == ["--list-cases"]:  # for CMake: the GPU suite's e2e cases
        print("\n".join(DEFAULT_CASES))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nanoc", required=True)
    p.add_argument("--nanort-run", dest="nanort_run", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--target", default="sm_90")
    p.add_argument("--host", default="x86-64-v3")
    p.add_argument("--zoo", default="build/tests/models/onnx")
    p.add_argument("--case", action="append", help="only these e2e cases (repeatable)")
    p.add_argument("--zoo-model", action="append", help="only these zoo models (repeatable)")
    p.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little"))
    p.add_argument("--nanoc-flag", dest="nanoc_flags", action="append", default=[],
                   help="an extra nanoc flag, e.g. --nanoc-flag=--gpu-precision=tf32 (repeatable)")
    p.add_argument("--suffix", default="", help="appended to every model's name, e.g. _tf32")
    p.add_argument("--tolerance", type=float,
                   help="device_check.py's error bound for these models (default its 1e-4)")
    p.add_argument("--python-package", dest="python_package",
                   help="an installed nanort Python package (its folder, e.g. "
                        "build/tests/python/site/nanort) for torch_cuda_arrays.py")
    p.add_argument("--keep-onnx", dest="keep_onnx", action="store_true",
                   help="keep every model's .onnx, for ort_cuda_peer.py and the PyTorch peer "
                        "(by default only PEER_MODELS keep theirs)")
    args = p.parse_args()

    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    shutil.copy(args.nanort_run, os.path.join(out, "nanort-run"))
    shutil.copy(os.path.join(HERE, "device_check.py"), os.path.join(out, "device_check.py"))
    shutil.copy(os.path.join(HERE, "ort_cuda_peer.py"), os.path.join(out, "ort_cuda_peer.py"))
    if args.python_package:
        shutil.copy(os.path.join(HERE, "torch_cuda_arrays.py"), out)
        shutil.copytree(args.python_package, os.path.join(out, "python", "nanort"),
                        ignore=shutil.ignore_patterns("__pycache__"))
    manifest = {"target": args.target, "host": args.host, "seed": args.seed,
                "nanoc_flags": args.nanoc_flags, "models": []}

    work = []
    for name in args.case or DEFAULT_CASES:
        case = models.get_case(name)
        work.append((name, case, case.build()))
    for name in args.zoo_model or DEFAULT_ZOO:
        path = os.path.join(args.zoo, name + ".onnx")
        if os.path.exists(path):
            work.append((name, models.Case(name, None, {}), onnx.load(path)))
        else:
            print(f"skip zoo model {name}: {path} not found", file=sys.stderr)

    for source, case, m in work:
        name = source + args.suffix
        d = os.path.join(out, name)
        os.makedirs(d)
        model_path = os.path.join(d, name + ".onnx")
        onnx.save(m, model_path)
        feeds = run_e2e.make_inputs(case, m, args.seed)
        ref = run_e2e.run_reference(model_path, feeds)
        # The e2e cases put every op with a GPU kernel on the GPU; the zoo
        # models are compiled as a user would, with nanoc's default placement.
        cmd = [args.nanoc, model_path, "--target", args.target, "--host", args.host, "-o", d,
               "--name", name, "--no-progress"] + (["--gpu-offload=all"] if case.build else [])
        cmd += args.nanoc_flags
        r = subprocess.run(cmd, capture_output=True, text=True)
        if source not in PEER_MODELS and not args.keep_onnx:  # the peers read the others
            os.remove(model_path)
        entry = {"name": name, "compiled": r.returncode == 0, "error": r.stderr.strip()[-2000:],
                 "inputs": [], "outputs": []}
        if args.tolerance is not None:
            entry["tolerance"] = args.tolerance
        for k, v in feeds.items():
            f = "in_" + run_e2e.file_safe(k) + ".npy"
            np.save(os.path.join(d, f), v)
            entry["inputs"].append([k, f])
        for o in m.graph.output:
            f = "ref_" + run_e2e.file_safe(o.name) + ".npy"
            np.save(os.path.join(d, f), ref[o.name])
            entry["outputs"].append([o.name, f, run_e2e.file_safe(o.name) + ".npy"])
        for f in os.listdir(d):  # only what the GPU machine needs
            if f.endswith((".o", ".h", ".nrt")):
                os.remove(os.path.join(d, f))
        manifest["models"].append(entry)
        print(f"{name}: {'compiled' if entry['compiled'] else 'FAILED: ' + entry['error']}")
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
