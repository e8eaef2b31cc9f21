#!/usr/bin/env python3
"""Runs a bundle made by gpu_bundle.py on a machine with an NVIDIA GPU.

For each model: nanort-run on the bundle's inputs, twice: with host tensors
(staged through the host) and with --cuda-io (inputs and outputs in device
memory the caller owns, nanort_run_with_memory); every output of both
compared with ONNX Runtime's (CPU) by the normwise relative error

    err = max|nanort - ort| / max|ort|  <=  1e-4 (f32; exact for other dtypes)

(looser than the CPU suite's 1e-5: the GPU sums in another order and fuses
multiply-adds), then the median latency of 200 runs of each. Where PyTorch with
CUDA is installed, the models the bundle carries as ONNX also run in eager
PyTorch on the same GPU (a small interpreter of their ops, its tensors on
the GPU), as the peer: the ratio is against the --cuda-io latency, the same
work.

    python3 device_check.py [--repeat N] [--only NAME]

Exit status: 0 when every compiled model ran and matched.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-4


def compare(got, want, tolerance=TOLERANCE):
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.dtype}{list(got.shape)} != {want.dtype}{list(want.shape)}", None
    if want.dtype != np.float32:
        bad = int(np.count_nonzero(got != want))
        return (f"{bad} elements differ" if bad else None), 0.0
    g, w = got.astype(np.float64), want.astype(np.float64)
    if np.any(np.isnan(g) != np.isnan(w)):
        return "NaN mismatch", float("inf")
    if g.size == 0:
        return None, 0.0
    diff = np.where(np.isnan(w), 0.0, np.abs(g - w))
    err = float(np.max(diff)) / max(1e-30, float(np.max(np.where(np.isnan(w), 0, np.abs(w)))))
    return (None if err <= tolerance else f"error {err:.3e} > {tolerance:.0e}"), err


def torch_peer(onnx_path, feeds, refs, repeat):
    """Median latency (ms) of the model in eager PyTorch on the GPU, or None."""
    try:
        import onnx
        import torch
        from onnx import numpy_helper
    except ImportError:
        return None
    # NANORT_PEER_DEVICE=cpu checks the interpreter itself on a machine
    # without a GPU.
    dev = torch.device(os.environ.get("NANORT_PEER_DEVICE", "cuda"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        return None
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    m = onnx.load(onnx_path)
    env = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()).to(dev)
           for t in m.graph.initializer}
    for k, v in feeds.items():
        env[k] = torch.from_numpy(v).to(dev)

    def attr(node, name, default=None):
        for a in node.attribute:
            if a.name == name:
                return onnx.helper.get_attribute_value(a)
        return default

    def run():
        e = dict(env)
        for n in m.graph.node:
            x = [e[i] if i else None for i in n.input]
            op = n.op_type
            if op == "Gemm":
                a = x[0].t() if attr(n, "transA", 0) else x[0]
                b = x[1].t() if attr(n, "transB", 0) else x[1]
                y = attr(n, "alpha", 1.0) * (a @ b)
                if len(x) > 2 and x[2] is not None:
                    y = y + attr(n, "beta", 1.0) * x[2]
                ys = [y]
            elif op == "MatMul":
                ys = [x[0] @ x[1]]
            elif op in ("Add", "Sub", "Mul", "Div", "Pow"):
                ys = [{"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
                       "Pow": torch.pow}[op](x[0], x[1])]
            elif op in ("Relu", "Sqrt", "Erf", "Tanh", "Sigmoid", "Exp"):
                ys = [getattr(torch, op.lower())(x[0])]
            elif op == "Softmax":
                ys = [torch.softmax(x[0], attr(n, "axis", -1))]
            elif op == "ReduceMean":
                axes = attr(n, "axes") or (x[1].tolist() if len(x) > 1 else None)
                ys = [x[0].mean(dim=axes, keepdim=bool(attr(n, "keepdims", 1)))]
            elif op == "Transpose":
                ys = [x[0].permute(*attr(n, "perm"))]
            elif op == "Reshape":
                shape = [int(s) for s in x[1].tolist()]
                shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
                ys = [x[0].reshape(shape)]
            elif op == "Identity":
                ys = [x[0]]
            elif op == "Constant":
                ys = [torch.from_numpy(numpy_helper.to_array(attr(n, "value")).copy()).to(dev)]
            elif op == "Unsqueeze":
                axes = attr(n, "axes") or x[1].tolist()
                y = x[0]
                for a in sorted(axes):
                    y = y.unsqueeze(a)
                ys = [y]
            elif op == "Cast":
                ys = [x[0].float() if attr(n, "to") == 1 else x[0].long()]
            elif op == "Gather":
                axis = attr(n, "axis", 0)
                idx = x[1].reshape(-1)
                idx = torch.where(idx < 0, idx + x[0].shape[axis], idx)  # ONNX wraps
                ys = [torch.index_select(x[0], axis, idx).reshape(
                    *x[0].shape[:axis], *x[1].shape, *x[0].shape[axis + 1:])]
            elif op == "Conv":
                pads = attr(n, "pads", [0, 0, 0, 0])
                y = torch.nn.functional.pad(x[0], [pads[1], pads[3], pads[0], pads[2]])
                ys = [torch.nn.functional.conv2d(
                    y, x[1], x[2] if len(x) > 2 else None, stride=attr(n, "strides", [1, 1]),
                    dilation=attr(n, "dilations", [1, 1]), groups=attr(n, "group", 1))]
            elif op in ("MaxPool", "AveragePool"):
                pads = attr(n, "pads", [0, 0, 0, 0])
                f = (torch.nn.functional.max_pool2d if op == "MaxPool"
                     else torch.nn.functional.avg_pool2d)
                ys = [f(x[0], attr(n, "kernel_shape"), attr(n, "strides", [1, 1]),
                        padding=(pads[0], pads[1]), ceil_mode=bool(attr(n, "ceil_mode", 0)))]
            elif op == "GlobalAveragePool":
                ys = [x[0].mean(dim=(2, 3), keepdim=True)]
            elif op == "Concat":
                ys = [torch.cat(x, dim=attr(n, "axis"))]
            elif op == "Flatten":
                ys = [torch.flatten(x[0], attr(n, "axis", 1))]
            elif op == "Clip":
                ys = [torch.clamp(x[0], x[1] if len(x) > 1 else None, x[2] if len(x) > 2 else None)]
            elif op == "Split":
                sizes = x[1].tolist() if len(x) > 1 and x[1] is not None else attr(n, "split")
                ys = list(torch.split(x[0], sizes, dim=attr(n, "axis", 0)))
            elif op == "Where":
                ys = [torch.where(x[0], x[1], x[2])]
            else:
                raise NotImplementedError(op)
            for name, y in zip(n.output, ys):
                e[name] = y
        return [e[o.name] for o in m.graph.output]

    try:
        with torch.no_grad():
            for _ in range(10):
                run()
            sync()
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                run()
                sync()
                times.append((time.perf_counter() - t) * 1e3)
        outs = run()
        ref = {o: np.load(os.path.join(os.path.dirname(onnx_path), f)) for o, f in refs.items()}
        for o, y in zip([o.name for o in m.graph.output], outs):
            err = compare(y.cpu().numpy(), ref[o])[1]
            print(f"  PyTorch eager output {o}: error {err:.2e} against ONNX Runtime")
        return float(np.median(times))
    except NotImplementedError as e:
        print(f"  (no PyTorch peer: op {e} not interpreted)")
        return None


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--only", action="append")
    args = p.parse_args()
    with open(os.path.join(HERE, "manifest.json")) as f:
        manifest = json.load(f)
    run = os.path.join(HERE, "nanort-run")
    print(f"bundle: target {manifest['target']}, host {manifest['host']}, seed {manifest['seed']}")
    try:
        subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap",
                        "--format=csv,noheader"])
    except OSError:
        print("(no nvidia-smi)")
    failed, rows = 0, []
    for mod in manifest["models"]:
        name = mod["name"]
        if args.only and name not in args.only:
            continue
        if not mod["compiled"]:
            print(f"{name}: not compiled: {mod['error'].splitlines()[-1] if mod['error'] else ''}")
            rows.append((name, "not compiled", "", "", ""))
            continue
        d = os.path.join(HERE, name)
        out = os.path.join(d, "out")
        os.makedirs(out, exist_ok=True)
        cmd = [run, os.path.join(d, name + ".so"), "--name", name, "--output-dir", out,
               "--repeat", str(args.repeat), "--warmup", "10"]
        for k, f in mod["inputs"]:
            cmd += ["--input", f"{k}={os.path.join(d, f)}"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        out_dev = os.path.join(d, "out_cuda_io")
        cmd_dev = cmd + ["--cuda-io"]
        cmd_dev[cmd_dev.index("--output-dir") + 1] = out_dev
        rd = subprocess.run(cmd_dev, capture_output=True, text=True, timeout=300)
        if r.returncode != 0 or rd.returncode != 0:
            failed += 1
            bad = r if r.returncode != 0 else rd
            print(f"{name}: FAIL: nanort-run{'' if bad is r else ' --cuda-io'} exited "
                  f"{bad.returncode}: {bad.stderr.strip()[-600:]}")
            rows.append((name, "FAIL (run)", "", "", "", ""))
            continue
        worst, problems = 0.0, []
        for where, tag in ((out, ""), (out_dev, " (--cuda-io)")):
            for oname, ref, got in mod["outputs"]:
                problem, err = compare(np.load(os.path.join(where, got)),
                                       np.load(os.path.join(d, ref)),
                                       mod.get("tolerance", TOLERANCE))
                if problem:
                    problems.append(f"{oname}{tag}: {problem}")
                worst = max(worst, err or 0.0)
        lat = re.search(r"latency_us median=([0-9.]+)", r.stdout)
        ms = float(lat.group(1)) / 1e3 if lat else float("nan")
        lat = re.search(r"latency_us median=([0-9.]+)", rd.stdout)
        ms_dev = float(lat.group(1)) / 1e3 if lat else float("nan")
        io = re.search(r"cuda_io (\S+) (\S+)", rd.stdout)
        io = f"{io.group(1)} {io.group(2)}" if io else "?"
        peer = None
        onnx_path = os.path.join(d, name + ".onnx")
        if os.path.exists(onnx_path):
            feeds = {k: np.load(os.path.join(d, f)) for k, f in mod["inputs"]}
            refs = {o: ref for o, ref, _ in mod["outputs"]}
            try:
                peer = torch_peer(onnx_path, feeds, refs, args.repeat)
            except Exception as e:  # the peer is a measurement, not the check
                print(f"  (PyTorch peer failed: {type(e).__name__}: {e})")
        status = "PASS" if not problems else "FAIL"
        failed += bool(problems)
        print(f"{name}: {status} worst error {worst:.2e}, nanort {ms:.4f} ms host I/O, "
              f"{ms_dev:.4f} ms CUDA I/O ({io})"
              + (f", PyTorch eager {peer:.4f} ms ({peer / ms_dev:.2f}x)" if peer else "")
              + ("" if not problems else " -- " + "; ".join(problems)))
        rows.append((name, status, f"{worst:.1e}", f"{ms:.4f}", f"{ms_dev:.4f}",
                     f"{peer:.4f}" if peer else ""))
    print("\n| model | result | worst error | nanort ms, host I/O | nanort ms, CUDA I/O "
          "| PyTorch eager ms |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\n{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
