"""HTTP and websocket plumbing of the gateway that does not need the Kubernetes client.

Wording of transport and status errors for the user, proxy detection, and the
framing of exec output (channel bytes, line splitting, the status channel's exit code).
"""

from __future__ import annotations

import functools
import json
import ssl
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import aiohttp

from wizard.cluster.errors import ApiError, ClusterError, ConnectionDropped, TimedOut

_CHANNELS = {1: "stdout", 2: "stderr"}
EXEC_PROTOCOL = "v4.channel.k8s.io"
"""The exec subprotocol: channel-prefixed frames, the exit status as a ``metav1.Status`` on channel 3."""
_STATUS_CHANNEL = 3


def transport_error(exc: BaseException, what: str, server: str, timeout: float) -> ClusterError:
    """A timeout, TLS failure, refused connection or dropped connection, worded with what to do."""
    if isinstance(exc, TimeoutError):
        return TimedOut(
            f"{what}: no answer from {server} within {timeout:g}s",
            "check that the API server is up and reachable (VPN, proxy, firewall)",
        )
    if isinstance(exc, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError | ssl.SSLError):
        return ClusterError(
            f"{what}: TLS verification of {server} failed ({exc})",
            "check the context's certificate-authority and that the server address is right",
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        return ClusterError(
            f"{what}: cannot connect to {server} ({exc.os_error.strerror or exc})",
            "check that the cluster is running and the context points at the right server",
        )
    return ConnectionDropped(
        f"{what}: the connection to {server} dropped ({exc.__class__.__name__})",
        "the server may or may not have acted on the request; re-read before retrying",
    )


def status_error(status: int, raw: bytes, headers: Mapping[str, str], what: str, context: str) -> ApiError:
    """An error answer (a ``metav1.Status``), with a hint for 401 and 403."""
    hint = ""
    if status == 401:
        hint = f"the credentials of context {context!r} are missing, expired or rejected; log in again or refresh the kubeconfig"
    elif status == 403:
        hint = "ask a cluster admin for this permission (gpu-wizard's preflight lists every one it needs)"
    elif status == 429:
        hint = "the API server is overloaded and asked to slow down; try again in a minute"
    elif status >= 500:
        hint = (
            "the API server failed on this request (retried where safe); try again, and check its health if it persists"
        )
    error = ApiError.from_response(status, raw, headers, what, hint=hint)
    if status == 401:
        error.message = f"{what}: unauthorized (401)"
    return error


def shown_proxy(proxy: str) -> str:
    """A proxy URL as messages show it: ``scheme://host:port``, never its user name and password."""
    parts = urllib.parse.urlsplit(proxy)
    if not parts.hostname:
        return "(a proxy URL without a host)"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


def env_proxy(url: str) -> str:
    """The proxy the environment (HTTPS_PROXY, NO_PROXY…) sets for ``url``, or ""."""
    parts = urllib.parse.urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme, "")
    if proxy and parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return ""
    return proxy


def exec_target(namespace: str, pod: str, container: str, command: Sequence[str]) -> str:
    """``/api/v1/namespaces/<ns>/pods/<pod>/exec?command=…`` (one ``command`` per argument), stdout and stderr
    attached, no stdin, no TTY: the request the generated client's ``connect_get_namespaced_pod_exec`` sends
    (under the server URL's path prefix, if it has one)."""
    path = f"/api/v1/namespaces/{urllib.parse.quote(namespace, safe='')}/pods/{urllib.parse.quote(pod, safe='')}/exec"
    return f"{path}?{_exec_query(tuple(command), container)}"


@functools.lru_cache(maxsize=64)
def _exec_query(command: tuple[str, ...], container: str) -> str:
    """The query of an exec (the same long script for thousands of nodes: quoted once)."""
    query = [("command", arg) for arg in command]
    query += [("container", container), ("stderr", "true"), ("stdin", "false"), ("stdout", "true"), ("tty", "false")]
    return urllib.parse.urlencode(query, quote_via=urllib.parse.quote)


@dataclass(frozen=True)
class ExecResult:
    """What one command run in a container produced."""

    exit_code: int | None
    """None when the server closed the stream without reporting a status."""
    stdout: str
    stderr: str


class ExecOutput:
    """Collects an exec's channel frames into lines and its exit code; ``on_lines(stream, lines)`` gets each
    frame's complete lines at once, as they arrive (a node's whole ``nvidia-smi`` table is usually one frame)."""

    def __init__(self, on_lines: Callable[[str, list[str]], None] | None) -> None:
        self.on_lines = on_lines
        self.partial = {"stdout": "", "stderr": ""}
        self.lines: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.exit_code: int | None = None

    def frame(self, data: bytes | str) -> None:
        """One websocket message: byte 0 the channel (1 stdout, 2 stderr, 3 status), then the payload."""
        if isinstance(data, str):
            data = data.encode()
        if not data:
            return
        channel, payload = data[0], data[1:].decode("utf-8", "replace")
        if channel in _CHANNELS:
            self._feed(_CHANNELS[channel], payload)
        elif channel == _STATUS_CHANNEL and payload:
            status = json.loads(payload)
            causes = (status.get("details") or {}).get("causes") or [{}]
            self.exit_code = 0 if status.get("status") == "Success" else int(causes[0].get("message", 1))

    def _feed(self, stream: str, text: str, final: bool = False) -> None:
        *complete, self.partial[stream] = (self.partial[stream] + text).split("\n")
        if final and self.partial[stream]:
            complete.append(self.partial[stream])
            self.partial[stream] = ""
        if complete:
            self.lines[stream] += complete
            if self.on_lines is not None:
                self.on_lines(stream, complete)

    def result(self) -> ExecResult:
        """Flush unterminated last lines; the result."""
        self._feed("stdout", "", final=True)
        self._feed("stderr", "", final=True)
        return ExecResult(self.exit_code, "\n".join(self.lines["stdout"]), "\n".join(self.lines["stderr"]))
