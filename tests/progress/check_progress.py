"""nanoc's progress line (issue #10 item 4).

A chain of MatMul and Softmax nodes, a few hundred kernels, compiles in a few
seconds; a two-node one in well under a second. Checked:

  1. big model, --progress, stderr a pipe: one line per stage, the stages in
     nanoc's order, counters that only grow and end at N/N (100%), nothing in
     the first second; and with NANOC_PROGRESS_DELAY_MS=0 a small model shows
     all six stages, import to emit, the kernel counter ending at N/N
  2. big model, no flag, stderr a pipe: stderr empty
  3. big model on a pseudo-terminal: no flag, a line redrawn with '\\r' and
     erased at the end; --no-progress, nothing; an error message after a
     drawn line starts on a clean line
  4. NAME.o, .h, .nrt and .so byte-identical across all of these runs
  5. small model, --progress: done under a second, prints nothing

usage: check_progress.py --nanoc NANOC --work DIR
"""
import argparse
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

STAGES = ["import", "passes", "plan", "code generation", "optimization",
          "emit: object code", "emit: shared object"]
LINE = re.compile(r"^nanoc: (?P<stage>[a-z :]+?)"
                  r"(?: (?P<done>\d+)/(?P<total>\d+) (?:kernels|functions)| (?P<pct>\d+)%)?"
                  r" \((?P<secs>\d+\.\d) s\)$")
# The target: a named profile, so that stderr carries no --target host note.
TARGET = "x86-64-v3"
ARTIFACTS = ["m.o", "m.h", "m.nrt", "m.so"]

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def chain_model(path, pairs):
    """x -> (MatMul by a constant, Softmax) x pairs: two kernels a pair."""
    rng = np.random.default_rng(0)
    nodes, inits, cur = [], [], "x"
    for i in range(pairs):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((16, 16)) * 0.1).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Softmax", [f"m{i}"], [f"s{i}"], axis=-1))
        cur = f"s{i}"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [4, 16])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def nanoc_args(args, model, out_dir, *flags):
    return [args.nanoc, model, "--name", "m", "--target", TARGET, "-o", out_dir, *flags]


def run_pipe(args, model, out_dir, *flags, env=None):
    """(stderr, seconds) of nanoc with stderr a pipe."""
    start = time.monotonic()
    p = subprocess.run(nanoc_args(args, model, out_dir, *flags), capture_output=True,
                       text=True, env=env)
    secs = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"nanoc failed ({p.returncode}):\n{p.stderr}")
    return p.stderr, secs


def run_pty(cmd, env=None):
    """(returncode, what nanoc wrote to stderr) with stderr a pseudo-terminal."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=slave, env=env)
    os.close(slave)
    chunks = []

    def read():  # drain it while nanoc runs, so that it never blocks on a full pty
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: every writer has closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    rc = p.wait()
    reader.join(timeout=30)
    os.close(master)
    return rc, b"".join(chunks).decode()


def log_lines(stderr):
    """The parsed progress lines; a line that is not one fails."""
    lines = []
    for text in stderr.splitlines():
        m = LINE.match(text)
        check(m is not None and m["stage"] in STAGES, f"progress line {text!r}")
        if m:
            lines.append(m)
    return lines


def check_log(stderr, what, all_stages):
    lines = log_lines(stderr)
    stages = [m["stage"] for m in lines]
    order = [STAGES.index(s) for s in stages if s in STAGES]
    check(order == sorted(order), f"{what}: stages in order: {stages}")
    seen = list(dict.fromkeys(stages))
    if all_stages:
        check(seen == STAGES, f"{what}: every stage, import to emit: {seen}")
    else:
        check(seen[-3:] == STAGES[-3:], f"{what}: optimization and emit shown: {seen}")
    for stage in dict.fromkeys(stages):
        counted = [m for m in lines if m["stage"] == stage and (m["total"] or m["pct"])]
        if not counted:
            continue
        done = [int(m["pct"] or m["done"]) for m in counted]
        last = counted[-1]
        end = 100 if last["pct"] else int(last["total"])
        check(done == sorted(done) and done[-1] == end and end > 0,
              f"{what}: {stage} counter grows to its end: {done[-1]} of {end}")
        check(len(counted) <= 11, f"{what}: {stage}: at most a line a tenth ({len(counted)})")
    secs = [float(m["secs"]) for m in lines]
    check(secs == sorted(secs), f"{what}: seconds grow")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nanoc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    big = os.path.join(args.work, "big.onnx")
    small = os.path.join(args.work, "small.onnx")
    chain_model(big, 200)
    chain_model(small, 1)
    env = dict(os.environ)
    env.pop("NANOC_PROGRESS_DELAY_MS", None)
    env["TERM"] = "xterm"
    out = lambda name: os.path.join(args.work, name)  # noqa: E731

    # 1. --progress into a pipe.
    stderr, secs = run_pipe(args, big, out("log"), "--progress", env=env)
    print(f"big model: {secs:.1f} s with --progress")
    check(secs > 1.2, f"the big model takes over a second ({secs:.1f} s)")
    lines = check_log(stderr, "--progress, pipe", all_stages=False)
    check("\r" not in stderr and "\033" not in stderr, "--progress, pipe: no '\\r', no escapes")
    check(all(float(m["secs"]) >= 1.0 for m in lines), "--progress, pipe: nothing in the first second")
    emitted = [m for m in lines if m["stage"] == "emit: object code" and m["total"]]
    check(bool(emitted) and int(emitted[-1]["total"]) >= 400,
          "--progress, pipe: object code counts every kernel's function (400 and more)")
    zero = dict(env, NANOC_PROGRESS_DELAY_MS="0")
    stderr0, _ = run_pipe(args, small, out("log0"), "--progress", env=zero)
    lines0 = check_log(stderr0, "delay 0, small model", all_stages=True)
    kernels = [m for m in lines0 if m["stage"] == "code generation"]
    check(bool(kernels) and kernels[-1]["done"] == kernels[-1]["total"] and
          int(kernels[-1]["total"]) >= 2, "delay 0: code generation's counter reaches N/N kernels")
    for stage in STAGES:
        check(any(m["stage"] == stage for m in lines0), f"delay 0: stage {stage!r} shown")

    # 2. No flag, a pipe.
    stderr, _ = run_pipe(args, big, out("pipe"), env=env)
    check(stderr == "", f"no flag, pipe: stderr empty ({stderr[:80]!r})")
    stderr, _ = run_pipe(args, big, out("pipe_no"), "--no-progress", env=env)
    check(stderr == "", "--no-progress, pipe: stderr empty")

    # 3. A pseudo-terminal.
    rc, text = run_pty(nanoc_args(args, big, out("tty")), env=env)
    check(rc == 0, "terminal: nanoc succeeds")
    check(text.count("\r") >= 5 and "\033[K" in text, "terminal: a line redrawn with '\\r'")
    # (code generation, a tenth of a second here, is over before the line shows)
    for stage in ["optimization", "emit: object code"]:
        check(f"nanoc: {stage}" in text, f"terminal: {stage} shown")
    check(text.endswith("\r\033[K"), f"terminal: the line erased at the end ({text[-40:]!r})")
    check("\n" not in text, "terminal: no new lines")
    rc, text = run_pty(nanoc_args(args, big, out("tty_no"), "--no-progress"), env=env)
    check(rc == 0 and text == "", f"terminal, --no-progress: nothing ({text[:80]!r})")
    dumb = dict(env, TERM="dumb")
    rc, text = run_pty(nanoc_args(args, big, out("tty_dumb")), env=dumb)
    check(rc == 0 and "\r\033" not in text.replace("\r\n", "\n") and "nanoc: optimization" in text,
          "terminal, TERM=dumb: the log's lines, no redraws")
    # An error after the line is drawn: a model nanoc cannot write.
    blocked = out("blocked")
    open(blocked, "w").close()
    rc, text = run_pty(nanoc_args(args, big, os.path.join(blocked, "sub")), env=env)
    at = text.find("nanoc: error:")
    check(rc == 1 and at >= 0, "terminal: a failing compile says nanoc: error:")
    check("\r" in text[:at] and text[:at].endswith("\r\033[K"),
          f"terminal: the line erased before the error ({text[max(0, at - 30):at + 20]!r})")

    # 4. The same artifacts every way.
    for name in ARTIFACTS:
        ref = open(os.path.join(out("pipe"), name), "rb").read()
        for run in ["log", "pipe_no", "tty", "tty_no", "tty_dumb"]:
            same = open(os.path.join(out(run), name), "rb").read() == ref
            check(same, f"{name}: {run} byte-identical to no progress")

    # 5. A small model: silent, even with --progress.
    stderr, secs = run_pipe(args, small, out("small"), "--progress", env=env)
    check(secs < 1.0, f"small model under a second ({secs:.2f} s)")
    check(stderr == "", f"small model, --progress: nothing ({stderr[:80]!r})")
    rc, text = run_pty(nanoc_args(args, small, out("small_tty")), env=env)
    check(rc == 0 and text == "", f"small model, terminal: nothing ({text[:80]!r})")

    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("all progress checks passed")


if __name__ == "__main__":
    main()
