"""The TUI installs the GPU Operator on the real control plane (day 0), driven with Textual's Pilot at 80×24.

The lane starts without the operator and without its CRDs (``make real-cluster OPERATOR=none``). Connect says
"GPU Operator not installed: gpu-wizard will install vX with your choices"; the newcomer takes every default
but the driver's repository (the site's mirror: this test's real registry, declared insecure in
registries.conf as an admin's would be), walks Nodes, Mode, Driver, Paths (the host check answered by kwok's
probe stage) and Preview, and confirms Apply's install: the wizard runs the lane's helm (the release's real
chart, named with ``--chart`` as an air-gapped site does), the real operator starts once the chart's
Deployment exists (as the chart's ServiceAccount), and its first driver DaemonSets carry the images Apply's
confirmation named. Then, in the same session, the admin's second plan (another driver version) goes back
through Driver, Paths and Preview to Apply, where the policy is now the Helm release's: **Run helm upgrade…**
upgrades that release with the lane's helm (revision 2), and the real operator rolls the new image out with
no other driver DaemonSet left. Runs for the default release only: a newcomer installs that one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog
from tests.helpers.fixtures.registry import RegistryServer
from tests.helpers.tui import back_to, next_to, on_step, set_field
from tests.realcluster.build import Built
from tests.realcluster.cluster import RealCluster
from tests.realcluster.conftest import _FAILED, LOGS, releases
from tests.realcluster.flows import (
    UBUNTU_KERNEL,
    UPSTREAM_VERSION,
    container,
    driver_daemonsets,
    healthy_host,
    healthy_paths,
    node,
)
from tests.realcluster.tui_install import (
    all_found,
    first_driver_daemonsets,
    install_offered,
    installing_app,
    node_images,
    operator_when_installed,
    policy_mode,
)
from tests.snapshots.plugin import screen_text, wait_for
from wizard.engine.answers import load_answers
from wizard.engine.plan import DEFAULT_RELEASE

SECOND_VERSION = "580.105.08"
"""The admin's next plan: another driver of the same branch, through the release the wizard installed."""
NODES = [
    node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
    *[node(f"gpu-h100-{i}", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-H100-80GB-HBM3") for i in range(2)],
]

pytestmark = pytest.mark.skipif(
    DEFAULT_RELEASE not in releases(), reason=f"the lane has not built the default release {DEFAULT_RELEASE}"
)


@pytest.fixture(scope="module")
def day0_cluster(
    built: Built, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[RealCluster]:
    cluster = RealCluster(built, tmp_path_factory.mktemp("tui-install"), DEFAULT_RELEASE)
    try:
        cluster.start(NODES, installed=False)
        yield cluster
    finally:
        if request.session.stash.get(_FAILED, set()):
            cluster.keep_logs(LOGS / "tui-install")
        cluster.stop()


async def test_the_tui_installs_the_operator_with_the_newcomers_choices(
    day0_cluster: RealCluster,
    oci_registry: RegistryServer,
    helm_binary: Path,
    tmp_path: Path,
    tui_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, host = day0_cluster, oci_registry.host
    digests: dict[str, str] = {}
    app = installing_app(cluster, DEFAULT_RELEASE, host, helm_binary, tmp_path, tui_env, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await install_offered(pilot, DEFAULT_RELEASE)
        await next_to(pilot, "nodes")
        await wait_for(pilot, lambda: "gpu-h100-1" in screen_text(app), 60, "the node table")
        await next_to(pilot, "mode")
        mode = app.state.get("mode")
        await next_to(pilot, "driver")
        if app.state.get("mode") == "upstream" and not app.state.get("driver.version"):
            # nvcr.io is out of reach here, so nothing preselects a published version: the newcomer types one
            await set_field(pilot, "driver-version", UPSTREAM_VERSION)
        await set_field(pilot, "driver-repository", f"{host}/nvidia")  # the site's mirror
        await wait_for(pilot, lambda: app.state.plan() is not None, 30, "a valid plan")
        plan = app.state.plan()
        planned = f"{host}/nvidia/{plan.driver.image}"
        # the newcomer's driver image, copied into the mirror (as `gpu-wizard mirror` would), then Recheck pressed
        for image in {n.image for n in node_images(app)}:
            tag = image.rsplit(":", 1)[1]
            digests[f"{planned}:{tag}"] = oci_registry.push_image(f"nvidia/{plan.driver.image}", tag, content=b"x")
        app.screen.query_one("#recheck", Button).press()
        await wait_for(pilot, lambda: bool(app.state.images) and all_found(app, host), 90, "the registry check")
        app.save_progress("driver")
        answers = app.state.answers_path
        # the folder the Paths step checks: the plan's, else the nodes' OS default (pathcheck.check_targets)
        toolkit = load_answers(answers)[0].toolkit.installDir or app.state.facts.recommend_toolkit_dir().value
        cluster.set_stages(digests, {}, healthy_paths(answers, toolkit))  # what Paths asks the hosts
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: on_step(app, "paths"), 60, "the paths step")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 180, "the host check")
        # the "nodes" line says where the answer came from (the Nodes step's host check, reused): not a check
        failed = [c for c in app.state.path_checks if c.status.name != "PASS" and c.check != "nodes"]
        assert not failed, failed
        cluster.set_stages(digests, {}, healthy_host(toolkit))  # what the rollout's host checks ask them
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 60, "the preview")
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: on_step(app, "apply"), 60, "the apply step")
        screen: Any = app.screen
        install = screen._install
        assert install is not None and install.release == DEFAULT_RELEASE
        predicted = {i for i in install.images if i.startswith(f"{planned}:")}
        assert predicted and predicted <= set(digests), (predicted, digests)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 30, "the install confirmation")
        text = screen_text(app)
        assert "Install the GPU Operator?" in text and f"Install GPU Operator {DEFAULT_RELEASE}" in text, text
        failures: list[BaseException] = []
        operator = threading.Thread(target=operator_when_installed, args=(cluster, failures), daemon=True)
        operator.start()
        await pilot.press("tab", "enter")  # the focus starts on Cancel
        await wait_for(pilot, lambda: app.state.applied is not None, 300, "the install")
        assert app.state.applied.ok, app.state.applied.message
        assert f"helm installed GPU Operator {DEFAULT_RELEASE}" in app.state.applied.message
        first = await first_driver_daemonsets(pilot, cluster)
        operator.join(timeout=120)
        assert not failures, failures
        assert {container(ds, "nvidia-driver-ctr")["image"] for ds in first.values()} <= predicted, first.keys()
        rollout = lambda: getattr(app.screen, "_rollout", None)  # noqa: E731
        await wait_for(pilot, lambda: rollout() is not None and rollout().done, 420, "the rollout")
        assert rollout().phase == "ready", rollout().message
        found = driver_daemonsets(cluster)
        assert {container(ds, "nvidia-driver-ctr")["image"] for ds in found.values()} == predicted, found.keys()
        [policy] = cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"]
        assert policy["metadata"]["annotations"]["meta.helm.sh/release-name"] == "gpu-operator"
        assert mode == policy_mode(policy), (mode, policy["spec"]["driver"])

        # the second plan, in the same session: the policy is the release's now, so it goes through helm upgrade
        assert app.state.get("mode") == "upstream", app.state.get("mode")  # nvcr.io unreachable: no tag to pick
        await back_to(pilot, "driver")
        await set_field(pilot, "driver-version", SECOND_VERSION)
        await wait_for(pilot, lambda: _plans(app, SECOND_VERSION), 30, "the second plan")
        second = {n.image for n in node_images(app)}
        for image in second:
            digests[image] = oci_registry.push_image(
                f"nvidia/{plan.driver.image}", image.rsplit(":", 1)[1], content=b"y"
            )
        app.screen.query_one("#recheck", Button).press()
        await wait_for(pilot, lambda: all_found(app, host) and _checked(app, second), 90, "the second registry check")
        cluster.set_stages(digests, {}, healthy_paths(answers, toolkit))
        await next_to(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 180, "the host check")
        cluster.set_stages(digests, {}, healthy_host(toolkit))
        first_preview = app.state.prepared
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared not in (None, first_preview), 60, "the second preview")
        await next_to(pilot, "apply")
        run_button = app.screen.query_one("#helm-run", Button)
        assert run_button.display and app.focused is run_button, screen_text(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 30, "the helm upgrade confirmation")
        assert "Run helm upgrade?" in screen_text(app), screen_text(app)
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: app.state.applied_for is app.state.prepared, 300, "the helm upgrade")
        assert app.state.applied.ok and "helm upgraded release gpu-operator" in app.state.applied.message
        await wait_for(pilot, lambda: rollout() is not None and rollout().done, 420, "the second rollout")
        assert rollout().phase == "ready", rollout().message
    found = driver_daemonsets(cluster)
    assert {container(ds, "nvidia-driver-ctr")["image"] for ds in found.values()} == second, found.keys()
    [policy] = cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"]
    assert policy["spec"]["driver"]["version"] == SECOND_VERSION, policy["spec"]["driver"]
    secrets = cluster.get(f"/api/v1/namespaces/{install.namespace}/secrets?labelSelector=owner%3Dhelm")["items"]
    assert "sh.helm.release.v1.gpu-operator.v2" in {s["metadata"]["name"] for s in secrets}


def _plans(app: WizardApp, version: str) -> bool:
    plan = app.state.plan()
    return plan is not None and plan.driver.version == version


def _checked(app: WizardApp, images: set[str]) -> bool:
    return images <= {s.image for s in app.state.images}
