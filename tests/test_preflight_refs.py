"""Preflight of what the plan names but does not create: the repoConfig ConfigMap and the pull Secrets."""

from __future__ import annotations

from tests.helpers.cluster import connected, scenario, upstream_plan
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from wizard.engine.plan import Plan
from wizard.engine.results import Check, Status


def airgapped_plan(**driver: object) -> Plan:
    """Upstream from the air-gapped mirror, kernel headers from the ``repo-config`` ConfigMap."""
    return Plan.model_validate(
        {
            "mode": "upstream",
            "driver": {
                "version": "580.126.20",
                "repository": "registry.airgap.local/nvidia",
                "airgapped": True,
                "repoConfig": {"configMapName": "repo-config"},
                **driver,
            },
        }
    )


def named(checks: list[Check], name: str) -> list[Check]:
    return [c for c in checks if c.check == name]


async def test_missing_repo_config_fails_with_what_to_do_then_passes_once_created(
    demo_cluster: ClusterFactory, kubectl: Kubectl
) -> None:
    demo = demo_cluster("airgapped")
    async with connected(demo) as cluster:
        before = await cluster.preflight(airgapped_plan())
        (repo,) = named(before.checks, "repo-config")
        assert not before.ok and repo.status is Status.FAIL
        assert repo.message.startswith(
            "driver.repoConfig.configMapName: ConfigMap repo-config not found in namespace gpu-operator"
        )
        assert "kubectl create configmap repo-config -n gpu-operator --from-file=<repo file>" in repo.hint
        created = kubectl(
            demo,
            "create",
            "configmap",
            "repo-config",
            "-n",
            "gpu-operator",
            "--from-literal=sources.list=deb [trusted=yes] http://mirror.airgap.local/ubuntu jammy main",
        )
        assert created.returncode == 0, created.stderr
        after = await cluster.preflight(airgapped_plan())
        assert after.ok, [c.line() for c in after.checks]
        assert (
            named(after.checks, "repo-config")[0].line()
            == "✓ repo-config: repoConfig ConfigMap repo-config found in gpu-operator"
        )
        assert (
            named((await cluster.preflight(upstream_plan())).checks, "repo-config") == []
        )  # no ConfigMap named: no check


async def test_pull_secrets_must_exist_and_be_for_pulls(demo_cluster: ClusterFactory, kubectl: Kubectl) -> None:
    demo = demo_cluster("airgapped")
    plan = upstream_plan(
        driver={"version": "580.126.20", "repository": "nvcr.io/nvidia", "imagePullSecrets": ["regcred", "opaque"]}
    )
    registry = "--docker-server=registry.airgap.local"
    assert (
        kubectl(
            demo,
            "create",
            "secret",
            "docker-registry",
            "regcred",
            "-n",
            "gpu-operator",
            registry,
            "--docker-username=u",
            "--docker-password=s3cr3t-pw",
        ).returncode
        == 0
    )
    async with connected(demo) as cluster:
        missing = named((await cluster.preflight(plan)).checks, "pull-secret")
        assert [c.status for c in missing] == [Status.PASS, Status.FAIL]
        assert "driver.imagePullSecrets: Secret opaque not found in namespace gpu-operator" in missing[1].message
        assert "kubectl create secret docker-registry opaque -n gpu-operator" in missing[1].hint
        assert (
            kubectl(
                demo, "create", "secret", "generic", "opaque", "-n", "gpu-operator", "--from-literal=a=b"
            ).returncode
            == 0
        )
        wrong = named(await cluster.reference_checks(plan), "pull-secret")[1]
    assert wrong.status is Status.WARN and "has type Opaque" in wrong.message
    shown = " ".join(f"{c.message} {c.hint} {c.detail} {c.data}" for c in [*missing, wrong])
    assert "s3cr3t" not in shown  # nothing of a Secret's data is shown


async def test_no_permission_to_read_secrets_is_a_warning(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster(scenario("airgapped", rbac_deny=[{"verb": "get", "resource": "secrets"}]))
    plan = airgapped_plan(imagePullSecrets=["regcred"])
    async with connected(demo) as cluster:
        (secret,) = named(await cluster.reference_checks(plan), "pull-secret")
    assert secret.status is Status.WARN
    assert secret.message == "cannot check the pull Secret regcred: no permission to get secrets in gpu-operator"
