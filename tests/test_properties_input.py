"""Property-based tests on every file the wizard reads from the user: any content is parsed or refused cleanly.

Kubeconfigs, NodeLists and backups of any shape end in the parsed result or in the one error type
the CLI turns into a clear line (``ClusterError``, ``UsageError``), never in anything else. Image
references built from valid parts split back into those parts.
"""

from __future__ import annotations

import json
import shutil
import string
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wizard.cli.main import UsageError, load_nodelist
from wizard.cluster.access.kubeconfig import check_context, list_contexts
from wizard.cluster.applying.backup import read_backup
from wizard.cluster.errors import ClusterError
from wizard.engine.naming import split_reference

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12))
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
kube_keys = st.sampled_from(["clusters", "contexts", "users", "current-context", "apiVersion", "kind"])
entry_keys = st.sampled_from(["name", "cluster", "context", "user", "server", "token", "certificate-authority"])
kube_docs = st.dictionaries(
    kube_keys,
    st.one_of(
        scalars,
        st.lists(
            st.dictionaries(
                entry_keys, st.one_of(scalars, st.dictionaries(entry_keys, scalars, max_size=3)), max_size=4
            ),
            max_size=3,
        ),
    ),
    max_size=6,
)


_FOLDER = Path(tempfile.gettempdir())  # replaced per module run by the fixture below


@pytest.fixture(autouse=True, scope="module")
def _one_folder() -> Iterator[None]:
    """One folder for the whole module, removed after it: each example overwrites its file (examples run one
    at a time), where a folder per example left 200 behind in /tmp on every run."""
    global _FOLDER
    _FOLDER = Path(tempfile.mkdtemp(prefix="gpu-wizard-prop-"))
    yield
    shutil.rmtree(_FOLDER, ignore_errors=True)


def _written(text: str, name: str) -> Path:
    path = _FOLDER / name
    path.write_text(text, encoding="utf-8")
    return path


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), kube_docs.map(json.dumps)))
def test_any_kubeconfig_is_read_or_refused_cleanly(text: str) -> None:
    path = _written(text, "kubeconfig")
    try:
        names, current = list_contexts(str(path))
        for name in names:
            check_context(str(path), name)
    except ClusterError as exc:
        assert exc.message and "Traceback" not in exc.message
    else:
        assert all(isinstance(n, str) for n in names) and (current is None or isinstance(current, str))


label_keys = st.sampled_from(
    [
        "feature.node.kubernetes.io/kernel-version.full",
        "feature.node.kubernetes.io/system-os_release.ID",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID",
        "nvidia.com/gpu.present",
        "nvidia.com/gpu.product",
        "nvidia.com/gpu.count",
        "nvidia.com/gpu.deploy.driver",
        "feature.node.kubernetes.io/pci-10de.present",
    ]
)
node = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.just("Node"),
        "metadata": st.one_of(
            scalars,
            st.fixed_dictionaries(
                {}, optional={"name": scalars, "labels": st.one_of(scalars, st.dictionaries(label_keys, scalars))}
            ),
        ),
        "status": st.one_of(
            scalars,
            st.fixed_dictionaries(
                {},
                optional={
                    "nodeInfo": st.one_of(
                        scalars,
                        st.dictionaries(
                            st.sampled_from(["kernelVersion", "osImage", "containerRuntimeVersion"]), scalars
                        ),
                    ),
                    "capacity": st.one_of(scalars, st.dictionaries(st.just("nvidia.com/gpu"), scalars)),
                },
            ),
        ),
    },
)
nodes = st.one_of(
    node,
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["NodeList", "List"]), "items": st.one_of(json_values, st.lists(node, max_size=3))}
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), nodes.map(json.dumps), json_values.map(json.dumps)))
def test_any_nodelist_is_read_or_refused_cleanly(text: str) -> None:
    path = _written(text, "nodes.json")
    try:
        facts = load_nodelist(str(path))
    except UsageError as exc:
        assert str(path) in str(exc)
    else:
        assert all(isinstance(n.name, str) for n in facts.nodes)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.booleans())
def test_any_backup_is_read_or_refused_cleanly(text: str, with_header: bool) -> None:
    header = '# gpu-wizard-backup: {"version": 1, "created": []}\n---\n' if with_header else ""
    path = _written(header + text, "backup.yaml")
    try:
        backup = read_backup(path)
    except ClusterError as exc:
        assert str(path) in exc.message
    else:
        assert all(isinstance(o, dict) and o.get("kind") for o in backup.objects)


components = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8)
hosts = st.builds(
    lambda a, b, port: f"{a}.{b}" + (f":{port}" if port else ""),
    components,
    components,
    st.one_of(st.none(), st.integers(1, 65535)),
)
tags = st.text(string.ascii_letters + string.digits + "_.-", min_size=1, max_size=20).filter(lambda t: t[0] not in ".-")


@given(hosts, st.lists(components, min_size=1, max_size=4).map("/".join), tags)
def test_a_reference_splits_back_into_its_parts(host: str, repo: str, tag: str) -> None:
    assert split_reference(f"{host}/{repo}:{tag}") == (host, repo, tag)


@given(st.text(max_size=60))
def test_any_reference_text_is_split_or_refused(text: str) -> None:
    try:
        host, repo, tag = split_reference(text)
    except ValueError as exc:
        assert str(exc)
    else:
        assert host and repo and tag and " " not in host + repo + tag
