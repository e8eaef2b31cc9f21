#!/usr/bin/env python3
"""The end-to-end suite's negative tests: each makes one tool fail on purpose and
checks that it fails cleanly (an exit status, not a signal) with a message that
names what is wrong.

    negative.py unsupported_ops   --nanoc PATH --work DIR
    negative.py wrong_input_shape --nanoc PATH --nanort-run PATH --work DIR
    negative.py missing_feature   --nanoc PATH --nanort-run PATH --work DIR
    negative.py malformed_models  --nanoc PATH --work DIR
    negative.py open_dims         --nanoc PATH --nanort-run PATH --work DIR
    negative.py control_flow      --nanoc PATH --nanort-run PATH --work DIR

Exit status: 0 pass, 1 fail, 77 skipped (CTest's SKIP_RETURN_CODE).
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

SKIP = 77
TOOL_TIMEOUT_S = 300


def run(cmd):
    print("+", shlex.join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    print(p.stdout, end="")
    print(p.stderr, end="", file=sys.stderr)
    return p


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    return 1


def expect_clean_failure(p, tool, want_status=None):
    """None when `p` failed the way a tool should; else what went wrong."""
    if p.returncode < 0:
        return f"{tool} died of signal {-p.returncode} instead of reporting an error"
    if p.returncode == 0:
        return f"{tool} exited 0, but it should have failed"
    if want_status is not None and p.returncode != want_status:
        return f"{tool} exited {p.returncode}, expected {want_status}"
    return None


def save_model(name, work):
    path = os.path.join(work, name + ".onnx")
    onnx.save(models.build(name), path)
    return path


def compile_model(args, name, extra=()):
    model = save_model(name, args.work)
    out = os.path.join(args.work, name)
    os.makedirs(out, exist_ok=True)
    p = run([args.nanoc, model, "--name", name, "-o", out, *extra])
    if p.returncode != 0:
        return None, f"nanoc failed on a supported model (status {p.returncode})"
    return os.path.join(out, name + ".so"), None


def unsupported_ops(args):
    out = os.path.join(args.work, "unsupported_ops")
    os.makedirs(out, exist_ok=True)
    p = run([args.nanoc, save_model("unsupported_ops", args.work), "--name", "unsupported_ops",
             "-o", out])
    problem = expect_clean_failure(p, "nanoc")
    if problem:
        return fail(problem)
    text = p.stdout + p.stderr
    # Every unsupported node in one go, each by node name and op.
    missing = [w for w in ("bernoulli_node_0", "Bernoulli", "random_node_1", "RandomUniformLike") if w not in text]
    if missing:
        return fail(f"nanoc's message does not name {', '.join(missing)}")
    print("PASS: nanoc rejects the model, naming both unsupported nodes")
    return 0


def wrong_input_shape(args):
    so, problem = compile_model(args, "wrong_input_shape")
    if problem:
        return fail(problem)
    bad_inputs = {
        "wrong dim": np.zeros((1, 3, 4, 5), np.float32),
        "wrong rank": np.zeros((3, 4, 4), np.float32),
        "wrong dtype": np.zeros((1, 3, 4, 4), np.float64),
    }
    for what, x in bad_inputs.items():
        path = os.path.join(args.work, "bad_input.npy")
        np.save(path, x)
        outs = os.path.join(args.work, "outputs")
        os.makedirs(outs, exist_ok=True)
        p = run([args.nanort_run, so, "--input", f"image_pixels={path}", "--output-dir", outs])
        problem = expect_clean_failure(p, "nanort-run", want_status=1)
        if problem:
            return fail(f"{what}: {problem}")
        if "nanort-run: error:" not in p.stderr:
            return fail(f"{what}: no 'nanort-run: error:' line on stderr")
        if "image_pixels" not in p.stderr:
            return fail(f"{what}: the error does not name the input 'image_pixels'")
    print("PASS: nanort-run refuses inputs of the wrong shape, rank and dtype, naming the input")
    return 0


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def missing_feature(args):
    flags = cpu_flags()
    if flags is None or "sse2" not in flags:
        print("SKIPPED: not an x86-64 Linux host (no x86 flags in /proc/cpuinfo)")
        return SKIP
    # (LLVM's name, /proc/cpuinfo's name): Sapphire Rapids has avx512fp16 and
    # lacks avx512vp2intersect, Zen 4 lacks both, Zen 5 has only the second.
    candidates = [("avx512fp16", "avx512_fp16"), ("avx512vp2intersect", "avx512_vp2intersect")]
    absent = [llvm for llvm, linux in candidates if linux not in flags and llvm not in flags]
    if not absent:
        print("SKIPPED: this CPU has every candidate feature, so a program that needs one runs here")
        return SKIP
    feature = absent[0]
    so, problem = compile_model(args, "mlp", ["--triple", "x86_64-unknown-linux-gnu",
                                              "--cpu", "x86-64", "--features", "+" + feature])
    if problem:
        return fail(problem)
    x = os.path.join(args.work, "mlp_x.npy")
    np.save(x, np.zeros((4, 64), np.float32))
    outs = os.path.join(args.work, "outputs")
    os.makedirs(outs, exist_ok=True)
    p = run([args.nanort_run, so, "--input", f"x={x}", "--output-dir", outs])
    problem = expect_clean_failure(p, "nanort-run", want_status=1)
    if problem:
        return fail(problem)
    if not re.search(r"lacks: .*\b" + re.escape(feature) + r"\b", p.stderr):
        return fail(f"nanort-run's error does not name the missing feature {feature}:\n{p.stderr}")
    print(f"PASS: nanort-run refuses the program, naming {feature}")
    return 0


def first_error_line(p):
    """nanoc's first stderr line without the 'nanoc: error: PATH: ' prefix, or None."""
    lines = p.stderr.splitlines()
    if not lines or not lines[0].startswith("nanoc: error: "):
        return None
    line = lines[0][len("nanoc: error: "):]
    return line.split(": ", 1)[1] if line.startswith("/") and ": " in line else line


def small_model(nodes, inputs, outputs, opset=17):
    graph = helper.make_graph(nodes, "negative", inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = models.IR_VERSION
    return m


def relu_model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    return small_model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y])


def malformed_cases():
    """(name, model bytes, words the first line of nanoc's error must hold)."""
    good = relu_model().SerializeToString()
    cases = [
        ("truncated", good[: len(good) // 2], ["not a valid ONNX model"]),
        ("garbage", bytes(range(256)) * 4, ["not a valid ONNX model"]),
        ("empty", b"", ["not a valid ONNX model"]),
    ]
    f = TensorProto.FLOAT
    cycle = small_model(
        [helper.make_node("Add", ["x", "c"], ["a"], name="first"),
         helper.make_node("Relu", ["a"], ["c"], name="second")],
        [helper.make_tensor_value_info("x", f, [2])], [helper.make_tensor_value_info("c", f, [2])])
    cases.append(("cycle", cycle.SerializeToString(), ["cycle", "'first'", "'second'"]))
    huge = small_model([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", f, [1 << 40, 1 << 40])],
                       [helper.make_tensor_value_info("y", f, None)])
    cases.append(("huge_dim", huge.SerializeToString(), ["input 'x'", "too large"]))
    seq = small_model(
        [helper.make_node("SequenceLength", ["s"], ["n"])],
        [helper.make_tensor_sequence_value_info("s", f, [2])],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    cases.append(("sequence_input", seq.SerializeToString(), ["input 's'", "sequence"]))
    # An unsupported op and an unsupported attribute value: one message for both.
    mixed = small_model(
        [helper.make_node("Gelu", ["x"], ["c"], name="gelu", approximate="cubic"),
         helper.make_node("NotAnOnnxOp", ["c"], ["y"], name="mystery")],
        [helper.make_tensor_value_info("x", f, [1, 1, 4, 4, 4])],
        [helper.make_tensor_value_info("y", f, None)])
    cases.append(("unsupported_op_and_attribute", mixed.SerializeToString(),
                  ["2 nodes cannot be imported", "NotAnOnnxOp", "Gelu"]))
    return cases


def malformed_models(args):
    failures = []
    for name, data, words in malformed_cases():
        path = os.path.join(args.work, name + ".onnx")
        with open(path, "wb") as f:
            f.write(data)
        p = run([args.nanoc, path, "--emit", "ir"])
        problem = expect_clean_failure(p, "nanoc", want_status=1)
        line = first_error_line(p)
        if problem:
            failures.append(f"{name}: {problem}")
        elif line is None:
            failures.append(f"{name}: stderr does not start with 'nanoc: error: '")
        elif "internal error" in p.stderr:
            failures.append(f"{name}: an internal error instead of a message")
        else:
            missing = [w for w in words if w not in line]
            if missing:
                failures.append(f"{name}: the first line {line!r} does not name {missing}")
    if failures:
        return fail("\n  ".join(["nanoc mishandles malformed models:"] + failures))
    print(f"PASS: nanoc refuses {len(malformed_cases())} malformed models, each with a clear first line")
    return 0


def open_dims_model():
    """A torch-style flatten of an input with a symbolic batch dim:
    Reshape(x, Concat(Shape(x)[0:1], [-1])), then Relu."""
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("Shape", ["x"], ["batch"], name="shape", start=0, end=1),
        helper.make_node("Constant", [], ["minus_one"], name="minus_one",
                         value_ints=[-1]),
        helper.make_node("Concat", ["batch", "minus_one"], ["flat_shape"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "flat_shape"], ["flat"], name="reshape"),
        helper.make_node("Relu", ["flat"], ["y"], name="relu"),
    ]
    return small_model(nodes, [helper.make_tensor_value_info("x", f, ["batch", 3, 4])],
                       [helper.make_tensor_value_info("y", f, ["batch", 12])])


def open_dims(args):
    path = os.path.join(args.work, "open_dims.onnx")
    onnx.save(open_dims_model(), path)
    out = os.path.join(args.work, "open_dims")
    os.makedirs(out, exist_ok=True)
    p = run([args.nanoc, path, "--name", "open_dims", "-o", out])
    problem = expect_clean_failure(p, "nanoc", want_status=1)
    if problem:
        return fail(f"without --dim: {problem}")
    line = first_error_line(p) or ""
    missing = [w for w in ("input 'x'", "dim 0", "'batch'", "--dim batch=", "--input-shape x=")
               if w not in line]
    if missing:
        return fail(f"without --dim, the error {line!r} does not name {', '.join(missing)}")

    # Flags that do not fit the model are refused, naming what does.
    for flags, words in ((["--input-shape", "x=5,12"], ["--input-shape x", "rank 3"]),
                         (["--input-shape", "nope=1"], ["'nope'", "the inputs are: x"]),
                         (["--input-shape", "x=5,4,4"], ["dim 1", "fixes it at 3"]),
                         (["--dim", "bach=5"], ["--dim bach", "batch"]),
                         (["--dim", "batch=five"], ["'five' is not a dim"])):
        p = run([args.nanoc, path, "--name", "open_dims", "-o", out, *flags])
        problem = expect_clean_failure(p, "nanoc", want_status=1)
        if problem:
            return fail(f"{' '.join(flags)}: {problem}")
        line = first_error_line(p) or ""
        missing = [w for w in words if w not in line]
        if missing:
            return fail(f"{' '.join(flags)}: the error {line!r} does not name {', '.join(missing)}")

    batch = 5
    for flags in (["--dim", "batch=5"], ["--input-shape", "x=5,3,4"]):
        p = run([args.nanoc, path, "--name", "open_dims", "-o", out, *flags])
        if p.returncode != 0:
            return fail(f"nanoc {' '.join(flags)} failed (status {p.returncode})")
        x = np.random.default_rng(0).standard_normal((batch, 3, 4)).astype(np.float32)
        x_path = os.path.join(args.work, "open_dims_x.npy")
        np.save(x_path, x)
        outs = os.path.join(args.work, "open_dims_outputs")
        os.makedirs(outs, exist_ok=True)
        p = run([args.nanort_run, os.path.join(out, "open_dims.so"), "--input", f"x={x_path}",
                 "--output-dir", outs])
        if p.returncode != 0:
            return fail(f"nanort-run failed on the model compiled with {' '.join(flags)}")
        got = np.load(os.path.join(outs, "y.npy"))
        want = np.maximum(x.reshape(batch, 12), 0)
        if got.shape != want.shape or not np.array_equal(got, want):
            return fail(f"with {' '.join(flags)}: y is {got.shape}, not Relu(x) as {want.shape}")
    print("PASS: an open batch dim is refused with both flags named, flags that do not fit are "
          "refused, and each flag fixes it; the Shape -> Concat -> Reshape chain folds")
    return 0


def if_model(cond_from_input):
    """y = If(cond) { Relu(x) + w } else { Sigmoid(x) }, then z = y * ConstantOfShape(Shape(y), 2)."""
    f = TensorProto.FLOAT
    then_branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Add", ["r", "w"], ["t"], name="add")],
        "then", [], [helper.make_tensor_value_info("t", f, None)],
        initializer=[onnx.numpy_helper.from_array(np.array([5.0], np.float32), "w")])
    else_branch = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["e"], name="sigmoid")],
                                    "else", [], [helper.make_tensor_value_info("e", f, None)])
    nodes = [
        helper.make_node("If", ["cond"], ["y"], name="choose", then_branch=then_branch,
                         else_branch=else_branch),
        helper.make_node("Shape", ["y"], ["s"], name="shape"),
        helper.make_node("ConstantOfShape", ["s"], ["twos"], name="twos",
                         value=onnx.numpy_helper.from_array(np.array([2.0], np.float32))),
        helper.make_node("Mul", ["y", "twos"], ["z"], name="mul"),
    ]
    inputs = [helper.make_tensor_value_info("x", f, [4, 3])]
    if cond_from_input:
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    else:
        nodes.insert(0, helper.make_node("Constant", [], ["cond"], name="cond",
                                         value=onnx.numpy_helper.from_array(np.array(True))))
    return small_model(nodes, inputs, [helper.make_tensor_value_info("z", f, [4, 3])])


def control_flow(args):
    out = os.path.join(args.work, "control_flow")
    os.makedirs(out, exist_ok=True)
    # If with a constant condition: its taken branch, computed like ONNX's.
    path = os.path.join(args.work, "if_constant.onnx")
    onnx.save(if_model(cond_from_input=False), path)
    p = run([args.nanoc, path, "--name", "if_constant", "-o", out])
    if p.returncode != 0:
        return fail(f"nanoc refused If with a constant condition (status {p.returncode})")
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    x_path = os.path.join(args.work, "control_flow_x.npy")
    np.save(x_path, x)
    outs = os.path.join(args.work, "control_flow_outputs")
    os.makedirs(outs, exist_ok=True)
    p = run([args.nanort_run, os.path.join(out, "if_constant.so"), "--input", f"x={x_path}",
             "--output-dir", outs])
    if p.returncode != 0:
        return fail("nanort-run failed on the inlined If")
    got = np.load(os.path.join(outs, "z.npy"))
    want = (np.maximum(x, 0) + 5) * 2
    if not np.allclose(got, want, rtol=1e-6, atol=0):
        return fail(f"the inlined If computes {got}, not {want}")

    # A run-time condition: both branches compiled, the one the input picks
    # runs (nanort's IfThunk).
    path = os.path.join(args.work, "if_runtime.onnx")
    onnx.save(if_model(cond_from_input=True), path)
    p = run([args.nanoc, path, "--name", "if_runtime", "-o", out])
    if p.returncode != 0:
        return fail(f"nanoc refused If on a run-time condition (status {p.returncode})")
    for cond, want in ((True, (np.maximum(x, 0) + 5) * 2),
                       (False, 2 / (1 + np.exp(-x.astype(np.float64))))):
        c_path = os.path.join(args.work, f"cond_{cond}.npy")
        np.save(c_path, np.array(cond))
        p = run([args.nanort_run, os.path.join(out, "if_runtime.so"), "--input", f"x={x_path}",
                 "--input", f"cond={c_path}", "--output-dir", outs])
        if p.returncode != 0:
            return fail(f"nanort-run failed on If with cond={cond}")
        got = np.load(os.path.join(outs, "z.npy"))
        if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            return fail(f"If with cond={cond} computes {got}, not {want}")

    # A Loop whose trip count is a graph input and that has a scan output
    # (whose length would depend on the data): refused in one clear line.
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["v_in"], ["v_out"]),
         helper.make_node("Identity", ["v_in"], ["v_scan"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v_in", f, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", f, [2]),
         helper.make_tensor_value_info("v_scan", f, [None, 2])])
    loop = small_model(
        [helper.make_node("Loop", ["n", "", "v"], ["y", "ys"], name="loop", body=body)],
        [helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("v", f, [2])],
        [helper.make_tensor_value_info("y", f, [2]),
         helper.make_tensor_value_info("ys", f, [None, 2])])
    refused = [(loop, "loop", ["node 'loop' (Loop, opset 17)",
                               "trip count 'n' is computed at run time (from input 'n')",
                               "1 scan output"])]
    for model, name, words in refused:
        path = os.path.join(args.work, name + ".onnx")
        onnx.save(model, path)
        p = run([args.nanoc, path, "--name", name, "-o", out])
        problem = expect_clean_failure(p, "nanoc", want_status=1)
        if problem:
            return fail(f"{name}: {problem}")
        line = first_error_line(p) or ""
        missing = [w for w in words if w not in line]
        if missing:
            return fail(f"{name}: the error {line!r} does not name {', '.join(missing)}")
    print("PASS: If with a constant condition is inlined and computes its branch; If on a "
          "run-time condition runs the branch its input picks; a Loop with a run-time trip "
          "count and a scan output is refused in one clear line")
    return 0


TESTS = {f.__name__: f for f in (unsupported_ops, wrong_input_shape, missing_feature,
                                  malformed_models, open_dims, control_flow)}


def main(argv=None):
    p = argparse.ArgumentParser(description="A negative end-to-end test.")
    p.add_argument("test", choices=sorted(TESTS))
    p.add_argument("--nanoc", required=True)
    p.add_argument("--nanort-run", dest="nanort_run")
    p.add_argument("--work", required=True)
    args = p.parse_args(argv)
    if args.test not in ("unsupported_ops", "malformed_models") and not args.nanort_run:
        p.error(f"{args.test} needs --nanort-run")
    args.work = os.path.join(os.path.abspath(args.work), "negative_" + args.test)
    os.makedirs(args.work, exist_ok=True)
    try:
        return TESTS[args.test](args)
    except subprocess.TimeoutExpired as e:
        return fail(f"{e.cmd[0]} ran past {TOOL_TIMEOUT_S} s")


if __name__ == "__main__":
    sys.exit(main())
