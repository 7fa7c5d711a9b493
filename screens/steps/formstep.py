"""A step made of answer fields: edits go into the state, errors come back beside each field.

Validation is the plan's own (``wizard.engine.plan.Plan`` through ``WizardState.errors_for``), so the
message next to a field is the one the answers file and the CLI would give for the same value.
"""

from __future__ import annotations

from screens.steps.base import StepScreen
from screens.widgets.field import AnswerField


class FormStep(StepScreen):
    """A step whose answers live in :class:`AnswerField` widgets."""

    def on_answer_field_changed(self, event: AnswerField.Changed) -> None:
        event.stop()
        self.state.set(event.field.path, event.value or None)
        self.answers_changed()

    def answers_changed(self) -> None:
        """Re-validate: every field shows its own error, Next says what is left."""
        errors = self.state.errors_for(self.FIELDS)
        for field in self.query(AnswerField):
            field.show_error(errors.get(field.path, ""))
        self.refresh_nav()

    def field_errors(self) -> dict[str, str]:
        """Errors of this step's fields, by dotted path."""
        return self.state.errors_for(self.FIELDS)

    def blocker(self) -> str:
        errors = self.field_errors()
        if not errors:
            return ""
        field, message = next(iter(errors.items()))
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        text = f"{field}: {message}"
        return (text if len(text) <= 70 else text[:69] + "…") + more  # one line beside Next; the toast has it all

    def blocker_detail(self) -> str:
        """The first field's whole error for the refusal toast (the line beside Next is cut to fit)."""
        errors = self.field_errors()
        if not errors:
            return ""
        field, message = next(iter(errors.items()))
        more = f"\n(+{len(errors) - 1} more beside their fields)" if len(errors) > 1 else ""
        return f"{field}: {message}{more}"
