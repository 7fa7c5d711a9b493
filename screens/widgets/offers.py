"""The Driver step's offer of a private registry that already holds the driver images (issue 25).

With no target named, a public copy is never taken for the site's mirror: the target stays empty and
required. This row looks for the mirror instead: the cluster names the candidates (the registries its
runtime reaches through a mirror, the operator's own), each is asked for its repositories and their
tags, and the best find is offered as "Use <registry>" (with the version it holds, when none is
chosen yet). It is never set without the user's press: the step takes a :class:`Chosen` message.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Static

from screens.host import host_of
from screens.state import import_facade

if TYPE_CHECKING:
    from wizard.engine.defaults import RegistryOffer


class RegistryOffers(Horizontal):
    """``[Use registry.example.com/mlops · 580.126.09.1]  holds every tag``, shown once something is found."""

    DEFAULT_CSS = """
    RegistryOffers { height: auto; display: none; padding-left: 20; }
    RegistryOffers > #found-note { width: 1fr; padding-left: 1; color: $text-muted; }
    RegistryOffers.stacked { layout: vertical; }
    RegistryOffers.stacked > #found-note { width: 100%; }
    """

    class Chosen(Message):
        """The user took the offer."""

        def __init__(self, offer: RegistryOffer) -> None:
            super().__init__()
            self.offer = offer

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.offer: RegistryOffer | None = None

    def compose(self) -> ComposeResult:
        yield Button("Use", id="use-found", compact=True)  # under the fields' inputs: no label widget of its own
        yield Static("", id="found-note", markup=False)

    @work(exclusive=True, group="mirror-search", exit_on_error=False)
    async def search(self, delay: float = 0.0) -> None:
        """Look for the registries that hold every group's tag (or, with no version yet in precompiled mode,
        a version for every group), when no target is named; again after each change of the answers (a newer
        search cancels this one: ``delay`` lets the typing pause first), so an offer never sets a stale version."""
        from wizard.engine.defaults import registry_offers, search_answers
        from wizard.engine.naming import image_tag
        from wizard.engine.plan import Plan

        app = host_of(self.app)
        state = app.state
        self.display, self.offer = False, None
        await asyncio.sleep(delay)
        cluster, facts = state.cluster, state.facts
        trial = search_answers(state.effective_answers())
        if cluster is None or facts is None or trial is None or state.get("driver.repository"):
            return
        try:
            plan = Plan.model_validate(trial)
        except ValueError:
            return
        facade = await asyncio.to_thread(import_facade)
        rendered = await facade.render_plan(plan, facts)
        groups = {(image_tag(e.image), e.kernel, e.tag_os) for e in rendered.node_images if e.image}
        operator_image = str(getattr(state.preflight, "operator_image", "") or "")
        hosts = cluster.private_registries(plan.driver.registryMirrors, operator_image)
        if not groups or not hosts:
            return
        async with app.open_registry(hosts=hosts) as registry:
            if registry is None:
                return
            listing = await cluster.driver_repositories(registry, hosts, plan.driver.image)
        version = str(state.get("driver.version") or "")
        offers = registry_offers(listing, plan.driver.image, version, groups, plan.precompiled)
        if not offers or state.get("driver.repository"):
            return
        self.offer = offers[0]
        others = f" (also {', '.join(o.repository for o in offers[1:])})" if offers[1:] else ""
        label = f"Use {offers[0].repository}" + (f" · {offers[0].version}" if offers[0].version else "")
        note = f"{offers[0].note}{others}"
        self.query_one("#use-found", Button).label = label
        self.query_one("#found-note", Static).update(note)
        # beside the button while both fit (the row is indented 20 under the inputs); else the note goes below
        # it: at 80 columns a label with its version left the note a column of a word a line
        room = (self.parent.content_size.width if isinstance(self.parent, Widget) else self.app.size.width) - 22
        self.set_class(len(label) + 3 + len(note) > room, "stacked")
        self.display = True

    def withdraw(self) -> None:
        """No offer (a target was named): the search stops and the row goes."""
        self.workers.cancel_group(self, "mirror-search")
        self.display, self.offer = False, None

    @on(Button.Pressed, "#use-found")
    def _use(self, event: Button.Pressed) -> None:
        event.stop()
        if self.offer is not None:
            self.display = False
            self.post_message(self.Chosen(self.offer))
