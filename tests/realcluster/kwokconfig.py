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
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from tests.realcluster.build import Built
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


PROBE_NAME = "gpu-wizard-probe"
PROBE_STAGE = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: probe-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.metadata.labels["app.kubernetes.io/name"]'
      operator: 'In'
      values: ['PROBE_NAME']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state:
          terminated: {exitCode: 0, reason: Completed, message: MESSAGE, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        started: true
        restartCount: 0
        state: {running: {startedAt: {{ $now | Quote }}}}
      {{ end }}
      hostIP: "127.0.0.1"
      phase: Running
      startTime: {{ $now | Quote }}
"""


def host_message(results: list[tuple[int, str]]) -> str:
    """A healthy host's answer to the wizard's probe: `{"v":1,"r":[[exit, bytes, base64]]}` (probeset's format)."""
    entries = [[code, len(out.encode()), base64.b64encode(out.encode()).decode()] for code, out in results]
    return json.dumps({"v": 1, "r": entries}, separators=(",", ":"))


def _exclude_probes(text: str) -> str:
    selector = "    matchExpressions:\n"
    rule = f"    - key: '.metadata.labels[\"app.kubernetes.io/name\"]'\n      operator: 'NotIn'\n      values: ['{PROBE_NAME}']\n"
    return text.replace(selector, selector + rule, 1)


def stages(
    built: Built, digests: dict[str, str], stale: dict[str, str], host_results: list[tuple[int, str]] | None = None
) -> str:
    """Every Stage object, as one multi-document YAML text; `stale` maps a node to the digest it reports,
    `host_results` are what every node's host answers to the wizard's host probe (one per step)."""
    quoted = json.dumps(host_message(host_results or []))  # a double-quoted YAML string holding the JSON text
    documents = [PROBE_STAGE.replace("PROBE_NAME", PROBE_NAME).replace("MESSAGE", quoted)]
    for relative in STAGE_FILES:
        stock = (built.kwok_stages / relative).read_text()
        if relative.endswith("pod-ready.yaml"):
            stock = _exclude_probes(stock)
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
