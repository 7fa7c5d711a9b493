"""nvidia-smi parsing against real captured outputs (classic and 610+ headers, query CSV), and MIG tables."""

import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from wizard.demo.sim import smi
from wizard.engine import nvsmi
from wizard.engine.nvsmi import parse_query_csv, parse_query_noheader, parse_table

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "nvidia-smi"


def _fixture(name: str) -> str:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"shared fixture {path} not present")
    return path.read_text()


def test_classic_header_h200() -> None:
    report = parse_table(_fixture("nvidia-smi_h200_590.48.01.txt"))
    assert report.ok
    assert (report.driver_version, report.cuda_version, report.header_style) == (
        "590.48.01",
        "13.1",
        "driver",
    )
    assert report.gpus == ("NVIDIA H200",)
    assert report.summary() == "driver 590.48.01, CUDA 13.1, 1 × NVIDIA H200"


def test_610_kmd_header_has_no_driver_version_string() -> None:
    text = _fixture("nvidia-smi_rtx-2080-super_610.57.04.txt")
    assert "Driver Version:" not in text
    report = parse_table(text)
    assert report.ok and report.driver_version == "610.57.04" and report.header_style == "kmd"
    assert report.cuda_version == "13.3"
    assert report.gpus == ("NVIDIA GeForce RTX 2080 ...",)


@pytest.mark.parametrize(
    ("output", "code", "error"),
    [
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n",
            9,
            "NVIDIA-SMI has failed",
        ),
        ("sh: nvidia-smi: command not found\n", 127, "command not found"),
        ("", 1, "exit code 1"),
    ],
)
def test_failures_are_reported_not_parsed(output: str, code: int, error: str) -> None:
    report = parse_table(output, code)
    assert not report.ok
    assert error in report.error


def test_query_csv_with_units_and_placeholders() -> None:
    rows = parse_query_csv(_fixture("nvidia-smi_query-gpu_h200_590.48.01.csv"))
    assert len(rows) == 1
    assert rows[0]["driver_version"] == "590.48.01"
    assert rows[0]["name"] == "NVIDIA H200"
    assert rows[0]["memory.total"] == "143771 MiB"


def test_query_noheader() -> None:
    rows = parse_query_noheader("580.126.09.1, NVIDIA H200\n580.126.09.1, NVIDIA H200\n", ["driver_version", "name"])
    assert [r["name"] for r in rows] == ["NVIDIA H200", "NVIDIA H200"]


def _mig_table(mig_per_gpu: tuple[int, ...]) -> str:
    gpus = smi.gpus_for("gpu-a30-01", "NVIDIA-A30", len(mig_per_gpu))
    split = [dataclasses.replace(g, mig=("1g.6gb",) * n) for g, n in zip(gpus, mig_per_gpu, strict=True)]
    return smi.table("580.126.20", split, dt.datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("mig_per_gpu", "strategy", "advertisable"),
    [
        ((4,), "single", 4),  # one A30 in four: nvidia.com/gpu 4
        ((4,), "", 1),
        ((0, 0), "none", 2),
        ((4, 0), "mixed", 1),  # MIG devices are nvidia.com/mig-1g.6gb there; only the whole GPU is nvidia.com/gpu
        ((0, 0), "mixed", 2),
    ],
)
def test_mig_devices_count_as_the_device_plugin_counts_them(
    mig_per_gpu: tuple[int, ...], strategy: str, advertisable: int
) -> None:
    report = nvsmi.parse_table(_mig_table(mig_per_gpu))
    assert report.gpu_count == len(mig_per_gpu) and report.mig_devices == sum(mig_per_gpu)
    assert report.mig_enabled == tuple(n > 0 for n in mig_per_gpu)
    assert report.advertisable(strategy) == advertisable
