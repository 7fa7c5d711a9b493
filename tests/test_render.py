"""Rendering behaviour: CRD validity per release, owned fields and the SSA patch, mirror plan, Helm values, advice."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.helpers.render_cases import CASES, CP, DIGEST, SLE_KERNEL, facts, node
from tests.helpers.yaml11 import yaml11_load_all
from wizard.bundled import asset_text, operator_values
from wizard.engine.facts import facts_from_nodelist
from wizard.engine.plan import Plan
from wizard.engine.render import (
    Rendered,
    apply_patch,
    helm_yaml,
    images_table,
    mirror_script,
    owned_paths,
    render,
    shell_command,
    to_yaml,
    validate_against_crd,
)
from wizard.engine.runtime import toolkit_env

BUNDLES = ("v26.7.0", "v26.3.3", "v25.10.1")


EXAMPLES = Path(__file__).resolve().parent.parent / "assets" / "examples"


def plan(mode: str = "upstream", release: str = "v26.7.0", **driver: Any) -> Plan:
    answers: dict[str, Any] = {"operator": {"version": release}, "mode": mode, "driver": driver}
    if mode != "preinstalled":
        driver.setdefault("version", "580.126.20" if mode == "upstream" else "580")
        driver.setdefault("repository", "registry.example.com/mlops")
    return Plan.model_validate(answers)


def codes(result: Rendered) -> list[str]:
    return [a.code for a in result.advice]


def get(obj: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def leaves(obj: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(obj, dict) and obj:
        return [p for k, v in obj.items() for p in leaves(v, (*prefix, k))]
    return [prefix]


UBUNTU = facts(CP, node("gpu-0"), node("gpu-1"))
SLE = facts(CP, node("gpu-0", "sle-micro", "5.5", SLE_KERNEL))


# --- ClusterPolicy and NVIDIADriver against the real CRDs ---------------------------------------


@pytest.mark.parametrize("bundle", BUNDLES)
@pytest.mark.parametrize("mode", ["precompiled", "upstream", "preinstalled"])
@pytest.mark.parametrize("use_crd", [False, True])
def test_every_mode_validates_against_each_release_crd(bundle: str, mode: str, use_crd: bool) -> None:
    driver: dict[str, Any] = {"imagePullSecrets": ["regcred"]} if mode != "preinstalled" else {}
    if use_crd:
        driver["useNvidiaDriverCRD"] = True
    if mode == "upstream":
        driver["repoConfig"] = {"configMapName": "repo-config"}
    result = render(plan(mode, bundle, **driver), facts(CP, node("gpu-0"), node("gpu-1", "rhel", "9.4", "5.14.0")))
    assert result.documents()
    for doc in result.documents():
        assert validate_against_crd(doc, bundle) == []
    assert bool(result.nvidia_drivers) == (use_crd and mode != "preinstalled")
    # kubectl and Helm parse YAML 1.1: what they read back must be exactly what was validated.
    assert yaml11_load_all(to_yaml(result.documents())) == result.documents()
    assert yaml11_load_all(helm_yaml(result)) == [result.helm_values]


def test_cluster_policy_starts_from_the_release_chart_defaults() -> None:
    for bundle in BUNDLES:
        values = operator_values(bundle)
        spec = render(plan("precompiled", bundle), UBUNTU).cluster_policy["spec"]
        for section in ("toolkit", "devicePlugin", "dcgmExporter", "gfd", "migManager"):
            assert spec[section]["version"] == values[section]["version"], (bundle, section)
        assert spec["driver"]["manager"]["version"] == values["driver"]["manager"]["version"]
        assert spec["validator"]["version"] == bundle  # the chart's appVersion is the release tag
        assert spec["daemonsets"]["tolerations"] == values["daemonsets"]["tolerations"]


@pytest.mark.parametrize("mode", ["precompiled", "upstream"])
def test_cluster_policy_carries_the_plans_driver_fields(mode: str) -> None:
    extra = {"repoConfig": {"configMapName": "repos"}} if mode == "upstream" else {}
    result = render(plan(mode, imagePullSecrets=["regcred"], **extra), UBUNTU)
    cp = result.cluster_policy
    assert (cp["apiVersion"], cp["kind"], cp["metadata"]["name"]) == (
        "nvidia.com/v1",
        "ClusterPolicy",
        "cluster-policy",
    )
    driver = cp["spec"]["driver"]
    assert driver["enabled"] is True
    assert driver["usePrecompiled"] is (mode == "precompiled")
    assert (driver["repository"], driver["image"]) == ("registry.example.com/mlops", result.plan.driver.image)
    assert driver["version"] == result.plan.driver.version
    assert driver["imagePullSecrets"] == ["regcred"]
    assert driver["useNvidiaDriverCRD"] is False
    assert driver.get("repoConfig") == ({"configMapName": "repos"} if mode == "upstream" else None)
    assert cp["spec"]["hostPaths"]["driverInstallDir"] == "/run/nvidia/driver"


def test_preinstalled_disables_the_driver_and_keeps_driver_install_dir_unowned() -> None:
    result = render(plan("preinstalled"), UBUNTU)
    assert result.cluster_policy["spec"]["driver"]["enabled"] is False
    assert owned_paths(result.plan) == [("driver", "enabled"), ("toolkit", "installDir")]
    assert [i.image for i in result.node_images] == ["", ""]
    assert result.mirror == []
    with_dir = plan("preinstalled")
    with_dir.hostPaths.driverInstallDir = "/usr/local/glibc"
    assert ("hostPaths", "driverInstallDir") in owned_paths(with_dir)
    assert render(with_dir, UBUNTU).cluster_policy["spec"]["hostPaths"]["driverInstallDir"] == "/usr/local/glibc"


def test_toolkit_install_dir_is_the_plans_else_the_os_profiles() -> None:
    assert render(plan("precompiled"), SLE).toolkit_install_dir == "/run/nvidia/toolkit-install"
    assert render(plan("precompiled"), UBUNTU).toolkit_install_dir == "/usr/local/nvidia"
    chosen = plan("precompiled")
    chosen.toolkit.installDir = "/opt/nvidia"
    result = render(chosen, SLE)
    assert result.toolkit_install_dir == "/opt/nvidia"
    assert result.cluster_policy["spec"]["toolkit"]["installDir"] == "/opt/nvidia"


def test_nvidiadriver_uses_repoconfig_name_and_one_cr_serves_every_os_pool() -> None:
    result = render(
        plan(useNvidiaDriverCRD=True, repoConfig={"configMapName": "repos"}),
        facts(CP, node("gpu-0"), node("gpu-1", "rhel", "9.4", "5.14.0")),
    )
    assert result.cluster_policy["spec"]["driver"]["useNvidiaDriverCRD"] is True
    [cr] = result.nvidia_drivers
    assert (cr["apiVersion"], cr["kind"], cr["metadata"]["name"]) == ("nvidia.com/v1alpha1", "NVIDIADriver", "default")
    assert cr["spec"]["repoConfig"] == {"name": "repos"}
    assert cr["spec"]["default"] is True and "nodeSelector" not in cr["spec"]
    assert {i.tag_os for i in result.node_images} == {"ubuntu22.04", "rhel9"}


@pytest.mark.parametrize("bundle", ["v26.3.3", "v25.10.1"])
def test_older_releases_have_no_default_field_and_split_pools_by_node_selector(bundle: str) -> None:
    single = render(plan(release=bundle, useNvidiaDriverCRD=True), UBUNTU).nvidia_drivers
    assert [d["metadata"]["name"] for d in single] == ["default"] and "default" not in single[0]["spec"]
    split = render(
        plan(release=bundle, useNvidiaDriverCRD=True, repoConfig={"configMapName": "repos"}),
        facts(CP, node("gpu-0"), node("gpu-1", "sle-micro", "5.5", SLE_KERNEL)),
    ).nvidia_drivers
    by_name = {d["metadata"]["name"]: d["spec"] for d in split}
    assert sorted(by_name) == ["gpu-driver-sle-micro", "gpu-driver-ubuntu"]
    assert by_name["gpu-driver-ubuntu"]["repoConfig"] == {"name": "repos"}
    assert "repoConfig" not in by_name["gpu-driver-sle-micro"]
    selectors = [s["nodeSelector"]["feature.node.kubernetes.io/system-os_release.ID"] for s in by_name.values()]
    assert sorted(selectors) == ["sle-micro", "ubuntu"]
    for doc in split:
        assert validate_against_crd(doc, bundle) == []


def test_validation_messages_name_the_field() -> None:
    cp = render(plan(), UBUNTU).cluster_policy
    cp["spec"]["driver"]["version"] = 580
    cp["spec"]["driver"]["usePrecompield"] = True
    del cp["spec"]["toolkit"]
    errors = validate_against_crd(cp, "v26.7.0")
    assert any(e.startswith("spec.driver.version: 580 is not of type 'string'") for e in errors)
    assert any(e.startswith("spec.driver:") and "usePrecompield" in e for e in errors)
    assert any(e.startswith("spec:") and "'toolkit' is a required property" in e for e in errors)
    cr = render(plan(useNvidiaDriverCRD=True), UBUNTU).nvidia_drivers[0]
    cr["spec"]["nodeSelector"] = {"pool": "a"}
    assert validate_against_crd(cr, "v26.7.0") == ["spec: default NVIDIADriver must not use nodeSelector"]
    assert "not served" in validate_against_crd({**cr, "apiVersion": "nvidia.com/v1"}, "v26.7.0")[0]


# --- the server-side-apply patch ----------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_patch_holds_exactly_the_owned_fields_with_the_fresh_install_values(case: str) -> None:
    answers, nodes = CASES[case]
    the_plan = Plan.model_validate(answers)
    node_facts = facts(*nodes)
    patch = apply_patch(the_plan, node_facts)
    assert set(patch) == {"apiVersion", "kind", "metadata", "spec"} and patch["metadata"] == {"name": "cluster-policy"}
    env = toolkit_env(the_plan, node_facts)
    assert leaves(patch["spec"]) == owned_paths(the_plan, env)
    full = render(the_plan, node_facts).cluster_policy["spec"]
    for path in owned_paths(the_plan, env):
        assert get(patch["spec"], path) == get(full, path), path


def test_owned_paths_per_mode() -> None:
    assert owned_paths(plan("precompiled")) == [
        ("driver", "enabled"),
        ("driver", "usePrecompiled"),
        ("driver", "repository"),
        ("driver", "image"),
        ("driver", "version"),
        ("driver", "useNvidiaDriverCRD"),
        ("toolkit", "installDir"),
        ("hostPaths", "driverInstallDir"),
    ]
    # v26.7.0's chart keeps the driver image fields out of a ClusterPolicy in NVIDIADriver mode; earlier charts keep them.
    assert owned_paths(plan(useNvidiaDriverCRD=True, imagePullSecrets=["regcred"])) == [
        ("driver", "enabled"),
        ("driver", "useNvidiaDriverCRD"),
        ("toolkit", "installDir"),
        ("hostPaths", "driverInstallDir"),
    ]
    assert ("driver", "version") in owned_paths(plan(release="v26.3.3", useNvidiaDriverCRD=True))
    upstream = owned_paths(plan("upstream", imagePullSecrets=["regcred"]))
    assert ("driver", "repoConfig", "configMapName") in upstream and ("driver", "imagePullSecrets") in upstream


# --- node images and the mirror plan ------------------------------------------------------------


def test_mirror_commands_are_argv_lists() -> None:
    result = render(plan("precompiled", version="580.126.09.1"), SLE)
    [item] = result.mirror
    tag = "580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"
    assert item.source == f"docker.io/alaudadockerhub/nvidia-driver:{tag}"
    assert item.target == f"registry.example.com/mlops/nvidia-driver:{tag}"
    assert item.nodes == ("gpu-0",)
    assert item.commands == (
        ("skopeo", "copy", "--all", "--preserve-digests", f"docker://{item.source}", f"docker://{item.target}"),
        ("skopeo", "inspect", f"docker://{item.target}"),
    )
    assert result.node_images[0].image == item.target


def test_airgapped_upstream_adds_the_docker_form_with_the_same_tag() -> None:
    result = render(plan(airgapped=True, repoConfig={"configMapName": "r"}), UBUNTU)
    [item] = result.mirror
    assert item.nodes == ("gpu-0", "gpu-1")
    assert item.commands[2:] == (
        ("docker", "pull", item.source),
        ("docker", "tag", item.source, item.target),
        ("docker", "push", item.target),
    )
    assert item.source.rsplit(":", 1)[1] == item.target.rsplit(":", 1)[1] == "580.126.20-ubuntu22.04"
    digest = render(plan(version=DIGEST, airgapped=True, repoConfig={"configMapName": "r"}), UBUNTU)
    assert [c[0] for c in digest.mirror[0].commands] == ["skopeo", "skopeo"]
    assert digest.mirror[0].target == f"registry.example.com/mlops/driver@{DIGEST}"


def test_no_mirror_item_when_the_cluster_pulls_from_the_source() -> None:
    result = render(plan(repository="nvcr.io/nvidia"), UBUNTU)
    assert result.mirror == [] and "image-whitelist" not in codes(result)
    assert "nothing to mirror" in mirror_script(result.mirror)


def test_mixed_os_under_cluster_policy_predicts_the_first_nodes_tag() -> None:
    mixed = facts(CP, node("gpu-b", "rhel", "9.4", "5.14.0"), node("gpu-a"))
    result = render(plan(), mixed)
    assert {i.node: i.tag_os for i in result.node_images} == {"gpu-a": "ubuntu22.04", "gpu-b": "ubuntu22.04"}
    assert "mixed-os" in codes(result)
    per_pool = render(plan(useNvidiaDriverCRD=True), mixed)
    assert {i.node: i.tag_os for i in per_pool.node_images} == {"gpu-a": "ubuntu22.04", "gpu-b": "rhel9"}
    assert "mixed-os" not in codes(per_pool)
    assert "mixed-os" in codes(render(plan(version=DIGEST, useNvidiaDriverCRD=True), mixed))


def test_shell_display_and_tables() -> None:
    assert shell_command(("echo", "a b", "c'd")) == "echo 'a b' 'c'\"'\"'d'"
    result = render(plan(), UBUNTU)
    image = "registry.example.com/mlops/driver:580.126.20-ubuntu22.04"
    assert images_table(result.node_images) == f"gpu-0\t{image}\ngpu-1\t{image}\n"


# --- Helm values ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_helm_values_only_use_keys_the_chart_has(case: str) -> None:
    answers, nodes = CASES[case]
    result = render(Plan.model_validate(answers), facts(*nodes))
    chart = operator_values(result.plan.operator.bundle)
    paths = leaves(result.helm_values)
    # empty values would pass the loop below: every case says at least whether the operator's driver runs (issue 26)
    assert ("driver", "enabled") in paths, result.helm_values
    for path in paths:
        assert path, result.helm_values  # an empty mapping is a leaf with no key
        get(chart, path)  # KeyError when the release's chart has no such value


def test_helm_values_for_nvidiadriver() -> None:
    values = render(plan(useNvidiaDriverCRD=True), UBUNTU).helm_values
    assert values["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": True}
    old = render(
        plan(release="v26.3.3", useNvidiaDriverCRD=True, repoConfig={"configMapName": "r"}),
        facts(CP, node("gpu-0"), node("gpu-1", "sle-micro", "5.5", SLE_KERNEL)),
    ).helm_values
    assert old["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}


# --- advice ---------------------------------------------------------------------------------------


def test_advice_each_with_a_reason_and_only_when_it_applies() -> None:
    assert render(plan("precompiled", repository="docker.io/alaudadockerhub"), SLE).advice == []
    assert codes(render(plan(), UBUNTU)) == ["upstream-not-validated", "image-whitelist"]
    everything = render(plan(airgapped=True), facts(CP, node("gpu-0", gpu="NVIDIA-GeForce-RTX-4090")))
    assert codes(everything) == [
        "upstream-not-validated",
        "airgapped-no-repoconfig",
        "image-whitelist",
        "geforce-licence",
        "operands-from-public-registry",
    ]
    mapped = render(plan(airgapped=True, operandRegistry="registry.example.com"), UBUNTU)
    assert "operands-from-public-registry" not in codes(mapped)
    apart = render(plan(operandRegistry="harbor.corp.example"), UBUNTU)
    assert "driver-outside-operand-registry" in codes(apart)
    for advice in everything.advice:
        assert advice.level in {"warning", "note"} and advice.message and advice.reason


def test_repoconfig_unsupported_quotes_the_operator() -> None:
    result = render(plan(repoConfig={"configMapName": "repos"}), SLE)
    [advice] = [a for a in result.advice if a.code == "repoconfig-unsupported-os"]
    assert "repository configuration not supported for distribution sle-micro5.5" in advice.message
    assert "repoconfig-unsupported-os" not in codes(render(plan(repoConfig={"configMapName": "repos"}), UBUNTU))


@pytest.mark.parametrize(
    ("release", "os_id", "version", "kernel", "mountable"),
    [
        ("v26.3.3", "rocky", "9.4", "5.14.0-427.13.1.el9_4.x86_64", True),
        ("v26.3.3", "ol", "9.4", "5.15.0-200.131.27.el9uek.x86_64", False),
        ("v26.7.0", "ol", "9.4", "5.15.0-200.131.27.el9uek.x86_64", True),
    ],
)
def test_repoconfig_support_follows_the_releases_map(
    release: str, os_id: str, version: str, kernel: str, mountable: bool
) -> None:
    nodes = facts(CP, node("gpu-0", os_id, version, kernel))
    for crd in (False, True):
        result = render(plan(release=release, repoConfig={"configMapName": "repos"}, useNvidiaDriverCRD=crd), nodes)
        assert ("repoconfig-unsupported-os" not in codes(result)) is mountable, (release, os_id, crd)


def test_repoconfig_under_clusterpolicy_at_v25_10_says_the_operator_reads_its_own_os() -> None:
    result = render(plan(release="v25.10.1", repoConfig={"configMapName": "repos"}), UBUNTU)
    [advice] = [a for a in result.advice if a.code == "repoconfig-operator-os"]
    assert "operator pod's own /etc/os-release" in advice.message and "#562" in advice.reason
    assert "ubuntu22.04" in advice.message
    per_pool = render(plan(release="v25.10.1", repoConfig={"configMapName": "repos"}, useNvidiaDriverCRD=True), UBUNTU)
    assert "repoconfig-operator-os" not in codes(per_pool)
    assert "repoconfig-operator-os" not in codes(
        render(plan(release="v26.3.3", repoConfig={"configMapName": "r"}), UBUNTU)
    )


def test_mixed_os_warning_names_every_outcome_not_one_first_node() -> None:
    mixed = facts(CP, node("gpu-b", "rhel", "9.4", "5.14.0"), node("gpu-a"))
    [advice] = [a for a in render(plan(), mixed).advice if a.code == "mixed-os"]
    assert "if rhel9 wins, gpu-a get registry.example.com/mlops/driver:580.126.20-rhel9" in advice.message
    assert "if ubuntu22.04 wins, gpu-b get registry.example.com/mlops/driver:580.126.20-ubuntu22.04" in advice.message
    assert "not the first by name" in advice.message and "#2471" in advice.reason


@pytest.mark.parametrize(
    ("product", "consumer"),
    [
        ("NVIDIA-GeForce-RTX-4090", True),
        ("NVIDIA-TITAN-RTX", True),
        ("NVIDIA-RTX-3080", True),
        ("NVIDIA-GeForce-RTX-5080", True),
        ("NVIDIA-H200", False),
        ("NVIDIA-RTX-A6000", False),
        ("NVIDIA-RTX-6000-Ada-Generation", False),
        ("Quadro-RTX-8000", False),
    ],
)
def test_geforce_licence(product: str, consumer: bool) -> None:
    result = render(plan("precompiled"), facts(CP, node("gpu-0", gpu=product)))
    assert ("geforce-licence" in codes(result)) is consumer


@pytest.mark.parametrize(
    ("install_dir", "labels", "expected"),
    [
        ("/run/nvidia/driver", {}, True),  # "/" is refused by the plan (tests/helpers/hostile/cases_answers.py)
        ("/usr/local/glibc", {"nvidia.com/gpu.deploy.driver": "pre-installed"}, True),
        ("/usr/local/glibc", {}, False),
        (None, {"nvidia.com/gpu.deploy.driver": "pre-installed"}, False),
    ],
)
def test_driver_install_dir_note(install_dir: str | None, labels: dict[str, str], expected: bool) -> None:
    the_plan = plan("preinstalled")
    the_plan.hostPaths.driverInstallDir = install_dir
    result = render(the_plan, facts(CP, node("gpu-0", extra_labels=labels)))
    assert ("driverinstalldir-not-needed" in codes(result)) is expected


def test_no_gpu_nodes() -> None:
    result = render(plan("precompiled"), facts(CP))
    assert codes(result) == ["no-gpu-nodes"]
    assert result.node_images == [] and result.mirror == []
    assert validate_against_crd(result.cluster_policy, "v26.7.0") == []


# --- serialisation, purity, shipped examples ------------------------------------------------------


def test_to_yaml_round_trips_with_separators() -> None:
    result = render(plan(useNvidiaDriverCRD=True), UBUNTU)
    text = to_yaml(result.documents())
    assert text.count("\n---\n") == 1 and text.startswith("apiVersion: nvidia.com/v1\n")
    assert list(YAML(typ="safe").load_all(io.StringIO(text))) == result.documents()
    assert to_yaml([]) == ""


def test_render_is_pure() -> None:
    before = YAML(typ="safe").load(asset_text("operator", "v26.7.0", "gpu-operator-values.yaml"))
    first = render(plan(useNvidiaDriverCRD=True), UBUNTU)
    first.cluster_policy["spec"]["driver"]["upgradePolicy"]["podDeletion"]["timeoutSeconds"] = 1
    first.cluster_policy["spec"]["daemonsets"]["labels"]["x"] = "y"
    first.nvidia_drivers[0]["spec"]["manager"]["version"] = "changed"
    first.nvidia_drivers[0]["spec"]["tolerations"].append({"key": "x"})
    second = render(plan(useNvidiaDriverCRD=True), UBUNTU)
    assert second.cluster_policy["spec"]["driver"]["upgradePolicy"]["podDeletion"]["timeoutSeconds"] == 300
    assert second.cluster_policy["spec"]["daemonsets"]["labels"] == {"app.kubernetes.io/managed-by": "gpu-operator"}
    assert second.nvidia_drivers[0]["spec"]["manager"]["version"] == "v0.12.0"
    assert operator_values("v26.7.0") == before


@pytest.mark.parametrize("name", ["sle-micro-precompiled", "ubuntu-upstream-airgapped", "preinstalled"])
def test_shipped_examples_render_valid_documents(name: str) -> None:
    yaml = YAML(typ="safe")
    answers = yaml.load((EXAMPLES / f"{name}.answers.yaml").read_text())
    nodes = facts_from_nodelist(yaml.load((EXAMPLES / f"{name}.nodes.json").read_text()))
    result = render(Plan.model_validate(answers), nodes)
    for doc in result.documents():
        assert validate_against_crd(doc, result.plan.operator.bundle) == []
    assert result.node_images and all(i.node.startswith("gpu-") for i in result.node_images)


def test_strings_a_yaml_1_1_reader_would_not_read_as_strings_are_quoted() -> None:
    tricky = {"off": "off", "yes": "Yes", "y": "y", "octal": "0755", "sexagesimal": "1:20", "float": "1e3", "null": "~"}
    text = to_yaml([{"data": {**tricky, "plain": "driver"}}])
    assert "plain: driver\n" in text
    for value in tricky.values():
        assert f"'{value}'" in text
    assert yaml11_load_all(text) == [{"data": {**tricky, "plain": "driver"}}]


def test_a_null_field_is_dropped_as_the_api_server_drops_it() -> None:
    """A null where the schema does not say nullable is pruned before validation, as the API server does (one
    release's chart renders ``migManager.config.name: null`` and the real server accepts it: the lane's bundle
    check of that chart said the server would refuse it); a required field left null is still missing."""
    cp = render(plan(), UBUNTU).cluster_policy
    cp["spec"].setdefault("migManager", {})["config"] = {"name": None}
    assert validate_against_crd(cp, "v26.7.0") == []
    cp["spec"]["toolkit"] = None
    assert any("'toolkit' is a required property" in e for e in validate_against_crd(cp, "v26.7.0"))
