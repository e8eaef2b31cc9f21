"""Checks on what nanoc writes and what nanort links against.

  determinism  the same model and flags give byte-identical NAME.o, .h, .nrt, .so
  symbols      NAME.o exports NAME_model and nothing else; every symbol it
               defines carries the NAME_ prefix
  runtime      libnanort.a defines only nanort_-prefixed C symbols and
               nanort::-namespaced C++ ones (plus the weak inline functions of
               the header-only flatbuffers verifier), and its undefined symbols all come
               from libc, libm or libdl (no libstdc++ beyond header-only code:
               no operator new, no exceptions, no RTTI)

usage: check_artifacts.py CHECK --nanoc NANOC --models MODELS_PY --work DIR
                          [--libnanort LIB] [--nm NM]
"""
import argparse
import filecmp
import os
import re
import subprocess
import sys


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def nm(nm_tool, path, *flags):
    """(type, name) of every symbol nm lists (undefined ones have no address)."""
    out = []
    for line in run([nm_tool, *flags, path]).splitlines():
        parts = line.split()
        if len(parts) >= 2 and len(parts[-2]) == 1:
            out.append((parts[-2], parts[-1]))
    return out


def compile_model(args, case, out_dir):
    onnx_dir = os.path.join(args.work, "onnx")
    os.makedirs(onnx_dir, exist_ok=True)
    model = os.path.join(onnx_dir, case + ".onnx")
    if not os.path.exists(model):
        run([sys.executable, args.models, "--out", onnx_dir, "--case", case])
    run([args.nanoc, model, "--name", case, "-o", out_dir])
    return out_dir


def check_determinism(args):
    failures = []
    for case in ("mlp", "small_cnn"):
        a = compile_model(args, case, os.path.join(args.work, "a"))
        b = compile_model(args, case, os.path.join(args.work, "b"))
        for ext in (".o", ".h", ".nrt", ".so"):
            name = case + ext
            same = filecmp.cmp(os.path.join(a, name), os.path.join(b, name), shallow=False)
            print(f"{name}: {'identical' if same else 'DIFFERS'}")
            if not same:
                failures.append(name)
    return failures


def check_symbols(args):
    failures = []
    out = compile_model(args, "small_cnn", os.path.join(args.work, "sym"))
    for kind, name in nm(args.nm, os.path.join(out, "small_cnn.o"), "--defined-only"):
        exported = kind.isupper()
        print(f"{kind} {name}")
        if name.startswith(".L"):
            continue  # assembler-local labels (constant pools): not linkable
        if not name.startswith("small_cnn_"):
            failures.append(f"symbol without the model's prefix: {name}")
        if exported and name != "small_cnn_model":
            failures.append(f"exported symbol other than small_cnn_model: {name}")
    return failures


def dynamic_exports(path):
    # "memcpy@@GLIBC_2.14": the name without its symbol version.
    return {name.split("@")[0] for _, name in nm("nm", path, "-D", "--defined-only")}


def check_runtime(args):
    failures = []
    system = set()
    multiarch = run(["gcc", "-print-multiarch"]).strip()
    for lib in ("libc.so.6", "libm.so.6"):
        system |= dynamic_exports(os.path.join("/lib", multiarch, lib))
    symbols = nm(args.nm, args.libnanort, "--extern-only")
    defined = {name for kind, name in symbols if kind != "U"}
    for kind, name in symbols:
        if kind == "U":
            # An archive member may use what another member defines.
            # _GLOBAL_OFFSET_TABLE_: the linker's own, which a weak
            # reference's GOT load (model.cc's nanort_cuda_offload) names.
            if name not in defined and name not in system and name != "_GLOBAL_OFFSET_TABLE_":
                failures.append(f"undefined symbol outside libc/libm/libdl: {name}")
        elif kind in "Ww" and re.match(r"_ZN?K?11flatbuffers", name):
            continue  # the header-only flatbuffers verifier's inline functions
        elif not (name.startswith("nanort_") or name.startswith("_ZN6nanort") or
                  name.startswith("_ZNK6nanort")):
            failures.append(f"defined symbol outside nanort's namespaces: {kind} {name}")
    print(f"libnanort.a: {len(failures)} problem(s)")
    return failures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=["determinism", "symbols", "runtime"])
    p.add_argument("--nanoc")
    p.add_argument("--models")
    p.add_argument("--work")
    p.add_argument("--libnanort")
    p.add_argument("--nm", default="nm")
    args = p.parse_args()
    failures = {"determinism": check_determinism, "symbols": check_symbols,
                "runtime": check_runtime}[args.check](args)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
