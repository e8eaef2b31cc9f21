#!/usr/bin/env python3
"""SASS check of the GEMM kernels (issue #12 item 4): which instructions the
cubins nanoc embeds really hold, read with nvdisasm.

A MatMul (tests/e2e's matmul_2d and gemm_basic) and a CNN (small_cnn: its
Convs as nanoc.ConvNHWC, the GEMM's channels-last plan) are compiled by nanoc
for each
(--gpu-precision, SM list) below; the cubins are taken out of the program
(.nrt, read with flatc --json) and disassembled. Tensor-core modes must show
their HMMA (sm_80/sm_90 bf16: HMMA.16816.F32.BF16, tf32: HMMA.1688.F32.TF32,
f16: HMMA.16816.F32; sm_75 f16: HMMA.1688.F32); the exact mode no HMMA at all
and FFMA.

nvdisasm is not in CUDA 13.0's toolkit: tools/requirements.txt pins PyPI's
nvidia-cuda-nvdisasm (its binary is nvidia/cu13/bin/nvdisasm in the Python
environment). Found by --nvdisasm, $NVDISASM, PATH, then that package; exits
77 (skipped) when there is none.

    sass_check.py --nanoc PATH --flatc PATH --schema schema/program.fbs --work DIR
"""

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compile_all_sm import compile_case, cubins_of  # noqa: E402

# (precision, SMs, what each SM's cubin must contain, what it must not).
CHECKS = [
    ("bf16", ["sm_80", "sm_90"], [r"HMMA\.16816\.F32\.BF16"], []),
    ("tf32", ["sm_80"], [r"HMMA\.1688\.F32\.TF32"], []),
    ("f16", ["sm_80", "sm_90"], [r"HMMA\.16816\.F32\b(?!\.)"], [r"\.BF16", r"\.TF32"]),
    ("f16", ["sm_75"], [r"HMMA\.1688\.F32\b(?!\.)"], []),
    ("exact", ["sm_80", "sm_90"], [r"\bFFMA\b"], [r"HMMA"]),
]
CASES = ["matmul_2d", "gemm_basic", "small_cnn"]


def find_nvdisasm(given):
    if given:
        return given
    if os.environ.get("NVDISASM"):
        return os.environ["NVDISASM"]
    found = shutil.which("nvdisasm")
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        for sub in sorted(os.listdir(base)):
            path = os.path.join(base, sub, "bin", "nvdisasm")
            if os.access(path, os.X_OK):
                return path
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nanoc", required=True)
    p.add_argument("--flatc", required=True)
    p.add_argument("--schema", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--nvdisasm")
    args = p.parse_args()
    nvdisasm = find_nvdisasm(args.nvdisasm)
    if not nvdisasm:
        print("SKIP: no nvdisasm (pip install nvidia-cuda-nvdisasm, as tools/requirements.txt "
              "pins, or set NVDISASM)")
        return 77
    print(f"nvdisasm: {nvdisasm}")
    failures = []
    for case_name in CASES:
        for precision, sms, want, refuse in CHECKS:
            d = os.path.join(os.path.abspath(args.work), f"{case_name}_{precision}_{sms[0]}")
            program, error = compile_case(args.nanoc, args.flatc, args.schema, case_name, sms, d,
                                          ["--gpu-precision=" + precision])
            if error:
                failures.append(error)
                continue
            cubins = cubins_of(program.get("gpu") or {})
            for sm in sms:
                what = f"{case_name} --gpu-precision {precision} {sm}"
                if sm not in cubins:
                    failures.append(f"{what}: no cubin in the program")
                    continue
                cubin = os.path.join(d, sm + ".cubin")
                with open(cubin, "wb") as fh:
                    fh.write(cubins[sm])
                r = subprocess.run([nvdisasm, cubin], capture_output=True, text=True)
                if r.returncode != 0:
                    failures.append(f"{what}: nvdisasm failed: {r.stderr.strip()}")
                    continue
                sass = r.stdout
                hmma = sorted(set(re.findall(r"HMMA[A-Z0-9.]*", sass)))
                print(f"{what}: {len(re.findall(r'HMMA', sass))} HMMA {hmma}, "
                      f"{len(re.findall(r'FFMA', sass))} FFMA")
                for pattern in want:
                    if not re.search(pattern, sass):
                        failures.append(f"{what}: no /{pattern}/ in the SASS")
                for pattern in refuse:
                    if re.search(pattern, sass):
                        failures.append(f"{what}: /{pattern}/ in the SASS")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
