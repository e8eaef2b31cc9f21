#!/usr/bin/env python3
"""nanoc on models at the edges of what it takes (issue #11 item 5): each
case must end in a clear error (exit 1 with a message naming the problem) or
a compile bounded in time and memory, measured here and printed.

    nanoc_limits.py --nanoc PATH --nanort-run PATH --work DIR [--case NAME] [--big]

  tensor_2e40      an input and output of 2^40 f32 elements (4 TiB each):
                   compiles (the caller's tensors; nothing is sized by them
                   at compile time)
  arena_2e40       a 2^40-element intermediate: compiles, its arena of 8 TiB
                   in the header; nanort refuses a session it cannot allocate
  made_2e40        ConstantOfShape of 2^40 elements from a 124-byte model:
                   refused, no allocation of that size
  dims_overflow    a shape whose element count overflows int64: refused
  rnn_unrolled     an RNN declaring 2^30 steps: refused before unrolling
  nested_loops     a Loop of 65,536 iterations whose body is another such
                   Loop with an empty body: refused once the unrolled
                   iterations pass the graph's node limit (2^20), not 2^32
  nodes_100k       a chain of 100,000 elementwise nodes: compiles, and its
                   output matches numpy's
  file_over_2gib   a 2.2 GB file (sparse): refused, protobuf's limit, before
                   it is read
  init_2gb         (--big only: writes 2 GB) a 2.0e9-byte initializer:
                   compiles

Each compile runs under a 4 GiB address-space limit beyond the first case's
needs (RLIMIT_AS, init_2gb excepted) and prints its wall time and peak RSS.
Exit status: 0 when every case holds.
"""
import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "limits", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=OPSET)


def f32(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def tensor_2e40():
    n = 1 << 40
    return model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [n])], [f32("y", [n])])


def arena_2e40():
    n = 1 << 40
    return model([helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Exp", ["t"], ["u"]),
                  helper.make_node("Concat", ["u", "t"], ["y"], axis=0)],
                 [f32("x", [n])], [f32("y", [2 * n])])


def made_2e40():
    s = helper.make_tensor("s", TensorProto.INT64, [2], [1 << 20, 1 << 20])
    return model([helper.make_node("ConstantOfShape", ["s"], ["c"]),
                  helper.make_node("Add", ["x", "c"], ["y"])],
                 [f32("x", [1 << 20, 1 << 20])], [f32("y", [1 << 20, 1 << 20])], [s])


def dims_overflow():
    return model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [1 << 40, 1 << 40])],
                 [f32("y", [1 << 40, 1 << 40])])


def rnn_unrolled():
    steps, hidden = 1 << 30, 4
    w = numpy_helper.from_array(np.ones((1, hidden, 2), np.float32), "W")
    r = numpy_helper.from_array(np.ones((1, hidden, hidden), np.float32), "R")
    return model([helper.make_node("RNN", ["x", "W", "R"], ["y"], hidden_size=hidden)],
                 [f32("x", [steps, 1, 2])], [f32("y", [steps, 1, 1, hidden])], [w, r])


def nested_loops():
    def body(nodes, out):
        return helper.make_graph(
            nodes, "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                            helper.make_tensor_value_info("c", TensorProto.BOOL, []), f32("v_in", [2])],
            [helper.make_tensor_value_info("c", TensorProto.BOOL, []), f32(out, [2])])
    inner = helper.make_node("Loop", ["m", "", "v_in"], ["v_out"], body=body([], "v_in"))
    m = numpy_helper.from_array(np.array(65536, np.int64), "m")
    return model([helper.make_node("Loop", ["m", "", "v"], ["y"], body=body([inner], "v_out"))],
                 [f32("v", [2])], [f32("y", [2])], [m])


NODES = 100_000
CHAIN = ["Relu", "Add", "Mul", "Sigmoid"]


def nodes_100k():
    nodes, prev = [], "x"
    for i in range(NODES):
        op = CHAIN[i % 4]
        out = f"v{i}" if i < NODES - 1 else "y"
        ins = [prev] if op in ("Relu", "Sigmoid") else [prev, "w"]
        nodes.append(helper.make_node(op, ins, [out], name=f"n{i}"))
        prev = out
    w = numpy_helper.from_array(np.full(16, 0.5, np.float32), "w")
    return model(nodes, [f32("x", [16])], [f32("y", [16])], [w])


def nodes_100k_reference(x):
    v = x.astype(np.float32)
    for i in range(NODES):
        op = CHAIN[i % 4]
        if op == "Relu":
            v = np.maximum(v, 0)
        elif op == "Add":
            v = v + np.float32(0.5)
        elif op == "Mul":
            v = v * np.float32(0.5)
        else:
            v = (1 / (1 + np.exp(-v))).astype(np.float32)
    return v


def init_2gb():
    n = 500_000_000  # 2.0e9 bytes
    w = np.zeros(n, np.float32)
    w[::4096] = 1.0
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [f32("x", [n])], [f32("y", [n])],
                 [numpy_helper.from_array(w, "w")])


def limit_memory(limit):
    def apply():
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def nanoc(args, onnx_path, out_dir, limit=4 << 30):
    cmd = [args.nanoc, str(onnx_path), "-o", str(out_dir), "--target", "x86-64-v2"]
    log = out_dir.with_suffix(".log")
    start = time.time()
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
                             preexec_fn=limit_memory(limit))
        _, status, usage = os.wait4(p.pid, 0)
    seconds = time.time() - start
    rc = os.waitstatus_to_exitcode(status)
    print(f"  nanoc: exit {rc}, {seconds:.1f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MB")
    return rc, log.read_text(), seconds


def expect_error(args, name, m, *needles):
    path = args.work / f"{name}.onnx"
    onnx.save(m, path)
    rc, text, _ = nanoc(args, path, args.work / name)
    print("  " + text.strip().splitlines()[0][:300] if text.strip() else "  (no message)")
    if rc != 1:
        return f"{name}: nanoc exited {rc}, expected 1 with a message"
    for n in needles:
        if n not in text:
            return f"{name}: the message lacks '{n}'"
    return None


def expect_compile(args, name, m, limit=4 << 30):
    path = args.work / f"{name}.onnx"
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    rc, text, seconds = nanoc(args, path, args.work / name, limit)
    if rc != 0:
        return f"{name}: nanoc failed: {text[-600:]}"
    return None


def case_file_over_2gib(args):
    path = args.work / "file_over_2gib.onnx"
    small = tensor_2e40().SerializeToString()
    with open(path, "wb") as f:
        f.write(small)
        f.truncate(2_200_000_000)  # sparse: no disk used
    rc, text, _ = nanoc(args, path, args.work / "file_over_2gib")
    path.unlink()
    print("  " + text.strip().splitlines()[0][:300])
    if rc != 1 or "2 GiB" not in text:
        return f"file_over_2gib: expected exit 1 naming protobuf's 2 GiB limit, got {rc}"
    return None


def case_nodes_100k(args):
    err = expect_compile(args, "nodes_100k", nodes_100k())
    if err:
        return err
    rng = np.random.default_rng()
    x = rng.standard_normal(16).astype(np.float32)
    np.save(args.work / "x.npy", x)
    p = subprocess.run([args.nanort_run, str(args.work / "nodes_100k" / "nodes_100k.so"),
                        "--input", f"x={args.work / 'x.npy'}", "--repeat", "0", "--output-dir",
                        str(args.work / "nodes_100k_out")], capture_output=True, text=True)
    if p.returncode != 0:
        return f"nodes_100k: nanort-run failed: {p.stderr[-600:]}"
    y = np.load(args.work / "nodes_100k_out" / "y.npy")
    want = nodes_100k_reference(x)
    # 100,000 single-rounded f32 steps each: a tolerance of 1e-5 relative.
    if not np.allclose(y, want, rtol=1e-5, atol=1e-6):
        return f"nodes_100k: output differs from numpy: max |diff| {np.abs(y - want).max()}"
    print(f"  nanort-run matches numpy (max |diff| {np.abs(y - want).max():.2e})")
    return None


CASES = {
    "tensor_2e40": lambda a: expect_compile(a, "tensor_2e40", tensor_2e40()),
    "arena_2e40": lambda a: expect_compile(a, "arena_2e40", arena_2e40()),
    "made_2e40": lambda a: expect_error(a, "made_2e40", made_2e40(), "ConstantOfShape",
                                        "past 4 GiB"),
    "dims_overflow": lambda a: expect_error(a, "dims_overflow", dims_overflow(), "too large"),
    "rnn_unrolled": lambda a: expect_error(a, "rnn_unrolled", rnn_unrolled(), "steps",
                                           "unrolls past"),
    "nested_loops": lambda a: expect_error(a, "nested_loops", nested_loops(), "node limit"),
    "nodes_100k": case_nodes_100k,
    "file_over_2gib": case_file_over_2gib,
}
BIG = {"init_2gb": lambda a: expect_compile(a, "init_2gb", init_2gb(), limit=0)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nanoc", required=True)
    p.add_argument("--nanort-run", required=True)
    p.add_argument("--work", required=True, type=Path)
    p.add_argument("--case", action="append")
    p.add_argument("--big", action="store_true", help="also the 2 GB initializer")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    cases = {**CASES, **(BIG if args.big else {})}
    names = args.case or list(cases)
    failures = []
    for name in names:
        print(f"{name}:", flush=True)
        err = cases[name](args)
        print(f"  {'FAIL: ' + err if err else 'ok'}", flush=True)
        if err:
            failures.append(err)
    print(f"{len(names) - len(failures)}/{len(names)} cases hold")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
