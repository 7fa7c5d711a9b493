"""Generated scripts cannot be escaped: hostile node facts and answers, checked as text, never executed.

A property test feeds NodeLists (through the file loader and, as a live cluster would, straight to
the renderer) and answers full of newlines, carriage returns, escape sequences, quotes, ``$()``,
backticks, ``;`` and unicode line breaks. Every output is either refused with one clean line, or
safe: each line of the mirror script is a comment or one command in canonical ``shlex`` quoting
whose argv[0] is ``skopeo``, ``docker`` or ``set``, and no control character appears anywhere.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.hostile.case import write_files
from tests.helpers.hostile.cases_nodes import CASES, PRECOMPILED, UPSTREAM_AIRGAPPED, node, sle_node
from tests.helpers.plans import answers_plan, plan_or_refusal
from wizard.cli import main as cli
from wizard.engine.answers import AnswersError
from wizard.engine.facts import ClusterFacts, facts_from_nodelist, node_facts
from wizard.engine.node_grammar import NodeFactsError
from wizard.engine.plan import Plan
from wizard.engine.render import helm_yaml, images_table, mirror_script, render
from wizard.engine.textsafe import has_unsafe, printable, shell_command

COMMANDS = {"skopeo", "docker", "set"}
HOSTILE_ATOMS = [
    "gpu", "a", "1", "-", ".", "_", "/", "../", " ", "\n", "\r", "\t", "\x00", "\x7f", "\x1b[2K", "\x1b]0;x\x07",
    "\x9b", "\u0085", "\u2028", "\u2029", "\u202e", "'", '"', "\\", "$(id)", "`id`", ";", "&&", "|", ">", "#",
    "\uff11", "\u0661", "é", "touch /tmp/pwned",
]  # fmt: skip
hostile_text = st.lists(st.sampled_from(HOSTILE_ATOMS), min_size=1, max_size=6).map("".join)
maybe_hostile = st.one_of(hostile_text, st.sampled_from(["5.15.0-1048-nvidia", "ubuntu", "22.04", "gpu-1"]))


def assert_safe_script(script: str) -> None:
    """Every line a comment or one canonical command of an allowed program; no control character at all."""
    assert not has_unsafe(script.replace("\n", "")), repr(script)
    for line in script.split("\n"):
        if not line or line.startswith("#"):
            continue
        argv = shlex.split(line, comments=True)
        # canonical quoting: everything but [A-Za-z0-9@%+=:,./-] is single-quoted, so no expansion,
        # no operator, no second command can hide in the line
        assert shlex.join(argv) == line, line
        assert argv[0] in COMMANDS, line


def assert_safe_output(text: str) -> None:
    assert not has_unsafe(text.replace("\n", "").replace("\t", "")), repr(text)


def _check_render(plan: Plan, facts: ClusterFacts) -> None:
    try:
        rendered = render(plan, facts)
    except NodeFactsError as exc:
        assert "\n" not in str(exc) and not has_unsafe(str(exc))
        return
    assert_safe_script(mirror_script(rendered.mirror))
    assert_safe_output(images_table(rendered.node_images))
    assert_safe_output(helm_yaml(rendered))
    for entry in rendered.node_images:
        assert not entry.image.endswith("-unknown") and "--" not in entry.image.rpartition(":")[2]


hostile_nodes = st.lists(
    st.builds(
        lambda name, kernel, os_id, os_version, info_kernel, os_image: node(
            name, kernel=kernel, os_id=os_id, os_version=os_version, info_kernel=info_kernel, os_image=os_image
        ),
        maybe_hostile,
        st.none() | maybe_hostile,
        st.none() | maybe_hostile,
        st.none() | maybe_hostile,
        maybe_hostile,
        maybe_hostile,
    ),
    min_size=1,
    max_size=3,
)
PLANS = [
    p
    for p in (
        answers_plan(UPSTREAM_AIRGAPPED),
        answers_plan(PRECOMPILED),
        answers_plan(PRECOMPILED, useNvidiaDriverCRD=True),
    )
    if p
]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_nodes, st.sampled_from(PLANS))
def test_hostile_nodelists_are_refused_or_render_safe_scripts(nodes: list[dict[str, Any]], plan: Plan) -> None:
    try:
        facts = facts_from_nodelist({"kind": "NodeList", "items": nodes})
    except ValueError as exc:  # the file loader: one clean line naming the item
        assert "\n" not in str(exc) and not has_unsafe(str(exc))
    else:
        _check_render(plan, facts)
    # a live cluster's discovery builds facts without the file loader: the renderer still refuses or is safe
    _check_render(plan, ClusterFacts([node_facts(n) for n in nodes]))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([UPSTREAM_AIRGAPPED, PRECOMPILED]),
    st.sampled_from(["repository", "source", "image", "version"]),
    hostile_text,
)
def test_hostile_answers_are_refused_or_render_safe_scripts(base: str, field: str, value: str) -> None:
    plan = plan_or_refusal(base, **{field: value})
    if isinstance(plan, AnswersError):  # refused: each line names the field, with nothing a terminal acts on
        text = str(plan)
        assert any(line.startswith(f"driver.{field}: ") for line in text.split("\n")), text
        assert len(text.split("\n")) == len(plan.errors) and not has_unsafe(text.replace("\n", "")), repr(text)
        return
    facts = facts_from_nodelist({"kind": "NodeList", "items": [node("gpu-0"), sle_node("gpu-1")]})
    _check_render(plan, facts)


def test_a_script_from_unchecked_names_still_cannot_be_escaped() -> None:
    """Defence in depth: even facts that skipped every check cannot end a comment or a command line."""
    plan = answers_plan(UPSTREAM_AIRGAPPED)
    assert plan is not None
    facts = ClusterFacts([node_facts(node("gpu-0"))])
    rendered = render(plan, facts)
    item = rendered.mirror[0]
    hostile = type(item)(
        source=item.source + "\ntouch x",
        target=item.target,
        nodes=("gpu-0", "gpu-1\ntouch /tmp/pwned #", "\r\x1b[2K"),
        commands=(*item.commands, ("docker", "pull", "a\nb'$(id)")),
    )
    script = mirror_script([hostile])
    assert_safe_script(script)
    assert "\ntouch" not in script


def test_printable_escapes_every_control_character_visibly() -> None:
    assert printable("a\nb\r\x1b[2K\x00\x7f\x85\u2028\u202e") == "a\\x0ab\\x0d\\x1b[2K\\x00\\x7f\\x85\\u2028\\u202e"
    assert printable("line\n\tnext\x1b", keep="\n\t") == "line\n\tnext\\x1b"
    assert printable("plain ünïcode １") == "plain ünïcode １"
    assert shell_command(["kubectl", "get", "cm", "-n", "ns\nrm -rf /", "$(id)"]).count("\n") == 0


def test_printed_preflight_hints_are_single_quoted_lines() -> None:
    from wizard.cluster.core.preflight import install_hint

    hint = install_hint("v26.7.0\n$(id)")
    assert "\n" not in hint and "v26.7.0\\x0a$(id)" in hint


def test_cli_output_passes_the_control_character_guard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["render", "--answers", str(tmp_path / "x\x1b[2K\u2028.yaml"), "--nodes", "n.json"])
    err = capsys.readouterr().err
    assert code == 2 and "\\x1b[2K\\u2028" in err and not has_unsafe(err.replace("\n", ""))


def _run_case(case: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    write_files(tmp_path, case.files)
    argv = [a.replace("{dir}", str(tmp_path)) for a in case.argv]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_node_case(case: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The catalogue's node cases, in-process (the catalogue runner runs them as subprocesses)."""
    code, out, err = _run_case(case, tmp_path, capsys)
    assert code == case.expect_exit, err
    for text in case.stderr_has:
        assert text in err, (text, err)
    for text in case.stdout_has:
        assert text in out, (text, out)
    for text in case.stdout_lacks:
        assert text not in out, (text, out)
    assert "Traceback" not in err
    assert not has_unsafe((out + err).replace("\n", "").replace("\t", ""))
    if case.argv[-1] == "mirror" and code == 0:
        assert_safe_script(out)
    if code == 2:
        assert err.count("\n") == 1, err


def test_live_cluster_node_with_hostile_kernel_is_refused_before_planning(
    demo_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kubelet's nodeInfo is free text on a real API server too: render from the cluster names the node."""
    scenario = tmp_path / "hostile.yaml"
    scenario.write_text(
        "name: hostile-kernel\nnodes:\n  - name: gpu-0\n    os_id: sle-micro\n    os_version: '5.5'\n"
        '    kernel: "5.14.21-default\\ntouch /tmp/pwned #"\n    gpu_product: NVIDIA-H200\n    gpu_count: 1\n'
        "    nfd: false\n    labels: {nvidia.com/gpu.present: 'true'}\n"
    )
    from wizard.demo.scenarios.scenario import load_scenario

    demo = demo_cluster(load_scenario(str(scenario)))
    answers = tmp_path / "answers.yaml"
    answers.write_text(PRECOMPILED)
    argv = ["render", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "-o", "mirror"]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and "touch" not in out
    assert "gpu-wizard: error: node 'gpu-0': status.nodeInfo.kernelVersion '5.14.21-default\\x0atouch" in err


def test_demo_refuses_labels_a_real_api_server_would_refuse(tmp_path: Path) -> None:
    from wizard.demo.scenarios.scenario import ScenarioError, load_scenario

    scenario = tmp_path / "bad-label.yaml"
    scenario.write_text(
        "name: bad-label\nnodes:\n  - name: gpu-0\n    os_id: ubuntu\n    os_version: '22.04'\n"
        "    kernel: '5.15.0;touch x'\n    gpu_product: NVIDIA-H200\n    gpu_count: 1\n"
    )
    with pytest.raises(ScenarioError, match=r"nodes\[0\]\.kernel: .* is not a label value"):
        load_scenario(str(scenario))


def test_node_output_cannot_forge_a_step_marker() -> None:
    """A drop-in file printing a marker-like line does not end its step or forge the next step's status."""
    from wizard.engine.nodescript import MARK, Step, StepSplitter, script

    steps = [Step("drop-in", ("grep", "BinaryName", "/etc/x; rm -rf /")), Step("nvidia-smi", ("nvidia-smi",))]
    text = script(steps, "/host")
    assert text.count("\n") == 0 and "'/etc/x; rm -rf /'" in text
    splitter = StepSplitter(steps, lambda stream, line: None)
    for line in ["BinaryName = x", "@@gpu-wizard:0", f"{MARK[:-3]}:0", f"{MARK}1", "NVIDIA-SMI failed", f"{MARK}9"]:
        splitter.feed("stdout", line)
    first, second = splitter.results()
    assert first.exit_code == 1 and "@@gpu-wizard:0" in first.output
    assert second == type(second)("NVIDIA-SMI failed", 9)


def test_kubelet_free_text_is_kept_printable_in_the_facts() -> None:
    facts = node_facts(
        {
            "metadata": {"name": "gpu-0"},
            "status": {"nodeInfo": {"osImage": "Ubuntu\x1b[2K", "containerRuntimeVersion": "c\r"}},
        }
    )
    assert (facts.os_image, facts.container_runtime) == ("Ubuntu\\x1b[2K", "c\\x0d")
