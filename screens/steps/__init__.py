"""The step screens, one module each; :func:`make_screen` imports a step's module only when it is first shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from screens.steps.base import StepScreen


def make_screen(name: str) -> StepScreen:
    """A fresh screen for the step called ``name`` (a name from :data:`screens.flow.STEPS`)."""
    if name == "connect":
        from screens.steps.connect import ConnectStep

        return ConnectStep()
    if name == "nodes":
        from screens.steps.nodes import NodesStep

        return NodesStep()
    if name == "mode":
        from screens.steps.mode import ModeStep

        return ModeStep()
    if name == "driver":
        from screens.steps.driver import DriverStep

        return DriverStep()
    if name == "paths":
        from screens.steps.paths import PathsStep

        return PathsStep()
    if name == "preview":
        from screens.steps.preview import PreviewStep

        return PreviewStep()
    if name == "apply":
        from screens.steps.apply import ApplyStep

        return ApplyStep()
    if name == "verify":
        from screens.steps.verify import VerifyStep

        return VerifyStep()
    raise KeyError(name)
