#!/usr/bin/env python3
"""conv-layers-bench: single Conv layers of ResNet's shapes, nanort against ONNX Runtime.

Each case is a one-node ONNX model (Conv with random constant weights and a
bias, batch 1, opset 13) made here with onnx.helper; nanoc compiles it for the
host, and nanort-run and ONNX Runtime (CPU provider, one intra-op thread,
ORT_ENABLE_ALL) each run it --repeat times after warm-up on the same input.
The figure per runtime is the minimum over the runs (a single layer is short:
on a shared machine the least disturbed run is the one to compare), and the
ratio is ORT / nanort (above 1x nanort is faster). Pin the process to one
core with taskset for both runtimes to share it:

    taskset -c 1 .venv/bin/python tools/conv_layers_bench.py \\
        --nanoc build/compiler/nanoc --nanort-run build/tools/nanort-run [--repeat 30]
"""
import argparse
import os
import re
import subprocess
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# name: (C, M, H, kernel, stride, pad)
CASES = {
    "pw256_64_56": (256, 64, 56, 1, 1, 0),
    "pw64_256_56": (64, 256, 56, 1, 1, 0),
    "pw1024_256_14": (1024, 256, 14, 1, 1, 0),
    "pw512_2048_7": (512, 2048, 7, 1, 1, 0),
    "c3_64_56": (64, 64, 56, 3, 1, 1),
    "c3_128_28": (128, 128, 28, 3, 1, 1),
    "c3_256_14": (256, 256, 14, 3, 1, 1),
    "c3_512_7": (512, 512, 7, 3, 1, 1),
    "c3s2_256_28": (256, 256, 28, 3, 2, 1),
    "c3s2_512_14": (512, 512, 14, 3, 2, 1),
    "pw2048_512_7": (2048, 512, 7, 1, 1, 0),
    "stem7x7s2_3_224": (3, 64, 224, 7, 2, 3),
    # ResNet's stride-2 1x1 downsamples (input map H; output H / 2)
    "ds64_128_56": (64, 128, 56, 1, 2, 0),
    "ds128_256_28": (128, 256, 28, 1, 2, 0),
    "ds256_512_14": (256, 512, 14, 1, 2, 0),
    # MobileNetV2 / EfficientNet-B0 shapes
    "stem3x3s2_3_224": (3, 32, 224, 3, 2, 1),
    "pw16_96_112": (16, 96, 112, 1, 1, 0),
    "pw32_16_112": (32, 16, 112, 1, 1, 0),
    "pw96_24_56": (96, 24, 56, 1, 1, 0),
    "pw320_1280_7": (320, 1280, 7, 1, 1, 0),
}


def make_model(path, c, m, h, k, s, p, rng, activation="none"):
    w = numpy_helper.from_array((rng.standard_normal((m, c, k, k)) * 0.1).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b")
    conv_out = "y" if activation == "none" else "c"
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], [conv_out], kernel_shape=[k, k], strides=[s, s],
                         pads=[p] * 4)
    ]
    if activation == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    elif activation == "silu":  # as torch exports SiLU: x * Sigmoid(x)
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])
    ], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8),
              path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nanoc", required=True)
    ap.add_argument("--nanort-run", required=True)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--only", action="append", help="cases to run (repeatable)")
    ap.add_argument("--activation", choices=["none", "relu", "silu"], default="none",
                    help="an activation after each Conv (SiLU as torch exports it: x * Sigmoid(x))")
    ap.add_argument("--nanoc-flag", action="append", default=[],
                    help="an extra nanoc flag (repeatable), e.g. --nanoc-flag=--no-fuse")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    print("| layer | C -> M, H x W, k, stride | GFLOP | nanort µs | ORT µs | ORT / nanort |"
          " nanort GFLOP/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as work:
        for name, (c, m, h, k, s, p) in CASES.items():
            if args.only and name not in args.only:
                continue
            model = os.path.join(work, name + ".onnx")
            make_model(model, c, m, h, k, s, p, rng, args.activation)
            x = rng.random((1, c, h, h), dtype=np.float32)
            xin = os.path.join(work, name + "_x.npy")
            np.save(xin, x)
            out = os.path.join(work, name)
            subprocess.run([args.nanoc, model, "--target", "host", "-o", out] + args.nanoc_flag,
                           check=True,
                           capture_output=True)
            run = subprocess.run([args.nanort_run, os.path.join(out, name + ".so"), "--input",
                                  "x=" + xin, "--repeat", str(args.repeat), "--output-dir", out],
                                 check=True, capture_output=True, text=True).stdout
            nanort_us = float(re.search(r"min=([\d.]+)", run).group(1))
            sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            for _ in range(3):
                sess.run(None, {"x": x})
            best = float("inf")
            for _ in range(args.repeat):
                t = time.perf_counter()
                sess.run(None, {"x": x})
                best = min(best, time.perf_counter() - t)
            ort_us = best * 1e6
            oh = (h + 2 * p - k) // s + 1
            gflop = 2.0 * m * c * k * k * oh * oh / 1e9
            print(f"| {name} | {c} -> {m}, {h} x {h}, {k}x{k}, {s} | {gflop:.3f} | {nanort_us:.0f} |"
                  f" {ort_us:.0f} | {ort_us / nanort_us:.2f}x | {gflop / nanort_us * 1e6:.1f} |")


if __name__ == "__main__":
    main()
