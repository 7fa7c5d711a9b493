"""``pods/exec`` over websocket (``v5``/``v4.channel.k8s.io``, no stdin) and ``pods/log``."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from aiohttp import web

from wizard.demo.api.faults import Faults
from wizard.demo.api.status import ApiError, bad_request, not_found

log = logging.getLogger(__name__)

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
"""Served subprotocols, preferred first (kubectl needs v5; its SPDY fallback cannot be served)."""

_WAITING_TEXT = {
    "ErrImagePull": "trying and failing to pull image",
    "ImagePullBackOff": "trying and failing to pull image",
}


class ExecRunner(Protocol):
    """What the exec endpoint needs from the simulation."""

    def exec(self, namespace: str, pod: str, container: str, argv: list[str]) -> Any: ...

    def logs(self, namespace: str, pod: str, container: str) -> str: ...


def _container_names(pod: dict[str, Any]) -> tuple[list[str], list[str]]:
    spec = pod.get("spec") or {}
    return [c.get("name", "") for c in spec.get("containers") or []], [
        c.get("name", "") for c in spec.get("initContainers") or []
    ]


def pick_container(pod: dict[str, Any], wanted: str | None) -> str:
    """The container a request means, or the 400 a real API server gives."""
    name = pod["metadata"]["name"]
    main, init = _container_names(pod)
    if not wanted:
        if len(main) == 1:
            return main[0]
        hint = f" or one of the init containers: [{' '.join(init)}]" if init else ""
        raise bad_request(f"a container name must be specified for pod {name}, choose one of: [{' '.join(main)}]{hint}")
    if wanted not in main and wanted not in init:
        raise bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def _container_state(pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    status = pod.get("status") or {}
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if cs.get("name") == container:
            state: dict[str, Any] = cs.get("state") or {}
            return state
    return None


def _container_status(pod: dict[str, Any], container: str) -> dict[str, Any]:
    status = pod.get("status") or {}
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if cs.get("name") == container:
            return dict(cs)
    return {}


def _tail(text: str, request: web.Request) -> str:
    """The last ``tailLines`` lines of ``text`` (all of it without the parameter)."""
    tail = request.query.get("tailLines")
    if tail and tail.isdigit():
        lines = text.splitlines(keepends=True)
        return "".join(lines[-int(tail) :]) if int(tail) else ""
    return text


def find_pod(store_lookup: Any, namespace: str, name: str) -> dict[str, Any]:
    pod: dict[str, Any] | None = store_lookup("pods", name, namespace)
    if pod is None:
        raise not_found("pods", "", name)
    return pod


async def serve_logs(request: web.Request, pod: dict[str, Any], runner: ExecRunner) -> web.StreamResponse:
    """``GET .../pods/<name>/log?container=&tailLines=&previous=``: the container's log as text."""
    container = pick_container(pod, request.query.get("container"))
    state = _container_state(pod, container)
    meta = pod["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    last_run = (_container_status(pod, container).get("lastState") or {}).get("terminated")
    if request.query.get("previous") in ("true", "1"):
        # the kubelet serves the previous instance's log only when one terminated; the simulated
        # containers fail the same way every run, so its text is the current run's
        if not last_run:
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        return web.Response(text=_tail(runner.logs(namespace, name, container), request), content_type="text/plain")
    if state is not None and "waiting" in state and not last_run:
        reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
        raise bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: {_WAITING_TEXT.get(reason, reason)}'
        )
    return web.Response(text=_tail(runner.logs(namespace, name, container), request), content_type="text/plain")


def _exit_status(code: int) -> dict[str, Any]:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: error executing command, exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def _choose_protocol(header: str) -> str | None:
    offered = [p.strip() for p in header.split(",") if p.strip()]
    return next((p for p in PROTOCOLS if p in offered), None)


async def serve_exec(
    request: web.Request,
    pod: dict[str, Any],
    runner: ExecRunner,
    faults: Faults,
    node_ip: Callable[[str], str],
) -> web.StreamResponse:
    """Run one command in a simulated container and stream its output over a websocket."""
    query = request.query
    meta = pod["metadata"]
    container = pick_container(pod, query.get("container"))
    argv = query.getall("command", [])
    if not argv:
        raise bad_request("you must specify at least 1 command")
    node = (pod.get("spec") or {}).get("nodeName") or ""
    if not node:
        raise bad_request(f"pod {meta['name']} does not have a host assigned")
    if node in faults.exec_fail_nodes and faults.take("exec_fail"):
        raise ApiError(500, f"error dialing backend: dial tcp {node_ip(node)}:10250: connect: connection refused")
    state = _container_state(pod, container)
    if state is not None and "running" not in state:
        raise ApiError(500, f'container not found ("{container}")')
    protocol = _choose_protocol(request.headers.get("Sec-WebSocket-Protocol", ""))
    if request.method != "GET" or request.headers.get("Upgrade", "").lower() != "websocket":
        raise bad_request("Upgrade request required (the gpu-wizard demo serves exec over websockets only)")
    ws = web.WebSocketResponse(protocols=(protocol,) if protocol else (), autoping=True)
    await ws.prepare(request)
    if faults.exec_latency_ms > 0 and faults.take("exec_latency"):
        await asyncio.sleep(faults.exec_latency_ms / 1000)
    try:
        result = runner.exec(meta.get("namespace", ""), meta["name"], container, list(argv))
        stdout, stderr, status = bytes(result.stdout), bytes(result.stderr), _exit_status(int(result.exit_code))
    except Exception as exc:  # a simulation bug must still end the session the way a runtime error does
        log.exception("simulated exec of %s in %s/%s failed", argv, meta["name"], container)
        stdout, stderr = b"", f"error executing command in container: {exc}\n".encode()
        status = _exit_status(126)
    try:
        if stdout and query.get("stdout", "true") in ("true", "1"):
            await ws.send_bytes(b"\x01" + stdout)
        if stderr and query.get("stderr", "true") in ("true", "1"):
            channel = b"\x01" if query.get("tty") in ("true", "1") else b"\x02"
            await ws.send_bytes(channel + stderr)
        await ws.send_bytes(b"\x03" + json.dumps(status).encode())
    except ConnectionResetError:
        pass  # the client hung up before reading the output
    await ws.close()
    return ws
