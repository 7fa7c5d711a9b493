"""One registry path: the demo is known by its kubeconfig's marker, and every cluster's image checks
follow registry mirrors (``--registry-mirror``, ``driver.registryMirrors``, the demo's marker).

No engine, CLI or TUI code may learn that it talks to the demo from the server's replies: a demo whose
``/version`` looks like any other cluster is still recognised by its kubeconfig, and a kubeconfig
without the marker pointed at the demo is a real cluster whose checks follow the user's mirrors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from textual.widgets import Static

from screens.app import WizardApp
from screens.widgets.field import AnswerField
from tests.helpers.cluster import connected
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from tests.helpers.tui import SLE_DIGEST, next_to, on_step, set_field
from tests.snapshots.plugin import wait_for
from wizard.cli.main import main
from wizard.cluster.access.kubeconfig import demo_marker
from wizard.cluster.errors import ClusterError
from wizard.cluster.facade import Cluster
from wizard.demo.api import discovery
from wizard.engine.answers import AnswersError, parse_answers
from wizard.engine.plan import check_mirror_source, check_mirror_url, parse_registry_mirror
from wizard.engine.registry_routes import mirror_options

PRESENT = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"
ANSWERS = (
    "version: 1\nmode: precompiled\n"
    "driver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n  source: docker.io/alaudadockerhub\n"
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://mirror.example.com", "https://mirror.example.com"),
        ("https://mirror.example.com:5000/dockerhub/", "https://mirror.example.com:5000/dockerhub"),
        ("http://127.0.0.1:5055", "http://127.0.0.1:5055"),
        ("http://localhost:5000/nvcr.io", "http://localhost:5000/nvcr.io"),
    ],
)
def test_mirror_urls_that_are_accepted(url: str, expected: str) -> None:
    assert check_mirror_url(url) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mirror.example.com", "is not an https:// URL"),
        ("ftp://mirror.example.com", "is not an https:// URL"),
        ("http://mirror.example.com", "plain http is allowed on loopback only"),
        ("https://user:pw@mirror.example.com", "no user, query or fragment"),
        ("https://mirror.example.com/?x=1", "no user, query or fragment"),
        ("https://mirror.example.com/Upper", "lower-case path components"),
        ("https://mirror.example.com\n/x", "control or non-ASCII"),
        ("https://mirror\x1b[2J.example.com", "control or non-ASCII"),
        ("https://" + "a" * 300 + ".com", "longer than 255"),
    ],
)
def test_mirror_urls_that_are_refused(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_mirror_url(url)


def test_sources_and_flags() -> None:
    assert check_mirror_source(" NVCR.io ") == "nvcr.io"
    assert parse_registry_mirror("docker.io=https://mirror.gcr.io") == ("docker.io", "https://mirror.gcr.io")
    for bad, message in (
        ("https://nvcr.io", "not a registry host"),
        ("nvcr.io/nvidia", "not a registry host"),
        ("nv cr.io", "not a registry host like"),
        ("nvcr.io\r", "control"),
    ):
        with pytest.raises(ValueError, match=message):
            check_mirror_source(bad)
    with pytest.raises(ValueError, match="is not SOURCE=MIRROR"):
        parse_registry_mirror("https://mirror.example.com")


def test_the_answers_file_field_is_checked_and_named_with_its_line() -> None:
    plan, _ = parse_answers(ANSWERS + "  registryMirrors:\n    Docker.io: https://mirror.example.com/hub/\n")
    assert plan.driver.registryMirrors == {"docker.io": "https://mirror.example.com/hub"}
    assert plan.answers_dict()["driver"]["registryMirrors"] == {"docker.io": "https://mirror.example.com/hub"}
    assert "registryMirrors" not in parse_answers(ANSWERS)[0].answers_dict()["driver"]  # empty: left out
    with pytest.raises(AnswersError) as caught:
        parse_answers(ANSWERS + "  registryMirrors:\n    nvcr.io: http://mirror.example.com\n", "a.yaml")
    text = str(caught.value)
    assert "a.yaml:7: driver.registryMirrors" in text and "plain http is allowed on loopback only" in text


def test_mirror_options_route_only_the_hosts_asked_about() -> None:
    mirrors = {"nvcr.io": "https://mirror.example.com/nvcr", "docker.io": "http://127.0.0.1:5055"}
    assert mirror_options(mirrors, ["nvcr.io", "docker.io", "quay.io"]) == {
        "mirrors": {"docker.io": "127.0.0.1:5055", "nvcr.io": "mirror.example.com/nvcr"},
        "insecure_registries": ["127.0.0.1:5055"],
    }
    assert mirror_options(mirrors, ["quay.io"]) == {}


def _kubeconfig(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe", pure=True).load(path.read_text())
    return data


async def test_a_demo_whose_version_says_nothing_is_known_by_its_kubeconfig(
    demo_cluster: ClusterFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    plain = {"major": "1", "minor": "33", "gitVersion": "v1.33.4", "platform": "linux/amd64"}
    monkeypatch.setattr(discovery, "version_info", lambda: dict(plain))  # the server now looks like any cluster
    marker = _kubeconfig(demo.kubeconfig_path)["clusters"][0]["cluster"]["extensions"][0]
    assert marker["name"] == "gpu-wizard.dev/demo" and marker["extension"]["simulated"] is True
    async with connected(demo) as cluster:
        assert cluster.info.version == "v1.33.4" and cluster.info.demo
        options = cluster.registry_options(["registry.example.com"])
        async with cluster.open_registry(["registry.example.com"]) as registry:
            found = await registry.check(PRESENT)
    endpoint = demo.url.split("://", 1)[1]
    assert options["mirrors"] == {"registry.example.com": f"{endpoint}/registry.example.com"}
    expected = demo.sim.puller.catalog["registry.example.com/mlops/nvidia-driver"][PRESENT.rsplit(":", 1)[1]]
    assert found.state == "present" and found.digest == expected


def _without_marker(demo_kubeconfig: Path, target: Path) -> Path:
    data = _kubeconfig(demo_kubeconfig)
    for entry in data["clusters"]:
        entry["name"] = entry["cluster"].pop("extensions") and "prod"
    for entry in data["contexts"]:
        entry["name"], entry["context"]["cluster"] = "prod", "prod"
    data["current-context"] = "prod"
    target.write_text(json.dumps(data))  # JSON is YAML: what kubectl and the wizard read
    target.chmod(0o600)
    return target


async def test_a_real_looking_kubeconfig_pointed_at_the_demo_is_a_real_cluster(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    kubeconfig = _without_marker(demo.kubeconfig_path, tmp_path / "config")
    async with await Cluster.connect(kubeconfig=str(kubeconfig)) as cluster:
        assert not cluster.info.demo and cluster.demo_mirrors == {}
        assert cluster.registry_options(["registry.example.com"]) == {}  # ask the registry itself
        mirror = {"registry.example.com": f"{demo.url}/registry.example.com"}
        assert cluster.registry_options(["registry.example.com"], mirror)["mirrors"] == {
            "registry.example.com": f"{demo.url.split('://', 1)[1]}/registry.example.com"
        }


def test_cli_on_a_real_looking_kubeconfig_follows_registry_mirror(
    demo_cluster: ClusterFactory, kubectl: Kubectl, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the marker nothing is rerouted; ``--registry-mirror`` makes the checks ask the mirror."""
    demo = demo_cluster("sle-micro-precompiled")
    kubeconfig = _without_marker(demo.kubeconfig_path, tmp_path / "config")
    answers = tmp_path / "answers.yaml"
    answers.write_text(ANSWERS)
    endpoint = demo.url.split("://", 1)[1]
    cluster = ["--kubeconfig", str(kubeconfig), "--insecure-registry", endpoint]
    mirrors = [f"--registry-mirror=registry.example.com={demo.url}/registry.example.com"]
    backups = str(tmp_path / "backups")

    code = main(["apply", "--answers", str(answers), *cluster, *mirrors, "--yes", "--backup-dir", backups, "--no-wait"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "SIMULATED" not in err + out  # no marker: shown as the real cluster it claims to be
    assert "images: 1 of 1 driver images present where the cluster pulls from" in err
    demo.settle()

    code = main(["verify", "--answers", str(answers), *cluster, *mirrors])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    selector = "app.kubernetes.io/component=nvidia-driver"
    done = kubectl(demo, "get", "pods", "-n", "gpu-operator", "-l", selector, "-o", "json")
    for pod in json.loads(done.stdout)["items"]:
        image_id = next(s["imageID"] for s in pod["status"]["containerStatuses"] if s["name"] == "nvidia-driver-ctr")
        assert f"✓ image-digest {pod['spec']['nodeName']}: {image_id.rsplit('@', 1)[1]} matches the registry\n" in out


def _marker_kubeconfig(path: Path, extension: str) -> Path:
    """The demo's kubeconfig shape with ``extension`` (YAML lines) as its marker's content."""
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: gpu-wizard-demo\n"
        "clusters:\n- name: gpu-wizard-demo\n  cluster:\n    server: https://127.0.0.1:9\n"
        f"    extensions:\n    - name: gpu-wizard.dev/demo\n      extension:\n{extension}"
        "contexts:\n- name: gpu-wizard-demo\n  context: {cluster: gpu-wizard-demo, user: u}\n"
        "users:\n- name: u\n  user: {token: t}\n"
    )
    return path


@pytest.mark.parametrize(
    ("extension", "message"),
    [
        ("        registryMirrors: {nvcr.io: nvcr.example.com}\n", "is not an https:// URL"),
        ("        registryMirrors: {nvcr.io: 'http://10.0.0.1:5000'}\n", "plain http is allowed on loopback only"),
        ("        registryMirrors: [x]\n", "is not a mapping with registryMirrors"),
        ('        "\\e]0;owned\\a"\n', "is not a mapping with registryMirrors"),
        ('        registryMirrors: {"nvcr.io\\r": https://m.example.com}\n', "control or non-ASCII"),
    ],
)
def test_a_malformed_marker_is_one_line_naming_the_file(tmp_path: Path, extension: str, message: str) -> None:
    kubeconfig = _marker_kubeconfig(tmp_path / "config", extension)
    with pytest.raises(ClusterError) as caught:
        demo_marker(str(kubeconfig), "gpu-wizard-demo")
    assert caught.value.message.startswith(f"{kubeconfig}: the gpu-wizard.dev/demo extension of cluster")
    assert message in caught.value.message and "\n" not in caught.value.message


def test_markers_that_are_read(tmp_path: Path) -> None:
    root = tmp_path
    assert demo_marker(str(_marker_kubeconfig(root / "c", "        simulated: true\n")), "x") is None  # no context
    assert demo_marker(str(_marker_kubeconfig(root / "c", "        simulated: true\n")), "gpu-wizard-demo") == {}
    mirrors = "        registryMirrors: {NVCR.io: 'http://127.0.0.1:5055/'}\n"
    assert demo_marker(str(_marker_kubeconfig(root / "d", mirrors)), "gpu-wizard-demo") == {
        "nvcr.io": "http://127.0.0.1:5055"
    }


def test_kubectl_keeps_and_ignores_the_marker(demo_cluster: ClusterFactory, kubectl: Kubectl) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    done = kubectl(demo, "config", "view", "-o", "json")
    assert done.returncode == 0, done.stderr
    cluster = json.loads(done.stdout)["clusters"][0]["cluster"]
    assert cluster["extensions"][0]["name"] == "gpu-wizard.dev/demo"
    assert kubectl(demo, "get", "nodes").returncode == 0


async def test_tui_driver_step_follows_the_registry_mirrors_field(
    tui_env: Path, demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """The TUI on a real-looking kubeconfig: nothing rerouted until the Driver step's mirror field says so."""
    demo = demo_cluster("sle-micro-precompiled", tls=False)  # a plain-http mirror on loopback needs no CA
    kubeconfig = _without_marker(demo.kubeconfig_path, tmp_path / "config")
    app = WizardApp(kubeconfig=str(kubeconfig), report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.state.preflight is not None and on_step(app, "connect"), 30, "preflight")
        assert app.state.info is not None and not app.state.info.demo
        await next_to(pilot, "nodes")
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        await set_field(pilot, "registry-mirrors", "registry.example.com=ftp://x")
        field = app.screen.query_one("#registry-mirrors", AnswerField)
        await wait_for(pilot, lambda: field.has_class("-invalid"), 10, "the field error")
        assert "is not an https:// URL" in str(field.query_one(".field-note", Static).render())
        # pasted rather than typed: every keystroke re-renders the plan, and the path under test is the check
        field.input.value = f"registry.example.com={demo.url}/registry.example.com"
        app.screen.query_one("#driver-repository", AnswerField).input.value = "registry.example.com/mlops"
        await wait_for(pilot, lambda: bool(app.state.images), 20, "the registry check")
        (status,) = app.state.images
        assert status.target.state == "present" and status.target.digest == SLE_DIGEST
        assert app.state.get("driver.registryMirrors") == {"registry.example.com": f"{demo.url}/registry.example.com"}


def test_demo_serve_banner_names_the_mirrors_of_its_marker(demo_cluster: ClusterFactory) -> None:
    from wizard.demo.serve import _banner

    demo = demo_cluster("sle-micro-precompiled")
    line = next(x for x in _banner(demo.cluster).splitlines() if x.strip().startswith("registry:"))
    endpoint = demo.url.split("://", 1)[1]
    assert f"docker.io, nvcr.io, registry.example.com, registry.k8s.io mirrored by {endpoint}" in line
