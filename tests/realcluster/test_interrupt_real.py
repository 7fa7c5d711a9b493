"""An interrupted `gpu-wizard apply` against the real kube-apiserver: all or nothing, said so, undone.

The window between the ClusterPolicy's write and the NVIDIADriver's is made by the real server itself:
a validating admission webhook (served here over HTTPS, registered as the admin) holds the real,
not-dry-run NVIDIADriver write until the test has signalled the CLI. The CLI runs as a subprocess as
the restricted `wizard` user, as a person runs it; Ctrl-C (and Ctrl-C twice) must leave the cluster with
the whole plan, exit 130 naming the backup, and `gpu-wizard rollback --backup FILE` must then undo it
on the real server, after which the same plan applies again. Signal semantics are covered on the demo by
tests/test_apply_interrupts.py; what only the real server can show is that its admission chain, SSA
and the rollback's deletes agree with what the wizard says it did.
"""

from __future__ import annotations

import base64
import json
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.registry import RegistryServer
from tests.realcluster.build import operator_releases
from tests.realcluster.cluster import RealCluster
from tests.realcluster.flows import UBUNTU_KERNEL, UPSTREAM_VERSION, as_wizard, node, upstream_answers

ROOT = Path(__file__).resolve().parents[2]
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
HOOK = "gpu-wizard-lane-hold-nvidiadrivers"
HOLD_S = 8.0  # below the webhook's 10 s timeout: a test that never releases still ends
NODES = [
    node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
    node("gpu-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
]

pytestmark = pytest.mark.parametrize("real_cluster", operator_releases()[-1:], indirect=True)


class HoldingWebhook:
    """Answers kube-apiserver's AdmissionReviews for NVIDIADrivers: dry runs at once, a real write only
    once `release()` is called (or after HOLD_S). `held` is set when a real write is being held."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.held = threading.Event()
        self.released = threading.Event()
        self.reviews: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                hook.reviews.append(request)
                if not request.get("dryRun"):
                    hook.held.set()
                    hook.released.wait(HOLD_S)
                body = json.dumps(
                    {
                        "apiVersion": "admission.k8s.io/v1",
                        "kind": "AdmissionReview",
                        "response": {"uid": request["uid"], "allowed": True},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)  # the lane's serving certificate: 127.0.0.1, signed by its CA
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}/validate"

    def arm(self) -> None:
        self.held.clear()
        self.released.clear()

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def holding_webhook(real_cluster: RealCluster) -> Iterator[HoldingWebhook]:
    cluster = real_cluster
    hook = HoldingWebhook(cluster.pki["server_cert"], cluster.pki["server_key"])
    hook.thread.start()
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": HOOK},
        "webhooks": [
            {
                "name": "hold.nvidiadrivers.lane.gpu-wizard.invalid",
                "clientConfig": {
                    "url": hook.url,
                    "caBundle": base64.b64encode(cluster.pki["ca"].read_bytes()).decode(),
                },
                "rules": [
                    {
                        "apiGroups": ["nvidia.com"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["nvidiadrivers"],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
            }
        ],
    }
    cluster.request("POST", WEBHOOKS, config)
    try:
        _wait_until_called(cluster, hook)
        yield hook
    finally:
        hook.release()
        cluster.request("DELETE", f"{WEBHOOKS}/{HOOK}")
        hook.server.shutdown()


def _wait_until_called(cluster: RealCluster, hook: HoldingWebhook) -> None:
    """Until kube-apiserver calls the webhook (its configuration reaches the admission chain through an
    informer): an admin's dry-run NVIDIADriver create, repeated; then the reviews start empty."""
    probe = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "NVIDIADriver",
        "metadata": {"name": "lane-webhook-probe"},
        "spec": {"default": False, "driverType": "gpu", "image": "driver"},
    }
    cluster.wait_for(
        "the webhook to be called",
        lambda: cluster.request("POST", "/apis/nvidia.com/v1alpha1/nvidiadrivers?dryRun=All", probe) and hook.reviews,
        30,
    )
    hook.reviews.clear()


def _interrupted_apply(
    cluster: RealCluster, hook: HoldingWebhook, argv: list[str], signals: tuple[signal.Signals, ...]
) -> str:
    """Runs `gpu-wizard ARGV`, signals it while the server holds the NVIDIADriver write; its stderr."""
    hook.arm()
    proc = subprocess.Popen(
        [sys.executable, "-m", "wizard", *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not hook.held.wait(0.1):
            assert proc.poll() is None, f"the apply ended before its NVIDIADriver write: {proc.communicate()[1]}"
            assert time.monotonic() < deadline, "the apply never reached its NVIDIADriver write"
        assert _names(cluster, "/apis/nvidia.com/v1/clusterpolicies") == ["cluster-policy"]  # the first is written
        assert not _names(cluster, "/apis/nvidia.com/v1alpha1/nvidiadrivers")  # the second one is held
        for number, signum in enumerate(signals):
            if number:
                time.sleep(0.3)
            proc.send_signal(signum)
        time.sleep(0.5)  # the signals reach the CLI while its write is still held
        hook.release()
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    return err


def _names(cluster: RealCluster, path: str) -> list[str]:
    return sorted(item["metadata"]["name"] for item in cluster.get(path)["items"])


def test_an_interrupted_apply_completes_names_its_backup_and_is_rolled_back_on_the_real_server(
    real_cluster: RealCluster,
    holding_webhook: HoldingWebhook,
    oci_registry: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster, host = real_cluster, oci_registry.host
    cluster.reset(NODES)
    cluster.stop_operator()  # what is judged is the API objects; the operator would only add status writes
    oci_registry.push_image("nvidia/driver", f"{UPSTREAM_VERSION}-ubuntu22.04", content=b"interrupt")
    plan = upstream_answers(tmp_path, cluster.release, host, extra="  useNvidiaDriverCRD: true\n")
    backups = tmp_path / "backups"
    apply = ["apply", "--answers", str(plan), *as_wizard(cluster), "--yes", "--no-wait", "--backup-dir", str(backups)]
    apply += ["--insecure-registry", host]

    for round_number, signals in enumerate([(signal.SIGINT,), (signal.SIGINT, signal.SIGINT)]):
        err = _interrupted_apply(cluster, holding_webhook, apply, signals)
        assert "interrupted during the apply, which was completed first" in err, err
        if len(signals) > 1:
            assert "finishing the apply first" in err, err
        assert "Traceback" not in err, err
        backup = sorted(backups.iterdir())[round_number]  # each apply writes a new backup, none overwritten
        assert f"to undo it: gpu-wizard rollback --backup {backup}" in err, err
        # fully applied, not half: the held NVIDIADriver write went through after the signal
        assert _names(cluster, "/apis/nvidia.com/v1/clusterpolicies") == ["cluster-policy"]
        drivers = cluster.get("/apis/nvidia.com/v1alpha1/nvidiadrivers")["items"]
        assert drivers and all(d["spec"]["version"] == UPSTREAM_VERSION for d in drivers), drivers
        policy = cluster.get("/apis/nvidia.com/v1/clusterpolicies/cluster-policy")
        assert policy["spec"]["driver"]["useNvidiaDriverCRD"] is True
        # the command the message names undoes it on the real server: the cluster held none of the plan
        code, _, err = run(capsys, "rollback", "--backup", str(backup), *as_wizard(cluster))
        assert code == 0, err
        assert not _names(cluster, "/apis/nvidia.com/v1/clusterpolicies"), err
        assert not _names(cluster, "/apis/nvidia.com/v1alpha1/nvidiadrivers"), err

    reviews = holding_webhook.reviews
    assert any(r.get("dryRun") for r in reviews), "the preview's dry run never reached the webhook"
    assert {r["userInfo"]["username"] for r in reviews} == {"wizard"}  # every write was the restricted user's
