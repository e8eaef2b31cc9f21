#!/usr/bin/env python3
"""Writes ONNX's node conformance cases into a folder of the build tree.

The `onnx` wheel no longer ships upstream's `onnx/backend/test/data/node`, so
the cases are generated here from the test-case generators inside the
installed package (`onnx.backend.test.case.node.collect_testcases`): the same
models, inputs and expected outputs as upstream's data. They are never
committed; CMake runs this script at build time (tests/onnx_conformance/
CMakeLists.txt) and again only when the onnx package or this script changes.

    generate.py --out DIR [--stamp FILE]

DIR receives, for every case (sorted by name):

    cases/NAME/model.onnx
    cases/NAME/test_data_set_K/input_J.npy    (or .pb, see below)
    cases/NAME/test_data_set_K/output_J.npy

and DIR/manifest.json, which lists each case: its operator, tolerances, model,
and every input and output (graph name, file, kind, dtype, shape). A value
that .npy cannot carry for nanort-run (a sequence, an optional, a map, or a
tensor of strings or of a type nanort has no dtype for, such as float8e8m0)
is written instead in
upstream's protobuf form (TensorProto, SequenceProto, OptionalProto, MapProto)
as .pb, and its manifest entry says why (`npy: false`, `why`).

Deterministic: numpy's and Python's global RNGs are seeded before the
generators run (several draw unseeded random inputs), so the same onnx and
numpy versions give byte-identical files.
"""

import argparse
import json
import os
import random
import re
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

# The element types nanort-run reads and writes as .npy (tools/npy.cc).
NPY_DTYPES = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "float32", "float64"}
# ml_dtypes' types, which numpy saves as raw bytes ('|V2', '|V1'; the 4- and
# 2-bit types unpacked, one element a byte): nanort-run reads those as the
# model's bf16, float8 or sub-byte dtype; run.py views them back by the
# manifest's dtype name.
RAW_DTYPES = {"bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
              "int4", "uint4", "int2", "uint2", "float4_e2m1fn"}

EXPANDED_SUFFIX = re.compile(r"_expanded(_ver\d+)?$")


def op_name(node: onnx.NodeProto) -> str:
    """An operator's name, qualified by its domain outside the default one."""
    domain = node.domain if node.domain not in ("", "ai.onnx") else ""
    return f"{domain}.{node.op_type}" if domain else node.op_type


def case_operators(cases) -> dict:
    """The operator each case tests, by case name.

    A single-node model tests its node's op. ONNX's `expect()` writes every
    multi-node case as the function body of a single-node case, named after it
    with `_expanded` (and `_verN` for an older opset) appended, so a multi-node
    case tests the op of the case whose name it extends.
    """
    ops = {}
    for c in cases:
        if len(c.model.graph.node) == 1:
            ops[c.name] = op_name(c.model.graph.node[0])
    for c in cases:
        if c.name not in ops:
            base = EXPANDED_SUFFIX.sub("", c.name)
            if base not in ops:
                sys.exit(f"generate.py: cannot tell which operator case {c.name} tests "
                         f"({len(c.model.graph.node)} nodes, no single-node case {base})")
            ops[c.name] = ops[base]
    return ops


def value_kind(vi: onnx.ValueInfoProto) -> str:
    return vi.type.WhichOneof("value") or "tensor"


def write_value(value, vi: onnx.ValueInfoProto, stem: str) -> dict:
    """Writes one input or output value as STEM.npy, or STEM.pb where .npy cannot hold it."""
    kind = value_kind(vi)
    entry = {"name": vi.name, "kind": kind.replace("_type", "")}
    if kind == "tensor_type":
        array = numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) \
            else np.asarray(value)
        entry["dtype"] = array.dtype.name if array.dtype != object else "string"
        entry["shape"] = list(array.shape)
        if array.dtype.name in NPY_DTYPES | RAW_DTYPES:
            if array.dtype.name in RAW_DTYPES:
                array = array.view(f"V{array.dtype.itemsize}")
            np.save(stem + ".npy", array, allow_pickle=False)
            entry.update(file=os.path.basename(stem) + ".npy", npy=True)
            return entry
        proto = value if isinstance(value, onnx.TensorProto) \
            else numpy_helper.from_array(array, vi.name)
        entry["why"] = f"{entry['dtype']} tensor"
    elif kind == "sequence_type":
        proto = numpy_helper.from_list(value, vi.name)
        entry["why"] = "sequence"
    elif kind == "optional_type":
        proto = numpy_helper.from_optional(value, vi.name)
        entry["why"] = "optional"
    elif kind == "map_type":
        proto = numpy_helper.from_dict(value, vi.name)
        entry["why"] = "map"
    else:
        sys.exit(f"generate.py: {vi.name}: no writer for a {kind} value")
    with open(stem + ".pb", "wb") as f:
        f.write(proto.SerializeToString())
    entry.update(file=os.path.basename(stem) + ".pb", npy=False)
    return entry


def write_case(case, op: str, case_dir: str) -> dict:
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    data_sets = []
    for k, (inputs, outputs) in enumerate(case.data_sets):
        ds = f"test_data_set_{k}"
        os.makedirs(os.path.join(case_dir, ds))
        if len(inputs) != len(graph.input) or len(outputs) != len(graph.output):
            sys.exit(f"generate.py: {case.name}: {len(inputs)} inputs and {len(outputs)} outputs "
                     f"for a graph of {len(graph.input)} and {len(graph.output)}")
        values = {}
        for io, arrays, infos in (("inputs", inputs, graph.input), ("outputs", outputs, graph.output)):
            values[io] = []
            for j, (value, vi) in enumerate(zip(arrays, infos)):
                entry = write_value(value, vi, os.path.join(case_dir, ds, f"{io[:-1]}_{j}"))
                entry["file"] = f"{ds}/{entry['file']}"
                values[io].append(entry)
        data_sets.append(values)
    return {"name": case.name, "op": op, "rtol": case.rtol, "atol": case.atol,
            "model": "model.onnx", "data_sets": data_sets}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Writes ONNX's node test cases into DIR.")
    p.add_argument("--out", required=True, help="the folder to (re)write")
    p.add_argument("--stamp", help="a file touched once DIR is complete (CMake's OUTPUT)")
    args = p.parse_args(argv)

    # Some generators draw unseeded random inputs; seed them so that every
    # build writes the same cases. The generators also warn about their own
    # deliberate overflows and divisions by zero, which is noise here.
    np.random.seed(0)
    random.seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases
        cases = sorted(collect_testcases(), key=lambda c: c.name)
    ops = case_operators(cases)

    out = os.path.abspath(args.out)
    if args.stamp and os.path.exists(args.stamp):
        os.remove(args.stamp)  # a failed run below must not leave the old stamp standing
    cases_dir = os.path.join(out, "cases")
    if os.path.exists(cases_dir):
        shutil.rmtree(cases_dir)
    manifest_path = os.path.join(out, "manifest.json")
    if os.path.exists(manifest_path):
        os.remove(manifest_path)  # no manifest until every case is written
    entries = [write_case(c, ops[c.name], os.path.join(cases_dir, c.name)) for c in cases]
    manifest = {"onnx_version": onnx.__version__, "numpy_version": np.__version__,
                "cases": entries}
    with open(manifest_path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(manifest_path + ".tmp", manifest_path)
    if args.stamp:
        with open(args.stamp, "w") as f:
            f.write(f"onnx {onnx.__version__}: {len(entries)} cases\n")
    print(f"generate.py: {len(entries)} ONNX node cases (onnx {onnx.__version__}) in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
