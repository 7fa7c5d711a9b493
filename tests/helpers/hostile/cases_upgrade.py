"""Hostile inputs of the upgradePolicy (answers file and the ``apply``/``upgrade`` flags): refused before connecting.

Each value is checked by the plan model (:class:`wizard.engine.plan.UpgradePolicySpec`) before any
connection (the kubeconfig named here does not exist): exit 2, one line naming the field or flag,
no control character reaching the terminal.
"""

from __future__ import annotations

from tests.helpers.hostile.case import HostileCase

ANSWERS = (
    "version: 1\nmode: upstream\ndriver:\n  version: 580.126.20\n  repository: nvcr.io/nvidia\n"
    "  upgradePolicy:\n{policy}"
)
NO_CLUSTER = ("--kubeconfig", "{dir}/no-kubeconfig")


def _answers(name: str, policy: str, *expected: str) -> HostileCase:
    return HostileCase(
        name=f"upgrade-policy-{name}",
        argv=("apply", "--answers", "{dir}/answers.yaml", *NO_CLUSTER),
        expect_exit=2,
        files={"answers.yaml": ANSWERS.format(policy=policy)},
        stderr_has=expected,
    )


def _flag(command: str, flag: str, value: str, *expected: str) -> HostileCase:
    head = ("upgrade", "--driver", "580.126.20") if command == "upgrade" else ("apply", "--answers", "{dir}/a.yaml")
    return HostileCase(
        name=f"{command}-{flag.removeprefix('--')}-{len(value)}",
        argv=(*head, *NO_CLUSTER, flag, value),
        expect_exit=2,
        files={"a.yaml": ANSWERS.format(policy="    autoUpgrade: true\n")},
        stderr_has=(flag, *expected),
    )


CASES: list[HostileCase] = [
    _answers(
        "selector-escape", '    drain: {podSelector: "app=x\\e]0;pwned\\a"}\n', "driver.upgradePolicy.drain.podSelector"
    ),
    _answers("zero-unavailable", "    maxUnavailable: 0%\n", "driver.upgradePolicy.maxUnavailable", "1% to 100%"),
    _answers("bool-parallel", "    maxParallelUpgrades: yes\n", "driver.upgradePolicy.maxParallelUpgrades"),
    _answers("huge-timeout", "    podDeletion: {timeoutSeconds: -" + "9" * 400 + "}\n", "podDeletion.timeoutSeconds"),
    _answers("unknown-key", "    drain: {enabled: true}\n", "driver.upgradePolicy.drain.enabled", "valid keys here"),
    _flag("apply", "--max-unavailable", "\x1b]0;pwned\x07", "a percentage from 1% to 100%"),
    _flag("upgrade", "--max-parallel-upgrades", "1e9999", "whole number of nodes"),
    _flag("upgrade", "--drain-timeout", "-1", "whole number of seconds"),
    _flag("upgrade", "--max-unavailable", "9" * 300 + "%", "a percentage from 1% to 100%"),
    _flag("upgrade", "--pod-deletion-timeout", "٣", "whole number of seconds"),  # an Arabic-Indic digit
]
