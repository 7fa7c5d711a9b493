"""The fault matrix's API cells against the real kube-apiserver (issue 24 item 6).

The demo injects these faults itself (`docs/reliability.md`); here the real server produces them:
kube-apiserver stopped and started again while the wizard follows a rollout and between its diff and
its write, a watch answered 410 because etcd was compacted past its resourceVersion (the restarted
server's watch cache no longer holds it), 429 from API Priority and Fairness (a FlowSchema sending the
`wizard` user to a priority level with no seats), and RBAC without one verb. Each ends with nothing
lost (the cluster holds all of the plan or none of it, a change is seen) and one clear line from the
wizard, run in-process as a user runs it.

The faults are about the API server, not the operator: they run against the newest built release only.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.registry import RegistryServer
from tests.realcluster.build import operator_releases
from tests.realcluster.cluster import NAMESPACE, RealCluster
from tests.realcluster.flows import UBUNTU_KERNEL, as_wizard, healthy_host, node, policy_state, wait_for, write
from tests.realcluster.rbac import RBAC, wizard_rbac
from wizard.cluster.facade import Cluster

UPSTREAM_VERSION = "580.126.20"
NODES = [
    node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
    node("gpu-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
    node("gpu-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
]
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"

pytestmark = pytest.mark.parametrize("real_cluster", operator_releases()[-1:], indirect=True)


def upstream(cluster: RealCluster, registry: RegistryServer, folder: Path) -> tuple[Path, list[str]]:
    """Stages for an upstream driver whose image the registry holds; the answers file and registry flags."""
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    digest = registry.push_image("nvidia/driver", tag, content=b"faults")
    cluster.set_stages({f"{registry.host}/nvidia/driver:{tag}": digest}, {}, healthy_host("/usr/local/nvidia"))
    cluster.set_driver_version(UPSTREAM_VERSION)
    plan = write(
        folder / "answers.yaml",
        f"version: 1\noperator:\n  version: {cluster.release}\nmode: upstream\n"
        f"driver:\n  version: '{UPSTREAM_VERSION}'\n  repository: {registry.host}/nvidia\n  image: driver\n"
        f"  source: {registry.host}/nvidia\ntoolkit:\n  installDir: /usr/local/nvidia\n",
    )
    return plan, ["--insecure-registry", registry.host]


def applying(cluster: RealCluster, plan: Path, folder: Path, registry: list[str], *extra: str) -> list[str]:
    return ["apply", "--answers", str(plan), *as_wizard(cluster), "--backup-dir", str(folder), *registry, *extra]


def policies(cluster: RealCluster) -> list[dict[str, Any]]:
    """The ClusterPolicies, asked until the server answers (a kube-apiserver that just started answers
    429 for a moment after /readyz, as its priority-and-fairness configuration loads)."""
    found = cluster.wait_for("the ClusterPolicies", lambda: (cluster.get("/apis/nvidia.com/v1/clusterpolicies"),), 60)
    return list(found[0]["items"])


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("gpu-wizard: error")]


def in_background(work: Any) -> tuple[threading.Thread, list[BaseException]]:
    """`work()` on a thread (the wizard's CLI keeps the main thread: it installs signal handlers)."""
    errors: list[BaseException] = []

    def body() -> None:
        try:
            work()
        except BaseException as error:  # handed to the test, which raises it
            errors.append(error)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, errors


def test_an_apiserver_restart_while_the_rollout_is_followed_loses_nothing(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The operator is held back until kube-apiserver was stopped and started again: `ready` can only reach
    the wizard through the watches it re-opened after the restart (from versions the new server's watch
    cache does not hold: a 410, a list, a watch again)."""
    cluster = real_cluster
    cluster.reset(NODES)
    cluster.stop_operator()
    plan, registry = upstream(cluster, oci_registry, tmp_path)

    def restart_once_applied() -> None:
        wait_for("the wizard's ClusterPolicy", lambda: policies(cluster), 300)
        cluster.restart_apiserver(down=2.0)
        cluster.start_operator()

    thread, errors = in_background(restart_once_applied)
    code, _, err = run(capsys, *applying(cluster, plan, tmp_path, registry, "--yes"))
    thread.join(300)
    assert not errors, errors
    assert code == 0, err
    assert "rollout: ready: ClusterPolicy ready" in err, err
    # the operator, started while kwok's kubelets were re-registering, may pass through notReady once more
    wait_for("the ClusterPolicy to stay ready", lambda: policy_state(cluster) == "ready", 120)


def test_an_apiserver_restart_between_diff_and_write_applies_all_or_nothing(
    real_cluster: RealCluster,
    oci_registry: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kube-apiserver goes away the moment the person confirms: the write meets a server that is down or
    starting. The wizard says so in one line, the cluster holds none of the plan, and once the server is
    back the same command applies it."""
    cluster = real_cluster
    cluster.reset(NODES)
    plan, registry = upstream(cluster, oci_registry, tmp_path)
    restarted: list[threading.Thread] = []

    async def confirm_then_restart(question: str) -> bool:
        cluster.stop_apiserver()
        thread, _ = in_background(cluster.restart_apiserver)
        restarted.append(thread)
        return True

    monkeypatch.setattr("wizard.cli.apply._confirm", confirm_then_restart)
    code, _, err = run(capsys, *applying(cluster, plan, tmp_path, registry))
    restarted[0].join(300)
    cluster.wait_for("kube-apiserver back", cluster._readyz, 120)
    assert code != 0 and "Traceback" not in err, err
    # the re-read before the write met no server: one line saying so, and that nothing was applied
    (line,) = error_lines(err)
    assert line.startswith("gpu-wizard: error: nothing applied: reading clusterpolicies/cluster-policy: "), err
    assert "cannot connect to" in line, err
    assert not policies(cluster), "a half-applied plan"
    monkeypatch.undo()
    code, _, err = run(capsys, *applying(cluster, plan, tmp_path, registry, "--yes"))
    assert code == 0 and "rollout: ready: ClusterPolicy ready" in err, err


def test_a_watch_whose_version_etcd_compacted_is_answered_410_and_the_change_still_arrives(
    real_cluster: RealCluster,
) -> None:
    """The wizard's node watch resumes from its list's resourceVersion; etcd compacted past it and the
    restarted server's watch cache starts after it, so the real server answers 410 (an ERROR event); the
    label set meanwhile must still reach the wizard (as a relist and a comparison)."""
    cluster = real_cluster
    cluster.reset(NODES)
    old = cluster.get("/api/v1/nodes")["metadata"]["resourceVersion"]

    def label(value: str) -> None:
        body = {"metadata": {"labels": {"fault-matrix": value}}}
        cluster.request("PATCH", "/api/v1/nodes/gpu-0", body, content_type="application/merge-patch+json")

    async def scenario() -> str:
        async with await Cluster.connect(kubeconfig=str(cluster.kubeconfig("wizard")), timeout=30) as wizard:
            assert len((await wizard.discover()).nodes) == len(NODES)
            for i in range(20):
                label(f"churn-{i}")
            assert cluster.compact_etcd() > int(old)
            await asyncio.to_thread(cluster.restart_apiserver)
            assert _watch_answer(cluster, old) == 410  # the fault is real: the server says Expired
            label("after-compaction")
            async for kind, facts in wizard.watch_nodes():
                if facts.name == "gpu-0" and facts.labels.get("fault-matrix") == "after-compaction":
                    return kind
            raise AssertionError("the watch ended")

    assert asyncio.run(asyncio.wait_for(scenario(), 180)) == "MODIFIED"


def _watch_answer(cluster: RealCluster, version: str) -> int:
    """The code of the first answer to a watch from `version`: the HTTP status, or an ERROR event's code."""
    request = urllib.request.Request(
        f"{cluster.server}/api/v1/nodes?watch=true&resourceVersion={version}&timeoutSeconds=1",
        headers={"Authorization": f"Bearer {cluster.tokens['admin']}"},
    )
    context = ssl.create_default_context(cafile=str(cluster.pki["ca"]))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            first = json.loads(answer.readline())
    except urllib.error.HTTPError as error:
        return error.code
    return int(first["object"].get("code") or 200) if first["type"] == "ERROR" else 200


STARVED = "gpu-wizard-starved"


@contextlib.contextmanager
def no_seats_for_the_wizard(cluster: RealCluster) -> Iterator[None]:
    """API Priority and Fairness sends every request of user `wizard` to a priority level with no seats
    that rejects what it cannot seat. The real server still runs one request when none is running (so
    that a level can make progress): a lone request passes, concurrent ones get 429 with Retry-After: 1
    (and a plain-text body, not a Status). Removed afterwards."""
    limited = {"nominalConcurrencyShares": 0, "lendablePercent": 0, "borrowingLimitPercent": 0}
    level = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": STARVED},
        "spec": {"type": "Limited", "limited": {**limited, "limitResponse": {"type": "Reject"}}},
    }
    everything = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}
    schema = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": STARVED},
        "spec": {
            "priorityLevelConfiguration": {"name": STARVED},
            "matchingPrecedence": 100,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [{"kind": "User", "user": {"name": "wizard"}}],
                    "resourceRules": [everything],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                }
            ],
        },
    }
    cluster.request("POST", f"{FLOWCONTROL}/prioritylevelconfigurations", level)
    cluster.request("POST", f"{FLOWCONTROL}/flowschemas", schema)
    try:
        cluster.wait_for("APF to reject the wizard's concurrent requests", lambda: 429 in _concurrent(cluster), 60)
        yield
    finally:
        cluster.request("DELETE", f"{FLOWCONTROL}/flowschemas/{STARVED}")
        cluster.request("DELETE", f"{FLOWCONTROL}/prioritylevelconfigurations/{STARVED}")
        cluster.wait_for("APF to seat the wizard again", lambda: set(_concurrent(cluster)) == {200}, 60)


def _concurrent(cluster: RealCluster, n: int = 12) -> list[int]:
    """The status of `n` concurrent requests of the wizard user."""

    def status(_: int) -> int:
        try:
            cluster.request("GET", "/api/v1/nodes?limit=1", user="wizard")
        except urllib.error.HTTPError as error:
            return error.code
        return 200

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(status, range(n)))


class SeatTaker:
    """Threads that keep sending the wizard user's requests (back to back, on kept-alive connections) so the
    starved level's one seat is mostly taken: the wizard's own requests then meet 429 whatever its timing
    (without it, a loaded machine spaced the wizard's requests so far apart that none overlapped). Counts
    the 429s it got itself, which are not the wizard's."""

    def __init__(self, cluster: RealCluster, threads: int = 3) -> None:
        self.cluster, self.threads = cluster, threads
        self.rejected = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._running: list[threading.Thread] = []

    def _take(self) -> None:
        parts = urllib.parse.urlsplit(self.cluster.server)
        context = ssl.create_default_context(cafile=str(self.cluster.pki["ca"]))
        connection = http.client.HTTPSConnection(parts.hostname or "", parts.port, context=context, timeout=30)
        headers = {"Authorization": f"Bearer {self.cluster.tokens['wizard']}"}
        while not self._stop.is_set():
            try:
                connection.request("GET", "/api/v1/nodes?limit=500", headers=headers)
                answer = connection.getresponse()
                answer.read()
            except OSError:
                connection.close()
                continue
            if answer.status == 429:
                with self._lock:
                    self.rejected += 1
        connection.close()

    def __enter__(self) -> SeatTaker:
        self._running = [threading.Thread(target=self._take, daemon=True) for _ in range(self.threads)]
        for thread in self._running:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._running:
            thread.join(timeout=35)


def _rejected(cluster: RealCluster) -> float:
    """How many requests APF rejected at the starved level so far (the server's own metric)."""
    request = urllib.request.Request(
        f"{cluster.server}/metrics", headers={"Authorization": f"Bearer {cluster.tokens['admin']}"}
    )
    context = ssl.create_default_context(cafile=str(cluster.pki["ca"]))
    with urllib.request.urlopen(request, context=context, timeout=30) as answer:
        text = answer.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("apiserver_flowcontrol_rejected_requests_total{") and f'priority_level="{STARVED}"' in line
    )


def test_429_from_priority_and_fairness_is_waited_out_or_one_line(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With one seat for all of the wizard's requests, its concurrent ones (preflight's access reviews,
    discovery's read-ahead, verification's execs) meet 429: it waits the Retry-After and goes on, or
    says in one line that the server is overloaded; the cluster holds all of the plan or none of it."""
    cluster = real_cluster
    cluster.reset(NODES)
    plan, registry = upstream(cluster, oci_registry, tmp_path)
    with no_seats_for_the_wizard(cluster):
        before = _rejected(cluster)
        with SeatTaker(cluster) as taker:
            code, _, err = run(capsys, *applying(cluster, plan, tmp_path, registry, "--yes"))
            applied = code, err
            code, out, err = run(capsys, "verify", "--answers", str(plan), *as_wizard(cluster), *registry)
            verified = code, out, err
        rejected = _rejected(cluster) - before - taker.rejected
    print(f"APF rejected {rejected:.0f} of the wizard's requests")
    assert rejected > 0, "the wizard never met a 429: the test proves nothing"
    code, err = applied
    assert "Traceback" not in err, err
    if code == 0:
        assert "rollout: ready: ClusterPolicy ready" in err, err
    else:
        assert len(error_lines(err)) == 1 and "Too many requests" in err, err
        assert not policies(cluster), "a half-applied plan"
        return
    code, out, err = verified
    assert "Traceback" not in out + err, out + err
    assert code == 0 or all(
        "Too many requests" in line for line in out.splitlines() if line.startswith("✗ nvidia-smi")
    ), out


def test_rbac_without_one_verb_is_named_before_anything_is_applied(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Role loses `create` on pods/exec (verification's nvidia-smi): preflight names it and applies
    nothing; with the Role whole the plan applies; without the verb again, verification says per node
    that the server forbade the exec, in one line each, and never reports the node verified."""
    cluster = real_cluster
    cluster.reset(NODES)
    plan, registry = upstream(cluster, oci_registry, tmp_path)
    whole = _role(cluster)
    try:
        _set_role(cluster, _without(whole, "pods/exec", "create"))
        code, _, err = run(capsys, *applying(cluster, plan, tmp_path, registry, "--yes"))
        assert code != 0 and "Traceback" not in err, err
        denied = [line for line in err.splitlines() if "pods/exec" in line]
        assert len(denied) == 1 and "create" in denied[0], err
        assert "preflight failed; nothing applied" in err, err
        assert not policies(cluster)

        _set_role(cluster, whole)
        code, _, err = run(capsys, *applying(cluster, plan, tmp_path, registry, "--yes"))
        assert code == 0 and "rollout: ready: ClusterPolicy ready" in err, err

        _set_role(cluster, _without(whole, "pods/exec", "create"))
        code, out, err = run(capsys, "verify", "--answers", str(plan), *as_wizard(cluster), *registry)
        assert code != 0 and "Traceback" not in err, out + err
        smi = [line for line in out.splitlines() if line.startswith(("✓ nvidia-smi", "✗ nvidia-smi"))]
        # the real server's 403 says only 'pods "…" is forbidden: ': the wizard names what an exec needs
        needs = "is forbidden; an exec needs get and create on pods/exec in namespace gpu-operator"
        assert len(smi) == 2 and all(line.startswith("✗") and line.endswith(needs) for line in smi), out
        assert "kubelet" not in out and "ask a cluster admin" in out, out
        assert "all 2 GPU nodes verified" not in out
    finally:
        _set_role(cluster, whole)


def _role(cluster: RealCluster) -> dict[str, Any]:
    (role,) = [o for o in wizard_rbac(NAMESPACE) if o["kind"] == "Role"]
    return role


def _without(role: dict[str, Any], resource: str, verb: str) -> dict[str, Any]:
    rules = [
        {**rule, "verbs": [v for v in rule["verbs"] if not (resource in rule["resources"] and v == verb)]}
        for rule in role["rules"]
    ]
    return {**role, "rules": rules}


def _set_role(cluster: RealCluster, role: dict[str, Any]) -> None:
    """The wizard's Role replaced (PUT: a rule or verb left out is gone), and the change in force."""
    path = f"/apis/{RBAC}/v1/namespaces/{NAMESPACE}/roles/{role['metadata']['name']}"
    live = cluster.get(path)
    cluster.request(
        "PUT", path, {**role, "metadata": {**role["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}}
    )
