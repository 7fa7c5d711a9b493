"""``nvidia-smi`` output for a simulated node, laid out exactly like the real tool (``../shared/fixtures``)."""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from dataclasses import dataclass
from functools import lru_cache

from wizard.demo.scenarios.scenario import NodeSpec

FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
    "NVIDIA driver is installed and running.\n\n"
)
_SEP = "+-----------------------------------------+------------------------+----------------------+"
_WIDE = "+-----------------------------------------------------------------------------------------+"
_MIG_SEP = "+------------------+----------------------------------+-----------+-----------------------+"
_BUS_IDS = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
#: GFD product label -> (nvidia-smi name, memory MiB, power cap W, idle power W, compute capability).
PRODUCTS: dict[str, tuple[str, int, int, int, str]] = {
    "NVIDIA-H200": ("NVIDIA H200", 143771, 700, 77, "9.0"),
    "NVIDIA-H100-80GB-HBM3": ("NVIDIA H100 80GB HBM3", 81559, 700, 72, "9.0"),
    "NVIDIA-B200": ("NVIDIA B200", 183359, 1000, 140, "10.0"),
    "NVIDIA-A100-SXM4-80GB": ("NVIDIA A100-SXM4-80GB", 81920, 400, 61, "8.0"),
    "NVIDIA-L40S": ("NVIDIA L40S", 46068, 350, 35, "8.9"),
    "NVIDIA-A10": ("NVIDIA A10", 23028, 150, 16, "8.6"),
    "NVIDIA-A30": ("NVIDIA A30", 24576, 165, 31, "8.0"),
    "Tesla-T4": ("Tesla T4", 15360, 70, 10, "7.5"),
}
#: Driver branch -> CUDA version it ships.
CUDA = {
    "535": "12.2",
    "550": "12.4",
    "570": "12.8",
    "575": "12.9",
    "580": "13.0",
    "590": "13.1",
    "595": "13.2",
    "610": "13.3",
}


@dataclass(frozen=True)
class Gpu:
    """One simulated GPU."""

    index: int
    name: str
    memory_mib: int
    power_cap: int
    power_idle: int
    compute_cap: str
    bus_id: str
    uuid: str
    serial: str
    mig: tuple[str, ...] = ()
    """MIG mode on: the profile of each of its MIG devices (``1g.6gb``); empty: MIG off."""


def gpus_for(node: str, product: str, count: int, mig_profile: str = "", mig_per_gpu: int = 0) -> list[Gpu]:
    """The GPUs of a node, with stable bus ids, UUIDs and serials; each split in ``mig_per_gpu`` MIG devices."""
    return list(_gpus(node, product, count, mig_profile, mig_per_gpu))


_OID = uuid.NAMESPACE_OID.bytes
_VERSION_MASK = ~((0xC000 << 48) | (0xF000 << 64))
_VERSION_5 = (0x8000 << 48) | (5 << 76)


def _uuid5_oid(name: str) -> tuple[str, int]:
    """``uuid.uuid5(uuid.NAMESPACE_OID, name)`` as (its text, its integer), without a ``UUID`` object: the same
    SHA-1 with the RFC 4122 version and variant bits (a verification names 8 GPUs on each of 5,000 nodes)."""
    value = int.from_bytes(hashlib.sha1(_OID + name.encode()).digest()[:16], "big") & _VERSION_MASK | _VERSION_5
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}", value


@lru_cache(maxsize=8192)
def _gpus(node: str, product: str, count: int, mig_profile: str, mig_per_gpu: int) -> tuple[Gpu, ...]:
    """:func:`gpus_for`, once per node (a verification runs nvidia-smi on every node: a UUID hash per GPU)."""
    mig = (mig_profile,) * mig_per_gpu if mig_profile else ()
    name, memory, cap, idle, cc = PRODUCTS.get(product, (product.replace("-", " "), 81920, 400, 60, "8.0"))
    out = []
    for i in range(count):
        bus = _BUS_IDS[i] if count <= len(_BUS_IDS) else f"{0x10 + i * 0x10 % 0xF0:02X}"
        ident, number = _uuid5_oid(f"{node}/gpu/{i}")
        out.append(
            Gpu(i, name, memory, cap, idle, cc, f"00000000:{bus}:00.0", f"GPU-{ident}", f"{number % 10**13:013d}", mig)
        )
    return tuple(out)


def gpus_of(spec: NodeSpec) -> list[Gpu]:
    return gpus_for(spec.name, spec.gpu_product, spec.gpu_count, spec.mig_profile, spec.mig_per_gpu)


def cuda_of(version: str) -> str:
    return CUDA.get(version.split(".", 1)[0], "13.0")


def _new_header(version: str) -> bool:
    major = version.split(".", 1)[0]
    return major.isdigit() and int(major) >= 610


def _stamp(when: dt.datetime) -> str:
    return when.strftime("%a %b %e %H:%M:%S %Y")


def table(version: str, gpus: list[Gpu], when: dt.datetime) -> str:
    """The default ``nvidia-smi`` output."""
    shape = tuple((g.index, g.name, g.memory_mib, g.power_cap, g.power_idle, g.bus_id, g.mig) for g in gpus)
    return f"{_stamp(when)}       \n" + _table_body(version, shape)


@lru_cache(maxsize=256)
def _table_body(version: str, shape: tuple[tuple[int, str, int, int, int, str, tuple[str, ...]], ...]) -> str:
    """The table below its time stamp: the same for every node with the same GPUs and driver (it shows no
    UUID or serial), laid out once."""
    gpus = [
        Gpu(index, name, memory, cap, idle, "", bus, "", "", mig) for index, name, memory, cap, idle, bus, mig in shape
    ]
    cuda = cuda_of(version)
    if _new_header(version):
        header = f"| NVIDIA-SMI {version:<23}KMD Version: {version:<14}CUDA UMD Version: {cuda:<9}|"
    else:
        header = f"| NVIDIA-SMI {version:<23}Driver Version: {version:<14} CUDA Version: {cuda:<9}|"
    lines = [
        _WIDE,
        header,
        _SEP,
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for gpu in gpus:
        name = gpu.name if len(gpu.name) <= 27 else gpu.name[:24] + "..."
        temp = 28 + gpu.index % 4
        power = f"{gpu.power_idle}W / {gpu.power_cap:>4}W"
        lines += [
            f"|{gpu.index:>4}  {name:<31}On  |   {gpu.bus_id} Off |{'0':>21} |",
            f"| N/A   {temp:>2}C    P0{power:>24} |{0:>8}MiB / {gpu.memory_mib:>6}MiB |{0:>7}%{'Default':>13} |",
            f"|                                         |                        |{'Enabled' if gpu.mig else 'Disabled':>21} |",
            _SEP,
        ]
    lines += _mig_section(gpus)
    lines += [
        "",
        _WIDE,
        "| Processes:                                                                              |",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
        "|  No running processes found                                                             |",
        _WIDE,
    ]
    return "\n".join(lines) + "\n"


def _mig_section(gpus: list[Gpu]) -> list[str]:
    """The table's ``MIG devices:`` block: one row pair per MIG device (GPU, GI, CI, MIG Dev)."""
    if not any(gpu.mig for gpu in gpus):
        return []
    lines = [
        "",
        _WIDE,
        "| MIG devices:                                                                            |",
        _MIG_SEP,
        "| GPU  GI  CI  MIG |                     Memory-Usage |        Vol|        Shared         |",
        "|      ID  ID  Dev |                       BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |",
        "|                  |                                  |        ECC|                       |",
        "|==================+==================================+===========+=======================|",
    ]
    for gpu in gpus:
        for dev, _profile in enumerate(gpu.mig):
            share = gpu.memory_mib // max(len(gpu.mig), 1) - 240
            lines += [
                f"|{gpu.index:>3}{dev + 3:>5}{0:>4}{dev:>4}  |{'12MiB / ':>22}{share:>5}MiB    |{14:>3}{0:>7} |"
                "  1   0    1    0    1 |",
                "|                  |                 0MiB /  8191MiB  |           |                       |",
                _MIG_SEP,
            ]
    return lines


def _fields(gpu: Gpu, version: str) -> dict[str, tuple[str, str]]:
    """Query field -> (unit, value)."""
    return {
        "driver_version": ("", version),
        "name": ("", gpu.name),
        "uuid": ("", gpu.uuid),
        "index": ("", str(gpu.index)),
        "memory.total": ("MiB", str(gpu.memory_mib)),
    }


def query(spec: str, fmt: str, version: str, gpus: list[Gpu]) -> tuple[int, str, str]:
    """``--query-gpu=<spec> --format=<fmt>``: (exit code, stdout, stderr)."""
    names = [f.strip() for f in spec.split(",") if f.strip()]
    opts = {o.strip() for o in fmt.split(",")}
    if "csv" not in opts:
        return 2, "", f'"{fmt}" is not a valid format. Supported formats are csv\n'
    if not names:
        return 2, "", "Missing query fields.\n"
    rows = [_fields(g, version) for g in gpus]
    sample = rows[0] if rows else _fields(Gpu(0, "", 0, 0, 0, "", "", "", ""), version)
    for name in names:
        if name not in sample:
            return 2, "", f'Field "{name}" is not a valid field to query.\n\n'
    units = "nounits" not in opts
    out = []
    if "noheader" not in opts:
        out.append(", ".join(f"{n} [{sample[n][0]}]" if units and sample[n][0] else n for n in names))
    for row in rows:
        values = []
        for n in names:
            unit, value = row[n]
            values.append(f"{value} {unit}" if units and unit else value)
        out.append(", ".join(values))
    return 0, "\n".join(out) + "\n", ""


def full_query(version: str, gpus: list[Gpu], when: dt.datetime) -> str:
    """``nvidia-smi -q``: the top of the real report for each GPU."""
    new = _new_header(version)
    lines = [
        "",
        "==============NVSMI LOG==============",
        "",
        f"{'Timestamp':<42}: {_stamp(when)}",
        f"{'KMD Version' if new else 'Driver Version':<42}: {version}",
        f"{'CUDA UMD Version' if new else 'CUDA Version':<42}: {cuda_of(version)}",
        "",
        f"{'Attached GPUs':<42}: {len(gpus)}",
    ]
    for gpu in gpus:
        lines += [
            f"GPU {gpu.bus_id}",
            f"    {'Product Name':<38}: {gpu.name}",
            f"    {'Product Brand':<38}: {'Tesla' if gpu.name.startswith('Tesla') else 'NVIDIA'}",
            f"    {'Product Architecture':<38}: {'Hopper' if gpu.compute_cap == '9.0' else 'Ampere'}",
            f"    {'Display Mode':<38}: Requested functionality has been deprecated",
            f"    {'Persistence Mode':<38}: Enabled",
            f"    {'Addressing Mode':<38}: None",
            "    MIG Mode",
            f"        {'Current':<34}: {'Enabled' if gpu.mig else 'Disabled'}",
            f"        {'Pending':<34}: {'Enabled' if gpu.mig else 'Disabled'}",
            f"    {'Serial Number':<38}: {gpu.serial}",
            f"    {'GPU UUID':<38}: {gpu.uuid}",
            f"    {'Minor Number':<38}: {gpu.index}",
            f"    {'VBIOS Version':<38}: 96.00.A5.00.03",
            "    FB Memory Usage",
            f"        {'Total':<34}: {gpu.memory_mib} MiB",
            f"        {'Reserved':<34}: 614 MiB",
            f"        {'Used':<34}: 0 MiB",
            f"        {'Free':<34}: {gpu.memory_mib - 614} MiB",
            "",
        ]
    return "\n".join(lines) + "\n"


def run(args: list[str], version: str, gpus: list[Gpu], when: dt.datetime | None = None) -> tuple[int, str, str]:
    """Run ``nvidia-smi <args>`` against a working driver: (exit code, stdout, stderr)."""
    when = when or dt.datetime.now()
    query_spec, fmt = "", ""
    flags = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--query-gpu="):
            query_spec = arg.split("=", 1)[1]
        elif arg == "--query-gpu" and i + 1 < len(args):
            i += 1
            query_spec = args[i]
        elif arg.startswith("--format="):
            fmt = arg.split("=", 1)[1]
        elif arg == "--format" and i + 1 < len(args):
            i += 1
            fmt = args[i]
        else:
            flags.append(arg)
        i += 1
    if query_spec:
        return query(query_spec, fmt or "csv", version, gpus)
    if not flags:
        return 0, table(version, gpus, when), ""
    if flags in (["-q"], ["--query"]):
        return 0, full_query(version, gpus, when), ""
    return 2, "", "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n"
