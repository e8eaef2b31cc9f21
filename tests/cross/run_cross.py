#!/usr/bin/env python3
"""Cross targets, proven by running: a model compiled by nanoc for an aarch64
or riscv64 profile, linked statically with the cross-built nanort, run under
qemu-user, compared with ONNX Runtime on the host.

  case CASE   one end-to-end case of tests/e2e/models.py: nanoc --target
              PROFILE, the model's NAME.o linked with nanort-static-run
              (tests/cross/runner), run under qemu on fresh random inputs, and
              every output compared with ONNX Runtime by run_e2e.py's rule
              (normwise relative error <= 1e-5, same shape and dtype).
  digits      samples/digits: both models compiled for PROFILE, digits_app.c
              linked with them and nanort, run under qemu on the held-out set
              that train.py wrote; the app itself checks the accuracy and that
              every class equals ONNX Runtime's.

`--link` is the link.json that the runner's cross build wrote (compilers and
libraries for the target). qemu's own warnings on stderr are shown, not
judged. A program that nanort refuses (UNSUPPORTED_TARGET and the missing
features) fails the test with nanort's message.

Exit status: 0 on a match, 1 otherwise.
"""
import argparse
import json
import re
import os
import shlex
import subprocess
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import models  # noqa: E402
import run_e2e  # noqa: E402

# qemu runs the bigger convolutions one to two orders of magnitude slower than
# native code; no case comes near this.
QEMU_TIMEOUT_S = 240


def run(cmd, what, timeout=120, cwd=None):
    print("+", shlex.join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"FAIL: {what} ran past {timeout} s")
    except OSError as e:
        raise SystemExit(f"FAIL: cannot run {what}: {e}")
    if p.stdout:
        print(p.stdout, end="" if p.stdout.endswith("\n") else "\n")
    if p.stderr:
        print(p.stderr, end="" if p.stderr.endswith("\n") else "\n", file=sys.stderr)
    qemu_bug = re.search(r"qemu-\S+: \S*translate\.c:\d+: .*Assertion .* failed", p.stderr or "")
    if p.returncode < 0 and qemu_bug:
        # QEMU 7.2's RISC-V translator asserts on some vector code (its own
        # consistency check, before the program's instruction runs): the
        # program is neither proven nor refuted, so the test says it was
        # skipped (CTest's "Not Run"), never passed.
        print(f"SKIP: QEMU's own translator failed ({qemu_bug.group(0)}), a QEMU bug, "
              "not the program's", flush=True)
        raise SystemExit(77)
    if p.returncode < 0:
        raise SystemExit(f"FAIL: {what} died of signal {-p.returncode}")
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {what} exited with status {p.returncode}")
    return p


def nanoc(args, model_path, name, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    run([args.nanoc, model_path, "--name", name, "--target", args.target, "-o", out_dir],
        f"nanoc --target {args.target}")
    obj, header = (os.path.join(out_dir, f"{name}.{ext}") for ext in ("o", "h"))
    for f in (obj, header):
        if not os.path.isfile(f):
            raise SystemExit(f"FAIL: nanoc exited 0 but wrote no {f}")
    return obj


def qemu_cmd(args, exe):
    return [args.qemu] + shlex.split(args.qemu_cpu) + [exe]


def check_case(args, link):
    case = models.get_case(args.name)
    work = os.path.join(args.work, case.name)
    in_dir, out_dir, art_dir = (os.path.join(work, d) for d in ("inputs", "outputs", "nanoc"))
    for d in (in_dir, out_dir):
        os.makedirs(d, exist_ok=True)
    for f in os.listdir(out_dir):  # a stale output must not pass for a fresh one
        os.remove(os.path.join(out_dir, f))

    m = case.build()
    model_path = os.path.join(work, case.name + ".onnx")
    onnx.save(m, model_path)
    obj = nanoc(args, model_path, case.name, art_dir)

    # The stub binds the runner to this model through the header nanoc wrote,
    # as an application would.
    stub = os.path.join(work, "model_stub.c")
    with open(stub, "w") as f:
        f.write(f'#include "{case.name}.h"\n'
                "const nanort_model_def* nanort_runner_model(void);\n"
                "const nanort_model_def* nanort_runner_model(void) "
                f"{{ return &{case.name}_model; }}\n")
    includes = [f"-I{d}" for d in link["include_dirs"] + [art_dir]]
    run([link["cc"], "-std=c11", "-Wall", "-Werror", *includes, "-c", stub, "-o", stub + ".o"],
        "the cross C compiler")
    exe = os.path.join(work, "runner")
    run([link["cxx"], *link["link_flags"], "-o", exe, stub + ".o", obj, link["runner_lib"],
         link["nanort_lib"]], "the cross linker")

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little")
    print(f"case {case.name} on {link['processor']} ({args.target}): seed {seed}")
    feeds = run_e2e.make_inputs(case, m, seed)
    ref = run_e2e.run_reference(model_path, feeds)
    cmd = qemu_cmd(args, exe)
    for name, x in feeds.items():
        path = os.path.join(in_dir, run_e2e.file_safe(name) + ".npy")
        np.save(path, x)
        cmd += ["--input", f"{name}={path}"]
    cmd += ["--output-dir", out_dir]
    run(cmd, f"the {link['processor']} program under qemu", timeout=QEMU_TIMEOUT_S)

    problems, errors = [], []
    for o in m.graph.output:
        path = os.path.join(out_dir, run_e2e.file_safe(o.name) + ".npy")
        if not os.path.isfile(path):
            problems.append(f"output '{o.name}': the runner wrote no {path}")
            continue
        probs, err = run_e2e.compare(o.name, np.load(path, allow_pickle=False), ref[o.name])
        problems += probs
        if err is not None:
            errors.append(err)
    if problems:
        print(f"FAIL: {case.name} on {link['processor']} (seed {seed})", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"PASS: {case.name} on {link['processor']} ({args.target}): max normwise relative "
          f"error {max(errors, default=0.0):.3e} over {len(errors)} outputs")
    return 0


def check_digits(args, link):
    work = os.path.join(args.work, "digits")
    objs, includes = [], [f"-I{d}" for d in link["include_dirs"]]
    for name in ("digits_mlp", "digits_cnn"):
        out = os.path.join(work, name)
        objs.append(nanoc(args, os.path.join(args.data, name + ".onnx"), name, out))
        includes.append(f"-I{out}")
    app_o = os.path.join(work, "digits_app.o")
    run([link["cc"], "-std=c11", "-O2", "-Wall", "-Wextra", *includes, "-c", args.app, "-o",
         app_o], "the cross C compiler")
    exe = os.path.join(work, "digits_app")
    run([link["cxx"], *link["link_flags"], "-o", exe, app_o, *objs, link["nanort_lib"]],
        "the cross linker")
    run(qemu_cmd(args, exe) + [args.data], f"digits_app on {link['processor']} under qemu",
        timeout=QEMU_TIMEOUT_S)
    print(f"PASS: digits on {link['processor']} ({args.target})")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("check", choices=["case", "digits"])
    p.add_argument("name", nargs="?", help="the e2e case (check 'case')")
    p.add_argument("--nanoc", required=True)
    p.add_argument("--target", required=True, help="nanoc --target profile")
    p.add_argument("--link", required=True, help="link.json of the runner's cross build")
    p.add_argument("--qemu", required=True)
    p.add_argument("--qemu-cpu", default="", help="qemu's CPU flags, e.g. '-cpu max'")
    p.add_argument("--work", required=True)
    p.add_argument("--seed", type=int, help="replay the inputs of an earlier run")
    p.add_argument("--data", help="the digits data folder (train.py --out)")
    p.add_argument("--app", help="samples/digits/digits_app.c")
    args = p.parse_args()
    if args.check == "case" and not args.name:
        p.error("check 'case' needs a case name")
    if args.check == "digits" and not (args.data and args.app):
        p.error("check 'digits' needs --data and --app")
    try:
        with open(args.link) as f:
            link = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL: cannot read {args.link}: {e}", file=sys.stderr)
        return 1
    args.work = os.path.abspath(args.work)
    if args.check == "digits":
        return check_digits(args, link)
    try:
        models.get_case(args.name)
    except KeyError as e:
        print(f"run_cross.py: error: {e.args[0]}", file=sys.stderr)
        return 1
    return check_case(args, link)


if __name__ == "__main__":
    sys.exit(main())
