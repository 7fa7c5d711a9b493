"""Registry credentials: where they come from, how they are looked up, and how they are kept secret.

Credentials come from a flag (``--creds``-style, kept in memory only), from the auth files that
docker, podman and skopeo share (``containers-auth.json(5)``: ``auth``, ``username``/``password`` and
``identitytoken`` entries) or from the credential helpers those files name (``credHelpers`` per
registry, ``credsStore`` for the rest; run by :mod:`wizard.registry.helpers`). Each keeps where it came
from (:attr:`AuthSources.origins`), so a front end can say so without showing it. They are never
written to disk by the wizard, and every text that might leave the process (errors, logs, progress, reports) is passed
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
from wizard.engine.naming import image_repository
from wizard.paths import xdg_config_home

log = logging.getLogger(__name__)

DOCKER_HUB = "docker.io"
DOCKER_HUB_ENDPOINT = "registry-1.docker.io"
_DOCKER_HUB_ALIASES = {"docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}
MASK = "***"
_CHALLENGE_RE = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


IDENTITY_TOKEN_USER = "<token>"
"""The user name a credential helper answers with when its secret is an identity token (docker's convention)."""


@dataclass(frozen=True, repr=False)
class Credentials:
    """A username and password (or token) for one registry; ``repr`` never shows the password.

    ``identity_token``: an OAuth2 refresh token (``docker login`` to a registry with a token service
    writes one as ``identitytoken``); exchanged for a bearer token, never sent as Basic auth.
    """

    username: str
    password: str
    identity_token: str = ""

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
        found = (self.identity_token,) if self.identity_token else ()
        if not self.password:
            return found
        return (*found, self.password, self.encoded(), f"{self.username}:{self.password}")


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


def lookup_key(credentials: Mapping[str, Credentials], host: str, repository: str) -> str | None:
    """The key whose credentials serve ``host/repository``: the longest matching ``host/path`` key, then ``host``."""
    if not credentials:
        return None
    wanted = image_repository(canonical_host(host), repository).rstrip("/")
    best: tuple[int, str] | None = None
    for key in credentials:
        norm = normalize_auth_key(key)
        if (wanted == norm or wanted.startswith(norm + "/")) and (best is None or len(norm) > best[0]):
            best = (len(norm), key)
    return best[1] if best else None


def lookup(credentials: Mapping[str, Credentials], host: str, repository: str) -> Credentials | None:
    """The credentials for ``host/repository``: the longest matching ``host/path`` key, then ``host``."""
    key = lookup_key(credentials, host, repository)
    return credentials[key] if key is not None else None


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
    token = entry.get("identitytoken")
    if isinstance(token, str) and token:
        user = entry.get("username") if isinstance(entry.get("username"), str) else ""
        return Credentials(user or IDENTITY_TOKEN_USER, "", identity_token=token)
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
    return None  # credsStore placeholders (an empty entry): nothing usable in the file itself


_HELPER_NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z", re.ASCII)


def _read_auth_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """One auth file's JSON object, read through the one bounded reader (size, depth, count, strings)."""
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
    return data


def read_auths(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The raw ``auths`` mapping of one auth file (``{}`` if it has none); ValueError naming the file if broken."""
    return _auths_of(_read_auth_json(path), path)


def _auths_of(data: dict[str, Any], path: str | os.PathLike[str]) -> dict[str, Any]:
    auths = data.get("auths", {})
    if not isinstance(auths, dict):
        raise ValueError(f"auth file {path}: 'auths' must be a mapping of registry to credentials")
    return auths


@dataclass(frozen=True)
class Helper:
    """A credential helper (``docker-credential-<name>``) and where it was named."""

    name: str
    origin: str
    server: str = ""
    """What the helper is asked for: the key as the file wrote it (``https://index.docker.io/v1/``); "" for the host."""


@dataclass
class AuthSources:
    """What the auth files say: credentials in them, helpers per registry, the default store, and origins."""

    credentials: dict[str, Credentials] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    """``host[/path]`` key -> where its credentials were found ("auth file PATH", "given to the wizard")."""
    helpers: dict[str, Helper] = field(default_factory=dict)
    """Registry host -> its ``credHelpers`` helper."""
    store: Helper | None = None
    """The ``credsStore`` helper, asked for every registry without its own credentials or helper."""

    def update(self, other: AuthSources) -> None:
        """``other`` on top of these (a file of higher precedence)."""
        self.credentials.update(other.credentials)
        self.origins.update(other.origins)
        self.helpers.update(other.helpers)
        self.store = other.store or self.store

    def helper_for(self, host: str) -> Helper | None:
        """The helper to ask for ``host`` (docker's order): its ``credHelpers`` entry, else ``credsStore``."""
        return self.helpers.get(canonical_host(host)) or self.store

    def origin_of(self, host: str, repository: str) -> str:
        """Where the credentials for ``host/repository`` come from ("" when there are none)."""
        key = lookup_key(self.credentials, host, repository)
        if key is not None and canonical_host(host) not in self.helpers:
            return self.origins.get(key, "")
        helper = self.helper_for(host)
        return f"docker-credential-{helper.name} ({helper.origin})" if helper else ""


def _helper(name: Any, origin: str, path: str, server: str = "") -> Helper:
    if not isinstance(name, str) or not _HELPER_NAME_RE.match(name):
        raise ValueError(
            f"auth file {path}: {origin.split(' ', 1)[0]} names {str(name)[:40]!r}, not a credential helper name "
            "(letters, digits, . _ -; the wizard runs docker-credential-<name>)"
        )
    return Helper(name, f"{origin} in {path}", server)


def read_auth_sources(path: str | os.PathLike[str]) -> AuthSources:
    """Everything one auth file says; ValueError naming the file (never its content) if it is broken."""
    data = _read_auth_json(path)
    sources = AuthSources()
    for key, creds in _decode_auths(_auths_of(data, path), path).items():
        sources.credentials[key] = creds
        sources.origins[key] = f"auth file {path}"
    if "credsStore" in data and data["credsStore"] != "":
        sources.store = _helper(data["credsStore"], "credsStore", str(path))
    helpers = data.get("credHelpers", {})
    if not isinstance(helpers, dict):
        raise ValueError(f"auth file {path}: 'credHelpers' must be a mapping of registry to helper name")
    for key, name in helpers.items():
        sources.helpers[normalize_auth_key(str(key))] = _helper(name, "credHelpers", str(path), str(key))
    return sources


def load_auth_sources(path: str | None = None) -> AuthSources:
    """:class:`AuthSources` of one auth file, or merged from the usual locations.

    With ``path`` the file must exist and be valid (ValueError otherwise). Without it the docker and
    containers locations are merged, higher-precedence files winning; missing files are skipped and
    broken ones are logged and skipped, because a stale file elsewhere must not block the wizard.
    """
    if path is not None:
        return read_auth_sources(path)
    merged = AuthSources()
    for candidate in reversed(auth_file_paths()):  # lowest precedence first, later files overwrite
        if not candidate.is_file():
            continue
        try:
            merged.update(read_auth_sources(candidate))
        except ValueError as exc:
            log.warning("%s; ignoring it", exc)
    return merged


def load_auth_file(path: str | None = None) -> dict[str, Credentials]:
    """Credentials keyed by ``host[/path]`` written in one auth file, or merged from the usual locations
    (see :func:`load_auth_sources`; the helpers the files name are not run here)."""
    return load_auth_sources(path).credentials


def _decode_auths(auths: Mapping[str, Any], path: str | os.PathLike[str]) -> dict[str, Credentials]:
    found: dict[str, Credentials] = {}
    for key, entry in auths.items():
        creds = _decode_entry(key, entry, str(path))
        if creds is not None:
            found[normalize_auth_key(key)] = creds
    return found


def auths_json(credentials: Mapping[str, Credentials]) -> str:
    """An in-memory auth file (``{"auths": ...}``) holding the given credentials, for handing to skopeo."""
    auths = {
        normalize_auth_key(key): {"identitytoken": creds.identity_token}
        if creds.identity_token
        else {"auth": creds.encoded()}
        for key, creds in credentials.items()
    }
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
