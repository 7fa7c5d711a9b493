"""The TUI installs each operator release on the real control plane, each in another driver mode (day 0, 80×24).

tests/realcluster/test_tui_install_real.py walks the newcomer (the default release, every default taken);
here the admin picks the release on Mode and the mode beside it: v25.10.1 precompiled, v26.3.3 pre-installed
(the hosts' own driver, which the Nodes step's host check finds), v26.7.0 with the NVIDIADriver CRD. Each time
the lane starts without the operator and its CRDs, Apply's confirmation installs the release's real chart with
the lane's helm, the real operator starts once the chart's Deployment exists (as its ServiceAccount), its
first driver DaemonSets carry the images Apply named (none in pre-installed mode), and the rollout ends ready.
With tests/realcluster/test_install_operator_real.py (the CLI, every release × every mode) the TUI's install
path is judged on every release and every mode by the real operator.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Checkbox, Select

from screens.dialogs import ConfirmDialog
from tests.helpers.fixtures.registry import RegistryServer
from tests.helpers.tui import next_to, on_step, set_field
from tests.realcluster.build import Built
from tests.realcluster.cluster import RealCluster
from tests.realcluster.conftest import _FAILED, LOGS, releases
from tests.realcluster.flows import UBUNTU_KERNEL, container, daemonsets, driver_daemonsets, node
from tests.realcluster.kwokhost import HostFacts
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

CASES = {
    "v25.10.1-precompiled": ("v25.10.1", "precompiled", False),
    "v26.3.3-preinstalled": ("v26.3.3", "preinstalled", False),
    "v26.7.0-nvidiadriver": ("v26.7.0", "precompiled", True),
}
BRANCH = "580"
NODES = [
    node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
    *[node(f"gpu-l40s-{i}", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S") for i in range(2)],
]


@pytest.fixture(params=[case for case, (release, _, _) in CASES.items() if release in releases()])
def case(request: pytest.FixtureRequest, built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """(case, a control plane of its release without the operator and its CRDs)."""
    release = CASES[request.param][0]
    cluster = RealCluster(built, tmp_path_factory.mktemp(f"tui-{request.param}"), release)
    try:
        cluster.start(NODES, installed=False)
        yield request.param, cluster
    finally:
        if request.session.stash.get(_FAILED, set()):
            cluster.keep_logs(LOGS / f"tui-install-{request.param}")
        cluster.stop()


async def test_the_tui_installs_each_release_in_a_mode_of_its_own(
    case: Any,
    oci_registry: RegistryServer,
    helm_binary: Path,
    tmp_path: Path,
    tui_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, cluster = case
    release, mode, crd = CASES[name]
    host = oci_registry.host
    smi = cluster.smi_output.read_text() if mode == "preinstalled" else ""  # the hosts' own driver, or none
    toolkit = "/usr/local/nvidia"
    cluster.set_stages({}, {}, HostFacts(smi=smi, toolkit_dir=toolkit))
    digests: dict[str, str] = {}

    app = installing_app(cluster, release, host, helm_binary, tmp_path, tui_env, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await install_offered(pilot, DEFAULT_RELEASE)  # the default, until Mode picks another
        await next_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 120, "the Nodes step's host check")
        await next_to(pilot, "mode")
        app.screen.query_one("#release", Select).value = release
        await pilot.pause()
        await pilot.click(f"#mode-{mode}")
        await pilot.pause()
        assert (app.state.get("operator.version"), app.state.get("mode")) == (release, mode), screen_text(app)
        if mode == "preinstalled":  # no driver to choose: Driver is skipped
            await next_to(pilot, "paths")
        else:
            await next_to(pilot, "driver")
            if crd and not app.screen.query_one("#use-crd", Checkbox).value:
                app.screen.query_one("#use-crd", Checkbox).value = True
                await pilot.pause()
            if not app.state.get("driver.version"):  # nvcr.io is out of reach: nothing preselects one
                await set_field(pilot, "driver-version", BRANCH)
            await set_field(pilot, "driver-repository", f"{host}/nvidia")  # the site's mirror
            await wait_for(pilot, lambda: app.state.plan() is not None, 30, "a valid plan")
            plan = app.state.plan()
            assert bool(plan.driver.useNvidiaDriverCRD) is crd, plan.driver
            for image in {n.image for n in node_images(app)}:  # copied into the mirror, then Recheck
                repository, tag = image.rsplit(":", 1)
                digests[image] = oci_registry.push_image(repository.split("/", 1)[1], tag, content=image.encode())
            app.screen.query_one("#recheck", Button).press()
            await wait_for(pilot, lambda: bool(app.state.images) and all_found(app, host), 90, "the registry check")
            app.save_progress("driver")
            toolkit = load_answers(app.state.answers_path)[0].toolkit.installDir or toolkit
            cluster.set_stages(digests, {}, HostFacts(smi=smi, toolkit_dir=toolkit))
            await next_to(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 180, "the host check")
        failed = [c for c in app.state.path_checks if c.status.name != "PASS" and c.check != "nodes"]
        assert not failed, failed
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 60, "the preview")
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: on_step(app, "apply"), 60, "the apply step")
        install = app.screen._install  # type: ignore[attr-defined]
        assert install is not None and install.release == release
        predicted = {i for i in install.images if i.startswith(f"{host}/nvidia/")}
        assert predicted == set(digests), (predicted, digests)  # pre-installed: no driver image at all
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 30, "the install confirmation")
        assert f"Install GPU Operator {release}" in screen_text(app), screen_text(app)
        failures: list[BaseException] = []
        operator = threading.Thread(target=operator_when_installed, args=(cluster, failures), daemon=True)
        operator.start()
        await pilot.press("tab", "enter")  # the focus starts on Cancel
        await wait_for(pilot, lambda: app.state.applied is not None, 300, "the install")
        assert app.state.applied.ok and f"helm installed GPU Operator {release}" in app.state.applied.message
        if mode == "preinstalled":
            await wait_for(pilot, lambda: "nvidia-container-toolkit-daemonset" in daemonsets(cluster), 180, "toolkit")
        else:
            first = await first_driver_daemonsets(pilot, cluster)
            assert {container(ds, "nvidia-driver-ctr")["image"] for ds in first.values()} <= predicted, first.keys()
        operator.join(timeout=120)
        assert not failures, failures
        rollout = lambda: getattr(app.screen, "_rollout", None)  # noqa: E731
        await wait_for(pilot, lambda: rollout() is not None and rollout().done, 420, "the rollout")
        assert rollout().phase == "ready", rollout().message
    found = driver_daemonsets(cluster)
    assert {container(ds, "nvidia-driver-ctr")["image"] for ds in found.values()} == predicted, found.keys()
    [policy] = cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"]
    assert policy["metadata"]["annotations"]["meta.helm.sh/release-name"] == "gpu-operator"
    if crd:
        drivers = cluster.get("/apis/nvidia.com/v1alpha1/nvidiadrivers")["items"]
        assert policy["spec"]["driver"]["useNvidiaDriverCRD"] is True and drivers, policy["spec"]["driver"]
        assert all(d["spec"].get("usePrecompiled") is True for d in drivers), [d["spec"] for d in drivers]
    else:
        assert policy_mode(policy) == mode, policy["spec"]["driver"]
