"""An answers file that omits the image source gets the nodes' OS's, as the TUI offers it (issue 25).

Precompiled images are per OS: NVIDIA publishes Ubuntu's on nvcr.io, the SLE Micro copies this release
validated live on Docker Hub. ``render``, ``apply``, ``mirror`` and ``doctor --answers`` fill a source the
file leaves out from the GPU nodes they read (a cluster, ``--demo`` or ``--nodes``), by the rule the Driver
step uses (``wizard.engine.defaults.default_source``); where none fits (the nodes not known, no GPU node)
the answer is required, in one line naming the field and what is valid.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from wizard.cli.main import main
from wizard.demo.scenarios.scenario import load_scenario, scenario_names
from wizard.engine.answers import AnswersError, parse_answers

NO_SOURCE = "version: 1\nmode: precompiled\ndriver:\n  version: '580'\n  repository: registry.example.com/mlops\n"
SLE_SOURCE = "docker.io/alaudadockerhub"


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _sle_micro(scenario: str) -> bool | None:
    """Every GPU node of the scenario runs SLE Micro (True), none does (False), or a mix (None)."""
    oses = {
        node.os_id.startswith(("sle-micro", "sl-micro")) for node in load_scenario(scenario).nodes if node.gpu_count
    }
    return oses.pop() if len(oses) == 1 else None


def test_without_the_nodes_a_precompiled_source_is_required_in_one_line() -> None:
    with pytest.raises(AnswersError) as caught:
        parse_answers(NO_SOURCE, "a.yaml")
    [error] = caught.value.errors
    line = error.render("a.yaml")
    assert error.field == "driver.source" and "\n" not in line
    assert "required in precompiled mode" in line and "nvcr.io/nvidia" in line and SLE_SOURCE in line
    plan, _ = parse_answers(NO_SOURCE, tag_oses=["ubuntu22.04"])
    assert (plan.driver.source, plan.driver.image) == ("nvcr.io/nvidia", "driver")
    plan, _ = parse_answers(NO_SOURCE, tag_oses=["sle-micro5.5"])
    assert (plan.driver.source, plan.driver.image) == (SLE_SOURCE, "nvidia-driver")
    with pytest.raises(AnswersError, match=r"driver\.source: required in precompiled mode: no GPU node"):
        parse_answers(NO_SOURCE, tag_oses=[])


@pytest.mark.parametrize("scenario", [name for name in scenario_names() if name != "large"])
def test_render_takes_the_source_from_the_scenarios_nodes(tmp_path: Path, scenario: str) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text(NO_SOURCE)
    code, out, err = _cli("render", "--demo", scenario, "--answers", str(answers), "-o", "mirror")
    assert code == (1 if scenario == "missing-tuple" else 0), err  # issue 35: an unpublished tuple fails the check
    sle = _sle_micro(scenario)
    if sle is False:  # Ubuntu, RHEL, Rocky: never the SLE Micro copies
        assert SLE_SOURCE not in out and "docker://nvcr.io/nvidia/driver:" in out, out
    elif sle:
        assert f"docker://{SLE_SOURCE}/nvidia-driver:" in out, out


def test_render_with_a_nodelist_of_no_gpu_node_says_the_source_is_required(tmp_path: Path) -> None:
    answers, nodes = tmp_path / "answers.yaml", tmp_path / "nodes.json"
    answers.write_text(NO_SOURCE)
    nodes.write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    code, out, err = _cli("render", "--nodes", str(nodes), "--answers", str(answers))
    assert code == 2 and not out
    assert err.strip().splitlines() == [
        f"gpu-wizard: error: {answers}: driver.source: required in precompiled mode: no GPU node was found to take "
        "its OS's images from; give the registry the images are copied from: nvcr.io/nvidia (NVIDIA's, Ubuntu) or "
        f"{SLE_SOURCE} (SLE Micro)"
    ]
