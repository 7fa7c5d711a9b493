"""The container runtime flavour: detection from node facts, the toolkit env it renders, answers overrides."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.helpers.chart_parity import case_differences
from tests.helpers.render_cases import RKE2, SLE_KERNEL, facts, node
from wizard.engine.answers import dump_answers, example_answers, parse_answers
from wizard.engine.plan import Plan
from wizard.engine.render import owned_paths, render
from wizard.engine.runtime import (
    DEFAULT_CONTAINERD_DROP_IN,
    detect,
    drop_in_path,
    runtime_choice,
)
from wizard.engine.textsafe import has_unsafe

PRECOMPILED = {"mode": "precompiled", "driver": {"version": "580", "repository": "registry.example.com/mlops"}}
RKE2_DIR = "/var/lib/rancher/rke2/agent/etc/containerd"


def plan(**toolkit: Any) -> Plan:
    return Plan.model_validate({**PRECOMPILED, "toolkit": toolkit} if toolkit else PRECOMPILED)


def one(kubelet: str = "v1.31.4", runtime: str = "containerd://1.7.23", **labels: str) -> Any:
    return facts(node("gpu-0", extra_labels=labels, kubelet=kubelet, runtime=runtime)).nodes[0]


@pytest.mark.parametrize(
    ("kubelet", "runtime", "labels", "flavour", "major"),
    [
        ("v1.31.4", "containerd://1.7.23", {}, "containerd", 1),
        ("v1.33.1", "containerd://2.0.5", {}, "containerd", 2),
        ("v1.31.4", "cri-o://1.30.4", {}, "cri-o", 0),
        ("v1.31.4+rke2r1", "containerd://1.7.23-k3s2", {}, "rke2", 1),
        ("v1.33.4+rke2r1", "containerd://2.0.5-k3s1", {}, "rke2", 2),
        ("v1.32.3+k3s1", "containerd://1.7.26-k3s1", {}, "k3s", 1),
        ("v1.31.2+k0s", "containerd://1.7.22", {}, "k0s", 1),
        ("v1.31.4", "containerd://1.6.28", {"microk8s.io/cluster": "true"}, "microk8s", 1),
        ("v1.31.4", "containerd://1.7.23", {"node.kubernetes.io/instance-type": "rke2"}, "rke2", 1),
        ("v1.31.4", "containerd://1.7.23", {"node.k0sproject.io/role": "worker"}, "k0s", 1),
        ("v1.31.4", "containerd://1.7.23-k3s1", {}, "k3s", 1),  # k3s's containerd build, nothing else said
        # cri-o is the runtime even where the kubelet is RKE2's: the runtime decides the toolkit's settings
        ("v1.31.4+rke2r1", "cri-o://1.30.4", {}, "cri-o", 0),
        ("v1.31.4", "", {}, "unknown", 0),
        # hostile strings: never matched loosely, never shown raw
        ("v1.31.4+rke2r1\x1b[31m", "containerd://1.7.23", {}, "containerd", 1),
        ("v1.31.4+rke2r1\n", "containerd://1.7.23", {}, "containerd", 1),
        ("v1.31.4", "containerd://1.7.23\x1b]0;pwned\x07", {}, "unknown", 0),
        ("x" * 5000 + "+rke2", "containerd://1.7.23", {}, "containerd", 1),
    ],
)
def test_detection_table(kubelet: str, runtime: str, labels: dict[str, str], flavour: str, major: int) -> None:
    found = detect(one(kubelet, runtime, **labels))
    assert (found.flavour, found.containerd_major) == (flavour, major)
    assert not has_unsafe(found.evidence) and len(found.evidence) < 120


def test_a_label_value_is_matched_exactly() -> None:
    hostile = dataclasses.replace(one(), labels={"node.kubernetes.io/instance-type": "rke2\u202e"})
    assert detect(hostile).flavour == "containerd"
    sneaky = dataclasses.replace(one(), labels={"x.example.com/rke2.io/": "1", "rke2.io/\x1b[2J": "1"})
    found = detect(sneaky)
    assert found.flavour == "rke2" and not has_unsafe(found.evidence)


def test_annotations_a_distribution_writes_name_it() -> None:
    raw = node("gpu-0", kubelet="v1.31.4", runtime="containerd://1.7.23")
    raw["metadata"]["annotations"] |= {"rke2.io/node-args": "[]", "unrelated.example.com/x": "y" * 10_000}
    found = facts(raw).nodes[0]
    assert list(found.annotations) == ["rke2.io/node-args"]
    assert detect(found).flavour == "rke2"


def test_rke2_renders_the_documented_settings_into_policy_patch_and_helm_values() -> None:
    nodes = facts(*(node(f"gpu-{i}", "sle-micro", "5.5", SLE_KERNEL, **RKE2) for i in range(2)))
    result = render(plan(), nodes)
    env = {e["name"]: e["value"] for e in result.cluster_policy["spec"]["toolkit"]["env"]}
    assert env == {
        "CONTAINERD_CONFIG": f"{RKE2_DIR}/config.toml",
        "CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock",
        "RUNTIME_CONFIG_SOURCE": f"file={RKE2_DIR}/config.toml",
        "RUNTIME_DROP_IN_CONFIG": f"{RKE2_DIR}/config-v3.toml.d/99-nvidia.toml",  # containerd 2.x
    }
    assert result.helm_values["toolkit"]["env"] == result.cluster_policy["spec"]["toolkit"]["env"]
    assert ("toolkit", "env") in owned_paths(result.plan, result.toolkit_env)
    assert result.runtime is not None and result.runtime.drop_in == f"{RKE2_DIR}/config-v3.toml.d/99-nvidia.toml"
    assert result.runtime.summary().startswith("RKE2 (containerd at /run/k3s/containerd/containerd.sock) → toolkit env")
    assert not [a for a in result.advice if a.code.startswith("runtime")]


def test_plain_containerd_adds_nothing() -> None:
    result = render(plan(), facts(node("gpu-0")))
    assert "env" not in result.cluster_policy["spec"]["toolkit"]
    assert "toolkit" not in result.helm_values
    assert ("toolkit", "env") not in owned_paths(result.plan, result.toolkit_env)


def test_the_chart_renders_the_same_toolkit_env() -> None:
    # every release is compared in tests/test_chart_parity.py (same cases, rendered once per process)
    for release in ("v26.7.0",):
        for case in ("precompiled-rke2", "upstream-answers-env"):
            problems, _ = case_differences(release, case)
            assert problems == (), (release, case)


def test_answers_env_wins_and_is_validated() -> None:
    nodes = facts(node("gpu-0", **RKE2))
    mine = {"CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock"}
    choice = runtime_choice(plan(env=mine), nodes)
    assert (choice.env, choice.source) == (mine, "answers")
    assert [a.code for a in render(plan(env=mine), nodes).advice if a.code.startswith("runtime")] == ["runtime-mixed"]
    assert runtime_choice(plan(env={}), nodes).env == {}  # explicitly nothing
    assert "env" not in plan().answers_dict()["toolkit"] and "runtime" not in plan().answers_dict()["toolkit"]
    assert plan(env=mine).answers_dict()["toolkit"]["env"] == mine
    for bad, word in [
        ({"bad-name": "x"}, "not a variable name"),
        ({"9LIVES": "x"}, "not a variable name"),
        ({"A": "one\ntwo"}, "one line"),
        ({"A": "esc\x1b[2J"}, "one line"),
        ({"CONTAINERD_SOCKET": "run/k3s.sock"}, "absolute"),
        ({"RUNTIME_DROP_IN_CONFIG": "/etc/../x.toml"}, "normalised"),
        ({"RUNTIME_CONFIG_SOURCE": "file=relative"}, "absolute"),
        ({"RUNTIME_CONFIG_SOURCE": "http"}, "command, file or file="),
        ({f"V{i}": "x" for i in range(33)}, "at most 32"),
    ]:
        with pytest.raises(ValueError, match=word):
            plan(env=bad)


def test_answers_can_name_the_flavour() -> None:
    nodes = facts(node("gpu-0", runtime="containerd://2.1.1"))  # nothing on the node says k3s
    choice = runtime_choice(plan(runtime="k3s"), nodes)
    assert choice.source == "toolkit.runtime"
    assert choice.env["RUNTIME_DROP_IN_CONFIG"].endswith("/k3s/agent/etc/containerd/config-v3.toml.d/99-nvidia.toml")
    assert choice.misfits == ()  # plain containerd strings may be a k3s the facts do not tell: the answers decide
    assert runtime_choice(plan(runtime="k3s"), facts(node("gpu-0", **RKE2))).misfits == (("gpu-0", "rke2"),)
    assert plan(runtime="k3s").answers_dict()["toolkit"]["runtime"] == "k3s"
    with pytest.raises(ValueError, match="valid: auto, containerd, cri-o, rke2, k3s, k0s, microk8s"):
        plan(runtime="docker")


def test_a_mixed_cluster_is_a_finding() -> None:
    nodes = facts(
        node("rke-0", **RKE2), node("rke-1", **RKE2), node("plain-0"), node("cp", gpu="", kubelet="v1.30+k3s1")
    )
    choice = runtime_choice(plan(), nodes)
    assert choice.flavour == "rke2" and choice.misfits == (("plain-0", "containerd"),)
    [advice] = [a for a in render(plan(), nodes).advice if a.code == "runtime-mixed"]
    assert "'plain-0'" in advice.message and "containerd" in advice.message


def test_containerd_1_and_2_need_different_drop_in_folders() -> None:
    nodes = facts(node("a", **RKE2), node("b", kubelet="v1.31.4+rke2r1", runtime="containerd://1.7.23-k3s2"))
    assert len(runtime_choice(plan(), nodes).misfits) == 1


def test_drop_in_path_follows_the_operator() -> None:
    assert drop_in_path({}) == DEFAULT_CONTAINERD_DROP_IN
    assert drop_in_path({}, "cri-o") == "/etc/crio/crio.conf.d/99-nvidia.conf"
    assert drop_in_path({"RUNTIME_DROP_IN_CONFIG": "/etc/k0s/containerd.d/nvidia.toml"}) == (
        "/etc/k0s/containerd.d/nvidia.toml"
    )
    assert drop_in_path({"RUNTIME_DROP_IN_CONFIG": "relative.toml"}) == DEFAULT_CONTAINERD_DROP_IN
    assert drop_in_path({"RUNTIME_DROP_IN_CONFIG": "/x\n/y"}) == DEFAULT_CONTAINERD_DROP_IN


def test_answers_file_round_trips_the_toolkit_env() -> None:
    text = (
        "version: 1\nmode: preinstalled\ntoolkit:\n  runtime: k0s\n  env:\n"
        "    CONTAINERD_SOCKET: /run/k0s/containerd.sock\n    RUNTIME_CONFIG_SOURCE: 'file=/etc/k0s/containerd.toml'\n"
    )
    parsed, _ = parse_answers(text)
    assert parsed.toolkit.runtime == "k0s"
    assert parsed.toolkit.env == {
        "CONTAINERD_SOCKET": "/run/k0s/containerd.sock",
        "RUNTIME_CONFIG_SOURCE": "file=/etc/k0s/containerd.toml",
    }
    again, _ = parse_answers(dump_answers(parsed))
    assert again.toolkit == parsed.toolkit
    example, _ = parse_answers(example_answers())
    assert example.toolkit.env is None and example.toolkit.runtime == "auto"
