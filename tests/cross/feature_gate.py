"""The CPU feature gate, for real: the same model compiled for x86-64-v4 and
x86-64-v3, run by nanort-run on CPUs that QEMU emulates.

  gate    under `qemu-x86_64-static -cpu Haswell` (AVX2, no AVX-512) the v4
          program is refused naming the AVX-512 features it lacks and the v3
          program runs and equals the native run; under `-cpu SandyBridge` (no
          AVX2, no FMA) both are refused. Never a SIGILL.
  variants  one artifact compiled for x86-64-v3,x86-64-v4: nanort runs the v4
          kernels natively on an AVX-512 CPU, the v3 ones under an emulated
          Haswell (equal outputs), and refuses it on SandyBridge.
  native  the v4 program runs natively and equals the v3 one; exits 77
          (skipped, saying so) on a CPU without AVX-512, since QEMU 7.2 cannot
          emulate it.

Outputs are compared by max|a - b| / max|b| <= 1e-5 (normwise relative).
"""
import argparse
import os
import subprocess
import sys

import numpy as np

TOLERANCE = 1e-5
SKIP = 77


def compile_models(args):
    onnx_dir = os.path.join(args.work, "onnx")
    subprocess.run([sys.executable, args.models, "--out", onnx_dir, "--case", "mlp"], check=True,
                   capture_output=True)
    model = os.path.join(onnx_dir, "mlp.onnx")
    for target in ("x86-64-v3", "x86-64-v4", "x86-64-v3,x86-64-v4"):
        subprocess.run([args.nanoc, model, "--name", "mlp", "--target", target, "-o",
                        os.path.join(args.work, target)], check=True)
    import onnx
    graph_input = onnx.load(model).graph.input[0]
    shape = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    x = np.random.default_rng().standard_normal(shape).astype(np.float32)
    np.save(os.path.join(args.work, "x.npy"), x)
    return graph_input.name


def run(args, target, input_name, qemu_cpu=None, tag="native"):
    out = os.path.join(args.work, f"out-{target}-{tag}")
    cmd = [args.nanort_run, os.path.join(args.work, target, "mlp.so"), "--input",
           f"{input_name}={os.path.join(args.work, 'x.npy')}", "--output-dir", out, "--repeat", "1"]
    if qemu_cpu:
        cmd = [args.qemu, "-cpu", qemu_cpu] + cmd
    p = subprocess.run(cmd, text=True, capture_output=True)
    if p.returncode < 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} died of signal {-p.returncode}\n{p.stderr}")
    return p, out


def same_outputs(a_dir, b_dir):
    for name in sorted(os.listdir(b_dir)):
        a, b = np.load(os.path.join(a_dir, name)), np.load(os.path.join(b_dir, name))
        err = np.max(np.abs(a - b)) / max(1e-30, float(np.max(np.abs(b))))
        print(f"  {name}: normwise relative error {err:.3g}")
        if a.shape != b.shape or not err <= TOLERANCE:
            return False
    return True


def expect_refused(p, cpu, target, missing):
    message = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    print(f"{target} on {cpu}: exit {p.returncode}: {message}")
    ok = p.returncode == 1 and "UNSUPPORTED_TARGET" in message and all(
        f in message.split("lacks:")[-1] for f in missing)
    if not ok:
        print(f"FAIL: expected {target} to be refused on {cpu}, naming {', '.join(missing)}")
    return ok


def gate(args, input_name):
    ok = True
    native, native_out = run(args, "x86-64-v3", input_name)
    if native.returncode != 0:
        print("FAIL: x86-64-v3 program does not run natively:", native.stderr)
        return False
    p, _ = run(args, "x86-64-v4", input_name, "Haswell", "haswell")
    ok &= expect_refused(p, "Haswell", "x86-64-v4", ["avx512f", "avx512bw", "avx512vl"])
    p, out = run(args, "x86-64-v3", input_name, "Haswell", "haswell")
    print(f"x86-64-v3 on Haswell: exit {p.returncode}")
    if p.returncode != 0:
        print("FAIL: x86-64-v3 program refused on Haswell:", p.stderr)
        ok = False
    elif not same_outputs(out, native_out):
        print("FAIL: x86-64-v3 on Haswell differs from the native run")
        ok = False
    for target in ("x86-64-v3", "x86-64-v4"):
        p, _ = run(args, target, input_name, "SandyBridge", "sandybridge")
        ok &= expect_refused(p, "SandyBridge", target, ["avx2", "fma"])
    return ok


def ran_cpu(p):
    for line in p.stdout.splitlines():
        if line.startswith("target cpu="):
            return line[len("target cpu="):]
    return None


def variants(args, input_name):
    ok = True
    both = "x86-64-v3,x86-64-v4"
    flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split()
    want_native = "x86-64-v4" if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= set(
        flags) else "x86-64-v3"
    reference, reference_out = run(args, "x86-64-v3", input_name)
    for cpu, want in ((None, want_native), ("Haswell", "x86-64-v3")):
        p, out = run(args, both, input_name, cpu, cpu or "native")
        got = ran_cpu(p)
        print(f"{both} on {cpu or 'this CPU'}: exit {p.returncode}, ran {got}, want {want}")
        if p.returncode != 0 or got != want:
            print("FAIL:", p.stderr)
            ok = False
        elif not same_outputs(out, reference_out):
            print(f"FAIL: the {got} kernels differ from the x86-64-v3 program's output")
            ok = False
    p, _ = run(args, both, input_name, "SandyBridge", "sandybridge")
    ok &= expect_refused(p, "SandyBridge", both, ["avx2", "fma"])
    return ok


def native(args, input_name):
    flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split()
    if "avx512f" not in flags or "avx512bw" not in flags:
        print("SKIPPED: this CPU has no AVX-512 and QEMU 7.2 cannot emulate it")
        return SKIP
    p3, out3 = run(args, "x86-64-v3", input_name)
    p4, out4 = run(args, "x86-64-v4", input_name)
    print(f"x86-64-v4 native: exit {p4.returncode}")
    if p3.returncode or p4.returncode:
        print("FAIL:", p3.stderr, p4.stderr)
        return 1
    return 0 if same_outputs(out4, out3) else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=["gate", "variants", "native"])
    for flag in ("--nanoc", "--nanort-run", "--models", "--work"):
        p.add_argument(flag, required=True)
    p.add_argument("--qemu", default="qemu-x86_64-static")
    args = p.parse_args()
    args.work = os.path.join(args.work, args.check)
    os.makedirs(args.work, exist_ok=True)
    input_name = compile_models(args)
    if args.check == "gate":
        return 0 if gate(args, input_name) else 1
    if args.check == "variants":
        return 0 if variants(args, input_name) else 1
    return native(args, input_name)


if __name__ == "__main__":
    sys.exit(main())
