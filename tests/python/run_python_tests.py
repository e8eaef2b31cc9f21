#!/usr/bin/env python3
"""pip-installs python/ into --work/site and runs its pytest suite there.

The build needs no network: scikit-build-core and nanobind come from the
virtual environment (tools/requirements.txt pins them), hence
--no-build-isolation; scikit-build-core keeps its CMake build in
--work/build, so a second run rebuilds only what changed.
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--python", required=True)
    p.add_argument("--source", required=True, type=Path)
    p.add_argument("--work", required=True, type=Path)
    p.add_argument("--nanoc", required=True)
    p.add_argument("--fake-cuda-driver", help="tests/cuda's fake libcuda.so.1, for the CUDA-array tests")
    args = p.parse_args()
    site = args.work / "site"
    shutil.rmtree(site, ignore_errors=True)
    cmd = [args.python, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
           "--disable-pip-version-check", "--target", str(site),
           f"--config-settings=build-dir={args.work / 'build'}", str(args.source)]
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd)
    if r.returncode != 0:
        print("FAIL: pip install ./python failed")
        return 1
    env = {**os.environ, "PYTHONPATH": str(site), "NANORT_NANOC": args.nanoc,
           "PYTHONDONTWRITEBYTECODE": "1"}
    if args.fake_cuda_driver:
        env["NANORT_TEST_FAKE_CUDA_DRIVER"] = args.fake_cuda_driver
    cmd = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           str(args.source / "tests")]
    print("+", " ".join(cmd), flush=True)
    # From the work folder, so that `import nanort` finds the installed
    # package, not the source folder's.
    return subprocess.run(cmd, env=env, cwd=args.work).returncode


if __name__ == "__main__":
    sys.exit(main())
