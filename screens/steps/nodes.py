"""Step 2, Nodes: the GPU nodes, grouped by (kernel, OS tag), kept current by a watch.

Discovery (``Cluster.discover``) and the node watch (``Cluster.watch_nodes``) run in one worker
bound to this screen: it stops when the user leaves the step. Updates are coalesced so a burst of
node events redraws the table once. Each row says where its facts came from (NFD labels or
``status.nodeInfo``); each group needs one driver image.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Label, Static
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from screens.steps.base import StepScreen
from screens.widgets.checks import CheckList
from screens.widgets.rowtable import RowTable
from screens.widgets.toggles import Tick
from wizard.engine.textsafe import printable

HOST_NOTE = 'Driver "-" = host not checked yet (it starts once the nodes are known)'
#: Host findings shown under the table (each names its nodes, with its fix; the area scrolls); the rest are on
#: Preview's Warnings tab.
HOST_LINES = 8
#: Said when the host check found nothing and probed no folder (a path the plan refuses): Paths checks them.
PATHS_LATER = "✓ no host problem found; noexec or read-only driver and toolkit folders are checked on the Paths step"
#: Said when the host check found nothing, the folders of the answers so far (the defaults) included.
FOLDERS_FINE = "✓ no host problem; the folders the plan installs into ({folders}) are writable, not noexec (Paths checks any you change)"
#: Said under a host finding whose fix is the mode (Secure Boot under upstream): it holds no Next here.
MODE_NEXT = "(choose the mode on the next step: this holds only a mode it refuses)"
#: Said under a host finding whose fix is an answer of a later step (no package source): no node work clears it.
ANSWER_NEXT = "(an answer fixes it, not the node: repoConfig on the Driver step; this holds only Preview)"

#: Seconds between table redraws while watch events arrive.
REDRAW_DELAY = 0.2


def short_runtime(runtime: str) -> str:
    """``containerd://1.7.23`` -> ``containerd 1.7.23``."""
    return runtime.replace("://", " ")


def product_name(product: str) -> str:
    """``H200`` for ``NVIDIA-H200``; GFD's MIG product (single strategy, ``NVIDIA-A30-MIG-1g.6gb``) as ``MIG 1g.6gb (A30)``."""
    name = product.removeprefix("NVIDIA-") if product else "GPU"
    model, mig, profile = name.partition("-MIG-")
    return f"MIG {profile} ({model})" if mig else name


def gpu_text(count: int, product: str) -> str:
    """``8×H200`` from the count and the ``nvidia.com/gpu.product`` label (``4×MIG 1g.6gb (A30)``)."""
    name = product_name(product)
    return f"{count}×{name}" if count else name


#: The ``nvidia.com/gpu.deploy.driver`` label in words (a bare ``true`` on every row explained nothing).
DEPLOY_WORDS = {"true": "operator", "false": "excluded"}


def driver_cell(node: Any, host_drivers: dict[str, str]) -> str:
    """Who provides the driver: the deploy label in words (``operator``, ``pre-installed``, ``excluded``), else
    what the host check found (``host 580.126.20``, ``none``). A host driver the check found wins over ``true``: with
    ``driver.enabled=false`` the label stays ``true`` (the operator's issue #982) while the host's driver serves."""
    if str(node.deploy_driver) == "true" and host_drivers.get(node.name):
        return f"host {host_drivers[node.name]}"
    if node.deploy_driver:
        return DEPLOY_WORDS.get(str(node.deploy_driver), str(node.deploy_driver))
    if node.name in host_drivers:
        version = host_drivers[node.name]
        return f"host {version}" if version else "none"
    return "-"  # no deploy label yet and no host check: HOST_NOTE says so beside the Check button


def table_rows(facts: Any, release: str, host_drivers: dict[str, str]) -> tuple[str, list[tuple[str, tuple[str, ...]]]]:
    """The groups summary (markup) and the table's rows as (key, cells); pure, so it runs in a thread."""
    groups = facts.groups(release)
    lines = []
    for number, group in enumerate(groups, start=1):
        products = ", ".join(product_name(p) for p in group.products) or "GPU"
        lines.append(
            f"[b]{number}[/] {group.count:>3} × [$accent]{escape(printable(group.kernel))}[/]  "
            f"[b]{escape(group.tag_os)}[/]  {escape(products)}"
        )
    others = len(facts.nodes) - len(facts.gpu_nodes)
    if others:
        lines.append(f"[$text-muted]    + {others} node(s) without an NVIDIA GPU (not shown)[/]")
    if not groups:
        lines.append("[$warning]! no GPU nodes: no node has nvidia.com/gpu.present or an NVIDIA PCI label[/]")
    rows: list[tuple[str, tuple[str, ...]]] = []
    for number, group in enumerate(groups, start=1):
        for node in sorted(group.nodes, key=lambda n: n.name):
            same = node.kernel_source == node.os_source
            cells = (
                str(number),
                node.name,
                gpu_text(node.gpu_count, node.gpu_product),
                short_runtime(node.container_runtime),
                driver_cell(node, host_drivers),
                node.kernel_source if same else f"{node.kernel_source}/{node.os_source}",
            )
            rows.append((node.name, cells))
    return "\n".join(lines), rows


class NodesStep(StepScreen):
    """What the cluster's GPU nodes run, live."""

    DEFAULT_CSS = """
    #groups { height: auto; max-height: 6; }
    #node-table { height: 1fr; }
    #watch-note { height: 1; color: $text-muted; }
    #host-row { height: 1; }
    #live-scroll { height: auto; max-height: 5; }
    #live-scroll:focus { background: $boost; }
    #host-scroll { height: auto; max-height: 6; }
    #host-scroll:focus { background: $boost; }
    #host-findings { height: auto; }
    #host-note { width: 1fr; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    #override { display: none; margin-right: 1; }
    #exclude-consumer { display: none; height: 1; }
    """

    def compose_body(self) -> ComposeResult:
        yield Label("Driver image groups (kernel, OS tag)", classes="section -first")
        yield Static("discovering nodes…", id="groups")
        # an upgrade under way, failing driver pods (screens.steps.connect too); scrolled, not cut at 80×24
        with VerticalScroll(id="live-scroll"):
            yield CheckList(id="live-findings")
        yield Label("GPU nodes", classes="section")
        yield Static("", id="watch-note")  # above the table: a long table must not push it off screen
        yield RowTable(id="node-table", zebra_stripes=True)
        # each finding with its fix, wrapped and scrolled (a Tab stop): Next waits on them, so they are read here
        with VerticalScroll(id="host-scroll"):
            yield Static("", id="host-findings")
        # GeForce/TITAN nodes (licence finding): keep them out of the driver rollout, applied with the plan
        yield Tick("", id="exclude-consumer", compact=True)
        with Horizontal(id="host-row"):
            yield Static(self._host_summary() or HOST_NOTE, id="host-note")
            yield Tick("continue anyway", id="override", compact=True)
            yield Button(self._button_label(), id="host-check", compact=True)

    def on_mount(self) -> None:
        table = self.query_one(RowTable)
        table.add_column("Grp", key="group", width=3)
        table.add_column("Node", key="node")
        table.add_column("GPU", key="gpu")
        table.add_column("Runtime", key="runtime")
        table.add_column("Driver", key="driver")
        table.add_column("Facts", key="source")
        self._redraw_pending = False
        self._filling: str | None = None
        self._fill: Worker[None] | None = None
        self._show_host_findings()
        self.sync_override()
        self._sync_consumer()
        self._show_live_findings()
        if self.state.nodes:
            self.redraw()
        if self.state.cluster is not None:
            self.discover(refresh=not self.state.nodes)
        else:
            self.query_one("#watch-note", Static).update("not connected: showing the facts already known")
            self.refresh_nav()
            self.maybe_replay()
        table.focus()

    @work(exclusive=True, group="nodes", exit_on_error=False)
    async def discover(self, refresh: bool) -> None:
        """Discover the nodes (unless known), then follow the watch until the step is left."""
        await self._discover(refresh)  # the facade's discover and watch carry the engine's memory policy

    async def _discover(self, refresh: bool) -> None:
        state = self.state
        cluster = state.connected()
        if refresh:
            facts = await cluster.discover()
            state.nodes = {n.name: n for n in facts.nodes}
            self.redraw()
        self.find_live_findings()
        from screens.hostcheck import wanted

        if wanted(state):  # before apply, by default: nouveau or Secure Boot found now, not after the rollout
            self.check_hosts(everything=False)
        from screens import registry_tags

        if registry_tags.wanted(state):  # Mode's recommendation follows what the pull registry holds
            self.list_precompiled_tags()
        if self._fill is not None:  # "live" once the table shows every node
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await self._fill.wait()
        self.query_one("#watch-note", Static).update("● live: watching the cluster's nodes")
        self.refresh_nav()
        self.maybe_replay()
        async for kind, node in cluster.watch_nodes():
            if kind == "DELETED":
                state.nodes.pop(node.name, None)
            else:
                state.nodes[node.name] = node
            state.rendered = None
            self._schedule_redraw()

    @work(exclusive=True, group="precompiled-tags", exit_on_error=False)
    async def list_precompiled_tags(self) -> None:
        """The pull registry's precompiled tags (:mod:`screens.registry_tags`), read while the user is here."""
        from screens.registry_tags import list_precompiled_tags

        if await list_precompiled_tags(self.state, self.wizard.open_registry):
            self._show_host_findings()  # a Secure Boot fix names the tags the registry lacks
            self.refresh_nav()

    @work(exclusive=True, group="live-findings", exit_on_error=False)
    async def find_live_findings(self) -> None:
        """The findings Connect showed, again from the nodes as discovered: one line each (the hints are on Connect)."""
        state = self.state
        state.live_findings = await state.connected().live_findings(state.facts)
        self._show_live_findings()

    def _show_live_findings(self) -> None:
        """Connect's warnings about the live policy (notReady) and the operator's work, one line each (scrolls)."""
        preflight = self.state.preflight
        policy = [
            c
            for c in (preflight.checks if preflight else [])
            if c.check == "cluster-policy" and c.status.value != "pass"
        ]
        found = [dataclasses.replace(check, hint="") for check in [*policy, *self.state.live_findings]]
        view = self.query_one("#live-findings", CheckList)
        view.show(found)
        self.query_one("#live-scroll").display = bool(found)

    def _schedule_redraw(self) -> None:
        if not self._redraw_pending:
            self._redraw_pending = True
            self.set_timer(REDRAW_DELAY, self._redraw_now)

    def _redraw_now(self) -> None:
        self._redraw_pending = False
        self.redraw()
        self.refresh_nav()

    def redraw(self) -> None:
        """Rebuild the groups summary and the table from the state (cursor kept on its node).

        The rows are worked out in a thread and handed to the :class:`RowTable` in one go: it draws
        only the rows on screen (``DataTable`` measured all 5,000 and held the loop for over a second).
        """
        self._sync_consumer()
        table = self.query_one(RowTable)
        if self._filling is None:  # a fill in progress: keep the node it was going to select
            self._filling = self._selected_node(table)
        self._fill = self._fill_table(self._filling)

    @work(exclusive=True, group="node-table", exit_on_error=False)
    async def _fill_table(self, selected: str | None) -> None:
        facts = self.state.facts
        table = self.query_one(RowTable)
        groups_view = self.query_one("#groups", Static)
        if facts is None:
            groups_view.update("no nodes found")
            table.clear()
            self._filling = None
            return
        release = str(self.state.get("operator.version") or self._release())
        summary, rows = await asyncio.to_thread(table_rows, facts, release, dict(self.state.host_drivers))
        groups_view.update(summary)
        table.clear()
        table.add_rows(rows)
        self._filling = None
        if selected is not None and selected in self.state.nodes:
            with contextlib.suppress(Exception):  # the node left the table meanwhile
                table.move_cursor(row=table.get_row_index(selected))

    def _sync_consumer(self) -> None:
        """The GeForce/TITAN tick: shown when such nodes are known, ticked while the answers keep them all out."""
        from wizard.engine.exclusion import consumer_nodes

        facts = self.state.facts
        consumer = sorted(consumer_nodes(facts.gpu_nodes)) if facts is not None else []
        tick = self.query_one("#exclude-consumer", Tick)
        tick.display = bool(consumer)
        if not consumer:
            return
        excluded = set(self.state.get("driver.excludeNodes") or [])
        names = ", ".join(consumer[:2]) + (f" +{len(consumer) - 2}" if len(consumer) > 2 else "")
        tick.label = f"keep {names} (GeForce/TITAN) out of the driver rollout"
        with tick.prevent(Tick.Changed):
            tick.value = set(consumer) <= excluded

    @on(Tick.Changed, "#exclude-consumer")
    def _exclude_consumer(self, event: Tick.Changed) -> None:
        """Keep (or stop keeping) the GeForce/TITAN nodes out of the driver rollout: ``driver.excludeNodes``."""
        from wizard.engine.exclusion import consumer_nodes

        event.stop()
        facts = self.state.facts
        if facts is None:
            return
        consumer = set(consumer_nodes(facts.gpu_nodes))
        excluded = set(self.state.get("driver.excludeNodes") or [])
        chosen = excluded | consumer if event.value else excluded - consumer
        self.state.set("driver.excludeNodes", sorted(chosen))
        self._show_host_findings()  # no fix is offered for a node the driver never reaches
        self.sync_override()
        self.refresh_nav()

    @on(Button.Pressed, "#host-check")
    def _check_hosts(self, event: Button.Pressed) -> None:
        event.stop()
        self.check_hosts(everything=True)

    def _button_label(self) -> str:
        return "Check all hosts" if self.state.host_rest else "Check hosts"

    @work(exclusive=True, group="host-check", exit_on_error=False)
    async def check_hosts(self, everything: bool) -> None:
        """The node doctor's host checks (one privileged probe pod per node, removed after): on their own once the
        nodes are known, on a sample above 64 GPU nodes (:mod:`screens.hostcheck`); the button checks every one.

        The host states are kept and judged against the plan of the moment (:func:`screens.findings.host_groups`):
        a later mode change re-judges them without probing again.
        """
        from screens.hostcheck import run_host_check

        note = self.query_one("#host-note", Static)
        button = self.query_one("#host-check", Button)
        button.disabled = True

        def progress(done: int, total: int) -> None:
            note.update(f"checking the GPU hosts (a probe pod per node): {done}/{total}…")

        try:
            await run_host_check(self.state, everything=everything, progress=progress)
        finally:
            button.disabled = False
        button.label = self._button_label()
        note.update(self._host_summary())
        self._show_host_findings()
        self.sync_override()
        self.refresh_nav()
        self.redraw()

    def _show_host_findings(self) -> None:
        """The host check's findings for the current plan: one line per finding with its nodes, never one per node."""
        from screens.findings import host_groups
        from wizard.engine.hostdoctor import ANSWER_FINDINGS, MODE_FINDINGS, blocks_apply

        view = self.query_one("#host-findings", Static)
        groups = [g for g in [*host_groups(self.state), *self._folder_groups()] if g.status.value != "pass"]
        self.query_one("#host-scroll").display = bool(groups) or bool(self.state.host_states)
        lines = [] if groups or not self.state.host_states else [f"[$text-muted]{escape(self._all_fine())}[/]"]
        for group in groups[:HOST_LINES]:
            colour = {"fail": "$error", "warn": "$warning"}.get(group.status.value, "$text-muted")
            symbol = group.status.symbol
            if group.status.value == "fail" and not blocks_apply(group.check, group.status):
                colour, symbol = "$warning", "!"  # holds no apply: a warning here as on Preview, never a red ✗
            lines.append(f"[{colour}]{symbol}[/] {escape(group.summary(most=2))}")
            if group.check in MODE_FINDINGS and group.status.value == "fail":  # fixed by the mode: Next stays open
                lines.append(f"   [{colour}]{MODE_NEXT}[/]")
            if group.check in ANSWER_FINDINGS and group.status.value == "fail":  # fixed by an answer: Next stays open
                lines.append(f"   [{colour}]{ANSWER_NEXT}[/]")
            if group.hint and group.status.value in ("fail", "warn"):
                lines.append(f"   [$text-muted]→ {escape(printable(group.hint))}[/]")
        if len(groups) > HOST_LINES:
            lines.append(f"[$text-muted]+ {len(groups) - HOST_LINES} more on Preview's Warnings tab[/]")
        view.update("\n".join(lines))

    def _folder_groups(self) -> list[Any]:
        """The host check's noexec or read-only folders (of the answers so far, the defaults for the rest), grouped;
        none once Paths checks other folders (its findings are Paths')."""
        from screens.findings import folder_checks
        from wizard.engine.grouping import group_findings

        checks, step = folder_checks(self.state)
        if checks is None or step != self.STEP:
            return []
        return group_findings(c for c in checks if c.node and not c.ok)

    def _all_fine(self) -> str:
        """The line for a host check that found nothing: which folders it vouches for, if any."""
        from screens.findings import answer_folders, nodes_folder_checks

        if nodes_folder_checks(self.state) is None:
            return PATHS_LATER
        return FOLDERS_FINE.format(folders=", ".join(printable(f.path) for f in answer_folders(self.state)))

    def _host_summary(self) -> str:
        """What the last host check found ("" before one ran); one line beside the button, even for 5,000 nodes."""
        found = self.state.host_drivers
        if not found and not self.state.host_states:
            return ""
        from screens.findings import host_groups

        working = sum(1 for version in found.values() if version)
        facts = self.state.facts
        preinstalled = facts is not None and working and facts.recommend_mode(found).value == "preinstalled"
        recommended = "; Mode recommends Pre-installed" if preinstalled else ""
        problems = sum(
            1 for g in [*host_groups(self.state), *self._folder_groups()] if g.status.value in ("fail", "warn")
        )
        findings = f"; {problems} finding{'s' if problems != 1 else ''}" if problems else "; no host problem"
        rest = self.state.host_rest
        sampled = f" ({len(found)} of {len(found) + rest})" if rest else ""
        return f"hosts checked{sampled}: driver on {working}/{len(found)}{recommended}{findings}"

    @staticmethod
    def _selected_node(table: RowTable) -> str | None:
        return table.cursor_key

    def _release(self) -> str:
        from wizard.engine.plan import DEFAULT_RELEASE

        detected = getattr(self.state.preflight, "operator_release", "") or ""
        return detected or DEFAULT_RELEASE

    def blocker(self) -> str:
        facts = self.state.facts
        if facts is None:
            return "discovering nodes…"
        if not facts.gpu_nodes:
            return "no GPU nodes found: install NFD or label the GPU nodes first"
        from screens.findings import standing

        found = standing(self.state, self.STEP)
        if found:
            count = f"{len(found)} blocking host problems" if len(found) > 1 else "1 blocking host problem"
            return f"{count}: fix or tick 'continue anyway'"
        return ""

    def blocker_detail(self) -> str:
        from screens.findings import standing

        found = standing(self.state, self.STEP)
        if not found:
            return ""
        first = found[0]
        return f"{first.message}\n→ {first.hint}\nFix it on the node and press Check hosts, or tick 'continue anyway'."
