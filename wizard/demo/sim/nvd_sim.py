"""The simulated GPU Operator's NVIDIADriver controller (``controllers/nvidiadriver_controller.go``).

Each NVIDIADriver gets one driver DaemonSet per node pool: per OS tag, and per kernel when
precompiled (``internal/state/nodepool.go``), named with ``naming.nvidiadriver_daemonset_name``.
Without ``driver.useNvidiaDriverCRD: true`` in the ClusterPolicy every NVIDIADriver is ``disabled``.
Non-default CRs claim the GPU nodes their ``nodeSelector`` matches; a ``default: true`` CR (v26.7)
takes the rest; a node claimed twice is a ``ConflictingNodeSelector`` error.
"""

from __future__ import annotations

from typing import Any

from wizard.demo.sim import operands
from wizard.demo.sim.operands import OperandError
from wizard.demo.sim.operator_sim import DEPLOY_PREFIX, OperatorInfo, ds_ready, node_tag_os
from wizard.demo.sim.simutil import Writer, is_owned_by, labels_of, read, set_condition, thaw
from wizard.engine.facts import LABEL_GPU_PRESENT, LABEL_KERNEL, LABEL_OS_ID, LABEL_OS_VERSION
from wizard.engine.naming import DIGEST_PREFIX, Release, driver_image, nvidiadriver_daemonset_name, sanitize_kernel

OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"


def _matches(labels: dict[str, str], selector: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


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
            if not driver_spec.get("useNvidiaDriverCRD"):
                for name in owned:
                    writer.delete("daemonsets", name, operator.namespace)
                self._status(
                    writer, cr, operator, "disabled", "Reconciled", "useNvidiaDriverCRD is not enabled in ClusterPolicy"
                )
                continue
            members, conflict = claims[cr["metadata"]["name"]]
            if conflict:
                self._status(writer, cr, operator, "notReady", "ConflictingNodeSelector", conflict)
                continue
            if operator.release >= Release(26, 7):
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
            members = [n for n in nodes if _matches(labels_of(n), selector)]
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
        precompiled = bool(spec.get("usePrecompiled"))
        repository, image, version = (str(spec.get(k) or "") for k in ("repository", "image", "version"))
        if precompiled and version.startswith(DIGEST_PREFIX):
            raise OperandError("specifying image digest is not supported when precompiled is enabled")
        operands.operand_image(spec, "", {})  # NVIDIADriver has no env fallback: all three or none
        manager_image = operands.operand_image(spec.get("manager") or {}, "DRIVER_MANAGER_IMAGE", operator.env)
        driver_type = str(spec.get("driverType") or "gpu")
        pools: dict[tuple[str, str], dict[str, str]] = {}
        for node in members:
            labels = labels_of(node)
            tag = node_tag_os(labels, operator.release)
            if not tag:
                continue
            kernel = labels.get(LABEL_KERNEL, "") if precompiled else ""
            pools.setdefault((tag, kernel), {"os_id": labels[LABEL_OS_ID], "os_version": labels[LABEL_OS_VERSION]})
        repo_config = str((spec.get("repoConfig") or {}).get("name") or "")
        out = []
        for (tag, kernel), info in sorted(pools.items()):
            if repo_config and not precompiled and info["os_id"] not in operands.REPO_CONFIG_DIRS:
                raise OperandError(f"repository configuration not supported for distribution {tag}")
            name = nvidiadriver_daemonset_name(driver_type, tag, cr["metadata"].get("uid", ""), kernel)
            labels = {
                "app": name,
                "app.kubernetes.io/component": operands.COMPONENT_DRIVER,
                "app.kubernetes.io/managed-by": "gpu-operator",
                "nvidia.com/node.os-version": tag,
                "nvidia.com/precompiled": "true" if precompiled else "false",
            }
            selector = {
                f"{DEPLOY_PREFIX}driver": "true",
                LABEL_OS_ID: info["os_id"],
                LABEL_OS_VERSION: info["os_version"],
                **(spec.get("nodeSelector") or {}),
            }
            if precompiled:
                labels["nvidia.com/precompiled.kernel-version"] = sanitize_kernel(kernel)
                selector[LABEL_KERNEL] = kernel
            if operator.release >= Release(26, 7):
                selector[OWNER_LABEL] = cr["metadata"]["name"]
            ref = driver_image(
                precompiled=precompiled, repository=repository, image=image, version=version, kernel=kernel, tag_os=tag
            )
            driver_section = {
                **spec,
                "manager": spec.get("manager") or {},
                "imagePullSecrets": spec.get("imagePullSecrets") or [],
            }
            ds = operands.driver_daemonset(
                name=name,
                namespace=operator.namespace,
                labels=labels,
                node_selector=selector,
                image=ref,
                manager_image=manager_image,
                owner=cr,
                driver=driver_section,
                os_id=info["os_id"],
                precompiled=precompiled,
                repo_config="" if precompiled else repo_config,
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
