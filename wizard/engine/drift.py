"""Drift: how a live cluster differs from its plan, one finding per difference (``gpu-wizard drift``).

Two kinds, both pure (the caller reads the cluster):

* :func:`object_drift`: the live ClusterPolicy and NVIDIADrivers against the objects the plan renders (for the
  ClusterPolicy the fields the wizard owns, as ``apply`` patches them; the NVIDIADrivers whole). Every
  field the plan sets (a leaf of the rendered ``spec``) is compared with the live object's; fields the plan
  leaves to the operator or Helm (server defaults, chart defaults, status) are not the plan's and never drift. A
  rendered object missing from the cluster, or a live NVIDIADriver the plan does not render, is a difference.
* :func:`node_drift`: the GPU nodes against the plan's image for each (:func:`wizard.engine.mirror.node_images`):
  a node whose driver pod runs another image (built for another kernel: kernel drift; or another image
  altogether), a node on an OS other than the one whose image a ClusterPolicy gives every node (a new OS),
  a node the operator cannot place an image on, and a node whose image the registry lacks (the caller's
  registry answers).

Each difference is a failed :class:`~wizard.engine.results.Check` (its ``data`` holds the object, field, plan and
live values); what matches is a passed one, so a report lists what was compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from wizard.engine.facts import ClusterFacts
from wizard.engine.kernel_drift import PULL_FAILURES, kernel_drift
from wizard.engine.mirror import NodeImage
from wizard.engine.results import Check, Status

APPLY_HINT = "gpu-wizard apply --answers FILE puts the plan back; or change the answers file to what the cluster runs"


def scalar(value: Any) -> str:
    """A leaf as the API server may echo it: ``1`` and ``'1'``, ``true`` and ``'true'`` are the same setting."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    return "" if value is None else str(value)


def leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from leaves(child, (*path, str(key)))
    else:
        yield path, value


def _at(value: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return False, None
        value = value[key]
    return True, value


def same(planned: Any, live: Any) -> bool:
    if isinstance(planned, list) and isinstance(live, list):
        return len(planned) == len(live) and all(same(a, b) for a, b in zip(planned, live, strict=True))
    if isinstance(planned, dict) and isinstance(live, dict):
        return all(same(v, live.get(k)) for k, v in planned.items())  # the plan's keys only: defaults are not drift
    return scalar(planned) == scalar(live)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def object_drift(
    desired: Sequence[Mapping[str, Any]], policies: Sequence[Mapping[str, Any]], drivers: Sequence[Mapping[str, Any]]
) -> list[Check]:
    """The live ClusterPolicies and NVIDIADrivers against the rendered ``desired`` objects: a failed check per
    field that differs (or object missing or extra), a passed one per object that matches."""
    live = {("ClusterPolicy", _name(p)): p for p in policies} | {("NVIDIADriver", _name(d)): d for d in drivers}
    checks: list[Check] = []
    planned_keys = set()
    for obj in desired:
        key = (str(obj.get("kind") or ""), _name(obj))
        planned_keys.add(key)
        subject = f"{key[0]}/{key[1]}"
        found = live.get(key)
        if found is None:
            checks.append(
                Check("object", Status.FAIL, f"{subject}: in the plan, not in the cluster", hint=APPLY_HINT,
                      data={"object": subject, "plan": "present", "live": None})
            )  # fmt: skip
            continue
        before = len(checks)
        for path, planned in leaves(obj.get("spec") or {}, ("spec",)):
            present, value = _at(found, path)
            if (present and same(planned, value)) or (not present and planned in (None, "", [], {})):
                continue  # an empty setting the server leaves out is the same setting
            field = ".".join(path)
            said = scalar(value) if present else "(not set)"
            checks.append(
                Check(
                    "spec",
                    Status.FAIL,
                    f"{subject} {field}: the plan says {scalar(planned) or '(empty)'}, the cluster has {said or '(empty)'}",
                    hint=APPLY_HINT,
                    data={"object": subject, "field": field, "plan": planned, "live": value if present else None},
                )
            )
        if len(checks) == before:
            checks.append(Check("object", Status.PASS, f"{subject}: every field the plan sets matches"))
    for kind, name in sorted(set(live) - planned_keys):
        if kind == "NVIDIADriver":
            subject = f"{kind}/{name}"
            checks.append(
                Check("object", Status.FAIL, f"{subject}: in the cluster, not in the plan", hint=APPLY_HINT,
                      data={"object": subject, "plan": None, "live": "present"})
            )  # fmt: skip
    return checks


def node_drift(
    images: Sequence[NodeImage],
    facts: ClusterFacts,
    running: Mapping[str, tuple[str, str]],
    missing: Mapping[str, str],
) -> list[Check]:
    """The GPU nodes against the plan's image for each.

    ``running`` maps node -> (driver container image, waiting reason) of the driver pods, ``missing`` image -> why
    the registry has no such image (the caller asked it).
    """
    drifted = {d.node: d for d in kernel_drift(facts, running)}
    checks: list[Check] = []
    for item in images:
        node = item.node
        found = 0
        if item.unplaced:
            checks.append(Check("no-image", Status.FAIL, f"no driver image can be placed: {item.unplaced}", node=node))
            continue
        if not item.image:  # a pre-installed driver: no image to compare
            continue
        if item.node_os and item.tag_os and item.node_os != item.tag_os:
            found += 1
            checks.append(
                Check(
                    "new-os",
                    Status.FAIL,
                    f"runs {item.node_os}, but the ClusterPolicy gives every GPU node the {item.tag_os} image ({item.image})",
                    node=node,
                    hint="use NVIDIADriver CRs (driver.useNvidiaDriverCRD: true) for a driver per OS, "
                    "or keep the GPU nodes on one OS",
                    data={"plan": item.tag_os, "live": item.node_os},
                )
            )
        if item.image in missing:
            found += 1
            checks.append(
                Check(
                    "no-image",
                    Status.FAIL,
                    f"kernel {item.kernel} ({item.node_os or item.tag_os}): {item.image} {missing[item.image]}",
                    node=node,
                    hint=f"mirror or build it first (gpu-wizard check-kernel {item.kernel}; gpu-wizard mirror --run)",
                    data={"plan": item.image, "live": None},
                )
            )
        image, waiting = running.get(node, ("", ""))
        if not image:
            found += 1
            checks.append(
                Check("driver-pod", Status.FAIL, "no driver pod runs on it", node=node,
                      hint="gpu-wizard verify says why; the operator may still be rolling out",
                      data={"plan": item.image, "live": None})
            )  # fmt: skip
        elif image != item.image:
            found += 1
            check, message = (
                ("kernel", drifted[node].message())
                if node in drifted and not drifted[node].pull_failed
                else ("foreign-image", f"its driver pod runs {image}, the plan says {item.image}")
            )
            checks.append(
                Check(check, Status.FAIL, message, node=node, hint=APPLY_HINT,
                      data={"plan": item.image, "live": image})
            )  # fmt: skip
        elif waiting in PULL_FAILURES and item.image not in missing:
            found += 1
            checks.append(
                Check("no-image", Status.FAIL, f"its driver image {image} cannot be pulled ({waiting})", node=node,
                      hint=f"gpu-wizard check-kernel {item.kernel}", data={"plan": item.image, "live": image})
            )  # fmt: skip
        if not found:
            checks.append(Check("driver-image", Status.PASS, f"runs the plan's image {item.image}", node=node))
    return checks
