#!/usr/bin/env python3
"""nanort installed and used from outside its tree (issue #10 item 1).

    check_install.py host  --build BUILD --work DIR
    check_install.py cross --build BUILD --work DIR --cross-build CROSS_BUILD
                           --toolchain FILE --qemu QEMU [--target PROFILE]

host: `cmake --install BUILD --prefix DIR/prefix`, then checks the layout
(programs, libnanort.a, headers, the CMake package, pkg-config, the target
profiles) and that nanoc carries no path of the source tree; configures
tests/install/consumer against the prefix alone (CMAKE_PREFIX_PATH, a clean
environment, nothing of the source or build tree), builds and runs it; checks
that a second build runs nanoc no more and that changing nanoc's arguments
runs it again; and builds the same program by hand with pkg-config.

cross: installs CROSS_BUILD (tests/cross's aarch64 build of nanort, runtime
and tools only) into DIR/prefix-cross, builds the consumer with the aarch64
toolchain file against that prefix and the host prefix's nanoc
(NANORT_NANOC), for the profile --target, and runs it under qemu.
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent.parent


def run(cmd, env=None, cwd=None):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    p = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True)
    sys.stdout.write(p.stdout[-4000:])
    sys.stderr.write(p.stderr[-4000:])
    if p.returncode != 0:
        raise SystemExit(f"FAIL: exit {p.returncode}: {' '.join(str(c) for c in cmd)}")
    return p.stdout + p.stderr


def clean_env():
    # What a user's shell has, minus anything that could point into this tree.
    keep = {"PATH", "HOME", "LANG", "TERM", "TMPDIR"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":")
                           if p and not p.startswith(str(SOURCE)))
    return env


def install(build, prefix):
    shutil.rmtree(prefix, ignore_errors=True)
    run(["cmake", "--install", build, "--prefix", prefix])


def consumer(work, name, args, env):
    src = work / f"{name}-src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(HERE / "consumer", src)  # outside the tree, as a user's project
    bld = work / f"{name}-build"
    shutil.rmtree(bld, ignore_errors=True)
    run(["cmake", "-S", src, "-B", bld, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", *args],
        env=env)
    return src, bld


def host(args):
    work = args.work.resolve()
    prefix = work / "prefix"
    install(args.build, prefix)
    want = ["bin/nanoc", "bin/nanort-run", "bin/nanort-inspect", "lib/libnanort.a",
            "include/nanort/nanort.h", "include/nanort/nanort.hpp",
            "lib/cmake/nanort/nanortConfig.cmake", "lib/cmake/nanort/nanortConfigVersion.cmake",
            "lib/cmake/nanort/nanortTargets.cmake", "lib/cmake/nanort/nanortAddModel.cmake",
            "lib/pkgconfig/nanort.pc", "share/nanort/targets/cpu/x86-64-v3.json",
            "share/nanort/targets/cpu/cortex-a76.json"]
    missing = [w for w in want if not (prefix / w).exists()]
    if missing:
        raise SystemExit(f"FAIL: the prefix lacks {missing}")
    for exe in ["nanoc", "nanort-run", "nanort-inspect"]:
        data = (prefix / "bin" / exe).read_bytes()
        if str(SOURCE).encode() in data:
            raise SystemExit(f"FAIL: bin/{exe} holds the source tree's path {SOURCE}")
    env = clean_env()
    listed = run([prefix / "bin/nanoc", "--list-targets"], env=env)
    if "cortex-a76" not in listed:
        raise SystemExit("FAIL: the installed nanoc does not find its target profiles")

    src, bld = consumer(work, "host", [f"-DCMAKE_PREFIX_PATH={prefix}",
                                        "-DMODEL_TARGET=x86-64-v2"], env)
    out = run(["cmake", "--build", bld], env=env)
    if "nanoc" not in out:
        raise SystemExit("FAIL: the first build did not run nanoc")
    if "consumer: ok" not in run([bld / "consumer"]):
        raise SystemExit("FAIL: the consumer's output is wrong")
    out = run(["cmake", "--build", bld], env=env)
    if "nanoc" in out:
        raise SystemExit("FAIL: a second build with nothing changed ran nanoc again")
    run(["cmake", "-S", src, "-B", bld, "-DMODEL_TARGET=x86-64-v3"], env=env)
    out = run(["cmake", "--build", bld], env=env)
    if "nanoc" not in out:
        raise SystemExit("FAIL: changing nanoc's arguments did not compile the model again")
    if "consumer: ok" not in run([bld / "consumer"]):
        raise SystemExit("FAIL: the consumer's output is wrong after the rebuild")
    print("find_package, nanort_add_model and the consumer: ok")

    # pkg-config, by hand: the model compiled with the installed nanoc.
    pc = work / "pkgconfig-consumer"
    shutil.rmtree(pc, ignore_errors=True)
    pc.mkdir()
    run([prefix / "bin/nanoc", HERE / "consumer/affine.nir", "--name", "affine", "-o", pc,
         "--target", "x86-64-v2"], env=env)
    penv = {**env, "PKG_CONFIG_PATH": str(prefix / "lib/pkgconfig")}
    flags = run(["pkg-config", "--cflags", "--libs", "nanort"], env=penv).split()
    run(["cc", "-O2", "-I", pc, HERE / "consumer/consumer.c", pc / "affine.o", *flags, "-lm",
         "-o", pc / "consumer"], env=env)
    if "consumer: ok" not in run([pc / "consumer"]):
        raise SystemExit("FAIL: the pkg-config consumer's output is wrong")
    print("pkg-config: ok")
    return 0


def cross(args):
    work = args.work.resolve()
    host_prefix = work / "prefix-host-nanoc"
    install(args.build, host_prefix)
    prefix = work / "prefix-cross"
    install(args.cross_build, prefix)
    if (prefix / "bin/nanoc").exists():
        raise SystemExit("FAIL: the runtime-only cross prefix holds a nanoc")
    env = clean_env()
    _, bld = consumer(work, "cross", [f"-DCMAKE_TOOLCHAIN_FILE={args.toolchain}",
                                       f"-Dnanort_DIR={prefix}/lib/cmake/nanort",
                                       f"-DNANORT_NANOC={host_prefix}/bin/nanoc",
                                       f"-DMODEL_TARGET={args.target}"], env)
    run(["cmake", "--build", bld], env=env)
    kind = run(["file", bld / "consumer"]) if shutil.which("file") else ""
    if kind and "aarch64" not in kind:
        raise SystemExit(f"FAIL: the cross consumer is not an aarch64 program: {kind}")
    if "consumer: ok" not in run([args.qemu, "-cpu", "max", bld / "consumer"]):
        raise SystemExit("FAIL: the aarch64 consumer's output is wrong")
    print("cross-compiled consumer under qemu: ok")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=["host", "cross"])
    p.add_argument("--build", required=True, type=Path)
    p.add_argument("--work", required=True, type=Path)
    p.add_argument("--cross-build", type=Path)
    p.add_argument("--toolchain", type=Path)
    p.add_argument("--qemu")
    p.add_argument("--target", default="cortex-a76")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    return host(args) if args.mode == "host" else cross(args)


if __name__ == "__main__":
    sys.exit(main())
