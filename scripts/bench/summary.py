"""The summary table at the top of BENCHMARKS.md, and the marked blocks that
`make bench` rewrites.

One row per (scenario, target): the latest figure, whether it meets the
target, and the run it comes from. A run rewrites the rows of the scenarios
it measured; a row of a scenario it did not measure (a partial run, or a
figure from a run outside the default one, such as S6 at 50 M rows) keeps
its figure and its run, so the table always shows each target's latest
figure.
"""

SUMMARY = ("<!-- bench:summary:start -->", "<!-- bench:summary:end -->")
RESULTS = ("<!-- bench:results:start -->", "<!-- bench:results:end -->")
HEADER = ["| scenario | target | latest | met | run |", "|---|---|---|---|---|"]
MET = {True: "**met**", False: "**missed**", None: "no target"}


def block(text, markers):
    """The text between the markers, or None when the file has no such block."""
    start, end = markers
    if start not in text or end not in text:
        return None
    return text[text.index(start) + len(start): text.index(end)].strip("\n")


def replace_block(text, markers, body, heading):
    """text with the block between the markers replaced by body; a file without
    the block gets it appended under heading."""
    start, end = markers
    marked = f"{start}\n{body}\n{end}"
    if block(text, markers) is None:
        return f"{text.rstrip()}\n\n{heading}\n\n{marked}\n"
    return text[: text.index(start)] + marked + text[text.index(end) + len(end):]


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def old_rows(text):
    """The data rows of the summary block in text, as lists of cells."""
    body = block(text, SUMMARY) or ""
    return [cells(line) for line in body.splitlines()
            if line.startswith("| ") and line.strip() not in HEADER]


def render(old_text, measured, stamp):
    """The summary block's body: this run's rows (scenario, target, figure,
    met) stamped with the run, then the earlier rows of scenarios it did not
    measure."""
    rows = [f"| {s} | {t} | {m} | {MET[ok]} | {stamp} |" for s, t, m, ok in measured]
    ran = {s for s, _, _, _ in measured}
    kept = ["| " + " | ".join(c) + " |" for c in old_rows(old_text) if c[0] not in ran]
    return "\n".join(HEADER + rows + kept)
