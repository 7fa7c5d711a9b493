"""Hostile inputs of ``gpu-wizard bundle`` (the GitOps bundle) for the hostile-input catalogue.

Each is refused before anything is written or a cluster is reached: an output folder whose name carries escape
sequences and a newline, an output that exists (a file, a folder with files), an unknown deployer, a chart
reference that is neither a path nor ``oci://``, a local chart for Argo CD.
"""

from __future__ import annotations

from tests.helpers.hostile.case import HostileCase, Special
from tests.helpers.hostile.cases_answers import GOOD_ANSWERS, GOOD_NODES

BUNDLE = ("bundle", "--answers", "{dir}/answers.yaml", "--nodes", "{dir}/nodes.json")
FILES: dict[str, str | bytes | Special] = {"answers.yaml": GOOD_ANSWERS, "nodes.json": GOOD_NODES}

CASES: list[HostileCase] = [
    HostileCase(
        name="bundle output folder named with ESC and a newline in a folder that does not exist",
        argv=(*BUNDLE, "--deployer", "helm", "-o", "{dir}/\x1b[2Jgone\nrm -rf ~/b/x"),
        expect_exit=2,
        files=FILES,
        stderr_has=("its folder does not exist",),
        stdout_lacks=("rm -rf ~",),
    ),
    HostileCase(
        name="bundle output is a file",
        argv=(*BUNDLE, "--deployer", "flux", "-o", "{dir}/nodes.json"),
        expect_exit=2,
        files=FILES,
        stderr_has=("exists and is not an empty folder",),
    ),
    HostileCase(
        name="bundle output folder holds files",
        argv=(*BUNDLE, "--deployer", "argocd", "-o", "{dir}/out"),
        expect_exit=2,
        files={**FILES, "out/keep": ""},
        stderr_has=("exists and is not an empty folder",),
    ),
    HostileCase(
        name="bundle with an unknown deployer",
        argv=(*BUNDLE, "--deployer", "kustomize", "-o", "{dir}/out"),
        expect_exit=2,
        files=FILES,
        stderr_has=("invalid choice: 'kustomize'",),
    ),
    HostileCase(
        name="bundle with a chart that is a URL with a shell command",
        argv=(*BUNDLE, "--deployer", "helm", "--chart", "https://x/$(reboot)", "-o", "{dir}/out"),
        expect_exit=2,
        files=FILES,
        stderr_has=("--chart: ",),
    ),
    HostileCase(
        name="bundle for Argo CD with a local chart",
        argv=(*BUNDLE, "--deployer", "argocd", "--chart", "./charts/gpu-operator", "-o", "{dir}/out"),
        expect_exit=2,
        files=FILES,
        stderr_has=("argocd takes the chart from a repository",),
    ),
]
