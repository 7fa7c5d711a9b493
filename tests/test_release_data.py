"""A release is data: every per-release rule lives in ``assets/operator/<release>/release.yaml``.

No code names a release (the scan below), both readers (the engine's ``wizard.engine.releases`` and the
demo's own ``wizard.demo.rules.release_data``) accept every bundled folder, and a folder copied under a
new version, with its rules changed, is followed by render, plan, demo and doctor without a code change.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wizard import bundled
from wizard.demo.rules import release_data as demo_releases
from wizard.engine import releases
from wizard.engine.plan import DEFAULT_RELEASE, KNOWN_RELEASES

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"

#: What names a release in code (the precise rule; docstrings and comments included):
#: - ``vMAJOR.MINOR.PATCH`` with a calendar major (22 and on: the operator's YY.MM.patch releases since
#:   v22.9), which leaves Kubernetes (``v1.31.4``) and the driver manager (``v0.12.0``) alone;
#: - a quoted release line (``"26.7"``: a month without a leading zero, so Ubuntu's ``"22.04"`` is no release),
#:   as a dict key or a comparison would hold it;
#: - a release built from numbers (``Release(26, 7)``, ``at_least(26, 3)``), i.e. a threshold in code.
#: A release line without its patch in prose (``v26.7 adds ol``) is allowed: it explains a rule, it decides nothing.
RELEASE_LITERAL = re.compile(
    r"\bv(?:2[2-9]|[3-9]\d)\.\d+\.\d+\b"
    r"|[\"'](?:2[2-9]|[3-9]\d)\.(?:[1-9]|1[0-2])[\"']"
    r"|\b(?:Release|OperatorRelease|at_least)\(\s*\d+\s*,"
)


def release_literals(roots: tuple[Path, ...]) -> list[str]:
    """``path:line: text`` of every release literal in the ``.py`` files under ``roots``."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if RELEASE_LITERAL.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_no_release_is_named_in_code() -> None:
    found = release_literals((ROOT / "wizard", ROOT / "screens"))
    assert not found, "a release named in code; put the rule in assets/operator/<release>/release.yaml:\n" + "\n".join(
        found
    )


def test_the_scan_sees_what_it_is_for() -> None:
    for literal in ('DEFAULT = "v26.7.0"', "{'25.10': x}", "release >= Release(26, 7)", "r.at_least(26, 3)"):
        assert RELEASE_LITERAL.search(literal), literal
    for allowed in ('kubelet = "v1.31.4"', '"v0.12.0"', "v26.7 adds ol", '"580.126.20"', '"595.91.07"', '{"22.04": x}'):
        assert not RELEASE_LITERAL.search(allowed), allowed


def test_every_bundled_folder_is_a_release_both_readers_accept() -> None:
    folders = sorted(p.name for p in (ASSETS / "operator").iterdir() if p.is_dir())
    assert folders == bundled.operator_bundles()  # every folder carries its release.yaml
    assert list(KNOWN_RELEASES.values()) == sorted(folders, key=releases.Release.parse)
    assert demo_releases.release_lines() == KNOWN_RELEASES == releases.lines()
    for bundle in folders:
        parsed = releases.Release.parse(bundle)
        engine, demo = releases.rules(bundle), demo_releases.data_for(parsed.major, parsed.minor)
        assert (set(engine.osTag.majorOnly), engine.osTag.majorOnlyFrom) == (demo.major_only, demo.major_only_from)
        assert engine.repoConfigDirs == demo.repo_config_dirs and engine.gpuNodeOSInfo == demo.gpu_node_os_info


def test_the_default_release_is_the_newest_bundled() -> None:
    newest = max((p.name for p in (ASSETS / "operator").iterdir() if p.is_dir()), key=releases.Release.parse)
    assert DEFAULT_RELEASE == releases.default_release() == newest


def test_a_bad_release_yaml_is_refused_with_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _assets_with_new_release(tmp_path, "majorOnly: [rhel, rocky, ol]", "majorOnly: [rhel, rocky, ol, '../x']")
    monkeypatch.setenv(bundled.ASSETS_ENV, str(root))
    with pytest.raises(RuntimeError, match=r"v26\.10\.0/release\.yaml"):
        releases.lines()
    with pytest.raises(demo_releases.ReleaseDataError, match=r"v26\.10\.0/release\.yaml osTag\.majorOnly"):
        demo_releases.release_lines()


def _assets_with_new_release(tmp_path: Path, old: str, new: str) -> Path:
    """The bundled assets, plus the newest release copied as ``v26.10.0`` with ``old`` replaced by ``new``."""
    root = tmp_path / "assets"
    shutil.copytree(ASSETS, root, ignore=shutil.ignore_patterns("__pycache__"))
    newest = max(KNOWN_RELEASES.values(), key=releases.Release.parse)
    folder = root / "operator" / "v26.10.0"
    shutil.copytree(root / "operator" / newest, folder)
    text = (folder / "release.yaml").read_text(encoding="utf-8")
    assert text.count(old) == 1
    (folder / "release.yaml").write_text(text.replace(old, new), encoding="utf-8")
    assert bundled.main([str(root)]) == 0  # `make data`: the JSON twin of the changed release.yaml
    return root


#: Runs in a fresh interpreter with GPU_WIZARD_ASSETS set: what each room makes of release v26.10.0.
FOLLOW = r"""
import asyncio, json
from wizard.demo.api.store import Store
from wizard.demo.rules.operator_rules import bundle_of, pool_os_tag, OperatorRelease
from wizard.demo.scenarios.scenario import scenario_from_dict
from wizard.demo.sim.simulation import Simulation
from wizard.engine.facts import facts_from_nodelist
from wizard.engine.hostdoctor import DoctorTarget, HostState, host_findings
from wizard.engine.modes import Mode
from wizard.engine.plan import DEFAULT_RELEASE, Plan
from wizard.engine.render import render

out = {"default": DEFAULT_RELEASE}
node = {"os_id": "sles", "os_version": "15.6", "kernel": "6.4.0-150600.23.25-default",
        "gpu_product": "NVIDIA-H200", "gpu_count": 8}
scenario = scenario_from_dict({"name": "new-release", "nodes": [{**node, "name": "gpu-sles"}]})
out["demo_release"] = scenario.operator.release
store = Store()
sim = Simulation(scenario, store)
sim.seed()
facts = facts_from_nodelist({"kind": "NodeList", "items": store.list("nodes")})
driver = {"version": "595.91.07", "repository": "nvcr.io/nvidia", "image": "driver"}
plan = Plan.model_validate({"version": 1, "mode": "upstream", "operator": {"version": "26.10"}, "driver": driver})
out["plan"] = [plan.operator.version, plan.operator.bundle]
rendered = render(plan, facts)
out["render_images"] = [i.image for i in rendered.node_images]
crd = Plan.model_validate({**plan.answers_dict(), "driver": {**driver, "useNvidiaDriverCRD": True}})
out["slim_driver"] = sorted(render(crd, facts).cluster_policy["spec"]["driver"])
out["demo_bundle"] = bundle_of("v26.10.0")
out["demo_tag"] = pool_os_tag("sles", "15.6", OperatorRelease.parse("v26.10.0"))

async def settle():
    store.create("clusterpolicies", rendered.cluster_policy)
    for _ in range(150):
        if not await sim.tick():
            return
asyncio.run(settle())
out["demo_images"] = sorted(
    c["image"] for ds in store.list("daemonsets", "gpu-operator")
    for c in ds["spec"]["template"]["spec"]["containers"] if "/driver:" in c["image"]
)
host = HostState(node="gpu-sles", os_id="sles", host_driver="620.10.01", nvidia_loaded=True, nouveau=False)
out["doctor"] = {r: [f.check for f in host_findings(DoctorTarget(Mode.PREINSTALLED, release=r), host)]
                 for r in ("v26.10.0", DEFAULT_RELEASE, "v26.7.0")}
print(json.dumps(out))
"""


def test_a_copied_release_folder_is_followed_by_render_plan_demo_and_doctor(tmp_path: Path) -> None:
    root = _assets_with_new_release(tmp_path, "majorOnly: [rhel, rocky, ol]", "majorOnly: [rhel, rocky, ol, sles]")
    text = (root / "operator" / "v26.10.0" / "release.yaml").read_text(encoding="utf-8")
    text = text.replace('branches: ["610", ', 'branches: ["620", "610", ')
    (root / "operator" / "v26.10.0" / "release.yaml").write_text(text, encoding="utf-8")
    assert bundled.main([str(root)]) == 0
    env = {**os.environ, bundled.ASSETS_ENV: str(root)}
    done = subprocess.run(
        [sys.executable, "-c", FOLLOW], env=env, cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["default"] == out["demo_release"] == "v26.10.0"  # the newest folder is the default, in both rooms
    assert out["plan"] == ["v26.10.0", "v26.10.0"]
    # The changed OS tag rule (sles keeps only its major) in the engine's images and in the demo's DaemonSet.
    assert out["render_images"] == ["nvcr.io/nvidia/driver:595.91.07-sles15"]
    assert out["demo_tag"] == "sles15" and out["demo_bundle"] == "v26.10.0"
    assert out["demo_images"] == ["nvcr.io/nvidia/driver:595.91.07-sles15"]
    # The copied chart rule: the ClusterPolicy's driver section is slim in NVIDIADriver mode.
    assert out["slim_driver"] == ["enabled", "hostNetwork", "upgradePolicy", "useNvidiaDriverCRD"]
    # The changed driver branches: 620 is supported by the new release only.
    assert "driver-branch-unsupported" not in out["doctor"]["v26.10.0"]
    assert "driver-branch-unsupported" in out["doctor"]["v26.7.0"]
