"""The driver versions the Driver step offers, and the catalog's word on each image it shows.

Precompiled versions come from the bundled catalog (validated/published markers, only those known on
every OS the GPU nodes run); upstream versions from the source registry's tags, kept only
when tagged for every GPU node's OS. Each precompiled image gets the catalog's status of its
(kernel, OS) tuple, shown beside it in the image groups.
"""

from __future__ import annotations

from typing import Any

from wizard.engine.defaults import (
    upstream_versions as upstream_versions,  # one rule for the Driver step and `answers init`
)


def catalog_options(tag_oses: list[str]) -> list[tuple[str, str]]:
    """The catalog's (label, version) choices known on every OS the GPU nodes run (never another OS's);
    every version only before any node is known."""
    from wizard.engine.catalog import driver_versions
    from wizard.engine.defaults import catalog_versions

    if not tag_oses:
        return [(c.label, c.version) for c in driver_versions()]
    common = set(catalog_versions(tag_oses))
    return [(c.label, c.version) for c in driver_versions(tag_oses[0]) if c.version in common]


def catalog_prompt(tag_oses: list[str]) -> str:
    """The Catalog selector's prompt: what to pick, or why there is nothing to pick on these OSes."""
    if tag_oses and not catalog_options(tag_oses):
        return f"no catalog version for {', '.join(tag_oses)}: type one"
    return "pick a known version"


def precompiled_branches(tags: list[str], groups: list[tuple[str, str]]) -> list[str]:
    """Driver branches with a precompiled tag (``580-5.15.0-1063-nvidia-ubuntu22.04``) for every (kernel, OS tag)
    group of GPU nodes, newest first: a branch the registry cannot serve to some group is no offer."""
    if not groups:
        return []
    from wizard.engine.naming import precompiled_suffix, tagged_versions

    per_group = [tagged_versions(tags, precompiled_suffix(kernel, tag_os)) for kernel, tag_os in groups]
    common = set.intersection(*per_group)
    return sorted((b for b in common if b.isdigit()), key=int, reverse=True)


def catalog_marks(rendered: Any) -> dict[str, str]:
    """Image -> catalog status (precompiled tuples only)."""
    from wizard.engine.catalog import tuple_status

    plan = rendered.plan
    if not plan.precompiled:
        return {}
    # One status per image, not per node: 5,000 nodes share a handful of (kernel, OS) images.
    tuples = {e.image: (e.kernel, e.tag_os) for e in rendered.node_images if e.image}
    return {image: tuple_status(plan.driver.version, kernel, tag_os) for image, (kernel, tag_os) in tuples.items()}
