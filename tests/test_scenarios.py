"""Scenario files: every bundled one loads and seeds, nodes read back as written, bad files say which field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wizard.demo.api.store import Store
from wizard.demo.scenarios.scenario import ScenarioError, load_scenario, scenario_from_dict, scenario_names
from wizard.demo.sim.simulation import Simulation
from wizard.engine.facts import cluster_facts, node_facts

GOOD_NODE = {
    "name": "gpu-01",
    "os_id": "ubuntu",
    "os_version": "22.04",
    "kernel": "5.15.0-1048-nvidia",
    "gpu_product": "NVIDIA-H100-80GB-HBM3",
    "gpu_count": 8,
}


def test_bundled_scenarios_are_listed() -> None:
    names = scenario_names()
    for expected in (
        "sle-micro-precompiled",
        "ubuntu-upstream",
        "preinstalled",
        "mixed-os",
        "missing-tuple",
        "noexec-run",
        "airgapped",
        "existing-install",
        "large",
        "from-nodelist",
        "mig",
    ):
        assert expected in names


@pytest.mark.parametrize("name", [n for n in scenario_names() if n != "large"])
def test_scenario_loads_seeds_and_nodes_read_back(name: str) -> None:
    scenario = load_scenario(name)
    store = Store()
    Simulation(scenario, store).seed()
    nodes = {n["metadata"]["name"]: n for n in store.list("nodes")}
    specs = scenario.expanded_nodes()
    assert sorted(nodes) == sorted(s.name for s in specs)
    for spec in specs:
        facts = node_facts(nodes[spec.name])
        assert (facts.kernel, facts.os_id, facts.os_version, facts.os_image) == (
            spec.kernel,
            spec.os_id,
            spec.os_version,
            spec.os_image,
        )
        assert facts.gpu == spec.gpu
        if spec.gpu and spec.mig_profile:  # GFD under MIG strategy single: the MIG devices are the "GPUs"
            assert (facts.gpu_product, facts.gpu_count, facts.mig_strategy) == (
                f"{spec.gpu_product}-MIG-{spec.mig_profile}",
                spec.gpu_count * spec.mig_per_gpu,
                "single",
            )
        elif spec.gpu:
            assert (facts.gpu_product, facts.gpu_count) == (spec.gpu_product, spec.gpu_count)
    names = {ns["metadata"]["name"] for ns in store.list("namespaces")}
    assert {"default", "kube-system", scenario.operator.namespace} <= names
    deployments = store.list("deployments", scenario.operator.namespace)
    operator = f"{scenario.operator.repository or 'nvcr.io/nvidia'}/gpu-operator:{scenario.operator.release}"
    assert [d["spec"]["template"]["spec"]["containers"][0]["image"] for d in deployments] == (
        [operator] if scenario.operator.installed else []  # no-operator: gpu-wizard installs it
    )
    assert all(labels_ok(d["metadata"]["labels"]) for d in deployments)


def labels_ok(labels: dict[str, str]) -> bool:
    return labels.get("app") == "gpu-operator" and labels.get("app.kubernetes.io/component") == "gpu-operator"


def test_sle_micro_scenario_is_the_documented_tuple() -> None:
    scenario = load_scenario("sle-micro-precompiled")
    gpu = [s for s in scenario.expanded_nodes() if s.gpu]
    assert [s.name for s in gpu] == ["gpu-h200-01", "gpu-h200-02"]
    assert {(s.os_id, s.os_version, s.kernel, s.gpu_product) for s in gpu} == {
        ("sle-micro", "5.5", "5.14.21-150500.55.166-default", "NVIDIA-H200")
    }
    tags = scenario.registry.catalog["registry.example.com/mlops/nvidia-driver"]
    assert "580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5" in tags
    assert scenario.registry.catalog["docker.io/alaudadockerhub/nvidia-driver"] == tags


def test_large_scenario_seeds_five_thousand_gpu_nodes() -> None:
    # how fast is measured by benchmarks/demo_server.py (docs/benchmarks.md), not asserted under a loaded CI machine
    scenario = load_scenario("large")
    store = Store()
    Simulation(scenario, store).seed()
    nodes = store.list("nodes")
    facts = cluster_facts(nodes)
    assert len(facts.gpu_nodes) == 5000
    assert len(facts.groups("v26.7.0")) == 4
    assert nodes[0]["metadata"]["name"] == "cp-01"
    assert any(n["metadata"]["name"] == "gpu-k1063-1250" for n in nodes)


def test_nodelist_scenario_takes_nodes_from_the_json_file() -> None:
    scenario = load_scenario("from-nodelist")
    names = [s.name for s in scenario.expanded_nodes()]
    assert names == ["cp-01", "gpu-a100-01", "gpu-a100-02", "gpu-a100-03"]
    spec = scenario.expanded_nodes()[1]
    assert (spec.os_id, spec.os_version, spec.kernel, spec.gpu_count) == ("sl-micro", "6.1", "6.4.0-24-default", 8)
    assert spec.labels["kubernetes.io/hostname"] == "gpu-a100-01"


def test_scenario_by_path_fills_os_image(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(json.dumps({"name": "mine", "nodes": [GOOD_NODE]}))
    scenario = load_scenario(str(path))
    assert scenario.nodes[0].os_image == "Ubuntu 22.04.5 LTS"


def write(tmp_path: Path, data: object) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "x", "nodez": []}, "nodez: unknown field; valid fields: name, description"),
        ({"name": "x", "nodes": [{**GOOD_NODE, "gpu_cont": 2}]}, "nodes[0].gpu_cont: unknown field"),
        ({"name": "x", "nodes": [{k: v for k, v in GOOD_NODE.items() if k != "kernel"}]}, "nodes[0].kernel: required"),
        (
            "name: x\nnodes:\n- {name: a, os_id: ubuntu, os_version: 22.04, kernel: k}\n",
            'nodes[0].os_version: must be a string; quote it ("22.04")',
        ),
        ({"name": "x", "nodes": [{**GOOD_NODE, "gpu_count": "8"}]}, "nodes[0].gpu_count: must be an integer"),
        ({"name": "x", "nodes": [{**GOOD_NODE, "gpu_product": ""}]}, "nodes[0].gpu_product: required when gpu_count"),
        (
            {"name": "x", "nodes": [{**GOOD_NODE, "gpu_count": 0}]},
            "nodes[0].gpu_count: must be 1 or more when gpu_product",
        ),
        ({"name": "x", "nodes": [GOOD_NODE, GOOD_NODE]}, "node name 'gpu-01' appears twice"),
        ({"name": "x", "nodes": [{**GOOD_NODE, "count": 0}]}, "nodes[0].count: must be 1 or more"),
        (
            {"name": "x", "nodes": [{**GOOD_NODE, "arch": "x86_64"}]},
            "nodes[0].arch: 'x86_64' is not one of amd64, arm64",
        ),
        ({"name": "x", "operator": {"release": "v24.9.0"}}, "operator.release: 'v24.9.0' is not a known release"),
        (
            {"name": "x", "registry": {"catalog": {"nvcr.io/nvidia/driver": {"1": "sha256:abc"}}}},
            "is not sha256: + 64 hex",
        ),
        (
            {"name": "x", "registry": {"catalog": {"driver": {}}}},
            "registry.catalog.driver: key must be host/path/image",
        ),
        ({"name": "x", "registry": {"url": "127.0.0.1:5055"}}, "registry.url: '127.0.0.1:5055' must look like http"),
        ({"name": "x", "faults": {"exec_fail_nodes": ["nope"]}}, "faults.exec_fail_nodes: 'nope' is not a node"),
        ({"name": "x", "nodelist": "missing.json"}, "nodelist: file"),
        (
            {"name": "x", "operator": {"installed": False, "cluster_policy": {"kind": "ClusterPolicy", "spec": {}}}},
            "needs operator.installed",
        ),
        ("name: x\nnodes: [\n", "is not valid YAML"),
        ([1, 2], "the top level must be a mapping"),
    ],
)
def test_bad_scenario_files_name_the_field(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, data))
    assert message in str(info.value)
    assert "bad.yaml" in str(info.value) or "YAML" in str(info.value)


def test_a_field_error_names_the_files_line(tmp_path: Path) -> None:
    text = "name: x\nnodes:\n  - name: a\n    os_id: ubuntu\n    os_version: '22.04'\n    kernel: k\n    count: yes\n"
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, text))
    assert (
        str(info.value)
        == f"scenario {str(tmp_path / 'bad.yaml')!r} line 7: nodes[0].count: must be an integer, not 'yes'"
    )


def test_unknown_scenario_name_lists_the_bundled_ones() -> None:
    with pytest.raises(ScenarioError, match="unknown scenario 'nope'; bundled scenarios: airgapped, "):
        load_scenario("nope")
    with pytest.raises(ScenarioError, match="does not exist"):
        load_scenario("/no/such/file.yaml")


def test_nodelist_that_is_not_a_nodelist(tmp_path: Path) -> None:
    (tmp_path / "n.json").write_text(json.dumps({"kind": "PodList"}))
    with pytest.raises(ScenarioError, match=r"nodelist 'n.json': not a NodeList"):
        load_scenario(write(tmp_path, {"name": "x", "nodelist": "n.json"}))


@pytest.mark.parametrize(
    ("os_id", "version"),
    [
        ("ubuntu", "22.04"),
        ("ubuntu", "24.04"),
        ("rhel", "9.4"),
        ("rocky", "9.4"),
        ("sles", "15.6"),
        ("sle-micro", "5.5"),
        ("sl-micro", "6.1"),
    ],
)
def test_nodes_without_nfd_still_tell_their_os_through_node_info(os_id: str, version: str) -> None:
    scenario = scenario_from_dict(
        {
            "name": "plain",
            "nodes": [{"name": "n1", "os_id": os_id, "os_version": version, "kernel": "6.4.0-1-default", "nfd": False}],
        }
    )
    store = Store()
    Simulation(scenario, store).seed()
    facts = node_facts(store.get("nodes", "n1"))
    assert (facts.os_id, facts.os_version, facts.os_source, facts.kernel_source) == (
        os_id,
        version,
        "nodeInfo",
        "nodeInfo",
    )
