"""The upgradePolicy flags of ``apply`` and ``upgrade`` (``--max-parallel-upgrades N`` …), checked by the plan model.

Each flag changes one field of ``driver.upgradePolicy``; the others keep the answers file's, else
the live policy's, else the chart's defaults (:func:`wizard.engine.upgrade.with_upgrade_policy`). A
bad value is one line naming the flag and what is valid, from the same rule the answers file and the
TUI use.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wizard.cli.common import UsageError

if TYPE_CHECKING:
    from wizard.engine.plan import Plan

#: flag destination -> (the flag, the upgradePolicy field it sets)
POLICY_FLAGS: dict[str, tuple[str, str]] = {
    "auto_upgrade": ("--auto-upgrade", "autoUpgrade"),
    "max_parallel_upgrades": ("--max-parallel-upgrades", "maxParallelUpgrades"),
    "max_unavailable": ("--max-unavailable", "maxUnavailable"),
    "drain": ("--drain", "drain.enable"),
    "drain_timeout": ("--drain-timeout", "drain.timeoutSeconds"),
    "pod_deletion_timeout": ("--pod-deletion-timeout", "podDeletion.timeoutSeconds"),
    "wait_for_jobs_timeout": ("--wait-for-jobs-timeout", "waitForCompletion.timeoutSeconds"),
}


def policy_flags(parser: argparse.ArgumentParser) -> None:
    """Add the upgradePolicy flags (all optional: what is not given is left as it is)."""
    group = parser.add_argument_group("upgradePolicy (how the operator rolls the driver out; unset: left as it is)")
    group.add_argument(
        "--auto-upgrade",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="let the operator roll a new driver out node by node (autoUpgrade)",
    )
    group.add_argument("--max-parallel-upgrades", metavar="N", help="nodes upgraded at once; 0: all at once")
    group.add_argument(
        "--max-unavailable", metavar="N|N%", help="GPU nodes that may be unavailable at once, e.g. 2 or 25%%"
    )
    group.add_argument(
        "--drain",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="drain each node before its driver restarts",
    )
    group.add_argument("--drain-timeout", metavar="SECONDS", help="drain.timeoutSeconds (0: no limit)")
    group.add_argument("--pod-deletion-timeout", metavar="SECONDS", help="podDeletion.timeoutSeconds (0: no limit)")
    group.add_argument(
        "--wait-for-jobs-timeout", metavar="SECONDS", help="waitForCompletion.timeoutSeconds (0: wait for ever)"
    )


def _number(text: Any) -> Any:
    """A flag's digits as an integer (the model then checks the range); anything else as given, for its message."""
    return int(text) if isinstance(text, str) and text.isascii() and text.isdigit() else text


def policy_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The upgradePolicy fields the flags set (dotted, e.g. ``drain.enable``)."""
    changes: dict[str, Any] = {}
    for dest, (_, field) in POLICY_FLAGS.items():
        value = getattr(args, dest, None)
        if value is not None:
            changes[field] = value if isinstance(value, bool) or field == "maxUnavailable" else _number(value)
    return changes


def check_policy_flags(args: argparse.Namespace) -> None:
    """Refuse a bad flag value before connecting (UsageError naming the flag): each is checked on its own here."""
    from pydantic import ValidationError

    from wizard.engine.plan import UpgradePolicySpec

    for dest, (flag, field) in POLICY_FLAGS.items():
        value = getattr(args, dest, None)
        if value is None or isinstance(value, bool):
            continue
        nested: dict[str, Any] = {}
        node = nested
        *parents, leaf = field.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value if field == "maxUnavailable" else _number(value)
        try:
            UpgradePolicySpec.model_validate(nested)
        except ValidationError as exc:
            message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
            raise UsageError(f"{flag}: upgradePolicy.{field}: {message}") from None


def with_policy_flags(args: argparse.Namespace, plan: Plan, live_policy: Mapping[str, Any] | None) -> Plan:
    """``plan`` with the upgradePolicy flags applied; UsageError naming the flag for a bad value."""
    from pydantic import ValidationError

    from wizard.engine.answers import plan_errors
    from wizard.engine.upgrade import with_upgrade_policy

    changes = policy_changes(args)
    live_spec = (((live_policy or {}).get("spec") or {}).get("driver") or {}).get("upgradePolicy")
    try:
        return with_upgrade_policy(plan, changes, live_spec)
    except ValidationError as exc:
        first = plan_errors(exc)[0]
        field = first.field.removeprefix("driver.upgradePolicy.")
        flag = next((flag for flag, name in POLICY_FLAGS.values() if name == field), "")
        where = f"{flag}: " if flag else "the live ClusterPolicy's "
        raise UsageError(f"{where}upgradePolicy.{field}: {first.message}") from None
