"""kwok's behaviour in the real-cluster lane: its stages and the exec it answers, as API objects.

kwok runs with `--enable-crds=Stage,ClusterExec`, so the stages live in the API server and a test can
change them while the cluster runs (a new image's digest, a node whose kubelet "pulled" a stale image).
The stages are kwok's own `fast` set from its module, with one change to `pod-ready`: each container's
status gets an `imageID`, `<repository>@<digest>`, the digest being the one the test's registry gave
for that image (a real kubelet reports what it pulled) or, for images the test did not push, a stable
digest made from the image name. A node named in `stale` reports another digest, as a node would
that still runs a re-pushed tag.

Exec: only the driver container answers, and only `nvidia-smi`: kwok runs exec commands on this
machine, so its PATH holds one folder with one fake `nvidia-smi` that prints a real output from
../shared/fixtures/nvidia-smi. Nothing the wizard sends is ever run by a shell.

Host probe: its pods are answered by the `probe-ready` stage from each node's host facts
(tests/realcluster/kwokhost.py); pulls from a registry host the cluster cannot reach fail as a kubelet's
would (tests/realcluster/kwokpull.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.realcluster.build import Built
from tests.realcluster.kwokhost import PROBE_NAME, HostFacts, probe_stage
from tests.realcluster.kwokpull import pull_stages, selector_rule
from wizard.engine.operator_names import DRIVER_CONTAINER

STOCK_CONTAINER = """      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true"""
STAGE_FILES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)


def name_digest(image: str) -> str:
    """The digest kwok reports for an image the test's registry does not hold."""
    return "sha256:" + hashlib.sha256(image.encode()).hexdigest()


def _image_id_line(digests_var: str) -> str:
    repo = '(regexReplaceAll ":[^:/@]+$" .image "")'
    fallback = '(printf "sha256:%s" (sha256sum .image))'
    return f'        imageID: {{{{ printf "%s@%s" {repo} (default {fallback} (get {digests_var} .image)) | Quote }}}}'


def _dict_literal(mapping: dict[str, str]) -> str:
    return "dict " + " ".join(f"{json.dumps(k)} {json.dumps(v)}" for k, v in sorted(mapping.items()))


def _pod_ready(stock: str, name: str, digests: dict[str, str], nodes: list[str], *, exclude: bool) -> str:
    """The stock pod-ready stage with an imageID per container, limited to (or excluding) `nodes`."""
    text = stock.replace("name: pod-ready", f"name: {name}", 1)
    head = "    statusTemplate: |\n"
    text = text.replace(head, head + f"      {{{{ $digests := {_dict_literal(digests)} }}}}\n", 1)
    if STOCK_CONTAINER not in text:
        raise ValueError("kwok's pod-ready stage changed: its container block is not where the lane expects it")
    text = text.replace(
        STOCK_CONTAINER, STOCK_CONTAINER.replace("ready: true", "ready: true\n" + _image_id_line("$digests")), 1
    )
    if nodes:
        selector = "    matchExpressions:\n"
        values = "".join(f"      - {json.dumps(n)}\n" for n in nodes)
        operator = "NotIn" if exclude else "In"
        text = text.replace(
            selector,
            selector + f"    - key: '.spec.nodeName'\n      operator: '{operator}'\n      values:\n{values}",
            1,
        )
    return text


def _exclude(text: str, rule: str) -> str:
    """``text`` (a Stage) with one more matchExpressions item."""
    selector = "    matchExpressions:\n"
    return text.replace(selector, selector + rule, 1)


def _not_probes() -> str:
    return f"    - key: '.metadata.labels[\"app.kubernetes.io/name\"]'\n      operator: 'NotIn'\n      values: ['{PROBE_NAME}']\n"


def stages(
    built: Built,
    digests: dict[str, str],
    stale: dict[str, str],
    hosts: Mapping[str, HostFacts] | None = None,
    kernels: Mapping[str, str] | None = None,
    reachable: Sequence[str] | None = None,
) -> str:
    """Every Stage object, as one multi-document YAML text; `stale` maps a node to the digest it reports,
    `hosts` each node's host (`*`: every node not named; default a clean host) that the host probe's answers
    come from (kwokhost), `kernels` each node's running kernel, `reachable` the registry hosts the nodes can
    pull from (None: every host; kwokpull)."""
    reachable_only = selector_rule(reachable, unreachable=False)
    documents = [_exclude(probe_stage(hosts or {}, kernels or {}), reachable_only), *pull_stages(reachable)]
    for relative in STAGE_FILES:
        stock = (built.kwok_stages / relative).read_text()
        if relative.endswith("pod-ready.yaml"):
            stock = _exclude(_exclude(stock, _not_probes()), reachable_only)
            documents.append(_pod_ready(stock, "pod-ready", digests, sorted(stale), exclude=True))
            for node, digest in sorted(stale.items()):
                stale_digests = {image: digest for image in digests} or {"": digest}
                documents.append(_pod_ready(stock, f"pod-ready-stale-{node}", stale_digests, [node], exclude=False))
        else:
            documents.append(stock)
    return "\n---\n".join(d.strip() for d in documents) + "\n"


FAKE_SH = r"""#!/bin/sh
# The lane's fake `sh` in driver containers. It runs nothing it is given: it answers exactly one
# request, the wizard's `sh -c 'nvidia-smi 2>&1; echo @@gpu-wizard:<nonce>:$?'`, with a real nvidia-smi
# output and the marker line a shell would print, and refuses every other command line.
[ "$#" -eq 2 ] && [ "$1" = "-c" ] || { echo "fake sh: only -c SCRIPT is answered" >&2; exit 126; }
case "$2" in
  'nvidia-smi 2>&1; echo @@gpu-wizard:'*':$?') ;;
  *) echo "fake sh: not the wizard's nvidia-smi step: refused" >&2; exit 126 ;;
esac
marker=${2#'nvidia-smi 2>&1; echo '}
marker=${marker%'$?'}
case "$marker" in
  @@gpu-wizard:*[!0-9a-f:@gpuwizrd-]*) echo "fake sh: unexpected marker" >&2; exit 126 ;;
esac
/bin/cat "SMI_OUTPUT"
echo "${marker}0"
"""


def cluster_exec(fake_bin: Path, smi_output: Path) -> str:
    """The ClusterExec answering `nvidia-smi` in driver containers, and the fake binary it runs."""
    fake_bin.mkdir(parents=True, exist_ok=True)
    script = fake_bin / "nvidia-smi"
    script.write_text(
        f'#!/bin/sh\n# the lane\'s fake nvidia-smi: a real output, whatever the arguments\nexec /bin/cat "{smi_output}"\n'
    )
    script.chmod(0o755)
    shell = fake_bin / "sh"
    shell.write_text(FAKE_SH.replace("SMI_OUTPUT", str(smi_output)))
    shell.chmod(0o755)
    return json.dumps(
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterExec",
            "metadata": {"name": "nvidia-smi"},
            "spec": {
                "selector": {"matchNamespaces": ["gpu-operator"]},
                "execs": [{"containers": [DRIVER_CONTAINER], "local": {"workDir": str(fake_bin)}}],
            },
        }
    )
