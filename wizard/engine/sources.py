"""Where driver images come from: the source an answers file's driver section may omit, per mode and nodes' OS.

NVIDIA publishes the Ubuntu and RHEL driver images on nvcr.io; the SLE Micro precompiled images this release
validated live at ``docker.io/alaudadockerhub``. Precompiled images are per OS, so without the nodes' OS no
precompiled source fits. Kept apart from :mod:`wizard.engine.defaults` (which reads node facts) so that the
plan model can use it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from wizard.engine.modes import Mode

__all__ = ["NVIDIA_REGISTRY", "SLE_MICRO_SOURCE", "default_source", "source_defaults", "source_required"]

NVIDIA_REGISTRY = "nvcr.io/nvidia"
"""Where NVIDIA publishes its driver images (upstream for every OS, precompiled for Ubuntu) and the operator."""
SLE_MICRO_SOURCE = ("docker.io/alaudadockerhub", "nvidia-driver")
"""Where the SLE Micro precompiled images this release validated are published (``assets/catalog.yaml``)."""
SLE_MICRO_TAG_PREFIXES = ("sle-micro", "sl-micro")


def default_source(mode: Mode, tag_oses: Sequence[str]) -> tuple[str, str]:
    """(source repository, image name) for ``mode`` on GPU nodes of these OS tags; ``("", "")`` when none applies.

    Precompiled: the SLE Micro copies when every GPU node runs SLE Micro, else NVIDIA's own ``driver``
    image (its precompiled tags are ``<branch>-<kernel>-<os>``, Ubuntu's among them).
    """
    if mode is Mode.PREINSTALLED:
        return "", ""
    if mode is Mode.PRECOMPILED and not tag_oses:
        return "", ""  # precompiled images are per OS: without the nodes' OS no source fits
    if mode is Mode.PRECOMPILED and all(t.startswith(SLE_MICRO_TAG_PREFIXES) for t in tag_oses):
        return SLE_MICRO_SOURCE
    return NVIDIA_REGISTRY, "driver"


_PAIRED_IMAGES = {NVIDIA_REGISTRY: "driver", SLE_MICRO_SOURCE[0]: SLE_MICRO_SOURCE[1]}
"""The image name each publisher gives its driver images."""


def source_defaults(mode: Mode, driver: Mapping[str, Any], tag_oses: Sequence[str] | None) -> dict[str, str]:
    """The ``source`` and ``image`` an answers file's ``driver`` section omits, for ``mode`` on GPU nodes of these
    OS tags (``None``: the nodes are not known). A key whose default does not fit is left out: it is then required.

    Upstream images come from NVIDIA for every OS; precompiled ones follow the nodes' OS
    (:func:`default_source`), so without the nodes a precompiled source is the user's to name. The image name
    follows the source's publisher, else the nodes' OS.
    """
    if mode is Mode.PREINSTALLED:
        return {key: "" for key in ("source", "image") if not driver.get(key)}
    known = default_source(mode, tag_oses or ()) if (tag_oses is not None or mode is Mode.UPSTREAM) else ("", "")
    filled: dict[str, str] = {}
    source = str(driver.get("source") or "")
    if not source and known[0]:
        source = filled["source"] = known[0]
    if not driver.get("image"):
        image = _PAIRED_IMAGES.get(source) or known[1]
        if image:
            filled["image"] = image
    return filled


def source_required(field: str, mode: Mode, tag_oses: Sequence[str] | None) -> str:
    """One line for a ``source`` or ``image`` no default fits: why, and what is valid."""
    if tag_oses is None:
        why = "the GPU nodes' OS is not known here (give --nodes NODELIST, or a cluster)"
    else:
        why = "no GPU node was found to take its OS's images from"
    valid = (
        "the registry the images are copied from: nvcr.io/nvidia (NVIDIA's, Ubuntu) or docker.io/alaudadockerhub "
        "(SLE Micro)"
        if field == "source"
        else "the image name: driver (nvcr.io/nvidia) or nvidia-driver (docker.io/alaudadockerhub)"
    )
    return f"driver.{field}: required in {mode.value} mode: {why}; give {valid}"
