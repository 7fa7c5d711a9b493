"""The GPU Operator's own naming rules, reproduced as pure functions.

Everything here mirrors operator code (see ``../shared/docs/gpu-operator-facts.md`` §1-2):
``resolveDriverTag()`` / ``ImagePath()`` for image references, ``getSanitizedKernelVersion`` for
DaemonSet names, and the per-release OS-tag rule (which IDs keep only the VERSION_ID major).
The demo cluster implements the same rules on its own (``wizard/demo/rules``), and
``tests/test_demo_operator_rules.py`` holds both to the operator's unit-test cases.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from wizard.engine.operator_names import COMMON_DRIVER_DAEMONSET
from wizard.engine.releases import Release as Release  # re-exported: where naming's callers have always found it
from wizard.engine.releases import nearest_rules

DIGEST_PREFIX = "sha256:"
#: NodeFacts.tag_os of a node without a usable OS: a placeholder for grouping, never part of an image.
UNKNOWN_OS_TAG = "unknown"
#: Kubernetes' DNS-1123 label limit, which the operator cuts NVIDIADriver DaemonSet names to.
DNS_LABEL_MAX = 63
# k8s.io/apimachinery/pkg/util/rand SafeEncodeString's alphabet: no vowels, no 0/1/3, so no words.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV32_OFFSET, _FNV32_PRIME = 0x811C9DC5, 0x01000193

_ARCH_RE = re.compile(r"x86_64(?:_64k)?|aarch64(?:_64k)?")
# \Z, not $: "$" also matches before a final newline, which would let "tag\n" through.
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\Z")
_DIGEST_RE = re.compile(r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[A-Za-z0-9=_-]{32,}\Z")
_PATH_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*\Z")
TAG_RULE = "an image tag: at most 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'"


def is_tag(text: str) -> bool:
    """The OCI distribution spec's tag grammar ``[A-Za-z0-9_][A-Za-z0-9._-]{0,127}``."""
    return _TAG_RE.match(text) is not None


def _major(version_id: str) -> str:
    return version_id.split(".", 1)[0]


def os_tag(os_id: str, version_id: str, operator_release: str | Release) -> str:
    """``ID`` + ``VERSION_ID`` as the given operator release writes it into image tags.

    The release's ``release.yaml`` (``osTag``) names the IDs that keep only the VERSION_ID's major, and
    those that do so from a given major on (v26.3: rocky, and rhel >= 10; v26.7: rhel, rocky and ol;
    v25.10: none). ValueError where the release itself fails: a ``majorOnlyFrom`` ID's major is parsed as
    a number (v26.3 refuses rhel ``A.10``, so the operator errors for that node).
    """
    release = operator_release if isinstance(operator_release, Release) else Release.parse(operator_release)
    rule = nearest_rules(release).osTag
    os_id = os_id.strip().lower()
    version_id = version_id.strip()
    major_only = os_id in rule.majorOnly
    if not major_only and os_id in rule.majorOnlyFrom:
        major = _major(version_id)
        if not major.isdigit():
            raise ValueError(
                f"VERSION_ID {version_id!r}: operator {release} reads the major version of {os_id} as a number"
            )
        major_only = int(major) >= rule.majorOnlyFrom[os_id]
    return f"{os_id}{_major(version_id) if major_only else version_id}"


def repo_config_dirs(operator_release: str | Release) -> dict[str, str]:
    """The operator's ``RepoConfigPathMap`` of a release: OS ID -> folder a repoConfig ConfigMap is mounted in.

    From the release's ``release.yaml`` (``repoConfigDirs``): v25.10 knows centos, ubuntu, rhcos and rhel;
    v26.3 adds debian, rocky, sles and sl-micro; v26.7 adds ol. An OS not in the map gets "repository
    configuration not supported for distribution <tag>".
    """
    release = operator_release if isinstance(operator_release, Release) else Release.parse(operator_release)
    return dict(nearest_rules(release).repoConfigDirs)


def image_path(repository: str, image: str, version: str) -> str:
    """The operator's ``ImagePath``: ``repo/image:version`` or ``repo/image@sha256:…``.

    With repository and version both empty the image is used verbatim; otherwise all three must be set.
    """
    if not repository and not version:
        return image
    if not (repository and image and version):
        raise ValueError("invalid image specification: repository, image and version must all be set")
    if version.startswith(DIGEST_PREFIX):
        return f"{repository}/{image}@{version}"
    return f"{repository}/{image}:{version}"


def image_repository(repository: str, image: str) -> str:
    """``<repo>/<image>``: the repository an image's tags are listed in (no tag)."""
    return f"{repository}/{image}"


def precompiled_suffix(kernel: str, tag_os: str) -> str:
    """What the operator appends to a precompiled driver's version: ``-<kernel>-<osTag>``, kernel unsanitised."""
    return f"-{kernel}-{tag_os}"


def upstream_suffix(tag_os: str) -> str:
    """What the operator appends to the version of a driver compiled on the node: ``-<osTag>``."""
    return f"-{tag_os}"


def precompiled_tag(version: str, kernel: str, tag_os: str) -> str:
    """The tag of a precompiled driver image: ``<version>-<kernel>-<osTag>``, kernel unsanitised."""
    return version + precompiled_suffix(kernel, tag_os)


def upstream_tag(version: str, tag_os: str) -> str:
    """The tag of a driver image compiled on the node: ``<version>-<osTag>``."""
    return version + upstream_suffix(tag_os)


def tagged_versions(tags: Iterable[str], suffix: str) -> set[str]:
    """The versions ``tags`` hold for one suffix (:func:`precompiled_suffix`, :func:`upstream_suffix`): each tag
    ending in it, the suffix cut off (never an empty version)."""
    return {tag[: -len(suffix)] for tag in tags if tag.endswith(suffix) and len(tag) > len(suffix)}


def tag_version(tag: str) -> str:
    """The driver version a driver tag starts with (``580`` of ``580-<kernel>-<osTag>``): the part before the
    first ``-`` (a driver version has none)."""
    return tag.split("-", 1)[0]


def rebased(reference: str, repository: str, onto: str) -> str:
    """``reference`` under ``repository`` moved under ``onto`` (the same image path and tag below it); the
    reference unchanged when it is not under ``repository`` or there is nowhere to move it."""
    prefix = f"{repository}/"
    if onto and reference.startswith(prefix):
        return f"{onto}/{reference[len(prefix) :]}"
    return reference


def upstream_image(repository: str, image: str, version: str, tag_os: str) -> str:
    """The image compiled on the node: ``<repo>/<image>:<version>-<osTag>``; a digest gets no suffix."""
    base = image_path(repository, image, version)
    if DIGEST_PREFIX in base:
        return _checked(base)
    return _checked(upstream_tag(base, tag_os))  # the tag's suffix on the whole reference (an image given whole)


def precompiled_image(repository: str, image: str, version: str, kernel: str, tag_os: str) -> str:
    """The image built for one kernel: ``<repo>/<image>:<version>-<kernel>-<osTag>``, kernel unsanitised."""
    base = image_path(repository, image, version)
    if DIGEST_PREFIX in base:  # in version, or in an image given whole
        raise ValueError("specifying image digest is not supported when precompiled is enabled")
    return _checked(precompiled_tag(base, kernel, tag_os))  # as upstream_image's suffix


def _checked(reference: str) -> str:
    """The composed reference, if it parses as one (the operator's ``ref.New()``); ValueError otherwise.

    An ``image`` that already carries a tag or digest next to a ``repository`` and ``version``
    composes to ``repo/registry/path:tag:version``, which the operator refuses for the whole CR.
    """
    try:
        split_reference(reference)
    except ValueError as exc:
        raise ValueError(f"failed to parse driver image path: {exc}") from None
    return reference


def driver_image(*, precompiled: bool, repository: str, image: str, version: str, kernel: str, tag_os: str) -> str:
    """The driver image the operator puts in a node's driver pod, for either mode; ValueError where it refuses."""
    if precompiled:
        return precompiled_image(repository, image, version, kernel, tag_os)
    return upstream_image(repository, image, version, tag_os)


def image_tag(reference: str) -> str:
    """The tag (or digest) part of an image reference."""
    if "@" in reference:
        return reference.split("@", 1)[1]
    last = reference.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else "latest"


def split_reference(reference: str) -> tuple[str, str, str]:
    """Split ``host[:port]/path/name:tag`` (or ``@digest``) into (registry host, repository path, tag).

    Without a registry host the reference is on Docker Hub (``docker.io``, single names under
    ``library/``); with both a tag and a digest the digest wins, as in the container runtimes.
    ValueError when the text is not an image reference (empty, spaces, upper-case path, bad tag).
    """
    text = reference.strip()
    if not text or any(c.isspace() for c in text):
        raise ValueError(f"{reference!r} is not an image reference like registry.example.com/path/name:tag")
    name, at, digest = text.partition("@")
    head, _, last = name.rpartition("/")
    if ":" in last:
        last, tag = last.split(":", 1)
    else:
        tag = "latest"
    name = f"{head}/{last}" if head else last
    if at:
        tag = digest
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        host, repo = first, rest
    else:
        host, repo = "docker.io", name
    if host.lower() in {"docker.io", "index.docker.io"} and "/" not in repo:
        repo = f"library/{repo}"
    if not all(_PATH_COMPONENT_RE.match(part) for part in repo.split("/")):
        raise ValueError(f"{reference!r}: repository path {repo!r} must be lower-case letters, digits and . _ -")
    if not (_DIGEST_RE.match(tag) if at else _TAG_RE.match(tag)):
        what = "digest" if at else "tag"
        raise ValueError(f"{reference!r}: {what} {tag!r} is not valid")
    return host, repo, tag


def sanitize_kernel(kernel: str) -> str:
    """``getSanitizedKernelVersion``: drop the arch, ``_`` to ``.``, no trailing ``.``, lower case."""
    return _ARCH_RE.sub("", kernel).replace("_", ".").rstrip(".").lower()


def precompiled_daemonset_name(kernel: str, tag_os: str) -> str:
    """Per-kernel DaemonSet of a precompiled ClusterPolicy install."""
    return f"{COMMON_DRIVER_DAEMONSET}-{sanitize_kernel(kernel)}-{tag_os}"


def _fnv32a(data: bytes) -> int:
    value = _FNV32_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def string_hash(text: str) -> str:
    """The operator's ``utils.GetStringHash``: FNV-1a 32 of the text, its decimal digits safe-encoded."""
    digits = str(_fnv32a(text.encode()))
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in digits)


def nvidiadriver_daemonset_name(driver_type: str, tag_os: str, cr_uid: str, pool_key: str = "") -> str:
    """DaemonSet of one NVIDIADriver node pool: ``nvidia-<type>-driver-<osTag>-<hash>`` (``getDriverAppName``).

    The hash is of the CR's UID, plus ``-<kernel>`` (precompiled pools) or ``-<rhcosVersion>`` (Driver
    Toolkit pools) as ``pool_key``; the prefix is cut so the whole name fits a 63-character DNS label.
    """
    digest = string_hash(f"{cr_uid}-{pool_key}" if pool_key else cr_uid)
    prefix = f"nvidia-{driver_type}-driver-{tag_os}"
    if len(prefix) + 1 + len(digest) > DNS_LABEL_MAX:
        prefix = prefix[: DNS_LABEL_MAX - len(digest) - 1]
    return f"{prefix}-{digest}"
