"""The missing-package-source fix offers precompiled only where the pull registry can serve it (issue 35's walk,
kubeadm-rhel8-airgap).

The lab's registry holds no precompiled image for the RHEL 8.10 kernels, yet the finding ended "…; or use mode:
precompiled" on every node: a way out that fails with ImagePullBackOff. While the registry lacks the kernel's tag, the
fix names the tag to push or mirror before precompiled can work.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.cli.main import main
from wizard.engine.hostdoctor import DoctorTarget, HostState, host_findings
from wizard.engine.modes import Mode

KERNEL = "4.18.0-553.22.1.el8_10.x86_64"
STATE = HostState("gpu-l40s-01", os_id="rhel", kernel=KERNEL, headers=False, package_source=False)


def _fix(target: DoctorTarget) -> str:
    (check,) = [c for c in host_findings(target, STATE) if c.check == "no-package-source"]
    return check.hint


def test_precompiled_is_not_offered_while_the_registry_lacks_the_kernels_tag() -> None:
    missing = f"595-{KERNEL}-rhel8"
    target = DoctorTarget(
        Mode.UPSTREAM, release="v26.7.0", precompiled_missing=(missing,), precompiled_from="registry.lab.example/nvidia"
    )
    fix = _fix(target)
    assert "or use mode: precompiled" not in fix, fix
    assert "driver.repoConfig.configMapName: repo-config" in fix
    assert f"or push or mirror {missing} to registry.lab.example/nvidia, then use mode: precompiled" in fix


def test_precompiled_stays_offered_when_the_registry_was_not_listed_or_holds_it() -> None:
    assert _fix(DoctorTarget(Mode.UPSTREAM, release="v26.7.0")).endswith("or use mode: precompiled")
    other_kernel = DoctorTarget(
        Mode.UPSTREAM, release="v26.7.0", precompiled_missing=("595-4.18.0-553.16.1.el8_10.x86_64-rhel8",)
    )
    assert _fix(other_kernel).endswith("or use mode: precompiled")


ANSWERS = """version: 1
mode: upstream
operator: {version: v26.7.0, namespace: gpu-operator}
driver: {source: nvcr.io/nvidia, image: driver, operandRegistry: registry.lab.example,
  repository: registry.lab.example/nvidia, version: 595.91.07}
"""


def test_apply_names_the_lacking_tag_instead_of_precompiled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``apply --dry-run``'s host gate lists the registry's tags for this finding too, not only for Secure Boot."""
    answers = tmp_path / "answers.yaml"
    answers.write_text(ANSWERS)
    code = main(["apply", "--demo", "kubeadm-rhel8-airgap", "--answers", str(answers), "--dry-run"])
    out = "".join(capsys.readouterr())
    assert code != 0 and "no-package-source on 1 node (gpu-l40s-01)" in out, out
    assert "or use mode: precompiled" not in out, out
    assert (
        f"or push or mirror 595-{KERNEL}-rhel8 to registry.lab.example/nvidia/driver, then use mode: precompiled" in out
    ), out
