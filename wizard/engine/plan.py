"""The install plan: one pydantic model holding every answer and every field's rules.

The TUI, the CLI flags and the answers file all validate through :class:`Plan`, so a rule lives in
exactly one place. Field names are the public contract of the answers file (``version: 1``).
Mode-dependent defaults (source registry, image name) are filled in before validation so that an
answers file only needs to say what differs from the defaults.

The file is long on purpose: the model and its sections are the one place every field's rule lives
(docs/architecture.md), and spreading them over modules would split a rule from the field it guards.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from wizard.engine import releases
from wizard.engine.driver_version import DriverVersion
from wizard.engine.modes import Mode as Mode  # re-exported: the type of the plan's mode field
from wizard.engine.naming import DIGEST_PREFIX, Release
from wizard.engine.sources import source_defaults, source_required

#: Operator release lines whose CRDs, chart values and release.yaml ship with gpu-wizard (line -> folder),
#: read once from the bundled assets (``wizard.engine.releases``, the one place releases are known).
KNOWN_RELEASES: dict[str, str] = releases.lines()
#: The newest bundled release, by version.
DEFAULT_RELEASE = releases.default_release()
DEFAULT_NAMESPACE = "gpu-operator"
DEFAULT_DRIVER_INSTALL_DIR = "/run/nvidia/driver"
DEFAULT_TOOLKIT_INSTALL_DIR = "/usr/local/nvidia"
IMMUTABLE_TOOLKIT_INSTALL_DIR = "/run/nvidia/toolkit-install"


MODE_DEFAULTS: dict[Mode, dict[str, str]] = {
    Mode.PRECOMPILED: {"source": "docker.io/alaudadockerhub", "image": "nvidia-driver"},
    Mode.UPSTREAM: {"source": "nvcr.io/nvidia", "image": "driver"},
    Mode.PREINSTALLED: {"source": "", "image": ""},
}
"""The source and image a plan built in code gets when it validates without a context (no word on the nodes).
Answers files (:func:`wizard.engine.answers.parse_answers`, the CLI and the TUI) always validate with one: their
precompiled source follows the nodes' OS (``defaults.source_defaults``), or is required."""

TAG_OSES = "tag_oses"
"""Validation context: the GPU nodes' OS tags, for the source an answers file omits (absent: nodes not known)."""
NODES_LATER = "nodes_later"
"""Validation context: the nodes are read after the answers (the CLI checks the file before connecting); a source
no default fits yet is left empty for :func:`wizard.engine.answers.plan_for_nodes` to fill or refuse."""

# Every grammar below is ASCII-only (re.ASCII, explicit classes) and anchored with \A…\Z: Python's
# ``$`` also matches before a trailing newline, and ``\d`` matches full-width and Arabic-Indic digits.
# Image-reference grammar (distribution/reference): host[:port] then lower-case path components.
_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]{1,5})?)"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
HOST_RE = re.compile(rf"\A{_HOST}\Z", re.ASCII)
REPOSITORY_RE = re.compile(rf"\A{_HOST}(?:/{_COMPONENT})*\Z", re.ASCII)
IMAGE_RE = re.compile(rf"\A{_COMPONENT}(?:/{_COMPONENT})*\Z", re.ASCII)
K8S_NAME_RE = re.compile(r"\A[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\Z", re.ASCII)
DRIVER_VERSION_RE = re.compile(r"\A[0-9]{1,8}(?:\.[0-9]{1,8}){0,3}\Z", re.ASCII)
DIGEST_RE = re.compile(r"\Asha256:[a-f0-9]{64}\Z", re.ASCII)
MAX_REFERENCE_NAME = 255
"""distribution/reference: a repository name (host and path) is at most 255 characters."""
# A host path's components: the POSIX portable filename characters plus '+'. No space, quote, '$',
# backtick, ';', '&', '|', '*', '?', '~', '#' or control character: the path goes into manifests
# and printed commands, and none of those has a place in a driver or toolkit folder.
_PATH_RE = re.compile(r"\A(?:/[A-Za-z0-9._+-]+)+\Z", re.ASCII)
MAX_PATH = 1024
MAX_EXCLUDED_NODES = 1000
"""How many nodes ``driver.excludeNodes`` may name (each is one node label write at apply)."""
SYSTEM_FOLDERS = frozenset(
    {"/etc", "/usr", "/bin", "/sbin", "/boot", "/proc", "/sys", "/dev", "/var", "/run", "/home", "/root", "/tmp"}
    | {"/usr/bin", "/usr/sbin", "/usr/local", "/usr/share", "/usr/include", "/var/lib", "/var/run"}
)
"""Folders an operand must never own: installing there would overwrite or hide the host's own files."""
PSEUDO_FILESYSTEMS = ("/proc/", "/sys/", "/dev/")
_OS_WORDS = ("ubuntu", "rhel", "rhcos", "rocky", "sles", "sle-micro", "sl-micro", "centos", "ol", "debian")

VERSION_HELP = "a driver version such as 580.126.09.1 or a branch such as 580"


def version_help(mode: Mode) -> str:
    """What ``driver.version`` takes in a mode: upstream images are published per full version, not per branch."""
    if mode is Mode.UPSTREAM:
        return "a full driver version such as 580.126.20 (upstream images are tagged per version) or a sha256: digest"
    return VERSION_HELP


def check_driver_version(value: str, mode: Mode) -> str:
    """Validate ``driver.version`` for a mode; return the normalised value or raise ValueError."""
    if value.startswith(DIGEST_PREFIX):
        if mode is Mode.PRECOMPILED:
            raise ValueError(
                "a sha256 digest is not supported in precompiled mode (the operator appends the kernel "
                f"and OS to the tag); give {VERSION_HELP}"
            )
        if not DIGEST_RE.match(value):
            raise ValueError("a digest must be sha256: followed by 64 lower-case hex digits")
        return value
    if DRIVER_VERSION_RE.match(value):
        return value
    head, sep, tail = value.partition("-")
    if sep and DRIVER_VERSION_RE.match(head):
        lowered = tail.lower()
        what = "an OS" if any(lowered.startswith(w) or f"-{w}" in lowered for w in _OS_WORDS) else "a kernel/OS"
        raise ValueError(
            f"{value!r} carries {what} suffix ({tail!r}); give the driver version only ({head!r}): the "
            "operator appends the kernel and OS itself, and a suffixed version pulls a tag that does not "
            "exist (operator issue #1200)"
        )
    raise ValueError(f"{value!r} is not {version_help(mode)}")


def path_help(example: str) -> str:
    """What a host-folder field takes, with an example that fits the field (a toolkit folder is not a driver's)."""
    return f"an absolute folder such as {example} (letters, digits, . _ + - and /)"


def check_absolute_path(value: str, example: str = DEFAULT_DRIVER_INSTALL_DIR) -> str:
    """An absolute, normalised host folder of safe characters that is no system folder, else ValueError.

    ``example``: the folder the error messages suggest, one that is right for the field checked.
    """
    help_text = path_help(example)
    if len(value) > MAX_PATH:
        raise ValueError(f"a path of {len(value)} characters; give {help_text}, at most {MAX_PATH} characters")
    if not value.startswith("/"):
        raise ValueError(f"{value!r} is not an absolute path; give {help_text}")
    normal = posixpath.normpath(value)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    if normal != value:
        raise ValueError(f"{value!r} is not normalised; write it as {normal!r}")
    if value == "/":
        raise ValueError(f"'/' is the host's root folder; give {help_text}")
    if not _PATH_RE.match(value):
        bad = sorted({c for c in value if not (c.isascii() and (c.isalnum() or c in "._+-/"))})
        shown = " ".join(repr(c) for c in bad[:5])
        raise ValueError(f"{value!r} contains {shown}, not allowed in a host path; give {help_text}")
    top = value.split("/")[1]
    system = value in SYSTEM_FOLDERS or (value.count("/") == 1 and top.startswith("lib"))
    if system or (value.startswith("/usr/lib") and value.count("/") == 2):
        raise ValueError(
            f"{value!r} is a system folder the operator would write into; give a folder of its own, {help_text}"
        )
    if value.startswith(PSEUDO_FILESYSTEMS):
        raise ValueError(f"{value!r} is on the kernel's /{top} pseudo file system; give {help_text}")
    return value


def check_repository(value: str) -> str:
    """A registry host with an optional path (``registry.example.com/mlops``), else ValueError."""
    value = value.strip().rstrip("/")
    if "://" in value:
        raise ValueError(f"{value!r} has a URL scheme; give host[:port]/path without http:// or docker://")
    if len(value) > MAX_REFERENCE_NAME:
        raise ValueError(f"a repository of {len(value)} characters; image references allow {MAX_REFERENCE_NAME}")
    first, _, rest = value.partition("/")
    # As in distribution/reference: the first component is a registry host only when it has a '.'
    # or a ':' or is "localhost"; otherwise (Docker Hub) every component is a lower-case path part.
    is_host = "." in first or ":" in first or first == "localhost"
    valid = (
        bool(HOST_RE.match(first)) and (not rest or bool(IMAGE_RE.match(rest)))
        if is_host
        else bool(IMAGE_RE.match(value))
    )
    if not valid:
        raise ValueError(
            f"{value!r} is not a registry/repository like registry.example.com/mlops "
            "(a host, then lower-case path components of letters, digits, . _ -; no tag)"
        )
    return value


def check_image_name(value: str) -> str:
    """An image name without registry or tag (``nvidia-driver``), else ValueError."""
    if ":" in value or "@" in value:
        raise ValueError(f"{value!r} carries a tag or digest; give the name only, the version goes in driver.version")
    if not IMAGE_RE.match(value):
        raise ValueError(f"{value!r} is not an image name like nvidia-driver (lower case, digits, . _ -)")
    return value


MIRROR_HELP = "SOURCE=MIRROR, e.g. nvcr.io=https://mirror.example.com or docker.io=https://mirror.example.com/dockerhub"
_LOOPBACK = ("127.0.0.1", "localhost")


def check_mirror_source(value: str) -> str:
    """A registry host whose pulls go through a mirror (``nvcr.io``, ``registry.example.com:5000``), else ValueError."""
    host = value.strip(" ").lower()
    if not host.isascii() or not host.isprintable():
        raise ValueError(
            f"source {value!r} contains a control or non-ASCII character; give a registry host like nvcr.io"
        )
    if "://" in host or "/" in host:
        raise ValueError(
            f"source {value!r} is not a registry host; give the host only, like nvcr.io (no scheme, no path)"
        )
    if not HOST_RE.match(host) or len(host) > MAX_REFERENCE_NAME:
        raise ValueError(f"source {value!r} is not a registry host like nvcr.io or registry.example.com:5000")
    return host


def check_mirror_url(value: str) -> str:
    """A mirror endpoint: ``https://host[:port][/path]`` (``http://`` only on loopback), else ValueError.

    Images of the source are then looked up as ``path/repository`` on the mirror (a registries.conf
    ``location`` written as a URL; without a path, like containerd's hosts.toml).
    """
    url = value.strip(" ").rstrip("/")
    if not url.isascii() or not url.isprintable():
        raise ValueError(f"mirror {value!r} contains a control or non-ASCII character; give an https:// URL")
    scheme, sep, rest = url.partition("://")
    netloc, _, path = rest.partition("/")
    host = netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc
    if not sep or scheme not in ("https", "http"):
        raise ValueError(f"mirror {value!r} is not an https:// URL like https://mirror.example.com")
    if scheme == "http" and host not in _LOOPBACK:
        raise ValueError(
            f"mirror {value!r}: plain http is allowed on loopback only (127.0.0.1, localhost); use https://"
        )
    if any(c in rest for c in "@?#") or not HOST_RE.match(netloc) or (path and not IMAGE_RE.match(path)):
        raise ValueError(
            f"mirror {value!r} is not https://host[:port][/path] (no user, query or fragment; "
            "lower-case path components of letters, digits, . _ -)"
        )
    if len(rest) > MAX_REFERENCE_NAME:
        raise ValueError(f"mirror {value!r} is longer than {MAX_REFERENCE_NAME} characters after the scheme")
    return url


def check_registry_mirrors(value: dict[str, str]) -> dict[str, str]:
    """Every ``source host -> mirror URL`` entry checked; keys lower-cased; ValueError naming the bad one."""
    checked: dict[str, str] = {}
    for source, mirror in value.items():
        checked[check_mirror_source(str(source))] = check_mirror_url(str(mirror))
    return checked


MAX_CA_PATH = 1024


def check_ca_path(value: str) -> str:
    """``driver.registryCA`` / ``--registry-ca``: a PEM file's path (one printable line), else ValueError.

    The file itself is read when a registry is asked (it may live on the machine that runs the checks).
    """
    if not value.isprintable() or len(value) > MAX_CA_PATH or value != value.strip():
        raise ValueError(
            f"{value[:60]!r} is not a file path: one printable line of at most {MAX_CA_PATH} characters, "
            "like /etc/pki/ca-trust/source/anchors/corp-ca.pem"
        )
    return value


def parse_registry_mirror(text: str) -> tuple[str, str]:
    """``SOURCE=MIRROR`` (the ``--registry-mirror`` flag) as a checked pair, else ValueError."""
    source, sep, mirror = text.partition("=")
    if not sep:
        raise ValueError(f"{text!r} is not {MIRROR_HELP}")
    return check_mirror_source(source), check_mirror_url(mirror)


class _Section(BaseModel):
    # defer_build: a model's validator is built when first used, not at import. A render validates the Plan,
    # which holds the sections; a section validated alone (RepoConfig) builds its own then (issue 38).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True, defer_build=True)


class OperatorSpec(_Section):
    """Which GPU Operator release is targeted and where it runs."""

    version: str = DEFAULT_RELEASE
    """Target release: decides naming rules, CRD schema and chart defaults."""
    namespace: str = DEFAULT_NAMESPACE
    """The operator's namespace (the live ClusterPolicy's ``status.namespace`` wins when present)."""

    @field_validator("version")
    @classmethod
    def _known_release(cls, value: str) -> str:
        if len(value) > 32:
            raise ValueError(f"a release of {len(value)} characters; valid: {', '.join(KNOWN_RELEASES.values())}")
        try:
            release = Release.parse(value)
        except ValueError as exc:
            raise ValueError(f"{exc}; valid: {', '.join(KNOWN_RELEASES.values())}") from None
        if f"{release.major}.{release.minor}" not in KNOWN_RELEASES:
            raise ValueError(
                f"{value!r} is not a release gpu-wizard knows; valid: {', '.join(KNOWN_RELEASES.values())}"
            )
        return str(release)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not K8S_NAME_RE.match(value) or len(value) > 63 or "." in value:
            raise ValueError(f"{value!r} is not a Kubernetes namespace name (lower-case letters, digits, -)")
        return value

    @property
    def bundle(self) -> str:
        """The shipped release bundle (CRDs + chart values) for this release line."""
        release = Release.parse(self.version)
        return KNOWN_RELEASES[f"{release.major}.{release.minor}"]


class RepoConfig(_Section):
    """Upstream only: a ConfigMap of package-repository files for kernel headers (air-gapped)."""

    configMapName: str = ""

    @field_validator("configMapName")
    @classmethod
    def _name(cls, value: str) -> str:
        if value and (not K8S_NAME_RE.match(value) or len(value) > 253):
            raise ValueError(f"{value!r} is not a ConfigMap name (lower-case letters, digits, - and .)")
        return value


UPGRADE_TIMEOUT_HELP = "a whole number of seconds, 0 or more (0: no limit)"
MAX_UNAVAILABLE_HELP = "a node count of 1 or more (e.g. 2) or a percentage from 1% to 100% (e.g. 25%)"
_PERCENT_RE = re.compile(r"\A(?:100|[1-9][0-9]?)%\Z", re.ASCII)
# A label selector as kubectl writes one: key[=|==|!=]value terms, `key in (a,b)`, `!key`, comma-separated.
_SELECTOR_RE = re.compile(r"\A[A-Za-z0-9._/=!,() -]{0,512}\Z", re.ASCII)


def _whole_number(value: Any, *, minimum: int = 0, help_text: str = UPGRADE_TIMEOUT_HELP) -> int:
    """An integer (YAML's true/false and 1.5 are not) of at least ``minimum``, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{value!r} is not {help_text}")
    if value < minimum:
        raise ValueError(f"{value} is not {help_text}")
    return value


def check_max_unavailable(value: Any) -> int | str:
    """``maxUnavailable``: a node count >= 1 or a percentage 1%..100% (0 would let no node upgrade), else ValueError."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)  # a flag's "2"; the operator itself reads a string as a percentage only
    if isinstance(value, int) and not isinstance(value, bool):
        return _whole_number(value, minimum=1, help_text=MAX_UNAVAILABLE_HELP)
    if isinstance(value, str) and _PERCENT_RE.match(value):
        return value
    raise ValueError(f"{value!r} is not {MAX_UNAVAILABLE_HELP}")


def _selector(value: Any) -> str:
    if not isinstance(value, str) or not _SELECTOR_RE.match(value):
        raise ValueError(
            f"{str(value)[:60]!r} is not a label selector like app=training,tier!=batch (ASCII, at most 512 characters)"
        )
    return value


class DrainSpec(_Section):
    """``upgradePolicy.drain``: drain the node (``kubectl drain``) before the driver restarts."""

    enable: bool = False
    force: bool = False
    timeoutSeconds: int = 300
    deleteEmptyDir: bool = False
    podSelector: str = ""

    _timeout = field_validator("timeoutSeconds", mode="before")(lambda v: _whole_number(v))
    _pods = field_validator("podSelector", mode="before")(lambda v: _selector(v))


class PodDeletionSpec(_Section):
    """``upgradePolicy.podDeletion``: deleting the pods that use GPUs before the driver restarts."""

    force: bool = False
    timeoutSeconds: int = 300
    deleteEmptyDir: bool = False

    _timeout = field_validator("timeoutSeconds", mode="before")(lambda v: _whole_number(v))


class WaitForCompletionSpec(_Section):
    """``upgradePolicy.waitForCompletion``: wait for matching jobs to finish before the upgrade (0: forever)."""

    timeoutSeconds: int = 0
    podSelector: str = ""

    _timeout = field_validator("timeoutSeconds", mode="before")(lambda v: _whole_number(v))
    _pods = field_validator("podSelector", mode="before")(lambda v: _selector(v))


class UpgradePolicySpec(_Section):
    """``spec.driver.upgradePolicy``: how the operator rolls a new driver out, node by node.

    Field names and defaults are the CRD's and the chart's (``podDeletion`` is the chart values'
    ``gpuPodDeletion``). Absent from the plan, gpu-wizard leaves the live policy's as it is.
    """

    autoUpgrade: bool = True
    maxParallelUpgrades: int = 1
    """Nodes upgraded at once; 0 means no limit."""
    maxUnavailable: int | str = "25%"
    drain: DrainSpec = Field(default_factory=DrainSpec)
    podDeletion: PodDeletionSpec = Field(default_factory=PodDeletionSpec)
    waitForCompletion: WaitForCompletionSpec = Field(default_factory=WaitForCompletionSpec)

    @field_validator("maxParallelUpgrades", mode="before")
    @classmethod
    def _parallel(cls, value: Any) -> int:
        return _whole_number(value, help_text="a whole number of nodes, 0 or more (0: all at once)")

    @field_validator("maxUnavailable", mode="before")
    @classmethod
    def _unavailable(cls, value: Any) -> int | str:
        return check_max_unavailable(value)

    def cr_form(self) -> dict[str, Any]:
        """As ``spec.driver.upgradePolicy`` of a ClusterPolicy or NVIDIADriver."""
        return self.model_dump(mode="json")

    def values_form(self) -> dict[str, Any]:
        """As the chart's ``driver.upgradePolicy`` values (``gpuPodDeletion``, which its template renames)."""
        data = self.cr_form()
        data["gpuPodDeletion"] = data.pop("podDeletion")
        return data


_SECTIONS: dict[str, type[_Section]] = {
    "drain": DrainSpec,
    "podDeletion": PodDeletionSpec,
    "waitForCompletion": WaitForCompletionSpec,
}


def upgrade_policy_answers(spec: Any) -> dict[str, Any]:
    """A live ``spec.driver.upgradePolicy`` (CRD form) as answers: the known fields only, unvalidated."""
    if not isinstance(spec, dict):
        return {}
    known = UpgradePolicySpec.model_fields
    out = {key: value for key, value in spec.items() if key in known and not isinstance(value, dict)}
    for key in ("drain", "podDeletion", "waitForCompletion"):
        section = spec.get(key) if key != "podDeletion" else spec.get(key) or spec.get("gpuPodDeletion")
        if isinstance(section, dict):
            fields = _SECTIONS[key].model_fields
            out[key] = {k: v for k, v in section.items() if k in fields and v is not None}
    return out


class DriverSpec(_Section):
    """The driver image and how the cluster pulls it."""

    version: str = ""
    """Driver version only (``580.126.09.1`` or branch ``580``); a digest only in upstream mode."""

    @property
    def driver_version(self) -> DriverVersion | None:
        """``version`` parsed, for ordering and its branch (the field's rule above says what it accepts); None for a
        digest or no version."""
        return DriverVersion.parse_or_none(self.version)

    repository: str = ""
    """Where the cluster pulls from (``spec.driver.repository``)."""
    image: str = ""
    source: str = ""
    """Where the mirror plan copies from."""
    useNvidiaDriverCRD: bool = False
    repoConfig: RepoConfig = Field(default_factory=RepoConfig)
    imagePullSecrets: list[str] = Field(default_factory=list)
    airgapped: bool = False
    """Upstream only: nodes cannot reach public package repositories (kernel headers need repoConfig)."""
    operandRegistry: str = ""
    """The private registry (``host[/path]``) the cluster pulls every other image of the release from (operator,
    validator, driver manager, toolkit, device plugin, GFD, DCGM exporter, MIG manager, NFD, ...), each keeping its
    path below its public host: ``nvcr.io/nvidia/k8s/container-toolkit`` -> ``REGISTRY/nvidia/k8s/container-toolkit``.
    Empty: the chart's public registries (reached directly or through ``registryMirrors``)."""
    registryMirrors: dict[str, str] = Field(default_factory=dict)
    """Registry host -> mirror URL the cluster's runtime pulls through (containerd hosts.toml, CRI-O
    registries.conf): the image checks ask the mirror. The manifests do not change."""
    registryCA: str = ""
    """A PEM file of CAs the image checks trust for every registry (a private registry's own CA)."""
    hostRegistryConfig: bool = True
    """Read this machine's registries.conf, containerd hosts.toml, certs.d folders and credential helpers."""
    upgradePolicy: UpgradePolicySpec | None = None
    """How the operator rolls a driver change out; None leaves the live (or chart default) policy alone."""
    excludeNodes: list[str] = Field(default_factory=list)
    """GPU nodes kept out of the driver rollout (GeForce/TITAN): the apply labels each
    ``nvidia.com/gpu.deploy.driver=false``, which the operator honours (no driver pod there); a rollback undoes it."""

    @field_validator("repository", "source")
    @classmethod
    def _repository(cls, value: str) -> str:
        return check_repository(value) if value else value

    @field_validator("image")
    @classmethod
    def _image(cls, value: str) -> str:
        return check_image_name(value) if value else value

    @field_validator("operandRegistry")
    @classmethod
    def _operand_registry(cls, value: str) -> str:
        if not value:
            return value
        value = check_repository(value)
        first = value.split("/", 1)[0]
        if not ("." in first or ":" in first or first == "localhost"):
            raise ValueError(f"{value!r} names no registry host; give host[:port][/path], like harbor.corp.example")
        return value

    @field_validator("registryMirrors")
    @classmethod
    def _mirrors(cls, value: dict[str, str]) -> dict[str, str]:
        return check_registry_mirrors(value)

    @field_validator("registryCA")
    @classmethod
    def _ca(cls, value: str) -> str:
        return check_ca_path(value) if value else value

    @field_validator("imagePullSecrets")
    @classmethod
    def _secrets(cls, value: list[str]) -> list[str]:
        for name in value:
            if not K8S_NAME_RE.match(name) or len(name) > 253:
                raise ValueError(f"{name!r} is not a Secret name (lower-case letters, digits, - and .)")
        return value

    @field_validator("excludeNodes")
    @classmethod
    def _excluded(cls, value: list[str]) -> list[str]:
        if len(value) > MAX_EXCLUDED_NODES:
            raise ValueError(f"at most {MAX_EXCLUDED_NODES} nodes may be kept out of the driver rollout")
        for name in value:
            if not K8S_NAME_RE.match(name) or len(name) > 253:
                raise ValueError(f"{name!r} is not a node name (lower-case letters, digits, - and .)")
        return sorted(set(value))


#: Container runtime flavours whose toolkit settings gpu-wizard knows (``toolkit.runtime``; see engine/runtime.py).
RUNTIME_FLAVOURS = ("containerd", "cri-o", "rke2", "k3s", "k0s", "microk8s")
AUTO_RUNTIME = "auto"
MAX_TOOLKIT_ENV = 32
_ENV_NAME_RE = re.compile(r"\A[A-Z_][A-Z0-9_]{0,127}\Z", re.ASCII)
MAX_ENV_VALUE = 1024
#: Toolkit variables holding a host file path: the operator mounts its folder and rewrites the value.
PATH_ENV_NAMES = frozenset(
    {"CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "RUNTIME_CONFIG", "RUNTIME_DROP_IN_CONFIG", "RUNTIME_SOCKET"}
    | {"CRIO_CONFIG", "DOCKER_CONFIG", "DOCKER_SOCKET"}
)
ENV_HELP = "NAME: value pairs, NAME of A-Z, 0-9 and _ (not starting with a digit), each value one line"


def _host_file(name: str, value: str) -> str:
    if not value.startswith("/") or posixpath.normpath(value) != value or not _PATH_RE.match(value):
        raise ValueError(
            f"{name}: {value!r} is not an absolute, normalised host path such as "
            "/run/k3s/containerd/containerd.sock (letters, digits, . _ + - and /)"
        )
    if len(value) > MAX_PATH:
        raise ValueError(f"{name}: a path of {len(value)} characters; at most {MAX_PATH}")
    return value


def check_toolkit_env(value: dict[str, str]) -> dict[str, str]:
    """``toolkit.env``: names the operator's env grammar allows, one-line values, host paths where it wants paths."""
    if len(value) > MAX_TOOLKIT_ENV:
        raise ValueError(f"{len(value)} variables; at most {MAX_TOOLKIT_ENV}")
    for name, text in value.items():
        if not _ENV_NAME_RE.match(name):
            raise ValueError(f"{name!r} is not a variable name; give {ENV_HELP}")
        if len(text) > MAX_ENV_VALUE:
            raise ValueError(f"{name}: a value of {len(text)} characters; at most {MAX_ENV_VALUE}")
        if not text.isprintable():  # newline, CR, ESC, tab and every other control or separator character
            raise ValueError(f"{name}: the value contains a control character or line break; give one line")
        if name in PATH_ENV_NAMES:
            _host_file(name, text)
        elif name == "RUNTIME_CONFIG_SOURCE":
            for source in text.split(","):
                kind, sep, path = source.partition("=")
                if kind not in ("command", "file") or (sep and (kind != "file" or not path)):
                    raise ValueError(
                        f"RUNTIME_CONFIG_SOURCE: {source!r} is not command, file or file=/host/path (comma-separated)"
                    )
                if path:
                    _host_file(name, path)
    return value


class ToolkitSpec(_Section):
    """Container toolkit placement and how it configures the node's container runtime."""

    installDir: str | None = None
    """``spec.toolkit.installDir``; empty means the OS profile's default."""
    runtime: str = AUTO_RUNTIME
    """The container runtime flavour whose settings to render; ``auto``: detected from the GPU nodes."""
    env: dict[str, str] | None = None
    """``spec.toolkit.env`` as NAME: value; set (even empty), it replaces the flavour's settings."""

    @field_validator("installDir")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        return check_absolute_path(value, DEFAULT_TOOLKIT_INSTALL_DIR) if value else None

    @field_validator("runtime")
    @classmethod
    def _runtime(cls, value: str) -> str:
        if value not in (AUTO_RUNTIME, *RUNTIME_FLAVOURS):
            raise ValueError(
                f"{value!r} is not a runtime flavour; valid: {', '.join((AUTO_RUNTIME, *RUNTIME_FLAVOURS))}"
            )
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return None if value is None else check_toolkit_env(value)


class HostPaths(_Section):
    """Host paths the operator's operands use."""

    driverInstallDir: str | None = None
    """``spec.hostPaths.driverInstallDir``; empty means the operator default ``/run/nvidia/driver``."""

    @field_validator("driverInstallDir")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value == "/":  # would mount the host's root read-write into the operands
            raise ValueError(
                "'/' is the host's root folder; a driver installed on the host is found there without this "
                "setting: leave driverInstallDir unset (set it only for a non-standard root such as /usr/local/glibc)"
            )
        return check_absolute_path(value) if value else None


class Plan(_Section):
    """Every answer the wizard needs; the answers file is this model's YAML form."""

    version: Literal[1] = 1
    """The answers format version: exactly the integer 1 (not true, not 1.0, not "1")."""
    operator: OperatorSpec = Field(default_factory=OperatorSpec)
    mode: Mode = Mode.PRECOMPILED
    driver: DriverSpec = Field(default_factory=DriverSpec)
    toolkit: ToolkitSpec = Field(default_factory=ToolkitSpec)
    hostPaths: HostPaths = Field(default_factory=HostPaths)

    @field_validator("version", mode="before")
    @classmethod
    def _format_version(cls, value: Any) -> Any:
        if type(value) is not int or value != 1:  # bool is an int subclass: YAML's true would pass as 1
            shown = str(value).lower() if isinstance(value, bool) else repr(value)
            raise ValueError(f"must be the integer 1 (the answers format version), not {shown}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _mode_defaults(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        try:
            mode = Mode(data.get("mode", Mode.PRECOMPILED))
        except ValueError:
            return data  # the field validator reports the bad mode
        driver = data.get("driver")
        if driver is None:
            driver = {}
        if isinstance(driver, dict):
            if info.context is None:  # a plan built in code: the mode's fixed defaults
                driver = {**driver, **{k: v for k, v in MODE_DEFAULTS[mode].items() if not driver.get(k)}}
            else:  # answers: the nodes' OS's source, else none (then required)
                driver = {**driver, **source_defaults(mode, driver, info.context.get(TAG_OSES))}
            data = {**data, "driver": driver}
        return data

    @model_validator(mode="after")
    def _cross_field_rules(self, info: ValidationInfo) -> Plan:
        driver = self.driver
        if self.mode is Mode.PREINSTALLED:
            self._folders_apart()
            return self
        if not driver.version:
            raise ValueError(f"driver.version: required in {self.mode.value} mode; give {version_help(self.mode)}")
        try:
            check_driver_version(driver.version, self.mode)
        except ValueError as exc:
            raise ValueError(f"driver.version: {exc}") from None
        if not driver.repository:
            raise ValueError(
                f"driver.repository: required in {self.mode.value} mode; give the registry the cluster "
                "pulls from, like registry.example.com/mlops"
            )
        self._folders_apart()
        if self.mode is Mode.PRECOMPILED and driver.repoConfig.configMapName:
            raise ValueError(
                "driver.repoConfig.configMapName: only used in upstream mode (precompiled images carry "
                "the kernel modules); remove it"
            )
        context = info.context
        if context is not None and not context.get(
            NODES_LATER
        ):  # last: a mistake in the file is said before what the nodes would fill
            for key in ("source", "image"):
                if not getattr(driver, key):
                    raise ValueError(source_required(key, self.mode, context.get(TAG_OSES)))
        return self

    def _folders_apart(self) -> None:
        """The toolkit's folder is neither the driver's root nor inside it, nor around it: the driver container
        mounts ``driverInstallDir`` and replaces what is there, and the toolkit would lose its files (or the
        driver its root) at every driver restart."""
        toolkit = self.toolkit.installDir
        if not toolkit:
            return  # the OS profile's default (/usr/local/nvidia or /run/nvidia/toolkit-install) is apart
        driver = self.hostPaths.driverInstallDir or DEFAULT_DRIVER_INSTALL_DIR
        if toolkit == driver:
            problem = f"is driverInstallDir ({driver})"
        elif toolkit.startswith(driver + "/"):
            problem = f"is inside driverInstallDir ({driver})"
        elif driver.startswith(toolkit + "/"):
            problem = f"contains driverInstallDir ({driver})"
        else:
            return
        raise ValueError(
            f"toolkit.installDir: {toolkit!r} {problem}; the toolkit needs a folder of its own apart from the "
            f"driver's, such as {DEFAULT_TOOLKIT_INSTALL_DIR} or {IMMUTABLE_TOOLKIT_INSTALL_DIR}"
        )

    @property
    def driver_enabled(self) -> bool:
        """``spec.driver.enabled``: false only for a pre-installed host driver."""
        return self.mode is not Mode.PREINSTALLED

    @property
    def precompiled(self) -> bool:
        """``spec.driver.usePrecompiled``."""
        return self.mode is Mode.PRECOMPILED

    def answers_dict(self) -> dict[str, Any]:
        """The plan as answers-file data (mode defaults included, empty optionals left out)."""
        data = self.model_dump(mode="json", exclude_none=True)
        if not data["driver"].get("registryMirrors"):
            data["driver"].pop("registryMirrors", None)  # most clusters pull directly: keep their files short
        if not data["driver"].get("operandRegistry"):
            data["driver"].pop("operandRegistry", None)
        if not data["driver"].get("registryCA"):
            data["driver"].pop("registryCA", None)
        if data["driver"].get("hostRegistryConfig") is True:
            data["driver"].pop("hostRegistryConfig")
        # upstream-only switches at their defaults are not the user's answers: a replay must not add them
        if not data["driver"].get("repoConfig", {}).get("configMapName"):
            data["driver"].pop("repoConfig", None)
        if data["toolkit"].get("runtime") == AUTO_RUNTIME:
            data["toolkit"].pop("runtime")  # detected again on replay
        if not data["driver"].get("excludeNodes"):
            data["driver"].pop("excludeNodes", None)
        if not data["driver"].get("airgapped"):
            data["driver"].pop("airgapped", None)
        if self.mode is Mode.PREINSTALLED:
            for key in ("source", "image", "version", "repository"):
                if not data["driver"].get(key):
                    data["driver"].pop(key, None)
        return data
