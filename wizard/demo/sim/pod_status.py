"""The parts of a pod's status the simulated kubelet writes: container states, IDs, messages, conditions."""

from __future__ import annotations

import hashlib
from typing import Any

from wizard.demo.sim.simutil import now

#: The kubelet's limit on one container's termination message (kubecontainer.MaxContainerTerminationMessageLength).
MESSAGE_LIMIT = 4096
_FALLBACK_LINES, _FALLBACK_BYTES = 80, 2048


def container_state(cs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A container status's state: ``waiting``, ``running`` or ``terminated`` and its details."""
    state = cs.get("state") or {}
    for key in ("waiting", "running", "terminated"):
        if key in state:
            return key, state[key] or {}
    return "waiting", {}


def waiting_status(
    name: str, image: str, reason: str, message: str = "", restarts: int = 0, last: Any = None
) -> dict[str, Any]:
    """A container status waiting for ``reason`` (not ready, not started, no image ID yet)."""
    waiting: dict[str, Any] = {"reason": reason}
    if message:
        waiting["message"] = message
    return {
        "name": name,
        "image": image,
        "imageID": "",
        "ready": False,
        "restartCount": restarts,
        "started": False,
        "state": {"waiting": waiting},
        "lastState": last or {},
    }


def container_id(pod: dict[str, Any], name: str, restarts: int) -> str:
    """A stable ``containerd://`` ID per pod, container and restart."""
    seed = f"{pod['metadata'].get('uid', '')}/{name}/{restarts}"
    return "containerd://" + hashlib.sha256(seed.encode()).hexdigest()


def termination_message(container: dict[str, Any], code: int, written: str, output: str) -> str:
    """What the kubelet puts in ``terminated.message``: the file's tail, or (policy permitting) the log's."""
    data = written.encode()[-MESSAGE_LIMIT:]
    if not data.strip() and code != 0 and container.get("terminationMessagePolicy") == "FallbackToLogsOnError":
        data = "".join(output.splitlines(keepends=True)[-_FALLBACK_LINES:]).encode()[-_FALLBACK_BYTES:]
    return data.decode(errors="replace")


def terminated_state(pod: dict[str, Any], name: str, cs: dict[str, Any], code: int, reason: str) -> dict[str, Any]:
    """A container's ``state.terminated`` with this exit code and reason (started when it began running)."""
    started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now())
    return {
        "exitCode": code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": now(),
        "containerID": container_id(pod, name, cs.get("restartCount", 0)),
    }


def set_pod_condition(status: dict[str, Any], kind: str, value: str, reason: str = "") -> None:
    """Set a pod condition; its transition time (and reason) change only when its status flips."""
    conditions = status.setdefault("conditions", [])
    for cond in conditions:
        if cond["type"] == kind:
            if cond["status"] != value:
                cond.update({"status": value, "lastTransitionTime": now()})
                if reason:
                    cond["reason"] = reason
                else:
                    cond.pop("reason", None)
            return
    cond = {"type": kind, "status": value, "lastProbeTime": None, "lastTransitionTime": now()}
    if reason:
        cond["reason"] = reason
    conditions.append(cond)
