"""Recordings of what the real operator and API server produced, per release and flow, and the view of
DaemonSets both sides are compared in.

The real-cluster lane records (`GPU_WIZARD_RECORD=1 make test-real`, refused under CI) and otherwise
checks the live cluster against the committed recording, so a changed operator is noticed. The fast
suite (tests/test_demo_vs_real.py) replays each recording on the demo cluster and diffs the same view:
where the demo differs, the demo is fixed or the difference is written down with its reason in
`recordings/known-differences.yaml`.

The view keeps what gpu-wizard predicts, checks or shows: the operand DaemonSets' names, their labels
that select and describe them, node selectors, update strategy, containers' images, the env values
that carry the wizard's paths, every mount and its hostPath or ConfigMap.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RECORDINGS = Path(__file__).resolve().parent / "recordings"
REGISTRY = "registry.recorded.invalid"
LABELS = ("app", "app.kubernetes.io/component", "nvidia.com/precompiled", "app.kubernetes.io/part-of")
ENV = (
    "ROOT",
    "DRIVER_INSTALL_DIR",
    "DRIVER_INSTALL_DIR_CTR_PATH",
    "NVIDIA_CDI_HOOK_PATH",
    "RUNTIME_CONFIG",
    "CONTAINERD_CONFIG",
)


def _container_view(container: dict[str, Any]) -> dict[str, Any]:
    env = {e["name"]: e["value"] for e in container.get("env") or [] if e.get("name") in ENV and "value" in e}
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts") or []}
    return {"image": container.get("image", ""), "env": env, "mounts": mounts}


def daemonset_view(ds: dict[str, Any], host: str) -> dict[str, Any]:
    """One DaemonSet as the recordings keep it; the test registry's host:port is written REGISTRY."""
    spec = ds["spec"]["template"]["spec"]
    volumes = {}
    for volume in spec.get("volumes") or []:
        if "hostPath" in volume:
            volumes[volume["name"]] = {"hostPath": volume["hostPath"].get("path", "")}
        elif "configMap" in volume:
            volumes[volume["name"]] = {"configMap": volume["configMap"].get("name", "")}
    labels = ds["metadata"].get("labels") or {}
    view = {
        "labels": {k: labels[k] for k in LABELS if k in labels},
        "nodeSelector": spec.get("nodeSelector") or {},
        "updateStrategy": (ds["spec"].get("updateStrategy") or {}).get("type", ""),
        "containers": {c["name"]: _container_view(c) for c in spec.get("containers") or []},
        "initContainers": {c["name"]: _container_view(c) for c in spec.get("initContainers") or []},
        "volumes": volumes,
    }
    return json.loads(json.dumps(view).replace(host, REGISTRY)) if host else view


def daemonsets_view(items: list[dict[str, Any]], host: str, names: dict[str, str] | None = None) -> dict[str, Any]:
    """Every operand DaemonSet by name; `names` renames (an NVIDIADriver DaemonSet's hash is of its CR's UID)."""
    renamed = names or {}
    out = {}
    for ds in items:
        name = ds["metadata"]["name"]
        text = json.dumps(daemonset_view(ds, host))
        if name in renamed:  # the name also stands in the DaemonSet's own `app` label
            text = text.replace(json.dumps(name), json.dumps(renamed[name]))
        out[renamed.get(name, name)] = json.loads(text)
    return out


def stable_names(items: list[dict[str, Any]]) -> dict[str, str]:
    """NVIDIADriver DaemonSets are `nvidia-<type>-driver-<os>-<hash of the CR's UID>`: the hash differs per run."""
    names = {}
    for ds in items:
        name = ds["metadata"]["name"]
        if name.startswith("nvidia-gpu-driver-") or name.startswith("nvidia-vgpu-driver-"):
            names[name] = name.rsplit("-", 1)[0] + "-HASH"
    return names


def path(release: str, flow: str) -> Path:
    return RECORDINGS / release / f"{flow}.json"


def recording_wanted() -> bool:
    if os.environ.get("GPU_WIZARD_RECORD") != "1":
        return False
    if os.environ.get("CI") == "true":
        raise RuntimeError("GPU_WIZARD_RECORD=1 is refused under CI=true: recordings are made by hand and committed")
    return True


def save(release: str, flow: str, document: dict[str, Any]) -> None:
    target = path(release, flow)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def load(release: str, flow: str) -> dict[str, Any]:
    return json.loads(path(release, flow).read_text())


def every_recording() -> list[Path]:
    return sorted(RECORDINGS.glob("*/*.json"))


PATH_VOLUMES = ("toolkit-install-dir", "driver-install-dir", "toolkit-root", "run-nvidia", "host-root")
"""The volumes that carry toolkit.installDir and hostPaths.driverInstallDir (and the roots they sit in)."""


def wizard_view(daemonsets: dict[str, Any]) -> dict[str, Any]:
    """The part of a recorded view gpu-wizard predicts or checks, which the demo must reproduce: every
    DaemonSet's labels, selector, strategy and images, the path env values, and the mounts and volumes
    of the path volumes and of a repository ConfigMap (the operands' own entrypoints and sockets are the
    operator's business: the wizard never reads them)."""

    def keep_volume(name: str, volume: dict[str, str]) -> bool:
        config_map = volume.get("configMap", "")
        return name in PATH_VOLUMES or bool(config_map and not config_map.endswith("-entrypoint"))

    out = {}
    for name, ds in daemonsets.items():
        volumes = {k: v for k, v in ds["volumes"].items() if keep_volume(k, v)}

        def containers(group: dict[str, Any], volumes: dict[str, Any] = volumes) -> dict[str, Any]:
            return {
                c: {**view, "mounts": {m: p for m, p in view["mounts"].items() if m in volumes}}
                for c, view in group.items()
            }

        out[name] = {
            **ds,
            "volumes": volumes,
            "containers": containers(ds["containers"]),
            "initContainers": containers(ds["initContainers"]),
        }
    return out
