"""The host check before apply, as the TUI runs it: on its own once the nodes are known, bounded by a sample.

The node doctor's host checks (nouveau, Secure Boot, a host driver, dkms, headers, free space) and the noexec or
read-only check of the driver's and toolkit's folders (those of the answers so far, the wizard's defaults for the
rest: :func:`screens.findings.answer_folders`) run through the host probe (``Cluster.host_states``) on
:func:`wizard.engine.hostsample.host_sample`'s nodes: every GPU node up to 64, else two per (kernel, OS) group, the rest when the user asks (Nodes' "Check all hosts"). The Nodes step
starts it as soon as discovery ends; Preview runs it when Nodes was left before it finished, so no host
problem waits for the rollout to be found. The states are kept on the :class:`~screens.state.WizardState` and
judged against the plan of the moment (:func:`screens.findings.host_groups`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from screens.state import WizardState


def release_of(state: WizardState) -> str:
    """The operator release the nodes' OS tags are read for (the answer, else the running one, else the default)."""
    from wizard.engine.plan import DEFAULT_RELEASE

    detected = getattr(state.preflight, "operator_release", "") or ""
    return str(state.get("operator.version") or detected or DEFAULT_RELEASE)


def wanted(state: WizardState) -> bool:
    """A host check should start by itself: connected, GPU nodes known, none finished for this cluster yet."""
    facts = state.facts
    return state.cluster is not None and facts is not None and bool(facts.gpu_nodes) and not state.host_checked


async def run_host_check(
    state: WizardState, *, everything: bool = False, progress: Callable[[int, int], None] | None = None
) -> None:
    """Probe the sampled (or, with ``everything``, all) GPU nodes' hosts; the states land on ``state`` once done.

    ``progress(done, total)`` is called as each node finishes. Cancelled (the step was left), nothing is kept.
    """
    from screens.findings import answer_folders, doctor_target
    from wizard.engine.hostdoctor import HostState
    from wizard.engine.hostsample import host_sample

    facts = state.facts
    if facts is None:
        return
    sample = host_sample(facts, release_of(state), everything=everything)
    if not sample.nodes:
        return
    states: dict[str, HostState] = {}
    if progress is not None:
        progress(0, len(sample.nodes))
    folders = tuple(answer_folders(state))
    async for item in state.connected().host_states(doctor_target(state), list(sample.nodes), folders=folders):
        if isinstance(item, HostState):
            states[item.node] = item
            if progress is not None:
                progress(len(states), len(sample.nodes))
    state.host_states = states
    state.host_drivers = {name: s.host_driver for name, s in states.items() if not s.error}
    state.host_checked = sample.describe()
    state.host_rest = sample.rest
    state.host_folders = folders
    if state.path_checks_from:  # Paths had taken the last host check's folder answers: this one's replace them
        state.path_checks, state.path_checks_from = None, ""
