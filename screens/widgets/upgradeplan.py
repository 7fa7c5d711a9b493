"""The upgrade plan on the Apply step when a ClusterPolicy already runs: what the apply changes, node group by group.

The same plan ``gpu-wizard upgrade`` prints (``Cluster.prepare_upgrade`` → ``wizard.engine.upgrade.plan_upgrade``,
worded by ``wizard.cluster.facade.upgrade_report_lines``): per node group the running image → the new
image with both tags' registry status, the OS-tag changes of a new operator release, the
upgradePolicy in force, the GPU workload pods the upgrade evicts per node, the duration estimate,
and the copy commands for a new image that is not in the registry yet. Read in a worker bound to
this widget; a plan that cannot be read says why in place (a check that could not run is no pass).
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Button, Label, Static

from screens.host import host_of

#: Line prefixes of the plan text and the colour each is shown in.
_STYLES = (("note:", "$warning"), ("mirror:", "$warning"), ("Owner:", "$warning"))


def plan_markup(lines: list[str]) -> str:
    """The plan's text lines as markup: a missing image red, notes and copy commands in the warning colour."""
    out = []
    for line in lines:
        text = escape(line)
        style = next((colour for prefix, colour in _STYLES if line.startswith(prefix)), "")
        if "✗" in line:
            style = "$error"
        elif "✓" in line and line.startswith("    "):
            style = "$success"
        out.append(f"[{style}]{text}[/]" if style else text)
    return "\n".join(out)


class UpgradePlanView(Vertical):
    """A heading and the upgrade plan (hidden until a live policy is known)."""

    DEFAULT_CSS = """
    UpgradePlanView { height: auto; display: none; }
    UpgradePlanView > #upgrade-text { height: auto; }
    UpgradePlanView > #edit-policy { margin-top: 1; }
    """

    class PolicyChanged(Message):
        """The user saved a new upgradePolicy (answers form); the step re-renders and dry-runs the plan."""

        def __init__(self, policy: dict[str, Any]) -> None:
            self.policy = policy
            super().__init__()

    report: Any = None
    """The last ``UpgradeReport`` read (None before, or when it could not be read)."""
    unread: str = ""
    """Why the plan could not be read ("" while it is being read, or once it was)."""

    def compose(self) -> ComposeResult:
        yield Label("Upgrade plan (the policy running now → this plan)", classes="section")
        yield Static(
            "[$text-muted]… reading the running policy, the GPU workloads and the registry[/]", id="upgrade-text"
        )
        yield Button("Edit upgrade policy…", id="edit-policy", compact=True)

    def current_policy(self) -> dict[str, Any]:
        """The policy to edit: the plan's, else the live one's, else the chart's defaults (answers form)."""
        from wizard.engine.plan import UpgradePolicySpec, upgrade_policy_answers

        state = host_of(self.app).state
        planned = state.get("driver.upgradePolicy")
        if isinstance(planned, dict):
            return planned
        live = getattr(self.report, "live_policy", None) or {}
        spec = ((live.get("spec") or {}).get("driver") or {}).get("upgradePolicy")
        try:
            return UpgradePolicySpec.model_validate(upgrade_policy_answers(spec)).cr_form()
        except ValueError:  # a live value the model refuses: start from the defaults, the form says nothing false
            return UpgradePolicySpec().cr_form()

    @on(Button.Pressed, "#edit-policy")
    def _edit(self) -> None:
        from screens.widgets.policyform import UpgradePolicyDialog

        state = host_of(self.app).state

        def saved(policy: dict[str, Any] | None) -> None:
            if policy is not None:
                self.post_message(self.PolicyChanged(policy))

        self.app.push_screen(UpgradePolicyDialog(self.current_policy(), state.effective_answers()), saved)

    @property
    def text(self) -> Static:
        return self.query_one("#upgrade-text", Static)

    @work(exclusive=True, group="upgrade-plan", exit_on_error=False)
    async def load(self) -> None:
        """Read the plan from the cluster and the registry, then show it."""
        from screens.errors import describe_error

        self.display = True
        wizard = host_of(self.app)
        state = wizard.state
        target = state.plan()
        if target is None or state.cluster is None:
            self.text.update("[$warning]SKIPPED: no valid plan or no cluster; fix the earlier steps[/]")
            return
        try:
            from wizard.engine.registry_routes import registry_hosts

            cluster = state.cluster
            current = await cluster.live_plan()
            hosts = sorted(set(registry_hosts(current)) | set(registry_hosts(target)))
            async with wizard.open_registry(target, hosts=hosts) as registry:
                report = await cluster.prepare_upgrade(target, registry=registry, current=current)
            if registry is None:
                report.skipped_because = "the demo simulates no registry for these images"
        except Exception as exc:  # the plan is advice beside the apply: say why it is missing, do not stop the step
            _, message, hint = describe_error(exc)
            self.unread = message
            self.text.update(
                f"[$warning]SKIPPED: the upgrade plan could not be read: {escape(message)}[/]\n{escape(hint)}"
            )
            return
        from wizard.cluster.facade import upgrade_report_lines

        self.report = report
        lines = [line for line in upgrade_report_lines(report) if not line.startswith("Owner:")]  # said above
        self.text.update(plan_markup(lines))
