"""The apply confirmation fits 80×24 however much there is to say: the risks first, the rest counted.

Pilot at 80×24 with the dialog the Apply step builds (:func:`screens.apply_text.confirmation`) for the
worst case a Helm-owned upgrade meets: the Helm risk, many evicted GPU workloads, long warnings.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from screens.apply_text import confirmation
from screens.dialogs import ConfirmDialog
from tests.snapshots.plugin import screen_text
from wizard.engine.ownership import Ownership

WARNING = (
    "registry.internal.example-corporation.com:5443/platform/ml-infrastructure/nvidia-mirror/driver:"
    "580.126.20-ubuntu22.04 is missing in the target registry: {n} node(s) cannot pull it → mirror it first"
)

#: The images line of a plan pulling from four registries (wizard.engine.image_lists.compact_summary): longer than a
#: dialog line.
IMAGES = "9 image(s) from docker.io, nvcr.io, registry.internal.example-corporation.com:5443, registry.k8s.io"


async def test_the_worst_case_confirmation_fits_without_scrolling(tui_env: Path) -> None:
    asked = confirmation(
        where="**production-eu-west-1** at `https://api.k8s.example-corporation.com:6443`",
        changes=["update ClusterPolicy/cluster-policy", "update NVIDIADriver/default"],
        backup="~/.local/state/gpu-wizard/backups",
        warnings=[WARNING.format(n=n) for n in range(1, 9)],
        owner=Ownership("helm", "cluster-policy", "gpu-operator", "gpu-operator"),
        evictions={f"gpu-a100-{n:02d}": [f"ml-team/train-llm-{n}", f"ml-team/eval-{n}"] for n in range(1, 7)},
        images=IMAGES,
    )
    app: App[None] = App()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ConfirmDialog(asked.title, asked.body, yes=asked.yes, no="Cancel"))
        await pilot.pause(0.2)
        text = screen_text(app)
        body = app.screen.query_one(".dialog-body")
        assert body.max_scroll_y == 0, f"the confirmation scrolls by {body.max_scroll_y} lines:\n{text}"
        for words in ("Helm release gpu-operator owns", "Evicts GPU workloads", "Images: 9 image(s) from", "Backup of"):
            assert words in text, text
        assert "Apply directly" in text and "Cancel" in text


def test_workloads_the_plan_could_not_read_are_said_unknown_not_still_being_read() -> None:
    asked = confirmation(
        where="x",
        changes=["update ClusterPolicy/cluster-policy"],
        backup="~/b",
        warnings=[],
        owner=Ownership("none"),
        evictions=None,
        unread="the API server timed out",
    )
    assert "GPU workloads evicted: unknown, the upgrade plan could not be read (the API server timed out)" in asked.body
    assert "still being read" not in asked.body


def test_a_change_through_the_owning_release_names_helm_upgrade_and_no_revert_risk() -> None:
    helm = Ownership("helm", "cluster-policy", "gpu-operator", "gpu-operator")
    asked = confirmation(
        where="**prod**",
        changes=["update ClusterPolicy/cluster-policy", "delete DaemonSet gpu-operator/nvidia-driver-daemonset, left"],
        backup="~/b",
        warnings=[],
        owner=helm,
        evictions={},
        through_helm=True,
    )
    assert (asked.title, asked.yes) == ("Run helm upgrade?", "Run helm upgrade")
    assert "Run `helm upgrade` of release `gpu-operator` (namespace `gpu-operator`) on **prod**" in asked.body
    assert "reverts" not in asked.body and "owner:" not in asked.body
    assert "**Delete DaemonSet gpu-operator/nvidia-driver-daemonset" in asked.body  # approved with the upgrade
    # the TUI's dry-run of a Helm-owned policy takes Helm's fields, or the real API server refuses it (conflict)
    assert helm.dry_run_takes_fields and not Ownership("olm").dry_run_takes_fields
