"""The step screens, one module each; :func:`make_screen` imports a step's module only when it is first shown."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from screens.flow import step_named

if TYPE_CHECKING:
    from screens.steps.base import StepScreen


def make_screen(step: str) -> StepScreen:
    """A fresh screen for the step called ``step``: the class :data:`screens.flow.STEPS` names for it."""
    module, _, cls = step_named(step).screen.rpartition(".")
    screen: StepScreen = getattr(importlib.import_module(module), cls)()
    return screen
