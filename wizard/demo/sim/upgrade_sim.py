"""The operator's driver upgrade controller, simulated one state per node per tick."""

from __future__ import annotations

import time
from typing import Any

from wizard.demo.rules.operator_rules import LABEL_UPGRADE_STATE
from wizard.demo.sim.operands import COMPONENT_DRIVER
from wizard.demo.sim.simutil import Writer, controller_uid, labels_of, read, template_hash, thaw
from wizard.demo.sim.world import pod_ready

UPGRADE_ENABLED_ANNOTATION = "nvidia.com/gpu-driver-upgrade-enabled"
STEPS = {
    "upgrade-required": "cordon-required",
    "cordon-required": "wait-for-jobs-required",
    "wait-for-jobs-required": "pod-deletion-required",
    "pod-deletion-required": "drain-required",
    "drain-required": "pod-restart-required",
    "pod-restart-required": "validation-required",
    "validation-required": "uncordon-required",
    "uncordon-required": "upgrade-done",
}
IN_PROGRESS = frozenset(STEPS) - {"upgrade-required"}
_FAILED_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff", "InvalidImageName"})


def pod_failing(pod: dict[str, Any]) -> bool:
    """A container of the pod is stuck on a pull or crash loop."""
    status = pod.get("status") or {}
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        if ((cs.get("state") or {}).get("waiting") or {}).get("reason") in _FAILED_REASONS:
            return True
    return False


class UpgradeController:
    """Steps outdated driver nodes through the upgrade states."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.hold: dict[str, str] = {}
        """Seeding a scenario mid-upgrade: node -> the state it stops in."""
        self.state_seconds = 0.0
        """Least time a node stays in an upgrade state (0: one tick)."""
        self._entered: dict[str, float] = {}

    def release(self, state_seconds: float) -> None:
        """The demo starts: held nodes go on, each state taking ``state_seconds`` from now."""
        self.hold = {}
        self.state_seconds = state_seconds
        now = self.clock()
        self._entered = dict.fromkeys(self._entered, now)

    def wake_in(self) -> float | None:
        """Seconds until a node waiting out ``state_seconds`` may move (None: nothing waits on the clock)."""
        if not self.state_seconds:
            return None
        now = self.clock()
        # a node past its time that still waits is held by maxParallelUpgrades: another node's move frees it
        due = [entered + self.state_seconds - now for entered in self._entered.values()]
        future = [seconds for seconds in due if seconds > 0]
        return min(future) if future else None

    def reconcile(self, writer: Writer, namespace: str, policy: dict[str, Any]) -> None:
        """One step for every node that has a driver pod (or is mid-upgrade), per ``driver.upgradePolicy``."""
        store = writer.store
        auto = policy.get("autoUpgrade", True) is not False
        if not auto:
            return
        max_parallel = 0 if self.hold else int(policy.get("maxParallelUpgrades", 1) or 0)
        now = self.clock()
        daemonsets = {
            ds["metadata"]["uid"]: ds
            for ds in read(store, "daemonsets", namespace)
            if labels_of(ds).get("app.kubernetes.io/component") == COMPONENT_DRIVER
        }
        if not daemonsets:
            return
        revisions = {uid: template_hash(ds["spec"]["template"]) for uid, ds in daemonsets.items()}
        driver_pods: dict[str, dict[str, Any]] = {}
        for candidate in read(store, "pods", namespace):
            uid = controller_uid(candidate)
            if uid in daemonsets and candidate.get("spec", {}).get("nodeName"):
                driver_pods[candidate["spec"]["nodeName"]] = candidate
        nodes = read(store, "nodes")
        busy = sum(1 for n in nodes if labels_of(n).get(LABEL_UPGRADE_STATE) in IN_PROGRESS)
        on_nodes: dict[str, list[dict[str, Any]]] | None = None
        for node in nodes:
            name = node["metadata"]["name"]
            labels = labels_of(node)
            state = labels.get(LABEL_UPGRADE_STATE, "")
            pod: dict[str, Any] | None = driver_pods.get(name)
            if pod is None and state in ("", "upgrade-done"):
                continue
            ds = daemonsets.get(controller_uid(pod)) if pod else None
            current = (
                ds is not None
                and pod is not None
                and labels_of(pod).get("controller-revision-hash") == revisions[ds["metadata"]["uid"]]
            )
            if self.hold.get(name) == state and (state != "upgrade-done" or current):
                continue  # seeding mid-upgrade: this node stops here (upgrade-done only once it runs the new pod)
            entered = self._entered.get(name)
            if entered is not None and now - entered < self.state_seconds:
                continue
            new_state, unschedulable = self._next(state, pod, current, writer, namespace)
            if new_state != state and state in ("pod-deletion-required", "drain-required"):
                if on_nodes is None:  # read once per pass, only when a node leaves one of these states
                    on_nodes = pods_by_node(store)
                evict(writer, on_nodes.get(name, []), state, policy)
            if new_state == "cordon-required" and state == "upgrade-required":
                if max_parallel and busy >= max_parallel:
                    continue
                busy += 1
            annotations = node["metadata"].get("annotations") or {}
            cordon_change = (
                unschedulable is not None and bool(node.get("spec", {}).get("unschedulable")) != unschedulable
            )
            if new_state == state and annotations.get(UPGRADE_ENABLED_ANNOTATION) == "true" and not cordon_change:
                continue
            node = thaw(node)
            node["metadata"].setdefault("annotations", {})[UPGRADE_ENABLED_ANNOTATION] = "true"
            labels_of(node)[LABEL_UPGRADE_STATE] = new_state
            if new_state in STEPS and new_state != state:
                self._entered[name] = now
            elif new_state not in STEPS:
                self._entered.pop(name, None)  # done or failed: nothing waits on the clock
            if cordon_change:
                if unschedulable:
                    node.setdefault("spec", {})["unschedulable"] = True
                else:
                    node.setdefault("spec", {}).pop("unschedulable", None)
            writer.update("nodes", node)

    @staticmethod
    def _next(
        state: str, pod: dict[str, Any] | None, current: bool, writer: Writer, namespace: str
    ) -> tuple[str, bool | None]:
        """The node's next upgrade state and whether it must be (un)cordoned (None: leave it)."""
        if state in ("", "upgrade-done"):
            if pod is not None and not current:
                return "upgrade-required", None
            return ("upgrade-done" if pod is not None and pod_ready(pod) else state), None
        if state == "upgrade-failed":
            return ("uncordon-required", None) if pod is not None and current and pod_ready(pod) else (state, None)
        if state == "upgrade-required":
            return "cordon-required", None
        if state == "cordon-required":
            return STEPS[state], True
        if state == "pod-restart-required":
            if pod is not None and not current:
                writer.delete("pods", pod["metadata"]["name"], namespace)
            return STEPS[state], None
        if state == "validation-required":
            if pod is None or not current:
                return state, None  # the DaemonSet controller has not recreated the pod yet
            if pod_failing(pod):
                return "upgrade-failed", None
            return (STEPS[state], None) if pod_ready(pod) else (state, None)
        if state == "uncordon-required":
            return STEPS[state], False
        return STEPS.get(state, state), None


def uses_gpus(pod: dict[str, Any]) -> bool:
    """A container asks for a GPU resource (``nvidia.com/gpu``, a MIG slice): what the upgrade's pod deletion takes."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        for key in {**(resources.get("limits") or {}), **(resources.get("requests") or {})}:
            if key.startswith(("nvidia.com/gpu", "nvidia.com/mig-")):
                return True
    return False


def _selected(pod: dict[str, Any], selector: str) -> bool:
    """``key=value[,key=value]`` (the equality terms of a label selector); empty selects every pod."""
    labels = labels_of(pod)
    for term in filter(None, (t.strip() for t in selector.split(","))):
        key, _, value = term.partition("=")
        if labels.get(key.strip()) != value.strip().lstrip("="):
            return False
    return True


def _daemon_pod(pod: dict[str, Any]) -> bool:
    return any(ref.get("kind") == "DaemonSet" for ref in (pod.get("metadata") or {}).get("ownerReferences") or [])


def pods_by_node(store: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in read(store, "pods"):
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            out.setdefault(node, []).append(pod)
    return out


def evict(writer: Writer, pods: list[dict[str, Any]], leaving: str, policy: dict[str, Any]) -> None:
    """What the upgrade controller takes off a node as it leaves ``leaving``: its GPU pods after
    ``pod-deletion-required`` (``podDeletion``), every pod but DaemonSets' matching ``drain.podSelector`` after
    ``drain-required`` when ``drain.enable``. A pod with a controller comes back through it; a bare pod is gone."""
    deletion = policy.get("podDeletion") or policy.get("gpuPodDeletion")
    drain = policy.get("drain") or {}
    if leaving == "pod-deletion-required" and deletion is not None:
        chosen = uses_gpus
    elif leaving == "drain-required" and drain.get("enable") is True:
        selector = str(drain.get("podSelector") or "")

        def chosen(pod: dict[str, Any]) -> bool:
            return not _daemon_pod(pod) and _selected(pod, selector)
    else:
        return
    for pod in pods:
        if chosen(pod):
            writer.delete("pods", pod["metadata"]["name"], pod["metadata"].get("namespace"))
