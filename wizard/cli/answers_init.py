"""``gpu-wizard answers init`` on a cluster: the answers a newcomer gets by pressing Next in the wizard.

It reads what the TUI's steps read (preflight, the nodes, the live policy; for upstream the tags the Driver step
lists; for an empty target the registries its search finds) and takes every default from the same rules
(:mod:`wizard.engine.newcomer` over :mod:`wizard.engine.defaults`), writing each choice with its reason.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import TYPE_CHECKING, Any

from wizard.cli.session import open_cluster

if TYPE_CHECKING:
    from wizard.cluster.facade import Cluster
    from wizard.engine.facts import ClusterFacts
    from wizard.engine.newcomer import NewcomerInputs


def wants_cluster(args: argparse.Namespace) -> bool:
    """A cluster flag was given after ``answers init``: the defaults come from that cluster."""
    return bool(args.cluster_kubeconfig or args.cluster_context or args.cluster_demo or args.cluster_in_cluster)


async def _driver_tags(cluster: Cluster, answers: dict[str, Any], mode: str) -> tuple[list[str] | None, str]:
    """The tags the Driver step lists for a version it has none for (upstream's, or a precompiled branch the
    catalog does not know for the nodes' OS): the target's when named, else the source's."""
    from wizard.engine.naming import image_repository
    from wizard.engine.registry_routes import repository_host

    driver = answers.get("driver") or {}
    where = str(driver.get("repository") or driver.get("source") or "")
    image = str(driver.get("image") or "driver")
    if answers.get("mode") != mode or driver.get("version") or not where:
        return None, where
    async with cluster.open_registry([repository_host(where)]) as registry:
        try:
            return list(await registry.list_tags(image_repository(where, image))), image_repository(where, image)
        except Exception:  # an unreachable registry: the version is left to the user, as in the Driver step
            return None, image_repository(where, image)


async def _offers(cluster: Cluster, facts: ClusterFacts, answers: dict[str, Any], operator_image: str) -> list[Any]:
    """The Driver step's search for an empty target: the registries holding the tags the nodes need."""
    from wizard.engine.defaults import registry_offers, search_answers
    from wizard.engine.naming import image_tag
    from wizard.engine.plan import Plan
    from wizard.engine.render import render

    trial = search_answers(answers)
    if trial is None or (answers.get("driver") or {}).get("repository"):
        return []
    try:
        plan = Plan.model_validate(trial)
    except ValueError:
        return []
    groups = {(image_tag(e.image), e.kernel, e.tag_os) for e in render(plan, facts).node_images if e.image}
    hosts = cluster.private_registries(plan.driver.registryMirrors, operator_image)
    if not groups or not hosts:
        return []
    async with cluster.open_registry(hosts) as registry:
        listing = await cluster.driver_repositories(registry, hosts, plan.driver.image)
    version = str((answers.get("driver") or {}).get("version") or "")
    return registry_offers(listing, plan.driver.image, version, groups, plan.precompiled)


async def _precompiled_tags(cluster: Cluster, facts: ClusterFacts, given: NewcomerInputs) -> list[str] | None:
    """The pull registry's driver tags, listed as the TUI lists them once the nodes are known (the same repository,
    :func:`~wizard.engine.defaults.precompiled_repository`, the same bound): Mode's recommendation takes them."""
    from wizard.cli.hostgate import driver_tags
    from wizard.cluster.core.liveplan import known_release
    from wizard.engine.defaults import precompiled_repository

    where = precompiled_repository(facts, known_release(given.release), operator_image=given.operator_image)
    return await driver_tags(cluster, where) if where else None  # None: the nodes alone recommend, as in the TUI


async def _host_check(cluster: Cluster, facts: ClusterFacts, given: NewcomerInputs) -> tuple[dict[str, str], list[str]]:
    """The host check the Nodes step runs on its own once the nodes are known (the same sample of GPU nodes):
    node -> the host driver's version ("" for none), and the nodes found with Secure Boot on, which both steer
    the Mode step's recommendation."""
    from wizard.cluster.core.liveplan import known_release
    from wizard.engine.hostdoctor import DoctorTarget, HostState
    from wizard.engine.hostsample import host_sample
    from wizard.engine.modes import Mode

    if not facts.gpu_nodes:
        return {}, []
    release = known_release(given.release)
    sample = host_sample(facts, release)
    target = DoctorTarget(
        Mode(facts.recommend_mode({}).value), release=release, toolkit_dir=facts.recommend_toolkit_dir().value
    )
    found: dict[str, str] = {}
    booting: list[str] = []
    async for item in cluster.host_states(target, list(sample.nodes)):
        if isinstance(item, HostState) and not item.error:
            found[item.node] = item.host_driver
            if item.secure_boot:
                booting.append(item.node)
    return found, sorted(booting)


async def gather(args: argparse.Namespace) -> tuple[NewcomerInputs, list[str]]:
    """What the cluster tells the wizard's steps, and the notes on what the file leaves to the cluster."""
    import dataclasses

    from wizard.engine.defaults import default_answers
    from wizard.engine.modes import Mode
    from wizard.engine.newcomer import NewcomerInputs

    mode = Mode(args.mode) if args.mode else None
    async with open_cluster(args) as cluster:
        preflight = await cluster.preflight()
        facts = await cluster.discover()
        live = (await cluster.live_plan()).answers_dict() if preflight.cluster_policy is not None else None
        given = NewcomerInputs(
            facts,
            release=preflight.operator_release,
            namespace=preflight.operator_namespace,
            operator_image=preflight.operator_image,
            live=live,
            mode=mode,
        )
        if live is None and mode is None:
            hosts, booting = await _host_check(cluster, facts, given)
            given = dataclasses.replace(given, host_drivers=hosts, secure_boot=booting)
        if live is None:
            given = dataclasses.replace(given, precompiled_tags=await _precompiled_tags(cluster, facts, given))
        answers = default_answers(
            facts,
            release=given.release,
            namespace=given.namespace,
            operator_image=given.operator_image,
            live=live,
            host_drivers=given.host_drivers,
            mode=mode,
            secure_boot=given.secure_boot,
            precompiled_tags=given.precompiled_tags,
        )
        if live is None:
            from wizard.engine.newcomer import newcomer_answers

            tags, where = await _driver_tags(cluster, answers, Mode.UPSTREAM.value)
            given = dataclasses.replace(given, upstream_tags=tags, tags_from=where)
            if given.upstream_tags is not None:  # the offers search runs with upstream's version set, as in the TUI
                answers = newcomer_answers(given)[0]
            with contextlib.suppress(ValueError):
                given = dataclasses.replace(given, offers=await _offers(cluster, facts, answers, given.operator_image))
    return given, _notes(given)


def _notes(given: NewcomerInputs) -> list[str]:
    """What the file leaves out, and why: the container runtime (read from the nodes) and pull secrets."""
    from wizard.engine.newcomer import newcomer_answers
    from wizard.engine.plan import Plan
    from wizard.engine.runtime import runtime_choice

    answers, _ = newcomer_answers(given)
    notes = []
    try:
        plan = Plan.model_validate(answers)
        runtime = runtime_choice(plan, given.facts).summary()
        notes.append(f"toolkit.runtime: left to the nodes (auto): {runtime}")
    except ValueError:
        notes.append("toolkit.runtime: left to the nodes (auto): read from the GPU nodes' container runtime")
    if answers.get("mode") == "preinstalled":
        return notes  # no driver image is pulled
    notes.append(
        "driver.imagePullSecrets: none: the wizard cannot see whether the registry needs a login; if it does, "
        "name the Secret (in the operator's namespace) here"
    )
    return notes


def init_from_cluster(args: argparse.Namespace) -> tuple[str, str]:
    """(the answers file's text, what it is) for ``answers init`` with a cluster flag."""
    from wizard.cli.common import UsageError
    from wizard.cli.session import run_interruptibly
    from wizard.cluster.errors import ClusterError
    from wizard.engine.newcomer import newcomer_answers, newcomer_yaml

    try:
        given, notes = run_interruptibly(gather(args))
    except ClusterError as exc:
        raise UsageError(f"{exc.message}{f' (hint: {exc.hint})' if exc.hint else ''}") from None
    answers, why = newcomer_answers(given)
    return newcomer_yaml(answers, why, notes), "the wizard's defaults for this cluster"
