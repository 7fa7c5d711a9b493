"""Table tests: the operator's naming rules, release by release, as the wizard reproduces them."""

from __future__ import annotations

import pytest

from wizard.engine.naming import (
    Release,
    driver_image,
    image_path,
    nvidiadriver_daemonset_name,
    os_tag,
    precompiled_daemonset_name,
    precompiled_image,
    sanitize_kernel,
    upstream_image,
)

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("os_id", "version_id", "release", "expected"),
    [
        # <= v25.10: always the full VERSION_ID
        ("rhel", "9.4", "v25.10.1", "rhel9.4"),
        ("rhel", "10.1", "v25.10.1", "rhel10.1"),
        ("rocky", "9.4", "v25.10.1", "rocky9.4"),
        ("ol", "9.4", "v25.10.1", "ol9.4"),
        ("ubuntu", "22.04", "v25.10.1", "ubuntu22.04"),
        # v26.3: rocky, and rhel >= 10, keep only the major
        ("rhel", "9.6", "v26.3.3", "rhel9.6"),
        ("rhel", "9.4", "v26.3.3", "rhel9.4"),
        ("rhel", "10.1", "v26.3.3", "rhel10"),
        ("rocky", "9.4", "v26.3.3", "rocky9"),
        ("ol", "9.4", "v26.3.3", "ol9.4"),
        ("ubuntu", "24.04", "v26.3.3", "ubuntu24.04"),
        # v26.7: rhel, rocky and ol keep only the major
        ("rhel", "9.4", "v26.7.0", "rhel9"),
        ("rhel", "10.1", "v26.7.0", "rhel10"),
        ("rocky", "8.10", "v26.7.0", "rocky8"),
        ("ol", "9.4", "v26.7.0", "ol9"),
        ("ubuntu", "22.04", "v26.7.0", "ubuntu22.04"),
        ("sles", "15.6", "v26.7.0", "sles15.6"),
        ("sl-micro", "6.1", "v26.7.0", "sl-micro6.1"),
        ("sle-micro", "5.5", "v26.7.0", "sle-micro5.5"),
        ("rhcos", "4.18", "v26.7.0", "rhcos4.18"),
        ("debian", "12", "v26.7.0", "debian12"),
    ],
)
def test_os_tag_per_release(os_id: str, version_id: str, release: str, expected: str) -> None:
    assert os_tag(os_id, version_id, release) == expected


def test_os_tag_accepts_a_parsed_release_and_short_forms() -> None:
    assert os_tag("rhel", "9.4", Release(26, 7)) == "rhel9"
    assert os_tag("rhel", "9.4", "26.3") == "rhel9.4"
    assert Release.parse("26.7") == Release(26, 7, 0)
    assert str(Release.parse("v26.7.0")) == "v26.7.0"
    with pytest.raises(ValueError, match="not an operator release"):
        Release.parse("latest")


def test_documents_example_sle_micro_precompiled_tag() -> None:
    """SLE Micro 5.5, kernel 5.14.21-150500.55.166-default, driver 580.126.09.1 (the facts document)."""
    tag = os_tag("sle-micro", "5.5", "v26.7.0")
    image = precompiled_image(
        "registry.example.com/mlops", "nvidia-driver", "580.126.09.1", "5.14.21-150500.55.166-default", tag
    )
    assert image == "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"
    assert image.split(":", 1)[1] == "580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"


@pytest.mark.parametrize(
    ("repository", "image", "version", "kernel", "tag_os", "expected"),
    [
        ("nvcr.io/nvidia", "driver", "535", "5.15.0-1048-nvidia", "ubuntu22.04",
         "nvcr.io/nvidia/driver:535-5.15.0-1048-nvidia-ubuntu22.04"),
        # the kernel goes in unsanitised: a RHEL kernel keeps its arch
        ("r.example.com/x", "driver", "580", "5.14.0-427.13.1.el9_4.x86_64", "rhel9",
         "r.example.com/x/driver:580-5.14.0-427.13.1.el9_4.x86_64-rhel9"),
        # kbld style: no repository and no version, the image is used verbatim
        ("", "r.example.com/x/driver", "", "6.4.0-150600.23.25-default", "sl-micro6.1",
         "r.example.com/x/driver-6.4.0-150600.23.25-default-sl-micro6.1"),
    ],
)  # fmt: skip
def test_precompiled_image(repository: str, image: str, version: str, kernel: str, tag_os: str, expected: str) -> None:
    assert precompiled_image(repository, image, version, kernel, tag_os) == expected
    assert (
        driver_image(
            precompiled=True, repository=repository, image=image, version=version, kernel=kernel, tag_os=tag_os
        )
        == expected
    )


def test_precompiled_image_rejects_a_digest() -> None:
    with pytest.raises(ValueError, match="digest is not supported when precompiled"):
        precompiled_image("nvcr.io/nvidia", "driver", DIGEST, "5.15.0-1048-nvidia", "ubuntu22.04")


@pytest.mark.parametrize(
    ("version", "tag_os", "expected"),
    [
        ("580.126.20", "ubuntu22.04", "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04"),
        ("580.126.20", "rhel9", "nvcr.io/nvidia/driver:580.126.20-rhel9"),
        ("580.105.08", "rhel9.4", "nvcr.io/nvidia/driver:580.105.08-rhel9.4"),
        (DIGEST, "ubuntu22.04", f"nvcr.io/nvidia/driver@{DIGEST}"),  # a digest gets no OS suffix
    ],
)
def test_upstream_image(version: str, tag_os: str, expected: str) -> None:
    assert upstream_image("nvcr.io/nvidia", "driver", version, tag_os) == expected
    assert (
        driver_image(
            precompiled=False, repository="nvcr.io/nvidia", image="driver", version=version, kernel="k", tag_os=tag_os
        )
        == expected
    )


def test_upstream_image_never_carries_the_kernel() -> None:
    image = upstream_image("nvcr.io/nvidia", "driver", "580.126.20", "ubuntu22.04")
    assert "5.15" not in image and image.endswith(":580.126.20-ubuntu22.04")


@pytest.mark.parametrize(
    ("repository", "image", "version", "expected"),
    [
        ("nvcr.io/nvidia", "driver", "580.126.20", "nvcr.io/nvidia/driver:580.126.20"),
        ("nvcr.io/nvidia", "driver", DIGEST, f"nvcr.io/nvidia/driver@{DIGEST}"),
        ("", "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04", "", "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04"),
    ],
)
def test_image_path(repository: str, image: str, version: str, expected: str) -> None:
    assert image_path(repository, image, version) == expected


@pytest.mark.parametrize(("repository", "version"), [("nvcr.io/nvidia", ""), ("", "580.126.20")])
def test_image_path_needs_all_three_or_neither(repository: str, version: str) -> None:
    with pytest.raises(ValueError, match="repository, image and version must all be set"):
        image_path(repository, "driver", version)


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        ("5.15.0-1048-nvidia", "5.15.0-1048-nvidia"),
        ("5.14.21-150500.55.166-default", "5.14.21-150500.55.166-default"),
        ("5.14.0-427.13.1.el9_4.x86_64", "5.14.0-427.13.1.el9.4"),
        ("5.14.0-427.13.1.el9_4.aarch64", "5.14.0-427.13.1.el9.4"),
        ("5.14.0-503.el9.aarch64_64k", "5.14.0-503.el9"),
        ("6.8.0-1015-AWS", "6.8.0-1015-aws"),
    ],
)
def test_sanitize_kernel(kernel: str, expected: str) -> None:
    assert sanitize_kernel(kernel) == expected


@pytest.mark.parametrize(
    ("kernel", "tag_os", "expected"),
    [
        ("5.15.0-1048-nvidia", "ubuntu22.04", "nvidia-driver-daemonset-5.15.0-1048-nvidia-ubuntu22.04"),
        ("5.14.0-427.13.1.el9_4.x86_64", "rhel9.4", "nvidia-driver-daemonset-5.14.0-427.13.1.el9.4-rhel9.4"),
        (
            "5.14.21-150500.55.166-default",
            "sle-micro5.5",
            "nvidia-driver-daemonset-5.14.21-150500.55.166-default-sle-micro5.5",
        ),
    ],
)
def test_precompiled_daemonset_name_uses_the_sanitised_kernel(kernel: str, tag_os: str, expected: str) -> None:
    assert precompiled_daemonset_name(kernel, tag_os) == expected


def test_nvidiadriver_daemonset_name_is_per_os_pool() -> None:
    ubuntu = nvidiadriver_daemonset_name("gpu", "ubuntu22.04", "uid-1", "ubuntu22.04")
    rhel = nvidiadriver_daemonset_name("gpu", "rhel9", "uid-1", "rhel9")
    assert ubuntu.startswith("nvidia-gpu-driver-ubuntu22.04-")
    assert rhel.startswith("nvidia-gpu-driver-rhel9-")
    assert ubuntu != rhel
    assert ubuntu == nvidiadriver_daemonset_name("gpu", "ubuntu22.04", "uid-1", "ubuntu22.04")


def test_nvidiadriver_daemonset_name_always_fits_a_dns_label() -> None:
    """The operator cuts the prefix, never the hash, so two long OS tags on one CR still get distinct names."""
    long_a = nvidiadriver_daemonset_name("gpu", "x" * 80, "uid-1", "5.15.0-70-generic")
    long_b = nvidiadriver_daemonset_name("gpu", "x" * 80, "uid-1", "5.15.0-71-generic")
    assert len(long_a) == len(long_b) == 63 and long_a != long_b
    assert long_a.startswith("nvidia-gpu-driver-xxx")


@pytest.mark.parametrize(
    ("repository", "image", "version", "precompiled"),
    [
        ("nvcr.io/nvidia", "nvcr.io/nvidia/driver:525.85.03", "535.104.05", False),
        ("", "nvcr.io/nvidia/driver@sha256:" + "a" * 64, "", True),
        ("nvcr.io/nvidia", "Driver", "535", False),
    ],
)
def test_driver_image_refuses_what_the_operators_reference_check_refuses(
    repository: str, image: str, version: str, precompiled: bool
) -> None:
    with pytest.raises(ValueError):
        driver_image(
            precompiled=precompiled, repository=repository, image=image, version=version, kernel="5.4.0", tag_os="u22"
        )
