"""Which driver image each GPU node will run, and the plan to mirror those images.

The prediction follows the operator, not the wish: under ClusterPolicy the OS tag of one GPU node
is used cluster-wide (the first its informer cache lists, in no set order: the prediction takes the
first by name, and the mixed-OS warning names every outcome), so in a mixed-OS cluster some nodes get an
image built for another OS; under NVIDIADriver every node pool gets its own OS tag. Verification
compares the running driver pods against these images, so they must match what will really run.
Commands are argv tuples, never shell strings; :func:`shell_command` renders one for display.

A GPU node the operator cannot place (no OS or kernel it could read) gets no image, never one
ending in ``-unknown`` or with an empty kernel: :attr:`NodeImage.unplaced` says why, and
:mod:`wizard.engine.advice` turns it into a warning. Node facts that would make an invalid reference
raise :class:`~wizard.engine.node_grammar.NodeFactsError` here, the one step both a NodeList and a live cluster
pass through before anything is rendered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wizard.engine.catalog import unpublished
from wizard.engine.facts import (
    LABEL_KERNEL,
    LABEL_OS_ID,
    LABEL_OS_VERSION,
    UNKNOWN_OS_TAG,
    ClusterFacts,
    NodeFacts,
)
from wizard.engine.naming import DIGEST_PREFIX, TAG_RULE, driver_image, precompiled_tag, rebased, upstream_tag
from wizard.engine.node_grammar import NodeFactsError, node_fact_errors, quoted
from wizard.engine.operand_images import OperandImage
from wizard.engine.plan import Mode, Plan
from wizard.engine.textsafe import printable, shell_command

__all__ = [
    "MirrorItem",
    "NodeImage",
    "copies",
    "images_table",
    "mark_unheld",
    "mirror_items",
    "mirror_script",
    "node_images",
    "operand_mirror_items",
    "shell_command",
]

#: images_table's placeholder for a node that runs no driver image (pre-installed host driver).
NO_IMAGE = "-"
#: images_table's placeholder for a GPU node whose image cannot be predicted (see NodeImage.unplaced).
UNPLACED = "?"


@dataclass(frozen=True)
class NodeImage:
    """The driver image the operator will run on one GPU node (``""`` for a pre-installed driver)."""

    node: str
    kernel: str
    tag_os: str
    """The OS tag in the image: the node's own, or (under ClusterPolicy) that of :func:`first_gpu_node`."""
    image: str
    unplaced: str = ""
    """Why the operator cannot place a driver image on this GPU node (then ``image`` is empty)."""
    node_os: str = ""
    """The node's own OS tag: another than ``tag_os`` where a ClusterPolicy gives every node one OS's image."""


@dataclass(frozen=True)
class MirrorItem:
    """One image to copy from the source registry into the registry the cluster pulls from."""

    source: str
    target: str
    nodes: tuple[str, ...]
    commands: tuple[tuple[str, ...], ...]
    """argv lists: skopeo copy and inspect, then docker pull/tag/push for air-gapped upstream."""
    unheld: str = ""
    """Why no source is known to hold the image ("" when one does or may): the plan copies nothing for it."""
    kernel: str = ""
    """The kernel of its nodes (a precompiled image's way forward: ``gpu-wizard check-kernel KERNEL``)."""
    components: tuple[str, ...] = ()
    """For an image other than the driver's: the operands using it (``nodes`` is then empty)."""


def first_gpu_node(facts: ClusterFacts) -> NodeFacts | None:
    """The GPU node gpu-wizard predicts the operator reads the cluster-wide OS from under ClusterPolicy.

    The operator takes the first GPU node its informer cache lists, in no set order (operator issues
    #2471, #1200), so this is one possible outcome: the first by name. The mixed-OS warning names the others.
    """
    gpu = sorted(facts.gpu_nodes, key=lambda n: n.name)
    return gpu[0] if gpu else None


def _kernel_unplaced(plan: Plan, node: NodeFacts, nfd_running: bool) -> str:
    """Why the operator cannot pick this node's per-kernel image, or ``""``."""
    if not plan.precompiled:
        return ""
    if nfd_running and node.kernel_source != "nfd":  # the operator reads only NFD labels
        return f"no {LABEL_KERNEL} label, which the per-kernel driver DaemonSet selects on"
    if not node.kernel:
        return "no kernel: neither the NFD label nor status.nodeInfo.kernelVersion"
    return ""


def _os_unplaced(plan: Plan, node: NodeFacts, nfd_running: bool) -> str:
    """Why the operator cannot derive an OS tag from this node, or ``""``."""
    if DIGEST_PREFIX in plan.driver.version:  # a digest reference carries no OS suffix
        return ""
    refused = node.os_tag_error(plan.operator.version)
    if refused:
        return f"{refused}, so the operator stops with an error"
    if nfd_running and node.os_source != "nfd":
        return f"no {LABEL_OS_ID} and {LABEL_OS_VERSION} labels"
    if not node.os_id:
        return f"no NFD OS labels and status.nodeInfo.osImage {quoted(node.os_image)} is not a known OS"
    return ""


def _policy_os_unplaced(plan: Plan, gpu: list[NodeFacts], nfd_running: bool) -> tuple[NodeFacts | None, str]:
    """Under ClusterPolicy: the first GPU node (by name) whose OS the operator could not read, and why.

    Any GPU node may be the one the operator reads the cluster-wide OS from, so one it cannot read
    can stop the driver on every node, whichever it lists first next time.
    """
    for node in gpu:
        why = _os_unplaced(plan, node, nfd_running)
        if why:
            return node, why
    return None, ""


def _bad_tag(node: NodeFacts, tag: str) -> NodeFactsError:
    return NodeFactsError(
        f"node {node.name}: kernel {quoted(node.kernel)} ({node.kernel_source}) and OS {quoted(node.os_id + node.os_version)} "
        f"give the image tag {quoted(tag)}, which is not {TAG_RULE}"
    )


def _node_image(plan: Plan, node: NodeFacts, tag_os: str) -> str:
    """The composed reference; NodeFactsError when the node's kernel or OS makes it one the operator refuses.

    The plan's own fields are valid by then (the Plan model checks them), so a reference that does not
    parse is the node's doing: its kernel or OS put characters in the tag that a tag cannot hold.
    """
    driver = plan.driver
    fields = {"repository": driver.repository, "image": driver.image, "version": driver.version}
    try:
        return driver_image(precompiled=plan.precompiled, kernel=node.kernel, tag_os=tag_os, **fields)
    except ValueError:
        if plan.precompiled:
            base = precompiled_tag(driver.version, node.kernel, tag_os)
        else:
            base = upstream_tag(driver.version, tag_os)
        raise _bad_tag(node, base) from None


def node_images(plan: Plan, facts: ClusterFacts) -> list[NodeImage]:
    """The expected driver image for every GPU node, sorted by node name.

    NodeFactsError when a GPU node's facts break Kubernetes' grammars or would give an invalid tag.
    """
    release = plan.operator.version
    first = first_gpu_node(facts)
    cluster_tag = first.tag_os(release) if first else ""
    nfd_running = any(n.nfd_labelled for n in facts.nodes)
    driver = plan.driver
    per_pool = driver.useNvidiaDriverCRD or plan.mode is Mode.PREINSTALLED
    out: list[NodeImage] = []
    gpu = sorted(facts.gpu_nodes, key=lambda n: n.name)
    for node in gpu:
        errors = node_fact_errors(node)
        if errors:
            raise NodeFactsError(errors[0])
    blocker, blocked = (None, "") if per_pool else _policy_os_unplaced(plan, gpu, nfd_running)
    for node in gpu:
        tag = node.tag_os(release) if per_pool else cluster_tag
        image, unplaced = "", ""
        if plan.driver_enabled:
            unplaced = _kernel_unplaced(plan, node, nfd_running)
            if not unplaced and per_pool:
                unplaced = _os_unplaced(plan, node, nfd_running)
            elif not unplaced and blocker is not None:
                unplaced = (
                    blocked
                    if blocker is node
                    else f"{blocked} on {blocker.name}, "
                    + ("whose OS the operator may read for every node under ClusterPolicy")
                )
        if plan.driver_enabled and not unplaced:
            image = _node_image(plan, node, tag)
        own = node.tag_os(release)
        out.append(
            NodeImage(node=node.name, kernel=node.kernel, tag_os=tag, image=image, unplaced=unplaced, node_os=own)
        )
    return out


def _source_for(plan: Plan, target: str) -> str:
    return rebased(target, plan.driver.repository, plan.driver.source)


def _commands(plan: Plan, source: str, target: str) -> tuple[tuple[str, ...], ...]:
    commands: list[tuple[str, ...]] = [
        ("skopeo", "copy", "--all", "--preserve-digests", f"docker://{source}", f"docker://{target}"),
        ("skopeo", "inspect", f"docker://{target}"),
    ]
    # docker cannot push to a digest reference; the tag stays identical so the operator finds it.
    if plan.mode is Mode.UPSTREAM and plan.driver.airgapped and DIGEST_PREFIX not in target:
        commands += [("docker", "pull", source), ("docker", "tag", source, target), ("docker", "push", target)]
    return tuple(commands)


def mirror_items(plan: Plan, images: Iterable[NodeImage]) -> list[MirrorItem]:
    """One item per distinct image the GPU nodes need whose source differs from its target."""
    by_image: dict[str, list[str]] = {}
    tuples: dict[str, tuple[str, str]] = {}
    for entry in images:
        if entry.image:
            by_image.setdefault(entry.image, []).append(entry.node)
            tuples.setdefault(entry.image, (entry.kernel, entry.tag_os))
    items: list[MirrorItem] = []
    for target in sorted(by_image):
        source = _source_for(plan, target)
        if source == target:
            continue
        nodes = tuple(sorted(by_image[target]))
        kernel, tag_os = tuples[target]
        unheld = ""
        if plan.precompiled and unpublished(plan.driver.version, kernel, tag_os):
            unheld = f"no published precompiled image is known for kernel {kernel} on {tag_os} (catalog)"
        items.append(
            MirrorItem(
                source=source,
                target=target,
                nodes=nodes,
                commands=_commands(plan, source, target),
                unheld=unheld,
                kernel=kernel if plan.precompiled else "",
            )
        )
    return items


def copies(items: Iterable[MirrorItem]) -> list[MirrorItem]:
    """The items a mirror run copies: those a source holds (or may hold)."""
    return [item for item in items if not item.unheld]


def mark_unheld(items: Iterable[MirrorItem], why: Mapping[str, str]) -> list[MirrorItem]:
    """``items`` with those whose target ``why`` names (target -> what the registry answered for its source)
    marked as held by no source: the registry's word over the catalog's."""
    return [dataclasses.replace(item, unheld=why[item.target]) if item.target in why else item for item in items]


def operand_mirror_items(operands: Iterable[OperandImage]) -> list[MirrorItem]:
    """One item per operand image the plan maps into its private registry (``driver.operandRegistry``)."""
    return [
        MirrorItem(
            source=image.source,
            target=image.reference,
            nodes=(),
            commands=(
                (
                    "skopeo",
                    "copy",
                    "--all",
                    "--preserve-digests",
                    f"docker://{image.source}",
                    f"docker://{image.reference}",
                ),
                ("skopeo", "inspect", f"docker://{image.reference}"),
            ),
            components=image.components,
        )
        for image in operands
        if image.mirrored
    ]


def mirror_script(items: Iterable[MirrorItem]) -> str:
    """A POSIX shell script running the skopeo commands; the docker form is shown as comments."""
    items = list(items)
    what = "images the cluster pulls" if any(item.components for item in items) else "driver images the GPU nodes need"
    lines = [
        "#!/bin/sh",
        f"# Mirror the {what} (generated by gpu-wizard).",
        "# --all copies every platform of the image index, so the digests match the source.",
        "set -eu",
    ]
    if not items:
        lines += ["", "# nothing to mirror: no driver image to pull, or the cluster pulls it from its source registry"]
    for item in items:
        if item.components:
            lines += ["", f"# used by: {printable(', '.join(item.components))}"]
        else:
            lines += ["", f"# nodes: {printable(', '.join(item.nodes))}"]
        if item.unheld:  # nothing to copy from: a copy would fail, and the nodes need another way forward
            lines.append(f"# not copied: {printable(item.unheld)}; once the source has it:")
            lines += [f"#   {shell_command(argv)}" for argv in item.commands if argv[0] == "skopeo"]
            if item.kernel:
                lines.append(f"# a way forward (build recipe or vendor request): gpu-wizard check-kernel {item.kernel}")
            continue
        for argv in item.commands:
            if argv[0] == "docker":
                if argv[1] == "pull":
                    lines.append("# without skopeo (copies one platform only; the tag stays the same):")
                lines.append(f"#   {shell_command(argv)}")  # one line: shell_command escapes line breaks
            else:
                lines.append(shell_command(argv))
    return "\n".join(lines) + "\n"


def images_table(images: Iterable[NodeImage]) -> str:
    """``NODE<TAB>IMAGE`` lines, one per GPU node (``-`` where no driver image runs, ``?`` where none can be placed)."""
    return "".join(
        f"{printable(entry.node)}\t{printable(entry.image) or (UNPLACED if entry.unplaced else NO_IMAGE)}\n"
        for entry in images
    )


def operator_choices(plan: Plan, facts: ClusterFacts) -> dict[str, dict[str, str]]:
    """Under a ClusterPolicy on a mixed-OS cluster: node -> {OS tag the operator may pick -> the image it then runs}.

    The operator takes its cluster-wide OS tag from whichever GPU node its informer lists first (operator
    issues #2471, #1200), so each GPU node's OS tag is a possible pick. Empty when there is nothing to
    choose (NVIDIADriver CRs, one OS, a pre-installed driver): verification then compares with the
    single prediction only.
    """
    if not plan.driver_enabled or plan.driver.useNvidiaDriverCRD:
        return {}
    release = plan.operator.version
    tags = sorted({n.tag_os(release) for n in facts.gpu_nodes} - {UNKNOWN_OS_TAG})
    if len(tags) < 2:
        return {}
    choices: dict[str, dict[str, str]] = {}
    for node in facts.gpu_nodes:
        for tag in tags:
            try:
                image = driver_image(
                    precompiled=plan.precompiled,
                    repository=plan.driver.repository,
                    image=plan.driver.image,
                    version=plan.driver.version,
                    kernel=node.kernel,
                    tag_os=tag,
                )
            except ValueError:
                continue
            choices.setdefault(node.name, {})[tag] = image
    return choices
