"""Hostile node facts the operator itself refuses or skips (issue 11, peer cases), fed to ``gpu-wizard render``.

The engine must never print an image the operator would not build: no ``-rhelA.10`` where v26.3.3
fails to parse the rhel major, no ``-unknown`` OS, no empty-kernel ``…1--ubuntu22.04`` tag. Such a node
gets ``?`` in the images table and a ``node-unplaced`` warning naming it.
"""

from __future__ import annotations

from tests.helpers.hostile.case import HostileCase
from tests.helpers.hostile.cases_nodes import PRECOMPILED, UPSTREAM_AIRGAPPED, _case, node, sle_node

V26_3_UPSTREAM = UPSTREAM_AIRGAPPED.replace("version: v26.7.0", "version: v26.3.3", 1)
RHEL_KERNEL = "5.14.0-427.13.1.el9_4.x86_64"

CASES: list[HostileCase] = [
    _case(
        "rhel VERSION_ID A.10 at v26.3.3 is unplaced, not -rhelA.10",
        [node("gpu-0", kernel=RHEL_KERNEL, os_id="rhel", os_version="A.10", info_kernel=RHEL_KERNEL)],
        "images",
        0,
        answers=V26_3_UPSTREAM,
        stdout_has=("gpu-0\t?",),
        stdout_lacks=("rhelA.10",),
        stderr_has=("No driver image can be predicted for gpu-0: VERSION_ID 'A.10'",),
    ),
    _case(
        "no NFD OS labels on the second node: nobody gets an -unknown image under ClusterPolicy",
        [node("gpu-0"), node("gpu-1", os_id=None, os_version=None)],
        "images",
        0,
        stdout_has=("gpu-0\t?", "gpu-1\t?"),
        stdout_lacks=("unknown",),
        stderr_has=("on gpu-1, whose OS the operator may read for every node under ClusterPolicy",),
    ),
    _case(
        "no NFD kernel label on a precompiled node: no empty-kernel tag",
        [sle_node("gpu-0", kernel=None), sle_node("gpu-1")],
        "images",
        0,
        answers=PRECOMPILED,
        stdout_has=("gpu-0\t?",),
        stdout_lacks=("--sle-micro",),
        stderr_has=("gpu-0: no feature.node.kubernetes.io/kernel-version.full label",),
    ),
]
