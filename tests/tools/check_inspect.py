#!/usr/bin/env python3
"""nanort-inspect on the test program: text, JSON, ELF objects, corrupt files.

usage: check_inspect.py NANORT_INSPECT FIXTURES_DIR [OBJCOPY CC]
FIXTURES_DIR holds what make_test_fixtures writes. With OBJCOPY and CC, a
real toolchain-made object carrying the program is inspected too.
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    p = subprocess.run(args, capture_output=True)
    check(p.returncode >= 0, f"{args} died of signal {-p.returncode}")
    return p


def expect_ok(tool, path, *flags):
    p = run(tool, path, *flags)
    check(p.returncode == 0, f"{path} {flags}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    check(p.stderr == b"", f"{path} {flags}: unexpected stderr {p.stderr!r}")
    return p.stdout.decode("utf-8")


def expect_invalid(tool, path, reason):
    for flags in ((), ("--json",)):
        p = run(tool, path, *flags)
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 1, f"{path}: exit {p.returncode}, want 1")
        want = f"nanort-inspect: error: {path}: not a valid nanort program ("
        check(err.startswith(want), f"{path}: stderr {err!r} does not start with {want!r}")
        check(reason in err, f"{path}: stderr {err!r} lacks {reason!r}")
        check(p.stdout == b"", f"{path}: printed {p.stdout!r} on error")


def check_json(doc, path):
    check(doc["format_version"] == {"major": 1, "minor": 0}, "format_version")
    check(doc["kernel_abi"] == 4, "kernel_abi")
    check(doc["model_name"] == "tiny", "model_name")
    t = doc["target"]
    check(t["device"] == "cpu" and t["triple"] == "riscv64-unknown-linux-gnu", f"target {t}")
    check(t["cpu"] == "generic-rv64" and t["features"] == ["c", "m", "v"], f"target {t}")
    check(doc["constants_size"] == 24, "constants_size")
    (entry,) = doc["entries"]
    check(entry["name"] == "main", "entry name")
    check(entry["inputs"] == [{"name": "x", "dtype": "f32", "shape": [2, 3], "buffer": 0}],
          f"inputs {entry['inputs']}")
    check(entry["outputs"] == [{"name": "y", "dtype": "f32", "shape": [2, 3], "buffer": 3}],
          f"outputs {entry['outputs']}")
    k, c = entry["thunks"]
    check(k == {"node": "add0", "op": "Add", "kind": "kernel", "kernel": 0,
                "kernel_name": "tiny_add_0", "args": [0, 1, 2], "num_outputs": 1,
                "task_count": 2}, f"kernel thunk {k}")
    check(c == {"node": "y_copy", "op": "Identity", "kind": "copy", "src": 2, "dst": 3,
                "size": 24}, f"copy thunk {c}")
    check([b["kind"] for b in doc["buffers"]] == ["input", "constant", "arena", "output", "arena"],
          "buffer kinds")
    # Invalid UTF-8 (\xff) comes back as U+00FF; the valid e-acute stays one.
    awkward = 't"2\\tmp\x01\xff\u00e9'
    arena = doc["arena"]
    check(arena["size"] == 128 and arena["alignment"] == 64, f"arena {arena}")
    check(arena["buffers"] == [
        {"buffer": 2, "begin": 0, "end": 24, "name": "t"},
        {"buffer": 4, "begin": 64, "end": 128, "name": awkward}], f"arena plan {arena['buffers']}")
    check(doc["kernels"] == [{"name": "tiny_add_0", "device": "cpu"}], "kernels")
    check(doc["kernel_table"] == [{"index": 0, "variant": 0, "kernel": 0, "name": "tiny_add_0",
                                   "device": "cpu"}], f"kernel_table {doc['kernel_table']}")
    check(doc["file"] == path, "file")


def main():
    tool, fixtures = sys.argv[1], sys.argv[2]
    objcopy = sys.argv[3] if len(sys.argv) > 3 else ""
    cc = sys.argv[4] if len(sys.argv) > 4 else ""
    nrt = os.path.join(fixtures, "tiny.nrt")
    obj = os.path.join(fixtures, "tiny.o")

    text = expect_ok(tool, nrt)
    for line in ("format version: 1.0", "kernel abi: 4", 'model: "tiny"',
                 'triple: "riscv64-unknown-linux-gnu"', 'input 0: "x" f32[2,3] buffer 0',
                 "arena: 128 bytes, alignment 64", "[0, 24) buffer 2", "copy src 2 dst 3 size 24",
                 'kernels: 1\n  0: "tiny_add_0" cpu\n'):
        check(line in text, f"text lacks {line!r}")
    check_json(json.loads(expect_ok(tool, nrt, "--json")), nrt)

    obj_text = expect_ok(tool, obj)
    check("ELF section .nanort.program at file offset 0x40" in obj_text, "ELF origin")
    check(obj_text.split("\n", 1)[1] == text.split("\n", 1)[1], ".o and .nrt reports differ")
    check_json(json.loads(expect_ok(tool, obj, "--json")), obj)

    # Format 1.4: nested thunks, numbered in pre-order and indented.
    cf = os.path.join(fixtures, "control_flow.nrt")
    cf_text = expect_ok(tool, cf)
    for line in ('    0: node "first" op "Identity": copy src 0 dst 2 size 16\n',
                 '    1: node "loop" op "Loop": loop trip_count 4 cond none counter 3 max_trips 10\n'
                 '      body: 1 thunks\n'
                 '        2: node "branch" op "If": if cond 1 outputs [2]\n'
                 '          then: 1 thunks\n'
                 '            3: node "then_copy" op "Identity": copy src 0 dst 2 size 16\n'
                 '          else: 1 thunks\n'
                 '            4: node "else_copy" op "Identity": copy src 0 dst 2 size 16\n'
                 '    5: node "last" op "Identity"'):
        check(line in cf_text, f"control flow text lacks {line!r}:\n{cf_text}")
    cf_json = json.loads(expect_ok(tool, cf, "--json"))
    loop = cf_json["entries"][0]["thunks"][1]
    check(loop["kind"] == "loop" and loop["cond"] is None and loop["max_trips"] == 10 and
          loop["body"][0]["kind"] == "if" and loop["body"][0]["else"][0]["node"] == "else_copy",
          f"control flow JSON: {loop!r}")

    expect_invalid(tool, os.path.join(fixtures, "tiny_truncated.nrt"), "verifier rejected")
    expect_invalid(tool, os.path.join(fixtures, "tiny_bitflip.nrt"), "verifier rejected")
    expect_invalid(tool, os.path.join(fixtures, "tiny_truncated.o"), "ELF section header table")

    p = run(tool, os.path.join(fixtures, "missing.nrt"))
    check(p.returncode == 1 and b"cannot open" in p.stderr, "missing file")
    p = run(tool, "--help")
    check(p.returncode == 0 and b"--json" in p.stdout, "--help")
    p = run(tool, "--version")
    check(p.returncode == 0 and p.stdout.startswith(b"nanort-inspect ") and
          b"(program format 1." in p.stdout and b"kernel ABI " in p.stdout,
          f"--version: {p.stdout!r}")
    p = run(tool, nrt, "--bogus")
    check(p.returncode == 1 and b"unknown option" in p.stderr, "unknown option")

    if objcopy and cc:
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "empty.c")
            o = os.path.join(tmp, "model.o")
            with open(src, "w") as f:
                f.write("int tiny_placeholder;\n")
            subprocess.run([cc, "-c", src, "-o", o], check=True)
            subprocess.run([objcopy, "--add-section", f".nanort.program={nrt}", o], check=True)
            check_json(json.loads(expect_ok(tool, o, "--json")), o)

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
