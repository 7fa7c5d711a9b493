"""The pull registry's precompiled tags, listed before the Mode step so its recommendation can follow them.

Once the nodes (and with them the pull registry: the operator's private registry, else the source) are known,
the Nodes step lists the driver repository's tags in a worker bound to it (the Mode step again if it was left
first); :meth:`~wizard.engine.facts.ClusterFacts.recommend_mode` takes them, as ``answers init`` does
(:func:`wizard.engine.defaults.precompiled_repository` names the repository for both).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from screens.state import WizardState


def wanted(state: WizardState) -> bool:
    """A listing should start: connected, GPU nodes known, the tags not read yet."""
    facts = state.facts
    return state.cluster is not None and facts is not None and bool(facts.gpu_nodes) and state.precompiled_tags is None


async def list_precompiled_tags(
    state: WizardState, open_registry: Callable[..., AbstractAsyncContextManager[Any]]
) -> bool:
    """Read the pull registry's driver tags (at most ``LIST_LIMIT``) onto ``state``; False when they could not be
    read (no registry the demo simulates, an unreachable one): the recommendation then goes by the nodes alone."""
    from screens.hostcheck import release_of
    from wizard.engine.defaults import precompiled_repository
    from wizard.engine.precompiled_tags import LIST_LIMIT
    from wizard.engine.registry_routes import repository_host

    facts = state.facts
    if facts is None:
        return False
    operator_image = str(getattr(state.preflight, "operator_image", "") or "")
    where = precompiled_repository(facts, release_of(state), operator_image=operator_image)
    if not where:
        return False
    async with open_registry(hosts=[repository_host(where)]) as registry:
        if registry is None:
            return False
        try:
            tags = await registry.list_tags(where, limit=LIST_LIMIT)
        except Exception:  # an unreachable registry: nothing is known of it, as before the listing
            return False
    state.precompiled_tags, state.precompiled_from = list(tags), where
    return True
