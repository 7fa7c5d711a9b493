"""The catalog of known precompiled tuples and the support request for a kernel it lacks."""

from __future__ import annotations

import pytest

from wizard.bundled import asset_text
from wizard.engine.catalog import catalog_entries, driver_versions, parse_catalog, support_request, tuple_status
from wizard.engine.naming import precompiled_image, split_reference

SLE_KERNEL = "5.14.21-150500.55.166-default"


def test_bundled_catalog_is_valid_and_holds_the_release_tuples() -> None:
    entries = parse_catalog(asset_text("catalog.yaml"))
    assert {(e.tag, e.status) for e in entries} >= {
        ("580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5", "validated"),
        ("570.172.08.1-5.14.21-150500.55.166-default-sle-micro5.5", "published"),
    }
    for entry in entries:  # every tuple makes a valid image reference under the operator's naming rule
        image = precompiled_image("nvcr.io/nvidia", "driver", entry.driver, entry.kernel, entry.os)
        assert split_reference(image)[2] == entry.tag


@pytest.mark.parametrize(
    ("version", "kernel", "tag_os", "expected"),
    [
        ("580.126.09.1", SLE_KERNEL, "sle-micro5.5", "validated"),
        ("570.172.08.1", SLE_KERNEL, "sle-micro5.5", "published"),
        ("580", SLE_KERNEL, "sle-micro5.5", "published"),  # a branch tag floats: not the validated build
        ("580.126.09.1", "5.14.21-150500.55.200-default", "sle-micro5.5", "unknown"),
        ("580.126.09.1", SLE_KERNEL, "sles15.6", "unknown"),
        ("595.91.07", SLE_KERNEL, "sle-micro5.5", "unknown"),
        (" 580.126.09.1 ", f" {SLE_KERNEL}", "sle-micro5.5 ", "validated"),
    ],
)
def test_tuple_status(version: str, kernel: str, tag_os: str, expected: str) -> None:
    assert tuple_status(version, kernel, tag_os) == expected


def test_driver_versions_for_pickers() -> None:
    choices = driver_versions("sle-micro5.5")
    assert [(c.version, c.status, c.label) for c in choices][:2] == [
        ("580.126.09.1", "validated", "580.126.09.1  (✓ validated)"),
        ("570.172.08.1", "published", "570.172.08.1  (published)"),
    ]
    assert choices[0].kernels == (SLE_KERNEL,)
    assert driver_versions("ubuntu22.04") == []
    assert {c.version for c in driver_versions()} >= {"580.126.09.1", "570.172.08.1"}


def test_support_request_names_everything_the_vendor_needs() -> None:
    text = support_request(
        "gpu-node-7",
        "5.14.21-150500.55.200-default",
        "sle-micro5.5",
        "NVIDIA-H200",
        "580",
        checked=["nvcr.io/nvidia/driver:580-5.14.21-150500.55.200-default-sle-micro5.5: tag not found"],
    )
    assert text.startswith("Subject: precompiled NVIDIA driver image wanted for kernel 5.14.21-150500.55.200-default")
    for expected in [
        "Node:                 gpu-node-7",
        "Kernel (uname -r):    5.14.21-150500.55.200-default",
        "OS (image OS tag):    sle-micro5.5",
        "GPU model:            NVIDIA-H200",
        "Driver branch wanted: 580\n",
        "Image tag missing:    580-5.14.21-150500.55.200-default-sle-micro5.5",
        "this tuple is unknown; known tuples for sle-micro5.5: "
        "580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5 (validated)",
        "  - nvcr.io/nvidia/driver:580-5.14.21-150500.55.200-default-sle-micro5.5: tag not found",
    ]:
        assert expected in text
    other = support_request("n", "6.8.0-45-generic", "ubuntu24.04", "", "580.126.09.1")
    assert "Driver branch wanted: 580 (version 580.126.09.1)" in other
    assert "no tuple at all is known for ubuntu24.04" in other
    assert "unknown (no nvidia.com/gpu.product label)" in other


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("entries: []", "expected 'schema: 1'"),
        ("schema: 1\nentries: [{driver: '580', kernel: k, os: o, status: tested}]", r"entries\[0\]\.status"),
        ("schema: 1\nentries: [{driver: 'R580', kernel: k, os: o, status: published}]", r"entries\[0\]\.driver"),
        ("schema: 1\nentries: [{driver: '580', kernel: 'a b', os: o, status: published}]", r"entries\[0\]\.kernel"),
        ("schema: 1\nentries: [{driver: '580', kernel: k, os: o, status: published, extra: 1}]", r"\.extra"),
        (
            "schema: 1\nentries: [{driver: '5', kernel: k, os: o, status: published},"
            " {driver: '5', kernel: k, os: o, status: validated}]",
            r"entries\[1\]: tuple 5-k-o is listed twice",
        ),
        ("schema: 1\nentries: [", "not valid YAML"),
    ],
)
def test_broken_catalog_is_refused_with_the_field(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_catalog(text, "my-catalog.yaml")


def test_catalog_is_cached() -> None:
    assert catalog_entries() is catalog_entries()
