#!/usr/bin/env python3
"""Writes the fuzzers' last run into docs/RELIABILITY.md.

  ctest --test-dir build -L fuzz
  python3 tests/fuzz/report.py --work build/tests/fuzz/run --doc docs/RELIABILITY.md

reads each target's stats.json (run_fuzzer.py writes them) and replaces the
table between the markers below in --doc. Nothing else of the file changes.
"""
import argparse
import json
import sys
from pathlib import Path

BEGIN = "<!-- fuzz-stats: written by tests/fuzz/report.py; do not edit by hand -->"
END = "<!-- end fuzz-stats -->"
FEEDS = {
    "program": "`nanort_model_load` on the bytes as a program (with fuzz_model.nir's kernels), "
               "then a session and one run",
    "onnx": "the ONNX importer, the pass pipeline and the arena plan (byte and structured "
            "mutations)",
    "ir_text": "the IR text parser, the pass pipeline and the arena plan",
    "npy": "the `.npy` reader, and a write and read back of what it accepts",
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", required=True, type=Path, help="run_fuzzer.py's --work")
    p.add_argument("--doc", required=True, type=Path)
    args = p.parse_args()

    rows = ["| target | what each input goes through | seconds | executions | coverage (edges) "
            "| corpus | peak RSS (MB) | regression inputs | date |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for name in FEEDS:
        f = args.work / name / "stats.json"
        if not f.exists():
            print(f"report.py: {f} is missing; run ctest -L fuzz first", file=sys.stderr)
            return 1
        s = json.loads(f.read_text())
        if s["exit"] != 0:
            print(f"report.py: fuzz_{name}'s last run failed; fix that first", file=sys.stderr)
            return 1
        rows.append(f"| fuzz_{name} | {FEEDS[name]} | {s['seconds']} | {s['executions']:,} | "
                    f"{s['coverage']:,} | {s['corpus']:,} | {s['peak_rss_mb']} | "
                    f"{s['regressions']} | {s['date']} |")
    text = args.doc.read_text()
    if BEGIN not in text or END not in text:
        print(f"report.py: {args.doc} lacks the markers {BEGIN!r} and {END!r}", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    args.doc.write_text(head + BEGIN + "\n" + "\n".join(rows) + "\n" + END + tail)
    print(f"report.py: wrote {len(rows) - 2} rows into {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
