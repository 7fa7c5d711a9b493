"""Backup files: the live custom resources as they were before an apply, in re-appliable YAML.

A backup is multi-document YAML that ``kubectl replace -f`` (or ``gpu-wizard rollback``) accepts:
each object without server-managed fields (resourceVersion, uid, managedFields, status…). A comment
header records, as one JSON line, which objects the apply *created*, so that a rollback deletes
them. Files are written 0600 through a temporary file and a rename.

A backup is read as untrusted input (a rollback replaces cluster objects with what it holds): within
:data:`wizard.bounded_read.BACKUP` (1 MiB of UTF-8, no YAML anchors or aliases, which the writer never
makes, nesting bounded), and only the two kinds gpu-wizard manages, each with a name, plus the driver
DaemonSets an apply deleted because the operator had left them behind (:mod:`wizard.engine.leftovers`):
``apps/v1`` DaemonSets in a namespace, labelled as the driver component, which a rollback re-creates; and, in the
header, the ``nvidia.com/gpu.deploy.driver`` value each node had before the apply kept it out of the driver rollout.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from wizard.atomic_write import write_private
from wizard.bounded_read import BACKUP, BoundsError, InputError, check_yaml, read_bounded
from wizard.cluster.errors import ClusterError
from wizard.engine.operator_names import DRIVER_SELECTOR

HEADER_KEY = "# gpu-wizard-backup: "
KINDS = {"ClusterPolicy": ("nvidia.com", "clusterpolicies"), "NVIDIADriver": ("nvidia.com", "nvidiadrivers")}
"""The kinds gpu-wizard manages, with their API group and plural: a backup may hold nothing else but driver DaemonSets."""
DAEMONSET = "DaemonSet"
DAEMONSET_API = "apps/v1"
DRIVER_LABEL = tuple(DRIVER_SELECTOR.split("=", 1))
"""The label every driver DaemonSet of the operator carries: a backup's DaemonSet must carry it too."""
_SERVER_FIELDS = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
)


@dataclass(frozen=True)
class ObjectRef:
    """Identity of one cluster-scoped custom object (or of a driver DaemonSet, which has a namespace)."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        """The identity of an object dict."""
        meta = obj.get("metadata") or {}
        kind = str(obj.get("kind") or "")
        return cls(
            str(obj.get("apiVersion") or ""),
            kind,
            str(meta.get("name") or ""),
            str(meta.get("namespace") or "") if kind == DAEMONSET else "",
        )

    @property
    def key(self) -> str:
        """``Kind/name`` (``DaemonSet/namespace/name``)."""
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"

    @property
    def daemonset(self) -> bool:
        return self.kind == DAEMONSET

    @property
    def api(self) -> tuple[str, str, str]:
        """(group, version, plural) for the custom-objects API."""
        group, _, version = self.api_version.partition("/")
        known = KINDS.get(self.kind)
        if known is None or known[0] != group or not version:
            raise ClusterError(f"{self.key}: gpu-wizard only manages nvidia.com ClusterPolicy and NVIDIADriver objects")
        return group, version, known[1]

    def as_list(self) -> list[str]:
        return [self.api_version, self.kind, self.name]


def clean(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy without status and server-managed metadata (what a re-apply needs, nothing more)."""
    data = json.loads(json.dumps(dict(obj)))
    data.pop("status", None)
    meta = data.get("metadata") or {}
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if "annotations" in meta and not annotations:
        meta.pop("annotations")
    data["metadata"] = meta
    return data


@dataclass
class Backup:
    """The saved objects plus the ones the apply is about to create."""

    context: str
    server: str
    objects: list[dict[str, Any]]
    created: list[ObjectRef] = field(default_factory=list)
    written_at: str = ""
    node_labels: dict[str, str | None] = field(default_factory=dict)
    """Node -> its ``nvidia.com/gpu.deploy.driver`` value before the apply relabelled it (None: absent)."""


def _yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 4096
    return yaml


def render_backup(backup: Backup) -> str:
    """The backup file's text."""
    meta = {
        "version": 1,
        "context": backup.context,
        "server": backup.server,
        "writtenAt": backup.written_at,
        "created": [ref.as_list() for ref in backup.created],
    }
    if backup.node_labels:
        meta["nodeLabels"] = dict(sorted(backup.node_labels.items()))
    lines = [
        f"# gpu-wizard backup of the GPU Operator custom resources, {backup.written_at}",
        f"# context {backup.context} ({backup.server}); restore with: gpu-wizard rollback --backup THIS_FILE",
        "# (or `kubectl replace -f THIS_FILE`, then delete the objects listed as created below)",
        HEADER_KEY + json.dumps(meta, sort_keys=True),
    ]
    buffer = io.StringIO()
    docs = [clean(obj) for obj in backup.objects]
    if docs:
        _yaml().dump_all(docs, buffer)
    body = buffer.getvalue()
    return "\n".join(lines) + "\n" + ("---\n" + body if body else "")


def _unused(directory: Path, name: str) -> Path:
    """``directory/name``, or ``name-2``, ``name-3``… when taken: a backup never replaces an earlier one."""
    path = directory / name
    stem, suffix = path.stem, path.suffix
    number = 1
    while path.exists():
        number += 1
        path = directory / f"{stem}-{number}{suffix}"
    return path


def write_backup(directory: Path, name: str, backup: Backup) -> Path:
    """Write the backup (directory 0700, file 0600) under a name no earlier backup holds; returns its path."""
    backup.written_at = backup.written_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = _unused(directory, name)
        write_private(path, render_backup(backup))
    except OSError as exc:
        raise ClusterError(
            f"cannot write the backup to {directory} ({exc.strerror}); nothing was applied",
            "pass --backup-dir with a writable directory",
        ) from None
    return path


def read_backup(path: Path) -> Backup:
    """Parse a backup file written by :func:`write_backup`; anything else is refused with one line."""
    try:
        text = read_bounded(path, BACKUP)
    except InputError as exc:
        bounds = isinstance(exc, BoundsError)
        raise ClusterError(
            f"{exc} (not a gpu-wizard backup)" if bounds else f"{path}: cannot read the backup: {exc.message}"
        ) from None
    header = next((ln[len(HEADER_KEY) :] for ln in text.splitlines() if ln.startswith(HEADER_KEY)), None)
    if header is None:
        raise ClusterError(f"{path}: not a gpu-wizard backup (no '{HEADER_KEY.strip()}' line)")
    try:
        check_yaml(text, BACKUP)
    except InputError as exc:
        raise ClusterError(f"{exc.at(str(path))} (a damaged backup: refused)") from None
    try:
        meta = json.loads(header)
        docs = [d for d in _yaml().load_all(text) if d]
    except (ValueError, YAMLError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ClusterError(f"{where}: damaged backup ({exc.__class__.__name__})") from None
    if not isinstance(meta, dict):
        raise ClusterError(f"{path}: damaged backup (the {HEADER_KEY.strip()} line is not a JSON object)")
    created = [_ref(item, path) for item in _list(meta.get("created"), path)]
    node_labels = _node_labels(meta.get("nodeLabels"), path)
    for doc in docs:
        if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
            raise ClusterError(f"{path}: damaged backup (a document is not a Kubernetes object)")
        if doc.get("kind") == DAEMONSET:
            _daemonset(doc, path)
            continue
        ref = _ref([doc.get("apiVersion"), doc.get("kind"), doc["metadata"].get("name")], path)
        doc["apiVersion"], doc["kind"], doc["metadata"]["name"] = ref.as_list()
    return Backup(
        str(meta.get("context") or ""),
        str(meta.get("server") or ""),
        docs,
        created,
        str(meta.get("writtenAt") or ""),
        node_labels,
    )


_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")


def _node_labels(value: Any, path: Path) -> dict[str, str | None]:
    """The node label values a backup records: node names and label values by Kubernetes' grammars only."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ClusterError(f"{path}: damaged backup (nodeLabels is not a mapping)")
    out: dict[str, str | None] = {}
    for node, before in value.items():
        if not (isinstance(node, str) and len(node) <= 253 and _NAME.fullmatch(node)):
            raise ClusterError(f"{path}: refused: node name {node!r} is not a DNS subdomain name")
        if before is not None and not (isinstance(before, str) and _LABEL_VALUE.fullmatch(before)):
            raise ClusterError(f"{path}: refused: node {node}'s label value {before!r} is not a label value")
        out[node] = before
    return out


def _list(value: Any, path: Path) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ClusterError(f"{path}: damaged backup (created is not a list)")
    return value


def _ref(item: Any, path: Path) -> ObjectRef:
    """An object identity from a backup, only of a kind gpu-wizard manages."""
    if not (isinstance(item, list) and len(item) == 3 and all(isinstance(v, str) and v for v in item)):
        raise ClusterError(f"{path}: damaged backup (an object without apiVersion, kind and name)")
    ref = ObjectRef(*item)
    try:
        ref.api  # noqa: B018 - raises for a kind, group or name gpu-wizard does not manage
    except ClusterError as exc:
        raise ClusterError(f"{path}: refused: {exc.message}") from None
    if not _NAME.fullmatch(ref.name):
        raise ClusterError(f"{path}: refused: {ref.kind} name {ref.name!r} is not a DNS subdomain name")
    return ref


def _daemonset(doc: dict[str, Any], path: Path) -> None:
    """A DaemonSet in a backup: only a driver DaemonSet (``apps/v1``, in a namespace, the driver's label)."""
    meta = doc["metadata"]
    name, namespace = meta.get("name"), meta.get("namespace")
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    if doc.get("apiVersion") != DAEMONSET_API or not isinstance(name, str) or not isinstance(namespace, str):
        raise ClusterError(f"{path}: damaged backup (a DaemonSet without apps/v1, a name and a namespace)")
    if not _NAME.fullmatch(name) or not _LABEL.fullmatch(namespace):
        raise ClusterError(f"{path}: refused: DaemonSet {namespace!r}/{name!r} is not a valid namespace and name")
    if labels.get(DRIVER_LABEL[0]) != DRIVER_LABEL[1]:
        raise ClusterError(
            f"{path}: refused: DaemonSet {namespace}/{name} is not a driver DaemonSet "
            f"({DRIVER_LABEL[0]}={DRIVER_LABEL[1]}); gpu-wizard only restores those"
        )


_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def private(path: Path) -> bool:
    """Whether only the owner may read the file (mode 0600 or stricter)."""
    return os.stat(path).st_mode & 0o077 == 0
