"""The build recipe for a precompiled driver image no source holds, where NVIDIA's driver container builds one.

NVIDIA's driver container (github.com/NVIDIA/gpu-driver-container) builds precompiled, signed driver images
for Ubuntu from Canonical's signed kernel modules: one image per (driver branch, kernel ``uname -r``, OS),
tagged ``<branch>-<kernel>-<os>``, which is the tag the operator composes from ``driver.version: <branch>``.
The facts the recipe needs (the make target, the packages Canonical must publish for the kernel, what
NVIDIA's CI builds) are data in ``assets/driver-container/precompiled.yaml``; for another OS there is no
such build, and :func:`recipe_for` returns ``None`` (the vendor request is then the way forward).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from pydantic import BaseModel, ConfigDict, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from wizard.bundled import asset_text
from wizard.engine.defaults import is_public_registry
from wizard.engine.driver_version import branch_of
from wizard.engine.naming import image_path, image_repository, precompiled_tag
from wizard.engine.textsafe import shell_command

__all__ = ["BuildRecipe", "DriverContainer", "driver_container", "kernel_flavor", "recipe_for", "recipe_lines"]

_KERNEL_RE = re.compile(r"^(?P<line>[0-9]+\.[0-9]+)\.[0-9]+-[0-9]+-(?P<flavor>[a-z][a-z0-9-]*)$", re.ASCII)
"""An Ubuntu kernel release: ``5.15.0-1063-nvidia`` (line 5.15, ABI 1063, flavour nvidia)."""


class OsBuild(BaseModel):
    """What NVIDIA's CI builds for one OS tag."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lts_kernels: tuple[str, ...]
    ci_branches: tuple[str, ...]
    ci_flavors: tuple[str, ...]


class DriverContainer(BaseModel):
    """``assets/driver-container/precompiled.yaml``: the facts read from NVIDIA's driver container repository."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_: int = 0
    repository: str
    commit: str
    target_prefix: str
    kernel_packages: tuple[str, ...]
    driver_package: str
    oses: dict[str, OsBuild]


def parse_driver_container(text: str, source: str = "precompiled.yaml") -> DriverContainer:
    """Validate the data file; ValueError naming the file and the field when it is wrong."""
    try:
        data = YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise ValueError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise ValueError(f"{source}: expected 'schema: 1'")
    data["schema_"] = data.pop("schema")
    try:
        return DriverContainer.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{source}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None


@cache
def driver_container() -> DriverContainer:
    """The bundled facts, parsed once."""
    return parse_driver_container(asset_text("driver-container", "precompiled.yaml"))


def kernel_flavor(kernel: str) -> tuple[str, str] | None:
    """(kernel line, flavour) of an Ubuntu kernel release (``5.15.0-1063-nvidia`` -> ``("5.15", "nvidia")``)."""
    match = _KERNEL_RE.match(kernel.strip())
    return (match["line"], match["flavor"]) if match else None


@dataclass(frozen=True)
class BuildRecipe:
    """The exact inputs of one precompiled build, the make call and the tag the operator looks for."""

    os_tag: str
    branch: str
    driver_version: str
    """The driver version built (a version of the OS's ``nvidia-utils-<branch>-server``); "" when the plan names
    only the branch (the recipe then says where to read it)."""
    kernel: str
    kernel_line: str
    flavor: str
    make_target: str
    make_variables: tuple[tuple[str, str], ...]
    image: str
    """``<repository>/<image>:<branch>-<kernel>-<os>``: what to push so the operator finds it."""
    kernel_packages: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def tag(self) -> str:
        return self.image.rsplit(":", 1)[1]


def recipe_for(
    repository: str, image: str, version: str, kernel: str, os_tag: str, *, version_hint: str = ""
) -> BuildRecipe | None:
    """The recipe for ``kernel`` on ``os_tag`` (``None`` where NVIDIA's driver container builds no precompiled
    image for that OS). ``version``: the plan's driver version (a branch, as precompiled plans usually name it,
    or a full version); ``version_hint``: a full version on that branch to suggest when only the branch is known."""
    facts = driver_container()
    build = facts.oses.get(os_tag)
    parsed = kernel_flavor(kernel)
    if build is None or parsed is None:
        return None
    line, flavor = parsed
    branch = branch_of(version)
    exact = version.strip() if "." in version.strip() else ""
    driver_version = exact or (version_hint if branch_of(version_hint) == branch else "")
    shown = driver_version or "DRIVER_VERSION"
    notes: list[str] = []
    if is_public_registry(repository):  # NVIDIA's (or another public) registry: not the user's to push to
        notes.append(
            f"REGISTRY: a registry your nodes pull from ({repository} is not yours to push to); "
            "set driver.repository to it"
        )
        repository = "REGISTRY"
    variables = (
        ("IMAGE_NAME", image_repository(repository, image)),
        ("DRIVER_VERSIONS", shown),
        ("DRIVER_BRANCH", branch),
        ("KERNEL_VERSION", kernel),
        ("KERNEL_FLAVOR", flavor),
    )
    values = {"branch": branch, "kernel": kernel}
    if not exact:
        package = facts.driver_package.format(**values)
        notes.append(
            f"DRIVER_VERSION: a version of {package} in the {os_tag} archive"
            + (f" (e.g. {driver_version}, this release's default on branch {branch})" if driver_version else "")
            + f": `apt-cache madison {package}`"
        )
    if line not in build.lts_kernels:
        lines = " and ".join(build.lts_kernels)
        notes.append(f"NVIDIA's CI builds {os_tag} images for {lines} kernels only; this is a {line} kernel")
    if flavor not in build.ci_flavors:
        notes.append(f"NVIDIA's CI builds the flavours {', '.join(build.ci_flavors)} for {os_tag}, not {flavor}")
    if branch not in build.ci_branches:
        notes.append(f"NVIDIA's CI builds branches {', '.join(build.ci_branches)} for {os_tag}, not {branch}")
    return BuildRecipe(
        os_tag=os_tag,
        branch=branch,
        driver_version=driver_version,
        kernel=kernel,
        kernel_line=line,
        flavor=flavor,
        make_target=f"{facts.target_prefix}{os_tag}-{shown}",
        make_variables=variables,
        # the operator's own naming with driver.version = the branch: the tag the image must carry
        image=image_path(repository, image, precompiled_tag(branch, kernel, os_tag)),
        kernel_packages=tuple(p.format(**values) for p in facts.kernel_packages),
        notes=tuple(notes),
    )


def recipe_lines(recipe: BuildRecipe) -> list[str]:
    """The recipe in words: inputs, what must exist first, the commands, the tag to push."""
    facts = driver_container()
    make = shell_command(["make", *(f"{k}={v}" for k, v in recipe.make_variables), recipe.make_target])
    version = recipe.driver_version or f"a {recipe.branch}.x version (see below)"
    return [
        f"Build recipe: NVIDIA's driver container builds precompiled {recipe.os_tag} images; build this one:",
        f"  driver branch {recipe.branch}, version {version}",
        f"  kernel {recipe.kernel} (line {recipe.kernel_line}, flavour {recipe.flavor}), OS {recipe.os_tag}",
        "  first, Canonical's signed modules for this kernel must be published: " + ", ".join(recipe.kernel_packages),
        f"  git clone {facts.repository} && cd gpu-driver-container && git checkout {facts.commit[:12]}",
        f"  {make}",
        f"  {shell_command(['docker', 'push', recipe.image])}",
        "  (the tag the operator looks for: driver.version "
        f"{recipe.branch} + '-' + the node's kernel + '-' + {recipe.os_tag})",
        *(f"  note: {note}" for note in recipe.notes),
    ]
