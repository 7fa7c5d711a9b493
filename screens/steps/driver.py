"""Step 4, Driver & registry: version, source → target, the exact tag per group and its live status.

The version comes from the catalog (validated/published markers) or is typed; every field is
validated by the plan's rules as you type. Whenever the answers are valid the plan is rendered
and, after a short pause in typing, ``Cluster.check_images`` asks the registry about every group's
tag (a worker bound to this screen; a newer check cancels the older one). The mirror commands can
be copied, or run with progress when skopeo is installed. A kernel with no published image gets
the support request text to send to the vendor.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Label, Select, Static

from screens.state import import_facade
from screens.steps.driver_catalog import (
    catalog_marks,
    catalog_options,
    catalog_prompt,
    upstream_versions,
)
from screens.steps.formstep import FormStep
from screens.widgets.field import AnswerField
from screens.widgets.images import ImageGroups
from screens.widgets.mirror import MirrorPanel
from screens.widgets.offers import RegistryOffers
from screens.widgets.registry_access import RegistryAccess
from screens.widgets.support import SupportRequest
from screens.widgets.toggles import Tick
from wizard.engine.naming import image_repository

#: Shown instead of a registry status on a demo cluster without a simulated registry.
DEMO_NO_REGISTRY = "demo: the images live in the simulated catalog; no registry to ask"
#: Why the mirror cannot run on the demo cluster, and what to do on a real one.
DEMO_NO_MIRROR = (
    "demo cluster: its images are simulated, so no mirror runs from here (a run would copy real images). "
    "On a real cluster, Run mirror copies these images with skopeo, or copy the commands and run them yourself."
)
#: Pause after the last keystroke before the registry is asked.
CHECK_DELAY = 0.5
#: Up to this many nodes the plan is rendered at once on each keystroke; above, after the typing pauses
#: (CHECK_DELAY): a render of 5,000 nodes is costly (docs/benchmarks.md, "Costs behind the code"), and a thread cannot be cancelled mid-render.
RENDER_AT_ONCE_MAX_NODES = 500


class DriverStep(FormStep):
    """Which driver image, from where, and does every node's tag exist?"""

    # The version field takes the focus as the screen is composed: Textual's default focused the first
    # focusable widget, the form's scroll container, and moving the focus on from it restyled the whole
    # form twice before the step's first frame.
    AUTO_FOCUS = "#driver-version Input"
    #: The version's hint in upstream mode: what the source registry's tags offer, once read.
    _upstream_hint = "the versions the source registry holds are offered above once read"
    _registry_versions: list[str] | None = None
    """Upstream versions the registry holds for every node OS, once read (None: not read)."""

    DEFAULT_CSS = """
    #driver-scroll { height: 1fr; }
    #catalog-row { height: 1; }
    .switch-row { height: auto; }
    #catalog-row > Label, .switch-row > Label { width: 20; }
    #catalog { width: 1fr; }
    .switch-row > Checkbox { width: auto; }
    .switch-row > .switch-note { width: 1fr; padding-left: 1; color: $text-muted; }
    #images-head { height: 1; margin-top: 1; }
    #images-head > Label { width: 1fr; text-style: bold; color: $primary; }
    """

    def compose_body(self) -> ComposeResult:
        state = self.state
        self._prefill()
        upstream = state.get("mode") == "upstream"
        # not a Tab stop of its own: it showed no focus, and each field scrolls itself into view when focused
        with VerticalScroll(id="driver-scroll", can_focus=False):
            yield Label("Driver", classes="section -first")
            with Horizontal(id="catalog-row"):
                yield Label("Catalog")
                yield Select[str](
                    catalog_options(self._tag_oses()) if not upstream else [],
                    prompt=catalog_prompt(self._tag_oses()) if not upstream else "pick a version the registry holds",
                    id="catalog",
                    compact=True,
                )
            yield AnswerField(
                "Driver version",
                "driver.version",
                str(state.get("driver.version") or ""),
                placeholder=self._precompiled_placeholder() if not upstream else "a full version, like 580.126.20",
                hint=self._version_hint(),
            )
            yield Label("Registry", classes="section")
            yield AnswerField(
                "Copy from (source)",
                "driver.source",
                str(state.get("driver.source") or ""),
                hint="where the mirror copies from",
            )
            yield AnswerField(
                "Cluster pulls from",
                "driver.repository",
                str(state.get("driver.repository") or ""),
                placeholder="required: the registry your nodes pull from",
                hint="spec.driver.repository; set your mirror here to copy the images into it",
            )
            yield RegistryOffers(id="found-row")  # shown once a registry holding the tags is found (target empty)
            yield AnswerField("Image name", "driver.image", str(state.get("driver.image") or ""))
            yield AnswerField(
                "Pull secrets",
                "driver.imagePullSecrets",
                ", ".join(state.get("driver.imagePullSecrets") or []),
                placeholder="none (comma-separated Secret names)",
            )
            with Horizontal(classes="switch-row"):
                yield Label("NVIDIADriver CRD")
                yield Tick(
                    "useNvidiaDriverCRD", bool(state.get("driver.useNvidiaDriverCRD")), id="use-crd", compact=True
                )
                yield Static(self._crd_note(), classes="switch-note", markup=False)
            if upstream:  # never shown for the other modes (and a step's mode does not change while it is up)
                with Horizontal(classes="switch-row", id="airgapped-row"):
                    yield Label("Air-gapped nodes")
                    yield Tick("airgapped", bool(state.get("driver.airgapped")), id="airgapped", compact=True)
                    yield Static("no public package repos for headers", classes="switch-note")
                yield AnswerField(
                    "repoConfig",
                    "driver.repoConfig.configMapName",
                    str(state.get("driver.repoConfig.configMapName") or ""),
                    placeholder="ConfigMap name (apt/yum/zypper repo files)",
                    hint="upstream only: replaces the image's package repositories",
                    id="repo-config",
                )
            with Horizontal(id="images-head"):
                yield Label("Images per (kernel, OS) group")
                yield Button("Check again", id="recheck", compact=True)
            yield ImageGroups(id="groups")
            # the rest of the form (below the first view at 80×24) follows the first frame: see _mount_rest

    def below_the_fold(self) -> list[Widget]:
        """The form's widgets under the first view: the mirror plan, the other images' registry, the registry mirrors,
        the support request."""
        state = self.state
        mirrors = state.get("driver.registryMirrors") or {}
        return [
            MirrorPanel(id="mirror"),
            AnswerField(
                "Other images from",
                "driver.operandRegistry",
                str(state.get("driver.operandRegistry") or ""),
                placeholder="the chart's (nvcr.io, registry.k8s.io)",
                id="operand-registry",
                hint="or a private registry host[/path]: toolkit, device plugin, validator, … keep their paths below "
                "it; image checks ask it",
            ),
            AnswerField(
                "Registry mirrors",
                "driver.registryMirrors",
                ", ".join(f"{k}={v}" for k, v in mirrors.items()),
                placeholder="none (SOURCE=https://MIRROR, comma-separated)",
                id="registry-mirrors",
                hint="hosts the nodes pull through a mirror; image checks ask it",
            ),
            RegistryAccess(str(state.get("driver.registryCA") or ""), id="registry-access"),
            SupportRequest(id="support"),
        ]

    async def _mount_rest(self) -> None:
        """Mount the form below the first view once that view is on screen.

        Textual composes, styles and lays out every widget of a screen before its first frame: the
        whole form at once held the loop in one go, whatever the node count. Its fields take their
        values and errors now, as the fields above did when they were composed.
        """
        if not self.is_attached:  # left before its first frame
            return
        await self.query_one("#driver-scroll").mount_all(self.below_the_fold())
        errors = self.state.errors_for(self.FIELDS)
        for field in self.query(AnswerField).filter("#operand-registry, #registry-mirrors, #registry-ca"):
            field.show_error(errors.get(field.path, ""))
        self._rest_mounted.set()

    def _precompiled_placeholder(self) -> str:
        """A precompiled version as the nodes' publisher tags it: SLE Micro's copies carry full versions
        (``580.126.09.1``); NVIDIA's Ubuntu and RHEL tags a branch (``580-<kernel>-<os>``)."""
        from wizard.engine.sources import SLE_MICRO_TAG_PREFIXES

        oses = self._tag_oses()
        if oses and all(tag.startswith(SLE_MICRO_TAG_PREFIXES) for tag in oses):
            return "580.126.09.1 or a branch (580)"
        return "a branch, like 580 (tags <branch>-<kernel>-<os>)"

    def _tag_oses(self) -> list[str]:
        """The GPU nodes' distinct OS tags, worked out once per release while the step is shown (the nodes
        do not change meanwhile: their watch belongs to the Nodes step): 5,000 nodes' OS strings were
        parsed five times while the step was composed."""
        from wizard.engine.releases import default_release

        release = str(self.state.get("operator.version") or default_release())
        cached: dict[str, list[str]] = self.__dict__.setdefault("_tag_oses_by_release", {})
        if release not in cached:
            facts = self.state.facts
            if facts is None:
                return []
            cached[release] = facts.os_tags(release)
        return list(cached[release])

    def _crd_note(self) -> str:
        tags = self._tag_oses()
        if len(tags) > 1:  # short: the note beside the switch wraps rather than ending in "…" at 80 columns
            return f"recommended: the nodes run {len(tags)} OSes"
        return "a driver resource per OS pool"

    def _prefill(self) -> None:
        """First visit: what a newcomer accepts (``wizard.engine.defaults.driver_defaults``): the source and image
        for the nodes' OS, the catalog's best version for it, the registry the cluster pulls from as far as the
        cluster tells. None is guessed: an empty target is required, and the registries that already hold the
        tags are looked for (:class:`~screens.widgets.offers.RegistryOffers`)."""
        from wizard.engine.defaults import default_target, driver_defaults
        from wizard.engine.plan import Mode

        state = self.state
        mode = Mode(state.get("mode") or "precompiled")
        operator_image = str(getattr(state.preflight, "operator_image", "") or "")
        defaults = driver_defaults(mode, self._tag_oses(), operator_image=operator_image)
        if not state.get("driver.source") and defaults.get("source"):
            state.set("driver.source", defaults["source"])
        if not state.get("driver.image") and defaults.get("image"):
            state.set("driver.image", defaults["image"])
        if not state.get("driver.version") and defaults.get("version"):
            state.set("driver.version", defaults["version"])
        if not state.get("driver.repository") and state.get("driver.source"):
            target = default_target(str(state.get("driver.source")), operator_image=operator_image)
            if target:
                state.set("driver.repository", target)
        if not state.get("driver.operandRegistry") and defaults.get("operandRegistry"):
            state.set("driver.operandRegistry", defaults["operandRegistry"])  # the operator's own private registry
        if state.get("driver.useNvidiaDriverCRD") is None and defaults.get("useNvidiaDriverCRD"):
            state.set("driver.useNvidiaDriverCRD", True)  # one driver resource per OS: see the note beside it

    def on_mount(self) -> None:
        upstream = self.state.get("mode") == "upstream"
        # the bundled catalog lists precompiled tuples; upstream versions come from the registry's tags
        self.query_one("#catalog-row").display = not upstream
        if upstream and self.state.cluster is not None:
            self.list_upstream_versions()
        elif self.state.get("mode") == "precompiled" and self.state.cluster is not None:
            self.list_precompiled_branches()
        self._rest_mounted = asyncio.Event()
        self.call_after_refresh(self._mount_rest)
        version = self.state.get("driver.version")
        catalog = self.query_one("#catalog", Select)
        if version and any(value == version for _, value in catalog_options(self._tag_oses())):
            with catalog.prevent(Select.Changed):
                catalog.value = version
        self.answers_changed()
        self.query_one(RegistryOffers).search(delay=0.0)

    @on(RegistryOffers.Chosen)
    def _offer_chosen(self, event: RegistryOffers.Chosen) -> None:
        """The registry found holding the tags was taken: it becomes the target (and its version the version)."""
        self.query_one("#driver-repository", AnswerField).set_value(event.offer.repository)
        self.state.set("driver.repository", event.offer.repository)
        if event.offer.version:
            self.query_one("#driver-version", AnswerField).set_value(event.offer.version)
            self.state.set("driver.version", event.offer.version)
            self._follow_version(event.offer.version)
        self.answers_changed()

    async def _source_tags(self, source: str, image: str) -> list[str] | None:
        """The tags ``source/image`` holds; None on a demo without a registry or an unreachable one (the
        version and branch fields still take what is typed)."""
        from wizard.engine.registry_routes import repository_host

        async with self.wizard.open_registry(hosts=[repository_host(source)]) as registry:
            if registry is None:
                return None
            try:
                return await registry.list_tags(image_repository(source, image))
            except Exception:  # an unreachable registry: say nothing, as a registry that holds no tags
                return None

    @work(exclusive=True, group="versions", exit_on_error=False)
    async def list_upstream_versions(self) -> None:
        """Offer the versions the registry holds for every GPU node's OS (``580.126.20-ubuntu22.04``): the one the
        cluster pulls from when named (an air-gapped cluster reaches only its mirror), else the source."""
        state = self.state
        source = str(state.get("driver.repository") or state.get("driver.source") or "")
        image = str(state.get("driver.image") or "driver")
        tag_oses = self._tag_oses()
        if not source or not tag_oses:
            return
        tags = await self._source_tags(source, image)
        if tags is None:
            return
        versions = upstream_versions(tags, tag_oses)
        self._registry_versions = state.registry_versions = versions  # suggestions come only from these
        if not versions:  # say so: a hint promising a Catalog row that never comes was stale
            self._upstream_hint = (
                f"no version in {image_repository(source, image)} is tagged for every node OS ({', '.join(tag_oses)})"
            )
            self._show_branch_notes()
            return
        self._upstream_hint = f"{len(versions)} version(s) tagged for every node OS are in the Catalog"
        if not state.get("driver.version"):  # the default a newcomer accepts: the release's own, else a supported one
            from wizard.engine.defaults import pick_upstream_version

            picked = pick_upstream_version(versions, str(state.get("operator.version") or ""))
            if picked:
                self.query_one("#driver-version", AnswerField).set_value(picked)
                state.set("driver.version", picked)
                self.answers_changed()
        catalog = self.query_one("#catalog", Select)
        catalog.set_options([(self._upstream_label(v, source), v) for v in versions])
        self._follow_version(str(state.get("driver.version") or ""))
        self.query_one("#catalog-row").display = True
        self.query_one("#driver-version", AnswerField).input.placeholder = f"a full version, like {versions[0]}"
        self._show_branch_notes()

    def _upstream_label(self, version: str, source: str) -> str:
        """A Catalog row: where the version is, or (said first, as the field would once picked) that the
        operator release does not support its branch; airgapped listed 570.195.03 beside 580 unmarked."""
        from wizard.engine.driver_version import branch_of
        from wizard.engine.hostdoctor import supported_branches

        release = str(self.state.get("operator.version") or "")
        supported, _ = supported_branches(release) if release else ([], "")
        branch = branch_of(version)
        if supported and branch not in supported:
            return f"{version}  ! branch {branch} unsupported by {release}"
        return f"{version}  (in {source})"

    @work(exclusive=True, group="versions", exit_on_error=False)
    async def list_precompiled_branches(self) -> None:
        """Offer the branches the pull registry holds a precompiled tag of for every (kernel, OS) group
        (``580-5.15.0-1063-nvidia-ubuntu22.04``), beside the bundled catalog's: on Ubuntu and RHEL the catalog
        knows no tuple, and the user was left to guess ``580``."""
        from wizard.engine.precompiled_tags import held_branches

        state = self.state
        source = str(state.get("driver.repository") or state.get("driver.source") or "")
        image = str(state.get("driver.image") or "driver")
        facts = state.facts
        if not source or facts is None:
            return
        release = str(state.get("operator.version") or "")
        groups = [(g.kernel, g.tag_os) for g in facts.groups(release)] if release else []
        tags = await self._source_tags(source, image)
        if tags is None:
            return
        branches = held_branches(tags, groups, release)  # the release's own branch first, as answers init takes it
        if not branches:
            return
        catalog = self.query_one("#catalog", Select)
        known = [(label, value) for label, value in catalog_options(self._tag_oses()) if value not in branches]
        catalog.set_options([(f"{b}  (in {source}, every kernel)", b) for b in branches] + known)
        if not state.get("driver.version"):  # the default a newcomer accepts: a branch every group can pull
            self.query_one("#driver-version", AnswerField).set_value(branches[0])
            state.set("driver.version", branches[0])
            self.answers_changed()
        self._follow_version(str(state.get("driver.version") or ""))

    def _follow_version(self, version: str) -> None:
        """The Catalog shows the typed version when it is one of its entries, else nothing."""
        catalog = self.query_one("#catalog", Select)
        legal = {value for _, value in catalog._options}
        with catalog.prevent(Select.Changed):
            if version in legal:
                catalog.value = version
            elif catalog.value is not Select.NULL:
                catalog.clear()

    # -- answers ----------------------------------------------------------------------------

    def on_answer_field_changed(self, event: AnswerField.Changed) -> None:
        event.stop()
        event.prevent_default()  # Textual would also run FormStep's handler, storing the raw text over ours
        value: Any = event.value or None
        if event.field.path == "driver.imagePullSecrets":
            value = [s.strip() for s in event.value.split(",") if s.strip()] or None
        elif event.field.path == "driver.registryMirrors":  # SOURCE=MIRROR pairs; the plan checks each
            pairs = (item.strip().partition("=") for item in event.value.split(",") if item.strip())
            value = {source.strip(): mirror.strip() for source, _, mirror in pairs} or None
        if event.field.path == "driver.version":
            self._follow_version(event.value.strip())
        self.state.set(event.field.path, value)
        self.answers_changed()

    @on(Select.Changed, "#catalog")
    def _catalog_picked(self, event: Select.Changed) -> None:
        if event.value is Select.NULL:
            return
        field = self.query_one("#driver-version", AnswerField)
        field.set_value(str(event.value))
        self.state.set("driver.version", str(event.value))
        self.answers_changed()

    @on(Checkbox.Changed, "#use-crd")
    def _crd_switched(self, event: Checkbox.Changed) -> None:
        self.state.set("driver.useNvidiaDriverCRD", event.value or None)
        self.answers_changed()

    @on(Checkbox.Changed, "#airgapped")
    def _airgapped_switched(self, event: Checkbox.Changed) -> None:
        self.state.set("driver.airgapped", event.value or None)
        self.answers_changed()

    def answers_changed(self) -> None:
        super().answers_changed()
        self._show_branch_notes()
        self.check_images()
        if self.is_mounted:  # an offer is for an empty target only: a named one withdraws it
            offers = self.query_one(RegistryOffers)
            offers.search(delay=CHECK_DELAY) if not self.state.get("driver.repository") else offers.withdraw()

    def _version_hint(self) -> str:
        if self.state.get("mode") == "upstream":
            return self._upstream_hint
        return "version only: the operator appends -<kernel>-<os> itself"

    def _show_branch_notes(self) -> None:
        """Beside the version: a branch the operator release does not support, or a downgrade of the live driver."""
        from wizard.engine.branches import branch_checks

        plan = self.state.plan()
        live = (getattr(self.state.preflight, "cluster_policy", None) or {}).get("spec", {}).get("driver", {})
        checks = (
            branch_checks(
                plan,
                live_version=str(live.get("version") or ""),
                tag_oses=self._tag_oses(),
                available=self._registry_versions,
            )
            if plan
            else []
        )
        field = self.query_one("#driver-version", AnswerField)
        field.set_hint("; ".join(f"! {c.data['short']}" for c in checks) or self._version_hint())

    # -- images -----------------------------------------------------------------------------

    @on(Button.Pressed, "#recheck")
    def _recheck(self) -> None:
        self.check_images(delay=0.0)

    @on(MirrorPanel.Finished)
    def _mirrored(self) -> None:
        self.check_images(delay=0.0)

    @work(exclusive=True, group="images", exit_on_error=False)
    async def check_images(self, delay: float = CHECK_DELAY) -> None:
        """Render the plan and ask the registry about every group's image (debounced)."""
        await self._rest_mounted.wait()  # the mirror plan and the support request are shown below the first view
        state = self.state
        plan, facts = state.plan(), state.facts
        groups = self.query_one("#groups", ImageGroups)
        if plan is None or facts is None:
            groups.update("[$text-muted]complete the fields above to see the images[/]")
            self.query_one(SupportRequest).show(None, [], self.state.nodes)
            self.maybe_replay()
            return
        from screens.findings import unheld_sources
        from wizard.engine.mirror import mark_unheld
        from wizard.engine.registry_routes import registry_hosts
        from wizard.engine.render import mirror_script

        waited = 0.0
        if delay and len(facts.nodes) > RENDER_AT_ONCE_MAX_NODES:
            await asyncio.sleep(delay)  # a newer keystroke cancels this worker here, before any CPU is spent
            waited = delay
        facade = await asyncio.to_thread(import_facade)
        try:  # in a thread: costly for thousands of nodes (the facade's render carries the engine's memory policy)
            rendered = await facade.render_plan(plan, facts)
        except ValueError as exc:  # a node whose facts break Kubernetes' grammars (NodeFactsError): say which
            groups.update(f"[$error]✗ {escape(str(exc))}[/]")
            self.refresh_nav()
            return
        state.rendered, state.images = rendered, []
        catalog = catalog_marks(rendered)
        groups.show(
            rendered.node_images, catalog=catalog, checking=state.cluster is not None, offline=state.cluster is None
        )
        simulated = state.is_demo
        self.query_one(MirrorPanel).show(
            rendered.mirror,
            mirror_script(rendered.mirror),
            can_run=not simulated,
            note=DEMO_NO_MIRROR if simulated else "",
        )
        self.query_one(SupportRequest).show(rendered, [], self.state.nodes)
        if state.cluster is None:
            self.maybe_replay()
            return
        await asyncio.sleep(delay - waited)
        async with self.wizard.open_registry(rendered.plan) as registry:
            if registry is None:
                groups.show(rendered.node_images, catalog=catalog, note=DEMO_NO_REGISTRY)
                self.maybe_replay()
                return
            statuses = list(await state.cluster.check_images(rendered, registry))
            self.query_one(RegistryAccess).show(registry.access_notes(registry_hosts(rendered.plan)))
        state.images = statuses
        groups.show(rendered.node_images, statuses, catalog=catalog)
        present = {s.image for s in statuses if s.ok}
        unheld = unheld_sources(statuses)
        if present or unheld:  # a tag in the target needs no copy; one no source holds cannot be copied
            todo = mark_unheld([item for item in rendered.mirror if item.target not in present], unheld)
            self.query_one(MirrorPanel).show(
                todo,
                mirror_script(todo),
                can_run=not simulated,
                note=DEMO_NO_MIRROR if simulated else "",
                empty="nothing to mirror: every image the nodes need is in the target registry already",
            )
        self.query_one(SupportRequest).show(rendered, statuses, self.state.nodes)
        self.maybe_replay()
