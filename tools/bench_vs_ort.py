#!/usr/bin/env python3
"""Side-by-side latency of nanort and ONNX Runtime on the same models, one run.

For each model: nanoc compiles it for this machine; nanort-run times N runs
in-process (clock_gettime around nanort_run); ONNX Runtime (CPU provider, one
intra-op thread, all graph optimizations on: the peer at its best on one
thread) times N runs of InferenceSession.run from Python. The Python call
itself costs ONNX Runtime a few microseconds that nanort does not pay here;
the `ort floor` column measures it on an Identity model of the same input and
output size, so small models can be read fairly. Medians, microseconds.

    python3 tools/bench_vs_ort.py --nanoc build/compiler/nanoc \
        --nanort-run build/tools/nanort-run [--repeat 200] [--work DIR] \
        [--model PATH.onnx ...] [--only NAME ...]

--model adds an exported model (tests/models/export_models.py writes the zoo
into build/tests/models/onnx); its inputs are drawn as tests/models does
(token ids within their embedding table).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
import models  # noqa: E402  (the e2e suite's model builders)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "models"))
import check_model  # noqa: E402  (inputs for exported models)

IR_VERSION = models.IR_VERSION


def mlp(batch, sizes, seed=0):
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for i in range(len(sizes) - 1):
        w = (rng.standard_normal((sizes[i], sizes[i + 1])) / np.sqrt(sizes[i])).astype(np.float32)
        b = (0.1 * rng.standard_normal(sizes[i + 1])).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        y = f"h{i}" if i < len(sizes) - 2 else "logits"
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [y + "_g" if y != "logits" else y]))
        if y != "logits":
            nodes.append(helper.make_node("Relu", [y + "_g"], [y]))
        x = y
    g = helper.make_graph(nodes, "mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, sizes[0]])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, sizes[-1]])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


def conv_block(c, hw, seed=0):
    """Conv3x3 + BN + Relu + Conv3x3 + Relu, NCHW [1, c, hw, hw]."""
    rng = np.random.default_rng(seed)
    def w(shape, fan):
        return (rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32)
    inits = [numpy_helper.from_array(w((c, c, 3, 3), 9 * c), "w1"),
             numpy_helper.from_array(w((c,), 1), "b1"),
             numpy_helper.from_array(np.abs(w((c,), 1)) + 0.5, "s"),
             numpy_helper.from_array(w((c,), 1), "bb"),
             numpy_helper.from_array(w((c,), 1), "m"),
             numpy_helper.from_array(np.abs(w((c,), 1)) + 0.5, "v"),
             numpy_helper.from_array(w((c, c, 3, 3), 9 * c), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["n1"]),
             helper.make_node("Relu", ["n1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["y"])]
    shape = [1, c, hw, hw]
    g = helper.make_graph(nodes, "conv_block",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


def sgemm(n, seed=0):
    """SGEMM n^3 as one MatMul with a constant B (weights): y = x @ w."""
    w = np.random.default_rng(seed).standard_normal((n, n)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "sgemm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
                          [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


def identity(shape):
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


BENCHMARKS = {
    "mlp_64x64x10_b1": lambda: mlp(1, [64, 64, 10]),
    "mlp_784x512x512x10_b1": lambda: mlp(1, [784, 512, 512, 10]),
    "mlp_784x512x512x10_b32": lambda: mlp(32, [784, 512, 512, 10]),
    "small_cnn": lambda: models.CASES["small_cnn"].build(),
    "conv_block_32x28x28": lambda: conv_block(32, 28),
    "sgemm_1024": lambda: sgemm(1024),
}


def ort_median(model, feeds, repeat, threads=1, warmup=None):
    """Median microseconds of ONNX Runtime's InferenceSession.run over `repeat`
    runs after `warmup` (default max(3, repeat // 10)): the CPU provider with
    all graph optimizations on `threads` intra-op threads. `model` is a
    ModelProto or a path."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    source = model if isinstance(model, str) else model.SerializeToString()
    sess = ort.InferenceSession(source, so, providers=["CPUExecutionProvider"])
    for _ in range(max(3, repeat // 10) if warmup is None else warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        sess.run(None, feeds)
        times.append(time.perf_counter_ns() - t0)
    return float(np.median(times)) / 1e3


def nanort_median(args, name, model, feeds, work):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".onnx")
    onnx.save(model, path)
    subprocess.run([args.nanoc, path, "--name", name, "-o", d], check=True)
    cmd = [args.nanort_run, os.path.join(d, name + ".so"), "--output-dir", d,
           "--repeat", str(args.repeat), "--warmup", str(max(3, args.repeat // 10))]
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)
        cmd += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
    out = subprocess.run(cmd, check=True, text=True, capture_output=True).stdout
    return float(re.search(r"latency_us median=([0-9.]+)", out).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nanoc", required=True)
    p.add_argument("--nanort-run", required=True)
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--work", default=None)
    p.add_argument("--only", action="append")
    p.add_argument("--model", action="append", default=[], help="an .onnx file to add")
    args = p.parse_args()
    for path in args.model:
        name = os.path.splitext(os.path.basename(path))[0]
        BENCHMARKS[name] = lambda path=path: onnx.load(path)
    work = args.work or tempfile.mkdtemp(prefix="nanort-bench-")
    rng = np.random.default_rng(0)
    print(f"| model | nanort µs | ONNX Runtime µs | ort floor µs | ORT / nanort |")
    print(f"|---|---:|---:|---:|---:|")
    for name, build in BENCHMARKS.items():
        if args.only and name not in args.only:
            continue
        model = build()
        feeds = check_model.make_inputs(model, 0)
        out_shape = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
        n = nanort_median(args, name, model, feeds, work)
        o = ort_median(model, feeds, args.repeat)
        floor = ort_median(identity(out_shape), {"x": rng.standard_normal(out_shape).astype(np.float32)},
                           args.repeat)
        print(f"| {name} | {n:.2f} | {o:.2f} | {floor:.2f} | {o / n:.2f} |", flush=True)


if __name__ == "__main__":
    main()
