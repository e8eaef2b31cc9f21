#!/usr/bin/env python3
"""Times a compiled model's GPU kernels one by one (issue #12, a tool).

    tests/gpu/kernel_profile.py --inspect build/tools/nanort-inspect \\
        MODEL.nrt DIR [--iterations 50]
    build/compiler/nanoc_gpu_cuda_run DIR OUT        # on the GPU machine

writes DIR/kernels.cubin (the program's cubin) and DIR/manifest.txt
(nanoc_gpu_cuda_run's format): every GPU kernel of the program in its
order, launched with its own grid and block on buffers of its arguments'
sizes, inputs filled by the runner with values in [-1, 1), `--iterations`
launches timed with events. nanoc_gpu_cuda_run then prints a PERF line a
kernel (µs a launch): where a model's time goes, kernel by kernel. The
values are not the model's (indices read as floats are clamped by the
kernels as the reference clamps them), so the times are those of the
kernels' shapes; the sum leaves out what the CUDA graph adds between them.
"""
import argparse
import json
import os
import subprocess
import sys


def cubin_of(program: bytes, size: int) -> bytes:
    """The embedded cubin: the ELF image of `size` bytes in the program."""
    at = program.find(b"\x7fELF")
    while at >= 0:
        image = program[at:at + size]
        # e_machine 190 is EM_CUDA.
        if len(image) == size and int.from_bytes(image[18:20], "little") == 190:
            return image
        at = program.find(b"\x7fELF", at + 1)
    sys.exit("no cubin of %d bytes in the program" % size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("program", help="a .nrt written by nanoc for one SM target")
    ap.add_argument("dir", help="the bundle directory to write")
    ap.add_argument("--inspect", required=True, help="nanort-inspect")
    ap.add_argument("--iterations", type=int, default=50)
    args = ap.parse_args()
    info = json.loads(subprocess.check_output([args.inspect, args.program, "--json"]))
    gpu = info.get("gpu")
    if not gpu:
        sys.exit(args.program + " has no GPU module")
    cubins = [i for i in gpu["images"] if i["format"] == "cubin"]
    if len(cubins) != 1:
        sys.exit("want one cubin (one SM target), the program has %d" % len(cubins))
    with open(args.program, "rb") as f:
        program = f.read()
    os.makedirs(args.dir, exist_ok=True)
    with open(os.path.join(args.dir, "kernels.cubin"), "wb") as f:
        f.write(cubin_of(program, cubins[0]["bytes"]))
    model = info.get("model_name", "model")
    with open(os.path.join(args.dir, "manifest.txt"), "w") as m:
        for k in gpu["kernels"]:
            sizes, outs = k["arg_bytes"], k["num_outputs"]
            label = " %s %s" % (model, k["name"])
            m.write("kernel %s %s %s %d %d %d%s\n" % (
                k["name"], " ".join(map(str, k["grid"])), " ".join(map(str, k["block"])),
                k["shared_bytes"], args.iterations, len(sizes), label))
            for i, size in enumerate(sizes):
                kind = "out" if i >= len(sizes) - outs else "in"
                m.write("%s %d -\n" % (kind, size))
    print("%d kernels of %s in %s" % (len(gpu["kernels"]), model, args.dir))


if __name__ == "__main__":
    main()
