"""The fault matrix as tests: every operation × fault cell survives or is reported clearly; the CLI and the TUI too.

The cells are those of ``benchmarks/reliability.py`` (which writes ``docs/reliability.md``). A
persistent 500, 429 or drop costs the full bounded backoff (1.5 to 3 s), so here it runs once per
client path (a gateway read, the verification stream, the apply write, the registry) rather than for
every operation; the benchmark runs them all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.faultmatrix import Cell, Lab, cells, clear_message, run_cell
from screens.app import WizardApp
from screens.dialogs import ErrorDialog
from tests.helpers.cli import run_cli as run
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.fixtures.registry import RegistryServer
from tests.snapshots.plugin import screen_text, wait_for

SAME_PATH = {"preflight", "prepare"}  # their persistent 500/429/drop take the same gateway path as discover's
CELLS = [
    c
    for c in cells()
    if c.transient
    or (
        not (c.fault in ("500", "429", "drop") and c.operation in SAME_PATH)
        and not (c.fault == "429" and c.operation == "verify")
    )
]
AUTH_REPO, AUTH_TAG = "mlops/nvidia-driver", "580.126.09.1-fault-matrix"


@pytest.fixture(scope="module")
def read_demo(demo_cluster_module: ClusterFactory) -> Iterator[DemoClusterThread]:
    """One cluster with a running install, shared by the read-only cells (each cell resets the faults)."""
    demo = demo_cluster_module("existing-install")
    yield demo
    demo.faults.clear()


@pytest.mark.parametrize("cell", CELLS, ids=[c.id for c in CELLS])
async def test_fault_cell(
    cell: Cell,
    read_demo: DemoClusterThread,
    demo_cluster: ClusterFactory,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    lab = Lab(read_demo, demo_cluster, tmp_path)
    if cell.fault == "registry-401":
        registry: RegistryServer = request.getfixturevalue("oci_registry_auth")
        registry.push_image(AUTH_REPO, AUTH_TAG)
        lab.auth_registry, lab.auth_image = registry, f"{registry.host}/{AUTH_REPO}:{AUTH_TAG}"
    result = await run_cell(lab, cell)

    assert result.outcome != "crashed", result.detail
    assert result.outcome == cell.expected, f"{result.outcome}: {result.detail}"
    assert result.injected >= 1, "the fault was never injected: the cell proves nothing"
    if result.outcome == "reported":
        assert clear_message(result.detail), result.detail
    if cell.operation == "apply":  # never half a change, and the wizard says which
        assert result.state in ("unchanged", "applied"), result.detail
        assert ("unchanged" if result.state == "unchanged" else "applied") in result.detail
    if cell.operation == "prepare":
        assert result.state == "unchanged"  # a dry-run under faults persists nothing
    if (cell.fault in ("500", "429", "drop", "exec-fail") and cell.expected == "survived") or cell.fault == "watch-410":
        assert result.retries >= 1, "survived without a retry?"
    if cell.operation == "apply" and cell.fault in ("500", "slow"):
        assert result.retries == 0  # a failed write is rolled back, not repeated blindly
    if cell.fault == "registry-401":
        assert lab.auth_registry.password not in result.detail


def test_every_operation_meets_both_outcomes() -> None:
    """The matrix exercises both "retried then survived" and "reported clearly" for every operation but the watch."""
    for operation in {c.operation for c in CELLS} - {"watch"}:
        assert {c.expected for c in CELLS if c.operation == operation} == {"survived", "reported"}, operation


# -- the CLI under faults -------------------------------------------------------------------------------


def one_line_errors(err: str) -> None:
    """stderr holds only the banner, error lines and hints: no traceback, no multi-line dump."""
    assert "Traceback" not in err
    for line in err.splitlines():
        assert line.startswith(("cluster: ", "gpu-wizard: error: ", "  hint: ")), line


def test_cli_reports_a_persistent_server_error_in_one_line(
    read_demo: DemoClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    faults = read_demo.faults
    faults.clear()
    faults.error_code, faults.error_rate, faults.only = 500, 1.0, ["/api/v1/nodes"]
    try:
        code, out, err = run(capsys, "discover", "--kubeconfig", str(read_demo.kubeconfig_path))
    finally:
        faults.clear()
    assert (code, out) == (2, "")
    assert "gpu-wizard: error: listing nodes: Internal error occurred: injected fault" in err
    one_line_errors(err)


def test_cli_survives_transient_faults_and_reports_a_refused_exec(
    read_demo: DemoClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = ["--kubeconfig", str(read_demo.kubeconfig_path), "--no-registry", "--allow-skipped"]
    faults = read_demo.faults
    faults.clear()
    faults.injected.clear()
    faults.error_code, faults.error_rate, faults.budget, faults.methods = 500, 1.0, 3, ["GET"]
    code, out, err = run(capsys, "verify", *cluster)
    summary = "- SKIPPED summary: 3 GPU nodes: 15 checks passed, 3 SKIPPED (image-digest: --no-registry was given)"
    assert code == 0 and f"{summary}\n" in out and "verified" not in out, out + err
    assert faults.injected["error"] == 3

    faults.clear()
    faults.exec_fail_nodes = ["gpu-a100-02"]
    try:
        code, out, err = run(capsys, "verify", *cluster)
    finally:
        faults.clear()
    assert code == 1
    failed = [line for line in out.splitlines() if line.startswith("✗ nvidia-smi gpu-a100-02:")]
    # the server's own reason follows the status (a real kube-apiserver's words for an unreachable kubelet)
    assert failed and "refused by the server (HTTP 500): error dialing backend" in failed[0] and len(failed[0]) < 360
    checks = out.split("\ndiagnosis (", 1)[0]  # the diagnosis follows the checks
    assert checks.endswith("✗ summary: 1 of 3 GPU nodes failed: gpu-a100-02 (3 checks SKIPPED)\n")
    assert "Traceback" not in out + err


def test_cli_on_a_demo_with_a_steady_fault_rate_never_crashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wizard.bundled import asset_text

    scenario = tmp_path / "flaky.yaml"
    text = asset_text("scenarios", "existing-install.yaml").replace("name: existing-install", "name: flaky")
    scenario.write_text(text + "faults:\n  error_rate: 0.2\n  drop_rate: 0.1\n  seed: 7\n")
    code, out, err = run(capsys, "verify", "--demo", str(scenario), "--no-registry", "-o", "json")
    assert code in (0, 1, 2)
    one_line_errors(err)
    if code != 2:
        assert len(json.loads(out)["checks"]) > 3


# -- the TUI under faults -------------------------------------------------------------------------------


async def test_tui_shows_a_dialog_when_preflight_and_discovery_fail(
    tui_env: Path, demo_cluster: ClusterFactory
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    demo.faults.error_rate, demo.faults.only = 1.0, ["/apis/nvidia.com"]  # preflight's CRD discovery fails
    app = WizardApp(kubeconfig=str(demo.kubeconfig_path), report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "What to do" in screen_text(app), 30, "the preflight error dialog")
        assert isinstance(app.screen, ErrorDialog)
        text = screen_text(app)
        assert "Cluster error" in text and "Internal error occurred" in text
        assert "this is a bug" not in text and "Traceback" not in text
        await pilot.press("enter")
        demo.faults.clear()
        await pilot.click("#connect")
        await wait_for(pilot, lambda: app.state.preflight is not None, 30, "a clean preflight")

        demo.faults.error_rate, demo.faults.only = 1.0, ["/api/v1/nodes"]
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: "listing nodes" in screen_text(app), 30, "the discovery error dialog")
        assert isinstance(app.screen, ErrorDialog) and "Cluster error" in screen_text(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, ErrorDialog), what="the dialog to close")
        assert app.state.step == "nodes" and app.is_running  # still there: the user can go back or retry
    assert app.return_code in (None, 0)
