"""An install on a demo cluster through the facade: prepare, apply, follow the rollout to its end."""

from __future__ import annotations

from pathlib import Path

from wizard.cluster.facade import Cluster
from wizard.engine.plan import Plan
from wizard.engine.render import render


async def install_and_roll_out(cluster: Cluster, plan: Plan, backups: Path) -> str:
    prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
    assert prepared.ok, prepared.errors
    assert (await cluster.apply(prepared, backup_dir=backups, allow_unverified_preinstalled=True)).ok
    final = None
    # the demo's crash loops are real ones (noexec /run never heals): judged over 2 s, not the default 300 s
    async for status in cluster.rollout(plan, interval=0.05, timeout=20, crash_window=2.0):
        final = status
    assert final is not None
    return f"{final.phase}: {final.message}"
