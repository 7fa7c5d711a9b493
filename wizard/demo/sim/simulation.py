"""The demo cluster's simulated world: nodes, the GPU Operator, kubelet and what runs in containers."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Any

from wizard.demo.api.store import Store, WatchEvent
from wizard.demo.rules.operator_rules import OperatorRelease
from wizard.demo.scenarios.scenario import Scenario
from wizard.demo.sim import controllers, nodecmd, placement
from wizard.demo.sim.changes import Changes, plain_pod
from wizard.demo.sim.container import make_ctx
from wizard.demo.sim.install import install_scenario, published_images
from wizard.demo.sim.kubelet_sim import Kubelet, PullKey
from wizard.demo.sim.nvd_sim import NVIDIADriverController
from wizard.demo.sim.operand_index import OperandIndex
from wizard.demo.sim.operator_sim import ClusterPolicyController, OperatorInfo, find_operator
from wizard.demo.sim.podlogs import container_log
from wizard.demo.sim.pull import Puller, PullResult
from wizard.demo.sim.simutil import Pacer, Writer, labels_of, read, thaw
from wizard.demo.sim.upgrade_sim import UpgradeController
from wizard.demo.sim.world import NodeView, NodeViews

_SEED_ROUNDS = 200
#: Cached DaemonSet node sets kept at most (one per DaemonSet spec; more only after many spec changes).
_ELIGIBLE_CACHE = 256


@dataclass
class ExecResult:
    """What a command run in a container produced."""

    stdout: bytes
    stderr: bytes
    exit_code: int


def _volumes_ok(pod: dict[str, Any], configmaps: set[tuple[str, str]]) -> bool:
    """Every ConfigMap volume of the pod exists (or is optional), else its containers cannot start."""
    namespace = pod["metadata"].get("namespace", "")
    return all(
        (namespace, v["configMap"].get("name", "")) in configmaps or v["configMap"].get("optional")
        for v in pod["spec"].get("volumes") or []
        if isinstance(v.get("configMap"), dict)
    )


class Simulation:
    """One simulated cluster behind the demo API server."""

    def __init__(self, scenario: Scenario, store: Store) -> None:
        self.scenario = scenario
        self.store = store
        self.specs = {spec.name: spec for spec in scenario.expanded_nodes()}
        self.puller = Puller(
            scenario.registry, published_images(scenario), cached=[w.image for w in scenario.workloads]
        )
        self.policies = ClusterPolicyController(scenario.operator.release)
        self.nvidiadrivers = NVIDIADriverController()
        self.upgrades = UpgradeController()
        self._release = OperatorRelease.parse(scenario.operator.release)
        self.kubelet = Kubelet(self.puller, lambda: self._release, self._run_command)
        self._operands = OperandIndex()
        """The stored pods each node's view reads, kept current by the store listener."""
        self.changes = Changes()
        """What changed since the last tick looked (a full tick's worth, or what a light tick steps)."""
        self.full_ticks = 0
        self.pods_stepped = 0
        """How many full ticks ran and how many pod steps the kubelet took (the demo's own tests read them)."""
        self._node_epoch = 0
        """Bumped by every node write: a DaemonSet's eligible nodes are cached until then."""
        self._eligible: dict[tuple[str, int, int], frozenset[str]] = {}
        self._views = NodeViews(self.specs)
        self._steady: dict[str, tuple[dict[str, Any], NodeView, bool, OperatorRelease]] = {}
        """Pod uid -> what its last step, which wrote nothing, read: a full tick skips it while all is the same."""
        self._jobs_at: float | None = None
        """When (monotonic) a Job's deadline or TTL is due, as of the last full tick."""
        with store.lock:
            for pod in store.iter_objects("pods"):
                self._operands.add(pod)
            store.subscribe(self._on_change)

    def _on_change(self, event: WatchEvent) -> None:
        if event.resource == "pods":
            if event.type == "DELETED":
                self.kubelet.forget(str(event.obj["metadata"].get("uid", "")))
                self._steady.pop(str(event.obj["metadata"].get("uid", "")), None)
            if event.old is not None:
                self._operands.remove(event.old)
            if event.type != "DELETED":
                self._operands.add(event.obj)
        elif event.resource == "nodes":
            self._node_epoch += 1
            if event.type == "DELETED":
                self._views.forget(str(event.obj["metadata"].get("name", "")))
        self.changes.note(event, self.store)

    def _eligible_nodes(self, ds: dict[str, Any], nodes: list[dict[str, Any]]) -> frozenset[str]:
        """:func:`placement.eligible_nodes`, once per DaemonSet spec (generation) and node writes."""
        meta = ds["metadata"]
        key = (str(meta.get("uid", "")), int(meta.get("generation", 1)), self._node_epoch)
        found = self._eligible.get(key)
        if found is None:
            if len(self._eligible) >= _ELIGIBLE_CACHE:
                self._eligible.clear()
            found = self._eligible[key] = placement.eligible_nodes(ds, nodes)
        return found

    def seed(self) -> None:
        """Put the scenario's nodes, namespaces, operator and existing ClusterPolicy into the store; bring up what
        already ran before the demo started (and an upgrade stopped midway)."""
        if not install_scenario(self.store, self.scenario, list(self.specs.values())):
            return
        self._seed_rounds()
        upgrade = self.scenario.upgrade
        if upgrade.to_version and self.scenario.operator.cluster_policy:
            self._seed_upgrade(upgrade.to_version, upgrade.states, upgrade.state_seconds)

    def _seed_rounds(self) -> None:
        for _ in range(_SEED_ROUNDS):  # what was already running before the demo started comes up at once
            writer = Writer(self.store)
            pods, views, keys, requests = self._control(writer)
            results = {req: self.puller.resolve_offline(req[0]) for req in requests}
            self._kubelet(writer, pods, views, keys, results)
            if not writer.changed:
                break

    def _seed_upgrade(self, version: str, states: dict[str, str], state_seconds: float) -> None:
        """An upgrade someone started before the demo: the policy at ``version``, each node stopped in its state."""
        name = ((self.scenario.operator.cluster_policy or {}).get("metadata") or {}).get("name", "")
        stored = self.store.lookup("clusterpolicies", name)
        if stored is None:
            return
        policy = thaw(stored)
        policy["spec"]["driver"]["version"] = version
        self.store.update("clusterpolicies", policy)
        self.upgrades.hold = dict(states)
        self._seed_rounds()
        self.upgrades.release(state_seconds)

    async def tick(self) -> bool:
        """One step of operator reconcile and kubelet progress; True while something changed."""
        if not self.changes.full:
            # Only objects no operator reads changed since a full tick looked at everything.
            return await self._light_tick() if self.changes.pending() else False
        self.changes.clear()
        self.full_ticks += 1
        writer = Writer(self.store)
        pods, views, keys, requests = self._control(writer)
        results = await self.puller.resolve_many(requests) if requests else {}
        self._kubelet(writer, pods, views, keys, results)
        return writer.changed

    def _operator(self) -> OperatorInfo | None:
        info = find_operator(read(self.store, "deployments"), self.scenario.operator.release)
        if info is not None:
            self._release = info.release
        return info

    def _control(
        self, writer: Writer
    ) -> tuple[list[dict[str, Any]], dict[str, NodeView], dict[str, dict[str, PullKey]], set[PullKey]]:
        """Controllers, then which pulls the kubelet will need this tick."""
        operator = self._operator()
        if operator is not None:
            self.policies.reconcile(writer, operator)
            self.nvidiadrivers.reconcile(writer, operator)
            singleton = self.store.lookup("clusterpolicies", self.policies.singleton) or {}
            upgrade_policy = ((singleton.get("spec") or {}).get("driver") or {}).get("upgradePolicy") or {}
            self.upgrades.reconcile(writer, operator.namespace, upgrade_policy)
        controllers.establish_crds(writer)
        nodes = read(self.store, "nodes")
        pods = read(self.store, "pods")
        due = controllers.reconcile_jobs(writer)
        self._jobs_at = None if due is None else time.monotonic() + due
        controllers.reconcile_daemonsets(writer, nodes, pods, self._eligible_nodes)
        owners = controllers.reconcile_deployments(writer, nodes, pods)
        controllers.schedule(writer, nodes, read(self.store, "pods"))
        controllers.collect_garbage(writer, pods, owners)
        pods = read(self.store, "pods")
        views = self._all_views(nodes)
        keys, requests = self._pulls(pods)
        return pods, views, keys, requests

    def _pulls(self, pods: list[dict[str, Any]]) -> tuple[dict[str, dict[str, PullKey]], set[PullKey]]:
        """Which image pulls the kubelet needs for ``pods`` (per pod uid and container), and the distinct ones."""
        secrets: dict[tuple[str, str], dict[str, Any]] = {}
        if any(p.get("spec", {}).get("imagePullSecrets") for p in pods):
            secrets = {
                (s["metadata"].get("namespace", ""), s["metadata"]["name"]): s for s in read(self.store, "secrets")
            }
        keys: dict[str, dict[str, PullKey]] = {}
        requests: set[PullKey] = set()
        for pod in pods:
            node = pod.get("spec", {}).get("nodeName", "")
            for container in self.kubelet.pull_targets(pod):
                if self.kubelet.cached(node, container):
                    continue
                key = self.kubelet.pull_key(pod, container, secrets)
                keys.setdefault(pod["metadata"]["uid"], {})[container["name"]] = key
                requests.add(key)
        return keys, requests

    async def _light_tick(self) -> bool:
        """:meth:`Changes.run_controllers`, then the kubelet for the touched plain pods; what this tick writes
        is sorted again by the listener (a write only a full tick handles makes the next tick a full one)."""
        changes = self.changes
        writer = Writer(self.store)
        jobs_ran, due = await changes.run_controllers(writer, self._eligible_nodes)
        if jobs_ran:
            self._jobs_at = None if due is None else time.monotonic() + due
        keys_now, changes.pods = sorted(changes.pods), set()
        pods = [p for ns, name in keys_now if (p := self.store.lookup("pods", name, ns)) is not None]
        keys, requests = self._pulls(pods)
        results = await self.puller.resolve_many(requests) if requests else {}
        daemonsets = read(self.store, "daemonsets")
        configmaps = self._configmaps()
        pacer, skipped = Pacer(), False
        for pod in pods:
            if pacer.due():
                await pacer.pause()
                daemonsets, configmaps = read(self.store, "daemonsets"), self._configmaps()
            meta = pod["metadata"]
            # Requests ran during the pauses (and the image pulls): a pod written since it was read was
            # queued again by that write, and the next tick steps its new version.
            if self.store.lookup("pods", meta["name"], meta.get("namespace")) is not pod:
                skipped = True
                continue
            node = pod["spec"]["nodeName"]
            node_obj = self.store.lookup("nodes", node)
            if node_obj is None:
                continue
            view = self._views.view(node_obj, self._operands.on(node), daemonsets)
            uid_keys = keys.get(pod["metadata"]["uid"], {})
            self.pods_stepped += 1
            self.kubelet.step(writer, pod, view, results, uid_keys, _volumes_ok(pod, configmaps))
        return writer.changed or skipped

    def _configmaps(self) -> set[tuple[str, str]]:
        return {(c["metadata"].get("namespace", ""), c["metadata"]["name"]) for c in read(self.store, "configmaps")}

    def _all_views(self, nodes: list[dict[str, Any]]) -> dict[str, NodeView]:
        """Every node's view, each the same object as last time unless what it reads changed."""
        daemonsets = read(self.store, "daemonsets")
        return {
            n["metadata"]["name"]: self._views.view(n, self._operands.on(n["metadata"]["name"]), daemonsets)
            for n in nodes
        }

    def _kubelet(
        self,
        writer: Writer,
        pods: list[dict[str, Any]],
        views: dict[str, NodeView],
        keys: dict[str, dict[str, PullKey]],
        results: dict[PullKey, PullResult],
    ) -> None:
        """Step every bound pod but a steady one (its last step wrote nothing and nothing it reads changed since);
        a pod waiting for an image pull or its sandbox's start is always stepped."""
        configmaps = self._configmaps()
        release = self._release
        for pod in pods:
            node = pod.get("spec", {}).get("nodeName", "")
            if not node or node not in views:
                continue
            meta = pod["metadata"]
            uid_keys = keys.get(meta["uid"], {})
            view, volumes = views[node], _volumes_ok(pod, configmaps)
            steady = self._steady.get(meta["uid"])
            if steady is not None and not uid_keys and steady == (pod, view, volumes, release):
                continue
            self.pods_stepped += 1
            self.kubelet.step(writer, pod, view, results, uid_keys, volumes)
            if self.store.lookup("pods", meta["name"], meta.get("namespace")) is pod and "containerStatuses" in (
                pod.get("status") or {}
            ):
                self._steady[meta["uid"]] = (pod, view, volumes, release)
        nodes = read(self.store, "nodes")
        views = self._all_views(nodes)
        controllers.node_agents(writer, nodes, views)

    def _context(self, namespace: str, pod_name: str) -> tuple[dict[str, Any], NodeView] | None:
        # The stored objects themselves (exec and the node commands only read them): a deep copy of the pod
        # and its node per exec was a third of the demo's CPU in a 1,000-node verification.
        pod = self.store.lookup("pods", pod_name, namespace)
        if pod is None:
            return None
        node = pod.get("spec", {}).get("nodeName", "")
        node_obj = self.store.lookup("nodes", node) if node else None
        if node_obj is None:
            return None
        return pod, self._views.view(node_obj, self._operands.on(node), read(self.store, "daemonsets"))

    def exec(self, namespace: str, pod: str, container: str, argv: list[str]) -> ExecResult:
        """Run ``argv`` in a container of a running pod, as ``kubectl exec`` would on the node."""
        found = self._context(namespace, pod)
        if found is None:
            return ExecResult(b"", f'Error from server (NotFound): pods "{pod}" not found\n'.encode(), 1)
        obj, view = found
        if view.spec.name in self.scenario.faults.exec_fail_nodes:
            message = f"error: unable to upgrade connection: error dialing backend: dial tcp {view.ip}:10250: connect: connection refused\n"
            return ExecResult(b"", message.encode(), 1)
        ctx = make_ctx(view, obj, container)
        code, out, err = nodecmd.run_argv(ctx, list(argv))
        return ExecResult(out.encode(), err.encode(), code)

    def _run_command(self, pod: dict[str, Any], container: dict[str, Any]) -> tuple[int, str, str]:
        """A container's command, run on its node: (exit code, combined output, its termination message file)."""
        argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
        found = self._context(pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        if not argv or found is None:
            return 0, "", ""
        _, view = found
        ctx = make_ctx(view, pod, container["name"])
        code, out, err = nodecmd.run_argv(ctx, argv)
        path = str(container.get("terminationMessagePath") or "/dev/termination-log")
        return code, out + err, ctx.files.get(path, "")

    def next_wake(self) -> float | None:
        """Seconds until the simulation has something to do without a write (a pod's sandbox start, a Job's
        deadline or TTL, a node's time in an upgrade state), or None."""
        jobs = None if self._jobs_at is None else max(0.0, self._jobs_at - time.monotonic())
        due = [t for t in (self.kubelet.next_start(), jobs, self.upgrades.wake_in()) if t is not None]
        return min(due) if due else None

    def starting(self) -> bool:
        """Whether a pod waits for its sandbox to start (the simulation is not stable yet)."""
        return self.kubelet.next_start() is not None

    def wake(self) -> None:
        """Called when :meth:`next_wake`'s time came: the pods due to start are stepped (a full tick when one
        of them is one an operator reads), and the Jobs when a deadline or TTL came."""
        if self._jobs_at is not None and self._jobs_at <= time.monotonic() + 0.05:
            self.changes.jobs = True
        if self.upgrades.state_seconds:  # an upgrade walks by the clock: a node's time in its state may be up
            self.changes.full = True
        stranded: set[tuple[str, str]] = set()
        for key in self.kubelet.due():
            pod = self.store.lookup("pods", key[1], key[0])
            if pod is None or self.store.lookup("nodes", pod["spec"].get("nodeName", "")) is None:
                stranded.add(key)  # no kubelet will ever start it: stop waking up for it
            elif plain_pod(pod, self.store) is not None:
                self.changes.pods.add(key)
            else:
                self.changes.full = True
        if stranded:
            self.kubelet.forget_pods(stranded)

    def logs(self, namespace: str, pod: str, container: str) -> str:
        """The log of one container (operator components, or a finished command's output)."""
        found = self._context(namespace, pod)
        if found is None:
            return ""
        obj, view = found
        output = self.kubelet.outputs.get((obj["metadata"].get("uid", ""), container))
        if output is not None:
            return output
        if labels_of(obj).get("app") == "gpu-operator":
            stamp = dt.datetime.now(dt.UTC).timestamp()
            return f'{{"level":"info","ts":{stamp:.3f},"logger":"controllers.ClusterPolicy","msg":"Reconciliate ClusterPolicies after node label update"}}\n'
        return container_log(obj, container, view, self._release)
