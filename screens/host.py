"""What steps and widgets say to the App, and the little they may ask of it: messages up, one narrow protocol.

Steps and widgets never import or cast :class:`~screens.app.WizardApp`. What they tell it is a message that
bubbles up to it (:class:`SaveProgress`, :class:`ShowHelp`, :class:`Finish`, :class:`Verified`, and the step
screen's own ``Navigate``); what they need an answer to at once (the shared state, a registry client, the
cluster's label, the demo cluster) they ask through :class:`WizardHost`, the protocol the App implements,
reached with :func:`host_of`. A leaf module: it imports no screen, widget or the App.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from textual.message import Message

if TYPE_CHECKING:
    from textual.app import App

    from screens.state import WizardState
    from wizard.cluster.facade import Cluster
    from wizard.engine.plan import Plan


class SaveProgress(Message):
    """Save the answers and the resume point at ``step`` (a failure becomes a dialog, never fatal)."""

    def __init__(self, step: str) -> None:
        self.step = step
        super().__init__()


class ShowHelp(Message):
    """F1: show ``text`` (Markdown) under ``title`` in the session's one help dialog."""

    def __init__(self, title: str, text: str) -> None:
        self.title = title
        self.text = text
        super().__init__()


class Finish(Message):
    """Next past the last step: the wizard closes with its verdict."""


class Verified(Message):
    """A verification ended: ``ok`` is what the wizard's exit status says (0 verified, 1 not)."""

    def __init__(self, ok: bool) -> None:
        self.ok = ok
        super().__init__()


@runtime_checkable
class WizardHost(Protocol):
    """What a step or widget may ask of the App and get an answer to at once (the App implements it)."""

    state: WizardState
    """Everything the steps share."""
    web: bool
    """Served to a browser: help and hints name the browser's keys."""
    backup_dir: Path
    """Where Apply writes the live objects it replaces."""
    report_dir: Path
    """Default folder for exported reports and manifests."""
    settled: asyncio.Event
    """Set once the answers are loaded and any resume question is answered."""
    pending_moves: list[int]
    """Back (-1) and Next (+1) keys pressed while a step was being left (kept at once: the next step replays
    them on its first frame, which a message could arrive after)."""

    def cluster_label(self) -> str:
        """``context · server`` of the connected cluster, for the title bar."""
        ...

    def queue_move(self, direction: int) -> None:
        """Keep a Back/Next key pressed while the screen is switching."""
        ...

    def take_pending_moves(self) -> list[int]:
        """The queued Back/Next keys, oldest first (the queue is emptied)."""
        ...

    def after_first_frame(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` once the first frame is displayed (at once, later on)."""
        ...

    def release_input(self) -> None:
        """Deliver the keys typed while the step before was left."""
        ...

    def open_registry(
        self, plan: Plan | None = None, hosts: list[str] | None = None
    ) -> AbstractAsyncContextManager[Any]:
        """A registry client for ``plan``'s images (or ``hosts``), None on a demo that simulates no registry."""
        ...

    async def start_demo(self, scenario: str) -> str:
        """Start (or restart) the built-in demo cluster; returns its kubeconfig."""
        ...

    async def stop_demo(self) -> None:
        """Stop the demo cluster if one runs."""
        ...

    @property
    def demo_cluster(self) -> Any:
        """The running demo cluster (None when none runs)."""
        ...

    async def replace_cluster(self, cluster: Cluster | None) -> None:
        """Adopt a newly connected cluster, closing the previous one."""
        ...

    async def offer_resume(self) -> None:
        """Once connected: offer to resume a saved run of this cluster, else start over."""
        ...

    def prefill_from_live(self) -> bool:
        """Start an upgrade from what runs: answers not yet given come from the live ClusterPolicy."""
        ...


def host_of(app: App[Any]) -> WizardHost:
    """``app`` as the :class:`WizardHost` it is (TypeError for an App that is none: a test's bare App)."""
    if not isinstance(app, WizardHost):
        raise TypeError(f"{type(app).__name__} is no gpu-wizard host")
    return app
