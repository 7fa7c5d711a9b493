"""What a registry client presents to each registry: credentials (files, helpers) and TLS (CAs, client certificates).

:class:`RegistryAccess` answers two questions for :class:`wizard.registry.client.RegistryClient`:
which credentials serve ``host/repository`` (the auth files' entries, else the credential helper
they name, run once per host and only when a registry asks for credentials), and which TLS context
an endpoint gets (the system's CAs plus ``--registry-ca`` and a kubeconfig's CA; plus, per endpoint,
the CAs and client certificate of its ``certs.d`` folder or of a containerd ``hosts.toml``). Every
secret it learns is added to :meth:`secrets`, so the client's scrubbing covers helper answers too.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable, Mapping, Sequence, Set
from pathlib import Path

from wizard.engine.registry_routes import AccessNote
from wizard.registry.auth import DOCKER_HUB, AuthSources, Credentials, canonical_host, lookup, lookup_key, secrets_of
from wizard.registry.files import read_capped
from wizard.registry.helpers import HelperError, helper_credentials
from wizard.registry.hostconfig import EndpointTrust, certs_d_trust
from wizard.registry.tls import MAX_PEM, tls_context

DOCKER_HUB_SERVER = "https://index.docker.io/v1/"
"""What docker asks a credential store for Docker Hub's credentials."""


class AccessError(Exception):
    """Credentials or TLS material that cannot be used: one line naming the file or helper, never a secret."""


def check_ca_file(path: str) -> str:
    """``--registry-ca FILE``: a readable PEM file holding a certificate, else ValueError naming it."""
    raw = read_capped(Path(path), "CA file", limit=MAX_PEM)
    if b"-----BEGIN CERTIFICATE-----" not in raw:
        raise ValueError(f"CA file {path}: no PEM certificate in it (-----BEGIN CERTIFICATE-----)")
    return path


class RegistryAccess:
    """Credentials and TLS per registry for one client (see the module's documentation)."""

    def __init__(
        self,
        sources: AuthSources,
        *,
        ca_files: Sequence[str] = (),
        ca_data: str | None = None,
        certs_dirs: Sequence[Path] | None = None,
        endpoint_trust: Mapping[str, EndpointTrust] | None = None,
        route_origins: Mapping[str, str] | None = None,
        insecure_origins: Mapping[str, str] | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        self.sources = sources
        self.ca_files = tuple(ca_files)
        self.problem = ""
        """Why the CA files cannot be used ("" when they can): every TLS connection then fails with it, so a
        front end shows it where the image checks' results go, as it shows any other registry problem."""
        for path in self.ca_files:
            try:
                check_ca_file(path)
            except ValueError as exc:
                self.problem = self.problem or str(exc)
        self._ca_data = ca_data
        self._certs_dirs = list(certs_dirs) if certs_dirs is not None else None
        self._endpoint_trust = {k.lower(): v for k, v in (endpoint_trust or {}).items()}
        self._helper_answers: dict[str, Credentials | None] = {}
        self._tls: dict[str, ssl.SSLContext | bool] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.default_tls: ssl.SSLContext | bool = True
        self.trust_origins: dict[str, str] = {}
        """Endpoint -> where its extra TLS material came from (for the front ends' "where from")."""
        self._route_origins = dict(route_origins or {})
        self._insecure_origins = dict(insecure_origins or {})
        self._notes = list(notes)

    async def open(self) -> None:
        """Build the shared TLS context when there are extra CAs (in a thread: it loads the system's CA store)."""
        if (self.ca_files or self._ca_data) and not self.problem:
            self.default_tls = await asyncio.to_thread(self._context, None)

    def _context(self, trust: EndpointTrust | None) -> ssl.SSLContext:
        files = (*self.ca_files, *(trust.ca_files if trust else ()))
        try:
            return tls_context(None, self._ca_data, ca_files=files, client=trust.client if trust else None)
        except ValueError as exc:
            raise AccessError(str(exc)) from None

    def trust_for(self, endpoint: str) -> EndpointTrust | None:
        """The hosts.toml or certs.d TLS material for ``endpoint`` (``host[:port]``); AccessError if unusable."""
        endpoint = endpoint.lower()
        if endpoint in self._endpoint_trust:
            return self._endpoint_trust[endpoint]
        if self._certs_dirs == []:
            return None
        try:
            return certs_d_trust(endpoint, self._certs_dirs)
        except ValueError as exc:
            raise AccessError(str(exc)) from None

    async def tls(self, endpoint: str) -> ssl.SSLContext | bool:
        """The TLS context for ``endpoint``: its own when a certs.d folder or hosts.toml names CAs or a client
        certificate, else the shared one. Looked up once per endpoint, off the loop."""
        if self.problem:
            raise AccessError(self.problem)
        key = endpoint.lower()
        if key in self._tls:
            return self._tls[key]
        async with self._locks.setdefault(f"tls {key}", asyncio.Lock()):
            if key not in self._tls:
                trust = await asyncio.to_thread(self.trust_for, key)
                if trust is None or (not trust.ca_files and trust.client is None):
                    self._tls[key] = self.default_tls
                else:
                    self._tls[key] = await asyncio.to_thread(self._context, trust)
                    self.trust_origins[key] = trust.origin
            return self._tls[key]

    def known(self, host: str, repository: str) -> Credentials | None:
        """The credentials for ``host/repository`` known without running a helper."""
        canonical = canonical_host(host)
        if canonical in self._helper_answers and self._helper_answers[canonical] is not None:
            return self._helper_answers[canonical]
        return lookup(self.sources.credentials, host, repository)

    async def credentials(self, host: str, repository: str) -> Credentials | None:
        """The credentials for ``host/repository``: a ``credHelpers`` helper first, then the auth files'
        entry, then the ``credsStore`` (docker's order). A helper runs once per host; AccessError when it fails."""
        canonical = canonical_host(host)
        own = self.sources.helpers.get(canonical)
        written = lookup_key(self.sources.credentials, host, repository)
        helper = own or (self.sources.store if written is None else None)
        if helper is None:
            return self.sources.credentials[written] if written is not None else None
        async with self._locks.setdefault(f"helper {canonical}", asyncio.Lock()):
            if canonical not in self._helper_answers:
                server = helper.server or (DOCKER_HUB_SERVER if canonical == DOCKER_HUB else canonical)
                try:
                    self._helper_answers[canonical] = await helper_credentials(helper, server)
                except HelperError as exc:
                    raise AccessError(str(exc)) from None
        answer = self._helper_answers[canonical]
        if answer is None and written is not None:
            return self.sources.credentials[written]
        return answer

    def origin(self, host: str, repository: str) -> str:
        """Where the credentials for ``host/repository`` come from ("" when none are known)."""
        return self.sources.origin_of(host, repository)

    def secrets(self) -> list[str]:
        """Every secret known so far (files and helper answers), longest first."""
        return secrets_of([*self.sources.credentials.values(), *self._helper_answers.values()])

    def notes(self, hosts: Iterable[str], routes: Mapping[str, str], insecure: Set[str]) -> list[AccessNote]:
        """The "where from" lines of :meth:`wizard.registry.client.RegistryClient.access_notes`: ``routes`` maps a
        host to its mirror location, ``insecure`` holds the endpoints reached without TLS verification."""
        found: list[AccessNote] = []
        for host in dict.fromkeys(canonical_host(h) for h in hosts if h.strip()):
            endpoint = host
            if location := routes.get(host):
                endpoint = location.split("/", 1)[0]
                found.append(AccessNote("mirror", host, f"-> {location}", self._route_origins.get(host, "")))
            creds, origin = self.known(endpoint, ""), self.origin(endpoint, "")
            if creds is not None or origin:
                who = creds.username if creds is not None else "asked when needed"
                found.append(AccessNote("credentials", endpoint, who, origin))
            else:
                found.append(AccessNote("credentials", endpoint, "none (anonymous)"))
            if canonical_host(endpoint) in insecure:
                why = self._insecure_origins.get(endpoint.lower(), "listed as insecure")
                found.append(AccessNote("tls", endpoint, "verification off", why))
            elif tls_origin := self.trust_origins.get(endpoint.lower()):
                found.append(AccessNote("tls", endpoint, "CAs / client certificate", tls_origin))
            elif self.ca_files:
                found.append(AccessNote("tls", endpoint, "system CAs and " + ", ".join(self.ca_files)))
        found.extend(AccessNote("note", "", note) for note in self._notes)
        return found
