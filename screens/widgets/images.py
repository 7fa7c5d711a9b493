"""Per (kernel, OS) group: the exact driver tag, the catalog's word on it, and its live registry status.

Fed with the renderer's ``NodeImage`` list and, once the check ran, ``wizard.registry.images.ImageStatus``
per image. Status words: *present* (with digest), *missing*, *only in source* (mirror it),
*unknown* (the registry could not answer, with the reason).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.markup import escape
from textual.widgets import Static

from wizard.engine.naming import image_tag

_CATALOG = {
    "validated": "[$success]✓ validated[/]",
    "published": "[$accent]published[/]",
    "unknown": "[$warning]not validated[/]",
}
#: A tuple the catalog does not list but the registry holds: published, not validated (never "not in catalog"
#: beside "present", which read as a contradiction).
_PUBLISHED_UNLISTED = "[$accent]published[/] [$warning]· not validated[/]"


def short_digest(digest: str) -> str:
    """``sha256:1a2b3c4d5e6f…`` (12 hex digits are plenty to compare by eye)."""
    return digest[:19] + "…" if len(digest) > 19 else digest


def status_markup(status: Any) -> str:
    """One ``ImageStatus`` as coloured words."""
    target = status.target
    if target.exists:
        return f"[$success]✓ present in target[/] [$text-muted]{escape(short_digest(target.digest))}[/]"
    if target.error:
        return f"[$warning]? unreachable, not checked:[/] {escape(target.error)}"
    source = status.source
    if source is not None and source.exists:
        return f"[$warning]⇄ only in source[/] {escape(source.reference)} [$text-muted](mirror it)[/]"
    if source is not None and source.error:
        return f"[$error]✗ missing in target;[/] source unknown: {escape(source.error)}"
    if source is not None:
        return "[$error]✗ missing in target and in source[/]"
    return "[$error]✗ missing in target[/]"


class ImageGroups(Static):
    """The driver image of every (kernel, OS) group and what the registries say about it."""

    DEFAULT_CSS = """
    ImageGroups { height: auto; }
    """

    def show(
        self,
        images: Sequence[Any],
        statuses: Iterable[Any] = (),
        *,
        catalog: dict[str, str] | None = None,
        checking: bool = False,
        offline: bool = False,
        note: str = "",
    ) -> None:
        """``images``: NodeImage list; ``statuses``: ImageStatus list; ``catalog``: image -> tuple status."""
        by_image: dict[str, list[Any]] = {}
        for entry in images:  # nodes without an image are grouped by why (host driver, or each unplaced reason)
            by_image.setdefault(entry.image or f"?{entry.unplaced}", []).append(entry)
        status_of = {s.image: s for s in statuses}
        lines: list[str] = []
        for number, entries in enumerate(by_image.values(), start=1):
            first = entries[0]
            image = first.image
            count = len(entries)
            nodes = f"{count} node{'s' if count != 1 else ''}"
            if not image and first.unplaced:
                names = ", ".join(e.node for e in entries)
                lines.append(f"[b]{number}[/] [$warning]! no image for {escape(names)}:[/] {escape(first.unplaced)}")
                continue
            if not image:
                lines.append(
                    f"[b]{number}[/] {escape(first.tag_os)} {escape(first.kernel)} · {nodes}: host driver, no image"
                )
                continue
            # the separators sit inside the styled spans: some terminals lost a space after a closing tag
            kernels = list(dict.fromkeys(e.kernel for e in entries))
            more = f" +{len(kernels) - 1} kernel{'s' if len(kernels) > 2 else ''}" if len(kernels) > 1 else ""
            lines.append(f"[b]{number} {escape(first.tag_os)} ·[/] {escape(kernels[0])}{more} · {nodes}")
            other_os = [e for e in entries if e.node_os and e.node_os != e.tag_os]
            if other_os:  # a ClusterPolicy gives every node one OS's image: say whom it does not fit
                names = ", ".join(e.node for e in other_os[:3]) + (
                    f" +{len(other_os) - 3}" if len(other_os) > 3 else ""
                )
                oses = ", ".join(sorted({e.node_os for e in other_os}))
                lines.append(f"  [$error]✗ {escape(names)} run(s) {escape(oses)}: this image does not fit[/]")
            mark = (catalog or {}).get(image, "")
            status = status_of.get(image)
            word = (
                _PUBLISHED_UNLISTED
                if mark == "unknown" and status is not None and status.ok
                else _CATALOG.get(mark, "")
            )
            lines.append(f"  [$accent]{escape(image_tag(image))}[/] {word}".rstrip())
            if status is not None:
                lines.append(f"  {status_markup(status)}")
            elif checking:
                lines.append("  [$text-muted]… checking the registry[/]")
            elif offline:
                lines.append("  [$text-muted]not connected: registry not checked[/]")
            elif note:
                lines.append(f"  [$text-muted]{escape(note)}[/]")
            else:
                lines.append("  [$text-muted]not checked yet[/]")
        self.update("\n".join(lines) or "[$text-muted]no GPU node needs a driver image[/]")
