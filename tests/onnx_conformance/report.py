"""docs/CONFORMANCE.md from a run's results (run.py --report)."""

import collections

STATUS_TEXT = {
    "pass": "every output of every data set matches",
    "fail": "ran; an output's values, shape or dtype are wrong",
    "unsupported": "nanoc refuses the model (an operator, attribute, dtype or type it "
                   "does not support)",
    "error": "nanoc or nanort-run failed otherwise (internal error, crash, timeout), or "
             "nanort-run's .npy cannot carry a value (bfloat16, float8, 4-bit, strings)",
}


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f} %" if whole else "-"


def _counts(cases):
    c = collections.Counter(r["status"] for r in cases)
    return [c["pass"], c["fail"], c["unsupported"], c["error"]]


def write(path: str, run: dict, peer: dict | None, update_command: str) -> None:
    cases = run["cases"]
    n = len(cases)
    passed, failed, unsupported, errors = _counts(cases)
    peer_ok = peer is not None and peer.get("onnx_version") == run["onnx_version"] \
        and {r["name"] for r in peer["cases"]} == {r["name"] for r in cases}
    peer_pass = collections.Counter(r["op"] for r in peer["cases"] if r["status"] == "pass") \
        if peer_ok else None

    out = []
    out.append("# ONNX conformance\n")
    out.append(
        "Every case of ONNX's node tests (the test-case generators of the installed\n"
        "`onnx` package, `onnx.backend.test.case.node`: the same models, inputs and\n"
        "expected outputs as upstream's `onnx/backend/test/data/node`), compiled by\n"
        "`nanoc` for this machine's CPU, run by `nanort-run` and compared with the\n"
        "expected outputs at ONNX's backend tolerances (rtol 1e-3, atol 1e-7; NaN\n"
        "matches NaN; integers and bools exactly). `tests/onnx_conformance/run.py`\n"
        "writes this file; do not edit it. After building, regenerate it and the\n"
        "expectations file (`tests/onnx_conformance/expectations.txt`) with\n")
    out.append(f"```sh\n{update_command}\n```\n")
    out.append("`ctest -L conformance` runs the same cases and fails on any difference from\n"
               "the expectations file, which lists every case that does not pass with its\n"
               "reason.\n")
    out.append(f"onnx {run['onnx_version']}, {run['date']}.\n")

    out.append("## Totals\n")
    out.append("| status | cases | share | meaning |")
    out.append("|---|---:|---:|---|")
    for status, count in zip(("pass", "fail", "unsupported", "error"),
                             (passed, failed, unsupported, errors)):
        out.append(f"| {status} | {count} | {_pct(count, n)} | {STATUS_TEXT[status]} |")
    out.append(f"| **total** | **{n}** | | **{passed}/{n} passed ({_pct(passed, n)})** |")
    bound = [r for r in cases if r["status"] == "pass" and r.get("bound")]
    out.append("")
    out.append(f"Of the passing cases, {len(bound)} feed a shape-deciding value (a Reshape's "
               "shape, Slice's starts, TopK's k, ...) as a graph input; nanoc needs it constant, "
               "so the runner compiles those with the input bound to the data set's value "
               "(`nanoc --bind NAME=FILE.pb`), as a deployment that always feeds that value "
               "would. The other passing cases run exactly as ONNX's test gives them.")
    out.append("")
    if peer_ok:
        pp = sum(peer_pass.values())
        out.append(f"For comparison, ONNX Runtime {peer.get('peer_version', '')} (CPU execution "
                   f"provider, graph optimizations off) passes {pp}/{n} ({_pct(pp, n)}) of the "
                   f"same cases by the same rule: the last column below, from "
                   f"`run.py --build build --peer onnxruntime` run before the report.\n")
    else:
        out.append("Run `run.py --build build --peer onnxruntime` before the report to add "
                   "ONNX Runtime's pass counts by the same rule.\n")

    out.append("## Per operator\n")
    out.append("The operator a case tests: its node's, or for an `_expanded` case (the\n"
               "operator's function body, several nodes) the operator it expands.\n")
    by_op = collections.defaultdict(list)
    for r in cases:
        by_op[r["op"]].append(r)
    head = "| operator | cases | passed | failed | unsupported | error |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if peer_ok:
        head += " ONNX Runtime passed |"
        rule += "---:|"
    out.append(head)
    out.append(rule)
    # The default domain's operators first, then those of other domains (ai.onnx.ml.X).
    for op in sorted(by_op, key=lambda o: ("." in o, o.lower(), o)):
        rs = by_op[op]
        p, f, u, e = _counts(rs)
        row = f"| {op} | {len(rs)} | {p} | {f} | {u} | {e} |"
        if peer_ok:
            row += f" {peer_pass[op]} |"
        out.append(row)
    row = f"| **total** | **{n}** | **{passed}** | **{failed}** | **{unsupported}** | **{errors}** |"
    if peer_ok:
        row += f" **{sum(peer_pass.values())}** |"
    out.append(row)
    out.append("")

    bad = [r for r in cases if r["status"] in ("fail", "error")]
    if bad:
        out.append("## Failing and erroring cases\n")
        out.append("| case | status | reason |")
        out.append("|---|---|---|")
        for r in sorted(bad, key=lambda r: r["name"]):
            reason = r["reason"].replace("|", "\\|")
            out.append(f"| `{r['name']}` | {r['status']} | {reason} |")
        out.append("")

    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out))
