"""``--report-junit FILE`` and ``--report-ctrf FILE``: a command's checks as the files CI systems read.

``verify``, ``doctor`` and ``drift`` hand their checks here as a :class:`Suite` (one per cluster): one test case
per check, named ``CHECK NODE``, carrying its node, its verdict (pass, fail, warn, skipped, error), its hint and
its raw output. JUnit XML (what Jenkins, GitLab and most CI systems read) and CTRF JSON (the Common Test Report
Format, ``specVersion`` 1.0.0) are written from the same suites, each file through the one writer.

A verdict maps onto each format's statuses: a failure is a failure; a check that could not run is *skipped*
(never a pass); a warning is a failure where the command counts it as one (``doctor``: exit 1) and otherwise a
pass in JUnit and ``other`` in CTRF, its verdict kept (a JUnit property, CTRF's ``rawStatus``); a cluster that
could not be used is one test case in *error*. The command's exit code is the gate; the reports say why.

With several clusters (``--context A --context B``, :mod:`wizard.cli.fleet`) every cluster's suite is
collected and the files are written once, at the end.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from wizard.engine.results import Check

CTRF_SPEC_VERSION = "1.0.0"
"""The CTRF version the ``--report-ctrf`` file follows (the schema pinned under tests/schemas)."""

ERROR = "error"
"""A verdict of no check: the cluster could not be used (an unreachable API server, a bad kubeconfig)."""


@dataclass(frozen=True)
class Case:
    """One check's test case."""

    check: str
    node: str
    verdict: str
    """``pass``, ``fail``, ``warn``, ``skipped`` or :data:`ERROR`."""
    message: str
    hint: str = ""
    output: str = ""
    """The raw output behind the verdict (command output, image and imageID lines)."""
    subject: str = ""
    """What a check without a node is about (``ClusterPolicy/cluster-policy spec.driver.version``)."""

    @property
    def name(self) -> str:
        return " ".join(part for part in (self.check, self.node or self.subject) if part)


@dataclass
class Suite:
    """One command's checks on one cluster."""

    command: str
    cluster: str
    cases: list[Case] = field(default_factory=list)
    start: float = field(default_factory=time.time)
    stop: float = 0.0
    warn_fails: bool = False
    """A warning makes the command exit 1 (``doctor``, ``drift``): reported as a failure."""

    def failed(self, case: Case) -> bool:
        return case.verdict == "fail" or (case.verdict == "warn" and self.warn_fails)


_COLLECTED: contextvars.ContextVar[list[Suite] | None] = contextvars.ContextVar("gpu_wizard_reports", default=None)


def report_flags(parser: argparse.ArgumentParser) -> None:
    """``--report-junit FILE`` and ``--report-ctrf FILE``."""
    group = parser.add_argument_group("CI reports")
    group.add_argument(
        "--report-junit",
        metavar="FILE",
        help="also write the checks as JUnit XML (one test case per check: node, verdict, hint, raw output)",
    )
    group.add_argument(
        "--report-ctrf", metavar="FILE", help="also write the checks as CTRF JSON (Common Test Report Format 1.0.0)"
    )


def wanted(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "report_junit", None) or getattr(args, "report_ctrf", None))


def cases_from_checks(
    checks: Iterable[Check], output: Mapping[tuple[str, str], Sequence[str]] | None = None
) -> list[Case]:
    """One case per check; ``output`` holds the raw lines streamed for a (node, check), added to its detail."""
    cases = []
    for check in checks:
        lines = list((output or {}).get((check.node, check.check), ()))
        raw = "\n".join([*lines, check.detail] if check.detail else lines)
        subject = " ".join(str(check.data[key]) for key in ("object", "field") if check.data.get(key))
        cases.append(Case(check.check, check.node, check.status.value, check.message, check.hint, raw, subject))
    return cases


def collecting() -> contextvars.Token[list[Suite] | None]:
    """From now on (in this context and the tasks it starts) suites are kept for :func:`collected`."""
    return _COLLECTED.set([])


def collected(token: contextvars.Token[list[Suite] | None]) -> list[Suite]:
    suites = _COLLECTED.get() or []
    _COLLECTED.reset(token)
    return suites


def record(args: argparse.Namespace, suite: Suite) -> None:
    """A command's suite: kept while several clusters run, else written now to the files the flags name."""
    if not suite.stop:
        suite.stop = time.time()
    keep = _COLLECTED.get()
    if keep is not None:
        keep.append(suite)
        return
    write(args, [suite])


def write(args: argparse.Namespace, suites: Sequence[Suite]) -> None:
    """Write the report files the flags name (WriteError: one line, exit 2)."""
    if not wanted(args):
        return
    from wizard.atomic_write import write_private

    if args.report_junit:
        write_private(args.report_junit, junit_xml(suites), mode=0o644)
    if args.report_ctrf:
        write_private(args.report_ctrf, ctrf_json(suites), mode=0o644)


def _xml_text(text: str) -> str:
    """Text XML 1.0 can carry: control characters other than tab and newline escaped as ``\\xNN``."""
    return "".join(c if c in "\t\n\r" or (c >= " " and c not in "\ufffe\uffff") else f"\\x{ord(c):02x}" for c in text)


def junit_xml(suites: Sequence[Suite]) -> str:
    """JUnit XML: a ``<testsuites>`` with one ``<testsuite>`` per cluster, one ``<testcase>`` per check."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="gpu-wizard")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        counts = {
            "tests": len(suite.cases),
            "failures": sum(1 for c in suite.cases if suite.failed(c)),
            "errors": sum(1 for c in suite.cases if c.verdict == ERROR),
            "skipped": sum(1 for c in suite.cases if c.verdict == "skipped"),
        }
        for key, value in counts.items():
            totals[key] += value
        attributes = {
            "name": _xml_text(f"gpu-wizard {suite.command} {suite.cluster}"),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(suite.start)),
            "time": f"{max(0.0, suite.stop - suite.start):.3f}",
            **{key: str(value) for key, value in counts.items()},
        }
        node = ET.SubElement(root, "testsuite", attributes)
        for case in suite.cases:
            element = ET.SubElement(
                node,
                "testcase",
                name=_xml_text(case.name),
                classname=_xml_text(f"gpu-wizard.{suite.command}.{suite.cluster}"),
                time="0",
            )
            properties = ET.SubElement(element, "properties")
            for key, said in (("node", case.node), ("verdict", case.verdict), ("hint", case.hint)):
                ET.SubElement(properties, "property", name=key, value=_xml_text(said))
            text = _xml_text(case.message + (f"\nhint: {case.hint}" if case.hint else ""))
            if case.verdict == ERROR:
                ET.SubElement(element, "error", message=_xml_text(case.message), type=case.check).text = text
            elif suite.failed(case):
                ET.SubElement(element, "failure", message=_xml_text(case.message), type=case.verdict).text = text
            elif case.verdict == "skipped":
                ET.SubElement(element, "skipped", message=_xml_text(case.message))
            if case.output:
                ET.SubElement(element, "system-out").text = _xml_text(case.output)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


_CTRF_STATUS = {"pass": "passed", "fail": "failed", "skipped": "skipped", ERROR: "failed"}


def ctrf_json(suites: Sequence[Suite]) -> str:
    """CTRF JSON: one run, one test per check, its suite ``[gpu-wizard COMMAND, CLUSTER]``."""
    from wizard.cli.common import version

    tests: list[dict[str, Any]] = []
    for suite in suites:
        for case in suite.cases:
            status = "failed" if suite.failed(case) else _CTRF_STATUS.get(case.verdict, "other")
            test: dict[str, Any] = {
                "name": case.name,
                "status": status,
                "duration": 0,
                "suite": [f"gpu-wizard {suite.command}", suite.cluster],
                "message": case.message,
                "rawStatus": case.verdict,
                "extra": {"check": case.check, "node": case.node, "verdict": case.verdict, "hint": case.hint},
            }
            if case.hint:
                test["trace"] = case.hint
            if case.output:
                test["stdout"] = case.output.splitlines()
            tests.append(test)
    counts = {key: sum(1 for t in tests if t["status"] == key) for key in ("passed", "failed", "skipped", "pending")}
    start = min((s.start for s in suites), default=time.time())
    stop = max((s.stop for s in suites), default=start)
    doc = {
        "reportFormat": "CTRF",
        "specVersion": CTRF_SPEC_VERSION,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stop)),
        "generatedBy": "gpu-wizard",
        "results": {
            "tool": {"name": "gpu-wizard", "version": version()},
            "summary": {
                "tests": len(tests),
                **counts,
                "other": len(tests) - sum(counts.values()),
                "suites": len(suites),
                "start": int(start * 1000),
                "stop": int(stop * 1000),
                "duration": int(max(0.0, stop - start) * 1000),
            },
            "tests": tests,
            "extra": {"clusters": sorted({s.cluster for s in suites}), "commands": sorted({s.command for s in suites})},
        },
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def error_suite(command: str, cluster: str, message: str, hint: str = "") -> Suite:
    """A cluster that could not be used: one test case in error (never an empty, passing suite)."""
    return Suite(command, cluster, [Case("cluster", "", ERROR, message, hint)])
