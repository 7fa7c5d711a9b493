"""The format of a release folder's ``release.yaml`` (what differs between operator releases): one reader for every room.

The engine (``wizard.engine.releases``) and the demo (``wizard.demo.rules.release_data``) read the same
files; each applies its own rules to them (the demo must be able to disagree with the engine), but the
file's shape, and the bound on every field (the folder may come from ``GPU_WIZARD_ASSETS``), is declared
once, here, below both.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

_Word = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")]
_Path = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^(/[A-Za-z0-9._-]+)+$")]
_Version = Annotated[str, StringConstraints(min_length=1, max_length=32, pattern=r"^[0-9]+(\.[0-9]+)*$")]
_Text = Annotated[str, StringConstraints(max_length=1024)]


class _Model(BaseModel):
    # defer_build: each model's validator is built when first used, not at import: the engine validates
    # ReleaseRules (which holds the others), so the nested models' own validators are never built (issue 38).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class ChartRules(_Model):
    """Where the release's chart templates differ."""

    slimDriverKeys: tuple[_Word, ...] = Field(max_length=32)
    """The keys kept under the ClusterPolicy's ``driver`` with NVIDIADriver enabled; empty: the whole section."""
    quotesNvidiaDriverVersion: bool
    """nvidiadriver.yaml quotes ``driver.version``; unquoted, a branch such as 580 becomes a number."""


class HelmChart(_Model):
    """Where the release's chart is published: ``helm … --repo REPOSITORY NAME --version <release>``."""

    repository: Annotated[
        str, StringConstraints(max_length=256, pattern=r"^https://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._-]+)*$")
    ]
    name: _Word


class OSTagRules(_Model):
    """Which IDs keep only the VERSION_ID major in the OS tag of image names."""

    majorOnly: tuple[_Word, ...] = Field(max_length=64)
    majorOnlyFrom: dict[_Word, Annotated[int, Field(ge=0, le=10_000)]] = Field(max_length=64)
    """ID -> first major that keeps only the major; the major must be a number."""


class DriverBranches(_Model):
    """The component matrix's driver row for this release."""

    source: _Text
    default: _Version
    branches: tuple[_Version, ...] = Field(min_length=1, max_length=64)
    versions: tuple[_Version, ...] = Field(max_length=256)
    note: _Text = ""


_Component = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9-]*$")]
_ValuesPath = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$")
]
_RepositoryText = Annotated[
    str, StringConstraints(min_length=1, max_length=255, pattern=r"^[a-z0-9.:-]+(/[a-z0-9._-]+)*$")
]
_ImageName = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[a-z0-9._-]+(/[a-z0-9._-]+)*$")]
_Tag = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")]


class ChartImage(_Model):
    """One image the release's chart names (release.yaml ``images``): where the chart keeps it, what enables it."""

    component: _Component
    values: _ValuesPath
    """Where the chart's values keep it (``driver.manager``; ``node-feature-discovery.image`` for the subchart)."""
    enabled: tuple[_ValuesPath, ...] = Field(max_length=8)
    """Switches that must all be true for the cluster to pull it (ClusterPolicy spec paths, else chart values)."""
    repository: _RepositoryText
    image: _ImageName
    version: _Tag


class ReleaseRules(_Model):
    """One release's ``release.yaml``: every key, the engine's and the demo's."""

    chart: ChartRules
    helmChart: HelmChart
    osTag: OSTagRules
    repoConfigDirs: dict[_Word, _Path] = Field(max_length=64)
    """RepoConfigPathMap: OS ID -> folder the repoConfig files are mounted in."""
    gpuNodeOSInfo: bool
    """The ClusterPolicy takes the OS from the GPU nodes' labels (else from the operator pod's own host)."""
    nvidiaDriverCRDSwitch: bool
    """The NVIDIADriver controller stops (Disabled, deleting nothing) while the ClusterPolicy's
    ``useNvidiaDriverCRD`` is false; else it reconciles every NVIDIADriver regardless."""
    libModulesMountIDs: tuple[_Word, ...] = Field(max_length=64)
    """The demo's: IDs whose precompiled ClusterPolicy driver gets the host's ``/lib/modules``."""
    nvidiaDriverOwnerLabel: bool
    """The demo's: NVIDIADriver pools select on the owner label the operator sets."""
    poolSelectsVersionMajor: bool
    """The demo's: a pool whose tag drops the minor selects on ``VERSION_ID.major``."""
    driverBranches: DriverBranches
    images: tuple[ChartImage, ...] = Field(min_length=1, max_length=64)
    """Every image the release's chart names, per component (the operator's own image list)."""
