"""Docker credential helpers: ``docker-credential-<name> get``, the server on stdin, JSON on stdout.

The protocol docker, podman and skopeo use for ``credsStore`` and ``credHelpers`` (ecr-login, gcloud,
acr-env, desktop, pass, secretservice): the helper prints ``{"ServerURL", "Username", "Secret"}``; a
``Username`` of ``<token>`` means the secret is an identity token. A helper that has nothing for the
server says so ("credentials not found") and exits non-zero: no credentials, not an error. Any other
failure is one line naming the helper and where it was named; the helper's own words are kept to
their first line (an ``Authorization`` value in it masked) and 200 characters.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal

from wizard.registry.auth import IDENTITY_TOKEN_USER, Credentials, Helper, scrub

HELPER_TIMEOUT = 30.0
"""Seconds a helper may take: cloud helpers (ecr-login, gcloud) fetch a token over the network."""
MAX_HELPER_OUTPUT = 64 * 1024
_NOT_FOUND = ("credentials not found", "no credentials", "not found in native keychain")


class HelperError(Exception):
    """A credential helper failed; the message names it and never holds a secret."""


def helper_program(helper: Helper) -> str:
    """The helper's executable name (its ``name`` is checked when the auth file is read)."""
    return f"docker-credential-{helper.name}"


async def helper_credentials(helper: Helper, server: str, *, timeout: float = HELPER_TIMEOUT) -> Credentials | None:
    """Ask ``helper`` for the credentials of ``server``; None when it has none, HelperError when it fails."""
    program = helper_program(helper)
    who = f"credential helper {program} ({helper.origin})"
    path = shutil.which(program)
    if path is None:
        raise HelperError(f"{who} is not installed (no {program} on PATH)")
    try:
        process = await asyncio.create_subprocess_exec(
            path,
            "get",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group: stopping it stops what it started too
        )
    except OSError as exc:
        raise HelperError(f"{who} cannot be started ({exc.strerror})") from None
    try:
        out, err = await asyncio.wait_for(_talk(process, server.encode()), timeout)
    except TimeoutError:
        raise HelperError(f"{who} gave no answer within {timeout:g} s") from None
    finally:
        if process.returncode is None:  # timed out, or answered more than any credentials are: stopped
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if hasattr(os, "killpg"):
                    os.killpg(process.pid, signal.SIGKILL)
                else:  # no process groups (Windows)
                    process.kill()
            # what it wrote before the kill must be read to the pipes' end: asyncio paused reading at the
            # stream's limit, and a pipe never closed keeps `wait()` from ever returning
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    while await stream.read(1 << 16):
                        pass
            await process.wait()
    if len(out) > MAX_HELPER_OUTPUT:
        raise HelperError(f"{who} answered more than {MAX_HELPER_OUTPUT >> 10} KiB; not credentials")
    if process.returncode != 0:
        said = (out or err)[:MAX_HELPER_OUTPUT].decode("utf-8", "replace").strip()
        if any(marker in said.lower() for marker in _NOT_FOUND):
            return None
        first = scrub(said.splitlines()[0], ())[:200] if said else ""
        raise HelperError(f"{who} failed (exit {process.returncode})" + (f": {first}" if first else ""))
    return _parse_answer(out, who)


async def _talk(process: asyncio.subprocess.Process, question: bytes) -> tuple[bytes, bytes]:
    """Write the question, read at most a little over the cap from stdout and stderr, wait for the exit
    (a helper that answers more is cut off, not read into memory)."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it may exit without reading
        process.stdin.write(question)
        await process.stdin.drain()
        process.stdin.close()
    errors = asyncio.ensure_future(_capped(process.stderr))
    out = await _capped(process.stdout)
    if len(out) > MAX_HELPER_OUTPUT:
        errors.cancel()
        return out, b""
    err = await errors
    await process.wait()
    return out, err


async def _capped(stream: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_HELPER_OUTPUT and (chunk := await stream.read(16384)):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _parse_answer(out: bytes, who: str) -> Credentials | None:
    try:
        data = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise HelperError(f"{who} answered something that is not JSON") from None
    if not isinstance(data, dict):
        raise HelperError(f"{who} answered JSON that is not an object with Username and Secret")
    user, secret = data.get("Username"), data.get("Secret")
    if not isinstance(user, str) or not isinstance(secret, str):
        raise HelperError(f"{who} answered without a Username and Secret string")
    if not secret:
        return None
    if user == IDENTITY_TOKEN_USER:
        return Credentials(user, "", identity_token=secret)
    if not user:
        raise HelperError(f"{who} answered a Secret without a Username")
    return Credentials(user, secret)
