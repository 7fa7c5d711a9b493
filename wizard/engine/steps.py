"""The wizard's steps, declared once: each step's name, title and the answer fields it owns, in order.

A step's name is its identity everywhere: the resume file records it, a finding names the step that
fixes it, the TUI builds a screen for it and the doctor labels the Paths step's check with it. It is
written here and nowhere else (``tests/test_step_names.py`` fails on a step name quoted elsewhere in
``screens/`` or ``wizard/``): code says ``steps.DRIVER.name``. The engine side holds what the CLI may
need too (names, titles, fields); the TUI attaches each step's screen and its ``applies`` rule in
:data:`screens.flow.STEPS`, one entry per step here, in the same order (checked by the same test).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepSpec:
    """One step: its name (answers' resume point, findings, help), its title, and the answers keys it owns."""

    name: str
    title: str
    fields: tuple[str, ...] = ()
    """Answers keys (prefixes) the step edits: their errors are the step's, and a skipped step's never reach the plan."""
    kept_when_skipped: tuple[str, ...] = ()
    """Keys under ``fields`` that reach the plan even when the step is skipped, because the wizard sets them itself:
    where every image but the driver's comes from (a pre-installed plan skips Driver, yet its operands come from the
    cluster's private registry, adopted on Connect, as ``answers init`` writes it). What the person typed on a step
    they no longer see (a version, pull secrets) stays out."""


CONNECT = StepSpec("connect", "Connect")
NODES = StepSpec("nodes", "Nodes")
MODE = StepSpec("mode", "Mode", ("mode", "operator"))
DRIVER = StepSpec(
    "driver",
    "Driver & registry",
    ("driver",),
    ("driver.operandRegistry",),
)
PATHS = StepSpec("paths", "Paths", ("toolkit", "hostPaths"))
PREVIEW = StepSpec("preview", "Preview")
APPLY = StepSpec("apply", "Apply")
VERIFY = StepSpec("verify", "Verify")

STEPS: tuple[StepSpec, ...] = (CONNECT, NODES, MODE, DRIVER, PATHS, PREVIEW, APPLY, VERIFY)
"""Every step, in the order the wizard shows them."""

STEP_NAMES: tuple[str, ...] = tuple(step.name for step in STEPS)


def fields_of(name: str) -> tuple[str, ...]:
    """The answers keys step ``name`` owns (none for a step without answers, or an unknown name)."""
    return next((step.fields for step in STEPS if step.name == name), ())
