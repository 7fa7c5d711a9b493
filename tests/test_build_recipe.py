"""The build recipe for a kernel with no precompiled image (issue 35, item 5), against NVIDIA's driver container.

The oracle is NVIDIA's gpu-driver-container repository at the commit ``assets/driver-container/precompiled.yaml``
names: its Makefile's precompiled rules (a pinned excerpt, run with ``make -n``: the real rule decides the
``--tag`` and the ``--build-arg``s from the recipe's make arguments) and its CI matrix (pinned). ``check-kernel``
is then run on the demo's Ubuntu cluster (kernel-drift) and on the SLE Micro one (missing-tuple).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from wizard.cli.main import main
from wizard.engine.build_recipe import driver_container, recipe_for, recipe_lines
from wizard.engine.naming import image_tag, precompiled_image

GOLDEN = Path(__file__).parent / "golden"
EXCERPT = GOLDEN / "gpu-driver-container.Makefile.excerpt"
MATRIX = GOLDEN / "gpu-driver-container.precompiled-matrix-config.json"
UPSTREAM = Path("/work/.mirror/NVIDIA+gpu-driver-container/repo")
"""A fetched mirror of the repository, where one exists (to check the pinned files against it)."""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def make_dry_run(argv: list[str], folder: Path) -> dict[str, str]:
    """``make -n`` on the pinned Makefile excerpt: the docker build's tag, Dockerfile and build arguments."""
    assert argv[0] == "make"
    assert shutil.which("make"), "make is needed to run NVIDIA's Makefile rule"
    done = subprocess.run(
        ["make", "-n", "-f", str(EXCERPT), *argv[1:]], cwd=folder, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    words = shlex.split(done.stdout.replace("\\\n", " "))
    found = {"tag": words[words.index("--tag") + 1], "file": words[words.index("--file") + 1]}
    for number, word in enumerate(words):
        if word == "--build-arg":
            key, _, value = words[number + 1].partition("=")
            found[key] = value
    return found


CASES = [
    # (repository, plan version, kernel, OS tag, version hint)
    ("registry.example.com/nvidia", "580.126.20", "5.15.0-1063-nvidia", "ubuntu22.04", ""),
    ("registry.example.com/nvidia", "580", "5.15.0-1063-nvidia", "ubuntu22.04", "580.126.20"),
    ("harbor.corp.example/gpu", "595", "6.8.0-1015-azure-fde", "ubuntu24.04", ""),
    ("registry.example.com/nvidia", "595.71.05", "7.0.0-1004-generic", "ubuntu26.04", ""),
]


@pytest.mark.parametrize(("repository", "version", "kernel", "tag_os", "hint"), CASES)
def test_recipe_inputs_and_tag_are_what_the_driver_containers_make_rule_builds(
    tmp_path: Path, repository: str, version: str, kernel: str, tag_os: str, hint: str
) -> None:
    recipe = recipe_for(repository, "driver", version, kernel, tag_os, version_hint=hint)
    assert recipe is not None
    line = next(text.strip() for text in recipe_lines(recipe) if text.strip().startswith("make "))
    built = make_dry_run(shlex.split(line), tmp_path)
    # the tag NVIDIA's rule gives the image is the one the recipe says to push ...
    assert built["tag"] == recipe.image
    # ... and the one the operator composes for a node on this kernel with driver.version = the branch
    assert image_tag(recipe.image) == image_tag(precompiled_image(repository, "driver", recipe.branch, kernel, tag_os))
    assert built["KERNEL_VERSION"] == kernel and built["DRIVER_BRANCH"] == version.split(".")[0]
    assert built["DRIVER_VERSION"] == (recipe.driver_version or "DRIVER_VERSION")
    assert recipe.driver_version == (version if "." in version else hint)
    assert built["file"].endswith(f"/{tag_os}/precompiled/Dockerfile")
    assert f"docker push {recipe.image}" in "\n".join(recipe_lines(recipe))


def test_nvidias_registry_is_never_the_push_target(tmp_path: Path) -> None:
    recipe = recipe_for("nvcr.io/nvidia", "driver", "580", "5.15.0-1063-nvidia", "ubuntu22.04")
    assert recipe is not None and recipe.image == "REGISTRY/driver:580-5.15.0-1063-nvidia-ubuntu22.04"
    assert any("nvcr.io/nvidia is not yours to push to" in note for note in recipe.notes)


@pytest.mark.parametrize(
    ("kernel", "tag_os"),
    [
        ("5.14.21-150500.55.171-default", "sle-micro5.5"),
        ("5.14.0-427.13.1.el9_4.x86_64", "rhel9.4"),
        ("x", "ubuntu22.04"),
    ],
)
def test_no_recipe_where_the_driver_container_builds_none(kernel: str, tag_os: str) -> None:
    assert recipe_for("registry.example.com/nvidia", "driver", "580", kernel, tag_os) is None


def test_recorded_facts_are_the_pinned_ci_matrix() -> None:
    """What NVIDIA's CI builds per OS (branches, kernel line, flavours) is the matrix minus its exclusions."""
    matrix = json.loads(MATRIX.read_text())
    excluded = matrix["exclude_precompiled_build_matrix"]

    def allowed(**cell: str) -> bool:
        return not any(all(cell.get(k) == v for k, v in rule.items()) for rule in excluded)

    facts = driver_container()
    assert sorted(facts.oses) == sorted(matrix["dist"])
    for dist, build in facts.oses.items():
        lts = [k for k in matrix["lts_kernel"] if allowed(dist=dist, lts_kernel=k)]
        assert list(build.lts_kernels) == lts, dist
        assert list(build.ci_branches) == [b for b in matrix["driver_branch"] if allowed(dist=dist, driver_branch=b)]
        assert list(build.ci_flavors) == [f for f in matrix["kernel_flavors"] if allowed(dist=dist, flavor=f)]
    assert facts.commit in EXCERPT.read_text()


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="no fetched mirror of NVIDIA/gpu-driver-container here")
def test_the_pinned_files_are_the_upstream_repositorys() -> None:
    def show(path: str) -> str:
        git = ["git", "--git-dir", str(UPSTREAM), "show", f"{driver_container().commit}:{path}"]
        return subprocess.run(git, capture_output=True, text=True, check=True).stdout

    makefile = show("Makefile").splitlines()
    for line in EXCERPT.read_text().splitlines():
        if (
            line
            and not line.startswith("# Pinned")
            and not line.startswith("# (Apache")
            and line
            not in (
                "# verbatim and in order, so that tests/test_build_recipe.py can run `make -n` on them; versions.mk and the",
                "# multi-arch/native includes are left out (DRIVER_VERSIONS comes from the command line, as in NVIDIA's CI).",
            )
        ):
            assert line in makefile, line
    assert json.loads(show(".github/precompiled-matrix-config.json")) == json.loads(MATRIX.read_text())


# -- check-kernel on the demo clusters -------------------------------------------------------------


def test_check_kernel_on_ubuntu_prints_the_build_recipe_of_the_driver_container(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    kernel = "5.15.0-1063-nvidia"
    code, out, _ = run(capsys, "check-kernel", kernel, "--demo", "kernel-drift")
    assert code == 1, out
    assert "GPU model: NVIDIA-H100-80GB-HBM3 (read from gpu-h100-03" in out
    assert "Build recipe: NVIDIA's driver container builds precompiled ubuntu22.04 images" in out
    make = next(line.strip() for line in out.splitlines() if line.strip().startswith("make "))
    built = make_dry_run(shlex.split(make), tmp_path)
    pushed = re.search(r"docker push (\S+)", out)
    assert pushed and built["tag"] == pushed[1] == "REGISTRY/driver:580-5.15.0-1063-nvidia-ubuntu22.04"
    assert built["KERNEL_VERSION"] == kernel and built["DRIVER_BRANCH"] == "580"
    assert "Node:                 gpu-h100-03" in out and "Subject: precompiled NVIDIA driver image wanted" in out


def test_check_kernel_without_a_policy_reads_the_gpu_model_from_the_node_on_that_kernel(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "check-kernel", "5.14.21-150500.55.171-default", "--demo", "missing-tuple")
    assert code == 1, err
    assert "plan: the defaults for these nodes" in err
    assert "GPU model: NVIDIA-H200 (read from gpu-b-01" in out
    assert "Node:                 gpu-b-01" in out and "GPU model:            NVIDIA-H200" in out
    assert "(after the OS update)" not in out and "unknown (no nvidia.com/gpu.product label)" not in out
    assert "Build recipe" not in out and "send this request to the image's vendor" in out


# -- render, the mirror plan and doctor on an unpublished tuple (missing-tuple) ----------------------

SLE_ANSWERS = "assets/examples/sle-micro-precompiled.answers.yaml"
NEW_KERNEL = "5.14.21-150500.55.171-default"


def test_render_says_the_tuple_is_unpublished_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "render", "--answers", SLE_ANSWERS, "--demo", "missing-tuple", "-o", "images")
    assert code == 1 and f"-{NEW_KERNEL}-sle-micro5.5" in out  # rendered all the same
    assert f"No published precompiled driver 580.126.09.1 is known for kernel {NEW_KERNEL}" in err
    assert f"gpu-wizard check-kernel {NEW_KERNEL}" in err
    code, _, err = run(capsys, "render", "--answers", SLE_ANSWERS, "--demo", "sle-micro-precompiled")
    assert code == 0 and "No published" not in err  # a validated tuple: nothing said


def test_the_mirror_plan_copies_nothing_no_source_holds(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "render", "--answers", SLE_ANSWERS, "--demo", "missing-tuple", "-o", "mirror")
    commands = [line for line in out.splitlines() if line.startswith("skopeo ")]
    assert code == 1 and commands and all(NEW_KERNEL not in line for line in commands), commands
    assert any("150500.55.166-default" in line for line in commands)  # the published one is still copied
    assert f"# a way forward (build recipe or vendor request): gpu-wizard check-kernel {NEW_KERNEL}" in out
    code, out, err = run(capsys, "mirror", "--answers", SLE_ANSWERS, "--demo", "missing-tuple")
    assert code == 0 and all(NEW_KERNEL not in line for line in out.splitlines() if line.startswith("skopeo "))
    assert f"warning: No published precompiled driver 580.126.09.1 is known for kernel {NEW_KERNEL}" in err


def test_doctor_never_says_mirror_for_an_image_no_source_holds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n"
        "  image: nvidia-driver\n  source: docker.io/alaudadockerhub\ntoolkit:\n  installDir: /run/nvidia/toolkit\n",
        encoding="utf-8",
    )
    code = main(["doctor", "--demo", "missing-tuple", "--answers", str(answers), "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    images = [f for f in doc["findings"] if f["check"] == "driver-image" and f["status"] == "fail"]
    assert code == 1 and [f["nodes"] for f in images] == [["gpu-b-01"]], images
    assert "mirror" not in images[0]["fix"] and "push" not in images[0]["fix"]
    assert f"gpu-wizard check-kernel {NEW_KERNEL}" in images[0]["fix"] and "unpublished" in images[0]["message"]
