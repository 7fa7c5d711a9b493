"""The cluster engine's front door: one object per connected cluster, used by the CLI and the TUI.

``Cluster`` ties the pieces together: :mod:`wizard.cluster.gateway` (the only Kubernetes client user),
:mod:`wizard.cluster.preflight`, :mod:`wizard.cluster.apply`, :mod:`wizard.cluster.rollout` and :mod:`wizard.cluster.verify`. All
methods are coroutines or async iterators and bounded by timeouts; errors a user can fix come out
as :class:`ClusterError` with a ``message`` and a ``hint``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from wizard.cluster import apply as applying
from wizard.cluster import diagnose as diagnosing
from wizard.cluster import hostcheck, pathcheck, support, upgrades
from wizard.cluster import rollout as rollouts
from wizard.cluster import verify as verifying
from wizard.cluster.backup import Backup
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway import Gateway, Gone
from wizard.cluster.helm_values import HelmChange, helm_change, helm_values_path
from wizard.cluster.kubeconfig import demo_marker, list_contexts
from wizard.cluster.liveplan import known_release, plan_from_live
from wizard.cluster.preflight import DRIVERS, POLICY, Preflight, active_policy, run_preflight
from wizard.cluster.preflight_refs import reference_checks
from wizard.cluster.probe import manager_image
from wizard.cluster.probe_cleanup import Found, clean_up
from wizard.engine.facts import ClusterFacts, NodeFacts, node_facts
from wizard.engine.hostdoctor import DoctorTarget, HostState, host_findings
from wizard.engine.mirror import operator_choices
from wizard.engine.plan import Plan
from wizard.engine.registry_routes import mirror_options
from wizard.engine.render import Rendered, render
from wizard.engine.results import Check, ClusterInfo, LogLine, Status
from wizard.engine.textsafe import printable
from wizard.engine.upgrade import plan_policy
from wizard.registry.client import RegistryClient
from wizard.registry.images import ImageStatus, check_images
from wizard.registry.mirror_run import MirrorProgress, run_mirror, skopeo_available
from wizard.retry import Reconnects

__all__ = [
    "ApplyPlan",
    "ApplyResult",
    "Cluster",
    "ClusterError",
    "HelmChange",
    "ImageStatus",
    "MirrorProgress",
    "Preflight",
    "RolloutStatus",
    "UpgradeReport",
    "helm_change",
    "helm_values_path",
    "kube_contexts",
    "run_mirror",  # the TUI's mirror panel copies through the facade like everything else
    "skopeo_available",
    "upgrade_report_lines",
]

ApplyPlan = applying.ApplyPlan
ApplyResult = applying.ApplyResult
RolloutStatus = rollouts.RolloutStatus
UpgradeReport = upgrades.UpgradeReport
upgrade_report_lines = upgrades.report_lines
PAGE_SIZE = 500


def kube_contexts(kubeconfig: str | None = None) -> tuple[list[str], str | None]:
    """Context names and the current context (KUBECONFIG lists merged like kubectl); ClusterError if unusable."""
    return list_contexts(kubeconfig)


def demo_scenarios() -> list[str]:
    """The built-in demo cluster's scenario names (the front ends offer them; they never import the demo)."""
    from wizard.demo.scenarios.scenario import scenario_names

    return scenario_names()


def open_registry(
    cluster: Cluster | None,
    hosts: Iterable[str],
    *,
    mirrors: Mapping[str, str] | None = None,
    auth_file: str | None = None,
    insecure_registries: Iterable[str] = (),
    timeout: float = 10.0,
) -> RegistryClient:
    """The one way a front end gets a registry client: the user's auth file, insecure hosts and registry
    mirrors (``driver.registryMirrors``, ``--registry-mirror``), routed as ``cluster`` pulls.

    ValueError when the auth file cannot be read (named, its content never shown).
    """
    hosts = list(hosts)
    options = cluster.registry_options(hosts, mirrors) if cluster is not None else mirror_options(mirrors or {}, hosts)
    insecure = [*insecure_registries, *options.pop("insecure_registries", [])]
    return RegistryClient(auth_file=auth_file, insecure_registries=insecure, timeout=timeout, **options)


async def start_demo(scenario: str, *, step_delay: float = 0.0) -> Any:
    """Start the built-in demo cluster on this loop; the caller leaves it with ``await demo.__aexit__(...)``.

    The returned object's ``kubeconfig_path`` is what :meth:`Cluster.connect` is then given, so the
    front end reaches the demo exactly as it reaches a real cluster.
    """
    from wizard.demo.serve import DemoCluster

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
        self._nodes_rv = ""
        self._known: dict[str, NodeFacts] = {}
        self._preflight: Preflight | None = None
        self.host_verified: set[str] = set()
        """GPU nodes whose host nvidia-smi passed in this session (pre-installed mode)."""
        self.probe_image = ""
        """Image of the host probe pods; empty: the live driver-manager image, else the release default."""

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        timeout: float = 10.0,
    ) -> Cluster:
        """Load credentials like kubectl, then prove the server answers and accepts them."""
        gateway = await Gateway.connect(kubeconfig=kubeconfig, context=context, in_cluster=in_cluster, timeout=timeout)
        try:
            # The demo is known by the marker it writes into its own kubeconfig, never by what a server says.
            marker = None if in_cluster else demo_marker(kubeconfig, gateway.context)
            version = await gateway.version()
            await gateway.access_review("list", "nodes")  # /version is public; this proves the credentials
        except ApiError as exc:
            await gateway.close()
            if exc.status in (401, 403):
                raise ClusterError(
                    f"{gateway.server} rejected the credentials of context {gateway.context!r} ({exc.status})",
                    "log in again: the token or client certificate is missing, expired or not accepted",
                ) from None
            raise
        except BaseException:
            await gateway.close()
            raise
        info = ClusterInfo(
            context=gateway.context,
            server=gateway.server,
            version=str(version.get("gitVersion") or ""),
            demo=marker is not None,
            insecure=not gateway.configuration.verify_ssl,
        )
        return cls(gateway, info, demo_mirrors=marker)

    async def close(self) -> None:
        """Close the connections."""
        await self.gateway.close()

    async def __aenter__(self) -> Cluster:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- reading ---------------------------------------------------------------------------------

    async def preflight(self, plan: Plan | None = None) -> Preflight:
        """Permissions, CRDs, operator namespace and release, live ClusterPolicy / NVIDIADrivers."""
        self._preflight = await run_preflight(self.gateway, plan)
        return self._preflight

    async def reference_checks(self, plan: Plan) -> list[Check]:
        """Do the repoConfig ConfigMap and the pull Secrets the plan names exist in the operator namespace?"""
        return await reference_checks(self.gateway, plan, await self.namespace(plan))

    async def namespace(self, plan: Plan | None = None) -> str:
        """The operator namespace: the live ClusterPolicy's ``status.namespace``, else what preflight found."""
        policy = active_policy(await self.gateway.list_custom(*POLICY))
        live = str(((policy or {}).get("status") or {}).get("namespace") or "")
        if live:
            return live
        if self._preflight is None:
            self._preflight = await run_preflight(self.gateway, plan)
        return self._preflight.operator_namespace

    async def live_plan(self) -> Plan:
        """The plan the cluster runs now (live ClusterPolicy and default NVIDIADriver): an upgrade starts here."""
        policy = active_policy(await self.gateway.list_custom(*POLICY))
        drivers = await self.gateway.list_custom(*DRIVERS)
        found = self._preflight or await self.preflight()
        return plan_from_live(policy, drivers, release=found.operator_release, namespace=found.operator_namespace)

    async def discover(self) -> ClusterFacts:
        """Every node, listed in pages of 500, as :mod:`wizard.engine.facts` (also remembers the list's resourceVersion)."""
        nodes: list[NodeFacts] = []
        async with contextlib.aclosing(self.gateway.node_pages(limit=PAGE_SIZE)) as pages:
            async for page in pages:
                nodes.extend(node_facts(item) for item in page.get("items") or [])
                meta = page.get("metadata") or {}
                if not meta.get("continue"):
                    self._nodes_rv = str(meta.get("resourceVersion") or "")
        self._known = {n.name: n for n in nodes}
        return ClusterFacts(nodes)

    async def watch_nodes(self) -> AsyncGenerator[tuple[str, NodeFacts], None]:
        """``(ADDED|MODIFIED|DELETED, facts)`` from the last :meth:`discover` on; re-lists on 410; runs until cancelled."""
        if not self._nodes_rv:
            for facts in (await self.discover()).nodes:
                yield "ADDED", facts
        reconnects = Reconnects()
        while True:
            try:
                async with contextlib.aclosing(self.gateway.watch_nodes(self._nodes_rv)) as events:
                    async for kind, obj in events:
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                        self._nodes_rv = rv or self._nodes_rv
                        if kind not in ("ADDED", "MODIFIED", "DELETED"):
                            continue
                        facts = node_facts(obj)
                        if kind == "DELETED":
                            self._known.pop(facts.name, None)
                        else:
                            self._known[facts.name] = facts
                        reconnects.progressed()
                        yield kind, facts
            except Gone:
                before = dict(self._known)
                for facts in (await self.discover()).nodes:
                    old = before.pop(facts.name, None)
                    if old is None:
                        yield "ADDED", facts
                    elif old != facts:
                        yield "MODIFIED", facts
                for gone in before.values():
                    yield "DELETED", gone
            except ClusterError as exc:
                await reconnects.failed(exc)

    def registry_options(self, hosts: Iterable[str], mirrors: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``RegistryClient`` keyword arguments for checking images on ``hosts`` as this cluster pulls them.

        ``mirrors`` are the user's (host -> mirror URL, checked by the plan); on the demo they win over
        those its kubeconfig marker names. ``{}``: ask the registries themselves. The demo's registry is
        its API server, so its CA (the kubeconfig's) is trusted for it, and an unverified connection
        (``insecure-skip-tls-verify``) stays unverified there too.
        """
        options = mirror_options({**self.demo_mirrors, **(mirrors or {})}, hosts)
        if not self.info.demo or not options:
            return options
        configuration = self.gateway.configuration
        api_endpoint = self.gateway.server.split("://", 1)[-1].rstrip("/")
        if not getattr(configuration, "verify_ssl", True):
            options["insecure_registries"] = sorted({*options["insecure_registries"], api_endpoint})
        ca_path = getattr(configuration, "ssl_ca_cert", None)
        if ca_path:
            with contextlib.suppress(OSError):  # the client library's copy of the kubeconfig's CA data
                options["ca_data"] = Path(str(ca_path)).read_text(encoding="ascii")
        return options

    def open_registry(
        self,
        hosts: Iterable[str],
        *,
        mirrors: Mapping[str, str] | None = None,
        auth_file: str | None = None,
        insecure_registries: Iterable[str] = (),
        timeout: float = 10.0,
    ) -> RegistryClient:
        """A registry client routed as this cluster pulls (see :func:`open_registry`)."""
        return open_registry(
            self, hosts, mirrors=mirrors, auth_file=auth_file, insecure_registries=insecure_registries, timeout=timeout
        )

    async def check_images(self, rendered: Rendered, registry: RegistryClient) -> list[ImageStatus]:
        """Per distinct driver image: the target and mirror-source tags, the catalog status, the nodes."""
        return await check_images(rendered, registry)

    async def prepare_upgrade(
        self, target: Plan, *, registry: RegistryClient | None = None, current: Plan | None = None
    ) -> upgrades.UpgradeReport:
        """The upgrade plan from what runs now (the live policy) to ``target``: images per node group, evictions, time."""
        return await upgrades.prepare_upgrade(self, target=target, current=current, registry=registry)

    # -- changing --------------------------------------------------------------------------------

    async def prepare_apply(self, rendered: Rendered, *, force_conflicts: bool = False) -> ApplyPlan:
        """Local CRD validation, server-side dry-run (strict fields) and a diff against the live objects."""
        return await applying.prepare_apply(self.gateway, rendered, force_conflicts=force_conflicts)

    async def apply(
        self, prepared: ApplyPlan, *, backup_dir: str | Path, allow_unverified_preinstalled: bool = False
    ) -> ApplyResult:
        """Back up, then server-side apply; pre-installed mode first needs nvidia-smi to pass on every GPU host."""
        if prepared.ok and prepared.preinstalled and not allow_unverified_preinstalled:
            await self._require_host_drivers(prepared)
        return await applying.apply(self.gateway, prepared, backup_dir=backup_dir)

    async def _require_host_drivers(self, prepared: ApplyPlan) -> None:
        facts = await self.discover()
        gpu = [n for n in facts.gpu_nodes if n.name not in self.host_verified]
        if gpu:
            if prepared.plan is None:
                raise ClusterError(
                    "pre-installed mode: cannot tell which release to probe with",
                    "pass --allow-unverified-preinstalled",
                )
            await self._probe_hosts(prepared.plan, gpu)
        missing = sorted(n.name for n in facts.gpu_nodes if n.name not in self.host_verified)
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise ClusterError(
                f"nothing applied: pre-installed mode needs a working host driver, but nvidia-smi did not pass on {shown}",
                "fix the host driver (gpu-wizard verify shows the output), or pass --allow-unverified-preinstalled",
            )

    async def host_drivers(self) -> dict[str, str]:
        """GPU node -> the driver version its host's own ``nvidia-smi`` reports ("" where none answers).

        One short-lived privileged probe DaemonSet for all the GPU nodes (the pre-installed check's path,
        :func:`wizard.cluster.hostprobe.run_on_hosts`), removed afterwards: the front ends run it only
        when the user asks, since it creates privileged pods.
        """
        gpu = sorted((await self.discover()).gpu_nodes, key=lambda n: n.name)
        if not gpu:
            return {}
        preflight = self._preflight or await self.preflight()
        plan = Plan.model_validate(
            {
                "mode": "preinstalled",
                "operator": {
                    "version": known_release(preflight.operator_release),
                    "namespace": preflight.operator_namespace,
                },
            }
        )
        return await self._probe_hosts(plan, gpu)

    async def _probe_hosts(self, plan: Plan, nodes: list[NodeFacts]) -> dict[str, str]:
        """Run the pre-installed host checks on ``nodes`` (one host probe run): node -> host driver version ("" none)."""
        found = {n.name: "" for n in nodes}
        ctx = await self._verify_context(plan, None, registry=None, timeout=30.0)
        try:
            pages = verifying.driver_pod_pages(self.gateway, ctx.namespace)
            async with contextlib.aclosing(verifying.verify_nodes(ctx, nodes, 16, pages)) as probes:
                async for item in probes:
                    if isinstance(item, Check) and item.check == "host-nvidia-smi" and item.ok and item.node:
                        found[item.node] = str((item.data or {}).get("driver_version") or "")
        finally:
            self.host_verified |= ctx.host_ok
        return found

    async def rollback(self, backup: Backup | str | Path) -> list[str]:
        """Restore exactly what the backup (or backup file) holds; delete the objects the apply created."""
        return await applying.rollback(self.gateway, backup)

    async def rollout(
        self,
        plan: Plan,
        *,
        interval: float = 1.0,
        timeout: float = 1800.0,
        crash_window: float = 300.0,
        stall_window: float | None = None,
        heartbeat: float | None = None,
    ) -> AsyncGenerator[RolloutStatus, None]:
        """Rollout snapshots (followed by watches) until ready, failed (e.g. ImagePullBackOff) or cancelled.

        A snapshot comes on every change, and at least every ``heartbeat`` seconds when given (the times in
        state grow). Without a ``stall_window``, a plan that sets its upgradePolicy gives one from its timeouts.
        """
        if stall_window is None:
            policy = plan_policy(plan)
            stall_window = policy.stall_seconds() if policy is not None else None
        namespace = await self.namespace(plan)
        statuses = rollouts.follow(
            self.gateway,
            plan,
            namespace,
            interval=interval,
            timeout=timeout,
            crash_window=crash_window,
            stall_window=stall_window,
            heartbeat=heartbeat,
        )
        async with contextlib.aclosing(statuses):
            async for status in statuses:
                yield status

    async def check_paths(
        self,
        plan: Plan,
        *,
        toolkit_install_dir: str | None = None,
        nodes: list[str] | None = None,
        concurrency: int = 16,
        timeout: float = 30.0,
    ) -> AsyncGenerator[Check, None]:
        """Before apply: are the toolkit installDir and the driver folder writable and exec on each GPU node?

        ``toolkit_install_dir`` defaults to the plan's, else the OS profile's; ``nodes`` to every GPU
        node. The host probe runs ``test``/``findmnt`` on every node's host (see :mod:`wizard.cluster.pathcheck`);
        one ``toolkit-dir`` and one ``driver-dir`` check per node as each node finishes, then a summary.
        """
        facts = await self.discover()
        targets, paths = pathcheck.prepare(plan, facts, toolkit_install_dir=toolkit_install_dir, nodes=nodes)
        namespace = await self.namespace(plan) if targets else ""
        policy = active_policy(await self.gateway.list_custom(*POLICY)) if targets else None
        image = self.probe_image or manager_image(policy, plan.operator.bundle)
        checks = pathcheck.run(
            self.gateway, targets, paths, namespace=namespace, image=image, concurrency=concurrency, timeout=timeout
        )
        async with contextlib.aclosing(checks):
            async for check in checks:
                yield check

    async def host_states(
        self,
        target: Plan | DoctorTarget,
        nodes: list[str] | None = None,
        *,
        paths_of: Plan | None = None,
        concurrency: int = 16,
        timeout: float = 60.0,
    ) -> AsyncGenerator[HostState | Check, None]:
        """Before apply: each GPU node's host state (nouveau, Secure Boot, host driver, dkms, headers, space).

        The host probe (:func:`wizard.cluster.hostprobe.run_on_hosts`: one DaemonSet for the run), removed afterwards;
        ``nodes`` (names) defaults to every GPU node, and a name that is no GPU node is a ClusterError.
        ``paths_of``: also check that plan's host folders in the same pod (each state's ``path_checks``).
        A probe pod that could not be deleted comes as a failed Check naming the command that removes it.
        """
        doctor = target if isinstance(target, DoctorTarget) else DoctorTarget.from_plan(target)
        facts = await self.discover()
        gpu = sorted(facts.gpu_nodes, key=lambda n: n.name)
        if nodes:
            known = {n.name for n in gpu}
            missing = [name for name in nodes if name not in known]
            if missing:
                raise ClusterError(
                    f"no GPU node named {printable(missing[0])!r} in the cluster",
                    "gpu-wizard discover lists the GPU nodes",
                )
            gpu = [n for n in gpu if n.name in set(nodes)]
        if not gpu:
            return
        namespace = (self._preflight or await self.preflight()).operator_namespace or doctor.namespace
        policy = active_policy(await self.gateway.list_custom(*POLICY))
        image = self.probe_image or manager_image(policy, doctor.bundle)
        paths = pathcheck.prepare(paths_of, facts, toolkit_install_dir=None, nodes=None)[1] if paths_of else []
        states = hostcheck.host_states(
            self.gateway,
            gpu,
            doctor,
            namespace=namespace,
            image=image,
            timeout=timeout,
            concurrency=concurrency,
            paths=paths,
        )
        async with contextlib.aclosing(states):
            async for state in states:
                if isinstance(state, HostState) and state.host_driver and not state.error:
                    self.host_verified.add(state.node)  # the host's own nvidia-smi passed: pre-installed apply may go
                yield state

    async def host_doctor(
        self,
        target: Plan | DoctorTarget,
        nodes: list[str] | None = None,
        *,
        concurrency: int = 16,
        timeout: float = 60.0,
    ) -> AsyncGenerator[Check, None]:
        """Before apply: the host findings for ``target`` on each GPU node, as each node finishes (see :meth:`host_states`)."""
        doctor = target if isinstance(target, DoctorTarget) else DoctorTarget.from_plan(target)
        states = self.host_states(doctor, nodes, concurrency=concurrency, timeout=timeout)
        async with contextlib.aclosing(states):
            async for state in states:
                if isinstance(state, Check):
                    yield state
                else:
                    for check in host_findings(doctor, state):
                        yield check

    async def clean_up_probes(self, *, dry_run: bool = False) -> tuple[list[Found], str]:
        """Remove every host probe DaemonSet and pod gpu-wizard left (found by its owner label); see
        :mod:`wizard.cluster.probe_cleanup`. Returns what was found (each with its error, if any) and where it looked."""
        try:
            namespace = await self.namespace()
        except ClusterError:
            namespace = "gpu-operator"
        return await clean_up(self.gateway, namespace, dry_run=dry_run)

    # -- proving ---------------------------------------------------------------------------------

    async def verify(
        self,
        plan: Plan,
        rendered: Rendered | None = None,
        *,
        registry: RegistryClient | None = None,
        no_registry: str = "",
        concurrency: int = 16,
        timeout: float = 30.0,
    ) -> AsyncGenerator[Check | LogLine, None]:
        """Stream every check: operator status, then each GPU node (concurrently), then a summary.

        Without ``registry`` the digest checks are SKIPPED with ``no_registry`` as the reason.
        """
        policy = active_policy(await self.gateway.list_custom(*POLICY))
        drivers = await self.gateway.list_custom(*DRIVERS) if plan.driver.useNvidiaDriverCRD else []
        for check in verifying.policy_checks(plan, policy, drivers):
            yield check
        facts = await self.discover()
        gpu = sorted(facts.gpu_nodes, key=lambda n: n.name)
        if not gpu:
            yield Check("summary", Status.FAIL, "no GPU nodes found (no nvidia.com/gpu.present or NVIDIA PCI label)")
            return
        # CPU-bound for thousands of nodes (render alone ~0.5 s at 5,000): in a thread, so the loop stays live
        rendered = rendered or await asyncio.to_thread(render, plan, facts)
        choices = await asyncio.to_thread(operator_choices, plan, facts)
        ctx = await self._verify_context(
            plan, rendered, registry=registry, timeout=timeout, policy=policy, choices=choices
        )
        ctx.own_tags = {n.name: n.tag_os(plan.operator.version) for n in gpu}
        if registry is None:
            ctx.no_registry = no_registry or "no registry client was given"
        try:
            pages = verifying.driver_pod_pages(self.gateway, ctx.namespace)
            async with contextlib.aclosing(verifying.verify_nodes(ctx, gpu, concurrency, pages)) as items:
                async for item in items:
                    yield item
        finally:
            self.host_verified |= ctx.host_ok
        yield verifying.summary(ctx, len(gpu))

    async def diagnose(self, plan: Plan, *, nodes: Iterable[str] | None = None) -> AsyncGenerator[Check, None]:
        """After a failure: why each failing GPU node's driver (or validator) pod is not ready.

        Streams one ``diagnosis`` check per representative failing pod (the known failure it shows,
        with the matching log lines and the fix, else its last log lines), one per group of nodes that
        share a state, then a ``diagnosis-summary``. ``nodes``: only these. Reads pods, logs, events
        and nodes only (see :mod:`wizard.cluster.diagnose`).
        """
        namespace = await self.namespace(plan)
        gpu = {n.name: n for n in (await self.discover()).gpu_nodes}
        only = set(nodes) if nodes is not None else None
        checks = diagnosing.diagnose(self.gateway, namespace, gpu, only=only)
        async with contextlib.aclosing(checks):
            async for check in checks:
                yield check

    async def support_files(
        self, plan: Plan | None, *, about: Mapping[str, bytes]
    ) -> AsyncGenerator[support.BundleFile | str, None]:
        """The support bundle's files (``about``: gpu-wizard's own), with progress lines between them.

        Reads the operator's objects, pods, logs, events and GPU node labels and runs ``nvidia-smi -q``
        in sampled driver containers; never a Secret (see :mod:`wizard.cluster.support`).
        """
        namespace = await self.namespace(plan)
        gpu = sorted((await self.discover()).gpu_nodes, key=lambda n: n.name)
        files = support.collect(
            self.gateway, namespace, gpu, driver_enabled=plan.driver_enabled if plan else True, about=about
        )
        async with contextlib.aclosing(files):
            async for item in files:
                yield item

    async def _verify_context(
        self,
        plan: Plan,
        rendered: Rendered | None,
        *,
        registry: RegistryClient | None,
        timeout: float,
        policy: dict[str, Any] | None = None,
        choices: dict[str, dict[str, str]] | None = None,
    ) -> verifying.VerifyContext:
        """Everything the node checks share: namespace, expected images, registry digests, driver pods, live paths."""
        namespace = await self.namespace(plan)
        policy = policy or active_policy(await self.gateway.list_custom(*POLICY))
        expected = {e.node: e.image for e in rendered.node_images} if rendered else {}
        possible = {i for i in expected.values() if i} | {i for c in (choices or {}).values() for i in c.values()}
        digests = await registry.check_many(sorted(possible)) if registry else {}
        toolkit_dir, driver_dir, drop_in = verifying.live_paths(policy)
        return verifying.VerifyContext(
            gateway=self.gateway,
            plan=plan,
            namespace=namespace,
            expected=expected,
            choices=choices or {},
            pods={},
            digests=digests,
            no_registry="",
            toolkit_dir=toolkit_dir,
            driver_dir=driver_dir,
            drop_in=drop_in,
            probe_image=self.probe_image or manager_image(policy, plan.operator.bundle),
            timeout=timeout,
        )
