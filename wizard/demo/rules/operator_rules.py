"""The GPU Operator's naming rules per release, written for the simulated operator from the operator's source."""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.demo.rules.imageref import parse_reference
from wizard.demo.rules.release_data import ReleaseData, data_for, release_lines

NFD = "feature.node.kubernetes.io"
LABEL_KERNEL = f"{NFD}/kernel-version.full"
LABEL_OS_ID = f"{NFD}/system-os_release.ID"
LABEL_OS_VERSION = f"{NFD}/system-os_release.VERSION_ID"
LABEL_OS_VERSION_MAJOR = f"{NFD}/system-os_release.VERSION_ID.major"
LABEL_GPU_PRESENT = "nvidia.com/gpu.present"
LABEL_DEPLOY_DRIVER = "nvidia.com/gpu.deploy.driver"
LABEL_UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"
LABEL_PRECOMPILED = "nvidia.com/precompiled"
LABEL_PRECOMPILED_KERNEL = "nvidia.com/precompiled.kernel-version"
LABEL_NVIDIADRIVER_OWNER = "nvidia.com/gpu-operator.driver.owner"
#: NFD's PCI labels that make the operator label a node ``nvidia.com/gpu.present=true``.
NVIDIA_PCI_LABELS = (f"{NFD}/pci-10de.present", f"{NFD}/pci-0302_10de.present", f"{NFD}/pci-0300_10de.present")

COMMON_DRIVER_DAEMONSET = "nvidia-driver-daemonset"
DIGEST_MARK = "sha256:"

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")
_KERNEL_ARCH_RE = re.compile(r"x86_64(?:_64k)?|aarch64(?:_64k)?")
#: ``k8s.io/apimachinery/pkg/util/rand`` alphabet (``SafeEncodeString``): no vowels, no look-alikes.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV32_OFFSET, _FNV32_PRIME = 0x811C9DC5, 0x01000193
_DNS_LABEL_MAX = 63


class RuleError(Exception):
    """Something the operator itself refuses; the message is the operator's."""


@dataclass(frozen=True, order=True)
class OperatorRelease:
    """An operator release (``vMAJOR.MINOR.PATCH``), ordered by version."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> OperatorRelease:
        """``vMAJOR.MINOR.PATCH`` / ``MAJOR.MINOR`` to a release; ValueError otherwise."""
        match = _VERSION_RE.match(text.strip())
        if match is None:
            newest = list(release_lines().values())[-1]
            raise ValueError(f"{text!r} is not an operator release like {newest}")
        return cls(int(match[1]), int(match[2]), int(match[3] or 0))

    @property
    def rules(self) -> ReleaseData:
        """What this release does differently (its line's ``release.yaml``, or the nearest older line's)."""
        return data_for(self.major, self.minor)

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}"


def bundled_releases() -> dict[str, str]:
    """``{"MAJOR.MINOR": bundle}``: the releases whose CRDs, chart values and release.yaml the demo carries."""
    return release_lines()


def bundle_of(release: OperatorRelease | str) -> str:
    """The bundled folder of a release (``vMAJOR.MINOR.PATCH``); ValueError for a release the demo does not carry."""
    parsed = release if isinstance(release, OperatorRelease) else OperatorRelease.parse(release)
    try:
        return bundled_releases()[f"{parsed.major}.{parsed.minor}"]
    except KeyError:
        raise ValueError(
            f"{release} is not a release the demo carries; valid: {', '.join(bundled_releases().values())}"
        ) from None


def _go_atoi(text: str) -> int:
    """Go's ``strconv.Atoi`` (sign and decimal digits only), with its error text."""
    if not re.fullmatch(r"[+-]?\d+", text):
        raise RuleError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def _rhel_major(version: str) -> int:
    """v26.3's ``parseOSMajorVersion``: the part before the first dot, trimmed, without a ``v``."""
    head = version.split(".")[0].strip()
    head = head.removeprefix("v").removeprefix("V")
    if not head:
        raise RuleError("empty OS major version")
    return _go_atoi(head)


def _os_version(os_id: str, version: str, release: OperatorRelease, parse_error: str) -> str:
    """The ``VERSION_ID`` part of an OS tag: the major alone where the release drops the minor, else all of it."""
    head = version.split(".")[0]
    rules = release.rules
    if os_id in rules.major_only:
        return head
    if os_id in rules.major_only_from:
        try:
            major = _rhel_major(version)
        except RuleError as exc:
            raise RuleError(f"{parse_error}: {exc}") from None
        if major >= rules.major_only_from[os_id]:
            return head
    return version


def pool_os_tag(os_id: str, version: str, release: OperatorRelease) -> str:
    """``getOSTag`` of the NVIDIADriver node pools; RuleError where the release fails (v26.3, rhel ``A.10``)."""
    return f"{os_id}{_os_version(os_id, version, release, 'failed to parse os version')}"


@dataclass(frozen=True)
class PolicyOS:
    """What the ClusterPolicy controller took from the first GPU node it listed."""

    os_id: str
    """NFD ``ID`` (``gpuNodeOSRelease``); "" at v25.10, which never reads it."""
    tag: str
    """The OS tag every driver image of the cluster gets (``gpuNodeOSTag``)."""


def policy_os(labels: dict[str, str], release: OperatorRelease) -> PolicyOS:
    """``getGPUNodeOSInfo`` (v26.3+) or ``kernelFullVersion`` (v25.10) for the first GPU node's labels."""
    os_id, version = labels.get(LABEL_OS_ID), labels.get(LABEL_OS_VERSION)
    rules = release.rules
    if not rules.gpu_node_os_info:
        kernel = labels.get(LABEL_KERNEL)
        if not kernel:
            raise RuleError("ERROR: Could not find kernel full version: ('', '')")
        # Without the OS labels v25.10 returns an empty tag and images end in "-" (reproduced).
        return PolicyOS("", f"{os_id}{version}" if os_id is not None and version is not None else "")
    if os_id is None:
        raise RuleError(f"unable to retrieve OS name from label {LABEL_OS_ID}")
    if version is None:
        raise RuleError(f"unable to retrieve OS version from label {LABEL_OS_VERSION}")
    suffix = _os_version(os_id, version, release, f"error processing OS major version {version.split('.')[0].strip()}")
    if not os_id:
        raise RuleError(f'GPU node OS info is empty: release="", tag="{suffix}"')
    return PolicyOS(os_id, f"{os_id}{suffix}")


def sanitized_kernel(kernel: str) -> str:
    """``getSanitizedKernelVersion``: arch suffixes out, ``_`` to ``.``, one trailing ``.`` off, lower case."""
    text = _KERNEL_ARCH_RE.sub("", kernel).replace("_", ".")
    return text.removesuffix(".").lower()


def kernel_os_map(gpu_node_labels: list[dict[str, str]]) -> dict[str, str]:
    """``getKernelVersionsMap``: kernel -> NFD ``ID`` + full ``VERSION_ID``; nodes without a kernel label are skipped."""
    out: dict[str, str] = {}
    for labels in gpu_node_labels:
        kernel = labels.get(LABEL_KERNEL)
        if kernel is None:
            continue
        node_os = labels.get(LABEL_OS_ID, "") + labels.get(LABEL_OS_VERSION, "")
        if out.get(kernel, node_os) != node_os:
            raise RuleError(
                f"different OS versions found for the same kernel version {kernel}, unsupported configuration"
            )
        out[kernel] = node_os
    return out


def precompiled_daemonset_name(kernel: str, node_os: str) -> str:
    """The per-kernel DaemonSet of a precompiled ClusterPolicy: ``nvidia-driver-daemonset-<kernel>-<ID+VERSION_ID>``."""
    return f"{COMMON_DRIVER_DAEMONSET}-{sanitized_kernel(kernel)}-{node_os}"


def safe_hash(text: str) -> str:
    """``utils.GetStringHash``: FNV-1a 32-bit, its decimal digits spelt in the SafeEncodeString alphabet."""
    value = _FNV32_OFFSET
    for byte in text.encode():
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(digit) % len(_SAFE_ALPHABET)] for digit in str(value))


def nvidiadriver_app_name(driver_type: str, os_tag: str, cr_uid: str, kernel: str = "", rhcos: str = "") -> str:
    """``getDriverAppName``: ``nvidia-<type>-driver-<osTag>-<hash>``, the prefix cut to fit 63 characters."""
    seed = cr_uid + (f"-{kernel}" if kernel else f"-{rhcos}" if rhcos else "")
    digest = safe_hash(seed)
    prefix = f"nvidia-{driver_type}-driver-{os_tag}"
    if len(prefix) + 1 + len(digest) > _DNS_LABEL_MAX:
        prefix = prefix[: _DNS_LABEL_MAX - len(digest) - 1]
    return f"{prefix}-{digest}"


def image_path(repository: str, image: str, version: str, env_value: str = "", env_name: str = "") -> str:
    """``image.ImagePath``: the CR's fields first, then the operator's env var; RuleError when neither works."""
    if not repository and not version:
        if image:
            return image
    elif not (repository and image and version):
        raise RuleError(
            "invalid image specification: repository, image and version must all be set "
            f"(repository={repository}, image={image}, version={version})"
        )
    elif version.startswith(DIGEST_MARK):
        return f"{repository}/{image}@{version}"
    else:
        return f"{repository}/{image}:{version}"
    if env_value:
        return env_value
    raise RuleError(f"empty image path provided through both CR and ENV {env_name}")


def policy_driver_image(
    repository: str, image: str, version: str, *, precompiled: bool, kernel: str, os_tag: str, env_value: str = ""
) -> str:
    """``resolveDriverTag`` for a ClusterPolicy: the kernel (precompiled) and the cluster's OS tag appended."""
    if precompiled:
        if not repository and not version:
            if not image:
                raise RuleError(
                    "unable to resolve driver image path for pre-compiled drivers, driver.repository, "
                    "driver.image and driver.version have to be specified in the ClusterPolicy"
                )
            path = f"{image}-{kernel}"
        else:
            path = f"{repository}/{image}:{version}-{kernel}"
    else:
        path = image_path(repository, image, version, env_value, "DRIVER_IMAGE")
    return path if DIGEST_MARK in path else f"{path}-{os_tag}"


def nvidiadriver_image(
    repository: str, image: str, version: str, *, precompiled: bool, kernel: str, os_tag: str
) -> str:
    """``GetImagePath`` / ``GetPrecompiledImagePath`` of an NVIDIADriver (no env fallback, digests refused when precompiled)."""
    try:
        path = image_path(repository, image, version, "", "")
    except RuleError as exc:
        raise RuleError(f"failed to get image path from crd: {exc}") from None
    if precompiled:
        if DIGEST_MARK in path:
            raise RuleError("specifying image digest is not supported when precompiled is enabled")
        path = f"{path}-{kernel}-{os_tag}"
    elif DIGEST_MARK not in path:
        path = f"{path}-{os_tag}"
    try:
        parse_reference(path)  # ref.New()
    except ValueError as exc:
        raise RuleError(f"failed to parse driver image path: {exc}") from None
    return path


def repo_config_dirs(release: OperatorRelease) -> dict[str, str]:
    """``RepoConfigPathMap``: NFD ``ID`` -> folder the repoConfig files are mounted into (release.yaml)."""
    return dict(release.rules.repo_config_dirs)


def mounts_host_lib_modules(release: OperatorRelease, *, precompiled: bool, os_id: str) -> bool:
    """Whether a ClusterPolicy's driver container gets host ``/lib/modules`` (PR #2252: v26.3+, sles and sl-micro)."""
    return precompiled and os_id in release.rules.lib_modules_ids
