"""The fault matrix: every engine operation under every fault that makes sense for it, with what a correct engine does.

A *cell* is (operation, fault, transient or persistent). Transient faults fail the first few matching
requests (the demo server's fault ``budget``) and then serve normally: a safe call must be retried and
*survive*. Persistent faults never stop: the engine must *report* them clearly (a ``ClusterError`` or
``RegistryError`` with a one-line message, a failed ``Check``, an ``ApplyResult`` saying the cluster is
unchanged), never crash and never leave half an apply behind. Faults that no retry can fix (a request
slower than the timeout, a node whose exec is refused, a registry that is down or refuses the
credentials) are expected to be reported either way.

:func:`run_cell` runs one cell through the real engine facade (:class:`wizard.cluster.facade.Cluster`,
:class:`wizard.registry.client.RegistryClient`) against a demo cluster on loopback and records faults
injected (counted by the demo server), retries (counted by the clients), the outcome and, for apply,
the cluster's state afterwards. The operations themselves live in :mod:`benchmarks.fault_ops`.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tests.helpers.demo_thread import DemoClusterThread

Outcome = Literal["survived", "reported", "crashed"]

#: Client limit for every request in the matrix, and the latency of a "slow" response (beyond it). 0.8 s,
#: not less: with the whole suite on 2 cores an unfaulted request in the same process as the demo's
#: simulation ticks (now also running probe DaemonSets) sometimes took over 0.4 s, which read as a fault.
REQUEST_TIMEOUT = 0.8
SLOW_MS = 1000
#: Matching requests that fail before a transient fault clears (apply's write is tried twice: one fault;
#: one Retry-After wait proves it is honoured).
TRANSIENT_BUDGET = 2
BUDGET_BY_OPERATION = {"apply": 1, "watch": 1}
BUDGET_BY_FAULT = {"429": 1}
#: No cell may take longer than this (a hang is a crash).
CELL_LIMIT = 45.0

FAULTS: dict[str, str] = {
    "500": "HTTP 500 from the API server",
    "429": "HTTP 429 with Retry-After: 1",
    "drop": "connection dropped before the server acted",
    "drop-after": "connection dropped after the server acted",
    "slow": f"responses {SLOW_MS} ms late (timeout {REQUEST_TIMEOUT:g} s)",
    "watch-410": "watch expired (410 Gone) after 0.2 s",
    "exec-fail": "exec into one GPU node refused (kubelet unreachable)",
    "registry-down": "registry down (nothing listens)",
    "registry-401": "registry refuses the credentials (401)",
}

OPERATIONS: dict[str, tuple[str, ...]] = {
    "discover": ("500", "429", "drop", "slow"),
    "watch": ("watch-410", "500", "drop"),
    "preflight": ("500", "429", "drop", "slow"),
    "prepare": ("500", "429", "drop", "slow"),
    "apply": ("500", "429", "drop", "drop-after", "slow"),
    "verify": ("500", "429", "drop", "slow", "exec-fail", "registry-down", "registry-401"),
    "registry": ("500", "429", "drop", "slow", "registry-down", "registry-401"),
}

DESCRIPTIONS: dict[str, str] = {
    "discover": "`Cluster.discover()`: paged node list (faults on `/api/v1/nodes`)",
    "watch": "`Cluster.watch_nodes()`: a node label change must reach the watcher (faults on node GETs)",
    "preflight": "`Cluster.preflight(plan)`: access reviews, CRDs, operator (faults on every path)",
    "prepare": "`Cluster.prepare_apply()`: server-side dry-run and diff (faults on `/apis/nvidia.com`)",
    "apply": "`Cluster.apply()`: ClusterPolicy + NVIDIADriver, faults on the NVIDIADriver's server-side-apply PATCH",
    "verify": "`Cluster.verify()`: operator status, driver pods, nvidia-smi by exec, registry digests (every path)",
    "registry": "`RegistryClient.check_many()`: manifest HEADs (demo registry, dead port, htpasswd docker-registry)",
}

#: Faults a registry down or refusing is not "transient" for; a persistent watch failure only ends after minutes.
PERSISTENT_ONLY = frozenset({"registry-down", "registry-401"})
TRANSIENT_ONLY = frozenset({("watch", "500"), ("watch", "drop")})
#: Faults no retry can fix: the right answer is a clear report.
ALWAYS_REPORTED = frozenset({"slow", "registry-down", "registry-401"})


@dataclass(frozen=True)
class Cell:
    """One operation under one fault, transient (clears after a budget) or persistent."""

    operation: str
    fault: str
    transient: bool

    @property
    def id(self) -> str:
        """``discover-500-transient``."""
        return f"{self.operation}-{self.fault}-{'transient' if self.transient else 'persistent'}"

    @property
    def budget(self) -> int | None:
        """Faults injected before the fault clears (None: never clears)."""
        if not self.transient:
            return None
        return min(BUDGET_BY_OPERATION.get(self.operation, TRANSIENT_BUDGET), BUDGET_BY_FAULT.get(self.fault, 99))

    @property
    def expected(self) -> Outcome:
        """What a correct engine does: retry and survive, or report clearly."""
        if self.fault in ALWAYS_REPORTED:
            return "reported"
        if self.operation == "watch" or self.fault == "drop-after":
            return "survived"  # the watch re-lists; an apply that landed is read back as applied
        if self.operation == "apply" and self.fault == "500":
            return "reported"  # a failed write is not repeated blindly: rolled back, cluster unchanged
        return "survived" if self.transient else "reported"


def cells(operations: tuple[str, ...] | None = None) -> list[Cell]:
    """Every cell of the matrix (optionally only some operations), in table order."""
    found: list[Cell] = []
    for operation, faults in OPERATIONS.items():
        if operations and operation not in operations:
            continue
        for fault in faults:
            for transient in (True, False):
                if transient and fault in PERSISTENT_ONLY:
                    continue
                if not transient and (operation, fault) in TRANSIENT_ONLY:
                    continue
                found.append(Cell(operation, fault, transient))
    return found


@dataclass
class CellResult:
    """What happened in one cell."""

    cell: Cell
    outcome: Outcome
    detail: str
    """The message the user saw (reported), what came back (survived) or the traceback's last line (crashed)."""
    injected: int = 0
    retries: int = 0
    state: str = ""
    """apply/prepare: ``unchanged``, ``applied`` or ``HALF`` (the cluster afterwards)."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """The expected outcome, and never half an apply."""
        return self.outcome == self.cell.expected and self.state != "HALF"


@dataclass
class Lab:
    """What the cells run against.

    ``read_demo`` is one demo cluster with a running install (``existing-install``) shared by the
    read-only operations; ``fresh(scenario)`` starts a new one (apply cells need their own);
    ``auth_registry`` is a real docker-registry behind htpasswd (``tests.helpers.fixtures.registry.RegistryServer``
    with an image pushed), or None when docker-registry is not installed (those cells are skipped).
    """

    read_demo: DemoClusterThread
    fresh: Callable[[str], DemoClusterThread]
    workdir: Path
    auth_registry: Any = None
    auth_image: str = ""


@dataclass
class Trial:
    """One run of a cell: arms the fault on a demo cluster and collects what the operation observed."""

    cell: Cell
    demo: DemoClusterThread
    scope: dict[str, Any] = field(default_factory=dict)
    """``only`` / ``methods`` for the operation's requests."""
    retries: int = 0
    """Retries the clients counted (gateway and registry ``stats``)."""
    injected_outside: int = 0
    """Faults the demo server did not inject (registry down, registry 401), counted by the operation."""
    state: str = ""
    baseline_requests: int | None = None
    """Requests a fault-free run sent through the cell's filter (None: not measured)."""
    resent: int = 0
    """Requests the server received beyond the baseline: every retry, whoever made it (aiohttp re-sends too)."""
    _measuring: bool = False

    def measure(self, **scope: Any) -> None:
        """Count the requests of a fault-free run through the cell's filter (call before the baseline run)."""
        faults = self.demo.faults
        faults.clear()
        faults.only, faults.methods = list(scope.get("only") or []), list(scope.get("methods") or [])
        faults.matched = 0
        self._measuring = True

    def arm(self, **scope: Any) -> None:
        """Switch the cell's fault on (for requests matching ``only`` / ``methods``)."""
        faults = self.demo.faults
        if self._measuring:
            self.baseline_requests, self._measuring = faults.matched, False
        faults.clear()
        faults.injected.clear()
        faults.matched = 0
        faults.error_code, faults.retry_after_s = 500, 1
        faults.only = list(scope.get("only") or [])
        faults.methods = list(scope.get("methods") or [])
        faults.budget = self.cell.budget
        fault = self.cell.fault
        if fault in ("500", "429"):
            faults.error_code, faults.error_rate = int(fault), 1.0
        elif fault in ("drop", "drop-after"):
            faults.drop_rate, faults.drop_after = 1.0, fault == "drop-after"
        elif fault == "slow":
            faults.latency_ms = SLOW_MS
        elif fault == "watch-410":
            faults.watch_expiry_s = 0.2
        elif fault == "exec-fail":
            faults.exec_fail_nodes = list(scope.get("exec_nodes") or [])

    def disarm(self) -> int:
        """Switch the faults off; the number the demo server injected."""
        faults = self.demo.faults
        if self.baseline_requests is not None:
            self.resent = max(faults.matched - self.baseline_requests, 0)
        faults.clear()
        return faults.total


class Reported(Exception):
    """An operation's result said clearly that it failed (a failed check, an unchanged apply)."""


#: A message longer than this is not one a person reads (it quotes scripts or bodies; paths may be long).
CLEAR_LENGTH = 500


def clear_message(text: str) -> bool:
    """One line worded for a person: not empty, no traceback, not a wall of text."""
    return bool(text.strip()) and "Traceback" not in text and "\n" not in text.strip() and len(text) <= CLEAR_LENGTH


async def run_cell(lab: Lab, cell: Cell) -> CellResult:
    """Run one cell and classify what happened."""
    from benchmarks import fault_ops
    from wizard.cluster.errors import ClusterError
    from wizard.registry.client import RegistryError

    operation: Callable[[Lab, Trial], Awaitable[str]] = getattr(fault_ops, f"op_{cell.operation}")
    trial = Trial(cell, lab.read_demo)
    started = time.monotonic()
    outcome: Outcome
    try:
        detail = await asyncio.wait_for(operation(lab, trial), CELL_LIMIT)
        outcome = "survived"
    except (Reported, ClusterError, RegistryError) as exc:
        detail = str(getattr(exc, "message", "") or exc)
        outcome = "reported" if clear_message(detail) else "crashed"
    except TimeoutError:
        detail, outcome = f"no result within {CELL_LIMIT:g} s (hung)", "crashed"
    except Exception as exc:  # anything else is a crash the user would have seen as a traceback
        detail, outcome = traceback.format_exception_only(exc)[-1].strip(), "crashed"
    injected = trial.disarm() + trial.injected_outside
    return CellResult(
        cell,
        outcome,
        " ".join(detail.split()),
        injected=injected,
        retries=max(trial.retries, trial.resent),
        state=trial.state,
        seconds=time.monotonic() - started,
    )
