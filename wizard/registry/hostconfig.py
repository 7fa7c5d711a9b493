"""This machine's registry configuration, read where skopeo, podman, docker and containerd read it.

- ``certs.d`` folders (containers-certs.d(5), docker's ``certs.d``): one folder per ``host[:port]``
  holding CAs (``*.crt``) and client certificates (``*.cert`` with the ``*.key`` of the same name),
  looked up in ``$XDG_CONFIG_HOME/containers/certs.d``, ``/etc/containers/certs.d`` and
  ``/etc/docker/certs.d``; the first folder that has the host wins, as in containers/image.
- ``registries.conf`` (containers-registries.conf(5), version 2): ``[[registry]]`` with its
  ``[[registry.mirror]]`` list; ``$CONTAINERS_REGISTRIES_CONF``, else the user's file, else
  ``/etc/containers/registries.conf``, plus the ``registries.conf.d/*.conf`` drop-ins.
- containerd's ``hosts.toml`` (``/etc/containerd/certs.d/<host>/hosts.toml``): ``[host."URL"]``
  entries that can pull, with their ``ca``, ``client`` and ``skip_verify``.

``/etc`` is ``$GPU_WIZARD_ETC`` when set (a node's ``/etc`` copied to a laptop reads the same). Every
file is read with a size cap; a broken or unusable entry becomes a note (one line naming the file)
and is skipped: a stale file must not block the wizard, and the front ends show the notes. Only
whole-registry mirrors are followed (the image checks route by host): a prefix with a path, a
wildcard or a digest-only mirror is skipped with a note saying so.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.engine.plan import check_mirror_source, check_mirror_url
from wizard.paths import xdg_config_home
from wizard.registry.auth import canonical_host
from wizard.registry.files import read_capped

MAX_DROP_INS = 64


@dataclass(frozen=True)
class EndpointTrust:
    """Extra TLS material for one endpoint: CA files, a client certificate and key, where they were found."""

    ca_files: tuple[str, ...] = ()
    client: tuple[str, str] | None = None
    origin: str = ""


@dataclass
class HostRegistryConfig:
    """Mirrors, insecure endpoints and per-endpoint TLS this machine's files declare, each with its origin."""

    mirrors: dict[str, str] = field(default_factory=dict)
    """Source registry host -> mirror URL (``https://host[:port][/prefix]``, checked like ``--registry-mirror``)."""
    mirror_origins: dict[str, str] = field(default_factory=dict)
    insecure: dict[str, str] = field(default_factory=dict)
    """Endpoint -> the file that turns its TLS verification off."""
    trust: dict[str, EndpointTrust] = field(default_factory=dict)
    """Endpoint -> the CA / client certificate a hosts.toml names for it."""
    notes: list[str] = field(default_factory=list)
    """Entries skipped, one line each: what, where, why."""


def etc_dir() -> Path:
    """``/etc``, or ``$GPU_WIZARD_ETC`` when set."""
    return Path(os.environ.get("GPU_WIZARD_ETC") or "/etc")


def certs_d_dirs() -> list[Path]:
    """The certs.d roots, in the order containers/image looks: the user's, containers', docker's."""
    etc = etc_dir()
    return [xdg_config_home() / "containers" / "certs.d", etc / "containers" / "certs.d", etc / "docker" / "certs.d"]


def _toml(path: Path, what: str) -> dict[str, Any]:
    raw = read_capped(path, what)
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{what} {path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{what} {path}: not valid TOML ({exc})") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ValueError(f"{what} {path}: nested too deeply to be a registry configuration") from None


def certs_d_trust(host: str, roots: list[Path] | None = None) -> EndpointTrust | None:
    """The certs.d CAs and client certificate for ``host[:port]``, from the first root that has its folder.

    ValueError (one line naming the file) for a client certificate without its key, or the reverse.
    """
    for root in roots if roots is not None else certs_d_dirs():
        folder = root / host
        if not folder.is_dir():
            continue
        try:
            names = sorted(p.name for p in folder.iterdir() if p.is_file())
        except OSError as exc:
            raise ValueError(f"certs.d folder {folder}: cannot be read ({exc.strerror})") from None
        cas = tuple(str(folder / n) for n in names if n.endswith(".crt"))
        certs = [n for n in names if n.endswith(".cert")]
        keys = [n for n in names if n.endswith(".key")]
        for name in certs:
            if name.removesuffix(".cert") + ".key" not in keys:
                raise ValueError(f"certs.d {folder / name}: a client certificate without its key {name[:-5]}.key")
        for name in keys:
            if name.removesuffix(".key") + ".cert" not in certs:
                raise ValueError(f"certs.d {folder / name}: a key without its client certificate {name[:-4]}.cert")
        client = (str(folder / certs[0]), str(folder / (certs[0][:-5] + ".key"))) if certs else None
        return EndpointTrust(cas, client, f"certs.d {folder}")
    return None


def registries_conf_files() -> list[Path]:
    """The registries.conf files in the order containers/image reads them (the main file, then its drop-ins)."""
    if env := os.environ.get("CONTAINERS_REGISTRIES_CONF"):
        return [Path(env)]  # the variable replaces every other file, drop-ins included
    user = xdg_config_home() / "containers" / "registries.conf"
    main = user if user.is_file() else etc_dir() / "containers" / "registries.conf"
    files = [main] if main.is_file() else []
    for folder in (
        etc_dir() / "containers" / "registries.conf.d",
        xdg_config_home() / "containers" / "registries.conf.d",
    ):
        if folder.is_dir():
            files.extend(sorted(folder.glob("*.conf"))[:MAX_DROP_INS])
    return files


def read_host_config(*, etc: Path | None = None) -> HostRegistryConfig:
    """Mirrors and TLS settings from registries.conf and containerd's hosts.toml (registries.conf wins)."""
    config = HostRegistryConfig()
    for path in registries_conf_files():
        try:
            _registries_conf(config, path, _toml(path, "registries.conf"))
        except ValueError as exc:
            config.notes.append(str(exc))
    hosts_root = (etc or etc_dir()) / "containerd" / "certs.d"
    if hosts_root.is_dir():
        for folder in sorted(hosts_root.iterdir())[:256]:
            path = folder / "hosts.toml"
            if not path.is_file():
                continue
            try:
                _hosts_toml(config, folder.name, path, _toml(path, "hosts.toml"))
            except ValueError as exc:
                config.notes.append(str(exc))
    return config


def _add_mirror(config: HostRegistryConfig, source: str, url: str, origin: str) -> None:
    try:
        host, mirror = check_mirror_source(source), check_mirror_url(url)
    except ValueError as exc:
        config.notes.append(f"{origin}: mirror skipped: {exc}")
        return
    host = canonical_host(host)
    if host in config.mirrors:  # a later drop-in or a hosts.toml does not override the first declaration
        config.notes.append(f"{origin}: {host} already mirrored by {config.mirror_origins[host]}; skipped")
        return
    config.mirrors[host] = mirror
    config.mirror_origins[host] = origin


def _registries_conf(config: HostRegistryConfig, path: Path, data: dict[str, Any]) -> None:
    if "registries" in data:
        config.notes.append(f"registries.conf {path}: version 1 format ([registries.*]); only version 2 is read")
    registries = data.get("registry", [])
    if not isinstance(registries, list):
        raise ValueError(f"registries.conf {path}: 'registry' must be an array of tables ([[registry]])")
    for number, entry in enumerate(registries, 1):
        if not isinstance(entry, dict):
            continue
        origin = f"registries.conf {path} (registry #{number})"
        prefix = str(entry.get("prefix") or entry.get("location") or "")
        if not prefix or "*" in prefix or "/" in prefix:
            config.notes.append(
                f"{origin}: prefix {prefix!r} skipped: only whole registries (a host, no path or wildcard) are followed"
            )
            continue
        if entry.get("insecure") is True:
            config.insecure.setdefault(canonical_host(str(entry.get("location") or prefix)), origin)
        mirrors = [m for m in entry.get("mirror", []) if isinstance(m, dict) and m.get("location")]
        pulls = [m for m in mirrors if m.get("pull-from-mirror", "all") != "digest-only"]
        if len(pulls) < len(mirrors):
            config.notes.append(f"{origin}: a digest-only mirror skipped (the image checks ask for tags)")
        if pulls:
            location = str(pulls[0]["location"])
            if pulls[0].get("insecure") is True:
                config.insecure.setdefault(canonical_host(location.split("/", 1)[0]), origin)
            _add_mirror(config, prefix, f"https://{location}", origin)
        elif entry.get("location") and str(entry["location"]) != prefix:  # a redirect: the location answers
            _add_mirror(config, prefix, f"https://{entry['location']}", origin)


def _hosts_toml(config: HostRegistryConfig, name: str, path: Path, data: dict[str, Any]) -> None:
    origin = f"hosts.toml {path}"
    if name == "_default":
        config.notes.append(f"{origin}: the _default entry is not followed (it covers every registry)")
        return
    hosts = data.get("host", {})
    if not isinstance(hosts, dict):
        raise ValueError(f"{origin}: 'host' must be a table of [host.\"URL\"] entries")
    for url, entry in hosts.items():
        if not isinstance(entry, dict) or "pull" not in entry.get("capabilities", ["pull", "resolve", "push"]):
            continue
        scheme, _, rest = str(url).partition("://")
        endpoint, _, url_path = (rest if scheme else str(url)).partition("/")
        if url_path.strip("/") and not (entry.get("override_path") and url_path.strip("/") == "v2"):
            config.notes.append(f"{origin}: {url} skipped: a mirror under a path is not followed")
            continue
        if entry.get("skip_verify") is True:
            config.insecure.setdefault(endpoint.lower(), origin)
        trust = _hosts_trust(entry, path.parent, origin)
        if trust is not None:
            config.trust.setdefault(endpoint.lower(), trust)
        _add_mirror(config, name, f"{scheme or 'https'}://{endpoint}", origin)
        return  # containerd tries the hosts in order: the first one answers the checks
    server = data.get("server")
    if isinstance(server, str) and server:
        endpoint = server.partition("://")[2].split("/", 1)[0] or server
        if canonical_host(endpoint) != canonical_host(name):
            _add_mirror(config, name, f"https://{endpoint}", origin)


def _hosts_trust(entry: dict[str, Any], folder: Path, origin: str) -> EndpointTrust | None:
    """A hosts.toml host's ``ca`` (one path or a list) and ``client`` (a path, a pair, or a list of pairs)."""
    ca = entry.get("ca", [])
    cas = [ca] if isinstance(ca, str) else [c for c in ca if isinstance(c, str)] if isinstance(ca, list) else []
    client = entry.get("client")
    pair: tuple[str, str] | None = None
    if isinstance(client, list) and client and isinstance(client[0], list):
        client = client[0]
    if isinstance(client, list) and len(client) == 2 and all(isinstance(c, str) for c in client):
        pair = (str(folder / client[0]), str(folder / client[1]))
    elif isinstance(client, str):
        pair = (str(folder / client), str(folder / client))  # one PEM holding the certificate and the key
    if not cas and pair is None:
        return None
    return EndpointTrust(tuple(str(folder / c) for c in cas), pair, origin)
