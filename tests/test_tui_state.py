"""The wizard's shared state: every field typed, each step's state declared once with what makes it stale."""

from __future__ import annotations

import typing
from dataclasses import fields

from screens.flow import OWNED, STEPS
from screens.state import WizardState
from wizard.engine.results import Check, ClusterInfo, Status

#: The session's fields: not learnt by a step, never reset by one.
SESSION = {
    "answers", "answers_path", "answers_doc", "answers_given", "replay", "replay_until", "demo", "kubeconfig",
    "context", "chart", "cluster", "info", "step", "load_errors",
}  # fmt: skip


def test_every_field_is_the_sessions_or_owned_by_one_step_and_none_is_any() -> None:
    names = [spec.name for spec in fields(WizardState)]
    owned = [item.field for item in OWNED]
    assert sorted(owned) == sorted(set(owned)), "a field owned by two steps"
    assert set(names) == SESSION | set(owned)
    untyped = [spec.name for spec in fields(WizardState) if "Any" in str(spec.type) and spec.name != "answers"]
    assert untyped == []  # the answers alone are YAML data (dict[str, Any]), checked by the plan model
    hints = typing.get_type_hints(WizardState, vars(__import__("screens.state", fromlist=["x"])) | _type_names())
    assert set(hints) == set(names)


def _type_names() -> dict[str, object]:
    """The names state.py imports only for the type checker, so its annotations resolve here."""
    from ruamel.yaml.comments import CommentedMap

    from wizard.cluster.facade import ApplyPlan, ApplyResult, Cluster, ImageStatus, Preflight
    from wizard.engine.facts import NodeFacts
    from wizard.engine.hostdoctor import HostState
    from wizard.engine.hostfolders import HostPath
    from wizard.engine.render import Rendered
    from wizard.engine.results import LogLine

    return {
        "CommentedMap": CommentedMap, "ApplyPlan": ApplyPlan, "ApplyResult": ApplyResult, "Cluster": Cluster,
        "ImageStatus": ImageStatus, "Preflight": Preflight, "NodeFacts": NodeFacts, "HostState": HostState,
        "HostPath": HostPath, "Rendered": Rendered, "LogLine": LogLine, "Check": Check, "ClusterInfo": ClusterInfo,
    }  # fmt: skip


def _check(message: str) -> Check:
    return Check("x", Status.FAIL, message)


def test_resets_follow_the_steps_declarations() -> None:
    state = WizardState()
    state.images = ["image"]  # type: ignore[list-item]
    state.rendered = object()  # type: ignore[assignment]
    state.registry_versions = ["580.126.20"]
    state.path_checks = [_check("noexec")]
    state.overrides = {"paths": frozenset({"noexec"})}
    state.helm_command = "helm upgrade …"
    state.checks = [_check("verified")]
    state.set("toolkit.installDir", "/opt/toolkit")  # a Paths answer: the images stay, the path checks go
    assert state.images == ["image"] and state.path_checks is None and state.rendered is None
    assert state.overrides == {} and state.helm_command == "" and state.registry_versions == ["580.126.20"]
    state.set("mode", "upstream")  # another registry's tags, another image
    assert state.images == [] and state.registry_versions is None
    assert state.checks == [state.checks[0]] and state.checks[0].message == "verified"  # Verify's: no answer resets

    state.nodes = {"gpu-1": object()}  # type: ignore[dict-item]
    state.host_checked, state.host_rest = "all 1 GPU nodes", 2
    state.references = [_check("ConfigMap missing")]
    state.adopt_cluster(None)  # another cluster: what was learnt from this one goes
    assert state.nodes == {} and (state.host_checked, state.host_rest) == ("", 0)
    assert state.references == [_check("ConfigMap missing")]  # the plan's, not the cluster's: reset by an answer

    state.applied_for = object()  # type: ignore[assignment]
    state.start_over()
    assert state.references == [] and state.applied_for is None and state.answers == {"version": 1}


def test_a_reset_gives_each_state_a_fresh_default() -> None:
    state, other = WizardState(), WizardState()
    state.set("mode", "upstream")
    state.images.append("x")  # type: ignore[arg-type]
    assert other.images == [] and STEPS[0].owns


def test_cluster_info_is_the_adopted_clusters() -> None:
    class Connected:
        info = ClusterInfo(context="ctx", server="https://k8s", demo=False)

    state = WizardState()
    assert state.adopt_cluster(Connected()) is None  # type: ignore[arg-type]
    assert state.info == Connected.info


def test_a_step_run_again_resets_what_it_owns_and_the_upgrade_policy_keeps_the_images() -> None:
    state = WizardState()
    state.checks, state.diagnosis = [_check("verified")], [_check("why")]
    state.path_checks = [_check("noexec")]
    state.reset_step("verify")
    assert state.checks == [] and state.diagnosis == [] and state.path_checks == [_check("noexec")]
    state.images = ["image"]  # type: ignore[list-item]
    state.set("driver.upgradePolicy", {"autoUpgrade": False})  # no image changes with it
    assert state.images == ["image"] and state.rendered is None
