"""The Paths step's "Check on nodes": node-side checks before apply, shown per node with the reason."""

from __future__ import annotations

from pathlib import Path

from tests.snapshots.plugin import screen_text, wait_for
from tests.test_tui_flows import connected, demo_app, next_to, set_field
from wizard.probe import PROBE_LABEL


async def test_check_on_nodes_shows_noexec_run_per_node(tui_env: Path) -> None:
    app = demo_app(tui_env, "noexec-run")
    async with app.run_test(size=(100, 40)) as pilot:
        await connected(pilot)
        await next_to(pilot, "nodes")
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        await set_field(pilot, "driver-version", "580.126.20")
        await next_to(pilot, "paths")
        assert "press Check on nodes" in screen_text(app)
        await pilot.click("#check-paths")
        await wait_for(pilot, lambda: "path problems on" in screen_text(app), 20, "the path checks")
        text = " ".join(screen_text(app).split())  # long reasons wrap: compare the words
        for node in ("gpu-a10-01", "gpu-a10-02"):
            assert f"{node} ✓ writable, exec ✗ noexec /run" in text
        assert "✗ path problems on 2 of 2 nodes: gpu-a10-01, gpu-a10-02" in text
        assert (
            "✗ driver-dir on gpu-a10-01, gpu-a10-02: /run/nvidia/driver (to be created in /run): /run is mounted "
            "noexec: the containerized driver's nvidia-smi and libraries must execute from there"
        ) in text
        assert text.count("→ remount /run with exec on the GPU nodes") == 1  # one explanation for both nodes
        pods = await app.state.cluster.gateway.list_pods("gpu-operator", label_selector=PROBE_LABEL)
        assert pods == []  # the probe pods are gone once the results show
