"""Preflight of the objects a plan names but does not create: the repoConfig ConfigMap and the pull Secrets.

The operator does not report a missing one: an upstream driver pod whose ``repoConfig`` ConfigMap
is missing waits in ``ContainerCreating`` (the volume cannot mount) and the rollout hangs with no
reason given; a missing pull Secret ends in ``ImagePullBackOff`` on a private registry. Both must
exist in the operator's namespace before apply. A Secret is only asked for its existence and type.
"""

from __future__ import annotations

import asyncio

from wizard.cluster.errors import ApiError
from wizard.cluster.gateway import Gateway
from wizard.engine.plan import Mode, Plan
from wizard.engine.results import Check, Status
from wizard.engine.textsafe import shell_command

PULL_SECRET_TYPES = frozenset({"kubernetes.io/dockerconfigjson", "kubernetes.io/dockercfg"})


async def _repo_config(gateway: Gateway, name: str, namespace: str) -> Check:
    try:
        found = await gateway.configmap_exists(namespace, name)
    except ApiError as exc:
        if exc.status != 403:
            raise
        return Check(
            "repo-config",
            Status.WARN,
            f"cannot check the repoConfig ConfigMap {name}: no permission to get configmaps in {namespace}",
            hint=f"make sure it exists before apply: {shell_command(['kubectl', 'get', 'configmap', '-n', namespace, name])}",
        )
    if found:
        return Check("repo-config", Status.PASS, f"repoConfig ConfigMap {name} found in {namespace}")
    # the placeholder stays unquoted: it is for the reader to replace
    create = f"{shell_command(['kubectl', 'create', 'configmap', name, '-n', namespace])} --from-file=<repo file>"
    return Check(
        "repo-config",
        Status.FAIL,
        f"driver.repoConfig.configMapName: ConfigMap {name} not found in namespace {namespace}; "
        "the driver pods would wait for it and the rollout would hang without a reason",
        hint=f"create it from the nodes' package-repository files (apt .list / yum .repo / zypper .repo): {create}; "
        "or clear driver.repoConfig.configMapName",
    )


async def _pull_secret(gateway: Gateway, name: str, namespace: str) -> Check:
    try:
        kind = await gateway.secret_type(namespace, name)
    except ApiError as exc:
        if exc.status != 403:
            raise
        return Check(
            "pull-secret",
            Status.WARN,
            f"cannot check the pull Secret {name}: no permission to get secrets in {namespace}",
            hint=f"make sure it exists before apply: {shell_command(['kubectl', 'get', 'secret', '-n', namespace, name])}",
        )
    if kind is None:
        create = (
            f"{shell_command(['kubectl', 'create', 'secret', 'docker-registry', name, '-n', namespace])} "
            "--docker-server=REGISTRY --docker-username=USER --docker-password=…"
        )
        return Check(
            "pull-secret",
            Status.FAIL,
            f"driver.imagePullSecrets: Secret {name} not found in namespace {namespace}; "
            "the driver pods could not pull from a private registry (ImagePullBackOff)",
            hint=f"create it: {create}; or remove it from driver.imagePullSecrets",
        )
    if kind not in PULL_SECRET_TYPES:
        return Check(
            "pull-secret",
            Status.WARN,
            f"Secret {name} in {namespace} has type {kind}, not kubernetes.io/dockerconfigjson: the kubelet ignores it for pulls",
            hint="recreate it with kubectl create secret docker-registry",
        )
    return Check("pull-secret", Status.PASS, f"pull Secret {name} found in {namespace}")


async def reference_checks(gateway: Gateway, plan: Plan, namespace: str) -> list[Check]:
    """One check per object ``plan`` names in ``namespace``: the repoConfig ConfigMap (upstream) and each pull Secret."""
    if not plan.driver_enabled:
        return []
    pending = []
    config_map = plan.driver.repoConfig.configMapName
    if plan.mode is Mode.UPSTREAM and config_map:
        pending.append(_repo_config(gateway, config_map, namespace))
    pending += [_pull_secret(gateway, name, namespace) for name in dict.fromkeys(plan.driver.imagePullSecrets)]
    return list(await asyncio.gather(*pending))
