"""A real control plane on loopback: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
(fake kubelets for labelled GPU nodes) and the real GPU Operator of one release.

Each process runs in its own process group (stopped on `stop()`, at interpreter exit and on SIGTERM/
SIGINT through `atexit`), logs to `<workdir>/<name>.log`, and binds only 127.0.0.1 ports picked free.
Three token users: `admin` (system:masters), `wizard` (exactly the permissions gpu-wizard's preflight
lists, `wizard.cluster.core.preflight.permissions`, for every mode) and `gpu-operator` (system:masters, as
the chart's ClusterRole is a template and the operator creates roles for its operands).

The operator reads its manifests from the hard-coded /opt/gpu-operator: it runs in a private mount
namespace (`unshare --mount`) where the release's assets are bind-mounted there, so releases never
share one folder and nothing outside the process sees the mount.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.realcluster import kwokconfig
from tests.realcluster.build import Built
from tests.realcluster.kwokhost import HostFacts, annotated
from tests.realcluster.pki import write_pki
from tests.realcluster.rbac import wizard_rbac

NAMESPACE = "gpu-operator"
USERS = {"admin": "system:masters", "wizard": "", "gpu-operator": "system:masters"}
_LIVE: set[Process] = set()
SMI_FIXTURE_VERSION = "590.48.01"
DEFAULT_SMI = (
    Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "nvidia-smi" / "nvidia-smi_h200_590.48.01.txt"
)


def free_port() -> int:
    """A free loopback port below the kernel's ephemeral range: a port the kernel hands out (bind to 0) can be
    taken as the source port of an outgoing connection before the component binds it ("address already in
    use": kube-controller-manager lost its port that way once)."""
    low, _ = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    while True:
        port = random.randrange(10_000, max(10_001, low))
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


@dataclass(eq=False)
class Process:
    """One component, in a process group of its own."""

    name: str
    args: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, **self.env}
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.args,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
            )
        _LIVE.add(self)

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        if self.popen is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(5)
        _LIVE.discard(self)

    def tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _stop_all() -> None:
    for process in list(_LIVE):
        process.stop(grace=3.0)


atexit.register(_stop_all)


class ClusterStartError(RuntimeError):
    """A component did not come up; the message carries its log's tail."""


class RealCluster:
    """The control plane, kwok and (optionally) the operator, started in order and stopped in reverse."""

    def __init__(self, built: Built, workdir: Path, release: str, reachable: Iterable[str] | None = None) -> None:
        """``reachable``: the registry hosts the nodes can pull from (None: every host); a pod with an image
        elsewhere fails its pull (ErrImagePull, then ImagePullBackOff), see kwokpull."""
        self.built = built
        self.reachable = None if reachable is None else tuple(reachable)
        self._reachable_at_start = self.reachable
        self.operator_repository = self._default_operator_repository()
        """Where the operator's Deployment pulls its image from: nvcr.io/nvidia, or the first reachable registry of
        a cluster that cannot reach nvcr.io (an air-gapped cluster runs its operator from its private registry)."""
        self.kernels: dict[str, str] = {}
        """Each node's running kernel (what its host's ``uname -r`` prints)."""
        self.node_hosts: dict[str, HostFacts] = {}
        """Host facts the nodes brought (kwokhost.HOST_ANNOTATION); `set_stages` naming a node wins."""
        self._stages: tuple[dict[str, str], dict[str, str], Mapping[str, HostFacts]] = ({}, {}, {})
        self._pull_stages = False
        self.smi_output = workdir / "nvidia-smi.txt"
        self.workdir = workdir
        self.release = release
        self.bin = built.bin
        self.ports = {
            name: free_port() for name in ("etcd", "etcd_peer", "api", "kcm", "scheduler", "kwok", "operator")
        }
        self.tokens = {user: os.urandom(16).hex() for user in USERS}
        self.processes: dict[str, Process] = {}
        self.pki: dict[str, Path] = {}
        self._ca_context: ssl.SSLContext | None = None

    # -- wiring ---------------------------------------------------------------------------------
    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['api']}"

    def kubeconfig(self, user: str = "admin") -> Path:
        return self.workdir / f"{user}.kubeconfig"

    def _write_kubeconfigs(self) -> None:
        (self.workdir / "tokens.csv").write_text(
            "".join(
                f'{self.tokens[u]},{u},u-{u},"{g}"\n' if g else f"{self.tokens[u]},{u},u-{u}\n"
                for u, g in USERS.items()
            )
        )
        for user in USERS:
            config = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "real", "cluster": {"server": self.server, "certificate-authority": str(self.pki["ca"])}}
                ],
                "users": [{"name": user, "user": {"token": self.tokens[user]}}],
                "contexts": [{"name": f"real-{user}", "context": {"cluster": "real", "user": user}}],
                "current-context": f"real-{user}",
            }
            self.kubeconfig(user).write_text(json.dumps(config, indent=1))

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Process:
        process = Process(name, args, self.workdir / f"{name}.log", env or {})
        process.start()
        self.processes[name] = process
        return process

    # -- HTTP -----------------------------------------------------------------------------------
    def request(
        self, method: str, path: str, body: Any = None, user: str = "admin", content_type: str = "application/json"
    ) -> Any:
        """One API call; returns the decoded JSON (raises urllib.error.HTTPError on a non-2xx answer)."""
        if self._ca_context is None:
            self._ca_context = ssl.create_default_context(cafile=str(self.pki["ca"]))
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.tokens[user]}")
        if data is not None:
            req.add_header("Content-Type", content_type)
        with urllib.request.urlopen(req, context=self._ca_context, timeout=30) as answer:
            raw = answer.read()
        return json.loads(raw) if raw else None

    def get(self, path: str, user: str = "admin") -> Any:
        return self.request("GET", path, user=user)

    def apply(self, obj: dict[str, Any], manager: str = "realcluster-fixture") -> Any:
        """Server-side apply of one object as the admin."""
        api = obj["apiVersion"]
        kind_plural = {
            "Namespace": "namespaces",
            "ClusterRole": "clusterroles",
            "ClusterRoleBinding": "clusterrolebindings",
            "Role": "roles",
            "RoleBinding": "rolebindings",
            "Node": "nodes",
            "ConfigMap": "configmaps",
            "Deployment": "deployments",
        }[obj["kind"]]
        base = "/api/v1" if api == "v1" else f"/apis/{api}"
        ns = obj["metadata"].get("namespace")
        where = f"/namespaces/{ns}" if ns else ""
        path = f"{base}{where}/{kind_plural}/{obj['metadata']['name']}?fieldManager={manager}&force=true"
        return self.request("PATCH", path, obj, content_type="application/apply-patch+yaml")

    def wait_for(self, what: str, probe: Any, timeout: float, every: float = 0.5) -> Any:
        """Polls `probe()` until it returns something truthy; raises with `what` after `timeout` s."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                result = probe()
            except (urllib.error.URLError, OSError, ValueError, KeyError) as error:
                last, result = error, None
            if result:
                return result
            self._check_alive()
            time.sleep(every)
        raise ClusterStartError(
            f"timed out after {timeout:.0f} s waiting for {what} (last error: {last})\n{self.log_tails()}"
        )

    def _check_alive(self) -> None:
        for process in self.processes.values():
            if process.popen is not None and not process.alive():
                raise ClusterStartError(f"{process.name} exited with {process.popen.returncode}:\n{process.tail()}")

    def log_tails(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.tail(12)}" for p in self.processes.values())

    # -- start ----------------------------------------------------------------------------------
    def start(self, nodes: Iterable[dict[str, Any]], operator: bool = True, installed: bool = True) -> None:
        """``installed=False`` (``OPERATOR=none``): no CRDs, no operator Deployment, no operator; whoever installs
        the chart (gpu-wizard through helm) brings them, and :meth:`start_operator_when_installed` runs it."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.pki = write_pki(self.workdir / "pki")
        self.set_driver_version("")
        self._write_kubeconfigs()
        self._start_etcd()
        self._start_apiserver()
        self._spawn("kube-controller-manager", self._kcm_args())
        self._spawn(
            "kube-scheduler",
            [
                str(self.bin / "kube-scheduler"),
                f"--kubeconfig={self.kubeconfig()}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports['scheduler']}",
                "--v=1",
            ],
        )
        if installed:
            self._install_crds()
        self._install_rbac_and_namespace()
        nodes = list(nodes)
        self.node_hosts = _node_hosts(nodes)
        node_list = [kwok_node(n) for n in nodes]
        self.kernels = _kernels(node_list)
        for node in node_list:
            self.request("POST", "/api/v1/nodes", node)
        self._start_kwok()
        names = {n["metadata"]["name"] for n in node_list}
        self.wait_for("kwok to mark the nodes Ready", lambda: names <= self._ready_nodes(), 60)
        if not installed:
            return
        self._install_operator_deployment()
        if operator:
            self.start_operator()

    def chart_deployment(self) -> dict[str, Any] | None:
        """The operator Deployment a helm install of the chart created (None before)."""
        found = self.get(
            f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments?labelSelector=app.kubernetes.io%2Fcomponent%3Dgpu-operator"
        )
        return next(iter(found["items"]), None)

    def start_operator_when_installed(self, timeout: float = 600) -> None:
        """Once the chart's operator Deployment exists (a helm install), run the real operator as that
        Deployment would: as the chart's ServiceAccount (a token of it: the chart's ClusterRole and Role are
        all it may do, not system:masters), with the Deployment's own env (the operand images the chart set)."""
        deployment = self.wait_for("the chart's operator Deployment", self.chart_deployment, timeout)
        spec = deployment["spec"]["template"]["spec"]
        account = spec.get("serviceAccountName") or "default"
        token = self.kubectl("create", "token", account, "-n", NAMESPACE, "--duration=24h").stdout.strip()
        config = json.loads(self.kubeconfig("gpu-operator").read_text())
        config["users"] = [{"name": "gpu-operator", "user": {"token": token}}]
        self.kubeconfig("chart-operator").write_text(json.dumps(config, indent=1))
        [container] = [c for c in spec["containers"] if c["name"] == "gpu-operator"]
        env = {e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e}
        self.start_operator(user="chart-operator", env=env)

    def _start_etcd(self) -> None:
        e, p = self.ports["etcd"], self.ports["etcd_peer"]
        self._spawn(
            "etcd",
            [
                str(self.bin / "etcd"),
                "--name=n0",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{e}",
                f"--advertise-client-urls=http://127.0.0.1:{e}",
                f"--listen-peer-urls=http://127.0.0.1:{p}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{p}",
                f"--initial-cluster=n0=http://127.0.0.1:{p}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        self.wait_for(
            "etcd /health",
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{e}/health", timeout=2).status == 200,
            30,
            0.2,
        )

    def _start_apiserver(self) -> None:
        w, pki = self.workdir, self.pki
        self._spawn(
            "kube-apiserver",
            [
                str(self.bin / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.ports['api']}",
                f"--tls-cert-file={pki['server_cert']}",
                f"--tls-private-key-file={pki['server_key']}",
                f"--cert-dir={w / 'apiserver-certs'}",
                f"--token-auth-file={w / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki['sa_key']}",
                f"--service-account-signing-key-file={pki['sa_key']}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--kubelet-preferred-address-types=InternalIP,Hostname",
                "--profiling=false",
                "--v=1",
            ],
        )
        self.wait_for("kube-apiserver /readyz", lambda: self._readyz(), 120)

    def _readyz(self) -> bool:
        req = urllib.request.Request(
            self.server + "/readyz", headers={"Authorization": f"Bearer {self.tokens['admin']}"}
        )
        context = ssl.create_default_context(cafile=str(self.pki["ca"]))
        with urllib.request.urlopen(req, context=context, timeout=5) as answer:
            return answer.status == 200

    def _kcm_args(self) -> list[str]:
        controllers = (
            "daemonset-controller,job-controller,garbage-collector-controller,serviceaccount-controller,"
            "namespace-controller,replicaset-controller,deployment-controller,clusterrole-aggregation-controller,"
            "ttl-after-finished-controller,node-lifecycle-controller,pod-garbage-collector-controller"
        )
        return [
            str(self.bin / "kube-controller-manager"),
            f"--kubeconfig={self.kubeconfig()}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['kcm']}",
            "--use-service-account-credentials=false",
            # kwok's heartbeats can run late on a loaded 2-core machine: a node must not turn NotReady (and
            # its pods unavailable) for that, or ClusterPolicy flaps to notReady in the middle of a test
            "--node-monitor-grace-period=600s",
            f"--controllers={controllers}",
            f"--root-ca-file={self.pki['ca']}",
            "--v=1",
        ]

    def _install_crds(self) -> None:
        crds = sorted(self.built.operator_crds(self.release).glob("*.yaml"))
        self.kubectl("apply", "--server-side", *[f"-f={c}" for c in crds])
        for crd in crds:
            name = crd.name.removeprefix("nvidia.com_").removesuffix(".yaml") + ".nvidia.com"
            self.wait_established(f"crd/{name}")

    def wait_established(self, *crds: str) -> None:
        """`kubectl wait --for=condition=Established`, asked again while a CRD just created has no conditions
        yet: kubectl v1.36 then fails at once (".status.conditions accessor error: <nil> is of the type <nil>")."""
        args = ("wait", "--for=condition=Established", "--timeout=60s", *crds)
        self.wait_for(f"{' '.join(crds)} Established", lambda: self.kubectl(*args, check=False).returncode == 0, 90)

    def kubectl(self, *args: str, user: str = "admin", check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.bin / "kubectl"), f"--kubeconfig={self.kubeconfig(user)}", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and proc.returncode != 0:
            raise ClusterStartError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc

    def _install_rbac_and_namespace(self) -> None:
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        for obj in wizard_rbac(NAMESPACE):
            self.apply(obj)

    def _start_kwok(self) -> None:
        crds = sorted(self.built.kwok_crds.glob("bases/*.yaml"))
        self.kubectl("apply", "--server-side", *[f"-f={c}" for c in crds])
        self.wait_established("crd/stages.kwok.x-k8s.io", "crd/clusterexecs.kwok.x-k8s.io")
        self.set_stages({}, {})
        self.kubectl_stdin(
            kwokconfig.cluster_exec(self.workdir / "fakebin", self.smi_output), "apply", "--server-side", "-f", "-"
        )
        home = self.workdir / "kwokhome"
        home.mkdir(exist_ok=True)
        port = self.ports["kwok"]
        self._spawn(
            "kwok",
            [
                str(self.bin / "kwok"),
                f"--kubeconfig={self.kubeconfig()}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-label-selector=type=kwok",
                "--node-ip=127.0.0.1",
                "--node-name=localhost",
                f"--node-port={port}",
                f"--server-address=127.0.0.1:{port}",
                "--cidr=10.244.0.0/16",
                "--node-lease-duration-seconds=40",
                "--enable-crds=Stage,ClusterExec",
            ],
            env={"KWOK_WORKDIR": str(home), "HOME": str(home), "PATH": str(self.workdir / "fakebin")},
        )

    def set_driver_version(self, version: str) -> None:
        """What the nodes' nvidia-smi reports: the real H200 output, its driver version replaced by
        `version` (a node runs the driver it was given); "" keeps the fixture's own."""
        text = DEFAULT_SMI.read_text()
        if version:
            text = text.replace(SMI_FIXTURE_VERSION, version)
        self.smi_output.write_text(text)

    def set_stages(
        self,
        digests: dict[str, str],
        stale: dict[str, str],
        host: HostFacts | Mapping[str, HostFacts] | None = None,
    ) -> None:
        """kwok's stages: `digests` maps an image to the digest its pods report, `stale` a node to the
        digest it reports whatever it runs (see kwokconfig); `host` is what the host probe finds on every
        node (one HostFacts) or per node (node -> HostFacts, `*` for the rest); default a clean host."""
        hosts = {"*": host} if isinstance(host, HostFacts) else dict(host or {})
        self._stages = (dict(digests), dict(stale), hosts)
        self.kubectl_stdin(
            kwokconfig.stages(self.built, digests, stale, {**self.node_hosts, **hosts}, self.kernels, self.reachable),
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            "-",
        )
        if self.reachable is None and self._pull_stages:  # every host reachable again: the pull stages go
            self.kubectl("delete", "stage", "pod-pull-failed", "pod-pull-backoff", "--ignore-not-found", check=False)
        self._pull_stages = self.reachable is not None

    def set_reachable(self, hosts: Iterable[str] | None) -> None:
        """The registry hosts the nodes can pull from from now on (None: every host); the stages change at once."""
        self.reachable = None if hosts is None else tuple(hosts)
        self.set_stages(*self._stages)

    def kubectl_stdin(self, text: str, *args: str) -> None:
        proc = subprocess.run(
            [str(self.bin / "kubectl"), f"--kubeconfig={self.kubeconfig()}", *args],
            input=text,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            raise ClusterStartError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")

    def _ready_nodes(self) -> set[str]:
        items = self.get("/api/v1/nodes")["items"]
        return {
            n["metadata"]["name"]
            for n in items
            if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions") or [])
        }

    def _install_operator_deployment(self) -> None:
        """The operator's Deployment as the chart makes it (the wizard reads the release from its image);
        its pod runs on a kwok node, while the real operator process runs beside the cluster."""
        labels = {"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"}
        self.apply(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "gpu-operator", "namespace": NAMESPACE, "labels": labels},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "gpu-operator"}},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "containers": [
                                {
                                    "name": "gpu-operator",
                                    "image": f"{self.operator_repository}/gpu-operator:{self.release}",
                                }
                            ],
                            "tolerations": [{"operator": "Exists"}],
                        },
                    },
                },
            }
        )

    def _default_operator_repository(self) -> str:
        if self.reachable is None or "nvcr.io" in self.reachable or not self.reachable:
            return "nvcr.io/nvidia"
        return f"{self.reachable[0]}/nvidia"

    def use_operator_repository(self, repository: str) -> None:
        """The operator's Deployment rolled to ``REPOSITORY/gpu-operator:<release>`` (where gpu-wizard reads the
        operator's registry from), back once its new pod runs."""
        self.operator_repository = repository
        self._install_operator_deployment()
        image = f"{repository}/gpu-operator:{self.release}"
        self.wait_for(f"the operator's pod to run {image}", lambda: self._operator_pod_running(image), 90)

    def start_operator(self, user: str = "gpu-operator", env: dict[str, str] | None = None) -> None:
        assets = self.built.operator_assets(self.release)
        port = self.ports["operator"]
        binary = self.built.operator_binary(self.release)
        mount = 'mkdir -p /opt/gpu-operator && mount --bind "$ASSETS" /opt/gpu-operator && exec "$@"'
        unshare = ["unshare", "--mount", "--propagation", "private"] if os.geteuid() == 0 else ["unshare", "-Urm"]
        self._spawn(
            "gpu-operator",
            [
                *unshare,
                "sh",
                "-c",
                mount,
                "sh",
                str(binary),
                "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{port}",
                "--leader-elect=false",
            ],
            env={
                "ASSETS": str(assets),
                "OPERATOR_NAMESPACE": NAMESPACE,
                "VALIDATOR_IMAGE": f"nvcr.io/nvidia/gpu-operator:{self.release}",
                "DRIVER_MANAGER_IMAGE": "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.9.1",
                **(env or {}),
                "KUBECONFIG": str(self.kubeconfig(user)),
                "UNIT_TEST": "true",  # v25.10.1 reads /host-etc/os-release without it; later releases ignore it
            },
        )
        self.wait_for(
            "the operator's /readyz",
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2).status == 200,
            90,
        )

    def reset(self, nodes: Iterable[dict[str, Any]]) -> None:
        """A fresh start for the next flow, on these nodes: the operator stopped (it loads its states once
        per process), the wizard's CRs deleted and their operands collected, the nodes replaced, the
        operator started again."""
        self.stop_operator()
        for plural in ("clusterpolicies", "nvidiadrivers"):
            self.kubectl("delete", f"{plural}.nvidia.com", "--all", "--wait=true", "--timeout=120s", check=False)
        # pods no object owns (driver pods a flow left orphaned) are never collected: one failed flow must not fail
        # the next one on this control plane
        for pod in self.get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]:
            meta = pod["metadata"]
            if not meta.get("ownerReferences") and not meta["name"].startswith("gpu-operator-"):
                with contextlib.suppress(urllib.error.HTTPError):  # gone meanwhile
                    self.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{meta['name']}?gracePeriodSeconds=0")
        self.wait_for("the operands to be collected", lambda: not self._operands(), 120)
        nodes = list(nodes)
        self.node_hosts = _node_hosts(nodes)
        wanted = [kwok_node(n) for n in nodes]
        self.kernels = _kernels(wanted)
        names = {n["metadata"]["name"] for n in wanted}
        for old in self.get("/api/v1/nodes")["items"]:
            self.request("DELETE", f"/api/v1/nodes/{old['metadata']['name']}")
        self.wait_for("the old nodes to go", lambda: not self.get("/api/v1/nodes")["items"], 60)
        for node in wanted:
            self.request("POST", "/api/v1/nodes", node)
        self.wait_for("kwok to mark the nodes Ready", lambda: names <= self._ready_nodes(), 60)
        self.reachable = self._reachable_at_start
        self.set_stages({}, {})
        if self.operator_repository != self._default_operator_repository():
            self.use_operator_repository(self._default_operator_repository())
        self.wait_for("the operator's pod to run again", self._operator_pod_running, 60)
        self.set_driver_version("")
        self.start_operator()

    def _operands(self) -> list[str]:
        found = self.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets")["items"]
        pods = self.get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
        return [d["metadata"]["name"] for d in found] + [
            p["metadata"]["name"] for p in pods if not p["metadata"]["name"].startswith("gpu-operator-")
        ]

    def _operator_pod_running(self, image: str = "") -> bool:
        pods = self.get(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=app%3Dgpu-operator")["items"]
        return any(
            (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")
            and (not image or p["spec"]["containers"][0]["image"] == image)
            for p in pods
        )

    def stop_operator(self) -> None:
        process = self.processes.pop("gpu-operator", None)
        if process:
            process.stop()

    # -- faults (tests/realcluster/test_faults_real.py) -----------------------------------------
    def stop_apiserver(self) -> None:
        """Stops kube-apiserver (SIGTERM to its process group); etcd, kcm, the scheduler, kwok and the
        operator keep running and reconnect once it is back."""
        process = self.processes.pop("kube-apiserver", None)
        if process is not None:
            process.stop()

    def restart_apiserver(self, down: float = 0.0) -> None:
        """kube-apiserver stopped, `down` seconds of nothing listening, started again on the same port with
        the same flags (its watch cache starts empty), back once /readyz answers."""
        self.stop_apiserver()
        time.sleep(down)
        self._start_apiserver()

    def etcd(self, call: str, body: dict[str, Any]) -> Any:
        """One call of etcd's JSON gateway (`/v3/<call>`) on the client port."""
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.ports['etcd']}/v3/{call}", data=json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(req, timeout=30) as answer:
            return json.loads(answer.read())

    def compact_etcd(self) -> int:
        """etcd compacted (physically) up to its current revision, as kube-apiserver does every 5 minutes:
        every older resourceVersion is gone. Returns the revision."""
        revision = int(self.etcd("kv/range", {"key": "Lw=="})["header"]["revision"])  # key "/"
        self.etcd("kv/compaction", {"revision": revision, "physical": True})
        return revision

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            self.processes[name].stop()
        self.processes.clear()

    def keep_logs(self, target: Path) -> None:
        target.mkdir(parents=True, exist_ok=True)
        for log in self.workdir.glob("*.log"):
            shutil.copyfile(log, target / log.name)


def _node_hosts(nodes: Iterable[dict[str, Any]]) -> dict[str, HostFacts]:
    try:
        return annotated(nodes)
    except (ValueError, TypeError) as error:
        raise ClusterStartError(f"a node's host facts: {error}") from None


def _kernels(nodes: Iterable[dict[str, Any]]) -> dict[str, str]:
    return {n["metadata"]["name"]: str(n["status"]["nodeInfo"].get("kernelVersion") or "") for n in nodes}


def kwok_node(node: dict[str, Any]) -> dict[str, Any]:
    """A NodeList item as a kwok-managed node: its labels, taints, capacity and node info kept, its
    conditions and addresses left for kwok's node-initialize stage to write (it fires only while the
    node is not Ready), and `type=kwok`, the label kwok manages by."""
    meta = node.get("metadata") or {}
    name = meta["name"]
    labels = {**(meta.get("labels") or {}), "type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    labels.setdefault("kubernetes.io/arch", "amd64")
    status = node.get("status") or {}
    info = dict(status.get("nodeInfo") or {})
    runtime = str(info.get("containerRuntimeVersion") or "")
    if not runtime.startswith(("containerd://", "docker://", "cri-o://")):
        info["containerRuntimeVersion"] = "containerd://2.0.0"
    info.setdefault("kubeletVersion", "v1.36.3")
    info.setdefault("operatingSystem", "linux")
    info.setdefault("architecture", labels["kubernetes.io/arch"])
    capacity = status.get("capacity") or {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": {"taints": (node.get("spec") or {}).get("taints") or []},
        "status": {"capacity": capacity, "allocatable": status.get("allocatable") or capacity, "nodeInfo": info},
    }
