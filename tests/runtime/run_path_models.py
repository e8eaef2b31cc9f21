#!/usr/bin/env python3
"""Compiles every end-to-end model (tests/e2e/models.py's cases, or those of
--cases), and the zoo's real models given with --zoo, with nanoc and runs a
check on each: by default nanort-run-path-check (nanort_run, on 1 and 2
threads, must make no allocation, lock or file open:
tests/runtime/run_path_check.cc); with --check-args, another check such as
nanort-concurrency-check (tests/runtime/concurrency_check.cc).

    run_path_models.py --nanoc NANOC --check CHECK --work DIR [--jobs 2] [--cases a,b]
        [--zoo DIR.onnx ...]
"""
import argparse
import concurrent.futures
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "e2e"))
import onnx  # noqa: E402
import models  # noqa: E402


def check(name, args):
    if name.endswith(".onnx"):  # a zoo model, as exported
        onnx_path, name = pathlib.Path(name), pathlib.Path(name).stem
        work = pathlib.Path(args.work) / name
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = pathlib.Path(args.work) / name
        work.mkdir(parents=True, exist_ok=True)
        onnx_path = work / (name + ".onnx")
        onnx.save(models.CASES[name].build(), str(onnx_path))
    cmd = [args.nanoc, str(onnx_path), "--name", name, "-o", str(work)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return False, f"FAIL: {' '.join(cmd)}\n{r.stdout}{r.stderr}"
    extra = (args.check_args.split(",") if args.check_args
             else ["--threads", "1,2", "--runs", str(args.runs)])
    r = subprocess.run([args.check, str(work / (name + ".so"))] + extra, capture_output=True,
                       text=True)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--nanoc", required=True)
    p.add_argument("--check", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cases", help="comma-separated case names (default: every case)")
    p.add_argument("--check-args",
                   help="the check's arguments after MODEL.so, comma-separated (default: "
                        "--threads 1,2 --runs RUNS, nanort-run-path-check's)")
    p.add_argument("--zoo", nargs="*", default=[], help="exported real models (.onnx) to add")
    args = p.parse_args()
    names = args.cases.split(",") if args.cases else sorted(models.CASES)
    for z in args.zoo:
        if pathlib.Path(z).is_file():
            names.append(z)
        else:
            print(f"{z}: not exported in this build; not checked, not counted")
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for name, (ok, text) in zip(names, pool.map(lambda n: check(n, args), names)):
            print(text, flush=True)
            if not ok:
                failed.append(name)
    print(f"{len(names) - len(failed)} of {len(names)} models passed {pathlib.Path(args.check).name}")
    if failed:
        print("FAIL: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
