#!/usr/bin/env python3
"""ONNX node conformance: every case of ONNX's node tests through nanoc and nanort.

After changing what nanoc supports, regenerate the expectations file and the
report with one command (from the repository root, after building):

    python3 tests/onnx_conformance/run.py --build build --update --report docs/CONFORMANCE.md

Other uses:

    run.py --build build                  run every case; fail on any difference
                                          from expectations.txt (CTest's test)
    run.py --build build -k '^test_conv'  only the cases whose name matches
    run.py --build build --last-run --report docs/CONFORMANCE.md
                                          the report from the last run's results
    run.py --build build --peer onnxruntime
                                          the same cases through ONNX Runtime (CPU),
                                          by the same rule; the report adds its column

The cases (model.onnx, inputs and expected outputs as .npy) are generated at
build time by generate.py into BUILD/tests/onnx_conformance/data from the
installed onnx package. For each case, `nanoc model.onnx --name NAME -o DIR`
compiles it, `nanort-run DIR/NAME.so --input NAME=FILE.npy ... --output-dir
OUT` runs each of its data sets, and compare.py compares every output with
the expected one (ONNX's backend rule: same dtype and shape, |got - want| <=
atol + rtol * |want| with the case's tolerances, NaN matching NaN; integers
and bools exactly). Each case ends in one status:

    pass         every output of every data set matches
    fail         it ran, and an output's values, shape or dtype are wrong
    unsupported  nanoc refused the model ('nanoc: error: ...': an operator, an
                 attribute, a dtype, a sequence or optional type it does not
                 support); the reason is nanoc's message
    error        anything else: nanoc's internal error, a crash (signal) or a
                 timeout of either tool, nanort-run failing, or a value that
                 nanort-run's .npy cannot carry (bfloat16, float8, strings...)

expectations.txt lists every case that does not pass, with its status and
reason. The run fails when a case not listed does not pass, a listed case
passes or changes status, or a listed case no longer exists: nothing is
skipped silently. `--update` rewrites the file from the run instead.

Every run writes BUILD/tests/onnx_conformance/results.json (each case's
status, full message, max |error|, seconds) and names any crash or timeout,
even of a listed case; the work folders of failing and
erroring cases stay under BUILD/tests/onnx_conformance/work/CASE.
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402
import expectations  # noqa: E402
import report  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from run_e2e import file_safe  # noqa: E402  (the file name nanort-run gives a tensor)
EXPECTATIONS = os.path.join(HERE, "expectations.txt")
UPDATE_COMMAND = ("python3 tests/onnx_conformance/run.py --build build --update "
                  "--report docs/CONFORMANCE.md")
REASON_CHARS = 150
DETAIL_CHARS = 2000


def c_identifier(name: str) -> str:
    """A C identifier for nanoc's --name, from a case name."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return ident if ident and not ident[0].isdigit() else "m_" + ident


class Paths:
    def __init__(self, args):
        self.build = os.path.abspath(args.build)
        self.suite = os.path.join(self.build, "tests", "onnx_conformance")
        self.data = os.path.abspath(args.data or os.path.join(self.suite, "data"))
        self.work = os.path.join(self.suite, "work")
        self.nanoc = os.path.abspath(args.nanoc or os.path.join(self.build, "compiler", "nanoc"))
        self.nanort_run = os.path.abspath(args.nanort_run
                                          or os.path.join(self.build, "tools", "nanort-run"))

    def results(self, peer=None) -> str:
        return os.path.join(self.suite, f"results-{peer}.json" if peer else "results.json")


# ---- messages ----

def one_line(message: str, strip_dirs=()) -> str:
    """A message as one short, machine-independent line: the tool's prefix,
    known folders and any other absolute path's folders removed, indented
    continuation lines (nanoc lists one unsupported node a line) joined with
    '; ', at most REASON_CHARS characters."""
    for d in sorted(strip_dirs, key=len, reverse=True):
        message = message.replace(d + os.sep, "").replace(d, ".")
    message = re.sub(r"(?<![\w.])/(?:[^\s:'\"/]+/)+", "", message)  # /abs/path/file -> file
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    if not lines:
        return "(no message)"
    text, more = lines[0], []
    for ln in lines[1:]:
        if ln.startswith(("nanoc:", "nanort-run:")):
            break  # a second message; the first one is the reason
        more.append(ln)
    # nanoc lists every unsupported node ("node 'N' op Op (opset 13)"): name
    # each operator once instead.
    nodes = [re.fullmatch(r"node '.*' op (\S+) \(opset ([^)]*)\)", ln) for ln in more
             if not ln.startswith("by op:")]
    if nodes and all(nodes):
        ops = sorted({m.group(1) for m in nodes})
        opsets = sorted({m.group(2) for m in nodes})
        more = [", ".join(ops) + f" (opset {', '.join(opsets)})"]
    for ln in more:
        text += ("; " if not text.endswith(":") else " ") + ln
    prefix = re.match(r"(nanoc|nanort-run): (internal )?error: ", text)
    if prefix:
        text = ("internal error: " if prefix.group(2) else "") + text[prefix.end():]
    text = re.sub(r"^model\.onnx: ", "", text)
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "..."


def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def run_tool(cmd, timeout):
    """(returncode or None on timeout, stdout, stderr)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return None, text(e.stdout), text(e.stderr)


def tool_failure(tool: str, rc, timeout: float):
    """The reason for a tool that timed out or died of a signal; None otherwise."""
    if rc is None:
        return f"{tool}: timed out after {timeout:g} s"
    if rc < 0:
        return f"{tool}: killed by {signal_name(rc)}"
    return None


# ---- one case through nanoc and nanort-run ----

def run_case(case: dict, paths: Paths, timeout: float) -> dict:
    start = time.monotonic()
    result = _run_case(case, paths, timeout)
    result["seconds"] = round(time.monotonic() - start, 2)
    return result


def _run_case(case: dict, paths: Paths, timeout: float) -> dict:
    name = case["name"]
    case_dir = os.path.join(paths.data, "cases", name)
    work = os.path.join(paths.work, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    strip = (work, case_dir, paths.data, paths.build, ROOT)
    result = {"name": name, "op": case["op"], "status": None, "reason": "", "detail": "",
              "max_abs_err": None, "crash": False}

    def finish(status, reason, detail=""):
        result.update(status=status, reason=reason, detail=detail[:DETAIL_CHARS])
        return result

    ident = c_identifier(name)
    if not case["data_sets"]:
        return finish("error", "the case has no data set")

    def compile_model(art, bound, ds):
        """nanoc with the inputs in `bound` compiled in from data set `ds`
        (--bind); returns (so path or None, finish() result or None, nanoc's
        refusal or None)."""
        cmd = [paths.nanoc, os.path.join(case_dir, case["model"]), "--name", ident, "-o", art]
        for v in ds["inputs"]:
            if v["name"] in bound:
                pb = os.path.join(work, f"bound_{len(cmd)}.pb")
                write_tensor_proto(os.path.join(case_dir, v["file"]), v, pb)
                cmd.append(f"--bind={v['name']}={pb}")
        rc, out, err = run_tool(cmd, timeout)
        if rc == 0:
            so = os.path.join(art, ident + ".so")
            if not os.path.isfile(so):
                return None, finish("error", f"nanoc exited 0 but wrote no {ident}.so"), None
            return so, None, None
        detail = f"$ {shlex.join(cmd)}\n{err}{out}"
        crash = tool_failure("nanoc", rc, timeout)
        if crash:
            result["crash"] = True
            return None, finish("error", crash, detail), None
        if err.startswith("nanoc: error: "):  # a CompileError: nanoc refuses the model
            return None, finish("unsupported", one_line(err, strip), detail), err
        return None, finish("error", f"nanoc: exit status {rc}: " + one_line(err or out, strip),
                            detail), None

    # Inputs that decide shapes (a Reshape's shape, Slice's starts, TopK's k)
    # are graph inputs in ONNX's test models; nanoc needs them constant. When
    # it says so, the case is compiled again with those inputs bound to the
    # data set's values (nanoc --bind), once per data set, and the result
    # records which inputs were bound.
    input_names = {v["name"] for v in case["data_sets"][0]["inputs"]}
    # Integer and bool inputs: what decides shapes when the value nanoc names
    # is computed from a graph input (an expanded function's shape arithmetic).
    index_inputs = {v["name"] for v in case["data_sets"][0]["inputs"]
                    if v.get("dtype", "").startswith(("int", "uint", "bool"))}
    bound = set()
    so = None
    for _ in range(8):
        so, failed, refusal = compile_model(os.path.join(work, "nanoc"), bound,
                                            case["data_sets"][0])
        named = set(RUN_TIME_INPUT.findall(refusal or "")) & input_names
        # "... is computed at run time (from input 'start' and input
        # 'limit')": the graph inputs a value comes from (Loop's trip count).
        if not so and not named and RUN_TIME_VALUE.search(refusal or ""):
            named = set(NAMED_INPUT.findall(refusal or "")) & input_names
        if not so and not named and RUN_TIME_VALUE.search(refusal or ""):
            named = index_inputs
        if so or not named or named <= bound:
            break
        bound |= named
    if not so:
        if result["status"] == "unsupported":
            shutil.rmtree(work, ignore_errors=True)
        return result
    result["bound"] = sorted(bound)

    for k, ds in enumerate(case["data_sets"]):
        at = f"data set {k}: " if len(case["data_sets"]) > 1 else ""
        for io in ("inputs", "outputs"):
            for v in ds[io]:
                if not v["npy"]:
                    return finish("error", f"{at}{io[:-1]} '{v['name']}' is a {v['why']}, "
                                  "which nanort-run's .npy cannot carry")
        if bound and k > 0:
            so, failed, _ = compile_model(os.path.join(work, f"nanoc_{k}"), bound, ds)
            if not so:
                return failed
        out_dir = os.path.join(work, f"outputs_{k}")
        cmd = [paths.nanort_run, so]
        for v in ds["inputs"]:
            if v["name"] in bound:
                continue
            # One argument, so that a name starting with '-' stays a name.
            cmd.append(f"--input={v['name']}={os.path.join(case_dir, v['file'])}")
        cmd += ["--output-dir", out_dir, "--repeat", "0"]
        rc, out, err = run_tool(cmd, timeout)
        detail = f"$ {shlex.join(cmd)}\n{err}{out}"
        if rc != 0:
            crash = tool_failure("nanort-run", rc, timeout)
            result["crash"] = crash is not None
            return finish("error", at + (crash or "nanort-run: " + one_line(err or out, strip)),
                          detail)
        problems, details = [], []
        for v in ds["outputs"]:
            path = os.path.join(out_dir, file_safe(v["name"]) + ".npy")
            if not os.path.isfile(path):
                written = sorted(f[:-4] for f in os.listdir(out_dir) if f.endswith(".npy"))
                return finish("fail", f"{at}no output '{v['name']}'; the compiled model's "
                              f"outputs: {', '.join(written) or 'none'}", detail)
            got = as_dtype(np.load(path, allow_pickle=False), v["dtype"])
            want = as_dtype(np.load(os.path.join(case_dir, v["file"]), allow_pickle=False),
                            v["dtype"])
            m = compare.compare_array(got, want, case["rtol"], case["atol"])
            if m:
                problems.append(f"output '{v['name']}': {m.summary}")
                details.append(f"output '{v['name']}': {m.detail}")
                if m.max_abs_err is not None:
                    result["max_abs_err"] = max(result["max_abs_err"] or 0.0, m.max_abs_err)
        if problems:
            return finish("fail", one_line(at + "; ".join(problems)),
                          at + "\n".join(details))
    shutil.rmtree(work, ignore_errors=True)
    return finish("pass", "")


# nanoc's refusal of an input it needs constant (onnx_mapping_util.cc and the
# mappings say "... input 'NAME' is computed at run time ...").
RUN_TIME_INPUT = re.compile(r"input '([^']+)' is computed at run time")
RUN_TIME_VALUE = re.compile(r"is computed at run time")
NAMED_INPUT = re.compile(r"input '([^']+)'")


def write_tensor_proto(npy_path: str, value: dict, pb_path: str):
    """A .npy input as the serialized onnx TensorProto that nanoc --bind reads."""
    from onnx import numpy_helper
    array = as_dtype(np.load(npy_path, allow_pickle=False), value["dtype"])
    with open(pb_path, "wb") as f:
        f.write(numpy_helper.from_array(array, value["name"]).SerializeToString())


def as_dtype(array, name: str):
    """bf16, float8 and the 4- and 2-bit types' arrays travel as raw bytes
    ('|V2', '|V1'): view them as the ml_dtypes type the manifest names."""
    if array.dtype.kind == "V":
        import ml_dtypes
        return array.view(getattr(ml_dtypes, name))
    return array


# ---- one case through ONNX Runtime (--peer onnxruntime) ----

def load_value(path: str, kind: str, dtype: str = ""):
    if path.endswith(".npy"):
        return as_dtype(np.load(path, allow_pickle=False), dtype)
    import onnx
    from onnx import numpy_helper
    proto = {"tensor": onnx.TensorProto, "sequence": onnx.SequenceProto,
             "optional": onnx.OptionalProto, "map": onnx.MapProto}[kind]()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return {"tensor": numpy_helper.to_array, "sequence": numpy_helper.to_list,
            "optional": numpy_helper.to_optional, "map": numpy_helper.to_dict}[kind](proto)


def run_case_onnxruntime(case: dict, data: str) -> dict:
    import onnxruntime as ort

    case_dir = os.path.join(data, "cases", case["name"])
    result = {"name": case["name"], "op": case["op"], "status": "pass", "reason": "",
              "detail": "", "max_abs_err": None}
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 4
    try:
        sess = ort.InferenceSession(os.path.join(case_dir, case["model"]), opts,
                                    providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - ONNX Runtime's refusals have no common type
        msg = str(e)
        status = "unsupported" if re.search(r"NOT_IMPLEMENTED|not implemented|No Op registered|"
                                            r"[Uu]nsupported", msg) else "error"
        result.update(status=status, reason=one_line(msg, (case_dir, data)), detail=msg)
        return result
    for k, ds in enumerate(case["data_sets"]):
        try:
            feeds = {v["name"]: load_value(os.path.join(case_dir, v["file"]), v["kind"], v.get("dtype", ""))
                     for v in ds["inputs"]}
            names = [v["name"] for v in ds["outputs"]]
            got = dict(zip(names, sess.run(names, feeds)))
        except Exception as e:  # noqa: BLE001
            result.update(status="error", reason=one_line(str(e), (case_dir, data)),
                          detail=str(e))
            return result
        for v in ds["outputs"]:
            want = load_value(os.path.join(case_dir, v["file"]), v["kind"], v.get("dtype", ""))
            m = compare.compare_value(got[v["name"]], want, case["rtol"], case["atol"])
            if m:
                result.update(status="fail", reason=f"output '{v['name']}': {m.summary}",
                              detail=m.detail)
                return result
    return result


# ---- the suite ----

def load_manifest(paths: Paths) -> dict:
    path = os.path.join(paths.data, "manifest.json")
    if not os.path.isfile(path):
        sys.exit(f"run.py: no {path}: build the target onnx_conformance_data first "
                 f"(cmake --build {paths.build} --target onnx_conformance_data)")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def run_suite(cases, paths: Paths, jobs: int, timeout: float, peer=None):
    """{case name: result}, running `jobs` cases at a time."""
    results = {}
    if peer:
        pool = concurrent.futures.ProcessPoolExecutor(jobs)
        submit = lambda c: pool.submit(run_case_onnxruntime, c, paths.data)  # noqa: E731
    else:
        # The work happens in nanoc and nanort-run, child processes: threads suffice.
        pool = concurrent.futures.ThreadPoolExecutor(jobs)
        submit = lambda c: pool.submit(run_case, c, paths, timeout)  # noqa: E731
    with pool:
        futures = {submit(c): c for c in cases}
        for fut in concurrent.futures.as_completed(futures):
            c = futures[fut]
            try:
                r = fut.result()
            except Exception as e:  # noqa: BLE001 - a bug of the runner or a dead worker
                r = {"name": c["name"], "op": c["op"], "status": "error",
                     "reason": one_line(f"runner: {type(e).__name__}: {e}"), "detail": repr(e),
                     "max_abs_err": None}
            results[c["name"]] = r
    return results


def totals_line(results: dict) -> str:
    n = len(results)
    counts = {s: sum(1 for r in results.values() if r["status"] == s)
              for s in expectations.STATUSES}
    pct = 100.0 * counts["pass"] / n if n else 0.0
    return (f"{counts['pass']}/{n} passed ({pct:.1f}%); fail {counts['fail']}, "
            f"unsupported {counts['unsupported']}, error {counts['error']}")


def print_differences(diff: dict, limit: int = 60) -> None:
    titles = {
        "regressions": "not passing, and not in expectations.txt",
        "newly_passing": "passing now, but listed in expectations.txt",
        "changed": "status differs from expectations.txt",
        "stale": "listed in expectations.txt, but no such case in this onnx",
    }
    for key, title in titles.items():
        rows = diff[key]
        if not rows:
            continue
        print(f"\n{title} ({len(rows)}):")
        for name, want, got, reason in rows[:limit]:
            if key == "stale":
                print(f"  {name}  (listed as {want})")
            elif key == "newly_passing":
                print(f"  {name}  (listed as {want})")
            else:
                print(f"  {name}  {got} (expected {want}): {reason}")
        if len(rows) > limit:
            print(f"  ... and {len(rows) - limit} more (results.json has them all)")


def expectations_header(manifest: dict, results: dict) -> str:
    return f"""\
# ONNX node conformance (tests/onnx_conformance/run.py): every case of the
# onnx package's node tests that does not pass through nanoc and nanort, with
# its status (fail, unsupported, error) and reason. A case not listed must
# pass; CTest's onnx_conformance test fails when one does not, or when a
# listed case passes or changes status. Written by --update only:
#
#   {UPDATE_COMMAND}
#
# onnx {manifest['onnx_version']}: {totals_line(results)}.
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="ONNX node conformance through nanoc and nanort-run.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"Regenerate expectations and report:\n  {UPDATE_COMMAND}")
    p.add_argument("--build", required=True, help="the CMake build folder")
    p.add_argument("--nanoc", help="nanoc (default: BUILD/compiler/nanoc)")
    p.add_argument("--nanort-run", dest="nanort_run",
                   help="nanort-run (default: BUILD/tools/nanort-run)")
    p.add_argument("--data", help="the generated cases (default: "
                   "BUILD/tests/onnx_conformance/data)")
    p.add_argument("-k", dest="pattern", help="only the cases whose name matches this regex")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                   help="cases run at a time (default: the number of CPUs)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds each nanoc or nanort-run call may take (default 120)")
    p.add_argument("--update", action="store_true",
                   help="rewrite expectations.txt from this run instead of checking it")
    p.add_argument("--expectations", default=EXPECTATIONS, help=argparse.SUPPRESS)
    p.add_argument("--report", metavar="FILE",
                   help="write the Markdown report (docs/CONFORMANCE.md) from the results")
    p.add_argument("--last-run", action="store_true",
                   help="run nothing: use the last run's results.json")
    p.add_argument("--peer", choices=["onnxruntime"],
                   help="run the cases through this peer instead, by the same rule")
    p.add_argument("-v", "--verbose", action="store_true", help="print every case's result")
    args = p.parse_args(argv)

    paths = Paths(args)
    manifest = load_manifest(paths)
    cases = manifest["cases"]
    if args.pattern:
        cases = [c for c in cases if re.search(args.pattern, c["name"])]
        if not cases:
            print(f"run.py: no case matches {args.pattern!r}", file=sys.stderr)
            return 1
    partial = len(cases) != len(manifest["cases"])
    if args.peer and (args.update or args.last_run):
        p.error("--peer runs the peer only: no --update or --last-run with it")

    results_path = paths.results(args.peer)
    if args.last_run:
        if not os.path.isfile(results_path):
            sys.exit(f"run.py: no {results_path}: run the suite first")
        with open(results_path, encoding="utf-8") as f:
            run = json.load(f)
        results = {r["name"]: r for r in run["cases"]}
        partial = run.get("partial", False)
        if args.pattern:
            results = {n: r for n, r in results.items() if re.search(args.pattern, n)}
    else:
        if not args.peer:
            for tool in (paths.nanoc, paths.nanort_run):
                if not os.access(tool, os.X_OK):
                    sys.exit(f"run.py: {tool} is missing: build nanoc and nanort-run first")
        start = time.monotonic()
        results = run_suite(cases, paths, max(1, args.jobs), args.timeout, args.peer)
        wall = time.monotonic() - start
        run = {"onnx_version": manifest["onnx_version"],
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
               "runner": args.peer or "nanort", "jobs": args.jobs, "wall_s": round(wall, 1),
               "partial": partial, "cases": [results[n] for n in sorted(results)]}
        if args.peer:
            import onnxruntime
            run["peer_version"] = onnxruntime.__version__
        with open(results_path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(run, f, indent=1)
            f.write("\n")
        os.replace(results_path + ".tmp", results_path)

    if args.report and partial:
        p.error("--report needs a run of every case: drop -k")
    who = f"ONNX Runtime {run.get('peer_version', '')} (CPU)" if args.peer else "nanort"
    if args.verbose:
        for n in sorted(results):
            r = results[n]
            print(f"{r['status']:<11}  {n}  {r['reason']}".rstrip())
    print(f"onnx {manifest['onnx_version']} node conformance, {who}: {totals_line(results)}"
          + (f" in {run['wall_s']:.0f} s with {run['jobs']} jobs" if "wall_s" in run else ""))
    if args.peer:
        return 0
    # Crashes and timeouts are bugs of nanoc or nanort, listed or not: say so every run.
    crashes = sorted(n for n, r in results.items() if r.get("crash"))
    if crashes:
        print(f"crashes and timeouts ({len(crashes)}):")
        for n in crashes:
            print(f"  {n}  {results[n]['reason']}")

    if args.report:
        peer_path = paths.results("onnxruntime")
        peer = None
        if os.path.isfile(peer_path):
            with open(peer_path, encoding="utf-8") as f:
                peer = json.load(f)
        report.write(args.report, run, peer, UPDATE_COMMAND)
        print(f"wrote {os.path.relpath(os.path.abspath(args.report))}")

    actual = {n: (r["status"], r["reason"]) for n, r in results.items()}
    expected = expectations.read(args.expectations)
    # Only the cases run are checked (or, with --update, rewritten).
    diff = expectations.differences(
        {n: e for n, e in expected.items() if n in actual} if partial else expected, actual)
    if args.update:
        if partial:  # keep the entries of the cases not run
            merged = {n: e for n, e in expected.items() if n not in actual}
        else:
            merged = {}
        merged.update({n: sr for n, sr in actual.items() if sr[0] != "pass"})
        every = {c["name"]: {"status": merged.get(c["name"], ("pass",))[0]}
                 for c in manifest["cases"]}
        expectations.write(args.expectations, merged, expectations_header(manifest, every))
        print(f"wrote {os.path.relpath(args.expectations)}: {len(merged)} cases not passing")
        if expected:
            print_differences(diff)
        return 0

    if not any(diff.values()):
        print("every case as expectations.txt says")
        return 0
    print_differences(diff)
    print(f"\nIf these changes are intended, accept them with\n  {UPDATE_COMMAND}\n"
          f"and commit expectations.txt and docs/CONFORMANCE.md. Each case's full message "
          f"is in {os.path.relpath(results_path)}.")
    return 1


if __name__ == "__main__":
    sys.exit(main())
