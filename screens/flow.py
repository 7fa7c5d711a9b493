"""The wizard's flow: the ordered steps, the rule deciding whether each applies, and Back/Next.

Design (subiquity-style): the wizard is an ordered list of :class:`Step` objects, each with an
``applies(state)`` hook; Back/Next move through the list and pass over steps that do not apply,
in both directions. Every step is its **own Screen**, swapped in with ``App.switch_screen``: the
cluster work a step starts (node watch, image checks, rollout, verification) runs in workers bound
to that screen, so Textual cancels it the moment the user leaves the step. State that must survive
Back lives in the App's :class:`~screens.state.WizardState`, never in the widgets, so a screen is
rebuilt from it each time (a ContentSwitcher would keep every step mounted and its workers alive).
The steps themselves (name, title, answers fields) are declared once in :mod:`wizard.engine.steps`;
this module attaches each one's screen, its ``applies`` rule and the state it owns (:class:`Owned`: what the
step learns and when that goes stale; :class:`~screens.state.WizardState` derives every reset from it). It is data only (no screen class is
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


ANY_ANSWER: tuple[str, ...] = ("",)
"""``Owned.answers`` for state that any changed answer makes stale (the results derived from the whole plan)."""


@dataclass(frozen=True)
class Owned:
    """One field of :class:`~screens.state.WizardState` a step owns (learns or produces), and what makes it stale:
    reset to its default then, so the state never holds what was learnt for other answers or another cluster."""

    field: str
    """The ``WizardState`` field."""
    answers: tuple[str, ...] = ()
    """Answers keys (dotted prefixes) whose change makes it stale (:data:`ANY_ANSWER`: any answer; none: no answer)."""
    kept_for: tuple[str, ...] = ()
    """Answers keys whose change leaves it as it is, though ``answers`` would cover them."""
    cluster: bool = False
    """Another cluster makes it stale (:meth:`~screens.state.WizardState.adopt_cluster`)."""
    run: bool = False
    """Starting over makes it stale (:meth:`~screens.state.WizardState.start_over`)."""

    def stale_on(self, dotted: str) -> bool:
        """A change of answer ``dotted`` makes this stale."""

        def under(keys: tuple[str, ...]) -> bool:
            return any(key == "" or dotted == key or dotted.startswith(key + ".") for key in keys)

        return under(self.answers) and not under(self.kept_for)


@dataclass(frozen=True)
class Step:
    """One step as the TUI sees it: its declaration (name, title, fields), its screen and whether it applies."""

    spec: StepSpec
    """Name, title and answers fields, from :data:`wizard.engine.steps.STEPS`."""
    screen: str
    """The screen class, ``module.Class``: :func:`screens.steps.make_screen` imports it when first shown."""
    applies: Callable[[WizardState], bool] = _always
    owns: tuple[Owned, ...] = ()
    """The shared state this step owns, and when it is stale (each field owned by one step: tests/test_tui_state.py)."""

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
    Step(
        steps.CONNECT,
        "screens.steps.connect.ConnectStep",
        owns=(Owned("preflight", cluster=True), Owned("live_findings", cluster=True)),
    ),
    Step(
        steps.NODES,
        "screens.steps.nodes.NodesStep",
        owns=(
            Owned("nodes", cluster=True),
            # another cluster's hosts say nothing of these
            Owned("host_drivers", cluster=True),
            Owned("host_states", cluster=True),
            Owned("host_checked", cluster=True),
            Owned("host_rest", cluster=True),
            Owned("host_folders", cluster=True),
        ),
    ),
    Step(
        steps.MODE,
        "screens.steps.mode.ModeStep",
        # what another cluster's pull registry holds says nothing of this one's
        owns=(Owned("precompiled_tags", cluster=True), Owned("precompiled_from", cluster=True)),
    ),
    Step(
        steps.DRIVER,
        "screens.steps.driver.DriverStep",
        _driver_applies,
        owns=(
            # the images (or their tags) may change with any answer but the paths' and the upgrade policy
            Owned("images", ANY_ANSWER, kept_for=(*steps.PATHS.fields, "driver.upgradePolicy"), cluster=True, run=True),
            # another registry's (or image's) tags
            Owned("registry_versions", ("mode", "driver.repository", "driver.source", "driver.image"), cluster=True),
        ),
    ),
    Step(
        steps.PATHS,
        "screens.steps.paths.PathsStep",
        owns=(
            Owned("path_checks", (*steps.PATHS.fields, "mode"), cluster=True),
            Owned("path_checks_from", (*steps.PATHS.fields, "mode"), cluster=True),
        ),
    ),
    Step(
        steps.PREVIEW,
        "screens.steps.preview.PreviewStep",
        owns=(
            Owned("rendered", ANY_ANSWER, cluster=True, run=True),
            Owned("references", ANY_ANSWER, run=True),
            Owned("prepared", ANY_ANSWER, cluster=True, run=True),
            # an override was given for the findings of the old answers
            Owned("overrides", ANY_ANSWER),
        ),
    ),
    Step(
        steps.APPLY,
        "screens.steps.apply.ApplyStep",
        owns=(
            Owned("applied", cluster=True, run=True),
            Owned("applied_for", run=True),
            Owned("helm_command", ANY_ANSWER),  # the values it carries are the old answers'
        ),
    ),
    Step(
        steps.VERIFY,
        "screens.steps.verify.VerifyStep",
        owns=(Owned("checks"), Owned("log_lines"), Owned("diagnosis")),
    ),
)

OWNED: tuple[Owned, ...] = tuple(owned for step in STEPS for owned in step.owns)
"""Every piece of state a step owns, in step order."""

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
