"""The image check asks the private registry about every operand image, as it does the driver's (issue 39):
a real docker-registry on loopback holds some of them; the one it lacks is found missing, with the command
that copies it, and ``apply`` refuses before it writes anything."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.helpers.fixtures.registry import RegistryServer
from tests.helpers.render_cases import CP, facts, node
from wizard.cli.images import image_lines, missing_images_refusal
from wizard.engine.plan import Plan
from wizard.engine.render import render
from wizard.registry.client import RegistryClient
from wizard.registry.images import check_images

RELEASE = "v26.7.0"


@pytest.fixture(autouse=True)
def isolated_auth_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's registry logins stay out."""
    for var in ("REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))


def _path(reference: str, host: str) -> tuple[str, str]:
    """(repository below the registry, tag) of a reference on ``host``."""
    name, _, tag = reference.removeprefix(f"{host}/").rpartition(":")
    return name, tag


async def test_a_missing_operand_image_is_found_with_the_command_that_copies_it(oci_registry: RegistryServer) -> None:
    host = oci_registry.host
    project = f"corp-{secrets.token_hex(4)}"  # the registry is shared by the session
    # The public sources are served by the same loopback registry through a runtime mirror: nothing leaves this machine.
    upstream = f"upstream-{secrets.token_hex(4)}"
    plan = Plan.model_validate(
        {
            "operator": {"version": RELEASE},
            "mode": "upstream",
            "driver": {
                "version": "580.126.20",
                "repository": f"{host}/{project}/nvidia",
                "operandRegistry": f"{host}/{project}",
                "registryMirrors": {"nvcr.io": f"http://{host}/{upstream}"},
            },
        }
    )
    rendered = render(plan, facts(CP, node("gpu-0")))
    toolkit = next(o for o in rendered.operand_images if "toolkit" in o.components)
    present = [o for o in rendered.operand_images if o is not toolkit]
    assert len(present) >= 6
    driver = next(e.image for e in rendered.node_images if e.image)
    digests = {}
    for reference in [driver, *(o.reference for o in present)]:
        digests[reference] = oci_registry.push_image(*_path(reference, host))
    source_repo, source_tag = toolkit.source.removeprefix("nvcr.io/").rsplit(":", 1)
    oci_registry.push_image(f"{upstream}/{source_repo}", source_tag)  # the toolkit's source holds it

    routes = {source: url.split("://", 1)[1] for source, url in plan.driver.registryMirrors.items()}
    async with RegistryClient(insecure_registries=[host], mirrors=routes) as client:
        statuses = await check_images(rendered, client)

    by_image = {s.image: s for s in statuses}
    assert set(by_image) == {driver, *(o.reference for o in rendered.operand_images)}
    for reference, digest in digests.items():
        assert by_image[reference].ok and by_image[reference].target.digest == digest, reference
    missing = by_image[toolkit.reference]
    assert not missing.ok and not missing.target.error and missing.components == ("toolkit",)
    assert missing.mirrorable, "the toolkit's public source is there: the mirror plan fixes it"
    lines = image_lines(statuses)
    [line] = [line for line in lines if line.startswith(("✗", "!"))]
    assert toolkit.reference in line and "gpu-wizard mirror --run" in line, line
    message, hint = missing_images_refusal([missing])
    assert "1 image(s) the plan needs are not where the cluster pulls from" in message and "mirror" in hint
    assert lines[-1].startswith(f"images: {len(statuses) - 1} of {len(statuses)} images present"), lines[-1]


async def test_an_operand_image_nowhere_is_named_with_its_copy_command(oci_registry: RegistryServer) -> None:
    host = oci_registry.host
    project = f"corp-{secrets.token_hex(4)}"
    plan = Plan.model_validate(
        {
            "operator": {"version": RELEASE},
            "mode": "preinstalled",
            "driver": {
                "operandRegistry": f"{host}/{project}",
                "registryMirrors": {
                    "nvcr.io": f"http://{host}/empty-{project}",
                    "registry.k8s.io": f"http://{host}/empty-{project}",
                },
            },
        }
    )
    rendered = render(plan, facts(CP, node("gpu-0")))
    routes = {source: url.split("://", 1)[1] for source, url in plan.driver.registryMirrors.items()}
    async with RegistryClient(insecure_registries=[host], mirrors=routes) as client:
        statuses = await check_images(rendered, client)
    assert statuses and all(not s.ok and s.components for s in statuses)
    nfd = next(s for s in statuses if "nfd" in s.components)
    assert nfd.image == f"{host}/{project}/nfd/node-feature-discovery:v0.19.0"
    line = image_lines([nfd])[0]
    assert line.startswith(f"✗ image {nfd.image} not found in the registry: the nfd pods") and (
        "skopeo copy --all --preserve-digests docker://registry.k8s.io/nfd/node-feature-discovery:v0.19.0 "
        f"docker://{nfd.image}" in line
    ), line


def test_the_driver_step_blocks_on_a_missing_operand_image_with_its_copy_command() -> None:
    """The TUI's finding for a missing operand image: blocking, on the Driver step, naming the pods and the command."""
    from screens.findings import _image_findings
    from screens.state import WizardState
    from wizard.engine.steps import DRIVER
    from wizard.registry.client import TagStatus
    from wizard.registry.images import ImageStatus

    target = "harbor.corp.example/nvidia/k8s/container-toolkit:v1.20.0"
    source = "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0"
    state = WizardState()
    state.images = [
        ImageStatus(
            image=target,
            nodes=(),
            kernel="",
            tag_os="",
            target=TagStatus(target, False),
            source=TagStatus(source, True, digest="sha256:" + "0" * 64),
            components=("toolkit",),
        )
    ]
    [finding] = _image_findings(state)
    assert finding.blocking and finding.step == DRIVER.name
    assert finding.message == f"{target} is missing in the target registry: the toolkit pods cannot pull it"
    assert f"skopeo copy --all --preserve-digests docker://{source} docker://{target}" in finding.hint


async def test_the_operand_images_are_asked_of_the_runtime_mirror_the_plan_names(oci_registry: RegistryServer) -> None:
    """``driver.registryMirrors`` routes the operand images' checks too (the chart's nvcr.io and registry.k8s.io),
    not only the driver's hosts: a plan whose nodes pull nvcr.io through a mirror finds every image there, none asked
    of nvcr.io itself (the real-cluster lane's finding: the checks went straight to nvcr.io and apply stopped)."""
    from wizard.cluster.facade import open_registry
    from wizard.engine.registry_routes import registry_hosts

    host = oci_registry.host
    project = f"corp-{secrets.token_hex(4)}"
    upstream = f"upstream-{secrets.token_hex(4)}"
    plan = Plan.model_validate(
        {
            "operator": {"version": RELEASE},
            "mode": "upstream",
            "driver": {
                "version": "580.126.20",
                "repository": f"{host}/{project}/nvidia",
                "source": f"{host}/{project}/nvidia",
                "registryMirrors": {
                    "nvcr.io": f"http://{host}/{upstream}",
                    "registry.k8s.io": f"http://{host}/{upstream}",
                },
            },
        }
    )
    rendered = render(plan, facts(CP, node("gpu-0")))
    driver = next(e.image for e in rendered.node_images if e.image)
    oci_registry.push_image(*_path(driver, host))
    for operand in rendered.operand_images:
        assert operand.reference.startswith(("nvcr.io/", "registry.k8s.io/")), operand
        name, tag = operand.reference.split("/", 1)[1].rsplit(":", 1)
        oci_registry.push_image(f"{upstream}/{name}", tag)

    client = open_registry(
        None, registry_hosts(plan), mirrors=plan.driver.registryMirrors, insecure_registries=[host], host_config=False
    )
    async with client:
        statuses = await check_images(rendered, client)
    assert len(statuses) == 1 + len(rendered.operand_images)
    assert all(s.ok for s in statuses), [f"{s.image}: {s.target.error or 'missing'}" for s in statuses if not s.ok]
    assert {"nvcr.io", "registry.k8s.io", host} <= set(registry_hosts(plan))
