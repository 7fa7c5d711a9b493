"""Kernel drift: GPU nodes whose precompiled driver no longer fits the kernel they run (typically after an OS update).

A precompiled driver tag is ``<version>-<kernel>-<os>``: a driver pod whose image was built for
another kernel fails on its next start, and one whose image for the node's kernel cannot be pulled
has no image for the new kernel. Pure: the caller reads the driver pods' images and waiting reasons.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from wizard.engine.facts import ClusterFacts

OS_TAG_RE = re.compile(r"[a-z][a-z-]*[0-9][0-9.]*", re.ASCII)
"""An image OS tag (``ubuntu22.04``, ``sle-micro5.5``, ``rhel9``): what follows the kernel in a precompiled tag."""


@dataclass(frozen=True)
class KernelDrift:
    """A GPU node whose kernel has no working precompiled driver: the image was built for another kernel,
    or the image for the node's kernel cannot be pulled (typically after an OS update)."""

    node: str
    kernel: str
    image: str
    pull_failed: bool = False

    def message(self) -> str:
        if self.pull_failed:
            what = f"its driver image for that kernel, {self.image}, cannot be pulled (no image for the new kernel?)"
        else:
            what = f"its driver pod runs {self.image}, built for another kernel: it fails on its next start"
        return f"{self.node} runs kernel {self.kernel}, and {what}; check first: gpu-wizard check-kernel {self.kernel}"


PULL_FAILURES = frozenset({"ErrImagePull", "ImagePullBackOff"})


def kernel_drift(facts: ClusterFacts, driver_pods: Mapping[str, tuple[str, str]]) -> list[KernelDrift]:
    """GPU nodes whose precompiled driver does not fit the kernel they run now.

    ``driver_pods`` maps node -> (driver container image, waiting reason) of the driver pods. A
    precompiled tag is ``<version>-<kernel>-<os>``; an upstream image (compiled on the node at start)
    has no kernel in its tag and never drifts.
    """
    drifted = []
    for node in facts.gpu_nodes:
        image, waiting = driver_pods.get(node.name, ("", ""))
        tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else ""
        if not tag or not node.kernel or not _is_precompiled_tag(tag):
            continue
        rest = tag.split("-", 1)[1]
        built_for_node = rest.startswith(node.kernel + "-") and OS_TAG_RE.fullmatch(rest[len(node.kernel) + 1 :])
        if not built_for_node:
            drifted.append(KernelDrift(node.name, node.kernel, image))
        elif waiting in PULL_FAILURES:
            drifted.append(KernelDrift(node.name, node.kernel, image, pull_failed=True))
    return drifted


def _is_precompiled_tag(tag: str) -> bool:
    """``<version>-<kernel>-<os>``: a kernel release (``N.N.N…``) follows the version."""
    parts = tag.split("-", 2)
    return len(parts) == 3 and re.match(r"\d+\.\d+", parts[1]) is not None
