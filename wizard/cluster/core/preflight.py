"""Preflight: may this user do what the wizard is about to do, and what does the cluster already run?

Asks the API server (SelfSubjectAccessReview) for every verb the chosen action needs and names
each one missing; checks that the GPU Operator's CRDs are served (else says how to install the
operator); finds the operator's namespace (the live ClusterPolicy's ``status.namespace``, never a
guess) and release (its Deployment's image tag); checks that the ConfigMap and Secrets the plan
names exist there (:mod:`wizard.cluster.core.preflight_refs`); and reads the live ClusterPolicy and NVIDIADrivers
so an upgrade starts from what runs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from wizard.cluster.core.preflight_refs import reference_checks
from wizard.cluster.errors import ApiError
from wizard.cluster.gateway import Gateway
from wizard.engine.naming import Release, image_tag
from wizard.engine.ownership import ownership_of
from wizard.engine.plan import DEFAULT_NAMESPACE, DEFAULT_RELEASE, Mode, Plan
from wizard.engine.policy_health import policy_health
from wizard.engine.results import Check, Status
from wizard.engine.textsafe import printable, shell_command

GROUP = "nvidia.com"
POLICY = (GROUP, "v1", "clusterpolicies")
DRIVERS = (GROUP, "v1alpha1", "nvidiadrivers")
HELM_REPO = "https://helm.ngc.nvidia.com/nvidia"


@dataclass(frozen=True)
class Permission:
    """One verb on one resource the action needs."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    namespace: str = ""
    why: str = ""
    required: bool = True
    """False: missing it only limits something optional (shown as a warning)."""

    def text(self) -> str:
        """``create pods/exec in gpu-operator`` (kubectl auth can-i wording)."""
        resource = f"{self.resource}.{self.group}" if self.group else self.resource
        if self.subresource:
            resource += f"/{self.subresource}"
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.verb} {resource}{where}"


@dataclass
class Preflight:
    """Everything preflight learned; ``ok`` when no check failed."""

    checks: list[Check]
    crds: bool
    """The ClusterPolicy CRD is served (NVIDIADriver too, when the plan uses it)."""
    operator_namespace: str
    operator_release: str
    """The operator Deployment's image tag (``vMAJOR.MINOR.PATCH``), empty when no operator runs."""
    cluster_policy: dict[str, Any] | None
    nvidia_drivers: list[dict[str, Any]] = field(default_factory=list)
    operator_image: str = ""
    helm_release: str = ""
    missing_permissions: list[Permission] = field(default_factory=list)
    operator_missing: bool = False
    """No operator Deployment found (CRDs absent, or present without it): gpu-wizard can install it."""
    installs_operator: bool = False
    """Preflight ran for an install of the operator (``--install-operator``): its absence is no failure."""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def permissions(plan: Plan | None, namespace: str) -> list[Permission]:
    """What discovery, apply, rollback and verification of ``plan`` need (reads only without a plan)."""
    ns = namespace
    needed = [
        Permission("list", "nodes", why="discover GPU nodes"),
        Permission("watch", "nodes", why="follow node changes", required=False),
        Permission("list", "clusterpolicies", GROUP, why="read the live ClusterPolicy"),
        Permission("watch", "clusterpolicies", GROUP, why="follow the ClusterPolicy's state during a rollout"),
        Permission("list", "nvidiadrivers", GROUP, why="read live NVIDIADrivers", required=False),
        Permission("list", "deployments", "apps", namespace=ns, why="find the operator release", required=False),
        Permission("list", "daemonsets", "apps", namespace=ns, why="follow the driver rollout"),
        Permission("watch", "daemonsets", "apps", namespace=ns, why="follow the driver rollout"),
        Permission("list", "pods", namespace=ns, why="find the driver pods"),
        Permission(
            "list", "pods", why="name the GPU workloads an upgrade evicts (pods of every namespace)", required=False
        ),
    ]
    if plan is None:
        return needed
    needed += [
        Permission("get", "clusterpolicies", GROUP, why="diff against the live ClusterPolicy"),
        Permission("create", "clusterpolicies", GROUP, why="apply a new ClusterPolicy"),
        Permission("patch", "clusterpolicies", GROUP, why="apply the ClusterPolicy (server-side apply)"),
        Permission("update", "clusterpolicies", GROUP, why="roll back from the backup", required=False),
        # a first install's rollback (by hand, or the undo of a failed apply) deletes the policy it created
        Permission(
            "delete", "clusterpolicies", GROUP, why="roll back a ClusterPolicy the apply created", required=False
        ),
    ]
    if plan.driver_enabled and plan.driver.useNvidiaDriverCRD:
        needed += [
            Permission("get", "nvidiadrivers", GROUP, why="diff against live NVIDIADrivers"),
            Permission("watch", "nvidiadrivers", GROUP, why="follow the NVIDIADrivers' state during a rollout"),
            Permission("create", "nvidiadrivers", GROUP, why="apply NVIDIADriver CRs"),
            Permission("patch", "nvidiadrivers", GROUP, why="apply NVIDIADriver CRs"),
            Permission("update", "nvidiadrivers", GROUP, why="roll back changed NVIDIADrivers", required=False),
            Permission("delete", "nvidiadrivers", GROUP, why="roll back created NVIDIADrivers", required=False),
        ]
    if plan.mode is Mode.PREINSTALLED:
        needed += [
            Permission("create", "pods", namespace=ns, why="run nvidia-smi on each host (probe pod)"),
            Permission("delete", "pods", namespace=ns, why="remove the probe pods"),
        ]
    needed += [
        Permission("get", "pods", namespace=ns, why="read driver pods"),
        Permission("watch", "pods", namespace=ns, why="follow the rollout"),
        Permission(
            "get", "pods", subresource="log", namespace=ns, why="quote a failing container's log", required=False
        ),
        # an exec over websocket is a GET upgrade: the API server checks `get` on pods/exec, and since
        # Kubernetes 1.35 (AuthorizePodWebsocketUpgradeCreatePermission) `create` as well
        Permission(
            "get", "pods", subresource="exec", namespace=ns, why="run nvidia-smi in the driver pods (websocket exec)"
        ),
        Permission("create", "pods", subresource="exec", namespace=ns, why="run nvidia-smi in the driver pods"),
        # the host checks (before apply and in verification): one probe DaemonSet a run, owned by a deadline Job
        Permission("create", "daemonsets", "apps", namespace=ns, why="run the host checks (probe DaemonSet)"),
        Permission("delete", "daemonsets", "apps", namespace=ns, why="remove the host probe"),
        # a driver DaemonSet the operator leaves behind for the plan: read again, deleted with the apply, and
        # re-created by a rollback (wizard.engine.leftovers)
        Permission("get", "daemonsets", "apps", namespace=ns, why="re-read a leftover driver DaemonSet"),
        Permission("create", "jobs", "batch", namespace=ns, why="bound the host probe by a deadline Job"),
        Permission("delete", "jobs", "batch", namespace=ns, why="remove the host probe's deadline Job"),
        Permission("list", "jobs", "batch", namespace=ns, why="find host probes left behind (gpu-wizard cleanup)"),
    ]
    return needed


async def missing_permissions(gateway: Gateway, needed: list[Permission]) -> list[Permission]:
    """The permissions the API server denies (one SelfSubjectAccessReview each, concurrently)."""
    unique = list(dict.fromkeys(needed))

    async def denied(p: Permission) -> bool:
        allowed, _ = await gateway.access_review(
            p.verb, p.resource, group=p.group, namespace=p.namespace, subresource=p.subresource
        )
        return not allowed

    answers = await asyncio.gather(*(denied(p) for p in unique))
    return [p for p, no in zip(unique, answers, strict=True) if no]


def install_hint(release: str) -> str:
    """How to install the GPU Operator with the plan's values (the chart's defaults would start the wrong driver)."""
    return (
        f"let gpu-wizard install GPU Operator {printable(release)} with your choices: "
        f"{shell_command(['gpu-wizard', 'apply', '--install-operator'])} (the chart's defaults would start "
        "NVIDIA's upstream driver at once)"
    )


def not_installed(release: str) -> str:
    """The words for a cluster without an operator that gpu-wizard will install (Connect, CLI)."""
    return f"GPU Operator not installed: gpu-wizard will install {printable(release)} with your choices"


def active_policy(policies: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ClusterPolicy the operator acts on: the oldest one (the others report ``ignored``)."""
    if not policies:
        return None
    return min(
        policies, key=lambda p: (str((p.get("metadata") or {}).get("creationTimestamp") or ""), p["metadata"]["name"])
    )


def _operator_container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = ((deployment.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or [{}]
    return next((c for c in containers if c.get("name") == "gpu-operator"), containers[0])


def _is_operator(deployment: dict[str, Any]) -> bool:
    meta = deployment.get("metadata") or {}
    labels = meta.get("labels") or {}
    return (
        labels.get("app.kubernetes.io/component") == "gpu-operator"
        or labels.get("app") == "gpu-operator"
        or meta.get("name") == "gpu-operator"
    )


async def find_operator(gateway: Gateway, namespace: str | None) -> dict[str, Any] | None:
    """The operator Deployment (chart labels ``app.kubernetes.io/component`` / ``app`` = gpu-operator)."""
    try:
        found = [d for d in await gateway.list_deployments(namespace) if _is_operator(d)]
    except ApiError as exc:
        if exc.status == 403:
            return None
        raise
    return found[0] if found else None


def _release_check(plan: Plan | None, release: str, helm_release: str = "") -> Check | None:
    """The plan's release against the running operator's. ``helm_release``: the Helm release that owns the ClusterPolicy
    (and the operator Deployment, where it names one); another release is then an upgrade of that release to the
    plan's chart (what the Helm path carries out), not a mismatch."""
    if plan is None or not release:
        return None
    try:
        live = Release.parse(release)
    except ValueError:
        return Check(
            "release",
            Status.WARN,
            f"operator image tag {release!r} is not a release version; naming rules of {plan.operator.version} assumed",
        )
    wanted = Release.parse(plan.operator.version)
    if live != wanted and helm_release:
        return Check(
            "release",
            Status.WARN,
            f"the cluster runs GPU Operator {live}, the plan targets {wanted}: Helm release {helm_release} is "
            f"upgraded to the {wanted} chart",
            hint="the change goes through helm upgrade (a direct apply with --override-helm is refused: the "
            f"{live} operator would get a {wanted} ClusterPolicy)",
            data={"upgrade": str(wanted)},
        )
    if (live.major, live.minor) != (wanted.major, wanted.minor):
        return Check(
            "release",
            Status.FAIL,
            f"the cluster runs GPU Operator {live}, the plan targets {wanted}",
            hint=f"set operator.version: {live} in the answers (image names and CRD fields differ between releases)",
        )
    if live != wanted:
        return Check("release", Status.WARN, f"the cluster runs {live}, the plan targets {wanted} (same release line)")
    return Check("release", Status.PASS, f"the plan targets the running release {live}")


async def run_preflight(gateway: Gateway, plan: Plan | None, *, install_operator: bool = False) -> Preflight:
    """Run every preflight check for ``plan`` (or for read-only use when None).

    ``install_operator``: the wizard installs the operator when none runs, so missing CRDs and a missing
    operator Deployment are what it will fix, not failures.
    """
    checks: list[Check] = []
    policy_api, drivers_api = await asyncio.gather(
        gateway.api_resources(*POLICY[:2]), gateway.api_resources(*DRIVERS[:2])
    )
    has_policy = any(r.get("name") == POLICY[2] for r in (policy_api or {}).get("resources") or [])
    has_drivers = any(r.get("name") == DRIVERS[2] for r in (drivers_api or {}).get("resources") or [])
    release_hint = plan.operator.version if plan else DEFAULT_RELEASE
    wants_drivers = bool(plan and plan.driver_enabled and plan.driver.useNvidiaDriverCRD)
    if not has_policy:
        checks.append(
            Check(
                "crd",
                Status.FAIL,
                "the ClusterPolicy CRD (clusterpolicies.nvidia.com) is not installed",
                hint=install_hint(release_hint),
            )
        )
    elif wants_drivers and not has_drivers:
        checks.append(
            Check(
                "crd",
                Status.FAIL,
                "the NVIDIADriver CRD (nvidiadrivers.nvidia.com) is not installed",
                hint=install_hint(release_hint),
            )
        )
    else:
        checks.append(Check("crd", Status.PASS, "GPU Operator CRDs installed"))

    policies = await gateway.list_custom(*POLICY) if has_policy else []
    drivers = await gateway.list_custom(*DRIVERS) if has_drivers else []
    policy = active_policy(policies)
    namespace = str(((policy or {}).get("status") or {}).get("namespace") or "")
    # the plan's namespace first: a user granted only that namespace (as documented) may not list them all
    deployment = await find_operator(gateway, namespace or (plan.operator.namespace if plan else DEFAULT_NAMESPACE))
    if deployment is None and not namespace:
        deployment = await find_operator(gateway, None)
    if not namespace:
        namespace = (
            deployment["metadata"]["namespace"]
            if deployment
            else (plan.operator.namespace if plan else DEFAULT_NAMESPACE)
        )
    operator_image = str(_operator_container(deployment).get("image") or "") if deployment else ""
    release = image_tag(operator_image) if operator_image else ""
    helm_release = ""
    if deployment:
        meta = deployment["metadata"]
        helm_release = str(
            (meta.get("annotations") or {}).get("meta.helm.sh/release-name")
            or (meta.get("labels") or {}).get("app.kubernetes.io/instance")
            or ""
        )
        checks.append(
            Check(
                "operator",
                Status.PASS,
                f"GPU Operator {release or '(unknown release)'} runs in namespace {namespace}",
                data={"image": operator_image},
            )
        )
    elif has_policy:
        checks.append(
            Check(
                "operator",
                Status.WARN,
                f"no GPU Operator Deployment found (namespace {namespace})",
                hint=f"the ClusterPolicy has no effect until the operator runs; {install_hint(release_hint)}",
            )
        )
    missing = deployment is None
    if missing and install_operator:  # what the install fixes: the CRD and operator findings give way to it
        checks = [c for c in checks if c.check not in ("crd", "operator")]
        checks.insert(0, Check("operator", Status.PASS, not_installed(release_hint)))
        owner = ownership_of(policy)
        if policy is not None and not owner.helm:
            name = str(policy["metadata"]["name"])
            checks.append(
                Check(
                    "operator",
                    Status.FAIL,
                    f"ClusterPolicy {name} exists and no Helm release owns it: the chart cannot be installed over it",
                    hint=f"remove it first ({shell_command(['kubectl', 'delete', 'clusterpolicy', name])}), "
                    "then install: the chart creates it with your choices",
                )
            )
    owner = ownership_of(policy)
    # the chart deploys both: a policy a Helm release owns is upgraded with that release, unless the operator
    # Deployment names another one
    same_release = owner.release if owner.helm and helm_release in ("", owner.release) else ""
    release_check = _release_check(plan, release, same_release)
    if release_check:
        checks.append(release_check)
    if policy is not None:  # not ready: a warning (the wizard is how it gets fixed), in Verify's words
        health = policy_health(policy)
        extra = f"; {len(policies) - 1} more ClusterPolicy ignored by the operator" if len(policies) > 1 else ""
        status = Status.PASS if health.ready else Status.WARN
        checks.append(Check("cluster-policy", status, f"live ClusterPolicy {health.message}{extra}", hint=health.hint))
    elif has_policy:
        checks.append(Check("cluster-policy", Status.PASS, "no ClusterPolicy yet: apply creates one"))

    if plan is not None:
        checks += await reference_checks(gateway, plan, namespace)
    missing_perms = await missing_permissions(gateway, permissions(plan, namespace))
    for perm in missing_perms:
        status = Status.FAIL if perm.required else Status.WARN
        checks.append(
            Check(
                "permission",
                status,
                f"missing permission: {perm.text()} (needed to {perm.why})",
                hint="ask a cluster admin to grant it (RBAC)",
                data={
                    "verb": perm.verb,
                    "resource": perm.resource,
                    "group": perm.group,
                    "subresource": perm.subresource,
                    "namespace": perm.namespace,
                },
            )
        )
    if not missing_perms:
        checks.append(Check("permission", Status.PASS, f"all {len(permissions(plan, namespace))} permissions granted"))
    return Preflight(
        checks=checks,
        crds=has_policy and (has_drivers or not wants_drivers),
        operator_namespace=namespace,
        operator_release=release,
        cluster_policy=policy,
        nvidia_drivers=drivers,
        operator_image=operator_image,
        helm_release=helm_release,
        missing_permissions=missing_perms,
        operator_missing=missing,
        installs_operator=missing and install_operator,
    )
