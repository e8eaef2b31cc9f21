#!/usr/bin/env python3
"""ONNX Runtime's CUDA execution provider as the GPU peer, on a bundle's models
(tests/gpu/gpu_bundle.py; the ones that carry their .onnx): inputs and outputs
in GPU memory through IO binding, as `nanort-run --cuda-io` (device_check.py)
runs nanort; the median of --repeat runs after 20 warm-up runs; once as ONNX
Runtime runs by default and once with its CUDA graph (enable_cuda_graph=1).
Each output is compared with the bundle's reference (normwise relative error).

    python3 ort_cuda_peer.py BUNDLE [--repeat 300] [--tf32 0|1]

Needs onnxruntime-gpu and the CUDA libraries it loads (onnxruntime-gpu 1.31.1:
cuBLAS 13, cuDNN 9; a PyTorch install's nvidia packages have them). ONNX
Runtime's CUDA EP runs f32 convolutions and GEMMs in TF32 unless use_tf32=0
(--tf32 0, exact f32 like nanort's default); both are worth reporting.
"""
import argparse
import json
import os
import time

import numpy as np
import onnxruntime as ort


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("bundle")
    p.add_argument("--repeat", type=int, default=300)
    p.add_argument("--tf32", default="1", choices=["0", "1"])
    args = p.parse_args()
    with open(os.path.join(args.bundle, "manifest.json")) as f:
        manifest = json.load(f)
    print(f"onnxruntime {ort.__version__}, use_tf32={args.tf32}")
    for mod in manifest["models"]:
        name = mod["name"]
        d = os.path.join(args.bundle, name)
        path = os.path.join(d, name + ".onnx")
        if not os.path.exists(path):
            continue
        feeds = {k: np.load(os.path.join(d, f)) for k, f in mod["inputs"]}
        refs = {o: np.load(os.path.join(d, r)) for o, r, _ in mod["outputs"]}
        for graph in ("0", "1"):
            label = f"ORT-CUDA{' graph' if graph == '1' else ''} {name}"
            try:
                options = {"enable_cuda_graph": graph, "use_tf32": args.tf32}
                s = ort.InferenceSession(path, ort.SessionOptions(),
                                         providers=[("CUDAExecutionProvider", options)])
                io = s.io_binding()
                inputs = {k: ort.OrtValue.ortvalue_from_numpy(v, "cuda", 0) for k, v in feeds.items()}
                outputs = {o.name: ort.OrtValue.ortvalue_from_shape_and_type(
                    refs[o.name].shape, np.float32, "cuda", 0) for o in s.get_outputs()}
                for k, v in inputs.items():
                    io.bind_ortvalue_input(k, v)
                for k, v in outputs.items():
                    io.bind_ortvalue_output(k, v)
                for _ in range(20):
                    s.run_with_iobinding(io)
                times = []
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    s.run_with_iobinding(io)
                    io.synchronize_outputs()
                    times.append(time.perf_counter() - start)
                err = 0.0
                for k, v in outputs.items():
                    got, ref = v.numpy(), refs[k]
                    err = max(err, float(np.linalg.norm((got - ref).ravel()) /
                                         max(np.linalg.norm(ref.ravel()), 1e-30)))
                print(f"{label}: {np.median(times) * 1e3:.4f} ms, normwise error {err:.2e}, "
                      f"provider {s.get_providers()[0]}")
            except Exception as e:  # a peer that cannot run is reported, not fatal
                print(f"{label}: failed: {type(e).__name__}: {str(e)[:300]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
