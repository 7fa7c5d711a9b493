"""Finding and reading kubeconfig files the way kubectl does, without the Kubernetes client.

``--kubeconfig`` wins, then ``$KUBECONFIG`` (a ``:``-separated list, merged, the first file setting
a value wins), then ``~/.kube/config``. Listing contexts needs no credentials, so the TUI can offer
a context picker before anything connects. Before the Kubernetes client loads a context, it is
checked here so that a broken kubeconfig is one clear line: the cluster and user it names exist,
the server is an http(s) URL, and the files it points at (CA, client certificate and key, token
file) are there.

Exec credential plugins (``aws eks get-token``, ``gke-gcloud-auth-plugin``, ``kubelogin``) are run
here, as kubectl runs them: ``KUBERNETES_EXEC_INFO`` with ``spec.interactive`` per
``interactiveMode`` and, with ``provideClusterInfo: true``, ``spec.cluster`` (server, CA data, TLS
and proxy settings, the ``client.authentication.k8s.io/exec`` extension as ``config``). A plugin
that is missing shows its ``installHint``; one that fails shows its own error output as one clean
line naming the plugin, never as a rejected credential.

The built-in demo cluster is recognised here and only here: by the marker it writes into its own
kubeconfig (the cluster extension :data:`DEMO_EXTENSION`), never by anything a server replies.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import os
import re
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from wizard.bounded_read import CERTIFICATE, KUBECONFIG, InputError, parse_bounded, read_bounded
from wizard.cluster.errors import ClusterError


def kubeconfig_paths(kubeconfig: str | None = None) -> list[str]:
    """The files kubectl would read: the flag, else ``$KUBECONFIG`` (a ``:`` list), else ~/.kube/config."""
    raw = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    return [os.path.expanduser(p) for p in raw.split(os.pathsep) if p]


def existing_paths(kubeconfig: str | None = None) -> str:
    """The existing files among :func:`kubeconfig_paths`, joined with ``:``; ClusterError when none exists."""
    paths = kubeconfig_paths(kubeconfig)
    found = [p for p in paths if os.path.isfile(p)]
    if not found:
        raise ClusterError(
            f"no kubeconfig found (looked at {', '.join(paths)})",
            "pass --kubeconfig FILE, set KUBECONFIG, or use --demo to try the built-in demo cluster",
        )
    return os.pathsep.join(found)


_PARSED: dict[tuple[str, bytes], Any] = {}
"""Parsed kubeconfig files by path and content digest: one connection reads its file about seven times
(contexts, checks, marker, plugin), and with many contexts at once (``--all-contexts``) every cluster reads the
same file; its bounded YAML parse was 80 % of a 10-cluster run's CPU. The file is still read every time (a
cheap, bounded read), so a change is always seen; only the parse of the same text is reused."""


def _parsed(path: str) -> Any:
    """``path``'s content (a fresh copy: callers may change it), read within the limits, parsed once per text."""
    text = read_bounded(path, KUBECONFIG)
    key = (path, hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    if key not in _PARSED:
        try:
            data = parse_bounded(text, KUBECONFIG, ("yaml",))
        except InputError as exc:
            raise exc.at(path) from None
        if len(_PARSED) >= 16:
            _PARSED.clear()
        _PARSED[key] = data
    return copy.deepcopy(_PARSED[key])


def _documents(kubeconfig: str | None) -> list[tuple[str, dict[str, Any]]]:
    """Every existing kubeconfig file with its content, in kubectl's precedence order."""
    documents: list[tuple[str, dict[str, Any]]] = []
    for path in existing_paths(kubeconfig).split(os.pathsep):
        try:
            data = _parsed(path)
        except InputError as exc:
            hint = "check it with `kubectl config view`" if exc.message.startswith("not valid") else ""
            raise ClusterError(str(exc), hint) from None
        if data is None:
            continue
        if not isinstance(data, dict) or not all(
            isinstance(data.get(key) or [], list) for key in ("clusters", "contexts", "users")
        ):
            raise ClusterError(f"{path}: not a kubeconfig (expected clusters, contexts and users lists)")
        documents.append((path, data))
    return documents


def _names(documents: list[tuple[str, dict[str, Any]]], section: str) -> list[str]:
    names: list[str] = []
    for _, data in documents:
        for entry in data.get(section) or []:
            name = entry.get("name") if isinstance(entry, dict) else None
            if name and str(name) not in names:
                names.append(str(name))
    return names


def _entry(documents: list[tuple[str, dict[str, Any]]], section: str, name: str) -> tuple[str, dict[str, Any]] | None:
    """The first ``section`` entry called ``name`` (kubectl: the first file wins) and its file."""
    for path, data in documents:
        for entry in data.get(section) or []:
            if isinstance(entry, dict) and str(entry.get("name")) == name:
                body = entry.get(section[:-1])
                return path, body if isinstance(body, dict) else {}
    return None


def list_contexts(kubeconfig: str | None = None) -> tuple[list[str], str | None]:
    """Context names and the current context, merged the way kubectl merges files (first one wins)."""
    documents = _documents(kubeconfig)
    current = next((str(d["current-context"]) for _, d in documents if d.get("current-context")), None)
    return _names(documents, "contexts"), current


def _check_files(path: str, body: dict[str, Any], keys: tuple[str, ...], what: str) -> None:
    for key in keys:
        value = body.get(key)
        if isinstance(value, str) and value:
            target = os.path.join(os.path.dirname(path), os.path.expanduser(value))  # relative to the kubeconfig
            if not os.path.isfile(target):
                raise ClusterError(f"{what}: {key} {value} does not exist", f"fix the path in {path}")


def check_context(kubeconfig: str | None, name: str) -> None:
    """ClusterError when context ``name`` cannot work: a missing cluster or user, a bad server, missing files."""
    documents = _documents(kubeconfig)
    found = _entry(documents, "contexts", name)
    context = found[1] if found else {}
    cluster_name, user_name = str(context.get("cluster") or ""), str(context.get("user") or "")
    cluster = _entry(documents, "clusters", cluster_name) if cluster_name else None
    if cluster is None:
        valid = ", ".join(_names(documents, "clusters")) or "none"
        raise ClusterError(
            f"context {name!r} names cluster {cluster_name!r}, which is not in the kubeconfig",
            f"the kubeconfig's clusters: {valid}",
        )
    path, body = cluster
    server = str(body.get("server") or "")
    parts = urllib.parse.urlsplit(server)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ClusterError(
            f"cluster {cluster_name!r}: server {server!r} is not an https:// URL",
            f"set the API server's address in {path}, e.g. https://10.0.0.1:6443",
        )
    _check_files(path, body, ("certificate-authority",), f"cluster {cluster_name!r}")
    if user_name:
        user = _entry(documents, "users", user_name)
        if user is None:
            valid = ", ".join(_names(documents, "users")) or "none"
            raise ClusterError(
                f"context {name!r} names user {user_name!r}, which is not in the kubeconfig",
                f"the kubeconfig's users: {valid}",
            )
        _check_files(user[0], user[1], ("client-certificate", "client-key", "tokenFile"), f"user {user_name!r}")


def choose_context(kubeconfig: str | None, context: str | None) -> str:
    """The context to use: the one asked for, else the current one; ClusterError naming the valid ones."""
    names, current = list_contexts(kubeconfig)
    chosen = context or current
    valid = ", ".join(names) or "none"
    if not chosen:
        raise ClusterError("the kubeconfig sets no current context", f"pass --context NAME (valid: {valid})")
    if chosen not in names:
        raise ClusterError(f"context {chosen!r} is not in the kubeconfig", f"valid contexts: {valid}")
    check_context(kubeconfig, chosen)
    return chosen


# -- the demo's marker ----------------------------------------------------------------------------

DEMO_EXTENSION = "gpu-wizard.dev/demo"
"""The cluster ``extensions`` entry the built-in demo writes into its own kubeconfig (and nobody else).

Its ``extension`` holds ``simulated: true`` and ``registryMirrors`` (registry host -> mirror URL: where
the demo's simulated kubelet pulls from). kubectl keeps and ignores it, as it does minikube's."""


def demo_marker(kubeconfig: str | None, name: str) -> dict[str, str] | None:
    """The registry mirrors of context ``name``'s demo marker, or None when its cluster has no marker.

    The engine learns that it talks to the demo only from here, never from the server's replies: the
    marker is in a file the demo wrote for the user, as trusted as the credentials next to it.
    ClusterError naming the file when the marker is there but malformed.
    """
    from wizard.engine.plan import check_registry_mirrors

    documents = _documents(kubeconfig)
    found = _entry(documents, "contexts", name)
    cluster_name = str((found[1] if found else {}).get("cluster") or "")
    cluster = _entry(documents, "clusters", cluster_name) if cluster_name else None
    if cluster is None:
        return None
    path, body = cluster
    for extension in body.get("extensions") or []:
        if not isinstance(extension, dict) or extension.get("name") != DEMO_EXTENSION:
            continue
        content = extension.get("extension")
        mirrors = content.get("registryMirrors") if isinstance(content, dict) else None
        if not isinstance(content, dict) or not isinstance(mirrors, dict | None):
            raise ClusterError(
                f"{path}: the {DEMO_EXTENSION} extension of cluster {cluster_name!r} is not a mapping with registryMirrors",
                "write the kubeconfig again with `gpu-wizard demo serve`",
            )
        try:
            return check_registry_mirrors({str(k): str(v) for k, v in (mirrors or {}).items()})
        except ValueError as exc:
            raise ClusterError(
                f"{path}: the {DEMO_EXTENSION} extension of cluster {cluster_name!r}: {exc}",
                "write the kubeconfig again with `gpu-wizard demo serve`",
            ) from None
    return None


_SCENARIO_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")


def demo_scenario(kubeconfig: str | None, name: str) -> str:
    """The scenario the demo server of context ``name`` runs, as its marker names it ("" when none or not a
    plain scenario name: shown, never trusted for anything else)."""
    documents = _documents(kubeconfig)
    found = _entry(documents, "contexts", name)
    cluster_name = str((found[1] if found else {}).get("cluster") or "")
    cluster = _entry(documents, "clusters", cluster_name) if cluster_name else None
    for extension in (cluster[1].get("extensions") or []) if cluster else []:
        if isinstance(extension, dict) and extension.get("name") == DEMO_EXTENSION:
            content = extension.get("extension")
            scenario = content.get("scenario") if isinstance(content, dict) else None
            return scenario if isinstance(scenario, str) and _SCENARIO_NAME.fullmatch(scenario) else ""
    return ""


# -- exec credential plugins (EKS, GKE, AKS, OIDC helpers) ---------------------------------------

EXEC_INFO_CONFIG = "client.authentication.k8s.io/exec"
"""The cluster ``extensions`` entry whose ``extension`` is handed to the plugin as ``spec.cluster.config``."""
PLUGIN_TIMEOUT = 60.0
"""Seconds a credential plugin may take (a browser login, a cloud CLI's token refresh)."""
PLUGIN_TEXT = 300
"""Characters of a plugin's error output shown in the one error line."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
"""Terminal escape sequences (colours, cursor moves, titles): dropped whole, not just their ESC."""


def one_line(text: str | bytes, limit: int = PLUGIN_TEXT) -> str:
    """``text`` as one printable line: decoded, control characters (ESC, CR, NUL…) and runs of
    whitespace turned into single spaces, trimmed to ``limit`` characters."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    flat = " ".join(_CONTROL.sub(" ", _ESCAPES.sub("", text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def context_kubeconfig(kubeconfig: str | None, name: str) -> dict[str, Any]:
    """A self-contained kubeconfig for context ``name``: its context, cluster and user (first file wins,
    like kubectl), with every file path made absolute against the file that named it."""
    documents = _documents(kubeconfig)
    found = _entry(documents, "contexts", name)
    context = dict(found[1]) if found else {}
    cluster_name, user_name = str(context.get("cluster") or ""), str(context.get("user") or "")
    cluster = _entry(documents, "clusters", cluster_name)
    user = _entry(documents, "users", user_name) if user_name else None

    def absolute(entry: tuple[str, dict[str, Any]] | None, keys: tuple[str, ...]) -> dict[str, Any]:
        if entry is None:
            return {}
        path, body = entry
        body = dict(body)
        for key in keys:
            value = body.get(key)
            if isinstance(value, str) and value:
                body[key] = os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(value))
        return body

    cluster_body = absolute(cluster, ("certificate-authority",))
    user_body = absolute(user, ("client-certificate", "client-key", "tokenFile"))
    plugin = user_body.get("exec")
    if isinstance(plugin, dict) and user is not None:
        # kubectl: a command with a path separator is relative to the kubeconfig; a bare name is looked up on PATH
        user_body["exec"] = plugin = dict(plugin)
        command = plugin.get("command")
        if isinstance(command, str) and os.sep in command and not os.path.isabs(os.path.expanduser(command)):
            plugin["command"] = os.path.join(os.path.dirname(os.path.abspath(user[0])), command)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "contexts": [{"name": name, "context": context}],
        "clusters": [{"name": cluster_name, "cluster": cluster_body}],
        "users": [{"name": user_name, "user": user_body}] if user_name else [],
    }


def exec_cluster_info(cluster: dict[str, Any]) -> dict[str, Any]:
    """``spec.cluster`` of ``KUBERNETES_EXEC_INFO`` (``provideClusterInfo: true``), as kubectl builds it."""
    info: dict[str, Any] = {"server": str(cluster.get("server") or "")}
    if cluster.get("tls-server-name"):
        info["tls-server-name"] = str(cluster["tls-server-name"])
    if cluster.get("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    ca_data = str(cluster.get("certificate-authority-data") or "")
    ca_file = str(cluster.get("certificate-authority") or "")
    if not ca_data and ca_file:
        try:
            ca_data = base64.b64encode(read_bounded(ca_file, CERTIFICATE).encode()).decode("ascii")
        except InputError as exc:
            raise ClusterError(f"certificate-authority {exc}") from None
    if ca_data:
        info["certificate-authority-data"] = ca_data
    if cluster.get("proxy-url"):
        info["proxy-url"] = str(cluster["proxy-url"])
    if cluster.get("disable-compression"):
        info["disable-compression"] = True
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, dict) and extension.get("name") == EXEC_INFO_CONFIG:
            info["config"] = extension.get("extension")
    return info


def _interactive(mode: str, plugin: str) -> bool:
    """Whether the plugin may talk to the user (kubectl: only with a terminal on stdin). Not while
    something else owns the terminal's output (the TUI replaces ``sys.stdout``): a prompt there
    would be lost and the plugin would wait for an answer that never comes."""
    if mode == "Never":
        return False
    terminal = sys.stdin is not None and sys.stdin.isatty() and sys.stdout is sys.__stdout__
    if mode == "Always" and not terminal:
        raise ClusterError(
            f"exec plugin {plugin}: it needs a terminal (interactiveMode: Always) and standard input is not one",
            "run gpu-wizard in a terminal, or log in first so the plugin has a cached credential",
        )
    return terminal


def _plugin_command(exec_config: dict[str, Any]) -> tuple[list[str], str]:
    """argv of the plugin and its name as shown in messages."""
    command = os.path.expanduser(str(exec_config.get("command") or ""))
    if not command:
        raise ClusterError("exec plugin: the kubeconfig's user names no command", "set users[].user.exec.command")
    args = [str(a) for a in exec_config.get("args") or []]
    return [command, *args], one_line(command, 200)


async def exec_credential(document: dict[str, Any]) -> dict[str, Any]:
    """Run the user's exec plugin of a :func:`context_kubeconfig` document; returns its ``status``
    (``token``, or ``clientCertificateData`` and ``clientKeyData``). Every failure is one ClusterError
    line naming the plugin: not found (with its ``installHint``), its own error output, a bad answer."""
    exec_config: dict[str, Any] = document["users"][0]["user"]["exec"]
    argv, plugin = _plugin_command(exec_config)
    api_version = str(exec_config.get("apiVersion") or "")
    if not api_version.startswith("client.authentication.k8s.io/"):
        raise ClusterError(f"exec plugin {plugin}: apiVersion {api_version!r} is not client.authentication.k8s.io/v1")
    mode = str(exec_config.get("interactiveMode") or ("IfAvailable" if api_version.endswith("beta1") else ""))
    interactive = _interactive(mode, plugin)
    spec: dict[str, Any] = {"interactive": interactive}
    if exec_config.get("provideClusterInfo"):
        spec["cluster"] = exec_cluster_info(document["clusters"][0]["cluster"])
    info = {"apiVersion": api_version, "kind": "ExecCredential", "spec": spec}
    env = dict(os.environ)
    for item in exec_config.get("env") or []:
        if isinstance(item, dict) and item.get("name"):
            env[str(item["name"])] = str(item.get("value") or "")
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            # interactive: the plugin's prompts (a device code, a password) reach the user as with kubectl
            stdin=None if interactive else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=None if interactive else asyncio.subprocess.PIPE,
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        hint = one_line(str(exec_config.get("installHint") or ""), 500)
        what = "not found" if isinstance(exc, FileNotFoundError) else f"cannot be run ({exc.strerror})"
        raise ClusterError(
            f"exec plugin {plugin} {what}", hint or f"install {plugin} or fix users[].user.exec.command"
        ) from None
    try:
        async with asyncio.timeout(PLUGIN_TIMEOUT):
            out, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ClusterError(f"exec plugin {plugin} did not answer within {PLUGIN_TIMEOUT:g}s") from None
    finally:
        if proc.returncode is None:  # cancelled (Ctrl-C): do not leave the plugin running
            proc.kill()
    if proc.returncode != 0:
        said = one_line(err or b"") or one_line(out) or ("see its output above" if interactive else "no error output")
        raise ClusterError(
            f"exec plugin {plugin} failed (exit code {proc.returncode}): {said}",
            "log in again with the cloud's CLI, or check the plugin's configuration in the kubeconfig",
        )
    try:
        answer = json.loads(out)
    except ValueError:
        raise ClusterError(
            f"exec plugin {plugin} printed no ExecCredential JSON: {one_line(out) or '(nothing)'}"
        ) from None
    status = answer.get("status") if isinstance(answer, dict) else None
    if not isinstance(status, dict) or answer.get("kind") != "ExecCredential":
        raise ClusterError(f"exec plugin {plugin} printed no ExecCredential with a status")
    if answer.get("apiVersion") != api_version:
        raise ClusterError(
            f"exec plugin {plugin} answered with apiVersion {one_line(str(answer.get('apiVersion')), 80)!r}, "
            f"the kubeconfig asks for {api_version}"
        )
    if not status.get("token") and not (status.get("clientCertificateData") and status.get("clientKeyData")):
        raise ClusterError(f"exec plugin {plugin} returned neither a token nor a client certificate and key")
    return status


async def plugin_credential(kubeconfig: str | None, name: str) -> dict[str, Any] | None:
    """The ExecCredential ``status`` of context ``name``'s exec plugin (run now), or None: no plugin."""
    document = context_kubeconfig(kubeconfig, name)
    users = document["users"]
    if users and isinstance(users[0]["user"].get("exec"), dict):
        return await exec_credential(document)
    return None


def with_credential(document: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """``document`` with its user's exec replaced by the credential the plugin returned."""
    user: dict[str, Any] = {}
    if status.get("token"):
        user["token"] = str(status["token"])
    else:
        user["client-certificate-data"] = base64.b64encode(str(status["clientCertificateData"]).encode()).decode()
        user["client-key-data"] = base64.b64encode(str(status["clientKeyData"]).encode()).decode()
    return {**document, "users": [{"name": document["users"][0]["name"], "user": user}]}
