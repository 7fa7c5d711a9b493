"""Do the images the cluster pulls exist where it pulls from, and where they are copied from?

One :class:`ImageStatus` per distinct driver image: the registry's answer for the target (the
reference the operator will put in the driver pods), for the mirror source when the image is
copied from elsewhere, and what the bundled catalog knows about the (driver, kernel, OS) tuple; then one
per operand image the cluster pulls from a private registry (the driver manager, toolkit, device plugin, ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from wizard.engine.catalog import TupleStatus, tuple_status
from wizard.engine.operand_images import OperandImage
from wizard.engine.render import Rendered
from wizard.registry.client import RegistryClient, RegistryError, TagStatus


@dataclass(frozen=True)
class ImageStatus:
    """What is known about one driver image and the nodes that need it."""

    image: str
    nodes: tuple[str, ...]
    kernel: str
    tag_os: str
    target: TagStatus
    """The registry's answer for the image the cluster pulls."""
    source: TagStatus | None = None
    """The registry's answer for the mirror source (None when the image is not mirrored)."""
    catalog: TupleStatus | str = ""
    """``validated``/``published``/``unknown`` for precompiled tuples; empty otherwise."""
    components: tuple[str, ...] = ()
    """For an image other than the driver's: the operands using it (``nodes`` is then empty)."""

    @property
    def ok(self) -> bool:
        """The cluster can pull the image now."""
        return self.target.exists

    @property
    def mirrorable(self) -> bool:
        """The target is missing but its source exists: running the mirror plan fixes it."""
        return not self.target.exists and self.source is not None and self.source.exists


def checked_operands(rendered: Rendered) -> list[OperandImage]:
    """The operand images worth asking about: those the plan maps into its private registry
    (``driver.operandRegistry``) or whose host the nodes' runtime pulls through a mirror (``driver.registryMirrors``).
    The chart's public references on a cluster that reaches them are NVIDIA's to publish."""
    mirrors = rendered.plan.driver.registryMirrors
    return [o for o in rendered.operand_images if o.mirrored or o.reference.split("/", 1)[0] in mirrors]


async def check_images(rendered: Rendered, registry: RegistryClient) -> list[ImageStatus]:
    """Ask the registry about every distinct driver image (and its mirror source) of ``rendered``, then about every
    operand image the cluster pulls from a private registry or a mirror (:func:`checked_operands`)."""
    plan = rendered.plan
    by_image: dict[str, list[str]] = {}
    tuples: dict[str, tuple[str, str]] = {}
    for entry in rendered.node_images:
        if entry.image:
            by_image.setdefault(entry.image, []).append(entry.node)
            tuples.setdefault(entry.image, (entry.kernel, entry.tag_os))
    sources = {item.target: item.source for item in rendered.mirror}
    operands = [o for o in checked_operands(rendered) if o.reference not in by_image]
    answers = await registry.check_many([*by_image, *sources.values(), *(o.reference for o in operands)])
    out: list[ImageStatus] = []
    for image, nodes in sorted(by_image.items()):
        kernel, tag_os = tuples[image]
        source_ref = sources.get(image)
        catalog = tuple_status(plan.driver.version, kernel, tag_os) if plan.precompiled else ""
        out.append(
            ImageStatus(
                image=image,
                nodes=tuple(sorted(nodes)),
                kernel=kernel,
                tag_os=tag_os,
                target=answers[image],
                source=answers[source_ref] if source_ref else None,
                catalog=catalog,
            )
        )
    for operand in operands:
        out.append(
            ImageStatus(
                image=operand.reference,
                nodes=(),
                kernel="",
                tag_os="",
                target=answers[operand.reference],
                source=answers[operand.source] if operand.mirrored else None,
                components=operand.components,
            )
        )
    return out


async def image_repositories(registry: RegistryClient, hosts: Iterable[str], image: str) -> dict[str, list[str]]:
    """Every repository named ``image`` on ``hosts`` (``registry.example.com/mlops/nvidia-driver``) with its tags.

    Each host is asked for its repository list (``/v2/_catalog``; a registry that refuses lists none),
    then each repository named ``image`` for its tags (one that cannot be read is left out).
    """
    listing: dict[str, list[str]] = {}
    for host in hosts:
        for repository in await registry.repositories(host):
            if repository.rsplit("/", 1)[-1] != image:
                continue
            try:
                listing[repository] = await registry.list_tags(repository)
            except RegistryError:  # unreachable or refused: not a place the tags can be shown to be
                continue
    return listing
