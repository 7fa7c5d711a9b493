"""Result types the engine hands to its front ends (CLI and TUI).

Plain frozen dataclasses with no behaviour beyond formatting: the cluster engine produces them,
the CLI prints them line by line, the TUI turns them into messages. Keeping them here lets both
front ends depend on the shapes without importing the gateway.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """Outcome of one check."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skipped"
    """The check could not run (no registry answer, not applicable): never a pass, shown with its reason."""
    RUNNING = "running"

    @property
    def symbol(self) -> str:
        return {"pass": "✓", "fail": "✗", "warn": "!", "skipped": "-", "running": "…"}[self.value]


@dataclass(frozen=True)
class ClusterInfo:
    """Which cluster the wizard talks to."""

    context: str
    server: str
    version: str = ""
    demo: bool = False
    """True for the built-in simulated cluster (shown as such everywhere): its kubeconfig carries the
    demo's marker. Never inferred from what the server replies."""
    insecure: bool = False
    """TLS verification of the API server is off (``insecure-skip-tls-verify`` in the kubeconfig): warn."""
    demo_scenario: str = ""
    """The demo server's scenario, as its kubeconfig marker names it ("" when not the demo or not named)."""


@dataclass(frozen=True)
class Check:
    """One preflight or verification finding."""

    check: str
    """Machine-readable name: ``permission``, ``crd``, ``operator``, ``driver-image``, ``image-digest``, ``nvidia-smi``…"""
    status: Status
    message: str
    node: str = ""
    hint: str = ""
    """What the user can do about a failure."""
    detail: str = ""
    """Raw evidence (command output, image vs imageID lines)."""
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in (Status.PASS, Status.SKIP, Status.WARN)

    def line(self) -> str:
        """One human line: ``✓ nvidia-smi gpu-1: driver 580.126.09.1, 8 × NVIDIA H200``; a check that could
        not run says so: ``- SKIPPED image-digest gpu-1: …``."""
        where = f" {self.node}" if self.node else ""
        skipped = "SKIPPED " if self.status is Status.SKIP else ""
        return f"{self.status.symbol} {skipped}{self.check}{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data


@dataclass(frozen=True)
class LogLine:
    """A raw output line streamed during verification (nvidia-smi, image vs imageID)."""

    text: str
    node: str = ""
    stream: str = "stdout"


@dataclass
class CallStats:
    """What one client sent: requests (every attempt) and retries (attempts after a safe failure).

    The gateway and the registry client each keep one, so a fault report can say how many
    failures were absorbed by retrying rather than shown to the user.
    """

    requests: int = 0
    retries: int = 0
