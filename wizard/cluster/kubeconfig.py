"""Finding and reading kubeconfig files the way kubectl does, without the Kubernetes client.

``--kubeconfig`` wins, then ``$KUBECONFIG`` (a ``:``-separated list, merged, the first file setting
a value wins), then ``~/.kube/config``. Listing contexts needs no credentials, so the TUI can offer
a context picker before anything connects. Before the Kubernetes client loads a context, it is
checked here so that a broken kubeconfig is one clear line: the cluster and user it names exist,
the server is an http(s) URL, and the files it points at (CA, client certificate and key, token
file) are there.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

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


def _documents(kubeconfig: str | None) -> list[tuple[str, dict[str, Any]]]:
    """Every existing kubeconfig file with its content, in kubectl's precedence order."""
    documents: list[tuple[str, dict[str, Any]]] = []
    for path in existing_paths(kubeconfig).split(os.pathsep):
        try:
            data = YAML(typ="safe", pure=True).load(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ClusterError(f"{path}: cannot read the kubeconfig ({exc.strerror})") from None
        except (YAMLError, UnicodeDecodeError) as exc:
            mark = exc.problem_mark if isinstance(exc, MarkedYAMLError) else None
            where = f"{path}:{mark.line + 1}" if mark is not None else path
            raise ClusterError(
                f"{where}: not valid YAML ({exc.__class__.__name__})", "check it with `kubectl config view`"
            ) from None
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
