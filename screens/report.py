"""The verification report, as Markdown (for people) and JSON (for machines), from the wizard state.

Written by the Verify step's Export button and the palette's "Open report". The content is what
the engine found (``wizard.engine.results.Check`` and ``LogLine``); this module only lays it out.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from screens.findings import plan_findings
from screens.state import WizardState, display_path

if TYPE_CHECKING:
    from textual.app import App


def report_data(state: WizardState) -> dict[str, Any]:
    """The report as JSON-able data."""
    info = state.info
    plan = state.plan()
    checks = [c.as_dict() for c in state.checks]
    return {
        "tool": "gpu-wizard",
        "cluster": {
            "context": info.context if info else "",
            "server": info.server if info else "",
            "version": info.version if info else "",
            "demo": bool(info and info.demo),
        },
        "plan": plan.answers_dict() if plan else state.answers,
        "backup": str(state.applied.backup_path) if state.applied is not None else "",
        "ok": bool(state.checks) and all(c.ok and c.status.value != "skipped" for c in state.checks),
        "skipped": [
            {"check": c.check, "node": c.node, "reason": str(c.data.get("reason") or c.message)}
            for c in state.checks
            if c.status.value == "skipped" and c.check != "summary"
        ],
        "findings": [f.as_dict() for f in plan_findings(state)],
        "checks": checks,
        "diagnosis": [c.as_dict() for c in state.diagnosis],
        "log": [{"node": line.node, "stream": line.stream, "text": line.text} for line in state.log_lines],
    }


def report_markdown(state: WizardState) -> str:
    """The report as Markdown: verdict, per-node table, cluster-wide checks, the diagnosis, raw log."""
    data = report_data(state)
    cluster = data["cluster"]
    plan = data["plan"]
    skipped = len(data["skipped"])
    verdict = "✓ verified" if data["ok"] else "✗ not verified"
    if skipped:
        verdict += f" ({skipped} checks SKIPPED: they could not run)"
    lines = [
        "# gpu-wizard verification report",
        "",
        f"**{verdict}** — context `{cluster['context']}`"
        + (" (built-in demo cluster, simulated)" if cluster["demo"] else f" at `{cluster['server']}`"),
        "",
        f"Mode **{plan.get('mode', '?')}**, driver `{(plan.get('driver') or {}).get('version', '-')}`, "
        f"operator `{(plan.get('operator') or {}).get('version', '?')}`.",
    ]
    if data["backup"]:
        lines += ["", f"Backup of the objects replaced: `{data['backup']}`"]
    if data["findings"]:
        lines += ["", "## Findings of the plan", ""]
        for finding in data["findings"]:
            kind = "blocking" if finding["blocking"] else "warning"
            lines.append(f"* {finding['message']} ({kind}; {finding['step']} step)")
            if finding["hint"]:
                lines.append(f"  * what to do: {finding['hint']}")
    by_node: dict[str, list[Any]] = {}
    cluster_wide: list[Any] = []
    for check in state.checks:
        (by_node.setdefault(check.node, []) if check.node else cluster_wide).append(check)
    if by_node:
        lines += ["", "## Nodes", "", "| node | check | result |", "|---|---|---|"]
        for node in sorted(by_node):
            for check in by_node[node]:
                word = "SKIPPED " if check.status.value == "skipped" else ""
                hint = f" — {_cell(check.hint)}" if check.hint and check.status.value != "pass" else ""
                lines.append(f"| {node} | {check.check} | {check.status.symbol} {word}{_cell(check.message)}{hint} |")
    if cluster_wide:
        lines += ["", "## Cluster", ""]
        lines += [
            f"* {c.line()}" + (f" — {c.hint}" if c.hint and c.status.value != "pass" else "") for c in cluster_wide
        ]
    if state.diagnosis:
        lines += ["", "## Diagnosis of the failing nodes", ""]
        for check in state.diagnosis:
            lines.append(f"* {check.line()}")
            findings = check.data.get("findings") or []
            if findings:
                lines.append(f"  * cause: {findings[0]['cause']}")
            if check.hint:
                lines.append(f"  * {'fix' if findings else 'what to do'}: {check.hint}")
            evidence = [str(line) for line in check.data.get("lines") or []]
            if evidence:
                lines += ["", "  ```", *[f"  {line}" for line in evidence], "  ```", ""]
    if state.log_lines:
        lines += ["", "## Raw output", "", "```"]
        lines += [f"[{line.node}] {line.text}" if line.node else line.text for line in state.log_lines]
        lines += ["```"]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(state: WizardState, markdown_path: Path) -> tuple[Path, Path]:
    """Write ``<name>.md`` and ``<name>.json`` side by side; returns both paths."""
    from wizard.atomic_write import write_private

    markdown_path = markdown_path.with_suffix(".md")
    json_path = markdown_path.with_suffix(".json")
    write_private(markdown_path, report_markdown(state))
    write_private(json_path, json.dumps(report_data(state), indent=2) + "\n")
    return markdown_path, json_path


def full_log_text(state: WizardState) -> str:
    """Every verification result and every raw output line (the on-screen log keeps only the last ones)."""
    lines = [check.line() for check in sorted(state.checks, key=lambda c: c.node)]
    if state.log_lines:
        lines += ["", "Raw output:"]
        lines += [f"[{line.node}] {line.text}" if line.node else line.text for line in state.log_lines]
    return "\n".join(lines) + "\n"


def save_full_log(app: App[Any]) -> None:
    """Write the whole verification log into the state folder (off the event loop) and say where."""
    import time

    from screens.host import host_of
    from wizard.atomic_write import write_private
    from wizard.paths import state_dir

    state = host_of(app).state
    if not state.checks:
        app.notify("No verification has run yet.", title="Log", severity="warning")
        return
    path = state_dir() / f"verify-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.log"

    async def write() -> None:
        try:
            await asyncio.to_thread(lambda: write_private(path, full_log_text(state)))
        except OSError as exc:
            from screens.dialogs import ErrorDialog

            app.push_screen(ErrorDialog("Could not write the log", str(exc), "check the state folder's permissions."))
            return
        app.notify(display_path(path), title="Full log written")

    app.run_worker(write(), group="save-log", exit_on_error=False)


def export_report(app: App[Any]) -> None:
    """Ask where, then write the report (palette "Open report" and the Verify step's Export)."""
    from screens.dialogs import ErrorDialog, PathDialog
    from screens.host import host_of

    host = host_of(app)
    state = host.state
    if not state.checks:
        app.notify("No verification has run yet: apply, then verify (step 8).", title="Report", severity="warning")
        return

    def chosen(path: str | None) -> None:
        if path:  # built and written in a thread: 5,000 nodes make a report of megabytes
            app.run_worker(write(Path(path)), group="report", exit_on_error=False)

    async def write(path: Path) -> None:
        try:
            md, js = await asyncio.to_thread(write_report, state, path)
        except OSError as exc:
            app.push_screen(ErrorDialog("Could not write the report", str(exc), "choose a folder you can write to."))
            return
        app.notify(f"{display_path(md)}\n{display_path(js)}", title="Report written")

    default = display_path(host.report_dir / "gpu-wizard-report.md")
    app.push_screen(PathDialog("Export the report (Markdown + JSON) to", default), chosen)
