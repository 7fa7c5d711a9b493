"""Parsing nvidia-smi output: the default table (both header styles) and ``--query-gpu`` CSV.

Driver 610 and newer print ``KMD Version:`` / ``CUDA UMD Version:`` instead of ``Driver Version:`` /
``CUDA Version:``; a parser that looks only for the old header reports no driver on new nodes.

A GPU in MIG mode shows ``Enabled`` in the table's ``MIG M.`` column and its MIG devices in a
``MIG devices:`` section (``GPU GI CI MIG-Dev`` rows); how many ``nvidia.com/gpu`` the device plugin
makes of them depends on the node's MIG strategy (:meth:`SmiReport.advertisable`).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

_HEADER_RE = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+(?:Driver|KMD) Version:\s+(?P<driver>\S+)\s+(?:CUDA(?: UMD)? Version:\s+(?P<cuda>\S+))?"
)
# First line of each GPU block in the table: "|   0  NVIDIA H200                    On  |   00000000:83:00.0 Off |"
_GPU_ROW_RE = re.compile(r"^\|\s+(?P<index>\d+)\s+(?P<name>.+?)\s+(?:On|Off)\s+\|\s+(?P<bus>[0-9A-Fa-f:.]+)\s")
# Third line of a GPU block ends with the MIG M. column: "|      ...      |       ...      |   Enabled |"
_MIG_MODE_RE = re.compile(r"\|\s+(?P<mode>Enabled|Disabled|N/A)\s+\|\s*$")
# A row of the "MIG devices:" section: "|  0    3   0   0  |   12MiB /  5836MiB   | ..."
_MIG_ROW_RE = re.compile(r"^\|\s+(?P<gpu>\d+)\s+(?P<gi>\d+)\s+(?P<ci>\d+)\s+(?P<dev>\d+)\s+\|")
#: GFD's nvidia.com/mig.strategy values (the device plugin's --mig-strategy).
MIG_SINGLE, MIG_MIXED = "single", "mixed"
_FAILURE_MARKERS = (
    "NVIDIA-SMI has failed",
    "couldn't communicate with the NVIDIA driver",
    "No devices were found",
    "command not found",
    "executable file not found",
)


@dataclass(frozen=True)
class SmiReport:
    """What one nvidia-smi run proved."""

    ok: bool
    driver_version: str = ""
    cuda_version: str = ""
    gpus: tuple[str, ...] = ()
    error: str = ""
    header_style: str = ""
    """``driver`` (classic ``Driver Version:``) or ``kmd`` (610+ ``KMD Version:``)."""
    bus_ids: tuple[str, ...] = field(default=(), compare=False)
    mig_enabled: tuple[bool, ...] = field(default=(), compare=False)
    """Per GPU, in table order: MIG mode on (``MIG M.`` is ``Enabled``)."""
    mig_devices: int = 0
    """Rows of the ``MIG devices:`` section."""

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    def advertisable(self, mig_strategy: str) -> int:
        """How many ``nvidia.com/gpu`` the device plugin makes of what nvidia-smi listed.

        ``single``: every MIG device is one ``nvidia.com/gpu`` (an A30 split in four gives 4);
        ``mixed``: MIG devices are ``nvidia.com/mig-<profile>`` resources, so only GPUs not in MIG
        mode count; otherwise (``none``, no label) every GPU counts once.
        """
        whole = sum(1 for on in self.mig_enabled if not on) if self.mig_enabled else self.gpu_count
        if mig_strategy == MIG_SINGLE and self.mig_devices:
            return self.mig_devices + whole
        if mig_strategy == MIG_MIXED and self.mig_enabled:
            return whole
        return self.gpu_count

    def summary(self) -> str:
        """``driver 590.48.01, CUDA 13.1, 1 × NVIDIA H200`` or the error."""
        if not self.ok:
            return self.error
        names = list(dict.fromkeys(self.gpus))
        gpus = ", ".join(f"{self.gpus.count(n)} × {n}" for n in names) or "no GPUs listed"
        cuda = f", CUDA {self.cuda_version}" if self.cuda_version else ""
        mig = f" ({self.mig_devices} MIG devices)" if self.mig_devices else ""
        return f"driver {self.driver_version}{cuda}, {gpus}{mig}"


def parse_table(output: str, exit_code: int = 0) -> SmiReport:
    """Parse the default ``nvidia-smi`` table; a failure message or non-zero exit gives ``ok=False``."""
    text = output.strip()
    for marker in _FAILURE_MARKERS:
        if marker in text:
            line = next((ln.strip() for ln in text.splitlines() if marker in ln), marker)
            return SmiReport(ok=False, error=line)
    header = _HEADER_RE.search(text)
    if exit_code != 0 or header is None:
        first = text.splitlines()[0].strip() if text else "no output"
        reason = f"exit code {exit_code}: {first}" if exit_code else f"no driver version in the output: {first}"
        return SmiReport(ok=False, error=reason)
    gpus: list[str] = []
    buses: list[str] = []
    mig_modes: list[bool] = []
    mig_devices = 0
    section = "gpus"
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if "MIG devices:" in line:
            section = "mig"
        elif "Processes:" in line:
            section = "processes"
        elif section == "gpus" and (row := _GPU_ROW_RE.match(line)):
            gpus.append(row["name"].strip())
            buses.append(row["bus"])
            mode = _MIG_MODE_RE.search(lines[number + 2]) if number + 2 < len(lines) else None
            mig_modes.append(mode is not None and mode["mode"] == "Enabled")
        elif section == "mig" and _MIG_ROW_RE.match(line):
            mig_devices += 1
    style = "kmd" if "KMD Version:" in header.group(0) else "driver"
    return SmiReport(
        ok=True,
        driver_version=header["driver"],
        cuda_version=header["cuda"] or "",
        gpus=tuple(gpus),
        header_style=style,
        bus_ids=tuple(buses),
        mig_enabled=tuple(mig_modes),
        mig_devices=mig_devices,
    )


def parse_query_csv(output: str) -> list[dict[str, str]]:
    """Rows of ``nvidia-smi --query-gpu=… --format=csv`` keyed by field name (units stripped from keys)."""
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    if not lines:
        return []
    reader = csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True)
    rows = list(reader)
    header = [re.sub(r"\s*\[.*?\]$", "", h.strip()) for h in rows[0]]
    return [dict(zip(header, (v.strip() for v in row), strict=False)) for row in rows[1:]]


def parse_query_noheader(output: str, fields: list[str]) -> list[dict[str, str]]:
    """Rows of ``--format=csv,noheader`` given the queried field names."""
    reader = csv.reader(io.StringIO(output.strip()), skipinitialspace=True)
    return [dict(zip(fields, (v.strip() for v in row), strict=False)) for row in reader if row]
