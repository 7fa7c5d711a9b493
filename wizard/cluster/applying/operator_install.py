"""Carries out an operator install (day 0): the real ``helm`` binary, or the printed commands and a wait.

The engine's :class:`~wizard.engine.operator_install.OperatorInstall` says what to install; this module
writes its values file (0600, through the one file writer), runs ``helm upgrade --install`` when a ``helm``
binary is on PATH (an argv, never a script; ``--wait`` off: the wizard follows the rollout itself), applies
the NVIDIADriver CRs the chart does not deploy, and, where no helm runs, waits for the operator Deployment
a person creates with the printed command. After it the ClusterPolicy carries Helm's release annotations,
so :mod:`wizard.engine.ownership` sends every later apply through Helm. :func:`check_chart` runs ``helm template``
of a local chart with the install's values (``gpu-wizard bundle``: offline, bounded in time and output) and hands
its answer to :mod:`wizard.engine.chart_check`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tarfile
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.atomic_write import write_private
from wizard.bounded_read import CHART_YAML, RENDERED_CHART, InputError, load_bounded, parse_bounded
from wizard.cluster.applying.exclusion_labels import label_excluded, labelled_words
from wizard.cluster.core.preflight import DRIVERS, find_operator
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine import chart_check
from wizard.engine.operator_install import OperatorInstall, chart_release_mismatch
from wizard.engine.textsafe import printable
from wizard.paths import state_dir

HELM_TIMEOUT = 600.0
"""How long ``helm upgrade --install`` may take (it does not wait for pods: only the API writes)."""
OUTPUT_LIMIT = 64 * 1024
"""What of helm's output is kept (its tail is shown when it fails)."""
OPERATOR_POLL = 2.0


@dataclass(frozen=True)
class InstallRun:
    """What an install did."""

    ok: bool
    message: str
    """One line: what happened (helm's last lines when it failed)."""
    values_path: Path
    command: str
    """The ``helm`` command (quoted), run or to run."""
    through_helm: bool
    """True when the wizard ran helm itself; False: the person runs ``command``."""
    drivers_path: Path | None = None


def chart_app_version(reference: str) -> str:
    """A local chart's ``appVersion`` (a folder's ``Chart.yaml``, or the one at the top of a ``.tgz``); "" for a
    chart from a repository or an OCI reference (nothing is fetched), or one that names none. InputError (one line,
    naming the file) when the Chart.yaml cannot be read within its limits."""
    if reference.startswith("oci://") or "://" in reference:
        return ""
    path = Path(reference).expanduser()
    if path.is_dir():
        chart = load_bounded(path / "Chart.yaml", CHART_YAML, ("yaml",))
    elif path.is_file():
        chart = _packaged_chart(path)
    else:
        return ""  # not a local chart (a repository's chart name): helm says what it makes of it
    version = chart.get("appVersion") if isinstance(chart, dict) else None
    return printable(str(version)) if version is not None else ""


def _packaged_chart(path: Path) -> Any:
    """The Chart.yaml at the top of a packaged chart (``gpu-operator/Chart.yaml`` in ``gpu-operator-vX.Y.Z.tgz``)."""
    try:
        with tarfile.open(path, mode="r:*") as archive:
            for member in archive:
                if member.isfile() and member.name.count("/") == 1 and member.name.endswith("/Chart.yaml"):
                    if member.size > CHART_YAML.max_bytes:
                        raise InputError(f"Chart.yaml is larger than {CHART_YAML.max_bytes} bytes", source=str(path))
                    handle = archive.extractfile(member)
                    text = handle.read(CHART_YAML.max_bytes + 1).decode("utf-8", "replace") if handle else ""
                    return parse_bounded(text, CHART_YAML, ("yaml",))
    except (tarfile.TarError, OSError) as exc:
        raise InputError(f"cannot read the packaged chart: {exc}", source=str(path)) from None
    raise InputError("no Chart.yaml at the top of the packaged chart", source=str(path))


def chart_problem(install: OperatorInstall) -> str:
    """Why the install's chart cannot install its release, found before helm runs ("" when none is found)."""
    if install.chart.repository:  # the release's published chart, fetched by helm: its appVersion is the release
        return ""
    try:
        return chart_release_mismatch(install, chart_app_version(install.chart.reference))
    except InputError as exc:
        return f"--chart: {printable(str(exc))}"


def helm_binary() -> str | None:
    """The ``helm`` on PATH (None: the commands are printed instead)."""
    return shutil.which("helm")


def install_values_path(context: str) -> Path:
    """Where the install's values go unless the user names a file: the state folder, one file per context."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in printable(context)) or "cluster"
    return state_dir() / "helm" / f"gpu-wizard-install-{safe}.yaml"


def write_install(install: OperatorInstall, values_path: Path) -> Path | None:
    """Write the values file (and the extra NVIDIADriver CRs beside it); AtomicWriteError on failure."""
    write_private(values_path, install.values_text)
    if not install.drivers_text:
        return None
    drivers = values_path.with_name(values_path.stem + "-nvidiadrivers.yaml")
    write_private(drivers, install.drivers_text)
    return drivers


async def run_helm(argv: list[str], timeout: float = HELM_TIMEOUT) -> tuple[int, str]:
    """Run helm (no shell, no stdin); its exit status and the tail of its output (bounded)."""
    env = {**os.environ, "HELM_NO_PLUGINS": "1"}  # a plugin is code the wizard did not choose to run
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    assert proc.stdout is not None
    kept = bytearray()

    async def read() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(8192):
            kept.extend(chunk)
            del kept[:-OUTPUT_LIMIT]

    try:
        await asyncio.wait_for(asyncio.gather(read(), proc.wait()), timeout)
    except (TimeoutError, asyncio.CancelledError):
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    return proc.returncode or 0, kept.decode("utf-8", "replace")


TEMPLATE_TIMEOUT = 60.0
"""How long ``helm template`` of a local chart may take (it reads files and renders: seconds)."""


async def _template(argv: list[str], timeout: float) -> tuple[int, str, str]:
    """Run ``helm template`` (no shell, no stdin, no plugins): its exit status, its output (up to the rendered
    chart's byte limit: past it, an error) and its stderr's tail. TimeoutError after ``timeout``."""
    env = {**os.environ, "HELM_NO_PLUGINS": "1"}
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=env,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    out, err, overflow = bytearray(), bytearray(), [False]

    async def read_out() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            if len(out) + len(chunk) > RENDERED_CHART.max_bytes:
                overflow[0] = True
                proc.kill()
                return
            out.extend(chunk)

    async def read_err() -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(8192):
            err.extend(chunk)
            del err[:-OUTPUT_LIMIT]

    try:
        await asyncio.wait_for(asyncio.gather(read_out(), read_err(), proc.wait()), timeout)
    except (TimeoutError, asyncio.CancelledError):
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if overflow[0]:
        return -1, "", f"its output is larger than {RENDERED_CHART.max_bytes >> 20} MiB"
    return proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


async def check_chart(
    install: OperatorInstall, helm: str | None, timeout: float = TEMPLATE_TIMEOUT
) -> chart_check.ChartCheck:
    """The install's values rendered by ``helm template`` of its chart, judged by :mod:`wizard.engine.chart_check`;
    not checked (said why) without a helm binary or a local chart (nothing is fetched)."""
    chart = install.chart
    if chart.repository or chart.reference.startswith("oci://"):
        return chart_check.not_checked(
            f"the chart is not a local folder ({chart.words()}; rendering it would fetch it)"
        )
    if helm is None:
        return chart_check.not_checked("helm is not on PATH")
    folder = Path(chart.reference).expanduser()
    if not folder.exists():
        return chart_check.not_checked(f"chart {printable(chart.reference)}: no such file or folder")
    how = f"helm template of chart {printable(chart.reference)}"
    with tempfile.TemporaryDirectory(prefix="gpu-wizard-chart-") as work:
        values = Path(work) / "values.yaml"
        write_private(values, install.values_text)
        argv = [
            helm, "template", install.name, str(folder), "--namespace", install.namespace, "--values", str(values),
        ]  # fmt: skip
        try:
            code, output, errors = await _template(argv, timeout)
        except TimeoutError:
            return chart_check.not_checked(f"{how} did not finish within {timeout:.0f} s")
        except OSError as exc:
            return chart_check.not_checked(f"helm cannot run: {exc.strerror or exc}")
    if code != 0:
        return chart_check.refused(how, errors)
    return chart_check.rendered(how, output, install.release)


async def apply_drivers(gateway: Gateway, install: OperatorInstall) -> None:
    """Server-side apply of the NVIDIADriver CRs the chart does not deploy (its CRDs exist once helm ran)."""
    for doc in install.drivers:
        await gateway.apply_custom(*DRIVERS, doc["metadata"]["name"], doc, dry_run=False)


async def wait_for_operator(gateway: Gateway, namespace: str, timeout: float) -> dict[str, Any] | None:
    """The operator Deployment once it exists in ``namespace`` (None after ``timeout``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = await find_operator(gateway, namespace)
        if found is not None or loop.time() >= deadline:
            return found
        await asyncio.sleep(min(OPERATOR_POLL, max(0.0, deadline - loop.time())))


async def install_operator(
    gateway: Gateway,
    install: OperatorInstall,
    values_path: Path,
    *,
    kube: tuple[str, ...],
    helm: str | None,
    wait_timeout: float,
    said: Callable[[str], Awaitable[None] | None] | None = None,
    node_labels: Iterable[str] = (),
) -> InstallRun:
    """Install through ``helm`` (a path), or print nothing and wait for the person to run the command.

    ``node_labels``: the nodes the plan keeps out of the driver rollout, labelled first, so the operator's first
    reconcile never schedules the driver there (the label is the operator's to honour, not the chart's).
    ``said`` hears the command before the wait (a front end shows it). Returns once the operator
    Deployment exists (or helm failed, or ``wait_timeout`` passed without it).
    """
    command = install.command(str(values_path), kube)
    problem = chart_problem(install)  # before anything is written or run
    if problem:
        return InstallRun(False, problem, values_path, command, helm is not None)
    drivers_path = write_install(install, values_path)
    try:
        labelled = labelled_words(await label_excluded(gateway, node_labels))
    except ClusterError as exc:
        return InstallRun(False, f"nothing installed: {exc.message}", values_path, command, helm is not None)
    kept = f" ({labelled}: the label stays until removed)" if labelled else ""
    argv = install.helm_argv(str(values_path), kube)
    if helm is None:
        if said is not None:
            heard = said(command)
            if heard is not None:
                await heard
    else:
        code, output = await run_helm([helm, *argv[1:]])
        if code != 0:
            tail = " | ".join(line.strip() for line in printable(output).splitlines()[-3:] if line.strip())
            return InstallRun(False, f"helm exited {code}: {tail}{kept}", values_path, command, True, drivers_path)
    deployment = await wait_for_operator(gateway, install.namespace, wait_timeout if helm is None else 60.0)
    if deployment is None:
        why = "helm ran but" if helm else f"within {wait_timeout:.0f} s"
        return InstallRun(
            False,
            f"{why} no GPU Operator Deployment appeared in namespace {install.namespace}{kept}",
            values_path,
            command,
            helm is not None,
            drivers_path,
        )
    if install.drivers:
        await apply_drivers(gateway, install)
    how = "helm installed" if helm else "found"
    return InstallRun(
        True,
        f"{how} GPU Operator {install.release} (Helm release {install.name}, namespace {install.namespace})"
        + (f"; {labelled}" if labelled else ""),
        values_path,
        command,
        helm is not None,
        drivers_path,
    )
