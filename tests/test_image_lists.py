"""``gpu-wizard render -o image-list|hauler|zarf``: every image of a plan, in the formats air-gap tools read (issue 39).

hauler reads a ``content.hauler.cattle.io/v1`` ``Images`` manifest (``spec.images[].name``; hauler.dev's "Hauler
Manifest for Images"); zarf a ``ZarfPackageConfig`` whose components list ``images`` (docs.zarf.dev, Zarf Package
Schema: ``kind``, ``metadata.name`` lower-case with dashes, ``components`` at least one, each with a ``name``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.helpers.render_cases import CP, RHEL_KERNEL, node, nodelist
from wizard.cli.main import main

ANSWERS = """version: 1
mode: upstream
operator: {version: v26.7.0}
driver:
  version: 580.126.20
  repository: harbor.corp.example/nvidia
  operandRegistry: harbor.corp.example
"""
#: What the cluster of ANSWERS pulls, as fetched from NVIDIA's registries (the driver for RHEL 9 nodes).
EXPECTED = [
    "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0",
    "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0",
    "nvcr.io/nvidia/driver:580.126.20-rhel9",
    "nvcr.io/nvidia/gpu-operator:v26.7.0",
    "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
    "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0",
    "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
    "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
]


def _render(tmp_path: Path, output: str, capsys: pytest.CaptureFixture[str]) -> str:
    (tmp_path / "answers.yaml").write_text(ANSWERS)
    nodes = nodelist(CP, node("gpu-0", "rhel", "9.4", RHEL_KERNEL), node("gpu-1", "rhel", "9.4", RHEL_KERNEL))
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    argv = ["render", "--answers", str(tmp_path / "answers.yaml"), "--nodes", str(tmp_path / "nodes.json")]
    assert main([*argv, "-o", output]) == 0
    return capsys.readouterr().out


def test_the_plain_list_names_every_image_to_fetch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _render(tmp_path, "image-list", capsys).splitlines() == EXPECTED


def test_the_hauler_manifest_parses_and_carries_the_images(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [doc] = [d for d in yaml.safe_load_all(_render(tmp_path, "hauler", capsys)) if d]
    assert doc["apiVersion"] == "content.hauler.cattle.io/v1" and doc["kind"] == "Images"
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])
    assert [entry["name"] for entry in doc["spec"]["images"]] == EXPECTED
    assert all(set(entry) == {"name"} for entry in doc["spec"]["images"])


def test_the_zarf_package_parses_and_carries_the_images(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [doc] = [d for d in yaml.safe_load_all(_render(tmp_path, "zarf", capsys)) if d]
    assert doc["kind"] == "ZarfPackageConfig"
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", doc["metadata"]["name"])
    assert doc["metadata"]["version"] == "v26.7.0"
    [component] = doc["components"]
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", component["name"]) and component["required"] is True
    assert component["images"] == EXPECTED


def test_the_node_table_stays_the_driver_images(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _render(tmp_path, "images", capsys)
    assert out == (
        "gpu-0\tharbor.corp.example/nvidia/driver:580.126.20-rhel9\n"
        "gpu-1\tharbor.corp.example/nvidia/driver:580.126.20-rhel9\n"
    )
