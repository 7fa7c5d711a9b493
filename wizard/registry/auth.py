"""Registry credentials: where they come from, how they are looked up, and how they are kept secret.

Credentials come from a flag (``--creds``-style, kept in memory only) or from the auth files that
docker, podman and skopeo share (``containers-auth.json(5)``). They are never written to disk by the
wizard, and every text that might leave the process (errors, logs, progress, reports) is passed
through :func:`scrub` so that neither a password, its ``user:pass`` base64 form nor a bearer token
can leak into it.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.bounded_read import AUTH_FILE, BoundsError, InputError, load_bounded
from wizard.paths import xdg_config_home

log = logging.getLogger(__name__)

DOCKER_HUB = "docker.io"
DOCKER_HUB_ENDPOINT = "registry-1.docker.io"
_DOCKER_HUB_ALIASES = {"docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}
MASK = "***"
_CHALLENGE_RE = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


@dataclass(frozen=True, repr=False)
class Credentials:
    """A username and password (or token) for one registry; ``repr`` never shows the password."""

    username: str
    password: str

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password={MASK!r})"

    __str__ = __repr__

    @classmethod
    def parse(cls, text: str) -> Credentials:
        """Parse ``user:password`` as given on a command line; ValueError (without the secret) otherwise."""
        username, sep, password = text.partition(":")
        if not sep or not username or not password:
            raise ValueError("credentials must look like USER:PASSWORD (both parts non-empty)")
        return cls(username, password)

    def basic(self) -> str:
        """The ``Authorization: Basic`` value."""
        return "Basic " + self.encoded()

    def encoded(self) -> str:
        """``base64(user:password)``, the form auth files and Basic auth use."""
        return base64.b64encode(f"{self.username}:{self.password}".encode()).decode("ascii")

    def secrets(self) -> tuple[str, ...]:
        """Every string that would reveal the password if it appeared in output."""
        return (self.password, self.encoded(), f"{self.username}:{self.password}")


@dataclass(frozen=True)
class Challenge:
    """A registry's ``WWW-Authenticate`` challenge: ``basic`` or ``bearer`` plus its parameters."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)


def parse_challenge(header: str) -> Challenge | None:
    """Parse one ``WWW-Authenticate`` value such as ``Bearer realm="…",service="…",scope="…"``."""
    scheme, _, rest = header.strip().partition(" ")
    if not scheme:
        return None
    params = {m[1].lower(): (m[2] if m[2] is not None else m[3]) for m in _CHALLENGE_RE.finditer(rest)}
    return Challenge(scheme.lower(), params)


def canonical_host(host: str) -> str:
    """The name a registry is known by in auth files and flags: lower case, Docker Hub aliases folded."""
    host = host.strip().lower()
    return DOCKER_HUB if host in _DOCKER_HUB_ALIASES else host


def endpoint_host(host: str) -> str:
    """The host the v2 API is served on (Docker Hub's API lives on ``registry-1.docker.io``)."""
    host = canonical_host(host)
    return DOCKER_HUB_ENDPOINT if host == DOCKER_HUB else host


def normalize_auth_key(key: str) -> str:
    """An ``auths`` key as ``host[/path]``: scheme, trailing slash and docker's ``/v1/`` suffix removed."""
    key = re.sub(r"^[a-z][a-z0-9+.-]*://", "", key.strip(), flags=re.IGNORECASE).rstrip("/")
    host, _, path = key.partition("/")
    if path in {"v1", "v2"}:  # docker writes "https://index.docker.io/v1/" for Docker Hub
        path = ""
    host = canonical_host(host)
    return f"{host}/{path}" if path else host


def lookup(credentials: Mapping[str, Credentials], host: str, repository: str) -> Credentials | None:
    """The credentials for ``host/repository``: the longest matching ``host/path`` key, then ``host``."""
    if not credentials:
        return None
    wanted = f"{canonical_host(host)}/{repository}".rstrip("/")
    best: tuple[int, Credentials] | None = None
    for key, creds in credentials.items():
        norm = normalize_auth_key(key)
        if (wanted == norm or wanted.startswith(norm + "/")) and (best is None or len(norm) > best[0]):
            best = (len(norm), creds)
    return best[1] if best else None


def auth_file_paths() -> list[Path]:
    """The auth files skopeo/podman/docker read, highest precedence first (see containers-auth.json(5))."""
    paths: list[Path] = []
    if env := os.environ.get("REGISTRY_AUTH_FILE"):
        paths.append(Path(env))
    if runtime := os.environ.get("XDG_RUNTIME_DIR"):
        paths.append(Path(runtime) / "containers" / "auth.json")
    paths.append(xdg_config_home() / "containers" / "auth.json")
    docker_dir = os.environ.get("DOCKER_CONFIG") or str(Path.home() / ".docker")
    paths.append(Path(docker_dir) / "config.json")
    return paths


def _decode_entry(key: str, entry: Any, path: str) -> Credentials | None:
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("auth"), str) and entry["auth"]:
        try:
            user, sep, password = base64.b64decode(entry["auth"], validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            # never echo the value: it is the secret
            log.warning("auth file %s: entry %r has an 'auth' value that is not base64(user:password)", path, key)
            return None
        return Credentials(user, password) if sep and user else None
    name, secret = entry.get("username"), entry.get("password")
    if isinstance(name, str) and isinstance(secret, str) and name:
        return Credentials(name, secret)
    return None  # identitytoken / credsStore entries: nothing usable in the file itself


def read_auths(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The raw ``auths`` mapping of one auth file (``{}`` if it has none); ValueError naming the file if broken."""
    try:
        data = load_bounded(path, AUTH_FILE, ("json",))
    except BoundsError as exc:
        raise ValueError(f"auth file {exc}") from None
    except InputError as exc:
        if exc.message.startswith("not valid"):
            raise ValueError(f"auth file {path}: {exc.message}") from None
        raise ValueError(f"auth file {path}: cannot be read ({exc.message})") from None
    if not isinstance(data, dict):
        raise ValueError(f"auth file {path}: expected a JSON object with an 'auths' mapping")
    auths = data.get("auths", {})
    if not isinstance(auths, dict):
        raise ValueError(f"auth file {path}: 'auths' must be a mapping of registry to credentials")
    return auths


def load_auth_file(path: str | None = None) -> dict[str, Credentials]:
    """Credentials keyed by ``host[/path]`` from one auth file, or merged from the usual locations.

    With ``path`` the file must exist and be valid (ValueError otherwise). Without it the docker and
    containers locations are merged, higher-precedence files winning; missing files are skipped and
    broken ones are logged and skipped, because a stale file elsewhere must not block the wizard.
    Entries that only name a credential helper (``credsStore``/``credHelpers``) are not resolved.
    """
    if path is not None:
        return _decode_auths(read_auths(path), path)
    merged: dict[str, Credentials] = {}
    for candidate in reversed(auth_file_paths()):  # lowest precedence first, later files overwrite
        if not candidate.is_file():
            continue
        try:
            merged.update(_decode_auths(read_auths(candidate), str(candidate)))
        except ValueError as exc:
            log.warning("%s; ignoring it", exc)
    return merged


def _decode_auths(auths: Mapping[str, Any], path: str | os.PathLike[str]) -> dict[str, Credentials]:
    found: dict[str, Credentials] = {}
    for key, entry in auths.items():
        creds = _decode_entry(key, entry, str(path))
        if creds is not None:
            found[normalize_auth_key(key)] = creds
    return found


def auths_json(credentials: Mapping[str, Credentials]) -> str:
    """An in-memory auth file (``{"auths": ...}``) holding the given credentials, for handing to skopeo."""
    auths = {normalize_auth_key(key): {"auth": creds.encoded()} for key, creds in credentials.items()}
    return json.dumps({"auths": auths})


def secrets_of(credentials: Iterable[Credentials | None], extra: Iterable[str] = ()) -> list[str]:
    """All secret strings of some credentials plus extra ones (tokens), longest first, for :func:`scrub`."""
    found: set[str] = {s for s in extra if s}
    for creds in credentials:
        if creds is not None:
            found.update(s for s in creds.secrets() if s)
    return sorted(found, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***``; also masks any ``Authorization`` header value."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return re.sub(r"(?i)(authorization:\s*(?:basic|bearer)\s+)\S+", rf"\1{MASK}", text)
