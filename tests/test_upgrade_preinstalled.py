"""The upgrade plan of a pre-installed policy asks for no driver pod (issue 35's walk, k3s-suse-helm).

The Helm install runs with driver.enabled=false on hosts whose own driver (580.95.05) serves; the only change is the
toolkit's folder. Apply's upgrade plan said "the live policy already asks for these images, but 2 GPU node(s) do not
run theirs: no driver pod" — no driver pod is planned anywhere in that mode.
"""

from __future__ import annotations

from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.facade import Cluster, upgrade_report_lines


async def test_a_pre_installed_plan_misses_no_driver_pod(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("k3s-suse-helm", step_delay=0.0)
    async with await Cluster.connect(kubeconfig=str(demo.kubeconfig_path)) as cluster:
        await cluster.preflight()
        live = await cluster.live_plan()
        assert live.mode.value == "preinstalled"
        target = live.model_copy(update={"toolkit": live.toolkit.model_copy(update={"installDir": "/opt/nvidia"})})
        report = await cluster.prepare_upgrade(target)
    assert report.not_running == {}
    text = "\n".join(upgrade_report_lines(report))
    assert "no driver pod" not in text and "do not run theirs" not in text, text
