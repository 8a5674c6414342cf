#!/usr/bin/env python3
"""Runs the shell examples of README.md and docs/*.md against a live hub.

`scripts/docs-check.sh` starts the hub and calls this runner; see docs/testing.md,
"Docs that run", for the rules. In short: every fenced block tagged `sh`
(unless its info string also says `norun`) runs, in document order, in one
bash per file. A comment line `# -> …` closes a step and states what the
commands above it (since the previous `# -> `) must give:

    # -> 202                 the HTTP status of the step's one curl request
    # -> 202 200             the statuses of its two requests, in order
    # -> 202 {"status":"accepted","message_type":"shop.order",…}
                             and the last response's JSON body has these
                             members; `…` elides members, `[…]` is any
                             value, and a string ending in `…` is a prefix
    # -> exit 1              the exit status of the step's last command
    # -> prints TEXT         the step's output (stdout and stderr) contains TEXT

Lines after a block's last `# -> ` must make no request and exit 0.
`http://127.0.0.1:8080` in a curl or edihub argument is rewritten to the
hub under test (DOCS_HUB), so the documents show the address of `make run`.

The first mismatch fails the run, naming the file and the line of the
expectation. `--mutate FILE:LINE` changes the documented status on that line
before running (used by the self-check that proves a change is caught).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

EXPECT = re.compile(r"^\s*#\s*->\s*(.*?)\s*$")
FENCE = re.compile(r"^\s*```(\S*)\s*(.*)$")
STATUSES = re.compile(r"^((?:\d{3}\s*)+)(.*)$")

PRELUDE = r"""
__dc_rewrite() {
    local a
    __dc_args=()
    for a in "$@"; do __dc_args+=("${a//http:\/\/127.0.0.1:8080/$DOCS_HUB}"); done
}
curl() {
    __dc_rewrite "$@"
    local f
    f=$(mktemp "$__DC_DIR/req.XXXXXX")
    printf '%s\n' "$f" >> "$__DC_LOG"
    command curl -D "$f.h" "${__dc_args[@]}" | tee "$f.b"
    return "${PIPESTATUS[0]}"
}
edihub() {
    __dc_rewrite "$@"
    command edihub "${__dc_args[@]}"
}
"""


@dataclass
class Step:
    """Commands up to one expectation (or the end of their block)."""

    file: str
    line: int  # line of the `# -> ` comment, or of the block's closing fence
    code: list[str] = field(default_factory=list)
    expect: str | None = None


class Mismatch(Exception):
    """An example did not do what its document says."""


def parse(path: Path, rel: str, mutate: int | None) -> list[Step]:
    steps: list[Step] = []
    block: list[tuple[int, str]] | None = None
    for no, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fence = FENCE.match(text)
        if block is None:
            if fence and fence.group(1) == "sh" and "norun" not in fence.group(2).split():
                block = []
            continue
        if text.strip() == "```":
            current = Step(rel, no)
            for line_no, line in block:
                m = EXPECT.match(line)
                if m:
                    current.line, current.expect = line_no, m.group(1)
                    if line_no == mutate:
                        current.expect = mutated(current.expect)
                    steps.append(current)
                    current = Step(rel, no)
                else:
                    current.code.append(line)
            if any(c.strip() and not c.strip().startswith("#") for c in current.code):
                steps.append(current)
            block = None
            continue
        block.append((no, text))
    if block is not None:
        raise Mismatch(f"{rel}: a ```sh block is not closed")
    return steps


def mutated(expect: str) -> str:
    m = STATUSES.match(expect)
    if not m:
        raise SystemExit(f"--mutate: `# -> {expect}` is not an HTTP status expectation")
    first = m.group(1).split()[0]
    other = "200" if first != "200" else "202"
    return expect.replace(first, other, 1)


def script(steps: list[Step], work: Path) -> str:
    out = [PRELUDE]
    for i, step in enumerate(steps):
        out.append(f"printf '@@step {i}\\n' >> \"$__DC_LOG\"")
        out.append("{ :")  # `:` keeps a step of comments only valid bash
        out.extend(step.code)
        out.append(f"}} </dev/null >\"{work}/out.{i}\" 2>&1")
        out.append(f"echo $? >\"{work}/rc.{i}\"")
    return "\n".join(out) + "\n"


def requests_by_step(log: Path) -> dict[int, list[str]]:
    by_step: dict[int, list[str]] = {}
    current = -1
    if not log.exists():
        return by_step
    for line in log.read_text().splitlines():
        if line.startswith("@@step "):
            current = int(line.split()[1])
            by_step[current] = []
        else:
            by_step.setdefault(current, []).append(line)
    return by_step


def status_of(req: str) -> str:
    try:
        head = Path(req + ".h").read_text(errors="replace")
    except FileNotFoundError:
        return "no response"
    codes = [ln.split()[1] for ln in head.splitlines() if ln.startswith("HTTP/") and len(ln.split()) > 1]
    return codes[-1] if codes else "no response"


def body_of(req: str) -> str:
    # Bytes, not read_text(): its newline translation would hide the CRLFs.
    text = Path(req + ".b").read_bytes().decode(errors="replace")
    while text.startswith("HTTP/"):  # `curl -i`: one header block per response (100 Continue too)
        text = text.split("\r\n\r\n", 1)[1] if "\r\n\r\n" in text else ""
    return text


def shape(text: str):
    """The JSON of a documented body, with its `…` elisions removed."""
    t = text.replace("[…]", '"…"')
    t = re.sub(r",\s*…\s*(?=[}\]])", "", t)
    t = re.sub(r"(?<=[{\[])\s*…\s*,?", "", t)
    return json.loads(t)


def matches(expected, actual) -> bool:
    if expected == "…":
        return True
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(
            matches(e, a) for e, a in zip(expected, actual)
        )
    if isinstance(expected, str) and expected.endswith("…"):
        return isinstance(actual, str) and actual.startswith(expected[:-1])
    return expected == actual


def check(step: Step, reqs: list[str], rc: int, output: str) -> None:
    where = f"{step.file}:{step.line}"
    shown = output.strip()[-2000:]
    if step.expect is None:
        if reqs:
            raise Mismatch(f"{where}: {len(reqs)} request(s) after the block's last `# -> ` line (document their status)")
        if rc != 0:
            raise Mismatch(f"{where}: exit status {rc} (lines without `# -> ` must succeed)\n{shown}")
        return
    exp = step.expect
    if exp.startswith("exit "):
        if str(rc) != exp[5:].strip():
            raise Mismatch(f"{where}: documented `# -> {exp}`, got exit {rc}\n{shown}")
        return
    if exp.startswith("prints "):
        if exp[7:].strip() not in output:
            raise Mismatch(f"{where}: documented `# -> {exp}`, the output was:\n{shown}")
        return
    m = STATUSES.match(exp)
    if not m:
        raise Mismatch(f"{where}: `# -> {exp}` is not `NNN [body]`, `exit N` or `prints TEXT`")
    want = m.group(1).split()
    got = [status_of(r) for r in reqs]
    if got != want:
        raise Mismatch(f"{where}: documented status {' '.join(want)}, got {' '.join(got) or 'no request'}\n{shown}")
    rest = m.group(2).strip()
    if rest:
        if not rest.startswith("{"):
            raise Mismatch(f"{where}: after the status, only a JSON body shape may follow")
        body = body_of(reqs[-1])
        try:
            actual = json.loads(body)
        except ValueError:
            raise Mismatch(f"{where}: the response body is not JSON:\n{body[:2000]}") from None
        if not matches(shape(rest), actual):
            raise Mismatch(f"{where}: documented body {rest}, got:\n{body[:2000]}")


def run_file(path: Path, rel: str, mutate: int | None) -> int:
    steps = parse(path, rel, mutate)
    if not steps:
        return 0
    with tempfile.TemporaryDirectory(prefix="docs-check-") as tmp:
        work = Path(tmp)
        log = work / "requests.log"
        env = dict(os.environ, __DC_DIR=str(work), __DC_LOG=str(log))
        proc = subprocess.run(
            ["bash", "-c", script(steps, work)],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        by_step = requests_by_step(log)
        for i, step in enumerate(steps):
            rc_file = work / f"rc.{i}"
            if not rc_file.exists():
                raise Mismatch(f"{step.file}:{step.line}: this step did not run (bash: {proc.stderr.strip()[-500:]})")
            output = (work / f"out.{i}").read_text(errors="replace")
            check(step, by_step.get(i, []), int(rc_file.read_text()), output)
    return len(steps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="documents (default: README.md and docs/*.md)")
    ap.add_argument("--mutate", metavar="FILE:LINE", help="change the documented status on this line first")
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    files = [Path(f) for f in args.files] or [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    mutate_file, mutate_line = None, None
    if args.mutate:
        mutate_file, line = args.mutate.rsplit(":", 1)
        mutate_line = int(line)
    if "DOCS_HUB" not in os.environ:
        print("docs-check: DOCS_HUB (the hub's base URL) is not set; run scripts/docs-check.sh", file=sys.stderr)
        return 2
    total = 0
    for path in files:
        rel = os.path.relpath(path.resolve(), root)
        try:
            n = run_file(path, rel, mutate_line if rel == mutate_file else None)
        except Mismatch as e:
            print(f"docs-check: FAILED at {e}", file=sys.stderr)
            return 1
        print(f"docs-check: {rel}: {n} step(s) as documented", file=sys.stderr)
        total += n
    print(f"docs-check: OK, {total} step(s) in {len(files)} file(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
