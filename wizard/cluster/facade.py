"""The cluster engine's front door: one object per connected cluster, used by the CLI and the TUI.

``Cluster`` ties the pieces together: :mod:`wizard.cluster.gateway` (the only Kubernetes client user),
:mod:`wizard.cluster.core.preflight`, :mod:`wizard.cluster.core.discovery` (nodes), :mod:`wizard.cluster.applying.apply`,
:mod:`wizard.cluster.rollouts.rollout`, and :mod:`wizard.cluster.verification.proving` (the host checks and the verification
on the nodes). All methods are coroutines or async iterators and bounded by timeouts; errors a user
can fix come out as :class:`ClusterError` with a ``message`` and a ``hint``.

The engine's memory policy comes with the methods (:mod:`wizard.collector`): bulk work runs as a frozen
run and the long streams as :func:`wizard.collector.streamed`, so a front end never calls the collector.

It is longer than ~400 lines for a reason: it is the one door (the import contracts let the front ends import
nothing else of this room), so it holds one short method per operation they need, each handing the work to the
module that does it in one hop; its length is the length of that list.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from wizard import collector
from wizard.cluster.access.kubeconfig import list_contexts
from wizard.cluster.applying import apply as applying
from wizard.cluster.applying import apply_preview
from wizard.cluster.applying import restore as restoring
from wizard.cluster.applying.backup import Backup
from wizard.cluster.applying.exclusion_labels import excluded_node_labels
from wizard.cluster.applying.helm_apply import HelmRun, helm_leftovers, upgrade_through_helm
from wizard.cluster.applying.helm_values import HelmChange, deployed_release, helm_change, helm_values_path
from wizard.cluster.applying.operator_install import (
    InstallRun,
    check_chart,
    helm_binary,
    install_operator,
    install_values_path,
    write_install,
)
from wizard.cluster.connect.connection import open_gateway
from wizard.cluster.connect.registry_routing import cluster_registry_options, routed_client
from wizard.cluster.core.liveplan import plan_from_live
from wizard.cluster.core.preflight import DRIVERS, POLICY, Preflight
from wizard.cluster.core.preflight_refs import reference_checks
from wizard.cluster.core.session import Session
from wizard.cluster.diagnosis import diagnose as diagnosing
from wizard.cluster.diagnosis import support
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.cluster.hostchecks import hostcheck, pathcheck
from wizard.cluster.probes.hostprobe import CONCURRENCY
from wizard.cluster.probes.probe_cleanup import Found, clean_up_cluster
from wizard.cluster.rollouts import rollout as rollouts
from wizard.cluster.upgrading import upgrades
from wizard.cluster.upgrading.live_findings import live_findings
from wizard.cluster.verification import proving
from wizard.engine.facts import ClusterFacts, NodeFacts
from wizard.engine.helm_release import HelmRelease
from wizard.engine.hostdoctor import DoctorTarget, HostState
from wizard.engine.hostfolders import HostPath
from wizard.engine.leftovers import Unwanted
from wizard.engine.operator_install import ChartSource, OperatorInstall, upgrade_argv
from wizard.engine.plan import Plan
from wizard.engine.prior_findings import PriorFindings
from wizard.engine.registry_routes import mirror_options
from wizard.engine.render import Rendered
from wizard.engine.results import Check, ClusterInfo, LogLine
from wizard.registry.client import RegistryClient
from wizard.registry.images import ImageStatus, check_images, image_repositories
from wizard.registry.mirror_run import MirrorProgress, run_mirror, skopeo_available

__all__ = [
    "ApplyPlan",
    "ApplyResult",
    "Cluster",
    "ClusterError",
    "HelmChange",
    "HelmRun",
    "ImageStatus",
    "InstallRun",
    "MirrorProgress",
    "Preflight",
    "RolloutStatus",
    "UpgradeReport",
    "check_chart",  # `bundle`: helm template of a local chart with the values
    "helm_binary",
    "helm_change",
    "helm_values_path",
    "install_values_path",
    "kube_contexts",
    "plan_from_live",  # the TUI's resume reads the running plan from a policy it already holds
    "run_mirror",  # the TUI's mirror panel copies through the facade like everything else
    "skopeo_available",
    "upgrade_report_lines",
    "write_install",
]

ApplyPlan = apply_preview.ApplyPlan
ApplyResult = applying.ApplyResult
RolloutStatus = rollouts.RolloutStatus
UpgradeReport = upgrades.UpgradeReport
upgrade_report_lines = upgrades.report_lines


def kube_contexts(kubeconfig: str | None = None) -> tuple[list[str], str | None]:
    """Context names and the current context (KUBECONFIG lists merged like kubectl); ClusterError if unusable."""
    return list_contexts(kubeconfig)


def demo_scenarios() -> list[str]:
    """The demo scenarios to offer (the front ends offer them; they never import the demo).

    Every bundled one; in a classroom session only those the trainer allowed (``serve --scenarios``).
    """
    from wizard.demo.scenarios.scenario import offered_scenarios

    return offered_scenarios()


def open_registry(
    cluster: Cluster | None,
    hosts: Iterable[str],
    *,
    mirrors: Mapping[str, str] | None = None,
    auth_file: str | None = None,
    insecure_registries: Iterable[str] = (),
    timeout: float = 10.0,
    ca_files: Sequence[str] = (),
    host_config: bool = True,
    mirror_origins: Mapping[str, str] | None = None,
) -> RegistryClient:
    """The one way a front end gets a registry client: the user's auth file, insecure hosts, CA files and
    registry mirrors (``driver.registryMirrors``, ``--registry-mirror``; ``mirror_origins`` says which, per host),
    routed as ``cluster`` pulls; with ``host_config`` also this machine's registries.conf and hosts.toml
    mirrors (those never on the demo cluster), certs.d folders and credential helpers.
    ``client.access_notes()`` then says where each mirror, credential and CA came from.

    ValueError when the auth file or a CA file cannot be read (named, its content never shown).
    """
    hosts = list(hosts)

    def options_for(wanted: list[str], routes: Mapping[str, str]) -> dict[str, Any]:
        return cluster.registry_options(wanted, routes) if cluster is not None else mirror_options(routes, wanted)

    demo = cluster is not None and cluster.info.demo
    return routed_client(
        options_for,
        hosts,
        mirrors=mirrors,
        mirror_origins=mirror_origins,
        auth_file=auth_file,
        insecure_registries=insecure_registries,
        timeout=timeout,
        ca_files=ca_files,
        host_config=host_config,
        host_mirrors=not demo,  # the demo's kubeconfig alone says how its images are reached
    )


async def render_plan(plan: Plan, facts: ClusterFacts) -> Rendered:
    """``wizard.engine.render.render`` in a thread (thousands of nodes: never on the event loop), as one frozen run:
    a full collection meanwhile (the TUI's, when its user waits) skips the heap that existed before it. A front
    end's render (the Driver step's images, Preview, the registry offers) comes this way, the collector policy
    with it; ValueError as from ``render``."""
    import asyncio

    from wizard.engine.render import render

    with collector.frozen():
        return await asyncio.to_thread(render, plan, facts)


async def start_demo(scenario: str, *, step_delay: float = 0.0) -> Any:
    """Start the built-in demo cluster on this loop; the caller leaves it with ``await demo.__aexit__(...)``.

    The returned object's ``kubeconfig_path`` is what :meth:`Cluster.connect` is then given, so the
    front end reaches the demo exactly as it reaches a real cluster.
    """
    from wizard.demo.cluster import DemoCluster
    from wizard.demo.scenarios.scenario import check_offered

    check_offered(scenario)
    demo = DemoCluster(scenario, port=0, step_delay=step_delay)
    await demo.__aenter__()
    return demo


class Cluster:
    """A connected cluster. ``async with await Cluster.connect(...) as cluster:`` or call :meth:`close`."""

    def __init__(self, gateway: Gateway, info: ClusterInfo, *, demo_mirrors: Mapping[str, str] | None = None) -> None:
        self.gateway = gateway
        self.info = info
        self.demo_mirrors: dict[str, str] = dict(demo_mirrors or {})
        """The registry mirrors the demo's kubeconfig marker names (``{}`` for a real cluster)."""
        self.session = Session(gateway)
        """What the implementations are handed (gateway, watch caches, what the session read and proved)."""
        self.helm_kube: tuple[str, ...] = ()
        """``--kubeconfig``/``--kube-context`` for a helm command that must reach this cluster."""

    @property
    def host_verified(self) -> set[str]:
        """GPU nodes whose host nvidia-smi passed in this session (pre-installed mode)."""
        return self.session.host_verified

    @property
    def probe_image(self) -> str:
        """Image of the host probe pods; empty: the live driver-manager image, else the release default."""
        return self.session.probe_image

    @probe_image.setter
    def probe_image(self, image: str) -> None:
        self.session.probe_image = image

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        timeout: float = 10.0,
        credential: dict[str, Any] | None = None,
    ) -> Cluster:
        """Load credentials like kubectl, then prove the server answers and accepts them (see :mod:`wizard.cluster.connect.connection`).

        ``credential``: the context's exec plugin already answered (:func:`wizard.cluster.access.kubeconfig.plugin_credential`)."""
        gateway, info, marker = await open_gateway(
            kubeconfig=kubeconfig, context=context, in_cluster=in_cluster, timeout=timeout, credential=credential
        )
        cluster = cls(gateway, info, demo_mirrors=marker)
        # what a helm the wizard runs (or prints) is told to reach the same cluster
        cluster.helm_kube = (
            (*(["--kubeconfig", kubeconfig] if kubeconfig else []), "--kube-context", info.context)
            if not in_cluster
            else ()
        )
        return cluster

    async def close(self) -> None:
        """Stop the session's watches and close the connections."""
        try:
            await self.session.close()
        finally:
            await self.gateway.close()

    async def __aenter__(self) -> Cluster:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- reading ---------------------------------------------------------------------------------

    async def preflight(self, plan: Plan | None = None, *, install_operator: bool = False) -> Preflight:
        """Permissions, CRDs, operator namespace and release, live ClusterPolicy / NVIDIADrivers.

        ``install_operator``: the wizard will install the operator where none runs (its absence is no failure)."""
        return await self.session.preflight(plan, install_operator=install_operator)

    async def reference_checks(self, plan: Plan) -> list[Check]:
        """Do the repoConfig ConfigMap and the pull Secrets the plan names exist in the operator namespace?"""
        return await reference_checks(self.gateway, plan, await self.namespace(plan))

    async def known_preflight(self) -> Preflight:
        """The last preflight's answer (running it once when none ran yet)."""
        return await self.session.known_preflight()

    async def namespace(self, plan: Plan | None = None) -> str:
        """The operator namespace: the live ClusterPolicy's ``status.namespace``, else what preflight found."""
        return await self.session.namespace(plan)

    async def live_findings(self, facts: ClusterFacts | None = None) -> list[Check]:
        """What the operator is doing now, as warnings: an upgrade under way (done/total, failed nodes), failing
        driver pods. Without ``facts`` only the nodes of an unfinished upgrade are read (Connect)."""
        return await live_findings(self.session, await self.known_preflight(), facts)

    async def live_plan(self) -> Plan:
        """The plan the cluster runs now (live ClusterPolicy and default NVIDIADriver): an upgrade starts here."""
        return await self.session.live_plan()

    async def live_driver_objects(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The live ClusterPolicies and NVIDIADrivers as the API server returns them (``gpu-wizard drift``)."""
        return await self.gateway.list_custom(*POLICY), await self.gateway.list_custom(*DRIVERS)

    async def helm_release(self, namespace: str, name: str) -> HelmRelease | None:
        """The deployed revision of Helm release ``name`` as Helm recorded it (its release Secret; None: none):
        the chart version and the values it was given (``gpu-wizard drift``). ReleaseError when the record cannot be
        read (too large, not Helm's encoding); ClusterError from the API."""
        return await deployed_release(self.gateway, namespace, name)

    async def driver_pods(self, namespace: str) -> dict[str, tuple[str, str]]:
        """``node -> (image, waiting reason)`` of the driver container of every driver pod in ``namespace``."""
        return await upgrades.running_driver_images(self.session, namespace)

    async def discover(self) -> ClusterFacts:
        """Every node, listed in pages, as :mod:`wizard.engine.facts` (also remembers the list's resourceVersion)."""
        with collector.frozen():  # 5,000 nodes' pages decoded: collections skip what existed before
            return await self.session.discover()

    def watch_nodes(self) -> AsyncGenerator[tuple[str, NodeFacts], None]:
        """``(ADDED|MODIFIED|DELETED, facts)`` from the last :meth:`discover` on; re-lists on 410; runs until cancelled."""
        return collector.streamed(self.session.nodes.watch())

    def registry_options(self, hosts: Iterable[str], mirrors: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``RegistryClient`` keyword arguments for checking images on ``hosts`` as this cluster pulls them.

        ``mirrors`` are the user's (host -> mirror URL, checked by the plan); on the demo they win over
        those its kubeconfig marker names. ``{}``: ask the registries themselves. The demo's registry is
        its API server, so its CA (the kubeconfig's) is trusted for it, and an unverified connection
        (``insecure-skip-tls-verify``) stays unverified there too.
        """
        demo = self.demo_mirrors if self.info.demo else None
        return cluster_registry_options(self.gateway, demo, hosts, mirrors)

    def open_registry(
        self,
        hosts: Iterable[str],
        *,
        mirrors: Mapping[str, str] | None = None,
        auth_file: str | None = None,
        insecure_registries: Iterable[str] = (),
        timeout: float = 10.0,
        ca_files: Sequence[str] = (),
        host_config: bool = True,
        mirror_origins: Mapping[str, str] | None = None,
    ) -> RegistryClient:
        """A registry client routed as this cluster pulls (see :func:`open_registry`)."""
        return open_registry(
            self,
            hosts,
            mirrors=mirrors,
            auth_file=auth_file,
            insecure_registries=insecure_registries,
            timeout=timeout,
            ca_files=ca_files,
            host_config=host_config,
            mirror_origins=mirror_origins,
        )

    async def check_images(self, rendered: Rendered, registry: RegistryClient) -> list[ImageStatus]:
        """Per distinct driver image: the target and mirror-source tags, the catalog status, the nodes."""
        with collector.frozen():
            return await check_images(rendered, registry)

    def private_registries(self, mirrors: Mapping[str, str] | None = None, *also: str) -> list[str]:
        """The private registry hosts this cluster is known to pull from: those its runtime reaches through a
        mirror (the user's ``mirrors``; on the demo, its marker's) and ``also`` (the operator's image, live
        repositories). Where a site's driver mirror may already be."""
        from wizard.engine.defaults import candidate_hosts

        demo = self.demo_mirrors if self.info.demo else {}
        return candidate_hosts(demo, mirrors or {}, also)

    async def driver_repositories(
        self, registry: RegistryClient, hosts: Iterable[str], image: str
    ) -> dict[str, list[str]]:
        """Every repository named ``image`` on ``hosts`` with its tags (where a site's mirror may already hold them);
        ``wizard.engine.defaults`` says which hold a plan's tags, or which versions they hold for every group."""
        return await image_repositories(registry, hosts, image)

    async def prepare_upgrade(
        self, target: Plan, *, registry: RegistryClient | None = None, current: Plan | None = None
    ) -> upgrades.UpgradeReport:
        """The upgrade plan from what runs now (the live policy) to ``target``: images per node group, evictions, time."""
        return await upgrades.prepare_upgrade(self.session, target=target, current=current, registry=registry)

    # -- changing --------------------------------------------------------------------------------

    async def install_operator(
        self,
        install: OperatorInstall,
        values_path: Path,
        *,
        helm: str | None,
        wait_timeout: float,
        said: Callable[[str], Awaitable[None] | None] | None = None,
        node_labels: Iterable[str] = (),
    ) -> InstallRun:
        """Install the operator as a Helm release with the plan's values (see :mod:`wizard.cluster.applying.operator_install`).

        ``helm``: the binary to run (:func:`helm_binary`); None: ``said`` hears the command for the person to
        run, and the wizard waits up to ``wait_timeout`` for the operator Deployment. ``node_labels``: the excluded
        nodes (:meth:`exclusion_labels`, or the install preview's), labelled before the operator starts."""
        run = await install_operator(
            self.gateway,
            install,
            values_path,
            kube=self.helm_kube,
            helm=helm,
            wait_timeout=wait_timeout,
            said=said,
            node_labels=node_labels,
        )
        self.session.forget_preflight()
        return run

    async def exclusion_labels(self, plan: Plan) -> dict[str, str | None]:
        """The nodes ``driver.excludeNodes`` names that still need ``nvidia.com/gpu.deploy.driver=false``, each with
        its value now (a Helm install's or upgrade's preview); ClusterError naming the field for a node not in the
        cluster."""
        errors: list[str] = []
        labels = await excluded_node_labels(self.gateway, plan, errors)
        if errors:
            raise ClusterError("; ".join(errors), "name nodes the cluster has (gpu-wizard discover lists them)")
        return labels

    async def helm_leftovers(self, rendered: Rendered) -> list[Unwanted]:
        """The driver DaemonSets the operator leaves behind once a Helm release carries ``rendered``'s policy (the
        Helm-owned path's preview; :mod:`wizard.cluster.applying.helm_apply`)."""
        namespace = await self.namespace(rendered.plan)
        left, _ = await helm_leftovers(self.gateway, rendered, namespace)
        return left

    async def upgrade_through_helm(
        self,
        change: HelmChange,
        chart: ChartSource,
        rendered: Rendered,
        leftovers: Sequence[Unwanted],
        *,
        helm: str,
        backup_dir: str | Path,
        allow_unverified_preinstalled: bool = False,
    ) -> HelmRun:
        """Back up, ``helm upgrade`` the owning release with ``change``'s values (``chart``: where helm takes the
        chart), then delete ``leftovers`` (see :mod:`wizard.cluster.applying.helm_apply`); pre-installed mode first needs
        nvidia-smi to pass on every GPU host, as a direct apply does."""
        if not rendered.plan.driver_enabled and not allow_unverified_preinstalled:
            await proving.require_host_drivers(self.session, rendered.plan)
        namespace = await self.namespace(rendered.plan)
        owner = change.owner
        found = self.session.found
        running = found.operator_release if found else ""
        argv = upgrade_argv(
            owner.release,
            owner.namespace,
            chart,
            str(change.values_path),
            self.helm_kube,
            running_release=running,
            release=rendered.plan.operator.version,
        )
        live = (found.cluster_policy if found else None) or None
        with collector.frozen():
            run = await upgrade_through_helm(
                self.gateway,
                helm=helm,
                argv=argv,
                change=change,
                rendered=rendered,
                live_policy=live,
                leftovers=leftovers,
                namespace=namespace,
                backup_dir=Path(backup_dir),
            )
        self.session.forget_preflight()  # the policy changed: the next look reads it again
        return run

    async def prepare_apply(self, rendered: Rendered, *, force_conflicts: bool = False) -> ApplyPlan:
        """Local CRD validation, server-side dry-run (strict fields) and a diff against the live objects; and the
        driver DaemonSets the operator leaves behind for this plan, which the apply deletes."""
        with collector.frozen():
            namespace = await self.namespace(rendered.plan)
            return await apply_preview.prepare_apply(
                self.gateway, rendered, force_conflicts=force_conflicts, namespace=namespace
            )

    async def preview_install(self, rendered: Rendered) -> ApplyPlan:
        """What installing the operator with ``rendered``'s values creates (local CRD checks; no server dry-run),
        and the excluded nodes it labels first."""
        return await apply_preview.install_preview(self.gateway, rendered)

    async def apply(
        self, prepared: ApplyPlan, *, backup_dir: str | Path, allow_unverified_preinstalled: bool = False
    ) -> ApplyResult:
        """Back up, then server-side apply; pre-installed mode first needs nvidia-smi to pass on every GPU host."""
        with collector.frozen():
            if prepared.ok and prepared.preinstalled and not allow_unverified_preinstalled:
                await proving.require_host_drivers(self.session, prepared.plan)
            return await applying.apply(self.gateway, prepared, backup_dir=backup_dir)

    async def host_drivers(self) -> dict[str, str]:
        """GPU node -> the driver version its host's own ``nvidia-smi`` reports ("" where none answers).

        One short-lived privileged probe DaemonSet for all the GPU nodes (the pre-installed check's path,
        :func:`wizard.cluster.probes.hostprobe.run_on_hosts`), removed afterwards: the front ends run it only
        when the user asks, since it creates privileged pods.
        """
        return await proving.host_drivers(self.session)

    async def rollback(
        self, backup: Backup | str | Path, *, operator_grace: float = restoring.OPERATOR_GRACE_S
    ) -> list[str]:
        """Restore exactly what the backup (or backup file) holds; delete the objects the apply created.
        ``operator_grace``: seconds a driver DaemonSet the restored policy makes again is left to the operator."""
        return await restoring.rollback(self.gateway, backup, operator_grace=operator_grace)

    def rollout(
        self,
        plan: Plan,
        *,
        interval: float = 1.0,
        timeout: float = 1800.0,
        crash_window: float = 300.0,
        stall_window: float | None = None,
        heartbeat: float | None = None,
        prior: PriorFindings | None = None,
        after_change: bool = True,
    ) -> AsyncGenerator[RolloutStatus, None]:
        """Rollout snapshots (followed by watches) until ready, failed (e.g. ImagePullBackOff) or cancelled.

        A snapshot comes on every change, and at least every ``heartbeat`` seconds when given (the times in
        state grow). Without a ``stall_window``, a plan that sets its upgradePolicy gives one from its timeouts.
        ``prior``: the host findings known before apply, per node (``prior_findings.by_node``); a pod crash-looping
        on such a node fails the rollout at once with that finding and its fix, not after ``crash_window``.
        ``after_change``: a change was just sent, so a node already ``upgrade-failed`` is an earlier rollout's
        failure, waited on for the controller's retry; False (following what runs): that failure is the news.
        """
        statuses = rollouts.follow_cluster(
            self.session, plan, interval=interval, timeout=timeout, crash_window=crash_window, stall_window=stall_window,
            heartbeat=heartbeat, prior=prior, after_change=after_change,
        )  # fmt: skip
        return collector.streamed(statuses)

    def check_paths(
        self,
        plan: Plan,
        *,
        toolkit_install_dir: str | None = None,
        nodes: list[str] | None = None,
        concurrency: int = CONCURRENCY,
        timeout: float = 30.0,
    ) -> AsyncGenerator[Check, None]:
        """Before apply: are the toolkit installDir and the driver folder writable and exec on each GPU node?

        ``toolkit_install_dir`` defaults to the plan's, else the OS profile's; ``nodes`` to every GPU
        node. The host probe runs ``test``/``findmnt`` on every node's host (see :mod:`wizard.cluster.hostchecks.pathcheck`);
        one ``toolkit-dir`` and one ``driver-dir`` check per node as each node finishes, then a summary.
        """
        checks = pathcheck.check_cluster(
            self.session,
            plan,
            toolkit_install_dir=toolkit_install_dir,
            nodes=nodes,
            concurrency=concurrency,
            timeout=timeout,
        )
        return collector.streamed(checks)

    def host_states(
        self,
        target: Plan | DoctorTarget,
        nodes: list[str] | None = None,
        *,
        paths_of: Plan | None = None,
        folders: Sequence[HostPath] = (),
        concurrency: int = CONCURRENCY,
        timeout: float = 60.0,
    ) -> AsyncGenerator[HostState | Check, None]:
        """Before apply: each GPU node's host state (nouveau, Secure Boot, host driver, dkms, headers, space).

        The host probe (:func:`wizard.cluster.probes.hostprobe.run_on_hosts`: one DaemonSet for the run), removed afterwards;
        ``nodes`` (names) defaults to every GPU node, and a name that is no GPU node is a ClusterError.
        ``paths_of``: also check that plan's host folders in the same pod (each state's ``path_checks``);
        ``folders``: those folders instead (:func:`wizard.engine.hostfolders.folders`, before a plan is valid).
        A probe pod that could not be deleted comes as a failed Check naming the command that removes it.
        """
        doctor = target if isinstance(target, DoctorTarget) else DoctorTarget.from_plan(target)
        states = hostcheck.host_states(
            self.session, doctor, nodes, paths_of=paths_of, folders=folders, concurrency=concurrency, timeout=timeout
        )
        return collector.streamed(states)

    def host_doctor(
        self,
        target: Plan | DoctorTarget,
        nodes: list[str] | None = None,
        *,
        concurrency: int = CONCURRENCY,
        timeout: float = 60.0,
    ) -> AsyncGenerator[Check, None]:
        """Before apply: the host findings for ``target`` on each GPU node, as each node finishes (see :meth:`host_states`)."""
        doctor = target if isinstance(target, DoctorTarget) else DoctorTarget.from_plan(target)
        return collector.streamed(
            hostcheck.host_doctor(self.session, doctor, nodes, concurrency=concurrency, timeout=timeout)
        )

    async def clean_up_probes(self, *, dry_run: bool = False) -> tuple[list[Found], str]:
        """Remove every host probe DaemonSet and pod gpu-wizard left (found by its owner label); see
        :mod:`wizard.cluster.probes.probe_cleanup`. Returns what was found (each with its error, if any) and where it looked."""
        return await clean_up_cluster(self.session, dry_run=dry_run)

    # -- proving ---------------------------------------------------------------------------------

    def verify(
        self,
        plan: Plan,
        rendered: Rendered | None = None,
        *,
        registry: RegistryClient | None = None,
        no_registry: str = "",
        concurrency: int = CONCURRENCY,
        timeout: float = 30.0,
    ) -> AsyncGenerator[Check | LogLine, None]:
        """Stream every check: operator status, then each GPU node (concurrently), then a summary.

        Without ``registry`` the digest checks are SKIPPED with ``no_registry`` as the reason.
        """
        items = proving.verify(
            self.session,
            plan,
            rendered,
            registry=registry,
            no_registry=no_registry,
            concurrency=concurrency,
            timeout=timeout,
        )
        return collector.streamed(items)

    def diagnose(self, plan: Plan, *, nodes: Iterable[str] | None = None) -> AsyncGenerator[Check, None]:
        """After a failure: why each failing GPU node's driver (or toolkit, or validator) pod is not ready.

        Streams one ``diagnosis`` check per representative failing pod (the known failure it shows,
        with the matching log lines and the fix, else its last log lines), one per group of nodes that
        share a state, then a ``diagnosis-summary``. ``nodes``: only these. Reads pods, logs, events
        and nodes only (see :mod:`wizard.cluster.diagnosis.diagnose`).
        """
        return diagnosing.diagnose_cluster(self.session, plan, nodes)

    def support_files(
        self, plan: Plan | None, *, about: Mapping[str, bytes]
    ) -> AsyncGenerator[support.BundleFile | str, None]:
        """The support bundle's files (``about``: gpu-wizard's own), with progress lines between them.

        Reads the operator's objects, pods, logs, events and GPU node labels and runs ``nvidia-smi -q``
        in sampled driver containers; never a Secret (see :mod:`wizard.cluster.diagnosis.support`).
        """
        return support.collect_cluster(self.session, plan, about=about)
