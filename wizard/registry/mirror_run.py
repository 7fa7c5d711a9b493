"""Running the mirror plan with skopeo, item by item, with progress events.

Each item is copied with ``skopeo copy --all --preserve-digests docker://SRC docker://DST`` (``--all``
keeps every platform, so the mirror's digest equals the source's index digest) and then the
target's manifest is read back with ``skopeo inspect --raw`` and hashed, which gives the digest the
nodes will report. Subprocesses get argument lists, never a shell. Credentials never reach argv or
disk: they are handed to skopeo as an auth file in an anonymous in-memory file (``memfd``, inherited
as ``/dev/fd/N``); every line that is reported back is scrubbed of them all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from wizard.engine.naming import image_repository, split_reference
from wizard.registry.auth import Credentials, auths_json, canonical_host, load_auth_file, scrub, secrets_of
from wizard.registry.files import read_capped
from wizard.registry.hostconfig import certs_d_trust
from wizard.registry.tls import MAX_PEM

__all__ = ["MirrorError", "MirrorOutcome", "MirrorProgress", "run_mirror", "skopeo_available"]

_STDERR_TAIL = 12
_FATAL_MSG_RE = re.compile(r'level=(?:fatal|error) msg="((?:[^"\\]|\\.)*)"')


class MirrorSource(Protocol):
    """Anything with a source and a target image reference (the renderer's ``MirrorItem`` fits)."""

    @property
    def source(self) -> str: ...

    @property
    def target(self) -> str: ...


class MirrorError(Exception):
    """The mirror run cannot start at all (skopeo missing, unusable auth file)."""


@dataclass(frozen=True)
class MirrorProgress:
    """One step of a mirror run, for a progress display; ``index`` counts from 0."""

    index: int
    total: int
    source: str
    target: str
    event: Literal["started", "copying", "done", "failed"]
    message: str = ""


@dataclass(frozen=True)
class MirrorOutcome:
    """How one copy ended: the target's digest when it worked, the reason when it did not."""

    source: str
    target: str
    ok: bool
    digest: str = ""
    error: str = ""
    seconds: float = 0.0


def skopeo_available(skopeo: str = "skopeo") -> bool:
    """Whether the skopeo binary can be run (on PATH, or an executable path)."""
    return shutil.which(skopeo) is not None


def _repo_key(reference: str) -> str:
    host, repo, _ = split_reference(reference)
    return image_repository(canonical_host(host), repo)


@dataclass
class _Auth:
    """The auth arguments for skopeo plus the secrets to scrub and the fds to inherit."""

    args_for: Callable[[str, str], list[str]]
    inspect_args: Callable[[str], list[str]]
    pass_fds: tuple[int, ...]
    secrets: list[str]


@contextlib.contextmanager
def _auth(
    items: Sequence[MirrorSource],
    src_creds: Credentials | None,
    dest_creds: Credentials | None,
    authfile: str | None,
) -> Iterator[_Auth]:
    try:
        known = load_auth_file(authfile)
    except ValueError as exc:
        raise MirrorError(str(exc)) from None
    secrets = secrets_of([*known.values(), src_creds, dest_creds])
    if src_creds is None and dest_creds is None:
        flag = ["--authfile", authfile] if authfile else []
        yield _Auth(lambda s, d: list(flag), lambda d: list(flag), (), secrets)
        return
    merged = dict(known)
    for item in items:  # repository-scoped keys, so source and target may share a host
        for creds, reference in ((src_creds, item.source), (dest_creds, item.target)):
            if creds is not None:
                with contextlib.suppress(ValueError):  # a bad reference fails on its own item later
                    merged[_repo_key(reference)] = creds
    if not hasattr(os, "memfd_create"):  # not Linux: fall back to argv, as skopeo's own flags do
        copy_flags = [*(["--src-creds", f"{src_creds.username}:{src_creds.password}"] if src_creds else [])]
        copy_flags += ["--dest-creds", f"{dest_creds.username}:{dest_creds.password}"] if dest_creds else []
        base = ["--authfile", authfile] if authfile else []
        inspect = [*base, *(["--creds", f"{dest_creds.username}:{dest_creds.password}"] if dest_creds else [])]
        yield _Auth(lambda s, d: [*base, *copy_flags], lambda d: list(inspect), (), secrets)
        return
    fd = os.memfd_create("gpu-wizard-auth", os.MFD_CLOEXEC)
    try:
        os.write(fd, auths_json(merged).encode())
        flag = ["--authfile", f"/dev/fd/{fd}"]
        yield _Auth(lambda s, d: list(flag), lambda d: list(flag), (fd,), secrets)
    finally:
        os.close(fd)


def _tls_args(reference: str, insecure: set[str], flag: str, cert_dirs: dict[str, str], cert_flag: str) -> list[str]:
    host = canonical_host(split_reference(reference)[0])
    if host in insecure:
        return [f"{flag}=false"]
    return [f"{cert_flag}={cert_dirs[host]}"] if host in cert_dirs else []


@contextlib.contextmanager
def _cert_dirs(items: Sequence[MirrorSource], ca_files: Sequence[str]) -> Iterator[dict[str, str]]:
    """skopeo's ``--*-cert-dir`` per registry host when the user names CA files (``--registry-ca``): a temporary
    folder with those CAs beside what the host's own certs.d folder holds (a cert dir replaces that folder
    for skopeo). Without CA files skopeo reads the certs.d folders itself: ``{}``."""
    if not ca_files:
        yield {}
        return
    try:
        pems = [read_capped(Path(path), "CA file", limit=MAX_PEM) for path in ca_files]
    except ValueError as exc:
        raise MirrorError(str(exc)) from None
    hosts = set()
    for item in items:
        for reference in (item.source, item.target):
            with contextlib.suppress(ValueError):  # a bad reference fails on its own item later
                hosts.add(canonical_host(split_reference(reference)[0]))
    with tempfile.TemporaryDirectory(prefix="gpu-wizard-certs-") as root:
        dirs: dict[str, str] = {}
        for host in sorted(hosts):
            folder = Path(root) / host
            folder.mkdir()
            try:
                own = certs_d_trust(host)
            except ValueError as exc:
                raise MirrorError(str(exc)) from None
            for number, data in enumerate([*(Path(p).read_bytes() for p in (own.ca_files if own else ())), *pems]):
                (folder / f"ca-{number}.crt").write_bytes(data)
            if own is not None and own.client is not None:
                shutil.copyfile(own.client[0], folder / "client.cert")
                shutil.copyfile(own.client[1], folder / "client.key")
            dirs[host] = str(folder)
        yield dirs


def _readable(line: str) -> str:
    """skopeo's ``time=… level=fatal msg="…"`` reduced to the message itself."""
    match = _FATAL_MSG_RE.search(line)
    return match[1].replace('\\"', '"') if match else line.strip()


async def _run(
    argv: list[str], pass_fds: tuple[int, ...], timeout: float, on_line: Callable[[str], None] | None = None
) -> tuple[int, bytes, list[str]]:
    """Run one skopeo command; returns exit code, stdout (if not streamed) and the stderr tail."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        pass_fds=pass_fds,
    )
    assert proc.stdout is not None and proc.stderr is not None
    tail: deque[str] = deque(maxlen=_STDERR_TAIL)
    out = bytearray()

    async def read_stdout() -> None:
        assert proc.stdout is not None
        if on_line is None:
            out.extend(await proc.stdout.read())
            return
        async for raw in proc.stdout:
            if line := raw.decode("utf-8", "replace").strip():
                on_line(line)

    async def read_stderr() -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            if line := raw.decode("utf-8", "replace").strip():
                tail.append(line)

    try:
        async with asyncio.timeout(timeout):
            await asyncio.gather(read_stdout(), read_stderr())
            code = await proc.wait()
    except TimeoutError:
        await _kill(proc)
        tail.append(f"skopeo gave no result within {timeout:g} s and was stopped")
        return 124, bytes(out), list(tail)
    except asyncio.CancelledError:
        await _kill(proc)  # the wizard was closed or the run cancelled: leave no orphan copying
        raise
    return code, bytes(out), list(tail)


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


async def run_mirror(
    items: Iterable[MirrorSource],
    *,
    skopeo: str = "skopeo",
    src_creds: Credentials | None = None,
    dest_creds: Credentials | None = None,
    authfile: str | None = None,
    insecure_registries: Iterable[str] = (),
    on_progress: Callable[[MirrorProgress], None] | None = None,
    timeout: float = 3600.0,
    ca_files: Sequence[str] = (),
) -> list[MirrorOutcome]:
    """Copy every item's source to its target with skopeo, one after the other.

    Without credentials skopeo reads ``authfile`` or its usual auth files itself. With them, they
    are scoped to the items' source (``src_creds``) and target (``dest_creds``) repositories.
    TLS verification is disabled only for hosts in ``insecure_registries``; ``ca_files`` (``--registry-ca``)
    are trusted for every other registry, beside its certs.d folder. ``on_progress`` gets
    ``started``, one ``copying`` per skopeo output line, then ``done`` or ``failed``. A failed item
    does not stop the run. Raises MirrorError when skopeo is missing or the auth file is unusable.
    """
    work = list(items)
    if not skopeo_available(skopeo):
        raise MirrorError(f"{skopeo} is not installed: install skopeo, or run the mirror script by hand")
    insecure = {canonical_host(h) for h in insecure_registries if h.strip()}
    emit = on_progress or (lambda _: None)
    outcomes: list[MirrorOutcome] = []
    with _cert_dirs(work, ca_files) as cert_dirs, _auth(work, src_creds, dest_creds, authfile) as auth:
        for index, item in enumerate(work):
            outcome = await _mirror_one(index, len(work), item, skopeo, auth, (insecure, cert_dirs), emit, timeout)
            outcomes.append(outcome)
    return outcomes


async def _mirror_one(
    index: int,
    total: int,
    item: MirrorSource,
    skopeo: str,
    auth: _Auth,
    trust: tuple[set[str], dict[str, str]],
    emit: Callable[[MirrorProgress], None],
    timeout: float,
) -> MirrorOutcome:
    source, target = item.source, item.target
    insecure, cert_dirs = trust
    started = time.monotonic()

    def progress(event: Literal["started", "copying", "done", "failed"], message: str) -> None:
        emit(MirrorProgress(index, total, source, target, event, scrub(message, auth.secrets)))

    def failed(error: str) -> MirrorOutcome:
        error = scrub(error, auth.secrets)
        progress("failed", error)
        return MirrorOutcome(source, target, False, error=error, seconds=time.monotonic() - started)

    try:
        tls = _tls_args(source, insecure, "--src-tls-verify", cert_dirs, "--src-cert-dir")
        tls += _tls_args(target, insecure, "--dest-tls-verify", cert_dirs, "--dest-cert-dir")
        inspect_tls = _tls_args(target, insecure, "--tls-verify", cert_dirs, "--cert-dir")
    except ValueError as exc:
        progress("started", f"copy {source} -> {target}")
        return failed(f"invalid reference: {exc}")
    copy = ["copy", "--all", "--preserve-digests", *tls, f"docker://{source}", f"docker://{target}"]
    progress("started", " ".join(["skopeo", *copy]))
    code, _, tail = await _run(
        [skopeo, *copy[:3], *auth.args_for(source, target), *copy[3:]],
        auth.pass_fds,
        timeout,
        lambda line: progress("copying", line),
    )
    if code != 0:
        return failed(f"skopeo copy failed (exit {code}): " + " | ".join(_readable(x) for x in tail[-3:]))
    code, raw, tail = await _run(
        [skopeo, "inspect", "--raw", *auth.inspect_args(target), *inspect_tls, f"docker://{target}"],
        auth.pass_fds,
        timeout,
    )
    if code != 0 or not raw:
        return failed(f"copied, but skopeo inspect of {target} failed: " + " | ".join(_readable(x) for x in tail[-3:]))
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    progress("done", digest)
    return MirrorOutcome(source, target, True, digest=digest, seconds=time.monotonic() - started)
