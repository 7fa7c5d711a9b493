"""The operator's own Helm chart rendered offline beside gpu-wizard's objects, and their differences."""

from __future__ import annotations

import atexit
import fnmatch
import functools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.render_cases import CP, RHEL_KERNEL, RKE2, SLE_KERNEL, facts, node
from tests.helpers.yaml11 import yaml11_load_all
from wizard.engine.plan import KNOWN_RELEASES, Plan
from wizard.engine.render import Rendered, helm_yaml, render, to_yaml

RELEASES = tuple(KNOWN_RELEASES.values())


CHARTS = Path(
    os.environ.get("GPU_WIZARD_OPERATOR_CHARTS") or Path(__file__).resolve().parents[3] / "shared" / "operator-charts"
)


NAMESPACE = "gpu-operator"


RELEASE_NAME = "gpu-operator"


REPOSITORY = "registry.example.com/nvidia"


NODES = (CP, node("gpu-0"), node("gpu-1", "rhel", "9.4", RHEL_KERNEL))


#: The private registry of the air-gapped cases (the issue's harbor).
PRIVATE_REGISTRY = "harbor.corp.example"


#: An upgradePolicy with every field away from the chart's default.
POLICY: dict[str, Any] = {
    "autoUpgrade": True,
    "maxParallelUpgrades": 3,
    "maxUnavailable": 2,
    "drain": {"enable": True, "force": True, "timeoutSeconds": 900, "deleteEmptyDir": True, "podSelector": "app=train"},
    "podDeletion": {"force": True, "timeoutSeconds": 120, "deleteEmptyDir": True},
    "waitForCompletion": {"timeoutSeconds": 60, "podSelector": "job=batch"},
}


#: case -> the answers' ``mode`` and ``driver`` (the release is added per test).
CASES: dict[str, dict[str, Any]] = {
    "precompiled": {"mode": "precompiled", "driver": {"version": "580", "repository": REPOSITORY}},
    "preinstalled": {"mode": "preinstalled"},
    "upstream": {"mode": "upstream", "driver": {"version": "580.126.20", "repository": REPOSITORY}},
    "upstream-repoconfig": {
        "mode": "upstream",
        "driver": {
            "version": "580.126.20",
            "repository": REPOSITORY,
            "repoConfig": {"configMapName": "repo-config"},
            "imagePullSecrets": ["regcred"],
        },
    },
    "nvidiadriver": {
        "mode": "upstream",
        "driver": {
            "version": "580.126.20",
            "repository": REPOSITORY,
            "useNvidiaDriverCRD": True,
            "repoConfig": {"configMapName": "repo-config"},
        },
    },
    "nvidiadriver-precompiled": {
        "mode": "precompiled",
        "driver": {"version": "580", "repository": REPOSITORY, "useNvidiaDriverCRD": True},
    },
    "upgrade-policy": {  # every upgradePolicy field away from its default, the count form of maxUnavailable
        "mode": "precompiled",
        "driver": {"version": "580", "repository": REPOSITORY, "upgradePolicy": POLICY},
    },
    "upgrade-policy-nvidiadriver": {
        "mode": "upstream",
        "driver": {
            "version": "580.126.20",
            "repository": REPOSITORY,
            "useNvidiaDriverCRD": True,
            "upgradePolicy": {**POLICY, "maxUnavailable": "50%", "autoUpgrade": False},
        },
    },
    # RKE2 nodes: the flavour's toolkit.env (file=... values, host paths) through the chart's toYaml
    "precompiled-rke2": {"mode": "precompiled", "driver": {"version": "580", "repository": REPOSITORY}},
    # the answers' own toolkit.env, with values YAML 1.1 would read as a bool or a number
    "upstream-answers-env": {
        "mode": "upstream",
        "driver": {"version": "580.126.20", "repository": REPOSITORY},
        "toolkit": {
            "env": {"NVIDIA_RUNTIME_SET_AS_DEFAULT": "true", "CDI_ENABLED": "on", "RUNTIME_CONFIG_SOURCE": "file"}
        },
    },
    # behind a private registry (issue 39): every operand image mapped there, the driver manager in the CRs too
    "operand-registry": {
        "mode": "upstream",
        "driver": {
            "version": "580.126.20",
            "repository": PRIVATE_REGISTRY + "/nvidia",
            "operandRegistry": PRIVATE_REGISTRY,
        },
    },
    "operand-registry-nvidiadriver": {
        "mode": "upstream",
        "driver": {
            "version": "580.126.20",
            "repository": PRIVATE_REGISTRY + "/nvidia",
            "operandRegistry": PRIVATE_REGISTRY,
            "useNvidiaDriverCRD": True,
        },
    },
}


#: case -> its nodes, where they are not NODES.
CASE_NODES: dict[str, tuple[dict[str, Any], ...]] = {
    "precompiled-rke2": tuple(
        node(name, "sle-micro", "5.5", SLE_KERNEL, gpu=gpu, **RKE2)
        for name, gpu in (("cp-0", ""), ("gpu-0", "NVIDIA-H200"))
    ),
}


#: (release glob, case glob, "Kind:path" glob) -> why gpu-wizard's object may differ there.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("*", "*", "ClusterPolicy:spec.daemonsets.labels.helm.sh/chart"): (
        "the chart names itself on every operand; a policy gpu-wizard creates is not a Helm release, and a"
        " label naming a chart version would go stale at the first upgrade gpu-wizard applies"
    ),
    ("*", "*", "ClusterPolicy:spec.devicePlugin.mps.root"): (
        "the template has no mps section; the CRD defaults root to /run/nvidia/mps, the chart value gpu-wizard"
        " writes, so the stored object is the same"
    ),
}


def _need_oracle(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"chart parity cannot run under CI=true: {reason}")
    pytest.skip(f"SKIPPED chart parity: {reason}")


@functools.cache
def _chart_dir(release: str) -> Path:
    """A copy of the release's chart with the published ``version``/``appVersion`` (the release tag)."""
    source = CHARTS / release
    if not (source / "Chart.yaml").is_file():
        _need_oracle(f"the {release} chart is not at {source} (set GPU_WIZARD_OPERATOR_CHARTS)")
    folder = tempfile.mkdtemp(prefix=f"chart-{release}-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    target = Path(folder) / "gpu-operator"
    shutil.copytree(source, target, copy_function=shutil.copyfile)
    for path in (target, *target.rglob("*")):  # the shared copy is read-only; this one is ours
        path.chmod(0o755 if path.is_dir() else 0o644)
    meta = target / "Chart.yaml"
    text = re.sub(r"(?m)^version: .*$", f"version: {release}", meta.read_text(encoding="utf-8"))
    meta.write_text(re.sub(r"(?m)^appVersion: .*$", f'appVersion: "{release}"', text), encoding="utf-8")
    return target


@functools.cache
def render_chart(release: str, values_json: str) -> tuple[dict[str, Any], ...]:
    """The chart's ClusterPolicy and NVIDIADriver objects for some values (rendered once per input)."""
    try:
        from helm_python.chart import Chart
    except ImportError as exc:
        _need_oracle(f"helm-python-sdk is not installed ({exc}); pip install -e '.[test]'")
    with Chart.load(str(_chart_dir(release))) as chart:
        files = chart.render(values=json.loads(values_json), name=RELEASE_NAME, namespace=NAMESPACE, is_install=True)
    docs: list[dict[str, Any]] = []
    for name in ("clusterpolicy.yaml", "nvidiadriver.yaml", "extra-objects.yaml"):  # extraObjects: NVIDIADrivers
        docs += [d for d in yaml11_load_all(files.get(f"gpu-operator/templates/{name}", "")) if d]
    return tuple(docs)


def rendered_case(release: str, case: str) -> tuple[Rendered, dict[str, Any]]:
    """gpu-wizard's rendering of a case and the ``-o helm`` values it prints, read back as Helm reads them."""
    answers = {"operator": {"version": release}, **CASES[case]}
    rendered = render(Plan.model_validate(answers), facts(*CASE_NODES.get(case, NODES)))
    [values] = yaml11_load_all(helm_yaml(rendered))
    return rendered, values


def _zero(value: Any) -> bool:
    """Go's zero value: what an absent field reads as."""
    return value is None or value in ("", 0, False) or value == [] or value == {}


def differences(chart: Any, ours: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(dotted path, chart value, gpu-wizard value) for every leaf that differs (zero values equal absent)."""
    if isinstance(chart, dict) or isinstance(ours, dict):
        chart_map = chart if isinstance(chart, dict) else {}
        ours_map = ours if isinstance(ours, dict) else {}
        if not all(isinstance(side, dict) or _zero(side) for side in (chart, ours)):  # a map against a value
            yield path, chart, ours
            return
        for key in sorted(set(chart_map) | set(ours_map)):
            yield from differences(chart_map.get(key), ours_map.get(key), f"{path}.{key}" if path else key)
    elif isinstance(chart, list) and isinstance(ours, list) and len(chart) == len(ours):
        for index, (a, b) in enumerate(zip(chart, ours, strict=True)):
            yield from differences(a, b, f"{path}[{index}]")
    elif not (_zero(chart) and _zero(ours)) and chart != ours:
        yield path, chart, ours


def _compared(doc: dict[str, Any]) -> dict[str, Any]:
    # metadata.labels are Helm's release labels (managed-by Helm, chart, instance): Helm's, not the CR's.
    return {"apiVersion": doc["apiVersion"], "kind": doc["kind"], "name": doc["metadata"]["name"], "spec": doc["spec"]}


def _allowance(release: str, case: str, where: str) -> tuple[str, str, str] | None:
    for key in ALLOWED:
        if (
            fnmatch.fnmatchcase(release, key[0])
            and fnmatch.fnmatchcase(case, key[1])
            and fnmatch.fnmatchcase(where, key[2])
        ):
            return key
    return None


@functools.cache
def case_differences(release: str, case: str) -> tuple[tuple[str, ...], frozenset[tuple[str, str, str]]]:
    """The unexplained differences of a case, and the allowances it used (computed once per case)."""
    rendered, values = rendered_case(release, case)
    chart_docs = {d["kind"]: d for d in render_chart(release, json.dumps(values, sort_keys=True))}
    ours_docs = [d for d in yaml11_load_all(to_yaml(rendered.documents())) if d]
    ours = {d["kind"]: d for d in ours_docs if d["kind"] == "ClusterPolicy"}
    # The chart deploys only the default NVIDIADriver, and only when the values ask it to; gpu-wizard's
    # other CRs are applied beside the release.
    if (values["driver"].get("nvidiaDriverCRD") or {}).get("deployDefaultCR"):
        ours |= {d["kind"]: d for d in ours_docs if d["kind"] == "NVIDIADriver" and d["metadata"]["name"] == "default"}
    problems: list[str] = []
    used: set[tuple[str, str, str]] = set()
    for kind in sorted(set(chart_docs) | set(ours)):
        if kind not in chart_docs or kind not in ours:
            problems.append(f"{kind}: only in {'the chart' if kind in chart_docs else 'gpu-wizard'}")
            continue
        for path, theirs, mine in differences(_compared(chart_docs[kind]), _compared(ours[kind])):
            key = _allowance(release, case, f"{kind}:{path}")
            if key is None:
                problems.append(f"{kind}:{path}: chart {theirs!r}, gpu-wizard {mine!r}")
            else:
                used.add(key)
    return tuple(problems), frozenset(used)
