"""The real ``gpu-wizard --demo SCENARIO`` walked in tmux at 80×24 with the keyboard, as a newcomer would.

Issue 16's "done when": every scenario reaches Verify, or the documented stop of a failure
scenario, with no crash. The wizard runs in a detached tmux session (a real terminal, the real
console script, a private HOME); keys go in with ``send-keys`` and the screen comes back with
``capture-pane``. The default suite walks ``ubuntu-upstream`` end to end, Connect to a verified
install (about half a minute on two cores); ``GPU_WIZARD_TMUX_ALL=1`` walks every scenario (about
four minutes).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.tmux import GPU_WIZARD, Tmux, needs_tmux, next_step

pytestmark = [needs_tmux, pytest.mark.slow]


@dataclass(frozen=True)
class Walk:
    """A scenario's walk: what a newcomer types, and where the walk ends."""

    scenario: str
    end: str = "✓ verified"
    """Text on screen where the walk ends: a verified install, or the documented stop of a failure scenario."""
    mode_keys: tuple[str, ...] = ()
    """Keys on the Mode step (the recommendation is taken when empty)."""
    version: str = ""
    """Typed over the Driver version (upstream has no default; a precompiled branch is preselected)."""
    repository: str = ""
    """Typed into "Cluster pulls from" (the site's mirror, where the demo registry holds the image)."""


#: Documented stops: a blocking finding holds Next (Paths, Preview), or the rollout fails and says what to do.
PATHS_STOP = "path check failed: fix or tick 'continue anyway'"
PREVIEW_STOP = "fix or tick 'apply anyway'"
ROLLOUT_STOP = "Or undo the apply: gpu-wizard rollback"
#: The 5,000-node walk stops on Apply: its rollout and verification would take minutes.
APPLY_STOP = "7/8 Apply"

WALKS = [
    # the image is only in the mirror's source until the site's mirror is set and filled: Preview holds Apply
    Walk("sle-micro-precompiled", PREVIEW_STOP),
    Walk("preinstalled", mode_keys=("Down", "Down", "Space")),
    Walk("ubuntu-upstream", version="580"),  # nvcr.io holds its kernel's precompiled 580 tag: Precompiled ★
    Walk("existing-install"),
    Walk("mixed-os", version="580"),  # a precompiled 580 tag for both OSes' kernels: Precompiled ★
    Walk("from-nodelist", PREVIEW_STOP),  # SL Micro 6.1: no published precompiled image for its kernel
    Walk("airgapped", version="580.126.20"),
    Walk("noexec-run", PATHS_STOP, version="580.126.20"),
    Walk("missing-tuple", PREVIEW_STOP),
    Walk("large", APPLY_STOP, version="580.126.20"),
    Walk("eks-ubuntu-mirror"),  # upstream 580.126.20 from Artifactory, one NVIDIADriver per Ubuntu release
    Walk("k3s-suse-helm", PATHS_STOP),  # the Helm install's toolkit folder is read-only on SL Micro
]
DEFAULT = {"ubuntu-upstream"}
SELECTED = WALKS if os.environ.get("GPU_WIZARD_TMUX_ALL") == "1" else [w for w in WALKS if w.scenario in DEFAULT]


@pytest.mark.parametrize("walk", SELECTED, ids=[w.scenario for w in SELECTED])
def test_tmux_walk(tmp_path: Path, walk: Walk) -> None:
    tmux = Tmux(tmp_path, [str(GPU_WIZARD), "--demo", walk.scenario])
    try:
        assert walk_to_the_end(tmux, walk) == walk.end, tmux.screen()
    finally:
        tmux.close()


def walk_to_the_end(tmux: Tmux, walk: Walk) -> str:
    """Walk from Connect as far as the scenario goes; returns the text where it ended."""
    tmux.wait_for("✓ operator", timeout=60)
    next_step(tmux, "2/8 Nodes")
    tmux.wait_for("● live", timeout=60)
    next_step(tmux, "3/8 Mode")
    tmux.keys(*walk.mode_keys)
    if next_step(tmux, "4/8 Driver", stop="5/8 Paths") == "4/8 Driver":
        tmux.wait_for("Catalog", "Driver version")
        time.sleep(1)  # the field takes the focus once the step is up
        if walk.version:  # over the preselected default version
            tmux.keys("Home", "C-k")
            tmux.type(walk.version)
        if walk.repository:
            tmux.keys("Tab", "Tab", "Home", "C-k")  # version, source, then "Cluster pulls from"
            tmux.type(walk.repository)
        time.sleep(1.5)  # the registry is asked after a pause in typing
        next_step(tmux, "5/8 Paths")
    # the footer's stop too: under a pre-installed driver the driver-dir note comes first and the summary scrolls
    tmux.wait_for("usable on all", "path problems", "press Check on nodes", PATHS_STOP, timeout=60)
    if next_step(tmux, "6/8 Preview", stop=PATHS_STOP) == PATHS_STOP:
        return PATHS_STOP
    tmux.wait_for("server dry-run accepted", "server dry-run rejected", timeout=120)
    if next_step(tmux, "7/8 Apply", timeout=60, stop=PREVIEW_STOP) == PREVIEW_STOP:
        return PREVIEW_STOP
    if walk.end == APPLY_STOP:
        return APPLY_STOP
    tmux.keys("Enter")
    tmux.wait_for("Apply to", timeout=20)
    tmux.keys("Tab", "Enter")  # focus starts on Cancel
    if tmux.wait_for("ClusterPolicy ready", ROLLOUT_STOP, timeout=180) == ROLLOUT_STOP:
        return ROLLOUT_STOP
    next_step(tmux, "8/8 Verify", timeout=60)
    end = tmux.wait_for("✓ verified", "✗ not verified", timeout=180)
    tmux.keys("C-n")  # Finish
    time.sleep(1)
    assert "stopped on an unexpected error" not in tmux.screen()
    return end
