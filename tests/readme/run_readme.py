#!/usr/bin/env python3
"""Runs README.md's command blocks as a user would, so the README cannot drift
from what works.

Every ```sh block of README.md runs, in order, as one bash script
(`set -euo pipefail`), in a scratch directory that looks like a checkout after
the README's first command: each top-level entry of the source tree is linked
into it and `build/` is the build tree this test belongs to. Whatever a block
writes (out/, build-aarch64/, ...) stays in the scratch directory.

A block the test cannot run here says so on the line before its fence:

    <!-- readme-test: skip: the reason -->

and is printed as skipped with that reason. A block that exits non-zero fails
the test, which prints the block, its output and its exit status. README
blocks of another language (```c) are not commands and are not run.

  python3 tests/readme/run_readme.py --source . --build build --work DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

SKIP_RE = re.compile(r"<!--\s*readme-test:\s*skip:\s*(.*?)\s*-->")
FENCE_RE = re.compile(r"^(\s*)```(\S*)\s*$")


def parse_blocks(text):
    """Returns [(line, section, lang, code, skip_reason)] for every fenced block."""
    blocks = []
    section = "(top)"
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        m = FENCE_RE.match(line)
        if not m:
            i += 1
            continue
        lang, start = m.group(2), i + 1
        j = start
        while j < len(lines) and not FENCE_RE.match(lines[j]):
            j += 1
        if j == len(lines):
            raise SystemExit(f"FAIL: README.md:{i + 1}: a ``` fence is never closed")
        skip = None
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0:
            s = SKIP_RE.search(lines[k])
            if s:
                skip = s.group(1) or "no reason given"
        blocks.append((i + 1, section, lang, "\n".join(lines[start:j]) + "\n", skip))
        i = j + 1
    return blocks


def make_scratch(source, build, work):
    if os.path.lexists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    for name in sorted(os.listdir(source)):
        if name == ".git" or name.startswith("build") or name.startswith("out"):
            continue
        os.symlink(os.path.join(source, name), os.path.join(work, name))
    os.symlink(build, os.path.join(work, "build"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", required=True, help="the source tree (README.md's folder)")
    p.add_argument("--build", required=True, help="the host build tree the README's commands use as build/")
    p.add_argument("--work", required=True, help="scratch folder, emptied first")
    p.add_argument("--section", action="append", default=[],
                   help="run only blocks whose section title contains this (repeatable)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per block")
    args = p.parse_args()

    source, build, work = (os.path.abspath(x) for x in (args.source, args.build, args.work))
    readme = os.path.join(source, "README.md")
    with open(readme, encoding="utf-8") as f:
        blocks = parse_blocks(f.read())
    commands = [b for b in blocks if b[2] == "sh"]
    if not commands:
        raise SystemExit("FAIL: README.md has no ```sh block: nothing was checked")
    others = sorted({b[2] or "(none)" for b in blocks if b[2] != "sh"})

    make_scratch(source, build, work)
    env = dict(os.environ)
    ran = skipped = 0
    for line, section, _, code, skip in commands:
        if args.section and not any(s in section for s in args.section):
            continue
        title = f"README.md:{line} [{section}]"
        if skip:
            print(f"-- SKIP {title}: {skip}", flush=True)
            skipped += 1
            continue
        print(f"-- RUN {title}\n{code}", end="", flush=True)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(["bash", "-c", "set -euo pipefail\n" + code], cwd=work, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=args.timeout)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            print(out)
            raise SystemExit(f"FAIL: {title} ran past {args.timeout} s")
        print(proc.stdout, end="" if proc.stdout.endswith("\n") or not proc.stdout else "\n")
        if proc.returncode != 0:
            raise SystemExit(f"FAIL: {title} exited with status {proc.returncode} "
                             f"(scratch folder: {work})")
        print(f"-- OK {title} ({time.monotonic() - t0:.1f} s)", flush=True)
        ran += 1
    if ran == 0:
        raise SystemExit("FAIL: no README block ran (all skipped or filtered out)")
    print(f"README.md: {ran} command blocks ran and passed, {skipped} skipped (reasons above); "
          f"blocks in {', '.join(others) or 'no other language'} are not commands")


if __name__ == "__main__":
    main()
