"""Nothing lost: a killed wizard resumes with its answers and step, saves are atomic, an interrupted apply is
all-or-nothing and says which, and ``gpu-wizard rollback`` restores the backup exactly."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog
from screens.state import resume_path
from tests.helpers.cli import run_cli as run
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.tui import on_step
from tests.snapshots.plugin import wait_for
from wizard.cluster.applying.backup import clean, private
from wizard.engine.answers import load_answers, save_answers
from wizard.engine.plan import Plan

ROOT = Path(__file__).resolve().parent.parent
MIRROR = "registry.example.com/mlops"

#: Walks ``gpu-wizard --demo`` to the Paths step (answers saved on each Next), says SAVED, then waits to be killed.
WALK_AND_WAIT = f"""
import asyncio
from screens.app import WizardApp
from tests.helpers.tui import connected, next_to, set_field

async def main() -> None:
    app = WizardApp(demo="sle-micro-precompiled", step_delay=0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        for step in ("nodes", "mode", "driver"):
            await next_to(pilot, step)
        await set_field(pilot, "driver-repository", "{MIRROR}")
        await next_to(pilot, "paths")
        print("SAVED", flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "KUBECONFIG"))}
    return {**env, "HOME": str(home), "PYTHONPATH": str(ROOT), "TEXTUAL_ANIMATIONS": "none"}


def _wait_for_line(proc: subprocess.Popen[str], wanted: str, timeout: float) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.strip() == wanted:
            return
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"no {wanted!r} from the wizard: {proc.stderr.read() if proc.stderr else ''}")


async def test_a_killed_wizard_resumes_with_its_answers_and_step(tui_env: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", WALK_AND_WAIT],
        cwd=ROOT,
        env=_env(tui_env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_line(proc, "SAVED", 90)
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # no atexit, no cleanup: like a closed terminal or an OOM kill
        proc.wait(10)
    answers = tui_env / ".config" / "gpu-wizard" / "answers.yaml"
    plan, _ = load_answers(answers)
    assert plan.driver.repository == MIRROR and plan.mode.value == "precompiled"
    assert private(answers) and private(resume_path(answers))
    assert {p.name for p in answers.parent.iterdir()} == {"answers.yaml", ".answers.yaml.step.json"}  # no temp files

    app = WizardApp(demo="sle-micro-precompiled", step_delay=0.0, report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 30, "the resume question")
        await pilot.click("#yes")
        await wait_for(pilot, lambda: on_step(app, "paths"), 60, "the replay to stop at Paths")
        assert app.state.get("driver.repository") == MIRROR
        assert app.state.get("driver.version") == plan.driver.version


KILL_WRITER = """
import sys
from wizard.atomic_write import write_private
texts = ["a: " + "1" * 3_000_000 + "\\n", "b: " + "2" * 3_000_000 + "\\n"]
print("GO", flush=True)
i = 0
while True:
    write_private(sys.argv[1], texts[i % 2])
    i += 1
"""


def test_a_save_killed_at_any_moment_leaves_a_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "answers.yaml"
    whole = {"a: " + "1" * 3_000_000 + "\n", "b: " + "2" * 3_000_000 + "\n"}
    rng = random.Random(7)
    for _ in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILL_WRITER, str(target)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        _wait_for_line(proc, "GO", 30)
        time.sleep(rng.uniform(0.05, 0.3))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        if target.exists():
            assert target.read_text() in whole  # the old file or the new one, never a mix or a prefix
            assert private(target)


# -- apply interrupted, rollback --------------------------------------------------------------------------


def _objects(demo: DemoClusterThread) -> dict[str, list[str]]:
    return {
        kind: sorted(o["metadata"]["name"] for o in demo.store.list(kind))
        for kind in ("clusterpolicies", "nvidiadrivers")
    }


def test_apply_cut_by_dropped_connections_is_all_or_nothing_and_says_which(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        f"version: 1\nmode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: {MIRROR}\n"
        "  useNvidiaDriverCRD: true\n"
    )
    args = ["apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--yes", "--no-wait"]
    faults = demo.faults
    faults.drop_rate, faults.methods, faults.only = 1.0, ["PATCH"], ["/apis/nvidia.com/v1alpha1/nvidiadrivers"]
    faults.when = lambda request: "dryRun" not in request.query  # the preview's dry-run goes through
    faults.drop_after = False  # the NVIDIADriver's apply never reaches the server, twice
    code, _, err = run(capsys, *args, "--backup-dir", str(tmp_path / "cut"))
    assert code == 1 and "rolled back, the cluster is unchanged" in err and "Traceback" not in err
    assert _objects(demo) == {"clusterpolicies": [], "nvidiadrivers": []}  # the ClusterPolicy went back too
    (backup,) = (tmp_path / "cut").iterdir()
    assert private(backup) and f"backup: {backup}" in err

    faults.drop_after = True  # the server acts, the answer is lost: read back as applied
    code, _, err = run(capsys, *args, "--backup-dir", str(tmp_path / "acted"))
    dropped = faults.injected["drop"]
    faults.clear()
    assert dropped == 3  # two cut before the server acted, one after
    assert code == 0 and "applied ClusterPolicy/cluster-policy, NVIDIADriver/default" in err
    assert _objects(demo) == {"clusterpolicies": ["cluster-policy"], "nvidiadrivers": ["default"]}

    (backup,) = (tmp_path / "acted").iterdir()
    code, out, _ = run(capsys, "rollback", "--backup", str(backup), "--kubeconfig", str(demo.kubeconfig_path))
    assert code == 0 and "deleted NVIDIADriver/default (created by the apply)" in out
    assert _objects(demo) == {"clusterpolicies": [], "nvidiadrivers": []}


def _upgrade_existing_install(
    demo: DemoClusterThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, object], Path]:
    """Apply a driver upgrade to ``existing-install-plain`` with the CLI: (the policy before, the backup file)."""
    original = demo.store.get("clusterpolicies", "cluster-policy")
    assert original is not None
    plan = Plan.model_validate(
        {
            "mode": "upstream",
            "operator": {"version": "v26.3.3"},
            "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia"},
        }
    )
    assert original["spec"]["driver"]["version"] != "580.126.20"
    save_answers(tmp_path / "answers.yaml", plan)
    code, _, err = run(
        capsys, "apply", "--answers", str(tmp_path / "answers.yaml"), "--kubeconfig", str(demo.kubeconfig_path),
        "--yes", "--no-wait", "--backup-dir", str(tmp_path / "backups"),
    )  # fmt: skip
    assert code == 0, err
    changed = demo.store.get("clusterpolicies", "cluster-policy")
    assert changed is not None and changed["spec"]["driver"]["version"] == "580.126.20"
    (backup,) = (tmp_path / "backups").iterdir()
    return original, backup


def test_cli_rollback_restores_an_upgraded_policy_exactly(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("existing-install-plain")
    original, backup = _upgrade_existing_install(demo, tmp_path, capsys)
    code, out, err = run(capsys, "rollback", "--backup", str(backup), "--kubeconfig", str(demo.kubeconfig_path))
    assert (code, out) == (0, "restored ClusterPolicy/cluster-policy\n"), err
    restored = demo.store.get("clusterpolicies", "cluster-policy")
    assert restored is not None and clean(restored) == clean(original)


def test_rollback_retries_when_the_operator_updates_the_policy_in_between(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("existing-install-plain")
    original, backup = _upgrade_existing_install(demo, tmp_path, capsys)
    # The first PUT loses the race against a status update (409 Conflict), as on a busy real cluster.
    demo.faults.methods, demo.faults.error_code, demo.faults.budget = ["PUT"], 409, 1
    demo.faults.error_rate = 1.0
    code, out, err = run(capsys, "rollback", "--backup", str(backup), "--kubeconfig", str(demo.kubeconfig_path))
    assert demo.faults.injected["error"] == 1
    assert (code, out) == (0, "restored ClusterPolicy/cluster-policy\n"), err
    restored = demo.store.get("clusterpolicies", "cluster-policy")
    assert restored is not None and clean(restored) == clean(original)
