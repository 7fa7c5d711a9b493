"""Verify's probe pods pull from the registry the cluster pulls from, also under the NVIDIADriver CRD (issue 35's walk).

eks-ubuntu-mirror: the nodes reach only artifactory.corp.example, where the operator came from; the newcomer's plan
(two Ubuntu releases) takes one NVIDIADriver per OS, so the ClusterPolicy keeps no driver manager of its own. Verify
took the chart's default image at nvcr.io for its host probes then: every GPU node failed with ErrImagePull after a
rollout that had succeeded.
"""

from __future__ import annotations

from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.facade import Cluster
from wizard.cluster.verification import proving
from wizard.engine.plan import Plan

ANSWERS = {
    "version": 1,
    "mode": "upstream",
    "operator": {"version": "v26.7.0", "namespace": "gpu-operator"},
    "driver": {
        "source": "nvcr.io/nvidia",
        "image": "driver",
        "operandRegistry": "artifactory.corp.example",
        "repository": "artifactory.corp.example/nvidia",
        "useNvidiaDriverCRD": True,
        "version": "580.126.20",
    },
}
#: The ClusterPolicy such a plan leaves in the cluster: its driver section slim (the NVIDIADrivers hold the rest).
SLIM_POLICY = {"spec": {"driver": {"enabled": True, "useNvidiaDriverCRD": True}}}


async def test_verify_probes_with_the_driver_manager_of_the_private_registry(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("eks-ubuntu-mirror", step_delay=0.0)
    plan = Plan.model_validate(ANSWERS)
    async with await Cluster.connect(kubeconfig=str(demo.kubeconfig_path)) as cluster:
        await cluster.preflight()
        ctx = await proving.verify_context(cluster.session, plan, None, registry=None, timeout=5.0, policy=SLIM_POLICY)
    assert ctx.probe_image == "artifactory.corp.example/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
