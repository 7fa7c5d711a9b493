"""The simulated GPU Operator's NVIDIADriver controller (``controllers/nvidiadriver_controller.go``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wizard.demo.rules.operator_rules import (
    LABEL_GPU_PRESENT,
    LABEL_KERNEL,
    LABEL_NVIDIADRIVER_OWNER,
    LABEL_OS_ID,
    LABEL_OS_VERSION,
    LABEL_OS_VERSION_MAJOR,
    LABEL_PRECOMPILED,
    LABEL_PRECOMPILED_KERNEL,
    OperatorRelease,
    RuleError,
    nvidiadriver_app_name,
    nvidiadriver_image,
    pool_os_tag,
    repo_config_dirs,
    sanitized_kernel,
)
from wizard.demo.sim import operands
from wizard.demo.sim.gpu_labels import DEPLOY_PREFIX
from wizard.demo.sim.operands import OperandError
from wizard.demo.sim.operator_sim import OperatorInfo, ds_ready
from wizard.demo.sim.placement import matches
from wizard.demo.sim.simutil import Writer, is_owned_by, labels_of, read, set_condition, thaw

OWNER_LABEL = LABEL_NVIDIADRIVER_OWNER


@dataclass(frozen=True)
class NodePool:
    """One pool of ``getNodePools``: the nodes one driver DaemonSet serves."""

    name: str
    os_id: str
    os_tag: str
    kernel: str
    node_selector: dict[str, str]


def node_pools(
    cr: dict[str, Any], members: list[dict[str, Any]], release: OperatorRelease, precompiled: bool
) -> list[NodePool]:
    """``getNodePools`` over the CR's GPU nodes (first node of a pool wins, by name); RuleError for an OS tag the release cannot build."""
    selector = dict((cr.get("spec") or {}).get("nodeSelector") or {})
    selector[LABEL_GPU_PRESENT] = "true"
    if release.rules.owner_label:
        selector[OWNER_LABEL] = cr["metadata"]["name"]
    pools: dict[str, NodePool] = {}
    for node in sorted(members, key=lambda n: n["metadata"]["name"]):
        labels = labels_of(node)
        os_id, version = labels.get(LABEL_OS_ID), labels.get(LABEL_OS_VERSION)
        if os_id is None or version is None:
            continue  # "Could not find NFD label for node. Is NFD installed?"
        try:
            tag = pool_os_tag(os_id, version, release)
        except RuleError as exc:
            raise RuleError(f"failed to get OS info for node {node['metadata']['name']}: {exc}") from None
        pool_selector = {**selector, LABEL_OS_ID: os_id}
        if release.rules.pool_selects_major and not tag.endswith(version):
            major = labels.get(LABEL_OS_VERSION_MAJOR)
            if major is None:
                continue
            pool_selector[LABEL_OS_VERSION_MAJOR] = major
        else:
            pool_selector[LABEL_OS_VERSION] = version
        name, kernel = tag, ""
        if precompiled:
            kernel = labels.get(LABEL_KERNEL, "")
            if LABEL_KERNEL not in labels:
                continue
            pool_selector[LABEL_KERNEL] = kernel
            name = f"{tag}-{sanitized_kernel(kernel)}"
        pools.setdefault(name, NodePool(name, os_id, tag, kernel, pool_selector))
    return list(pools.values())


class NVIDIADriverController:
    """Reconciles NVIDIADriver CRs into per-pool driver DaemonSets and their status."""

    def reconcile(self, writer: Writer, operator: OperatorInfo) -> None:
        """One pass over every NVIDIADriver."""
        store = writer.store
        drivers = sorted(
            read(store, "nvidiadrivers"),
            key=lambda d: (d["metadata"].get("creationTimestamp", ""), d["metadata"]["name"]),
        )
        if not drivers:
            return
        policies = read(store, "clusterpolicies")  # the API lists by name: Items[0] is the first by name
        nodes = [n for n in read(store, "nodes") if labels_of(n).get(LABEL_GPU_PRESENT) == "true"]
        claims = self._assign(drivers, nodes)
        for cr in drivers:
            uid = cr["metadata"].get("uid", "")
            owned = {
                ds["metadata"]["name"]: ds
                for ds in read(store, "daemonsets", operator.namespace)
                if is_owned_by(ds, uid)
            }
            if not policies:
                self._status(
                    writer, cr, operator, "notReady", "ReconcileFailed", "no ClusterPolicy object found in the cluster"
                )
                continue
            driver_spec = (policies[0].get("spec") or {}).get("driver") or {}
            if not driver_spec.get("useNvidiaDriverCRD") and operator.release.rules.crd_switch:
                # Reconciliation skipped (Disabled) and nothing deleted: its DaemonSets keep their pods beside the
                # ClusterPolicy's own (the real controller's early return; gpu-wizard's apply deletes them).
                self._status(
                    writer, cr, operator, "disabled", "Reconciled", "useNvidiaDriverCRD is not enabled in ClusterPolicy"
                )
                continue
            members, conflict = claims[cr["metadata"]["name"]]
            if conflict:
                self._status(writer, cr, operator, "notReady", "ConflictingNodeSelector", conflict)
                continue
            if operator.release.rules.owner_label:
                self._label_owner(writer, members, cr["metadata"]["name"])
            try:
                wanted = self._render(cr, members, operator)
            except OperandError as exc:
                self._status(
                    writer, cr, operator, "notReady", "ReconcileFailed", f"Error syncing state state-driver: {exc}"
                )
                continue
            applied = []
            for ds in wanted:
                current = owned.get(ds["metadata"]["name"])
                if current is None:
                    applied.append(writer.create("daemonsets", ds))
                else:
                    merged = {
                        **current,
                        "metadata": {**current["metadata"], "labels": ds["metadata"]["labels"]},
                        "spec": ds["spec"],
                    }
                    applied.append(writer.update("daemonsets", merged))
            names = {ds["metadata"]["name"] for ds in wanted}
            for name in owned:
                if name not in names:
                    writer.delete("daemonsets", name, operator.namespace)
            if all(ds_ready(ds) for ds in applied):
                self._status(
                    writer, cr, operator, "ready", "Reconciled", "All resources have been successfully reconciled"
                )
            else:
                self._status(writer, cr, operator, "notReady", "DriverNotReady", "Waiting for driver pod to be ready")

    @staticmethod
    def _assign(
        drivers: list[dict[str, Any]], nodes: list[dict[str, Any]]
    ) -> dict[str, tuple[list[dict[str, Any]], str]]:
        """Which GPU nodes each CR manages, and a conflict message per CR that overlaps an older one."""
        owner_of: dict[str, str] = {}
        out: dict[str, tuple[list[dict[str, Any]], str]] = {}
        defaults = []
        for cr in drivers:
            spec = cr.get("spec") or {}
            if spec.get("default"):
                defaults.append(cr)
                continue
            selector = spec.get("nodeSelector") or {}
            members = [n for n in nodes if matches(labels_of(n), selector)]
            clash = sorted(n["metadata"]["name"] for n in members if n["metadata"]["name"] in owner_of)
            if clash:
                out[cr["metadata"]["name"]] = (
                    [],
                    f"conflicting NodeSelector: node(s) {', '.join(clash)} already managed by NVIDIADriver "
                    f"{owner_of[clash[0]]}",
                )
                continue
            owner_of.update({n["metadata"]["name"]: cr["metadata"]["name"] for n in members})
            out[cr["metadata"]["name"]] = (members, "")
        for cr in defaults:
            members = [n for n in nodes if n["metadata"]["name"] not in owner_of]
            out[cr["metadata"]["name"]] = (members, "")
        return out

    @staticmethod
    def _label_owner(writer: Writer, members: list[dict[str, Any]], name: str) -> None:
        for node in members:
            if labels_of(node).get(OWNER_LABEL) != name:
                node = thaw(node)
                labels_of(node)[OWNER_LABEL] = name
                writer.update("nodes", node)

    @staticmethod
    def _render(cr: dict[str, Any], members: list[dict[str, Any]], operator: OperatorInfo) -> list[dict[str, Any]]:
        spec = cr.get("spec") or {}
        release = operator.release
        precompiled = bool(spec.get("usePrecompiled"))
        repository, image, version = (str(spec.get(k) or "") for k in ("repository", "image", "version"))
        manager_image = operands.operand_image(spec.get("manager") or {}, "DRIVER_MANAGER_IMAGE", operator.env)
        driver_type = str(spec.get("driverType") or "gpu")
        try:
            pools = node_pools(cr, members, release, precompiled)
        except RuleError as exc:
            raise OperandError(str(exc)) from None
        repo_config = "" if precompiled else str((spec.get("repoConfig") or {}).get("name") or "")
        # sanitizeDriverLabels: the CR's labels never override app or app.kubernetes.io/* (pod selectors are immutable).
        own_labels = {
            str(k): str(v)
            for k, v in (spec.get("labels") or {}).items()
            if k != "app" and not str(k).startswith("app.kubernetes.io/")
        }
        component = "nvidia-vgpu-host-manager" if driver_type == "vgpu-host-manager" else operands.COMPONENT_DRIVER
        deploy_key = "vgpu-manager" if driver_type == "vgpu-host-manager" else "driver"
        driver_section = {
            **spec,
            "manager": spec.get("manager") or {},
            "imagePullSecrets": spec.get("imagePullSecrets") or [],
        }
        out = []
        for pool in sorted(pools, key=lambda p: p.name):
            try:
                ref = nvidiadriver_image(
                    repository, image, version, precompiled=precompiled, kernel=pool.kernel, os_tag=pool.os_tag
                )
            except RuleError as exc:
                raise OperandError(f"failed to get driver image path: {exc}") from None
            repo_dir = ""
            if repo_config:
                repo_dir = repo_config_dirs(release).get(pool.os_id, "")
                if not repo_dir:
                    raise OperandError(
                        "ERROR: failed to get destination directory for custom repo config: "
                        f"distribution {pool.os_id} not supported"
                    )
            name = nvidiadriver_app_name(driver_type, pool.os_tag, cr["metadata"].get("uid", ""), pool.kernel)
            labels = {
                "app": name,
                "nvidia.com/node.os-version": pool.os_tag,
                LABEL_PRECOMPILED: "true" if precompiled else "false",
                "app.kubernetes.io/component": component,
            }
            if precompiled:
                labels[LABEL_PRECOMPILED_KERNEL] = sanitized_kernel(pool.kernel)
            labels.update(own_labels)
            ds = operands.driver_daemonset(
                name=name,
                namespace=operator.namespace,
                labels=labels,
                node_selector={f"{DEPLOY_PREFIX}{deploy_key}": "true", **pool.node_selector},
                image=ref,
                manager_image=manager_image,
                owner=cr,
                driver=driver_section,
                precompiled=precompiled,
                repo_config=repo_config,
                repo_config_dir=repo_dir,
            )
            out.append(ds)
        return out

    @staticmethod
    def _status(
        writer: Writer, cr: dict[str, Any], operator: OperatorInfo, state: str, reason: str, message: str
    ) -> None:
        current = writer.store.get("nvidiadrivers", cr["metadata"]["name"])
        if current is None:
            return
        status = current.setdefault("status", {})
        conditions = status.setdefault("conditions", [])
        status["state"] = state
        status["namespace"] = operator.namespace
        if state == "ready":
            set_condition(conditions, "Ready", "True", reason, message)
            set_condition(conditions, "Error", "False", "Ready")
        else:
            set_condition(conditions, "Ready", "False", "Error")
            set_condition(conditions, "Error", "True", reason, message)
        writer.update("nvidiadrivers", current)
