"""The rule of what the operator leaves behind on a change of plan (wizard.engine.leftovers), and where it shows.

Each row is one transition as the operator's source handles it (controllers/object_controls.go,
state_manager.go, the NVIDIADriver controller; the same in v25.10.1, v26.3.3 and v26.7.0): which live
driver DaemonSets the plan does not want, and which of them the operator will not delete itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App

from screens.apply_text import changes, confirmation
from screens.dialogs import ConfirmDialog
from tests.snapshots.plugin import screen_text
from wizard.cluster.applying.apply_preview import ApplyPlan
from wizard.cluster.applying.backup import Backup, read_backup, write_backup
from wizard.cluster.errors import ClusterError
from wizard.cluster.rollouts.rollout_verdict import classify
from wizard.engine.leftovers import (
    DRIVER_COMPONENT,
    LABEL_COMPONENT,
    LABEL_PRECOMPILED,
    LEFT_WHEN_CRD_OFF,
    LEFT_WHEN_DISABLED,
    LiveDaemonSet,
    Unwanted,
    left_behind,
    made_again_by,
    stray_pod_hint,
    unwanted,
)
from wizard.engine.ownership import Ownership
from wizard.engine.plan import Plan

COMMON = "nvidia-driver-daemonset"
KERNEL_DS = "nvidia-driver-daemonset-5.15.0-1048-nvidia-ubuntu22.04"
NVD_DS = "nvidia-gpu-driver-ubuntu22.04-7b9c5d6f8"
DRIVER = {"app.kubernetes.io/component": "nvidia-driver"}


def _plan(mode: str, crd: bool = False) -> Plan:
    driver: dict[str, Any] = {"useNvidiaDriverCRD": crd}
    if mode != "preinstalled":
        driver |= {"version": "580" if mode == "precompiled" else "580.126.20", "repository": "nvcr.io/nvidia"}
    return Plan.model_validate({"mode": mode, "driver": driver})


def upstream_ds() -> LiveDaemonSet:
    return LiveDaemonSet(COMMON, {**DRIVER, "nvidia.com/precompiled": "false"}, "ClusterPolicy", 2)


def kernel_ds() -> LiveDaemonSet:
    return LiveDaemonSet(KERNEL_DS, {**DRIVER, "nvidia.com/precompiled": "true"}, "ClusterPolicy", 2, "uid-1")


def nvd_ds() -> LiveDaemonSet:
    return LiveDaemonSet(NVD_DS, {**DRIVER, "nvidia.com/precompiled": "false"}, "NVIDIADriver", 2)


OTHERS = [
    LiveDaemonSet("nvidia-container-toolkit-daemonset", {}, "ClusterPolicy", 2),
    LiveDaemonSet("nvidia-operator-validator", {}, "ClusterPolicy", 2),
]


@pytest.mark.parametrize(
    ("mode", "crd", "live", "left", "removed"),
    [
        # precompiled -> pre-installed: DaemonSet()'s state-disabled branch deletes only nvidia-driver-daemonset
        ("preinstalled", False, [kernel_ds()], {KERNEL_DS: LEFT_WHEN_DISABLED}, []),
        # upstream -> pre-installed: the common name is the one it deletes
        ("preinstalled", False, [upstream_ds()], {}, [COMMON]),
        # precompiled <-> upstream: cleanupUnusedDriverDaemonSets deletes the other flavour (by its label)
        ("upstream", False, [kernel_ds()], {}, [KERNEL_DS]),
        ("precompiled", False, [upstream_ds()], {}, [COMMON]),
        # same mode again, a release upgrade (same names, same labels): nothing unwanted
        ("precompiled", False, [kernel_ds()], {}, []),
        ("upstream", False, [upstream_ds()], {}, []),
        # NVIDIADriver CRDs on: the ClusterPolicy's driver DaemonSets are deleted (cleanupAllDriverDaemonSets)
        ("upstream", True, [upstream_ds(), kernel_ds(), nvd_ds()], {}, [COMMON, KERNEL_DS]),
        # NVIDIADriver CRDs off: the NVIDIADriver controller stops reconciling and deletes nothing
        ("upstream", False, [nvd_ds(), upstream_ds()], {NVD_DS: LEFT_WHEN_CRD_OFF}, []),
        ("precompiled", False, [nvd_ds()], {NVD_DS: LEFT_WHEN_CRD_OFF}, []),
        (
            "preinstalled",
            False,
            [nvd_ds(), kernel_ds()],
            {NVD_DS: LEFT_WHEN_CRD_OFF, KERNEL_DS: LEFT_WHEN_DISABLED},
            [],
        ),
    ],
)
def test_what_each_transition_leaves_behind(
    mode: str, crd: bool, live: list[LiveDaemonSet], left: dict[str, str], removed: list[str]
) -> None:
    plan = _plan(mode, crd)
    found = unwanted(plan, [*live, *OTHERS])
    assert {u.name: u.reason for u in found if u.left} == left
    assert sorted(u.name for u in found if not u.left) == sorted(removed)
    assert [u.name for u in left_behind(plan, [*live, *OTHERS])] == sorted(left)


def test_v25_10_keeps_reconciling_nvidiadrivers_whatever_the_policy_says() -> None:
    """v25.10.1's NVIDIADriver controller has no useNvidiaDriverCRD check: deleting the DaemonSet would not last."""
    plan = Plan.model_validate(
        {
            "operator": {"version": "v25.10.1"},
            "mode": "upstream",
            "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia"},
        }
    )
    (found,) = unwanted(plan, [nvd_ds(), upstream_ds()])
    assert (found.name, found.left, found.waits) == (NVD_DS, False, False)
    assert "kubectl delete nvidiadrivers" in found.reason
    assert left_behind(plan, [nvd_ds()]) == []
    policy = {"status": {"state": "ready"}}
    phase, message = classify(plan, policy, "ready", [], [], {}, {}, [], stray=[found])
    assert phase == "failed" and message.startswith(f"DaemonSet {NVD_DS} still runs 2 driver pods: an NVIDIADriver")


def test_a_preinstalled_plan_is_judged_with_the_policys_own_crd_switch() -> None:
    """A pre-installed plan leaves useNvidiaDriverCRD as it was: while true, an NVIDIADriver keeps its
    DaemonSet (deleting it would not last), and the ClusterPolicy's are the operator's to delete."""
    found = unwanted(_plan("preinstalled"), [nvd_ds(), kernel_ds()], nvidia_driver_crd=True)
    assert [(u.name, u.left) for u in found] == [(KERNEL_DS, False), (NVD_DS, False)]
    assert "useNvidiaDriverCRD" in found[1].reason


def test_the_rollout_is_never_ready_over_a_driver_daemonset_with_pods() -> None:
    policy = {"status": {"state": "ready", "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled"}]}}
    plan = _plan("preinstalled")
    assert classify(plan, policy, "ready", [], [], {}, {}, []) == ("ready", "ClusterPolicy ready")
    left = Unwanted(KERNEL_DS, LEFT_WHEN_DISABLED, True, 2)
    phase, message = classify(plan, policy, "ready", [], [], {}, {}, [], stray=[left])
    assert phase == "failed"
    assert (
        message
        == f"DaemonSet {KERNEL_DS} still runs 2 driver pods, {LEFT_WHEN_DISABLED}: run gpu-wizard apply again, which deletes it"
    )
    going = Unwanted(COMMON, "the operator removes it for this plan", False, 1, waits=True)
    assert classify(plan, policy, "ready", [], [], {}, {}, [], stray=[going]) == (
        "progressing",
        f"waiting for DaemonSet {COMMON} to go (1 driver pod; the operator removes it for this plan)",
    )


def test_verify_names_the_daemonset_that_runs_the_pod() -> None:
    assert stray_pod_hint(COMMON, "gpu-operator") == "the ClusterPolicy must set driver.enabled: false"
    hint = stray_pod_hint(KERNEL_DS, "gpu-operator")
    assert hint.startswith(f"a leftover DaemonSet {KERNEL_DS} still runs driver pods, {LEFT_WHEN_DISABLED}")
    assert f"kubectl delete daemonset -n gpu-operator {KERNEL_DS}" in hint
    assert "useNvidiaDriverCRD" in stray_pod_hint(NVD_DS, "gpu-operator")


def _daemonset(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "gpu-operator", "labels": labels, "uid": "u", "resourceVersion": "9"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}},
        "status": {"numberReady": 2},
    }


def test_a_backup_keeps_a_driver_daemonset_and_refuses_any_other(tmp_path: Path) -> None:
    saved = write_backup(tmp_path, "b.yaml", Backup("ctx", "https://x", [_daemonset(KERNEL_DS, dict(DRIVER))]))
    (back,) = read_backup(saved).objects
    assert back["metadata"] == {"name": KERNEL_DS, "namespace": "gpu-operator", "labels": DRIVER}
    assert "status" not in back
    other = write_backup(tmp_path, "c.yaml", Backup("ctx", "https://x", [_daemonset("evil", {"app": "miner"})]))
    with pytest.raises(ClusterError, match="not a driver DaemonSet"):
        read_backup(other)


def _prepared() -> ApplyPlan:
    return ApplyPlan(
        objects=[{"kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}}],
        live={"ClusterPolicy/cluster-policy": {"kind": "ClusterPolicy"}},
        diff="",
        errors=[],
        namespace="gpu-operator",
        leftovers=[Unwanted(KERNEL_DS, LEFT_WHEN_DISABLED, True, 2, "uid-1")],
    )


async def test_preview_and_the_confirmation_name_the_deletion(tui_env: Path) -> None:
    prepared = _prepared()
    assert prepared.changed and not prepared.holds_driver
    line = f"delete DaemonSet gpu-operator/{KERNEL_DS}, {LEFT_WHEN_DISABLED}"
    assert changes(prepared) == ["unchanged ClusterPolicy/cluster-policy", line]
    asked = confirmation(
        where="**demo**",
        changes=changes(prepared),
        backup="~/backups",
        warnings=[],
        owner=Ownership("none", "cluster-policy", "", ""),
        evictions={},
    )
    app: App[None] = App()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ConfirmDialog(asked.title, asked.body, yes=asked.yes, no="Cancel"))
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "Apply to demo: unchanged ClusterPolicy/cluster-policy." in text
        assert "• ⚠ Delete DaemonSet" in text
        squeezed = "".join(text.replace("█", " ").split())
        assert (
            "DeleteDaemonSetgpu-operator/nvidia-driver-daemonset-5.15.0-1048-nvidia-ubuntu22.04,leftbytheoperator"
            in squeezed
        )
        assert app.screen.query_one(".dialog-body").max_scroll_y == 0


PRECOMPILED_LABELS = {LABEL_PRECOMPILED: "true", LABEL_COMPONENT: DRIVER_COMPONENT}


@pytest.mark.parametrize(
    ("driver", "labels", "made"),
    [
        ({"usePrecompiled": True}, PRECOMPILED_LABELS, True),
        ({"usePrecompiled": True, "enabled": True}, PRECOMPILED_LABELS, True),
        ({"usePrecompiled": True, "enabled": False}, PRECOMPILED_LABELS, False),  # disabled: the operator leaves it
        ({"usePrecompiled": True, "useNvidiaDriverCRD": True}, PRECOMPILED_LABELS, False),
        ({}, PRECOMPILED_LABELS, False),  # upstream: the operator deletes precompiled ones
        ({"usePrecompiled": True}, {LABEL_PRECOMPILED: "false"}, False),
        ({"usePrecompiled": "true"}, PRECOMPILED_LABELS, False),  # not a boolean: not what the operator reads
    ],
)
def test_the_operator_makes_a_saved_precompiled_daemonset_again_under_a_precompiled_policy(
    driver: dict[str, object], labels: dict[str, str], made: bool
) -> None:
    assert made_again_by({"spec": {"driver": driver}}, labels) is made
    assert made_again_by(None, labels) is False
