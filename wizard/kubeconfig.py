"""Finding and reading kubeconfig files the way kubectl does, without the Kubernetes client.

``--kubeconfig`` wins, then ``$KUBECONFIG`` (a ``:``-separated list, merged, the first file setting
a value wins), then ``~/.kube/config``. Listing contexts needs no credentials, so the TUI can offer
a context picker before anything connects.
"""

from __future__ import annotations

import os
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from wizard.errors import ClusterError


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


def list_contexts(kubeconfig: str | None = None) -> tuple[list[str], str | None]:
    """Context names and the current context, merged the way kubectl merges files (first one wins)."""
    names: list[str] = []
    current: str | None = None
    for path in existing_paths(kubeconfig).split(os.pathsep):
        try:
            data = YAML(typ="safe", pure=True).load(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ClusterError(f"{path}: cannot read the kubeconfig ({exc.strerror})") from None
        except (YAMLError, UnicodeDecodeError) as exc:
            raise ClusterError(
                f"{path}: not valid YAML ({exc.__class__.__name__})", "check it with `kubectl config view`"
            ) from None
        if data is None:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("contexts") or [], list):
            raise ClusterError(f"{path}: not a kubeconfig (expected clusters, contexts and users lists)")
        for entry in data.get("contexts") or []:
            name = entry.get("name") if isinstance(entry, dict) else None
            if name and str(name) not in names:
                names.append(str(name))
        if current is None and data.get("current-context"):
            current = str(data["current-context"])
    return names, current


def choose_context(kubeconfig: str | None, context: str | None) -> str:
    """The context to use: the one asked for, else the current one; ClusterError naming the valid ones."""
    names, current = list_contexts(kubeconfig)
    chosen = context or current
    valid = ", ".join(names) or "none"
    if not chosen:
        raise ClusterError("the kubeconfig sets no current context", f"pass --context NAME (valid: {valid})")
    if chosen not in names:
        raise ClusterError(f"context {chosen!r} is not in the kubeconfig", f"valid contexts: {valid}")
    return chosen
