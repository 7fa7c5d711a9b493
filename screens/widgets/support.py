"""The support request: the text to send the vendor for every precompiled group nobody publishes an image for.

The Driver step shows it below the images once the plan is rendered (and again after each registry
check): a (kernel, OS) tuple the catalog does not know, whose tag is in neither the target nor the
source registry, gets one request naming a node, its kernel, OS and GPU (and, for an OS NVIDIA's driver
container builds, Ubuntu, the recipe to build the image); Copy puts them all on the clipboard.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Label, Static


class SupportRequest(VerticalScroll):
    """The support requests for the unpublished precompiled tuples; hidden while there is none."""

    DEFAULT_CSS = """
    SupportRequest {
        display: none; height: auto; margin-top: 1;
        & > #support-head { height: 1; }
        & > #support-head > Label { width: 1fr; text-style: bold; color: $warning; }
        & > #support-text { height: auto; background: $surface; padding: 0 1; }
    }
    """

    def compose(self) -> ComposeResult:
        with Horizontal(id="support-head"):
            yield Label("Support request: no published image for a kernel")
            yield Button("Copy", id="support-copy", compact=True)
        yield Static("", id="support-text", markup=False)

    def show(self, rendered: Any, statuses: list[Any], nodes: Mapping[str, Any]) -> None:
        """The support request for every precompiled group whose tuple nobody publishes (``None``: nothing rendered)."""
        if rendered is None or not rendered.plan.precompiled:
            self.display = False
            return
        from wizard.engine.build_recipe import recipe_for, recipe_lines
        from wizard.engine.catalog import support_request, tuple_status

        plan = rendered.plan
        status_of = {s.image: s for s in statuses}
        texts: list[str] = []
        seen: set[str] = set()
        for entry in rendered.node_images:
            if not entry.image or entry.image in seen:
                continue
            seen.add(entry.image)
            status = status_of.get(entry.image)
            if tuple_status(plan.driver.version, entry.kernel, entry.tag_os) != "unknown":
                continue
            if status is not None and (status.target.exists or (status.source is not None and status.source.exists)):
                continue
            node = nodes.get(entry.node)
            checked = [f"{status.target.reference}: {status.target.error or 'tag not found'}"] if status else []
            recipe = recipe_for(
                plan.driver.repository, plan.driver.image, plan.driver.version, entry.kernel, entry.tag_os
            )
            if recipe is not None:  # Ubuntu: NVIDIA's driver container builds it; the request is the other way
                texts.append("\n".join(recipe_lines(recipe)))
            texts.append(
                support_request(
                    entry.node,
                    entry.kernel,
                    entry.tag_os,
                    node.gpu_product if node else "",
                    plan.driver.version,
                    checked=checked,
                )
            )
        self.display = bool(texts)
        self.query_one("#support-text", Static).update("\n\n".join(texts))

    @on(Button.Pressed, "#support-copy")
    def _copy_support(self) -> None:
        text = str(self.query_one("#support-text", Static).content)
        from screens.clipboard import copy_text

        self.notify(copy_text(self.app, text, "The support request"), title="Support request")
