"""Demo-cluster scenarios (documented in ``assets/scenarios/README.md``): their shape, strictly checked."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Strict, TypeAdapter, ValidationError, model_validator
from pydantic.dataclasses import dataclass
from ruamel.yaml import YAML, YAMLError

from wizard.bounded_read import NODELIST, SCENARIO, InputError, load_bounded, read_bounded
from wizard.bundled import assets
from wizard.demo.rules.hostos import pretty_name
from wizard.demo.rules.release_data import release_lines
from wizard.demo.scenarios.scenario_check import ScenarioError, check_scenario, nodes_from_nodelist

__all__ = [
    "FaultSpec",
    "NodeSpec",
    "OperatorSpec",
    "RegistrySpec",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "scenario_names",
]

#: Every scenario block is a pydantic dataclass: strict types (YAML's 22.04 is no string), no unknown field.
_CONFIG = ConfigDict(extra="forbid")
Str = Annotated[str, Strict()]
Int = Annotated[int, Strict()]
Bool = Annotated[bool, Strict()]
Float = Annotated[float, Strict()]  # an integer is a number too


@dataclass(config=_CONFIG)
class _Block:
    """A block of a scenario file."""

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        """An unknown key is an error naming it and the block's valid fields (pydantic's own says neither)."""
        if isinstance(data, Mapping):
            names = [f.name for f in dataclasses.fields(cls)]
            unknown = [key for key in data if key not in names]
            if unknown:
                raise ValueError(f"{unknown[0]}: unknown field; valid fields: {', '.join(names)}")
        return data


@dataclass(config=_CONFIG)
class NodeSpec(_Block):
    """One simulated node (or ``count`` generated copies named ``<name>-<i>``)."""

    name: Str
    os_id: Str
    os_version: Str
    os_image: Str
    kernel: Str
    arch: Str = "amd64"
    gpu_product: Str = ""
    gpu_count: Int = 0
    mig_profile: Str = ""
    mig_per_gpu: Int = 0
    host_driver: Str = ""
    host_driver_broken: Bool = False
    nfd: Bool = True
    runtime: Str = "containerd://1.7.23"
    noexec_mounts: list[Str] = field(default_factory=list)
    labels: dict[Str, Str] = field(default_factory=dict)
    count: Int = 1
    kubelet_version: Str = "v1.31.4"
    nouveau: Bool = False
    secure_boot: Bool = False
    dkms: Bool = True
    kernel_headers: Bool = True
    package_repo: Bool = True
    free_mb: dict[Str, Int] = field(default_factory=dict)
    runtime_flavour: Str = ""

    @model_validator(mode="before")
    @classmethod
    def _fill(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "os_image" not in data and isinstance(data.get("os_id"), str):
            data = {**data, "os_image": pretty_name(data["os_id"], str(data.get("os_version")))}
        return data

    @property
    def gpu(self) -> bool:
        return bool(self.gpu_product) and self.gpu_count > 0

    @property
    def advertised_gpus(self) -> int:
        """``nvidia.com/gpu`` as the device plugin advertises it: MIG devices under the single strategy."""
        return self.gpu_count * self.mig_per_gpu if self.mig_profile else self.gpu_count


@dataclass(config=_CONFIG)
class RegistrySpec(_Block):
    """Where the simulated kubelet pulls from."""

    url: Str = ""
    catalog: dict[Str, dict[Str, Str]] = field(default_factory=dict)
    hosts: list[Str] = field(default_factory=list)
    public: Bool = True

    def catalog_hosts(self) -> list[str]:
        """The hosts the catalog (or the real registry at ``url``) answers for."""
        hosts = list(self.hosts) or sorted({repo.split("/", 1)[0] for repo in self.catalog})
        if self.url:
            netloc = self.url.split("://", 1)[-1].rstrip("/")
            if netloc not in hosts:
                hosts.append(netloc)
        return hosts


@dataclass(config=_CONFIG)
class FaultSpec(_Block):
    """Injected failures, per scenario or by flag."""

    latency_ms: Int = 0
    error_rate: Float = 0.0
    error_code: Int = 500
    retry_after_s: Int = 1
    drop_rate: Float = 0.0
    watch_expiry_s: Float = 0.0
    exec_fail_nodes: list[Str] = field(default_factory=list)
    exec_latency_ms: Int = 0
    seed: Int = 0


@dataclass(config=_CONFIG)
class OperatorSpec(_Block):
    """The GPU Operator as installed in the scenario."""

    release: Str = field(default_factory=lambda: list(release_lines().values())[-1])
    namespace: Str = "gpu-operator"
    installed: Bool = True
    crds: Bool = True
    cluster_policy: dict[Str, Any] | None = None
    repository: Str = ""
    helm_values: dict[str, Any] | None = None


@dataclass(config=_CONFIG)
class WorkloadSpec(_Block):
    """A user's pod already running on a node (e.g. a training job using GPUs, which an upgrade evicts)."""

    name: Str
    node: Str
    namespace: Str = "default"
    gpus: Int = 1
    image: Str = "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04"


@dataclass(config=_CONFIG)
class UpgradeSpec(_Block):
    """A driver upgrade already under way when the demo starts (``upgrade-in-progress``)."""

    to_version: Str = ""
    states: dict[Str, Str] = field(default_factory=dict)
    state_seconds: Float = 0.0


@dataclass(config=_CONFIG)
class Scenario(_Block):
    """One simulated cluster."""

    name: Str
    description: Str = ""
    operator: OperatorSpec = field(default_factory=OperatorSpec)
    nodes: list[NodeSpec] = field(default_factory=list)
    registry: RegistrySpec = field(default_factory=RegistrySpec)
    rbac_deny: list[dict[Str, Str]] = field(default_factory=list)
    faults: FaultSpec = field(default_factory=FaultSpec)
    workloads: list[WorkloadSpec] = field(default_factory=list)
    nodelist: Str = ""
    upgrade: UpgradeSpec = field(default_factory=UpgradeSpec)

    def expanded_nodes(self) -> list[NodeSpec]:
        """Every concrete node: ``count: N`` entries become ``<name>-01`` … ``<name>-N``."""
        out: list[NodeSpec] = []
        for spec in self.nodes:
            if spec.count == 1:
                out.append(spec)
                continue
            width = max(2, len(str(spec.count)))
            for i in range(1, spec.count + 1):
                copy = dataclasses.replace(spec, name=f"{spec.name}-{i:0{width}d}", count=1)
                copy.labels = dict(spec.labels)
                copy.noexec_mounts = list(spec.noexec_mounts)
                copy.free_mb = dict(spec.free_mb)
                out.append(copy)
        return out


def _scenario_dir() -> Path:
    return Path(str(assets().joinpath("scenarios")))


def scenario_names() -> list[str]:
    """Names of the bundled scenarios (``assets/scenarios/*.yaml``), sorted."""
    folder = assets().joinpath("scenarios")
    return sorted(p.name.rsplit(".", 1)[0] for p in folder.iterdir() if p.name.endswith((".yaml", ".yml")))


OFFERED_VARIABLE = "GPU_WIZARD_DEMO_SCENARIOS"
"""Set by ``gpu-wizard serve`` for its sessions: the comma-separated scenarios a student may pick."""


def offered_scenarios() -> list[str]:
    """The scenarios the wizard offers: every bundled one, or in a classroom those the trainer allowed."""
    names = scenario_names()
    offered = os.environ.get(OFFERED_VARIABLE)
    if offered is None:
        return names
    allowed = [name.strip() for name in offered.split(",") if name.strip()]
    return [name for name in names if name in allowed] + [name for name in allowed if name not in names]


def check_offered(name_or_path: str) -> None:
    """ScenarioError unless the scenario is one the wizard offers here (a classroom's trainer decides)."""
    if OFFERED_VARIABLE in os.environ and name_or_path not in offered_scenarios():
        raise ScenarioError(
            f"scenario {name_or_path!r} is not offered in this classroom (offered: {', '.join(offered_scenarios())})"
        )


def _resolve_path(name_or_path: str) -> Path:
    candidate = Path(name_or_path).expanduser()
    looks_like_path = "/" in name_or_path or name_or_path.endswith((".yaml", ".yml", ".json"))
    if looks_like_path or candidate.is_file():
        if not candidate.exists():  # a FIFO or device is not is_file(): the bounded reader refuses it by name
            raise ScenarioError(f"scenario file {name_or_path!r} does not exist")
        return candidate
    path = _scenario_dir() / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ScenarioError(
            f"unknown scenario {name_or_path!r}; bundled scenarios: {', '.join(scenario_names())} "
            "(or give a path to a scenario .yaml file)"
        )
    return path


def load_scenario(name_or_path: str) -> Scenario:
    """Load, check and expand a scenario given by bundled name (``sle-micro-precompiled``) or path."""
    path = _resolve_path(name_or_path)
    try:
        data = load_bounded(path, SCENARIO, ("yaml",))
    except InputError as exc:
        line = f" line {exc.line}" if exc.line else ""
        verb = "is" if exc.message.startswith("not valid") else "cannot be used:"
        field = f" {exc.field}:" if exc.field else ""
        raise ScenarioError(f"scenario {str(path)!r}{line} {verb}{field} {exc.message}") from None
    try:
        return scenario_from_dict(data, source=str(path), base_dir=path.parent)
    except ScenarioError as exc:
        number = _line_of(path, exc.loc)
        if number is None:
            raise
        where = f"scenario {str(path)!r}"
        raise ScenarioError(str(exc).replace(where, f"{where} line {number}", 1), exc.loc) from None


def _line_of(path: Path, loc: tuple[str | int, ...]) -> int | None:
    """The 1-based line of the deepest part of ``loc`` in the scenario file (read bounded, as it was)."""
    line = None
    try:
        node: Any = YAML(typ="rt", pure=True).load(read_bounded(path, SCENARIO)) if loc else None
    except (InputError, YAMLError):
        return None
    for part in loc:
        try:
            lc = node.lc
            where = lc.key(part) if isinstance(part, str) else lc.item(part)
            node = node[part]
        except (AttributeError, KeyError, IndexError, TypeError):
            break
        line = int(where[0]) + 1
    return line


def scenario_from_dict(data: Any, *, source: str = "<dict>", base_dir: Path | None = None) -> Scenario:
    """Build a checked Scenario from already-parsed YAML/JSON data."""
    if not isinstance(data, dict):
        raise ScenarioError(f"scenario {source!r}: the top level must be a mapping of fields, not {_kind(data)}")
    where = f"scenario {source!r}"
    try:
        scenario = _SCENARIO.validate_python(data)
    except ValidationError as exc:
        raise _field_error(exc, where) from None
    if scenario.nodelist:
        scenario.nodes[:0] = _load_nodelist(scenario.nodelist, base_dir or Path.cwd(), where)
    check_scenario(scenario, where)
    return scenario


def _load_nodelist(ref: str, base_dir: Path, where: str) -> list[NodeSpec]:
    path = (base_dir / ref).expanduser()
    try:
        document = load_bounded(path, NODELIST, ("json",))
    except InputError as exc:
        if exc.message == "no such file":
            raise ScenarioError(f"{where}: nodelist: file {str(path)!r} does not exist") from None
        raise ScenarioError(f"{where}: nodelist: {exc}") from None
    return [NodeSpec(**fields) for fields in nodes_from_nodelist(document, f"{where}: nodelist {ref!r}")]


_SCENARIO = TypeAdapter(Scenario)


def _field_error(exc: ValidationError, where: str) -> ScenarioError:
    """pydantic's first error as one line naming the field (``nodes[0].gpu_count``) in the file's words."""
    error = exc.errors()[0]
    path = ""
    for part in error["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    kind, value = error["type"], error.get("input")
    if kind == "missing":
        text = "required field missing"
    elif kind == "value_error":
        text = str(error["ctx"]["error"])
    elif kind == "string_type" and isinstance(value, bool | int | float):
        text = f'must be a string; quote it ("{value}") so YAML keeps it as written'
    elif kind == "int_type":
        text = f"must be an integer, not {value!r}"
    elif kind == "bool_type":
        text = f"must be true or false, not {value!r}"
    elif kind in ("dict_type", "dataclass_type"):
        text = "must be a mapping"
    elif kind == "list_type":
        text = f"must be a list, not {_kind(value)}"
    else:
        text = error["msg"][0].lower() + error["msg"][1:]
    message = f"{where}: {path}{'.' if path and kind == 'value_error' else ': ' if path else ''}{text}"
    return ScenarioError(message, tuple(part for part in error["loc"] if isinstance(part, str | int)))


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"
