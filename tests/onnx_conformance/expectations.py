"""The expectations file: every conformance case known not to pass.

One line per case, sorted by name:

    CASE  STATUS  REASON

STATUS is fail, unsupported or error (run.py's docstring says what each
means); a case not listed must pass. Lines starting with '#' are comments.
The file is written by `run.py --update` only, and is the same for the same
tree on any machine: reasons are the first line of a message, without paths,
temporary names or numbers that depend on the CPU.
"""

import os

STATUSES = ("pass", "fail", "unsupported", "error")
NAME_WIDTH = 60  # most case names fit; longer ones push their line's columns right
STATUS_WIDTH = 11


def read(path: str) -> dict:
    """{case: (status, reason)} from the file at `path` (empty when it does not exist)."""
    entries = {}
    if not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split(None, 2)
            if len(fields) < 2 or fields[1] not in STATUSES[1:]:
                raise ValueError(f"{path}:{n}: not 'CASE STATUS REASON' with STATUS one of "
                                 f"{', '.join(STATUSES[1:])}: {line!r}")
            if fields[0] in entries:
                raise ValueError(f"{path}:{n}: case {fields[0]} is listed twice")
            entries[fields[0]] = (fields[1], fields[2] if len(fields) > 2 else "")
    return entries


def write(path: str, entries: dict, header: str) -> None:
    """Writes {case: (status, reason)} for the non-passing cases, after `header` (comment lines)."""
    lines = [header.rstrip("\n") + "\n"]
    for name in sorted(entries):
        status, reason = entries[name]
        lines.append(f"{name:<{NAME_WIDTH}}  {status:<{STATUS_WIDTH}}  {reason}".rstrip() + "\n")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(lines)
    os.replace(tmp, path)


def differences(expected: dict, results: dict) -> dict:
    """How `results` ({case: (status, reason)}, every case run) differ from `expected`.

    Returns lists of (case, expected status, actual status, reason):
      regressions     not listed (so expected to pass), and did not pass
      newly_passing   listed, and passed
      changed         listed with one status, got another that is not pass
      stale           listed, but no such case was run (only meaningful for a full run)
    Reasons that differ under the same status are not differences.
    """
    out = {"regressions": [], "newly_passing": [], "changed": [], "stale": []}
    for name in sorted(results):
        status, reason = results[name]
        want = expected.get(name, ("pass", ""))[0]
        if status == want:
            continue
        key = ("regressions" if want == "pass" else
               "newly_passing" if status == "pass" else "changed")
        out[key].append((name, want, status, reason))
    for name in sorted(set(expected) - set(results)):
        out["stale"].append((name, expected[name][0], None, expected[name][1]))
    return out
