"""The host probe's DaemonSet: its object, the script its pods run, and the result they leave behind.

One short-lived DaemonSet per run checks many nodes at once: its pods' init container ``probe`` runs
the :class:`~wizard.engine.nodescript.Step` list on the host (host ``/`` bound read-only at
``/host``; privileged, because the host's ``nvidia-smi`` needs the GPU devices and ``findmnt --task
1`` reads the host init's mount table) and writes the results, compact JSON, to its termination
message; a ``sleep`` main container (unprivileged, no mounts) keeps the DaemonSet content until
gpu-wizard deletes it. gpu-wizard reads the results from the pod objects it watches: no exec, no
per-node request.

The kubelet keeps at most 4096 bytes of a termination message (its tail), so the script caps
every step's output before writing: the budget is shared by weight (a streaming step such as
``nvidia-smi`` gets more, ``test`` prints nothing), each output is base64 (JSON-safe without a JSON
tool on the node) and its full byte length is recorded, so a cut is reported, never silent. A
streaming step's output (the ``nvidia-smi`` table: 4.3 kB for 8 GPUs) has its runs of blanks, ``=``
and ``-`` squeezed to one (``tr -s``) first: the table still parses, in about a third of the bytes.

Message: ``{"v":1,"r":[[exit code, output bytes, "base64 of the kept output"], ...]}``, one entry per step.
"""

from __future__ import annotations

import base64
import binascii
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wizard.bundled import operator_values
from wizard.cluster.probes.probe import HOST_MOUNT
from wizard.cluster.probes.probenodes import node_terms
from wizard.engine.nodescript import Step, StepResult
from wizard.engine.releases import default_release

MESSAGE_LIMIT = 4096
"""The kubelet's limit on one container's termination message."""
PROBE_CONTAINER = "probe"
RUN_LABEL = "gpu-wizard.dev/run"
OWNER_LABELS = {"app.kubernetes.io/managed-by": "gpu-wizard", "app.kubernetes.io/name": "gpu-wizard-probe"}
OWNER_SELECTOR = "app.kubernetes.io/managed-by=gpu-wizard,app.kubernetes.io/name=gpu-wizard-probe"
"""What ``gpu-wizard cleanup`` selects: every probe DaemonSet and pod gpu-wizard made."""
_LOG = "/dev/termination-log"
_ENVELOPE = len('{"v":1,"r":[]}')
_PER_STEP = len(',[-1,1048576,""]')
_STREAM_WEIGHT = 6
_SILENT = frozenset({"test", "["})
_SQUEEZE = " =-"
"""Characters whose runs ``tr -s`` squeezes in a streaming step's output (dash last: not a range)."""
"""Commands that print nothing: no share of the budget (their exit status is the answer)."""


def chart_tolerations() -> list[dict[str, Any]]:
    """The operator chart's default ``daemonsets.tolerations`` (the same in every bundled release)."""
    return [dict(t) for t in operator_values(default_release())["daemonsets"]["tolerations"]]


def policy_tolerations(policy: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The live ClusterPolicy's ``daemonsets.tolerations`` (what the operator's pods tolerate), else the chart default."""
    found = (((policy or {}).get("spec") or {}).get("daemonsets") or {}).get("tolerations")
    if isinstance(found, list) and all(isinstance(t, Mapping) for t in found):
        return [dict(t) for t in found]
    return chart_tolerations()


def caps(steps: Sequence[Step]) -> list[int]:
    """Bytes of output each step may keep so that the whole message fits in :data:`MESSAGE_LIMIT`."""
    weights = [0 if s.argv[:1] and s.argv[0] in _SILENT else _STREAM_WEIGHT if s.stream else 1 for s in steps]
    room = MESSAGE_LIMIT - _ENVELOPE - _PER_STEP * len(steps) - 16
    raw = max(0, room) * 3 // 4 - 3 * len(steps)  # base64: 4 bytes per 3, padded
    total = sum(weights) or 1
    return [max(0, raw * w // total) // 3 * 3 for w in weights]


def script(steps: Sequence[Step]) -> str:
    """The init container's ``sh -c`` text: each step, then its entry appended to the termination log."""
    parts = [f'printf \'{{"v":1,"r":[\' >{_LOG}', "s="]
    for step, cap in zip(steps, caps(steps), strict=True):
        argv = ("chroot", HOST_MOUNT, *step.argv) if step.host else step.argv
        parts += [f"o=$({shlex.join(argv)} 2>&1)", "c=$?"]
        if step.stream:  # a table (nvidia-smi: 4.3 kB for 8 GPUs): its runs of blanks and rules squeezed
            parts.append(f'o=$(printf %s "$o" | tr -s {shlex.quote(_SQUEEZE)})')
        parts += [
            'n=$(printf %s "$o" | wc -c)',
            f'b=$(printf %s "$o" | head -c {cap} | base64 -w 0)',
            f'printf \'%s[%d,%d,"%s"]\' "$s" "$c" "$n" "$b" >>{_LOG}',
            "s=,",
        ]
    parts.append(f"printf ']}}' >>{_LOG}")
    return "\n".join(parts) + "\n"


@dataclass(frozen=True)
class Message:
    """A pod's result: one :class:`StepResult` per step, the steps whose output was cut, and what went wrong."""

    results: list[StepResult]
    truncated: list[str]
    """``check: kept of total bytes`` of each step whose output was cut."""
    error: str = ""


def read_message(message: str, steps: Sequence[Step]) -> Message:
    """Decode the termination message; a message cut by the kubelet or a script that stopped early is an error."""
    try:
        data = json.loads(message)
        entries = data["r"]
        if data.get("v") != 1 or not isinstance(entries, list):
            raise ValueError("unknown format")
    except (ValueError, KeyError, TypeError):
        shown = message[:60].encode("unicode_escape").decode()
        return Message([], [], f"the probe's result is unreadable ({len(message)} bytes: {shown!r}…)")
    results, truncated = [], []
    for step, entry in zip(steps, entries, strict=False):
        try:
            code, size, encoded = int(entry[0]), int(entry[1]), str(entry[2])
            output = base64.b64decode(encoded, validate=True).decode(errors="replace")
        except (ValueError, TypeError, IndexError, binascii.Error):
            return Message([], [], f"the probe's result for {step.check} is unreadable")
        kept = len(output.encode())
        if size > kept:
            truncated.append(f"{step.check}: {kept} of {size} bytes")
        results.append(StepResult(output.rstrip("\n"), code))
    if len(results) != len(steps):
        return Message([], truncated, f"the probe answered {len(results)} of {len(steps)} steps")
    return Message(results, truncated)


def anchor_job(name: str, namespace: str, *, image: str, run_id: str, deadline_s: int) -> dict[str, Any]:
    """The run's deadline: a Job that runs no pod (``parallelism: 0``), fails ``deadline_s`` after it starts
    (``activeDeadlineSeconds``) and is then deleted at once (``ttlSecondsAfterFinished: 0``); the probe
    DaemonSet names it as its owner, so the garbage collector removes the DaemonSet and its pods with it
    (a DaemonSet's pods may not carry ``activeDeadlineSeconds`` themselves). A killed gpu-wizard cannot
    leave them running past the deadline. That a Job without pods still meets its deadline is the Job
    controller's own rule (kubernetes pkg/controller/job/job_controller.go, ``syncJob``): it sets
    ``status.startTime`` at the first sync of any Job that is not suspended, whatever its parallelism,
    and fails it with ``DeadlineExceeded`` once ``activeDeadlineSeconds`` have passed since then; with
    ``parallelism`` set and ``completions`` unset no pod is wanted and the Job never completes first."""
    labels = {**OWNER_LABELS, RUN_LABEL: run_id}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "parallelism": 0,
            "backoffLimit": 0,
            "activeDeadlineSeconds": deadline_s,
            "ttlSecondsAfterFinished": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "containers": [{"name": "deadline", "image": image, "command": ["true"]}],
                },
            },
        },
    }


def owned_by(owner: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The ownerReferences naming ``owner`` (none without one)."""
    if not owner:
        return []
    meta = owner.get("metadata") or {}
    return [
        {
            "apiVersion": str(owner.get("apiVersion") or "batch/v1"),
            "kind": str(owner.get("kind") or "Job"),
            "name": str(meta.get("name") or ""),
            "uid": str(meta.get("uid") or ""),
        }
    ]


def daemonset(
    name: str,
    namespace: str,
    nodes: Sequence[str],
    steps: Sequence[Step],
    *,
    image: str,
    run_id: str,
    tolerations: Sequence[Mapping[str, Any]],
    sleep_s: int,
    owner: Mapping[str, Any] | None = None,
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """The probe DaemonSet, node-selected to exactly ``nodes`` (no node is labelled for it: by a GPU label
    the cluster's nodes already carry where ``node_labels`` shows one fits, else by name, see
    :mod:`wizard.cluster.probes.probenodes`); ``owner``: the :func:`anchor_job` object it goes away with."""
    labels = {**OWNER_LABELS, RUN_LABEL: run_id}
    privileged = any(s.host for s in steps)
    terms = node_terms(nodes, node_labels)
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": owned_by(owner)},
        "spec": {
            "selector": {"matchLabels": {RUN_LABEL: run_id}},
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "affinity": affinity,
                    "tolerations": [dict(t) for t in tolerations],
                    "priorityClassName": "system-node-critical",
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 0,
                    "enableServiceLinks": False,
                    "initContainers": [
                        {
                            "name": PROBE_CONTAINER,
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["sh", "-c", script(steps)],
                            "securityContext": {"privileged": privileged},
                            "terminationMessagePolicy": "File",
                            "volumeMounts": [{"name": "host-root", "mountPath": HOST_MOUNT, "readOnly": True}],
                        }
                    ],
                    "containers": [
                        {
                            "name": "sleep",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["sleep", str(sleep_s)],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                    "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
                },
            },
        },
    }
