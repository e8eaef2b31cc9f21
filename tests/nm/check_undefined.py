#!/usr/bin/env python3
"""Kernels call no library function but memcpy/memmove/memset, on any target.

    check_undefined.py --nanoc NANOC --nm LLVM-NM --targets DIR --models MODELS.PY
                       --onnx FILE.onnx... --work DIR [-j N]

Compiles a set of models for every CPU profile in DIR/cpu (the end-to-end
suite's models, the given ONNX files such as the digits models, and one model
per elementwise operator built here), runs `llvm-nm -u` on each object and
fails, naming the symbol, the profile and the model with its ops, for any
undefined symbol outside ALLOWED: memcpy/memmove/memset and the ARM RTABI's
aliases of them, what every freestanding C environment provides. Nothing
else, on any profile: a bare-metal link has no libm (the issue #13 complaint:
floorf, fmaxf, fminf from Softmax on a Cortex-M4), and kernels need no libgcc
or compiler-rt helper either: 64-bit division and float <-> int64 conversions
on 32-bit Arm are inline code (compiler/codegen/cpu/inline_libcalls.h), and
QLinearMatMul/QLinearConv requantize in f32 where the FPU is single precision
(Cortex-M4), so no soft-float f64 helper is called.
"""
import argparse
import concurrent.futures
import json
import pathlib
import subprocess
import sys

import onnx
from onnx import TensorProto, helper

ALLOWED = {"memcpy", "memmove", "memset"} | {
    f"__aeabi_{f}{n}" for f in ("memcpy", "memmove", "memset", "memclr") for n in ("", "4", "8")
}

# e2e models that exist to be refused (tests/e2e/models.py): not compiling them
# is what they test. Any other model nanoc refuses fails this test.
REFUSED = {"unsupported_ops"}

UNARY = ["Abs", "Neg", "Floor", "Ceil", "Round", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt",
         "Reciprocal", "Erf", "Sin", "Cos", "Softplus", "Softsign", "Elu", "Selu", "LeakyRelu",
         "HardSigmoid", "HardSwish", "Mish", "Gelu", "Sign", "IsNaN", "IsInf", "Atan", "Asin",
         "Acos", "Tan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Celu", "ThresholdedRelu"]
BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "PRelu"]
OTHER = [("Clip", {}), ("Softmax", {"axis": 1}), ("LogSoftmax", {"axis": 1}),
         ("ReduceMax", {"keepdims": 1}), ("ReduceMin", {"keepdims": 1}),
         ("ReduceLogSumExp", {"keepdims": 1}), ("ReduceL2", {"keepdims": 1}),
         ("ArgMax", {"axis": 1}), ("Hardmax", {"axis": 1})]


def op_models(out):
    """One small model per elementwise/reduction op (f32 [4, 33])."""
    out.mkdir(parents=True, exist_ok=True)
    shape = [4, 33]
    paths = []

    def write(name, node, inputs, output_type=TensorProto.FLOAT, opset=18):
        outs = [helper.make_tensor_value_info("y", output_type, None)]
        ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in inputs]
        model = helper.make_model(helper.make_graph([node], name, ins, outs),
                                  opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 10
        path = out / f"op_{name}.onnx"
        onnx.save(model, path)
        paths.append(path)

    for op in UNARY:
        attrs = {"alpha": 0.5} if op in ("Celu", "ThresholdedRelu", "LeakyRelu", "Elu") else {}
        output_type = TensorProto.BOOL if op in ("IsNaN", "IsInf") else TensorProto.FLOAT
        write(op, helper.make_node(op, ["x"], ["y"], **attrs), ["x"], output_type,
              opset=20 if op == "Gelu" else 18)
    for op in BINARY:
        attrs = {"fmod": 1} if op == "Mod" else {}
        write(op, helper.make_node(op, ["a", "b"], ["y"], **attrs), ["a", "b"])
    for op, attrs in OTHER:
        output_type = TensorProto.INT64 if op == "ArgMax" else TensorProto.FLOAT
        write(op, helper.make_node(op, ["x"], ["y"], **attrs), ["x"], output_type)
    return paths


def ops_of(path):
    try:
        return sorted({n.op_type for n in onnx.load(str(path)).graph.node})
    except Exception:  # noqa: BLE001 - only for the message
        return ["?"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nanoc", required=True)
    p.add_argument("--nm", required=True)
    p.add_argument("--targets", required=True, type=pathlib.Path)
    p.add_argument("--models", required=True, help="tests/e2e/models.py")
    p.add_argument("--onnx", nargs="*", default=[], type=pathlib.Path)
    p.add_argument("--work", required=True, type=pathlib.Path)
    p.add_argument("-j", type=int, default=2)
    args = p.parse_args()

    profiles = sorted(json.loads(f.read_text())["name"] for f in (args.targets / "cpu").glob("*.json"))
    model_dir = args.work / "models"
    subprocess.run([sys.executable, args.models, "--out", str(model_dir)], check=True,
                   stdout=subprocess.DEVNULL)
    models = sorted(model_dir.glob("*.onnx")) + list(args.onnx) + op_models(args.work / "ops")

    def check(profile, model):
        name = "m_" + "".join(c if c.isalnum() else "_" for c in model.stem)
        out = args.work / "out" / profile / name
        r = subprocess.run([args.nanoc, str(model), "--name", name, "--target", profile, "-o",
                            str(out)], capture_output=True, text=True)
        if r.returncode != 0:
            return profile, model, None, r.stderr.strip().splitlines()[-1:]
        nm = subprocess.run([args.nm, "-u", str(out / f"{name}.o")], capture_output=True,
                            text=True, check=True)
        return profile, model, [line.split()[-1] for line in nm.stdout.split()
                                if line.strip() and line.strip() != "U"], None

    bad, compiled, skipped = [], 0, 0
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        jobs = [pool.submit(check, p_, m) for p_ in profiles for m in models]
        for job in concurrent.futures.as_completed(jobs):
            profile, model, symbols, error = job.result()
            if symbols is None:
                if model.stem in REFUSED:
                    skipped += 1
                else:
                    bad.append(f"{profile}: {model.stem} ({', '.join(ops_of(model))}): "
                               f"nanoc failed: {' '.join(error)}")
                continue
            compiled += 1
            for s in symbols:
                if s in ALLOWED:
                    continue
                bad.append(f"{profile}: {model.stem} ({', '.join(ops_of(model))}): "
                           f"calls {s}")
    print(f"check_undefined: {compiled} objects over {len(profiles)} profiles "
          f"({skipped} pairs of {', '.join(sorted(REFUSED))}, a model made to be refused, "
          "were refused as expected)")
    if bad:
        for line in sorted(bad):
            print(f"check_undefined: error: {line}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
