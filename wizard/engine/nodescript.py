"""One exec per node: the node's check commands as a single ``sh -c`` script, and reading their findings.

Every exec costs a websocket (and a TLS handshake) on the client, the API server and the kubelet,
so a node's commands run as one script: each step's output (stderr folded in) is followed by a
marker line carrying its exit status, ``@@gpu-wizard:<nonce>:<status>``. :class:`StepSplitter` cuts
the output back into steps; the ``*_finding`` functions turn a step into a check result. The nonce
is random per process: a file or program output on the node that prints a marker-like line cannot
end a step early or forge its exit status. Arguments are quoted with ``shlex.join``, so a value
(a path from the answers) stays one argument of one command.
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wizard.engine.results import Status

MARK = f"@@gpu-wizard:{secrets.token_hex(8)}:"


@dataclass(frozen=True)
class Step:
    """One command of a node's script."""

    check: str
    """The check it feeds (``nvidia-smi``, ``toolkit-path``…)."""
    argv: tuple[str, ...]
    host: bool = False
    """Run on the host: prefixed with ``chroot <host root>``."""
    stream: bool = False
    """Its output lines are streamed to the front end as they arrive."""


@dataclass(frozen=True)
class StepResult:
    """What one step printed (stdout and stderr together) and its exit status (None: it never finished)."""

    output: str
    exit_code: int | None


def script(steps: Sequence[Step], host_root: str) -> str:
    """The ``sh -c`` text running ``steps`` in order, each followed by its status marker."""
    parts = []
    for step in steps:
        argv = ("chroot", host_root, *step.argv) if step.host else step.argv
        parts.append(f"{shlex.join(argv)} 2>&1; echo {MARK}$?")
    return "; ".join(parts)


class StepSplitter:
    """Feeds streamed stdout lines to the right step; ``on_lines(stream, lines)`` gets the lines of streaming
    steps (and any other stream's), a batch at a time, in order."""

    def __init__(self, steps: Sequence[Step], on_lines: Callable[[str, list[str]], None]) -> None:
        self.steps = steps
        self.on_lines = on_lines
        self.outputs: list[list[str]] = [[] for _ in steps]
        self.codes: list[int | None] = [None] * len(steps)
        self.index = 0

    def feed(self, stream: str, line: str) -> None:
        """One line of the exec's output."""
        self.feed_lines(stream, [line])

    def feed_lines(self, stream: str, lines: list[str]) -> None:
        """Lines of the exec's output, in order."""
        if stream != "stdout" or self.index >= len(self.steps):
            self.on_lines(stream, lines)
            return
        shown: list[str] = []
        steps, count = self.steps, len(self.steps)
        for line in lines:
            if self.index >= count:
                shown.append(line)
            elif line.startswith(MARK):
                code = line[len(MARK) :].strip()
                self.codes[self.index] = int(code) if code.lstrip("-").isdigit() else None
                self.index += 1
            else:
                self.outputs[self.index].append(line)
                if steps[self.index].stream:
                    shown.append(line)
        if shown:
            self.on_lines(stream, shown)

    def results(self) -> list[StepResult]:
        """Every step's result (steps after an aborted one have no exit status)."""
        return [StepResult("\n".join(out), code) for out, code in zip(self.outputs, self.codes, strict=True)]


Finding = tuple[Status, str, str]
"""(status, message, hint) of one check."""


def mount_finding(result: StepResult, path: str, what: str, *, writable: bool) -> Finding:
    """``findmnt -n -o TARGET,OPTIONS -T path``: noexec (and, where it must be writable, read-only) fails."""
    fields = result.output.split()
    if result.exit_code != 0 or len(fields) < 2:
        return Status.WARN, f"findmnt -T {path} gave no answer (exit {result.exit_code}): {result.output[:120]}", ""
    target, options = fields[0], fields[-1].split(",")
    if "noexec" in options:
        hint = f"move {what} to a path on an exec mount (e.g. /opt/nvidia), or remount {target} with exec"
        if what == "the driver install directory":  # the same advice as the Paths step's check gives
            hint = (
                f"remount {target} with exec on the GPU nodes (the driver container always uses /run/nvidia/driver; "
                "driverInstallDir does not move it), or use a pre-installed host driver"
            )
        return Status.FAIL, f"{path} is on {target}, mounted noexec: binaries there cannot run", hint
    if writable and options[0] == "ro":
        hint = "set toolkit.installDir to a writable path (SLE Micro: /run/nvidia/toolkit-install)"
        return Status.FAIL, f"{path} is on {target}, mounted read-only: the toolkit cannot install there", hint
    shown = ",".join(o for o in options if o in ("rw", "ro", "nosuid", "nodev"))
    return Status.PASS, f"{path} on {target} ({shown or 'exec'})", ""


def drop_in_finding(result: StepResult, drop_in: str, toolkit_dir: str) -> Finding:
    """``grep BinaryName <drop-in>``: every runtime binary must live under the live installDir."""
    values = [
        ln.split("=", 1)[1].strip().strip("\"'")
        for ln in result.output.splitlines()
        if "BinaryName" in ln and "=" in ln
    ]
    prefix = f"{toolkit_dir}/toolkit/"
    if result.exit_code != 0 or not values:
        hint = "the container toolkit has not configured containerd on this node yet (is its pod ready?)"
        return Status.FAIL, f"no BinaryName in {drop_in}", hint
    wrong = [v for v in values if not v.startswith(prefix)]
    if wrong:
        hint = "a stale drop-in from an earlier install: restart the toolkit pod on this node"
        return Status.FAIL, f"BinaryName {wrong[0]} is not under the live installDir {toolkit_dir}", hint
    return Status.PASS, f"BinaryName {values[0]}", ""
