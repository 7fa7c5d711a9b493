"""The container runtime flavour of GPU nodes and the toolkit settings (``toolkit.env``) the operator needs for it.

The GPU Operator's toolkit configures containerd at its default places (``/etc/containerd/config.toml``,
drop-in ``/etc/containerd/conf.d/99-nvidia.toml``, socket ``/run/containerd/containerd.sock``;
``controllers/object_controls.go`` ``getRuntimeConfigFiles`` / ``getRuntimeSocketFile``, the same in
every bundled release). Distributions that run their own containerd keep it elsewhere, and the
toolkit then writes a drop-in nobody reads or cannot signal containerd (operator issues #406, #473,
#522, #623, #992, #1323, #1694; rancher/rke2#3385). Sources of the settings below:

* RKE2 / k3s: socket ``/run/k3s/containerd/containerd.sock`` (docs.rke2.io "GPU Operators", the only
  variable it sets for v25.10 and v26.3); the generated ``config.toml``, never the ``.tmpl`` (issue
  #623, rke2#3385: a template with Go syntax cannot be parsed) as config and config source; the
  drop-in in the folder the generated config imports, ``config.toml.d`` (containerd 1.x) or
  ``config-v3.toml.d`` (2.x) (k3s-io/k3s PR #13680, inherited by RKE2).
* k0s: socket ``/run/k0s/containerd.sock``, config ``/etc/k0s/containerd.toml``, drop-in in the
  folder k0s imports, ``/etc/k0s/containerd.d/`` (docs.k0sproject.io "Runtime"); config read from
  the file, since ``containerd config dump`` breaks with k0s's containerd (operator issue #1323).
* MicroK8s: the three variables of the GPU Operator's getting-started guide (NVIDIA/cloud-native-docs
  ``gpu-operator/getting-started.rst``, "MicroK8s").
* containerd and CRI-O: nothing; the operator's defaults fit.

Every node string read here is untrusted: matched by anchored ASCII patterns only, and only
shown through :func:`~wizard.engine.node_grammar.quoted`.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from wizard.engine.advice import Advice
from wizard.engine.facts import ClusterFacts, NodeFacts
from wizard.engine.node_grammar import quoted
from wizard.engine.plan import AUTO_RUNTIME, Plan

CONTAINERD = "containerd"
CRIO = "cri-o"
RKE2 = "rke2"
K3S = "k3s"
K0S = "k0s"
MICROK8S = "microk8s"
DOCKER = "docker"
UNKNOWN = "unknown"

#: The operator's defaults (``controllers/object_controls.go`` at all three supported releases).
DEFAULT_CONTAINERD_CONFIG = "/etc/containerd/config.toml"
DEFAULT_CONTAINERD_DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
DEFAULT_CONTAINERD_SOCKET = "/run/containerd/containerd.sock"
DEFAULT_CRIO_DROP_IN = "/etc/crio/crio.conf.d/99-nvidia.conf"

FLAVOUR_TITLES = {
    CONTAINERD: "containerd",
    CRIO: "CRI-O",
    RKE2: "RKE2",
    K3S: "k3s",
    K0S: "k0s",
    MICROK8S: "MicroK8s",
    DOCKER: "Docker",
    UNKNOWN: "unknown runtime",
}

_RUNTIME_RE = re.compile(
    r"\A(containerd|cri-o|docker)://v?([0-9]{1,4})\.([0-9]{1,4})[0-9A-Za-z.+_~-]{0,64}\Z", re.ASCII
)
_KUBELET_RE = re.compile(
    r"\Av?[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,6}[-.0-9A-Za-z]{0,40}\+(rke2|k3s|k0s)[0-9A-Za-z.]{0,20}\Z", re.ASCII
)
_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
# Label / annotation key prefixes each distribution writes on its nodes.
_KEY_PREFIXES = ((RKE2, "rke2.io/"), (K3S, "k3s.io/"), (K0S, "node.k0sproject.io/"), (K0S, "k0sproject.io/"))
_MICROK8S_LABEL = "microk8s.io/cluster"


@dataclass(frozen=True)
class RuntimeDetection:
    """One node's container runtime flavour and what told it."""

    flavour: str
    evidence: str
    """One printable line: the node fact that decided (``kubelet 'v1.31.4+rke2r1'``)."""
    containerd_major: int = 0
    """containerd's major version (1 or 2; 0 unknown): picks the k3s/RKE2 drop-in folder."""


def _containerd_major(runtime_version: str) -> tuple[str, int]:
    match = _RUNTIME_RE.match(runtime_version)
    return (match.group(1), int(match.group(2))) if match else ("", 0)


_ALL_PREFIXES = tuple(prefix for _, prefix in _KEY_PREFIXES)


def detect(node: NodeFacts) -> RuntimeDetection:
    """The node's flavour from its runtime version, kubelet version, labels and annotations (in that order)."""
    labels = node.labels
    # Thousands of nodes share a handful of these: only the facts that can decide are the cache key.
    named = tuple(("label", k) for k in labels if isinstance(k, str) and k.startswith(_ALL_PREFIXES))
    named += tuple(("annotation", k) for k in node.annotations if isinstance(k, str) and k.startswith(_ALL_PREFIXES))
    instance = labels.get(_INSTANCE_TYPE, "")
    return _detect(
        node.container_runtime,
        node.kubelet_version,
        instance if instance in (RKE2, K3S) else "",
        _MICROK8S_LABEL in labels,
        named,
    )


@functools.lru_cache(maxsize=256)
def _detect(
    runtime: str, kubelet_version: str, instance: str, microk8s: bool, named: tuple[tuple[str, str], ...]
) -> RuntimeDetection:
    scheme, major = _containerd_major(runtime)
    if scheme == "cri-o":
        return RuntimeDetection(CRIO, f"container runtime {quoted(runtime)}")
    if scheme == "docker":
        return RuntimeDetection(DOCKER, f"container runtime {quoted(runtime)}")
    kubelet = _KUBELET_RE.match(kubelet_version)
    if kubelet:
        return RuntimeDetection(kubelet.group(1), f"kubelet {quoted(kubelet_version)}", major)
    if instance:
        return RuntimeDetection(instance, f"label {_INSTANCE_TYPE}={instance}", major)
    if microk8s:
        return RuntimeDetection(MICROK8S, f"label {_MICROK8S_LABEL}", major)
    for flavour, prefix in _KEY_PREFIXES:
        for kind in ("label", "annotation"):
            key = next((k for what, k in named if what == kind and k.startswith(prefix)), None)
            if key is not None:
                return RuntimeDetection(flavour, f"{kind} {quoted(key)}", major)
    if scheme == "containerd":
        if "-k3s" in runtime:  # k3s and RKE2 both ship containerd built as "-k3s<n>"
            return RuntimeDetection(K3S, f"container runtime {quoted(runtime)} (k3s's build)", major)
        return RuntimeDetection(CONTAINERD, f"container runtime {quoted(runtime)}", major)
    return RuntimeDetection(UNKNOWN, f"container runtime {quoted(runtime or 'not reported')}")


def _rancher_env(distribution: str, containerd_major: int) -> dict[str, str]:
    folder = f"/var/lib/rancher/{distribution}/agent/etc/containerd"
    drop_ins = "config-v3.toml.d" if containerd_major >= 2 else "config.toml.d"
    return {
        "CONTAINERD_CONFIG": f"{folder}/config.toml",
        "CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock",
        "RUNTIME_CONFIG_SOURCE": f"file={folder}/config.toml",
        "RUNTIME_DROP_IN_CONFIG": f"{folder}/{drop_ins}/99-nvidia.toml",
    }


def flavour_env(flavour: str, containerd_major: int = 0) -> dict[str, str]:
    """The toolkit env a flavour needs (host paths; the operator rewrites them to its mounts). Empty: defaults fit."""
    if flavour in (RKE2, K3S):
        return _rancher_env(flavour, containerd_major)
    if flavour == K0S:
        return {
            "CONTAINERD_CONFIG": "/etc/k0s/containerd.toml",
            "CONTAINERD_SOCKET": "/run/k0s/containerd.sock",
            "RUNTIME_CONFIG_SOURCE": "file=/etc/k0s/containerd.toml",
            "RUNTIME_DROP_IN_CONFIG": "/etc/k0s/containerd.d/nvidia.toml",
        }
    if flavour == MICROK8S:
        return {
            "CONTAINERD_CONFIG": "/var/snap/microk8s/current/args/containerd-template.toml",
            "CONTAINERD_SOCKET": "/var/snap/microk8s/common/run/containerd.sock",
            "RUNTIME_CONFIG_SOURCE": "file=/var/snap/microk8s/current/args/containerd.toml",
        }
    return {}


def drop_in_path(env: Mapping[str, str], runtime: str = CONTAINERD) -> str:
    """Where the toolkit writes its runtime drop-in for this env: the operator's ``getRuntimeConfigFiles``.

    A value that is no absolute path (a live object is not the plan's validated input) gives the default.
    """
    default = DEFAULT_CRIO_DROP_IN if runtime == CRIO else DEFAULT_CONTAINERD_DROP_IN
    value = str(env.get("RUNTIME_DROP_IN_CONFIG") or "")
    return value if value.startswith("/") and value.isprintable() else default


@dataclass(frozen=True)
class RuntimeChoice:
    """The flavour the plan renders for, the env it gives, and the GPU nodes that need something else."""

    flavour: str
    env: dict[str, str]
    source: str
    """``answers`` (toolkit.env set), ``toolkit.runtime`` (flavour named in the answers), ``detected`` or ``none``."""
    evidence: str
    nodes: tuple[str, ...] = ()
    misfits: tuple[tuple[str, str], ...] = ()
    """(node, its flavour) of GPU nodes the rendered env does not fit."""

    @property
    def drop_in(self) -> str:
        """Where the toolkit will write its drop-in (verification greps ``BinaryName`` there)."""
        return drop_in_path(self.env, CRIO if self.flavour == CRIO else CONTAINERD)

    def summary(self) -> str:
        """One line: ``RKE2 (containerd at /run/k3s/containerd/containerd.sock) → toolkit env …``."""
        title = FLAVOUR_TITLES.get(self.flavour, self.flavour)
        socket = self.env.get("CONTAINERD_SOCKET") or (DEFAULT_CONTAINERD_SOCKET if self.flavour == CONTAINERD else "")
        if self.flavour == CONTAINERD:
            title = f"containerd at {socket}"
        elif socket and self.flavour not in (CRIO, DOCKER, UNKNOWN):
            title = f"{title} (containerd at {socket})"
        names = f"toolkit env {', '.join(self.env)}" if self.env else "no toolkit env (the operator's defaults fit)"
        return f"{title} → {names}"


def _detected(facts: ClusterFacts) -> list[tuple[NodeFacts, RuntimeDetection]]:
    nodes = facts.gpu_nodes or facts.nodes
    return [(n, detect(n)) for n in nodes]


@functools.lru_cache(maxsize=64)
def _fit(detection: RuntimeDetection) -> tuple[str, tuple[tuple[str, str], ...]]:
    return detection.flavour, tuple(flavour_env(detection.flavour, detection.containerd_major).items())


def _overridden_misfits(
    detected: Sequence[tuple[NodeFacts, RuntimeDetection]], env: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """Nodes a distribution's facts name whose settings differ from the answers' (plain containerd may be
    a distribution the facts do not tell: the answers' word is taken for those)."""
    wanted = tuple(env.items())
    return tuple(
        (n.name, d.flavour) for n, d in detected if d.flavour not in (CONTAINERD, UNKNOWN) and _fit(d)[1] != wanted
    )


def runtime_choice(plan: Plan, facts: ClusterFacts) -> RuntimeChoice:
    """What the plan renders into ``toolkit.env``: the answers' env wins, then their flavour, then detection.

    Detection takes the settings most GPU nodes need; GPU nodes that need other settings are
    ``misfits`` (one toolkit env serves the whole cluster, so the plan cannot fit both).
    """
    detected = _detected(facts)
    toolkit = plan.toolkit
    if toolkit.runtime != AUTO_RUNTIME:
        majors = Counter(d.containerd_major for _, d in detected if d.containerd_major)
        major = majors.most_common(1)[0][0] if majors else 0
        env = flavour_env(toolkit.runtime, major) if toolkit.env is None else dict(toolkit.env)
        misfits = _overridden_misfits(detected, env)
        source = "answers" if toolkit.env is not None else "toolkit.runtime"
        return RuntimeChoice(toolkit.runtime, env, source, "toolkit.runtime in the answers", misfits=misfits)
    if not detected:
        env = dict(toolkit.env or {})
        return RuntimeChoice(UNKNOWN, env, "answers" if toolkit.env is not None else "none", "no nodes")
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[NodeFacts, RuntimeDetection]]] = {}
    for node, detection in detected:
        groups.setdefault(_fit(detection), []).append((node, detection))
    (flavour, items), members = max(groups.items(), key=lambda kv: (len(kv[1]), kv[0][0] != UNKNOWN))
    names = tuple(n.name for n, _ in members)
    misfits = tuple((n.name, d.flavour) for key, group in groups.items() if key != (flavour, items) for n, d in group)
    if toolkit.env is not None:
        env = dict(toolkit.env)
        misfits = _overridden_misfits(detected, env)
        return RuntimeChoice(flavour, env, "answers", members[0][1].evidence, names, misfits)
    return RuntimeChoice(flavour, dict(items), "detected", members[0][1].evidence, names, misfits)


def toolkit_env(plan: Plan, facts: ClusterFacts) -> dict[str, str]:
    """``spec.toolkit.env`` for this plan on these nodes (NAME -> value, in order)."""
    return runtime_choice(plan, facts).env


def _names(nodes: Iterable[str], limit: int = 5) -> str:
    names = sorted(nodes)
    return ", ".join(quoted(n, 63) for n in names[:limit]) + (
        f" and {len(names) - limit} more" if len(names) > limit else ""
    )


def runtime_advice(choice: RuntimeChoice) -> list[Advice]:
    """Findings about the runtime settings: mixed flavours, an answers env that does not fit, unknown runtimes."""
    out: list[Advice] = []
    if choice.misfits:
        kinds = sorted({FLAVOUR_TITLES.get(f, f) for _, f in choice.misfits})
        title = FLAVOUR_TITLES.get(choice.flavour, choice.flavour)
        what = (
            "the toolkit env from the answers does" if choice.source == "answers" else f"{title}'s toolkit settings do"
        )
        out.append(
            Advice(
                "warning",
                "runtime-mixed",
                f"GPU nodes {_names(n for n, _ in choice.misfits)} run {', '.join(kinds)}; {what} not fit them: "
                "the toolkit there will configure a containerd that is not the node's (no nvidia runtime, or its "
                "pod fails to signal containerd). Give those nodes their own cluster, or set toolkit.env for them",
                "one ClusterPolicy has one toolkit env for every node (operator issues #473, #522, #1694)",
            )
        )
    if choice.flavour == UNKNOWN and choice.source != "answers" and choice.nodes:
        out.append(
            Advice(
                "note",
                "runtime-unknown",
                f"the container runtime of {_names(choice.nodes)} is not recognised ({choice.evidence}); "
                "the operator's containerd defaults are used: name the flavour with toolkit.runtime if they do not fit",
                "the runtime flavour is read from status.nodeInfo and the distribution's labels",
            )
        )
    return out
