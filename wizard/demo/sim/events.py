"""Events the simulated kubelet records about a pod, worded and aggregated like the real kubelet's."""

from __future__ import annotations

import hashlib
from typing import Any

from wizard.demo.sim.simutil import Writer, now


def _states(status: dict[str, Any] | None) -> dict[str, tuple[str, dict[str, Any], str]]:
    found = {}
    for cs in (status or {}).get("initContainerStatuses") or []:
        found[str(cs.get("name"))] = ("initContainers", cs.get("state") or {}, str(cs.get("image") or ""))
    for cs in (status or {}).get("containerStatuses") or []:
        found[str(cs.get("name"))] = ("containers", cs.get("state") or {}, str(cs.get("image") or ""))
    return found


def _waiting_reason(state: dict[str, Any]) -> str:
    return str((state.get("waiting") or {}).get("reason") or "")


def transition_events(before: dict[str, Any] | None, pod: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(container field path, reason, message)`` of the failures ``pod``'s containers entered since ``before``."""
    old = _states(before)
    meta = pod["metadata"]
    events: list[tuple[str, str, str]] = []
    for name, (kind, state, image) in _states(pod.get("status")).items():
        reason = _waiting_reason(state)
        if not reason or reason == _waiting_reason(old.get(name, ("", {}, ""))[1]):
            continue
        path = f"spec.{kind}{{{name}}}"
        message = str((state.get("waiting") or {}).get("message") or "")
        if reason in ("ErrImagePull", "ImagePullBackOff"):
            detail = message.split(": ErrImagePull: ", 1)[-1]
            failed = (
                detail if detail.startswith("Failed to pull image") else f'Failed to pull image "{image}": {detail}'
            )
            events += [(path, "Failed", failed), (path, "Failed", "Error: ErrImagePull")]
            events.append((path, "BackOff", f'Back-off pulling image "{image}"'))
        elif reason == "CrashLoopBackOff":
            pod_ref = f"{meta['name']}_{meta.get('namespace', '')}({meta.get('uid', '')})"
            events.append((path, "BackOff", f"Back-off restarting failed container {name} in pod {pod_ref}"))
    return events


def record(writer: Writer, pod: dict[str, Any], events: list[tuple[str, str, str]]) -> None:
    """Write ``events`` for ``pod`` (a repeat of the same event counts up instead of adding one)."""
    meta = pod["metadata"]
    namespace = str(meta.get("namespace") or "default")
    for path, reason, message in events:
        digest = hashlib.sha256(f"{meta.get('uid')}|{path}|{reason}|{message}".encode()).hexdigest()[:16]
        name = f"{meta['name']}.{digest}"
        stamp = now()
        current = writer.store.lookup("events", name, namespace)
        if current is not None:
            writer.update("events", {**current, "count": int(current.get("count") or 1) + 1, "lastTimestamp": stamp})
            continue
        writer.create(
            "events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "namespace": namespace,
                    "uid": meta.get("uid", ""),
                    "fieldPath": path,
                },
                "reason": reason,
                "message": message,
                "type": "Warning",
                "count": 1,
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "source": {"component": "kubelet", "host": str((pod.get("spec") or {}).get("nodeName") or "")},
                "reportingComponent": "kubelet",
            },
        )
