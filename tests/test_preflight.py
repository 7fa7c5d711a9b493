"""Preflight against the demo cluster: permissions by SelfSubjectAccessReview, CRDs, operator namespace and release."""

from __future__ import annotations

import pytest

from tests.helpers.cluster import connected, scenario, sle_plan, upstream_plan
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from wizard.demo.scenarios.scenario import OperatorSpec
from wizard.engine.render import render, to_yaml
from wizard.engine.results import Status


async def test_ready_cluster_passes_and_finds_the_operator(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    async with connected(demo) as cluster:
        found = await cluster.preflight(sle_plan())
    assert found.ok, [c.line() for c in found.checks]
    assert (found.operator_namespace, found.operator_release) == ("gpu-operator", "v26.7.0")
    assert found.crds and found.cluster_policy is None
    assert any(c.check == "permission" and "permissions granted" in c.message for c in found.checks)


async def test_each_missing_permission_is_named(demo_cluster: ClusterFactory) -> None:
    denied = [
        {"verb": "patch", "resource": "clusterpolicies", "group": "nvidia.com"},
        {"verb": "create", "resource": "pods/exec"},
        {"verb": "watch", "resource": "nodes", "group": ""},
    ]
    demo = demo_cluster(scenario("sle-micro-precompiled", rbac_deny=denied))
    async with connected(demo) as cluster:
        found = await cluster.preflight(sle_plan())
        read_only = await cluster.preflight(None)
    lines = [c.line() for c in found.checks if c.check == "permission"]
    assert not found.ok
    assert any(line.startswith("✗ permission: missing permission: patch clusterpolicies.nvidia.com") for line in lines)
    assert any("create pods/exec in gpu-operator" in line and line.startswith("✗") for line in lines)
    assert any("watch nodes" in line and line.startswith("!") for line in lines)  # optional: a warning only
    assert {(p.verb, p.resource, p.subresource) for p in found.missing_permissions} == {
        ("patch", "clusterpolicies", ""),
        ("create", "pods", "exec"),
        ("watch", "nodes", ""),
    }
    assert read_only.ok  # discovery alone needs neither patch nor exec


async def test_a_user_who_could_not_roll_back_a_first_install_is_warned_before_it(
    demo_cluster: ClusterFactory,
) -> None:
    """The rollback of a first install (named after an interrupted apply, and the undo of a failed one)
    deletes what the apply created: the real server refused it to a user granted the documented list
    (tests/realcluster/test_interrupt_real.py), so the list has it, and a user without it is told."""
    denied = [
        {"verb": "delete", "resource": "clusterpolicies", "group": "nvidia.com"},
        {"verb": "update", "resource": "nvidiadrivers", "group": "nvidia.com"},
    ]
    demo = demo_cluster(scenario("sle-micro-precompiled", rbac_deny=denied))
    async with connected(demo) as cluster:
        found = await cluster.preflight(sle_plan(useNvidiaDriverCRD=True))
    assert found.ok  # optional: the apply itself can go
    lines = [c.line() for c in found.checks if c.check == "permission" and c.status is Status.WARN]
    assert any(
        "delete clusterpolicies.nvidia.com" in line and "roll back a ClusterPolicy the apply created" in line
        for line in lines
    ), lines
    assert any(
        "update nvidiadrivers.nvidia.com" in line and "roll back changed NVIDIADrivers" in line for line in lines
    ), lines


async def test_missing_crds_say_how_to_install_the_operator(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster(scenario("sle-micro-precompiled", operator=OperatorSpec(installed=False, crds=False)))
    async with connected(demo) as cluster:
        found = await cluster.preflight(sle_plan())
    crd = next(c for c in found.checks if c.check == "crd")
    assert crd.status is Status.FAIL and not found.crds
    assert "clusterpolicies.nvidia.com" in crd.message
    # never the chart's defaults (they start NVIDIA's upstream driver at once): the wizard installs it
    assert "gpu-wizard apply --install-operator" in crd.hint and "helm install" not in crd.hint


@pytest.mark.parametrize("crds", [False, True])
async def test_an_install_of_the_operator_is_what_preflight_expects(demo_cluster: ClusterFactory, crds: bool) -> None:
    demo = demo_cluster(scenario("sle-micro-precompiled", operator=OperatorSpec(installed=False, crds=crds)))
    async with connected(demo) as cluster:
        told = await cluster.preflight(sle_plan())
        found = await cluster.preflight(sle_plan(), install_operator=True)
    assert told.operator_missing and not told.installs_operator
    assert told.ok is crds  # CRDs without the operator: a warning that says how to install it
    if crds:
        [operator] = [c for c in told.checks if c.check == "operator"]
        assert operator.status is Status.WARN and "gpu-wizard apply --install-operator" in operator.hint
    assert found.ok and found.installs_operator, [c.message for c in found.checks if not c.ok]
    assert [c.message for c in found.checks if c.check in ("crd", "operator")] == [
        "GPU Operator not installed: gpu-wizard will install v26.7.0 with your choices"
    ]


async def test_existing_install_is_read_and_the_release_compared(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("existing-install-plain")  # made by hand: no Helm release to upgrade with the chart
    async with connected(demo) as cluster:
        found = await cluster.preflight(upstream_plan())
        live = await cluster.live_plan()
    assert found.cluster_policy is not None and found.cluster_policy["metadata"]["name"] == "cluster-policy"
    assert (found.operator_namespace, found.operator_release) == ("gpu-operator", "v26.3.3")
    release = next(c for c in found.checks if c.check == "release")
    assert release.status is Status.FAIL and "runs GPU Operator v26.3.3, the plan targets v26.7.0" in release.message
    assert "operator.version: v26.3.3" in release.hint
    assert (live.mode.value, live.driver.version, live.operator.version) == ("upstream", "570.195.03", "v26.3.3")
    assert (live.driver.repository, live.driver.image) == ("nvcr.io/nvidia", "driver")


async def test_a_new_release_of_a_helm_install_is_an_upgrade_of_its_chart(demo_cluster: ClusterFactory) -> None:
    """The same policy owned by Helm release gpu-operator: the plan's release is that release's next chart."""
    demo = demo_cluster("existing-install")
    async with connected(demo) as cluster:
        found = await cluster.preflight(upstream_plan())
    release = next(c for c in found.checks if c.check == "release")
    assert release.status is Status.WARN and release.data == {"upgrade": "v26.7.0"}, release
    assert release.message.endswith("Helm release gpu-operator is upgraded to the v26.7.0 chart") and found.ok


async def test_a_policy_no_helm_release_owns_stops_an_install(demo_cluster: ClusterFactory, kubectl: Kubectl) -> None:
    """helm refuses to adopt an object its release does not own: preflight says so before anything runs."""
    demo = demo_cluster(scenario("sle-micro-precompiled", operator=OperatorSpec(installed=False, crds=True)))
    async with connected(demo) as cluster:
        policy = render(sle_plan(), await cluster.discover()).cluster_policy
        made = kubectl(demo, "create", "-f", "-", input=to_yaml([{**policy, "metadata": {"name": "by-hand"}}]))
        assert made.returncode == 0, made.stderr
        found = await cluster.preflight(sle_plan(), install_operator=True)
    [refusal] = [c for c in found.checks if not c.ok]
    assert refusal.message.startswith("ClusterPolicy by-hand exists and no Helm release owns it")
    assert "kubectl delete clusterpolicy by-hand" in refusal.hint and not found.ok
