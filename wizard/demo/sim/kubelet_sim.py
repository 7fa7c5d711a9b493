"""The simulated kubelet: moves each pod one step per tick, the way ``kubectl get pods -w`` shows it."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from wizard.demo.rules.imageref import parse_reference
from wizard.demo.rules.operator_rules import OperatorRelease
from wizard.demo.sim.events import record, transition_events
from wizard.demo.sim.operands import MANAGER_CTR
from wizard.demo.sim.pod_status import (
    container_id,
    container_state,
    set_pod_condition,
    terminated_state,
    termination_message,
    waiting_status,
)
from wizard.demo.sim.pull import Puller, PullResult, basic_auth_for
from wizard.demo.sim.simutil import Writer, now, thaw
from wizard.demo.sim.workloads import Verdict, init_outcome, main_outcome
from wizard.demo.sim.world import NodeView

PULL_WAITING = frozenset(
    {"ContainerCreating", "PodInitializing", "ErrImagePull", "ImagePullBackOff", "InvalidImageName"}
)
#: Runs a container's command: (pod, container) -> (exit code, output, what it wrote to its termination message path).
CommandRunner = Callable[[dict[str, Any], dict[str, Any]], tuple[int, str, str]]
PullKey = tuple[str, str]
#: Init containers whose behaviour the operator simulation decides (the operator's own programs).
MODELLED_INITS = frozenset(
    {MANAGER_CTR, "driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation"}
)


def _always_pull(container: dict[str, Any]) -> bool:
    policy = container.get("imagePullPolicy")
    if policy:
        return policy == "Always"
    image = str(container.get("image", ""))
    return "@" not in image and (":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest"))


def _runs_to_completion(pod: dict[str, Any]) -> bool:
    return pod["spec"].get("restartPolicy", "Always") in ("Never", "OnFailure")


class Kubelet:
    """Every node's kubelet at once (the simulation has no per-node processes)."""

    def __init__(self, puller: Puller, release: Callable[[], OperatorRelease], runner: CommandRunner) -> None:
        self.puller = puller
        self.release = release
        self.runner = runner
        self.image_cache: dict[str, dict[str, str]] = {}
        """Per node: image reference -> imageID already pulled there (IfNotPresent pulls nothing)."""
        self.outputs: dict[tuple[str, str], str] = {}
        """(pod uid, container) -> output of a command that ran to completion."""
        self.start_latency = 0.0
        """Seconds from a pod's binding to its sandbox starting."""
        self._bound: dict[str, tuple[float, tuple[str, str]]] = {}
        """Pod uid -> (when the kubelet first saw it bound (monotonic), (namespace, name)), until its sandbox starts."""

    def next_start(self) -> float | None:
        """Seconds until the next waiting sandbox may start (None: none waits)."""
        if not self._bound:
            return None
        return max(0.0, min(seen for seen, _ in self._bound.values()) + self.start_latency - time.monotonic())

    def due(self) -> list[tuple[str, str]]:
        """(namespace, name) of the pods whose sandbox may start now."""
        now_ = time.monotonic()
        return [key for seen, key in self._bound.values() if now_ - seen >= self.start_latency]

    def forget(self, uid: str) -> None:
        self._bound.pop(uid, None)

    def forget_pods(self, keys: set[tuple[str, str]]) -> None:
        """Pods (namespace, name) that can no longer start (gone, or their node is): stop waiting for them."""
        for uid, (_, key) in list(self._bound.items()):
            if key in keys:
                self._bound.pop(uid)

    def _sandbox_due(self, pod: dict[str, Any]) -> bool:
        if self.start_latency <= 0:
            return True
        uid = str(pod["metadata"].get("uid", pod["metadata"]["name"]))
        key = (str(pod["metadata"].get("namespace", "")), str(pod["metadata"]["name"]))
        seen, _ = self._bound.setdefault(uid, (time.monotonic(), key))
        if time.monotonic() - seen < self.start_latency:
            return False
        self._bound.pop(uid, None)
        return True

    def pull_targets(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        """Containers of ``pod`` that attempt an image pull on this tick."""
        status = pod.get("status") or {}
        spec = pod.get("spec") or {}
        if not status.get("phase") or not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return []
        inits, mains = spec.get("initContainers") or [], spec.get("containers") or []
        init_st = status.get("initContainerStatuses")
        main_st = status.get("containerStatuses")
        if init_st is None and main_st is None:
            return []
        for container, cs in zip(inits, init_st or [], strict=False):
            kind, _ = container_state(cs)
            if kind == "terminated" and (cs["state"]["terminated"].get("exitCode") == 0):
                continue
            return [container] if kind == "waiting" and container_state(cs)[1].get("reason") in PULL_WAITING else []
        return [
            c
            for c, cs in zip(mains, main_st or [], strict=False)
            if container_state(cs)[0] == "waiting" and container_state(cs)[1].get("reason") in PULL_WAITING
        ]

    def pull_key(
        self, pod: dict[str, Any], container: dict[str, Any], secrets: dict[tuple[str, str], dict[str, Any]]
    ) -> PullKey:
        """(reference, Authorization header) for one container's pull."""
        image = str(container.get("image", ""))
        names = [s.get("name", "") for s in pod["spec"].get("imagePullSecrets") or []]
        found = [
            secrets[(pod["metadata"].get("namespace", ""), n)]
            for n in names
            if (pod["metadata"].get("namespace", ""), n) in secrets
        ]
        try:
            host = parse_reference(image)[0]
        except ValueError:
            return image, ""
        return image, basic_auth_for(found, host) if found else ""

    def cached(self, node: str, container: dict[str, Any]) -> str:
        """The imageID of an image already on ``node`` (and not forced to re-pull), or ""."""
        if _always_pull(container):
            return ""
        return self.image_cache.get(node, {}).get(str(container.get("image", "")), "")

    def step(
        self,
        writer: Writer,
        pod: dict[str, Any],
        view: NodeView | None,
        pulls: dict[PullKey, PullResult],
        keys: dict[str, PullKey],
        volumes_ok: bool,
    ) -> None:
        """Advance one pod by one step and write it back if anything changed."""
        before = pod.get("status")
        phase = (before or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        starting = bool(phase) and "containerStatuses" not in (before or {})
        if starting and not self._sandbox_due(pod):
            return  # its sandbox is not up yet: nothing to write (and no copy of its status to make)
        pod = {**pod, "status": thaw(before or {})}  # only the status changes: don't copy the big spec
        status = pod.setdefault("status", {})
        spec = pod["spec"]
        node = spec.get("nodeName", "")
        if not phase:
            status.update({"phase": "Pending", "qosClass": "BestEffort", "conditions": []})
            set_pod_condition(status, "PodScheduled", "True")
            self._sandbox_due(pod)  # the start latency counts from the binding
        elif starting:
            self._start_sandbox(pod, view)
        else:
            self._advance(pod, view, pulls, keys, volumes_ok, node)
        if pod.get("status") != before:
            writer.update("pods", pod, adopt=True)  # a fresh status on the stored (never mutated) rest
            record(writer, pod, transition_events(before, pod))

    def _start_sandbox(self, pod: dict[str, Any], view: NodeView | None) -> None:
        status, spec = pod["status"], pod["spec"]
        inits = spec.get("initContainers") or []
        first = "PodInitializing" if inits else "ContainerCreating"
        status["initContainerStatuses"] = [
            waiting_status(c["name"], c.get("image", ""), "PodInitializing") for c in inits
        ]
        if not inits:
            status.pop("initContainerStatuses")
        status["containerStatuses"] = [
            waiting_status(c["name"], c.get("image", ""), first) for c in spec.get("containers") or []
        ]
        status["startTime"] = now()
        if view is not None and view.ip:
            ip = view.ip
            status["hostIP"] = ip
            status["hostIPs"] = [{"ip": ip}]
        seed = int(hashlib.sha256(pod["metadata"].get("uid", pod["metadata"]["name"]).encode()).hexdigest()[:6], 16)
        prefix = view.pod_cidr.rsplit(".", 2)[0] if view is not None and view.pod_cidr else "10.42.0"
        pod_ip = status.get("hostIP", "10.0.0.10") if spec.get("hostNetwork") else f"{prefix}.{2 + seed % 250}"
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
        set_pod_condition(status, "PodReadyToStartContainers", "True")
        set_pod_condition(
            status, "Initialized", "False" if inits else "True", "ContainersNotInitialized" if inits else ""
        )
        set_pod_condition(status, "Ready", "False", "ContainersNotReady")
        set_pod_condition(status, "ContainersReady", "False", "ContainersNotReady")

    def _advance(
        self,
        pod: dict[str, Any],
        view: NodeView | None,
        pulls: dict[PullKey, PullResult],
        keys: dict[str, PullKey],
        volumes_ok: bool,
        node: str,
    ) -> None:
        status, spec = pod["status"], pod["spec"]
        inits = spec.get("initContainers") or []
        init_st = status.get("initContainerStatuses") or []
        for container, cs in zip(inits, init_st, strict=False):
            kind, detail = container_state(cs)
            if kind == "terminated" and detail.get("exitCode") == 0:
                continue
            self._step_container(pod, container, cs, view, pulls, keys, volumes_ok, node, init=True)
            return
        if inits:
            set_pod_condition(status, "Initialized", "True")
        for container, cs in zip(spec.get("containers") or [], status.get("containerStatuses") or [], strict=False):
            self._step_container(pod, container, cs, view, pulls, keys, volumes_ok, node, init=False)
        mains = status.get("containerStatuses") or []
        states = [container_state(cs) for cs in mains]
        if _runs_to_completion(pod) and mains and all(k == "terminated" for k, _ in states):
            ok = all(d.get("exitCode") == 0 for _, d in states)
            status["phase"] = "Succeeded" if ok else "Failed"
        elif any(k == "running" or cs.get("restartCount", 0) > 0 for (k, _), cs in zip(states, mains, strict=True)):
            status["phase"] = "Running"
        ready = bool(mains) and all(cs.get("ready") for cs in mains)
        set_pod_condition(
            status, "ContainersReady", "True" if ready else "False", "" if ready else "ContainersNotReady"
        )
        set_pod_condition(status, "Ready", "True" if ready else "False", "" if ready else "ContainersNotReady")

    def _step_container(
        self,
        pod: dict[str, Any],
        container: dict[str, Any],
        cs: dict[str, Any],
        view: NodeView | None,
        pulls: dict[PullKey, PullResult],
        keys: dict[str, PullKey],
        volumes_ok: bool,
        node: str,
        *,
        init: bool,
    ) -> None:
        kind, detail = container_state(cs)
        name, image = container["name"], str(container.get("image", ""))
        reason = detail.get("reason", "")
        if kind == "waiting" and reason in PULL_WAITING:
            if not volumes_ok:
                return
            image_id = self.cached(node, container)
            result = PullResult(True, image_id) if image_id else pulls.get(keys.get(name, (image, "")))
            if result is None:
                return
            if not result.ok:
                if reason in ("ErrImagePull", "ImagePullBackOff"):
                    cs["state"] = {
                        "waiting": {
                            "reason": "ImagePullBackOff",
                            "message": f'Back-off pulling image "{image}": ErrImagePull: {result.message}',
                        }
                    }
                else:
                    cs["state"] = {"waiting": {"reason": result.reason, "message": result.message}}
                return
            self.image_cache.setdefault(node, {})[image] = result.image_id
            self._run(pod, container, cs, result.image_id, init=init)
            return
        if kind == "running":
            verdict = self._verdict(pod, name, view, init)
            if init and verdict.outcome == "done":
                cs["state"] = {"terminated": terminated_state(pod, name, cs, 0, "Completed")}
                cs["ready"] = True
                cs["started"] = False
            elif verdict.outcome in ("fail", "crash"):
                cs["state"] = {"terminated": terminated_state(pod, name, cs, 1, "Error")}
                cs["ready"] = False
                cs["started"] = False
            elif not init and verdict.outcome == "ready" and not cs.get("ready"):
                cs["ready"] = True
            return
        if kind == "terminated" and detail.get("exitCode") != 0 and not _runs_to_completion(pod):
            restarts = cs.get("restartCount", 0) + 1
            cs["lastState"] = {"terminated": detail}
            cs["restartCount"] = restarts
            cs["state"] = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off 10s restarting failed container={name} pod={pod['metadata']['name']}_"
                    f"{pod['metadata'].get('namespace', '')}({pod['metadata'].get('uid', '')})",
                }
            }
            return
        if kind == "waiting" and reason == "CrashLoopBackOff":
            verdict = self._verdict(pod, name, view, init)
            if verdict.outcome not in ("fail", "crash"):
                self._run(pod, container, cs, cs.get("imageID", ""), init=init)

    def _verdict(self, pod: dict[str, Any], name: str, view: NodeView | None, init: bool) -> Verdict:
        return init_outcome(pod, name, view) if init else main_outcome(pod, name, view, self.release())

    def _run(
        self, pod: dict[str, Any], container: dict[str, Any], cs: dict[str, Any], image_id: str, *, init: bool
    ) -> None:
        name = container["name"]
        cs.update(
            {
                "imageID": image_id,
                "containerID": container_id(pod, name, cs.get("restartCount", 0)),
                "started": not init,
                "ready": False,
                "state": {"running": {"startedAt": now()}},
            }
        )
        runs_command = bool(container.get("command")) and name not in MODELLED_INITS
        if (_runs_to_completion(pod) and not init) or (init and runs_command):
            code, output, written = self.runner(pod, container)
            self.outputs[(pod["metadata"].get("uid", ""), name)] = output
            terminated = terminated_state(pod, name, cs, code, "Completed" if code == 0 else "Error")
            message = termination_message(container, code, written, output)
            if message:
                terminated["message"] = message
            cs["state"] = {"terminated": terminated}
            cs["started"] = False
            cs["ready"] = init and code == 0
