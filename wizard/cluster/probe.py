"""Running commands on a GPU node's host, in a short-lived probe pod.

The operator's ``nvidia-driver-ctr`` does not mount the host's ``/`` (and pre-installed mode has no
driver pod at all), so a probe pod is created on the node: ``nodeName`` pinned, privileged, host ``/`` at ``/host``,
``activeDeadlineSeconds`` so that a crash of the wizard cannot leave it running forever, and deleted
as soon as the node's checks are done, also on cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wizard.bundled import operator_values
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine.naming import image_path
from wizard.engine.nodescript import Step, StepResult, StepSplitter, script

PROBE_CONTAINER = "probe"
HOST_MOUNT = "/host"
PROBE_LABEL = "app.kubernetes.io/name=gpu-wizard-probe"
_FAILED_WAITING = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CrashLoopBackOff"}
)


def manager_image(policy: Mapping[str, Any] | None, bundle: str) -> str:
    """The k8s-driver-manager image: the live ClusterPolicy's (it is pullable there), else the release's chart default."""
    for source in (
        (((policy or {}).get("spec") or {}).get("driver") or {}).get("manager"),
        operator_values(bundle)["driver"]["manager"],
    ):
        if isinstance(source, Mapping) and source.get("image"):
            try:
                return image_path(
                    str(source.get("repository") or ""), str(source["image"]), str(source.get("version") or "")
                )
            except ValueError:
                continue
    return "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"


def probe_pod(node: str, namespace: str, image: str, *, run_id: str = "", deadline_s: int = 600) -> dict[str, Any]:
    """The probe pod for one node (``run_id`` marks the pods of one verification, for the final sweep)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "gpu-wizard-probe-",
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": "gpu-wizard-probe",
                "app.kubernetes.io/managed-by": "gpu-wizard",
            },
            "annotations": {"gpu-wizard/node": node, "gpu-wizard/run": run_id},
        },
        "spec": {
            "nodeName": node,
            "restartPolicy": "Always",
            "activeDeadlineSeconds": deadline_s,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "tolerations": [{"operator": "Exists"}],
            "priorityClassName": "system-node-critical",
            "containers": [
                {
                    "name": PROBE_CONTAINER,
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sleep", str(deadline_s)],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [{"name": "host-root", "mountPath": HOST_MOUNT}],
                }
            ],
            "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
        },
    }


def _probe_state(pod: Mapping[str, Any]) -> tuple[str, str]:
    """("running" | "waiting" | "failed", why) of the probe container."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Failed", "Succeeded"):
        return (
            "failed",
            f"probe pod ended ({status.get('phase')}: {status.get('reason') or status.get('message') or 'no reason'})",
        )
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") != PROBE_CONTAINER:
            continue
        state = cs.get("state") or {}
        if "running" in state:
            return "running", ""
        waiting = state.get("waiting") or {}
        if waiting.get("reason") in _FAILED_WAITING:
            return "failed", f"{waiting.get('reason')}: {waiting.get('message') or ''}".rstrip(": ")
    return "waiting", str(status.get("phase") or "Pending")


@dataclass
class Shell:
    """A container to run a node's check script in; ``root`` is where it sees the host's ``/`` ("": it does not)."""

    gateway: Gateway
    namespace: str
    pod: str
    container: str
    root: str
    timeout: float

    async def run_steps(self, steps: Sequence[Step], on_line: Callable[[str, str], None]) -> list[StepResult]:
        """Run the steps as one ``sh -c`` exec; ``on_line`` gets the lines of streaming steps as they arrive."""
        splitter = StepSplitter(steps, on_line)
        argv = ["sh", "-c", script(steps, self.root)]
        await self.gateway.exec(
            self.namespace, self.pod, self.container, argv, on_line=splitter.feed, timeout=self.timeout
        )
        return splitter.results()


class ProbePod:
    """``async with ProbePod(...) as shell``: a probe pod on the node for the block's duration."""

    def __init__(
        self,
        gateway: Gateway,
        node: str,
        namespace: str,
        image: str,
        *,
        timeout: float,
        run_id: str = "",
        poll: float = 0.1,
    ) -> None:
        self.gateway = gateway
        self.run_id = run_id
        self.node = node
        self.namespace = namespace
        self.image = image
        self.timeout = timeout
        self.poll = poll
        self.name = ""

    async def __aenter__(self) -> Shell:
        created = await self.gateway.create_pod(
            self.namespace, probe_pod(self.node, self.namespace, self.image, run_id=self.run_id)
        )
        self.name = str(created["metadata"]["name"])
        deadline = time.monotonic() + self.timeout
        why = "Pending"
        while time.monotonic() < deadline:
            pod = await self.gateway.read_pod(self.namespace, self.name)
            if pod is None:
                raise ClusterError(f"probe pod {self.name} on {self.node} vanished before it started")
            state, why = _probe_state(pod)
            if state == "running":
                return Shell(self.gateway, self.namespace, self.name, PROBE_CONTAINER, HOST_MOUNT, self.timeout)
            if state == "failed":
                raise ClusterError(
                    f"probe pod on {self.node} cannot start ({why})",
                    f"the probe image {self.image} must be pullable on the node; pass --probe-image with a mirrored copy",
                )
            await asyncio.sleep(self.poll)
        raise ClusterError(f"probe pod on {self.node} did not start within {self.timeout:g}s ({why})")

    async def __aexit__(self, *exc: object) -> None:
        if self.name:
            # Shielded: a Ctrl-C while verifying must still remove the privileged pod.
            await asyncio.shield(self._delete())

    async def _delete(self) -> None:
        with contextlib.suppress(ClusterError):
            await self.gateway.delete_pod(self.namespace, self.name)


async def sweep(gateway: Gateway, namespace: str, run_id: str) -> int:
    """Delete probe pods of one run that are still there (a create interrupted after the server acted)."""
    try:
        pods = await gateway.list_pods(namespace, label_selector=PROBE_LABEL)
    except ClusterError:
        return 0
    mine = [p for p in pods if ((p["metadata"].get("annotations") or {}).get("gpu-wizard/run")) == run_id]
    for pod in mine:
        with contextlib.suppress(ClusterError):
            await gateway.delete_pod(namespace, pod["metadata"]["name"])
    return len(mine)
