"""Peer cases: the GPU Operator's own unit-test cases (``tests/helpers/peer_cases.py``), run against the demo's rules and the engine's.

The same row runs against the demo (:mod:`wizard.demo.rules.operator_rules`) and against the engine
(:mod:`wizard.engine.naming` / :mod:`wizard.engine.facts`), so a naming bug in one of them cannot
hide behind the other. A known engine disagreement is an ``xfail(strict=True)`` carrying the reason,
so fixing the engine turns it into a failure until the mark is removed; a question the engine has no
function for is SKIPPED with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.peer_cases import ERROR, NFD_ID, NFD_VERSION, PEERS, UID, Peer, node_json
from wizard.demo.rules import operator_rules as demo
from wizard.demo.rules.operator_rules import OperatorRelease, RuleError
from wizard.demo.sim.nvd_sim import node_pools
from wizard.engine import naming as engine_naming
from wizard.engine.facts import ClusterFacts, node_facts
from wizard.engine.mirror import NodeImage, node_images
from wizard.engine.plan import Plan


def _ask(rule: Callable[..., Any], peer: Peer) -> Any:
    try:
        return rule(*peer.args, **peer.kwargs)
    except (RuleError, ValueError):
        return ERROR


# -- the same questions, asked of each implementation ------------------------------------------------


def _demo_pool_image(labels: dict[str, str], release: OperatorRelease) -> Any:
    """The image the NVIDIADriver pool of this single node gets, or None when the node is skipped."""
    cr = {"metadata": {"name": "driver-a", "uid": UID}, "spec": {"usePrecompiled": True}}
    pools = node_pools(cr, [node_json(labels)], release, True)
    if not pools:
        return None
    pool = pools[0]
    return demo.nvidiadriver_image(
        "nvcr.io/nvidia", "driver", "580", precompiled=True, kernel=pool.kernel, os_tag=pool.os_tag
    )


def _engine_node_image(labels: dict[str, str], release: OperatorRelease, *, nvidiadriver: bool) -> NodeImage:
    """What the engine predicts for this single GPU node, through the path every render takes."""
    mode = "precompiled" if nvidiadriver else "upstream"
    answers = {
        "operator": {"version": str(release)},
        "mode": mode,
        "driver": {
            "repository": "nvcr.io/nvidia",
            "image": "driver",
            "version": "580" if nvidiadriver else "580.126.20",
            "useNvidiaDriverCRD": nvidiadriver,
        },
    }
    (entry,) = node_images(Plan.model_validate(answers), ClusterFacts([node_facts(node_json(labels))]))
    return entry


def _engine_pool_image(labels: dict[str, str], release: OperatorRelease) -> Any:
    """A node the engine cannot place gets no image (and a node-unplaced warning): the operator skips it."""
    entry = _engine_node_image(labels, release, nvidiadriver=True)
    return None if entry.unplaced else entry.image


def _engine_policy_os_tag(labels: dict[str, str], release: OperatorRelease) -> Any:
    """Under ClusterPolicy a node the engine cannot place is where the operator fails to resolve the OS."""
    entry = _engine_node_image(labels, release, nvidiadriver=False)
    return ERROR if entry.unplaced else entry.tag_os


DEMO: dict[str, Callable[..., Any]] = {
    "pool_os_tag": demo.pool_os_tag,
    "policy_os_tag": lambda labels, release: demo.policy_os(labels, release).tag,
    "pool_image": _demo_pool_image,
    "sanitized_kernel": demo.sanitized_kernel,
    "app_name": demo.nvidiadriver_app_name,
    "policy_image": demo.policy_driver_image,
    "nvd_image": demo.nvidiadriver_image,
    "repo_config": lambda release, os_id: os_id in demo.repo_config_dirs(release),
    "lib_modules": demo.mounts_host_lib_modules,
    "precompiled_ds_name": lambda kernel, labels: demo.precompiled_daemonset_name(
        kernel, demo.kernel_os_map([labels])[kernel]
    ),
}


def _engine_policy_image(
    repository: str, image: str, version: str, *, precompiled: bool, kernel: str, os_tag: str
) -> str:
    return engine_naming.driver_image(
        precompiled=precompiled, repository=repository, image=image, version=version, kernel=kernel, tag_os=os_tag
    )


ENGINE: dict[str, Callable[..., Any]] = {
    "pool_os_tag": lambda os_id, version, release: engine_naming.os_tag(os_id, version, str(release)),
    "policy_os_tag": _engine_policy_os_tag,
    "pool_image": _engine_pool_image,
    "sanitized_kernel": engine_naming.sanitize_kernel,
    "app_name": lambda driver_type, tag, uid, kernel="", rhcos="": engine_naming.nvidiadriver_daemonset_name(
        driver_type, tag, uid, kernel or rhcos
    ),
    "policy_image": _engine_policy_image,
    "nvd_image": _engine_policy_image,
    "repo_config": lambda release, os_id: os_id in engine_naming.repo_config_dirs(str(release)),
    "precompiled_ds_name": lambda kernel, labels: engine_naming.precompiled_daemonset_name(
        kernel, labels[NFD_ID] + labels[NFD_VERSION]
    ),
}


@pytest.mark.parametrize("peer", PEERS, ids=[p.id for p in PEERS])
def test_demo_follows_the_operator(peer: Peer) -> None:
    assert _ask(DEMO[peer.question], peer) == peer.expected, peer.source


def _engine_params() -> list[Any]:
    out = []
    for peer in PEERS:
        marks: list[Any] = []
        if peer.engine_skip or peer.question not in ENGINE:
            marks.append(pytest.mark.skip(reason=f"SKIPPED: {peer.engine_skip or 'no engine counterpart'}"))
        elif peer.engine_disagrees:
            marks.append(pytest.mark.xfail(strict=True, reason=peer.engine_disagrees))
        out.append(pytest.param(peer, id=peer.id, marks=marks))
    return out


@pytest.mark.parametrize("peer", _engine_params())
def test_engine_follows_the_operator(peer: Peer) -> None:
    assert _ask(ENGINE[peer.question], peer) == peer.expected, peer.source


def test_every_peer_names_its_operator_test_and_release() -> None:
    assert len({p.id for p in PEERS}) == len(PEERS)
    assert all(" @v" in p.source and (".go " in p.source) for p in PEERS)
