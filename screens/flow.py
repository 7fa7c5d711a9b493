"""The wizard's flow: the ordered steps, the rule deciding whether each applies, and Back/Next.

Design (subiquity-style): the wizard is an ordered list of :class:`Step` objects, each with an
``applies(state)`` hook; Back/Next move through the list and pass over steps that do not apply,
in both directions. Every step is its **own Screen**, swapped in with ``App.switch_screen``: the
cluster work a step starts (node watch, image checks, rollout, verification) runs in workers bound
to that screen, so Textual cancels it the moment the user leaves the step. State that must survive
Back lives in the App's :class:`~screens.state.WizardState`, never in the widgets, so a screen is
rebuilt from it each time (a ContentSwitcher would keep every step mounted and its workers alive).
The steps themselves (name, title, answers fields) are declared once in :mod:`wizard.engine.steps`;
this module attaches each one's screen and ``applies`` rule. It is data only (no screen class is
imported): widgets and screens read it without importing each other; :func:`screens.steps.make_screen`
builds the screen for a step, importing its module only when first shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.engine import steps
from wizard.engine.steps import StepSpec

if TYPE_CHECKING:
    from screens.state import WizardState


def _always(state: WizardState) -> bool:
    return True


def _driver_applies(state: WizardState) -> bool:
    """A host driver needs no image, version or registry: Driver & registry is skipped."""
    return state.get("mode", "precompiled") != "preinstalled"


@dataclass(frozen=True)
class Step:
    """One step as the TUI sees it: its declaration (name, title, fields), its screen and whether it applies."""

    spec: StepSpec
    """Name, title and answers fields, from :data:`wizard.engine.steps.STEPS`."""
    screen: str
    """The screen class, ``module.Class``: :func:`screens.steps.make_screen` imports it when first shown."""
    applies: Callable[[WizardState], bool] = _always

    @property
    def name(self) -> str:
        """Used in answers, resume and the palette."""
        return self.spec.name

    @property
    def title(self) -> str:
        return self.spec.title

    @property
    def fields(self) -> tuple[str, ...]:
        """Answers keys the step owns: a step is complete when none of them has an error."""
        return self.spec.fields


# One entry per step of wizard.engine.steps.STEPS, in its order (tests/test_step_names.py checks both).
# Verify always applies: it checks what the cluster runs, whether this run applied the plan, an
# earlier one did, or nobody has yet (then it says the plan is not applied).
STEPS: tuple[Step, ...] = (
    Step(steps.CONNECT, "screens.steps.connect.ConnectStep"),
    Step(steps.NODES, "screens.steps.nodes.NodesStep"),
    Step(steps.MODE, "screens.steps.mode.ModeStep"),
    Step(steps.DRIVER, "screens.steps.driver.DriverStep", _driver_applies),
    Step(steps.PATHS, "screens.steps.paths.PathsStep"),
    Step(steps.PREVIEW, "screens.steps.preview.PreviewStep"),
    Step(steps.APPLY, "screens.steps.apply.ApplyStep"),
    Step(steps.VERIFY, "screens.steps.verify.VerifyStep"),
)

STEP_NAMES: tuple[str, ...] = tuple(s.name for s in STEPS)


def step_named(name: str) -> Step:
    """The step called ``name``; KeyError for an unknown name."""
    for step in STEPS:
        if step.name == name:
            return step
    raise KeyError(name)


def neighbour(step: str, direction: int, state: WizardState) -> Step | None:
    """The next (+1) or previous (-1) step that applies, or None past either end."""
    index = STEP_NAMES.index(step) + direction
    while 0 <= index < len(STEPS):
        if STEPS[index].applies(state):
            return STEPS[index]
        index += direction
    return None
