"""The end of a CI run: says whether it passed and prints every failure of its JUnit XML in full (the main
suite's, and the real-cluster lane's ``junit-realcluster.xml`` beside it).

``python .ci/failures.py JUNIT_XML STATUS``: STATUS is the exit status of the test command. Exit 0
when it is 0 and the XML counts at least one test that ran; otherwise exit 1 after printing why: each
failing or erroring test with its whole message and traceback, "no tests ran" (pytest's exit 5), or
a run that ended before pytest wrote its XML. Standard library only: it runs before the venv exists.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def summary(junit: Path, status: int) -> tuple[bool, list[str]]:
    """``(passed, lines to print)`` for the XML at ``junit`` (with its siblings ``junit-*.xml``: the real-cluster
    lane's) and the command's exit status."""
    if not junit.is_file():
        return False, [f"ci: no JUnit XML at {junit}: the run ended before pytest finished (exit {status})"]
    roots = []
    for xml in [junit, *sorted(junit.parent.glob("junit-*.xml"))]:
        try:
            roots.append(ET.parse(xml).getroot())
        except ET.ParseError as exc:
            return False, [f"ci: the JUnit XML at {xml} is damaged ({exc}); exit {status}"]
    suites = [s for root in roots for s in ([root] if root.tag == "testsuite" else root.findall("testsuite"))]
    counts = {key: sum(int(s.get(key, "0")) for s in suites) for key in ("tests", "failures", "errors", "skipped")}
    lines: list[str] = []
    for case in (case for root in roots for case in root.iter("testcase")):
        for problem in [*case.findall("failure"), *case.findall("error")]:
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            lines += [
                "",
                f"===== {problem.tag.upper()}: {name}",
                (problem.text or problem.get("message") or "").rstrip(),
            ]
    ran = counts["tests"] - counts["skipped"]
    lines.append(
        f"ci: {counts['tests']} tests, {counts['failures']} failed, {counts['errors']} errors, "
        f"{counts['skipped']} skipped; exit {status}"
    )
    if ran <= 0:
        lines.append("ci: no tests ran (pytest exit 5 when none was collected): a CI run must run the suite")
    return status == 0 and ran > 0 and not (counts["failures"] or counts["errors"]), lines


def main(argv: list[str]) -> int:
    passed, lines = summary(Path(argv[0]), int(argv[1]))
    print("\n".join(lines), flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
