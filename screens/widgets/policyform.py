"""The upgradePolicy form: how the operator rolls the driver out, edited on the Apply step and checked by the plan model.

A modal dialog with the fields an admin tunes before an upgrade (autoUpgrade, maxParallelUpgrades,
maxUnavailable, drain and its timeout, the GPU pod deletion and job wait timeouts). Save validates the
whole plan with the new policy through :class:`wizard.engine.plan.Plan` (the rule the answers file and
the CLI flags use) and stays open on the first bad field, naming it and what is valid; it returns
the policy in answers form.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from screens.focusrow import MarksFocusedRow
from screens.widgets.field import MAX_FIELD_CHARS
from screens.widgets.toggles import Tick

#: input id -> (label, dotted upgradePolicy field)
NUMBERS: dict[str, tuple[str, str]] = {
    "policy-parallel": ("maxParallelUpgrades (0: all)", "maxParallelUpgrades"),
    "policy-unavailable": ("maxUnavailable (count or %)", "maxUnavailable"),
    "policy-drain-timeout": ("drain timeout, s (0: none)", "drain.timeoutSeconds"),
    "policy-deletion-timeout": ("GPU pod deletion timeout, s", "podDeletion.timeoutSeconds"),
    "policy-wait-timeout": ("wait for jobs, s (0: forever)", "waitForCompletion.timeoutSeconds"),
}
SWITCHES: dict[str, tuple[str, str]] = {
    "policy-auto": ("autoUpgrade: the operator rolls it out", "autoUpgrade"),
    "policy-drain": ("drain each node first (kubectl drain)", "drain.enable"),
}


def _get(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _put(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value


def _typed(field: str, text: str) -> Any:
    """An input's text as the model expects it: digits as an integer (maxUnavailable keeps ``25%``)."""
    text = text.strip()
    if text.isascii() and text.isdigit():
        return int(text)
    return text


def policy_errors(answers: dict[str, Any], policy: dict[str, Any]) -> list[tuple[str, str]]:
    """``(field, message)`` of every upgradePolicy problem when the plan takes ``policy`` (empty: valid)."""
    from pydantic import ValidationError

    from wizard.engine.answers import plan_errors
    from wizard.engine.plan import Plan

    candidate = copy.deepcopy(answers)
    candidate.setdefault("driver", {})["upgradePolicy"] = policy
    try:
        Plan.model_validate(candidate)
    except ValidationError as exc:
        prefix = "driver.upgradePolicy"
        return [(e.field, e.message) for e in plan_errors(exc) if e.field.startswith(prefix)]
    return []


class UpgradePolicyDialog(MarksFocusedRow, ModalScreen[dict[str, Any] | None]):
    """Edit ``driver.upgradePolicy``; dismissed with the policy (answers form) or None when cancelled."""

    DEFAULT_CSS = """
    UpgradePolicyDialog { align: center middle; background: $background 60%; }
    UpgradePolicyDialog > Vertical {
        width: 72; max-width: 100%; height: auto; max-height: 100%;
        border: thick $accent; background: $panel; padding: 0 1;
    }
    UpgradePolicyDialog .policy-row { height: 1; }
    UpgradePolicyDialog .policy-row > Label { width: 32; }
    UpgradePolicyDialog .policy-row > Input { width: 1fr; }
    UpgradePolicyDialog #policy-error { height: auto; color: $error; }
    UpgradePolicyDialog .dialog-buttons { height: 1; margin-top: 1; align-horizontal: right; }
    UpgradePolicyDialog .dialog-buttons > Button { margin-left: 2; min-width: 8; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, policy: dict[str, Any], answers: dict[str, Any]) -> None:
        super().__init__()
        self._policy = copy.deepcopy(policy)
        self._answers = answers

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("[b]Upgrade policy[/] (spec.driver.upgradePolicy)")
            for widget_id, (label, field) in SWITCHES.items():
                yield Tick(label, bool(_get(self._policy, field)), id=widget_id, compact=True)
            for widget_id, (label, field) in NUMBERS.items():
                with Horizontal(classes="policy-row"):
                    yield Label(label)
                    yield Input(str(_get(self._policy, field)), id=widget_id, compact=True, max_length=MAX_FIELD_CHARS)
            yield Static("", id="policy-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel", id="policy-cancel", compact=True)
                yield Button("Save", id="policy-save", variant="primary", compact=True)

    def on_mount(self) -> None:
        self.query_one("#policy-parallel", Input).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#policy-cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    @on(Button.Pressed, "#policy-save")
    def _save(self) -> None:
        policy = copy.deepcopy(self._policy)
        for widget_id, (_, field) in SWITCHES.items():
            _put(policy, field, self.query_one(f"#{widget_id}", Tick).value)
        for widget_id, (_, field) in NUMBERS.items():
            _put(policy, field, _typed(field, self.query_one(f"#{widget_id}", Input).value))
        errors = policy_errors(self._answers, policy)
        if errors:
            field, message = errors[0]
            self.query_one("#policy-error", Static).update(f"✗ {field.removeprefix('driver.')}: {message}")
            return
        self.dismiss(policy)
