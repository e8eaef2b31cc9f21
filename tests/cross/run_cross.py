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
  jetson CASE the Jetson deployment (aarch64 host + sm_87 GPU) without a GPU:
              the e2e case compiled twice, --target GPU_TARGET --name m_gpu
              (its host part for the GPU profile's aarch64 CPU, cubins inside)
              and --target PROFILE --name m_cpu; m_gpu.o must be an aarch64
              object whose program (nanort-inspect) carries a GPU_TARGET cubin.
              samples/gpu_fallback/gpu_fallback_app.c is linked statically
              with both and the cross-built nanort (CUDA offload included) and
              run under qemu, where there is no libcuda.so.1: the GPU model's
              load must say UNAVAILABLE naming the missing driver, and the
              CPU model it falls back to must match ONNX Runtime (1e-5).

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


def nanoc(args, model_path, name, out_dir, target=None):
    target = target or args.target
    os.makedirs(out_dir, exist_ok=True)
    run([args.nanoc, model_path, "--name", name, "--target", target, "-o", out_dir],
        f"nanoc --target {target}")
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


EM_AARCH64 = 183
EM_CUDA = 190


def elf_machine(path):
    """e_machine of an ELF file (little-endian), or None if it is not ELF."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little")


def check_jetson(args, link):
    case = models.get_case(args.name)
    work = os.path.join(args.work, "jetson_" + args.gpu_target, case.name)
    in_dir, out_dir, art_dir = (os.path.join(work, d) for d in ("inputs", "outputs", "nanoc"))
    for d in (in_dir, out_dir):
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):  # a stale file must not pass for a fresh one
            os.remove(os.path.join(d, f))
    m = case.build()
    model_path = os.path.join(work, case.name + ".onnx")
    onnx.save(m, model_path)
    gpu_obj = nanoc(args, model_path, "m_gpu", art_dir, target=args.gpu_target)
    cpu_obj = nanoc(args, model_path, "m_cpu", art_dir)

    # The artifact: an object for the board's CPU, whose program carries a
    # cubin for the board's GPU.
    problems = []
    for obj in (gpu_obj, cpu_obj):
        machine = elf_machine(obj)
        if machine != EM_AARCH64:
            problems.append(f"{obj}: ELF machine {machine}, not aarch64 ({EM_AARCH64})")
    inspect = run([args.inspect, os.path.join(art_dir, "m_gpu.nrt")], "nanort-inspect").stdout
    cubin = re.compile(rf"^\s*\d+: cubin {re.escape(args.gpu_target)}, ", re.M)
    if not cubin.search(inspect):
        problems.append(f"m_gpu.nrt: no {args.gpu_target} cubin among its GPU images")
    if not re.search(r'^\s*triple: "aarch64-', inspect, re.M):
        problems.append("m_gpu.nrt: the host target is not aarch64")
    # The cubin's own ELF header (EM_CUDA): its e_flags name the SM, in bits
    # 8-15 as ptxas 13.0 writes them (0x57 for sm_87), in bits 0-7 before.
    sm = int(re.sub(r"\D", "", args.gpu_target))
    with open(os.path.join(art_dir, "m_gpu.nrt"), "rb") as f:
        program = f.read()
    cubin_flags = []
    for at in (m.start() for m in re.finditer(re.escape(b"\x7fELF"), program)):
        head = program[at:at + 52]
        if len(head) == 52 and int.from_bytes(head[18:20], "little") == EM_CUDA:
            cubin_flags.append(int.from_bytes(head[48:52], "little"))
    if not any(sm in (flags & 0xFF, (flags >> 8) & 0xFF) for flags in cubin_flags):
        problems.append(f"m_gpu.nrt: no CUDA ELF (cubin) for SM {sm} inside; e_flags of those "
                        f"found: {[hex(f) for f in cubin_flags]}")
    if problems:
        for p in problems:
            print("FAIL: " + p, file=sys.stderr)
        return 1

    includes = [f"-I{d}" for d in link["include_dirs"] + [art_dir]]
    app_o = os.path.join(work, "gpu_fallback_app.o")
    run([link["cc"], "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", *includes, "-c", args.app,
         "-o", app_o], "the cross C compiler")
    exe = os.path.join(work, "gpu_fallback_app")
    # glibc warns that a static program's dlopen needs the same glibc at run
    # time; nanort's dlopen of libcuda.so.1 is that case, and is expected.
    run([link["cxx"], *link["link_flags"], "-o", exe, app_o, gpu_obj, cpu_obj,
         link["nanort_lib"]], "the cross linker")

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little")
    print(f"jetson {case.name} on {link['processor']} ({args.gpu_target} / {args.target}): "
          f"seed {seed}")
    feeds = run_e2e.make_inputs(case, m, seed)
    ref = run_e2e.run_reference(model_path, feeds)
    for name, x in feeds.items():
        np.ascontiguousarray(x).tofile(os.path.join(in_dir, run_e2e.file_safe(name) + ".bin"))
    os.environ.pop("NANORT_CUDA_DRIVER", None)  # the driver nanort looks for: libcuda.so.1
    out = run(qemu_cmd(args, exe) + [in_dir, out_dir],
              f"gpu_fallback_app on {link['processor']} under qemu", timeout=QEMU_TIMEOUT_S).stdout

    gpu_line = re.search(r"^gpu: (.*)$", out, re.M)
    want = "UNAVAILABLE no CUDA driver: cannot load libcuda.so.1"
    if not gpu_line or not gpu_line.group(1).startswith(want):
        problems.append(f"the GPU model's load: want '{want} ...', got "
                        f"'{gpu_line.group(1) if gpu_line else '(no gpu: line)'}'")
    if not re.search(r"^running on: cpu \(", out, re.M):
        problems.append("the app did not fall back to the CPU model")
    errors = []
    for o in m.graph.output:
        want_arr = ref[o.name]
        path = os.path.join(out_dir, run_e2e.file_safe(o.name) + ".bin")
        if not os.path.isfile(path):
            problems.append(f"output '{o.name}': the app wrote no {path}")
            continue
        got = np.fromfile(path, dtype=want_arr.dtype)
        if got.size != want_arr.size:
            problems.append(f"output '{o.name}': {got.size} elements, ONNX Runtime's has "
                            f"{want_arr.size}")
            continue
        probs, err = run_e2e.compare(o.name, got.reshape(want_arr.shape), want_arr)
        problems += probs
        if err is not None:
            errors.append(err)
    if problems:
        print(f"FAIL: jetson {case.name} (seed {seed})", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"PASS: jetson {case.name} on {link['processor']}: m_gpu ({args.gpu_target}) "
          f"UNAVAILABLE without a driver, m_cpu ({args.target}) max normwise relative error "
          f"{max(errors, default=0.0):.3e} over {len(errors)} outputs")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("check", choices=["case", "digits", "jetson"])
    p.add_argument("name", nargs="?", help="the e2e case (checks 'case' and 'jetson')")
    p.add_argument("--nanoc", required=True)
    p.add_argument("--target", required=True, help="nanoc --target profile")
    p.add_argument("--link", required=True, help="link.json of the runner's cross build")
    p.add_argument("--qemu", required=True)
    p.add_argument("--qemu-cpu", default="", help="qemu's CPU flags, e.g. '-cpu max'")
    p.add_argument("--work", required=True)
    p.add_argument("--seed", type=int, help="replay the inputs of an earlier run")
    p.add_argument("--data", help="the digits data folder (train.py --out)")
    p.add_argument("--app", help="samples/digits/digits_app.c or (jetson) "
                   "samples/gpu_fallback/gpu_fallback_app.c")
    p.add_argument("--gpu-target", default="sm_87", help="(jetson) the nanoc GPU profile")
    p.add_argument("--inspect", help="(jetson) nanort-inspect")
    args = p.parse_args()
    if args.check in ("case", "jetson") and not args.name:
        p.error(f"check '{args.check}' needs a case name")
    if args.check == "jetson" and not (args.app and args.inspect):
        p.error("check 'jetson' needs --app and --inspect")
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
    return check_jetson(args, link) if args.check == "jetson" else check_case(args, link)


if __name__ == "__main__":
    sys.exit(main())
