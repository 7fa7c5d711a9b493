"""The lane's hosts: what each node's host tools print, as data, and the kwok stage that answers the host probe with it.

gpu-wizard's host probe (wizard/cluster/probes/probeset.py) runs a list of steps on each GPU node's host from a
DaemonSet's init container and reads the results from the container's termination message. In the lane
kwok plays the kubelet, so no step runs anywhere: the `probe-ready` stage *reads* the step commands out of
the pod's script (each `o=$(… 2>&1)` line, in order, and each step's byte cap from its `head -c N`) and
answers every one from the node's :class:`HostFacts` (a `grep -o [-m 1] -E PATTERN FILE` by applying the
pattern to the host's file, as grep would), in the probe's own message format
(`{"v":1,"r":[[exit, bytes, base64 of the kept bytes]]}`). Whichever caller asks (the apply's host gate,
doctor, the Paths check, verification), with however many steps, each gets what that host's tools print.
**The script the wizard generated is never executed**: its command lines are only matched against the
answers below, by regular expression, and a command nothing matches is answered as a host without that
tool would (`chroot: failed to run command …`, exit 127).

The answers are the real tools' wording (the same the demo's host tools give, wizard/demo/sim/hostcmd.py).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

HOST_ANNOTATION = "lane.gpu-wizard.dev/host"
"""A NodeList item's annotation giving its host facts as JSON (`{"nouveau": true}`), e.g. for `make real-cluster`."""
RUN_MOUNT = "/run rw,nosuid,nodev,relatime"
ROOT_MOUNT = "/ rw,relatime"
PACKAGE_HOST_IP = "203.0.113.10"
KUBERNETES_MODULES = tuple(
    f"{name} {size} {used} {users} Live 0x0000000000000000"
    for name, size, used, users in (
        ("xt_nat", 16384, 12, "-"),
        ("xt_MASQUERADE", 16384, 6, "-"),
        ("veth", 40960, 0, "-"),
        ("nf_conntrack_netlink", 53248, 0, "-"),
        ("xt_addrtype", 16384, 4, "-"),
        ("br_netfilter", 32768, 0, "-"),
        ("bridge", 421888, 1, "br_netfilter,"),
        ("overlay", 196608, 31, "-"),
        ("xt_conntrack", 16384, 8, "-"),
        ("nf_nat", 57344, 3, "xt_nat,nft_chain_nat,xt_MASQUERADE,"),
        ("nf_conntrack", 184320, 5, "xt_conntrack,nf_nat,xt_nat,nf_conntrack_netlink,xt_MASQUERADE,"),
    )
)
"""The first lines of ``/proc/modules`` (what ``lsmod`` prints) on a Kubernetes node: what the kubelet, kube-proxy
and the CNI loaded after boot, the newest first."""
BOOT_MODULES = (
    "drm_kms_helper 274432 0 - Live 0x0000000000000000",
    "drm 741376 1 drm_kms_helper, Live 0x0000000000000000",
    "nvme 61440 2 - Live 0x0000000000000000",
)
"""The last lines of ``/proc/modules``: what the node loaded first, at boot."""
FREE_MB = 851469
_SQUEEZE = re.compile(r"([ =-])\1+")


@dataclass(frozen=True)
class HostFacts:
    """One node's host, as its tools describe it. The default is a clean host: no nouveau, Secure Boot off, no
    host driver, no dkms, the running kernel's headers installed, the distribution's package host resolving,
    every folder present on a writable exec mount, the NVIDIA toolkit's containerd drop-in under ``toolkit_dir``."""

    nouveau: bool = False
    secure_boot: bool = False
    smi: str = ""
    """A working host driver's ``nvidia-smi`` output ("" no host driver): its version is the host driver's."""
    headers: bool = True
    resolves: bool = True
    toolkit_dir: str = "/usr/local/nvidia"
    read_only: tuple[str, ...] = ()
    """Mount points (``/usr``) that are mounted read-only: a folder below one is not writable."""
    later_modules: tuple[str, ...] = KUBERNETES_MODULES
    """``/proc/modules`` lines above the GPU modules: the modules loaded after them (the list is the newest first).
    A real Kubernetes node's list starts with those the kubelet and the CNI loaded (:data:`KUBERNETES_MODULES`)."""

    @classmethod
    def from_json(cls, text: str) -> HostFacts:
        """Facts from a node's :data:`HOST_ANNOTATION` (a JSON object of these fields); ValueError naming what is wrong."""
        data = json.loads(text)
        fields = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data, dict) or not set(data) <= fields:
            raise ValueError(f"{HOST_ANNOTATION}: a JSON object of {', '.join(sorted(fields))}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    @property
    def driver_version(self) -> str:
        found = re.search(r"Driver Version:\s*([0-9.]+)", self.smi)
        return found.group(1) if found else ""


def _missing(tool: str) -> tuple[int, str]:
    """What `chroot /host TOOL …` prints when the host has no such tool."""
    return 127, f"chroot: failed to run command '{tool}': No such file or directory"


def _squeezed(text: str) -> str:
    """``tr -s ' =-'`` of a streaming step's output, as the probe's script does before keeping it."""
    return _SQUEEZE.sub(r"\1", text)


def _mount(facts: HostFacts, root: str) -> str:
    """findmnt's ``TARGET OPTIONS`` line of the mount at ``root``."""
    line = RUN_MOUNT if root == "/run" else ROOT_MOUNT
    return line.replace(" rw,", " ro,", 1) if root in facts.read_only else line


def _lsmod_line(line: str) -> str:
    """A ``/proc/modules`` line as ``lsmod`` prints it."""
    name, size, used, users = line.split()[:4]
    return f"{name:<19} {size:>8}  {used} {users.rstrip(',').replace('-', '')}".rstrip()


def files(facts: HostFacts) -> dict[str, str]:
    """The host files whose lines the probe greps (``grep -o [-m 1] -E PATTERN FILE``): the stage applies the
    pattern to them itself, as grep would."""
    found = {"/proc/modules": "\n".join(modules_of(facts))}
    if facts.driver_version:
        found["/proc/driver/nvidia/version"] = (
            f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {facts.driver_version}  Tue Nov 18 04:45:03 UTC 2026\n"
            "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)"
        )
    return found


def modules_of(facts: HostFacts) -> list[str]:
    """``/proc/modules``, the newest first: what Kubernetes loaded, then what the node loaded at boot (a host
    driver, ``nouveau``)."""
    modules = [*facts.later_modules]
    if facts.driver_version:  # a host driver, loaded at boot
        modules.append("nvidia 9781248 0 - Live 0x0000000000000000")
    if facts.nouveau:
        modules.append("nouveau 3096576 0 - Live 0x0000000000000000")
    return modules + list(BOOT_MODULES)


def rules(facts: HostFacts, kernel: str) -> list[list[object]]:
    """``[regex, exit code, output]`` per host command, first match wins; the command is the step's argv as the
    probe's script spells it (``shlex.join``), without the ``chroot /host`` in front. ``df`` and ``getent hosts`` are
    answered in the stage itself (their output names their arguments), and so is ``grep -o … FILE`` (from :func:`files`)."""
    version = facts.driver_version
    modules = modules_of(facts)
    out: list[list[object]] = [
        ["^lsmod$", 0, modules],
        [
            "^cat /proc/driver/nvidia/version$",
            *(
                (0, f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}  Tue Nov 18 04:45:03 UTC 2025")
                if version
                else (1, "cat: /proc/driver/nvidia/version: No such file or directory")
            ),
        ],
        [
            "^nvidia-smi --query-gpu=driver_version --format=csv,noheader$",
            *((0, "\n".join([version] * max(1, facts.smi.count("MiB /")))) if version else _missing("nvidia-smi")),
        ],
        ["^nvidia-smi$", *((0, _squeezed(facts.smi.rstrip("\n"))) if version else _missing("nvidia-smi"))],
        ["^uname -r$", 0, kernel],
        ["^mokutil --sb-state$", 0, f"SecureBoot {'enabled' if facts.secure_boot else 'disabled'}"],
        ["^od -An -t u1 ", 0, f"   6   0   0   0   {1 if facts.secure_boot else 0}"],
        ["^dkms status$", *_missing("dkms")],
        [
            "^modinfo -n nvidia$",
            *(
                (0, f"/lib/modules/{kernel}/kernel/drivers/video/nvidia.ko")
                if version
                else (1, "modinfo: ERROR: Module nvidia not found.")
            ),
        ],
        ["^find -L /lib/modules ", 0, f"/lib/modules/{kernel}/build" if facts.headers else ""],
        ["^findmnt .* -T /run(/|$)", 0, _mount(facts, "/run")],
        ["^findmnt ", 0, _mount(facts, "/")],
        ["^test -[ed] ", 0, ""],
        ["^grep BinaryName ", 0, f'BinaryName = "{facts.toolkit_dir}/toolkit/nvidia-container-runtime"'],
        [
            "^ls -d ",
            2,
            "\n".join(
                f"ls: cannot access '{p}': No such file or directory"
                for p in ("/var/lib/rancher/rke2", "/var/lib/rancher/k3s", "/var/snap/microk8s", "/etc/k0s")
            )
            + "\nls: cannot access '/run/crio/crio.sock': No such file or directory\n/run/containerd/containerd.sock",
        ],
    ]
    return out


def annotated(nodes: Iterable[Mapping[str, Any]]) -> dict[str, HostFacts]:
    """The host facts the NodeList items' :data:`HOST_ANNOTATION` gives, by node."""
    out = {}
    for item in nodes:
        meta = item.get("metadata") or {}
        raw = (meta.get("annotations") or {}).get(HOST_ANNOTATION)
        if raw:
            out[str(meta["name"])] = HostFacts.from_json(str(raw))
    return out


def table(hosts: Mapping[str, HostFacts], kernels: Mapping[str, str]) -> dict[str, object]:
    """What the stage answers from: per node its rules, whether names resolve; ``*`` for a node not named."""
    nodes: dict[str, object] = {}
    for name, kernel in sorted(kernels.items()):
        facts = hosts.get(name) or hosts.get("*") or HostFacts()
        nodes[name] = {"rules": rules(facts, kernel), "resolves": facts.resolves, "files": files(facts)}
    fallback = hosts.get("*") or HostFacts()
    default = {"rules": rules(fallback, ""), "resolves": fallback.resolves, "files": files(fallback)}
    return {"nodes": nodes, "default": default}


PROBE_NAME = "gpu-wizard-probe"
# Go template (kwok's, with sprig): the termination message built step by step from the table (TABLE).
_ANSWER = r"""      {{ $table := fromJson TABLE }}
      {{ $host := $table.default }}
      {{ if hasKey $table.nodes .spec.nodeName }}{{ $host = get $table.nodes .spec.nodeName }}{{ end }}
      {{ $script := index (index .spec.initContainers 0).command 2 }}
      {{ $lines := regexFindAll "(?m)^o=\\$\\(.* 2>&1\\)$" $script -1 }}
      {{ $caps := regexFindAll "head -c [0-9]+" $script -1 }}
      {{ $entries := list }}
      {{ range $i, $line := $lines }}
      {{ $cmd := $line | trimPrefix "o=$(" | trimSuffix " 2>&1)" | trimPrefix "chroot /host " }}
      {{ $tool := first (splitList " " $cmd) }}
      {{ $code := 127 }}{{ $out := printf "chroot: failed to run command '%s': No such file or directory" $tool }}
      {{ $found := false }}
      {{ range $host.rules }}{{ if and (not $found) (regexMatch (index . 0) $cmd) }}{{ $code = int (index . 1) }}{{ $out = index . 2 }}{{ $found = true }}{{ end }}{{ end }}
      {{ if regexMatch "^grep -o (-m 1 )?-E '[^']*' \\S+$" $cmd }}
      {{ $pattern := regexReplaceAll "^grep -o (-m 1 )?-E '([^']*)' (\\S+)$" $cmd "${2}" }}
      {{ $file := regexReplaceAll "^grep -o (-m 1 )?-E '([^']*)' (\\S+)$" $cmd "${3}" }}
      {{ if hasKey $host.files $file }}
      {{ $text := get $host.files $file }}
      {{ if hasPrefix "grep -o -m 1 " $cmd }}{{ $text = regexFind (printf "(?m)^.*(?:%s).*$" $pattern) $text }}{{ end }}
      {{ $hits := regexFindAll (printf "(?m)%s" $pattern) $text -1 }}
      {{ $code = ternary 0 1 (gt (len $hits) 0) }}{{ $out = join "\n" $hits }}
      {{ else }}
      {{ $code = 2 }}{{ $out = printf "grep: %s: No such file or directory" $file }}
      {{ end }}
      {{ end }}
      {{ if hasPrefix "df -m --output=avail,target " $cmd }}
      {{ $code = 0 }}{{ $out = printf " Avail Mounted on\n%6d %s" FREE_MB (trimPrefix "df -m --output=avail,target " $cmd) }}
      {{ end }}
      {{ if hasPrefix "getent hosts " $cmd }}
      {{ if $host.resolves }}{{ $code = 0 }}{{ $out = printf "PACKAGE_IP    %s" (trimPrefix "getent hosts " $cmd) }}{{ else }}{{ $code = 2 }}{{ $out = "" }}{{ end }}
      {{ end }}
      {{ $cap := len $out }}{{ if lt $i (len $caps) }}{{ $cap = int (trimPrefix "head -c " (index $caps $i)) }}{{ end }}
      {{ $entries = append $entries (printf "[%d,%d,%s]" $code (len $out) (trunc $cap $out | b64enc | quote)) }}
      {{ end }}
      {{ $message := printf "{\"v\":1,\"r\":[%s]}" (join "," $entries) }}"""

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
ANSWER
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
          terminated: {exitCode: 0, reason: Completed, message: {{ $message | Quote }}, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}
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


def probe_stage(hosts: Mapping[str, HostFacts], kernels: Mapping[str, str]) -> str:
    """The `probe-ready` Stage answering every probe pod from its node's facts (``hosts``: node -> facts, ``*`` for
    every node not named; ``kernels``: node -> its running kernel, what ``uname -r`` prints)."""
    answer = (
        _ANSWER.replace("TABLE", json.dumps(json.dumps(table(hosts, kernels), separators=(",", ":"))))
        .replace("FREE_MB", str(FREE_MB))
        .replace("PACKAGE_IP", PACKAGE_HOST_IP)
    )
    return PROBE_STAGE.replace("PROBE_NAME", PROBE_NAME).replace("ANSWER", answer)
