"""The answers file: the plan's YAML form, loaded and saved with comments and key order kept.

Loading is bounded (:mod:`wizard.bounded_read`: size, depth, no aliases, linear time), validates
through :class:`wizard.engine.plan.Plan` and turns every problem into a :class:`FieldError` that names the
field, the file line and what is valid. Saving goes through :func:`wizard.atomic_write.write_private`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from wizard.atomic_write import write_private
from wizard.bounded_read import ANSWERS as ANSWERS_LIMITS
from wizard.bounded_read import InputError, check_yaml, read_bounded
from wizard.engine.facts import ClusterFacts
from wizard.engine.plan import DEFAULT_RELEASE, NODES_LATER, TAG_OSES, Mode, Plan
from wizard.engine.textsafe import printable

__all__ = [
    "AnswersError",
    "FieldError",
    "dump_answers",
    "example_answers",
    "load_answers",
    "parse_answers",
    "plan_for_nodes",
    "save_answers",
    "write_private",  # re-exported: older callers import the one atomic-write helper from here
]


@dataclass(frozen=True)
class FieldError:
    """One problem with one field: where it is and what is valid instead."""

    field: str
    """Dotted path such as ``driver.version``; empty for the file as a whole."""
    message: str
    line: int | None = None
    """1-based line in the answers file, when known."""

    def render(self, source: str = "") -> str:
        where = f"{source}:{self.line}: " if source and self.line else (f"{source}: " if source else "")
        text = f"{where}{self.field}: {self.message}" if self.field else f"{where}{self.message}"
        return printable(text.replace("\n", "\\n"))


class AnswersError(ValueError):
    """The answers (file, flags or form) are invalid; carries every field error found."""

    def __init__(self, errors: Sequence[FieldError], source: str = "") -> None:
        self.errors = list(errors)
        self.source = source
        super().__init__("\n".join(e.render(source) for e in self.errors))


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    return yaml


def _line_of(doc: Any, path: Sequence[str | int]) -> int | None:
    """The 1-based line of the deepest existing key on ``path`` in a round-trip document."""
    line: int | None = None
    node = doc
    for part in path:
        if isinstance(node, CommentedMap) and isinstance(part, str) and part in node:
            line = node.lc.key(part)[0] + 1
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            line = node.lc.item(part)[0] + 1
            node = node[part]
        else:
            break
    return line


def _valid_keys(path: Sequence[str | int]) -> list[str]:
    model: Any = Plan
    for part in path:
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return []
        model = field.annotation
        # an optional section (``X | None``): its keys are those of X
        model = next((arg for arg in getattr(model, "__args__", ()) if hasattr(arg, "model_fields")), model)
    return list(getattr(model, "model_fields", {}))


def plan_errors(exc: ValidationError, doc: Any = None) -> list[FieldError]:
    """Turn pydantic's errors into field errors (with file lines when the YAML document is given)."""
    errors: list[FieldError] = []
    for err in exc.errors():
        loc: list[str | int] = [p for p in err["loc"] if isinstance(p, (str, int))]
        message = str(err["msg"])
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        # Cross-field rules raise "<dotted.path>: <message>" from the model validator.
        head, sep, rest = message.partition(": ")
        if not loc and sep and " " not in head and "." in head:
            loc, message = [*head.split(".")], rest
        kind = err["type"]
        if kind == "extra_forbidden":
            valid = _valid_keys(loc[:-1])
            message = "unknown key" + (f"; valid keys here: {', '.join(valid)}" if valid else "")
        elif kind == "string_type" and isinstance(err.get("input"), (int, float)):
            message = f"{message}; YAML read {err['input']!r} as a number: quote it"
        dotted = ".".join(str(p) for p in loc)
        errors.append(FieldError(dotted, message, _line_of(doc, loc) if doc is not None else None))
    return errors


def parse_answers(
    text: str, source: str = "", *, tag_oses: Sequence[str] | None = None, nodes_later: bool = False
) -> tuple[Plan, CommentedMap]:
    """Parse and validate answers text; returns the plan and the round-trip document.

    ``tag_oses``: the GPU nodes' OS tags, when known, for the image source the answers omit (precompiled images
    are per OS). ``nodes_later``: the nodes are read after this check; :func:`plan_for_nodes` then completes
    the plan or says which answer is required.
    """
    if len(text) > ANSWERS_LIMITS.max_bytes:
        raise AnswersError([FieldError("", _too_large(len(text)))], source)
    try:
        check_yaml(text, ANSWERS_LIMITS)
    except InputError as exc:
        raise AnswersError([FieldError(exc.field, exc.message, exc.line)], source) from None
    try:
        doc = _yaml().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "malformed YAML"
        raise AnswersError([FieldError("", f"malformed YAML: {problem}", line)], source) from None
    except YAMLError as exc:
        raise AnswersError([FieldError("", f"malformed YAML: {exc}")], source) from None
    except (ValueError, RecursionError) as exc:  # past the bounds above, a constructor limit we did not foresee
        raise AnswersError([FieldError("", f"a value YAML cannot read: {exc.__class__.__name__}")], source) from None
    if doc is None:
        doc = CommentedMap()
    if not isinstance(doc, CommentedMap):
        raise AnswersError(
            [FieldError("", "the answers file must be a mapping (version: 1, mode: …, driver: …)", 1)], source
        )
    if "version" not in doc:
        raise AnswersError([FieldError("version", "missing; the answers format version, currently 1", 1)], source)
    _operatortype(doc, source)
    try:
        context: dict[str, Any] = {NODES_LATER: nodes_later}
        if tag_oses is not None:
            context[TAG_OSES] = list(tag_oses)
        plan = Plan.model_validate(_plain(doc), context=context)
    except ValidationError as exc:
        raise AnswersError(plan_errors(exc, doc), source) from None
    return plan, doc


OPERATORTYPE_MODES = {"preinstalled": "preinstalled", "pre-installed": "preinstalled"}
"""NVIDIA's documents call the pre-installed host driver ``operatortype=preinstalled``: users type that word."""


def _operatortype(doc: CommentedMap, source: str) -> None:
    """Accept ``operatortype: preinstalled`` as another way to say ``mode: preinstalled`` (saved back as ``mode``).

    Nothing named operatortype ever reaches a ClusterPolicy: the CRD has no such field.
    """
    if "operatortype" not in doc:
        return
    line = _line_of(doc, ["operatortype"])
    value = doc["operatortype"]
    mode = OPERATORTYPE_MODES.get(str(value).strip().lower()) if isinstance(value, str) else None
    if mode is None:
        raise AnswersError(
            [
                FieldError(
                    "operatortype",
                    f"{value!r}: only 'preinstalled' has a meaning here (it is mode: preinstalled)",
                    line,
                )
            ],
            source,
        )
    if "mode" in doc and doc["mode"] != mode:
        raise AnswersError(
            [FieldError("operatortype", f"says preinstalled but mode says {doc['mode']!r}; keep one of them", line)],
            source,
        )
    position = list(doc).index("operatortype")
    del doc["operatortype"]
    if "mode" not in doc:
        doc.insert(position, "mode", mode)


def load_answers(
    path: str | os.PathLike[str], *, tag_oses: Sequence[str] | None = None, nodes_later: bool = False
) -> tuple[Plan, CommentedMap]:
    """Read and validate an answers file; AnswersError names every bad field and its line (see :func:`parse_answers`)."""
    try:
        text = read_bounded(path, ANSWERS_LIMITS)  # also safe on /dev/zero or a FIFO
    except InputError as exc:
        raise AnswersError([FieldError("", exc.message)], str(path)) from None
    return parse_answers(text, str(path), tag_oses=tag_oses, nodes_later=nodes_later)


def plan_for_nodes(plan: Plan, facts: ClusterFacts, source: str = "") -> Plan:
    """A plan checked with ``nodes_later``, completed for these nodes: the image source and name it omitted, from
    the GPU nodes' OS; AnswersError (one line naming the field and what is valid) when no default fits."""
    if plan.mode is Mode.PREINSTALLED or (plan.driver.source and plan.driver.image):
        return plan
    data = plan.answers_dict()
    for key in ("source", "image"):
        if not data["driver"].get(key):
            data["driver"].pop(key, None)
    try:
        return Plan.model_validate(data, context={TAG_OSES: facts.os_tags(plan.operator.version)})
    except ValidationError as exc:
        raise AnswersError(plan_errors(exc), source) from None


def _too_large(size: int) -> str:
    limit = ANSWERS_LIMITS.max_bytes
    return f"{size:,} bytes; an answers file may hold at most {limit:,} bytes (1 MiB)"


def _plain(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, str):
        return str(node)
    return node


def _merge(target: CommentedMap, data: Mapping[str, Any]) -> None:
    """Write ``data`` into ``target`` in place, keeping comments and the order of existing keys."""
    for key, value in data.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), CommentedMap):
            _merge(target[key], value)
        elif target.get(key) != value:
            target[key] = value
    for key in [k for k in target if k not in data]:
        del target[key]


def dump_answers(plan: Plan, doc: CommentedMap | None = None) -> str:
    """The plan as answers YAML; with ``doc`` (as loaded) its comments and key order are kept."""
    data = plan.answers_dict()
    target = doc if doc is not None else CommentedMap()
    _merge(target, data)
    buffer = io.StringIO()
    _yaml().dump(target, buffer)
    return buffer.getvalue()


def save_answers(path: str | os.PathLike[str], plan: Plan, doc: CommentedMap | None = None) -> None:
    """Save the plan to an answers file atomically, keeping the comments of ``doc`` when given."""
    write_private(path, dump_answers(plan, doc))


_EXAMPLE_HEADER = f"""\
# gpu-wizard answers file (format version 1).
# Validate and render with:  gpu-wizard render --answers THIS_FILE --nodes nodes.json
version: 1
operator:
  version: {DEFAULT_RELEASE:<19}# target GPU Operator release: decides naming rules and chart defaults
  namespace: gpu-operator     # the live ClusterPolicy's status.namespace wins when present
"""

_EXAMPLE_BODY: dict[Mode, str] = {
    Mode.PRECOMPILED: """\
mode: precompiled             # precompiled | preinstalled | upstream
driver:
  version: "580.126.09.1"     # driver version only: the operator appends -<kernel>-<os> itself
  repository: registry.example.com/mlops   # where the cluster pulls from -> spec.driver.repository
  image: nvidia-driver
  source: docker.io/alaudadockerhub        # where the mirror plan copies from
  useNvidiaDriverCRD: false   # true: one NVIDIADriver CR instead of ClusterPolicy's driver section
  imagePullSecrets: []
  # operandRegistry: registry.example.com   # every other image (toolkit, device plugin, ...) from this registry,
  #                             # at its public path below it; default: the running operator's private registry
  # registryMirrors:            # hosts the nodes' runtime pulls through a mirror (containerd hosts.toml):
  #   nvcr.io: https://mirror.example.com   # the image checks ask the mirror; https (http on loopback only)
  # registryCA: /etc/pki/ca-trust/source/anchors/corp-ca.pem   # a private registry's CA (PEM)
  # hostRegistryConfig: true    # read registries.conf, hosts.toml, certs.d and credential helpers here
toolkit:
  installDir: /run/nvidia/toolkit-install  # SLE Micro: /usr/local is read-only
  # runtime: rke2               # auto (default: read from the GPU nodes) | containerd | cri-o | rke2 | k3s | k0s | microk8s
  # env:                        # replaces the runtime's toolkit settings (env: {} sends none)
  #   CONTAINERD_SOCKET: /run/k3s/containerd/containerd.sock
hostPaths:
  driverInstallDir: /run/nvidia/driver
""",
    Mode.UPSTREAM: """\
mode: upstream                # NVIDIA's image compiles the driver on each node
driver:
  version: "580.126.20"       # driver version only (or a sha256: digest); the operator appends -<os>
  repository: registry.example.com/nvidia  # where the cluster pulls from -> spec.driver.repository
  image: driver
  source: nvcr.io/nvidia                   # where the mirror plan copies from
  useNvidiaDriverCRD: false
  airgapped: true             # nodes cannot reach public package repositories
  repoConfig:
    configMapName: repo-config   # ConfigMap with apt/yum/zypper repo files for kernel headers
  imagePullSecrets: []
  # operandRegistry: registry.example.com   # every other image (toolkit, device plugin, ...) from this registry,
  #                             # at its public path below it; default: the running operator's private registry
  # registryMirrors:            # hosts the nodes' runtime pulls through a mirror (containerd hosts.toml):
  #   nvcr.io: https://mirror.example.com   # the image checks ask the mirror; https (http on loopback only)
  # registryCA: /etc/pki/ca-trust/source/anchors/corp-ca.pem   # a private registry's CA (PEM)
  # hostRegistryConfig: true    # read registries.conf, hosts.toml, certs.d and credential helpers here
toolkit:
  installDir: /usr/local/nvidia
hostPaths:
  driverInstallDir: /run/nvidia/driver
""",
    Mode.PREINSTALLED: """\
mode: preinstalled            # the host already runs a driver: driver.enabled=false
driver:
  useNvidiaDriverCRD: false
toolkit:
  installDir: /usr/local/nvidia
hostPaths: {}                 # set driverInstallDir only for a host driver in a non-standard root
""",
}


def example_answers(mode: Mode = Mode.PRECOMPILED) -> str:
    """A commented example answers file for a mode (valid as it stands)."""
    return _EXAMPLE_HEADER + _EXAMPLE_BODY[mode]
