"""The wizard's flow: the ordered steps, the rule deciding whether each applies, and Back/Next.

Design (subiquity-style): the wizard is an ordered list of :class:`Step` objects, each with an
``applies(state)`` hook; Back/Next move through the list and pass over steps that do not apply,
in both directions. Every step is its **own Screen**, swapped in with ``App.switch_screen``: the
cluster work a step starts (node watch, image checks, rollout, verification) runs in workers bound
to that screen, so Textual cancels it the moment the user leaves the step. State that must survive
Back lives in the App's :class:`~screens.state.WizardState`, never in the widgets, so a screen is
rebuilt from it each time (a ContentSwitcher would keep every step mounted and its workers alive).
This module is data only (no screen class): widgets and screens read it without importing each other;
:mod:`screens.steps` builds the screen for a step, importing its module only when first shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from screens.state import WizardState


def _always(state: WizardState) -> bool:
    return True


def _driver_applies(state: WizardState) -> bool:
    """A host driver needs no image, version or registry: Driver & registry is skipped."""
    return state.get("mode", "precompiled") != "preinstalled"


def _verify_applies(state: WizardState) -> bool:
    """Verification follows an apply (or an install already there)."""
    return True


@dataclass(frozen=True)
class Step:
    """One step: its name (used in answers, resume and the palette), its title, and whether it applies."""

    name: str
    title: str
    applies: Callable[[WizardState], bool] = _always


STEPS: tuple[Step, ...] = (
    Step("connect", "Connect"),
    Step("nodes", "Nodes"),
    Step("mode", "Mode"),
    Step("driver", "Driver & registry", _driver_applies),
    Step("paths", "Paths"),
    Step("preview", "Preview"),
    Step("apply", "Apply"),
    Step("verify", "Verify", _verify_applies),
)

STEP_NAMES: tuple[str, ...] = tuple(s.name for s in STEPS)


def step_named(name: str) -> Step:
    """The step called ``name``; KeyError for an unknown name."""
    for step in STEPS:
        if step.name == name:
            return step
    raise KeyError(name)


def neighbour(name: str, direction: int, state: WizardState) -> Step | None:
    """The next (+1) or previous (-1) step that applies, or None past either end."""
    index = STEP_NAMES.index(name) + direction
    while 0 <= index < len(STEPS):
        if STEPS[index].applies(state):
            return STEPS[index]
        index += direction
    return None
