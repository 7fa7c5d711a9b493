"""The Apply step's words: what changes, the confirmation before anything is sent, the advice after a failed rollout.

The confirmation must fit an 80×24 terminal without scrolling, so the lines a user must weigh come
first and each is one short line: who reverts the change (a Helm release), which GPU workloads the
upgrade evicts, what the plan's findings warn about; then what is sent and where the backup goes.
The page behind the dialog keeps every line in full.

The advice after a failed rollout comes from the diagnosis (:meth:`wizard.cluster.facade.Cluster.diagnose`:
the failing nodes' logs and events matched against the known failures), so it names the cause and its
fix; a rollback is offered only when this visit's apply changed something (undoing a no-op restores the
same objects).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wizard.engine import steps

#: Lines the confirmation's body may fill: its dialog shows 15 rows of body at 80×24, less the blank lines the
#: Markdown puts after the first paragraph and at the end. Warnings are named while they fit, the rest counted.
CONFIRM_LINES = 12
#: Columns of text in the dialog's body at 80×24 (72 wide, less border, padding and the bullet).
CONFIRM_COLUMNS = 60
#: Characters of one warning in the confirmation: two rows of the dialog (the page has it in full).
CONFIRM_WIDTH = 115
#: GPU workload pods named in the confirmation; the rest are counted.
CONFIRM_PODS = 4


def short(text: str, width: int = CONFIRM_WIDTH) -> str:
    """``text`` on at most two dialog lines: its first clause, cut at a word with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def _rows(text: str) -> int:
    """Rows ``text`` takes in the dialog's body at 80×24 (words wrap: a row rarely ends full)."""
    import textwrap

    return len(textwrap.wrap(text.replace("**", "").replace("`", ""), CONFIRM_COLUMNS)) or 1


def evicted_pods(evictions: Mapping[str, Sequence[str]]) -> str:
    """``ml-team/train-0 (gpu-a100-08), … and 3 more`` for node -> pods ("" when none)."""
    pairs = [f"{pod} ({node})" for node, pods in sorted(evictions.items()) for pod in pods]
    if not pairs:
        return ""
    shown = ", ".join(pairs[:CONFIRM_PODS])
    return shown + (f" and {len(pairs) - CONFIRM_PODS} more" if len(pairs) > CONFIRM_PODS else "")


def object_key(body: dict[str, Any]) -> str:
    """``ClusterPolicy/cluster-policy`` for an object body."""
    return f"{body.get('kind', '?')}/{(body.get('metadata') or {}).get('name', '?')}"


def changes(prepared: Any) -> list[str]:
    """``create ClusterPolicy/cluster-policy`` / ``update …`` / ``unchanged …`` per object of an ApplyPlan
    (``unchanged``: the diff against the live objects has no part for it), then ``delete DaemonSet …, left by the
    operator when …`` per leftover driver DaemonSet the apply deletes, then ``label Node/…`` per node the apply
    keeps out of the driver rollout."""
    live = getattr(prepared, "live", {}) or {}
    headers = {
        line.strip() for line in str(getattr(prepared, "diff", "") or "").splitlines() if line.startswith("--- ")
    }
    out = []
    for body in getattr(prepared, "objects", []) or []:
        key = object_key(body)
        word = "create" if not live.get(key) else ("update" if f"--- live/{key}" in headers else "unchanged")
        out.append(f"{word} {key}")
    # the driver DaemonSets the operator leaves behind for this plan: the apply deletes them
    out += list(getattr(prepared, "deletions", []) or [])
    from wizard.engine.exclusion import EXCLUDED
    from wizard.engine.facts import LABEL_DEPLOY_DRIVER

    for node in sorted(getattr(prepared, "node_labels", {}) or {}):  # kept out of the driver rollout
        out.append(f"label Node/{node} {LABEL_DEPLOY_DRIVER}={EXCLUDED}")
    return out


def warnings(state: Any) -> list[str]:
    """Every finding of the plan, one line each with what to do (see :mod:`screens.findings`)."""
    from screens.findings import plan_findings

    return [f"{f.message} → {f.hint}" if f.hint else f.message for f in plan_findings(state)]


@dataclass(frozen=True)
class Confirmation:
    """The apply confirmation: title, Markdown body and the button that sends."""

    title: str
    body: str
    yes: str


def confirmation(
    *,
    where: str,
    changes: Sequence[str],
    backup: str,
    warnings: Sequence[str],
    owner: Any,
    evictions: Mapping[str, Sequence[str]] | None,
    unread: str = "",
    images: str = "",
    through_helm: bool = False,
) -> Confirmation:
    """The confirmation of an apply (``evictions`` None: the upgrade plan is still being read, or ``unread``
    says why it could not be).

    ``where`` is the cluster as said (``**ctx** — the built-in demo cluster``), ``changes`` the
    ``update ClusterPolicy/cluster-policy`` lines, ``warnings`` the plan's findings, ``images`` what the cluster
    will pull, in one line (:func:`wizard.engine.image_lists.compact_summary`; the page lists each);
    ``through_helm``: the change goes through the owning Helm release's ``helm upgrade``, not a direct apply.
    """
    risks: list[str] = []
    if through_helm:
        pass  # the change goes through the owning release: its next upgrade keeps it
    elif owner.helm:
        risks.append(
            f"**Helm release {owner.release} owns this ClusterPolicy:** its next `helm upgrade` reverts this "
            "change; Save Helm values carries it into the release."
        )
    elif owner.manager == "olm":
        risks.append(
            f"**OLM made this ClusterPolicy** (from {owner.release}): the apply is kept, but an operator upgrade "
            "through OLM may replace the object with the new CSV's example."
        )
    elif owner.manager != "none":
        risks.append(short(f"owner: {owner.why_not_apply()}"))
    if evictions is None and unread:
        risks.append(short(f"GPU workloads evicted: unknown, the upgrade plan could not be read ({unread})"))
    elif evictions is None:
        risks.append("GPU workloads: the upgrade plan is still being read (the page shows them when it is)")
    else:
        pods = evicted_pods(evictions)
        if pods:
            risks.append(f"**Evicts GPU workloads:** {pods}")
    # a leftover DaemonSet the apply deletes is a line of its own: the person approves deleting it
    deletions = [c for c in changes if c.startswith("delete ")]
    writes = [c for c in changes if not c.startswith("delete ")]
    risks[:0] = [f"**{c[0].upper() + c[1:]}**" for c in deletions]
    head = f"Apply to {where}: {', '.join(writes) or 'nothing to change'}."
    if through_helm:
        head = (
            f"Run `helm upgrade` of release `{owner.release}` (namespace `{owner.namespace}`) on {where} with the "
            f"plan as its values: {', '.join(writes) or 'nothing to change'}."
        )
    tail = f"Backup of the live objects first: `{backup}`"
    pulls = [short(f"Images: {images}", CONFIRM_COLUMNS - 4)] if images else []  # one row: the page lists each
    used = sum(_rows(text) for text in (head, tail, *risks, *pulls))
    named = 0
    for text in warnings:
        cut = short(text)
        room = CONFIRM_LINES - used - (1 if named + 1 < len(warnings) else 0)  # a line for "and N more"
        if _rows(cut) > room:
            break
        risks.append(cut)
        used += _rows(cut)
        named += 1
    if named < len(warnings):
        risks.append(f"and {len(warnings) - named} more warning(s), listed on the page")
    lines = [head, *(f"* ⚠ {risk}" for risk in risks), *(f"* {line}" for line in pulls), f"* {tail}"]
    if through_helm:
        return Confirmation("Run helm upgrade?", "\n".join(lines), "Run helm upgrade")
    if owner.helm:
        return Confirmation("Apply directly, bypassing Helm?", "\n".join(lines), "Apply directly")
    return Confirmation("Apply with warnings?" if risks else "Apply these changes?", "\n".join(lines), "Apply")


def install_confirmation(*, where: str, install: Any, helm: bool, warnings: Sequence[str]) -> Confirmation:
    """The confirmation of an operator install: the release, namespace, chart and every image, then how it runs."""
    head = (
        f"Install GPU Operator {install.release} on {where}: Helm release `{install.name}` in namespace "
        f"`{install.namespace}`, {install.chart.words()}."
    )
    how = (
        "`helm upgrade --install` runs now (no --wait); the rollout is followed here"
        if helm
        else "helm is not on PATH: the page shows the command to run; the wizard waits for the operator"
    )
    images = list(install.images)
    room = CONFIRM_LINES - _rows(head) - _rows(how) - 2
    shown = images if len(images) <= room else images[: max(1, room - 1)]
    lines = [head, *(f"* image `{image}`" for image in shown)]
    if len(shown) < len(images):
        lines.append(f"* and {len(images) - len(shown)} more image(s), each listed in Preview's Mirror plan")
    used = sum(_rows(line) for line in lines) + _rows(how)
    for text in warnings:
        cut = short(text)
        if used + _rows(cut) > CONFIRM_LINES:
            lines.append("* ⚠ more warnings are listed on the page")
            break
        lines.append(f"* ⚠ {cut}")
        used += _rows(cut)
    lines.append(f"* {how}")
    return Confirmation("Install the GPU Operator?", "\n".join(lines), "Install")


def branch_advice(plan: Any) -> str:
    """A line when the plan's driver branch is not one its operator release supports ("" when it is, or unknown)."""
    from wizard.engine.driver_version import branch_of
    from wizard.engine.hostdoctor import supported_branches

    if not plan.driver_enabled or not plan.driver.version or plan.driver.version.startswith("sha256:"):
        return ""
    try:
        branches, _ = supported_branches(plan.operator.version)
    except ValueError:
        return ""
    branch = branch_of(plan.driver.version)
    if not branches or branch in branches:
        return ""
    return (
        f"→ Driver branch {branch} is not one operator {plan.operator.version} supports ({', '.join(branches)}): "
        "choose a version of those on the Driver step, then Preview and Apply again."
    )


def helm_undo(owner: Any, labelled: Mapping[str, str | None]) -> str:
    """The undo of a change that went through ``owner``'s Helm release: ``helm rollback`` (the previous revision
    holds the values before it), then a ``kubectl label`` per node the change kept out of the driver rollout
    (node -> its label before), which a Helm rollback does not put back."""
    from wizard.engine.exclusion import restore_argv  # the engine's rules load after the first frame
    from wizard.engine.textsafe import shell_command

    relabels = [shell_command(restore_argv(node, before)) for node, before in sorted(labelled.items())]
    rollback = shell_command(["helm", "rollback", owner.release, "--namespace", owner.namespace])
    return " && ".join([rollback, *relabels])


def failure_advice(diagnosis: Sequence[Any], *, undo: str, branch: str = "", step: str = "") -> list[str]:
    """What to do after a failed rollout, from the diagnosis checks (``undo``: the rollback command, "" for none;
    ``branch``: :func:`branch_advice`, said first: no fix on the nodes helps an unsupported branch; ``step``: the
    step whose answers fix it, when the rollout's failure says, else the Driver step).

    One line per known cause (its title, the nodes, the fix); without one, where to read the logs.
    """
    causes: dict[tuple[str, str], list[str]] = {}
    unexplained: list[Any] = []
    for check in diagnosis:
        if check.check != "diagnosis" or not check.node:
            continue
        findings = check.data.get("findings") or []
        if findings:
            causes.setdefault((str(findings[0]["title"]), str(check.hint)), []).append(check.node)
        else:
            unexplained.append(check)
    lines = [branch] if branch else []
    for (title, fix), nodes in causes.items():
        where = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
        lines.append(f"→ Cause on {where}: {title}.")
        lines.append(f"  Fix: {fix}")
    for check in unexplained[:1]:
        lines.append(f"→ {check.node}: no known cause matched; {check.hint}")
    if not causes and not branch and step == steps.MODE.name:
        lines.append("→ Change the plan: Esc back to the Mode step, then Preview and Apply again.")
    elif not causes and not branch:
        lines.append(
            "→ Change the plan: Esc back to the Driver step (version, registry), then Preview and Apply again."
        )
    if undo:
        lines.append(f"→ Or undo this apply: {undo}")
    return lines
