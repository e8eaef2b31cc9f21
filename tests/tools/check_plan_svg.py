#!/usr/bin/env python3
"""nanort-inspect --plan-svg: the arena plan picture and its summary.

usage: check_plan_svg.py NANORT_INSPECT FIXTURES_DIR WORK_DIR
                         [--nanoc NANOC --models-py MODELS_PY --case CASE]

FIXTURES_DIR holds what make_test_fixtures writes. The SVG is parsed with
xml.etree and checked against the program's own JSON report: one rectangle per
arena buffer, placed by its live range (x) and arena offset (y), its height
proportional to its size, labelled with its name and size; the peak line at
the arena size; the summary (peak, sum of the buffers' sizes, reuse factor);
the same bytes on a second run; and the errors. With --nanoc, the same checks
run on a model that nanoc compiles from models.py's CASE.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
TOL = 0.02  # coordinates are written with two decimals
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def run(*args):
    p = subprocess.run([str(a) for a in args], capture_output=True)
    check(p.returncode >= 0, f"{args} died of signal {-p.returncode}")
    return p


def display(name):
    """The name as the SVG shows it, \\xNN for control bytes; None when the JSON
    report cannot tell (it shows an invalid UTF-8 byte 0xNN as U+00NN)."""
    if any(0x80 <= ord(ch) < 0x100 for ch in name):
        return None
    return "".join(f"\\x{ord(ch):02x}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch
                   for ch in name)


def expected_plan(doc):
    """Arena buffers with live ranges [first, last] in thunk order, from the JSON report."""
    arena = {i: b for i, b in enumerate(doc["buffers"]) if b["kind"] == "arena"}
    first, last = {}, {}
    t = 0
    for entry in doc["entries"]:
        for th in entry["thunks"]:
            used = th["args"] if th["kind"] == "kernel" else [th["src"], th["dst"]]
            for b in used:
                if b in arena:
                    first.setdefault(b, t)
                    last[b] = t
            t += 1
    return arena, first, last, t


def svg_text(el):
    return "".join(el.itertext())


def check_plan(tool, program, work, tag):
    """Runs --plan-svg on `program` and checks the picture against its JSON report."""
    p = run(tool, program, "--json")
    if not check(p.returncode == 0, f"{tag}: --json failed: {p.stderr!r}"):
        return
    doc = json.loads(p.stdout)
    arena, first, last, num_thunks = expected_plan(doc)
    peak = doc["arena"]["size"]
    total = sum(b["size"] for b in arena.values())
    check(doc["arena"]["buffers_size_sum"] == total, f"{tag}: JSON buffers_size_sum")
    if peak:
        check(abs(doc["arena"]["reuse_factor"] - total / peak) < 1e-5 * total / peak,
              f"{tag}: JSON reuse_factor {doc['arena']['reuse_factor']}, want {total / peak}")
    else:
        check(doc["arena"]["reuse_factor"] is None, f"{tag}: JSON reuse_factor with no arena")

    svg_path = os.path.join(work, tag + ".svg")
    p = run(tool, program, "--plan-svg", svg_path)
    check(p.returncode == 0, f"{tag}: --plan-svg exit {p.returncode}: {p.stderr!r}")
    check(p.stderr == b"", f"{tag}: --plan-svg stderr {p.stderr!r}")
    out = p.stdout.decode()
    reuse = f"{total / peak:.2f}" if peak else "n/a"
    for line in (f"arena peak: {peak} bytes (the program's arena size)\n",
                 f"arena buffers: {len(arena)}, {total} bytes in all\n",
                 f"reuse factor: {reuse} (sum of the arena buffers' sizes / peak)\n",
                 f"wrote the arena plan of {len(arena)} buffers over {num_thunks} thunks to "
                 f"{svg_path}\n"):
        check(line in out, f"{tag}: stdout {out!r} lacks {line!r}")
    # The normal report carries the same summary.
    text = run(tool, program).stdout.decode()
    want = (f"; {len(arena)} buffers, {total} bytes in all; reuse factor "
            + (f"{reuse} (sum / arena size)" if peak else "n/a (empty arena)"))
    check(want in text, f"{tag}: text report lacks {want!r}")

    with open(svg_path, "rb") as f:
        data = f.read()
    root = ET.fromstring(data)
    check(root.tag == SVG + "svg", f"{tag}: root is {root.tag}")
    check(b"<script" not in data and b"href" not in data, f"{tag}: SVG is not self-contained")

    # Same input, same bytes.
    again = os.path.join(work, tag + "_again.svg")
    check(run(tool, program, "--plan-svg", again).returncode == 0, f"{tag}: second run")
    with open(again, "rb") as f:
        check(f.read() == data, f"{tag}: second run's SVG differs")

    ids = {el.get("id"): el for el in root.iter() if el.get("id")}
    summary = svg_text(ids["summary"])
    for want in (f"{peak} bytes", f"{len(arena)} arena buffers", f"({total} bytes) in all",
                 f"reuse factor {reuse}", f"{num_thunks} thunks"):
        check(want in summary, f"{tag}: summary {summary!r} lacks {want!r}")
    peak_line, peak_label = ids.get("peak"), ids.get("peak-label")
    if not check(peak_line is not None and peak_label is not None, f"{tag}: no peak line/label"):
        return
    check(f"({peak} bytes, the arena size)" in svg_text(peak_label), f"{tag}: peak label")
    plot_x0, plot_x1 = float(peak_line.get("x1")), float(peak_line.get("x2"))
    peak_y = float(peak_line.get("y1"))
    check(peak_line.get("y2") == peak_line.get("y1"), f"{tag}: peak line not horizontal")

    groups = [g for g in root.iter(SVG + "g") if "buffer" in (g.get("class") or "").split()]
    got_ids = sorted(int(g.get("id").removeprefix("buffer-")) for g in groups)
    check(got_ids == sorted(arena), f"{tag}: buffer groups {got_ids}, want {sorted(arena)}")
    check(len(root.findall(f".//{SVG}g[@id='buffers']/{SVG}g")) == len(arena),
          f"{tag}: not one group per arena buffer")
    if not arena:
        check("no-arena" in ids and "no arena buffers" in svg_text(ids["no-arena"]),
              f"{tag}: no 'no arena buffers' message")
        return
    check("no-arena" not in ids, f"{tag}: 'no arena buffers' shown with buffers")

    col = (plot_x1 - plot_x0) / max(1, num_thunks)
    scale = bottom = None
    for g in groups:
        bid = int(g.get("id").removeprefix("buffer-"))
        b = arena[bid]
        (rect,) = g.findall(SVG + "rect")
        x, y = float(rect.get("x")), float(rect.get("y"))
        w, h = float(rect.get("width")), float(rect.get("height"))
        used = bid in first
        check(("unused" in g.get("class").split()) == (not used), f"{tag}: b{bid} unused class")
        if used:
            want_x, want_w = plot_x0 + first[bid] * col, (last[bid] - first[bid] + 1) * col
        else:
            want_x, want_w = plot_x0, plot_x1 - plot_x0
        check(abs(x - want_x) <= TOL and abs(w - want_w) <= TOL,
              f"{tag}: b{bid} x {x} width {w}, want {want_x} {want_w} (thunks "
              f"{first.get(bid)}-{last.get(bid)})")
        # y: the same scale (px per byte) and baseline for every buffer.
        if scale is None and b["size"] > 0:
            scale = h / b["size"]
            bottom = y + h + b["offset"] * scale
        if scale is not None:
            check(abs(h - b["size"] * scale) <= TOL * 2,
                  f"{tag}: b{bid} height {h} not proportional to size {b['size']}")
            check(abs(y + h - (bottom - b["offset"] * scale)) <= TOL * 2,
                  f"{tag}: b{bid} y {y} does not match offset {b['offset']}")
        title = svg_text(g.find(SVG + "title"))
        name = display(b["name"])
        if name is None:
            check(f'buffer {bid} "' in title and f'": {b["size"]} bytes' in title,
                  f"{tag}: b{bid} title {title!r} lacks the size")
        else:
            check(f'buffer {bid} "{name}": {b["size"]} bytes' in title,
                  f"{tag}: b{bid} title {title!r} lacks name {name!r} and size")
        check(f"at arena offset {b['offset']}" in title, f"{tag}: b{bid} title lacks offset")
        for t in g.findall(SVG + "text"):
            check(svg_text(t) != "", f"{tag}: b{bid} empty label")
        labels = [svg_text(t) for t in g.findall(SVG + "text")]
        if labels:
            check(labels[0].startswith(f"b{bid}"), f"{tag}: b{bid} label {labels[0]!r}")
        legend = ids.get(f"legend-{bid}")
        if check(legend is not None, f"{tag}: b{bid} not in the legend"):
            line = svg_text(legend)
            check(line.startswith(f"b{bid} "), f"{tag}: legend {line!r}")
            if name is not None and len(name) <= 30:
                check(line.endswith(" " + name), f"{tag}: legend {line!r} lacks {name!r}")
            check(("unused" in line) == (not used) and
                  (not used or f"t{first[bid]}-{last[bid]}" in line),
                  f"{tag}: legend {line!r} lacks the live range")
    if scale is not None:
        check(abs(peak_y - (bottom - peak * scale)) <= TOL * 2,
              f"{tag}: peak line at y {peak_y}, want {bottom - peak * scale}")
    return doc


def check_errors(tool, fixtures, work):
    nrt = os.path.join(fixtures, "plan.nrt")
    missing_dir = os.path.join(work, "no-such-dir", "plan.svg")
    p = run(tool, nrt, "--plan-svg", missing_dir)
    err = p.stderr.decode()
    check(p.returncode == 1 and err.startswith(f"nanort-inspect: error: cannot write {missing_dir}: "),
          f"unwritable SVG: exit {p.returncode} stderr {err!r}")
    check(p.stdout == b"", f"unwritable SVG: printed {p.stdout!r}")
    p = run(tool, nrt, "--plan-svg", work)  # a directory
    check(p.returncode == 1 and b"cannot write" in p.stderr, "SVG path is a directory")
    if os.path.exists("/dev/full"):
        p = run(tool, nrt, "--plan-svg", "/dev/full")
        check(p.returncode == 1 and b"cannot write /dev/full" in p.stderr,
              f"full device: exit {p.returncode} {p.stderr!r}")
    p = run(tool, nrt, "--plan-svg")
    check(p.returncode == 1 and b"--plan-svg needs a file name" in p.stderr, "--plan-svg alone")
    p = run(tool, nrt, "--json", "--plan-svg", os.path.join(work, "x.svg"))
    check(p.returncode == 1 and b"cannot be given together" in p.stderr, "--json --plan-svg")
    bad_svg = os.path.join(work, "bad.svg")
    p = run(tool, os.path.join(fixtures, "tiny_bitflip.nrt"), "--plan-svg", bad_svg)
    check(p.returncode == 1 and b"not a valid nanort program" in p.stderr, "invalid program")
    check(not os.path.exists(bad_svg), "an SVG was written for an invalid program")
    p = run(tool, "--help")
    check(b"--plan-svg SVG" in p.stdout, "--help does not document --plan-svg")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("fixtures")
    ap.add_argument("work")
    ap.add_argument("--nanoc")
    ap.add_argument("--models-py")
    ap.add_argument("--case", default="small_cnn")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    doc = check_plan(args.tool, os.path.join(args.fixtures, "plan.nrt"), args.work, "plan")
    # What the fixture is built to show (test_program.h): reuse, a view, a dead
    # write, an unused buffer, XML's special characters in a name.
    if doc:
        check(doc["arena"]["size"] == 12352 and doc["arena"]["buffers_size_sum"] == 23616,
              f"plan fixture: arena {doc['arena']}")
        with open(os.path.join(args.work, "plan.svg"), encoding="utf-8") as f:
            raw = f.read()
        check("&lt;dead &amp; &quot;gone&quot;&gt;" in raw, "XML special characters not escaped")
        check("reuse factor 1.91" in raw, "plan fixture: reuse factor")
    check_plan(args.tool, os.path.join(args.fixtures, "no_arena.nrt"), args.work, "no_arena")
    # Control bytes and invalid UTF-8 in a name: still well-formed XML.
    check_plan(args.tool, os.path.join(args.fixtures, "tiny.nrt"), args.work, "tiny")
    check_plan(args.tool, os.path.join(args.fixtures, "tiny.o"), args.work, "tiny_o")
    with open(os.path.join(args.work, "tiny.svg"), "rb") as f:
        tiny = ET.fromstring(f.read())
    titles = [svg_text(t) for t in tiny.iter(SVG + "title")]
    awkward = 'buffer 4 "t"2\\tmp\\x01\\xff\u00e9": 64 bytes'
    check(any(awkward in t for t in titles), f"tiny: awkward name shown as {titles}")
    check_errors(args.tool, args.fixtures, args.work)

    if args.nanoc:
        onnx_dir = os.path.join(args.work, "onnx")
        p = run(sys.executable, args.models_py, "--out", onnx_dir, "--case", args.case)
        if check(p.returncode == 0, f"models.py --case {args.case}: {p.stderr!r}"):
            out_dir = os.path.join(args.work, args.case)
            p = run(args.nanoc, os.path.join(onnx_dir, args.case + ".onnx"), "-o", out_dir)
            if check(p.returncode == 0, f"nanoc {args.case}: {p.stderr!r}"):
                (nrt,) = [f for f in os.listdir(out_dir) if f.endswith(".nrt")] or [None]
                if check(nrt is not None, f"nanoc wrote no .nrt in {os.listdir(out_dir)}"):
                    doc = check_plan(args.tool, os.path.join(out_dir, nrt), args.work, args.case)
                    if doc:
                        check(doc["arena"]["size"] > 0 and len(doc["arena"]["buffers"]) >= 2,
                              f"{args.case}: expected a real arena plan")

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
