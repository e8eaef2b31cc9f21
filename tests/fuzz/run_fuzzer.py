#!/usr/bin/env python3
"""Runs one libFuzzer target for a bounded time, as CTest's fuzz.NAME.

First every regression input of --regressions runs once (each a crash a
fuzzer found earlier, fixed since), then the fuzzer runs for --seconds from
the seeds and the corpus an earlier run grew (--work/NAME/corpus). Any crash,
sanitizer report, leak, an input slower than 10 s or memory past 2 GiB fails
the run; the input that did it is kept in --work/NAME/crashes and the log's
end is printed. The run's figures (executions, coverage, corpus, peak memory)
go to --work/NAME/stats.json, which report.py reads into docs/RELIABILITY.md.
"""
import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

LIMITS = ["-timeout=10", "-rss_limit_mb=2048", "-malloc_limit_mb=2048", "-print_final_stats=1"]


def tail(text: str, lines: int = 80) -> str:
    return "\n".join(text.splitlines()[-lines:])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--fuzzer", required=True, type=Path)
    p.add_argument("--name", required=True)
    p.add_argument("--seeds", required=True, type=Path)
    p.add_argument("--regressions", required=True, type=Path)
    p.add_argument("--work", required=True, type=Path)
    p.add_argument("--seconds", type=int, default=60)
    args = p.parse_args()

    if not args.fuzzer.exists():
        print(f"{args.fuzzer} is missing: the fuzz build (build/fuzz) did not make it")
        return 1
    work = args.work / args.name
    corpus, crashes = work / "corpus", work / "crashes"
    corpus.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    env = {"ASAN_OPTIONS": "detect_leaks=1:allocator_may_return_null=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
    import os
    env = {**os.environ, **env}

    regressions = sorted(f for f in args.regressions.iterdir()
                         if f.is_file() and f.name != "README.md") if args.regressions.is_dir() else []
    if regressions:
        r = subprocess.run([str(args.fuzzer), *LIMITS, *map(str, regressions)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace")
        if r.returncode != 0:
            print(tail(r.stdout))
            print(f"FAIL: a regression input of {args.regressions} fails again")
            return 1
        print(f"{len(regressions)} regression inputs pass")

    start = time.time()
    r = subprocess.run([str(args.fuzzer), *LIMITS, f"-max_total_time={args.seconds}",
                        f"-artifact_prefix={crashes}/", str(corpus), str(args.seeds)],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    seconds = time.time() - start
    log = r.stdout
    (work / "fuzz.log").write_text(log)

    def stat(key: str) -> int:
        m = re.search(rf"stat::{key}:\s+(\d+)", log)
        return int(m.group(1)) if m else -1

    done = re.findall(r"#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\d+)/", log)
    stats = {
        "target": args.name,
        "date": time.strftime("%Y-%m-%d"),
        "seconds": round(seconds),
        "executions": stat("number_of_executed_units"),
        "peak_rss_mb": stat("peak_rss_mb"),
        "coverage": int(done[-1][1]) if done else -1,
        "features": int(done[-1][2]) if done else -1,
        "corpus": int(done[-1][3]) if done else -1,
        "exit": r.returncode,
        "regressions": len(regressions),
    }
    (work / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    print(json.dumps(stats))
    if r.returncode != 0:
        print(tail(log))
        found = sorted(crashes.iterdir())
        print(f"FAIL: fuzz_{args.name} found a failing input: {[str(f) for f in found]}")
        print(f"Fix it, then keep the input as a regression: cp INPUT {args.regressions}/")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
